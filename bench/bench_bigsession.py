"""One big session: ``status``, ``run -- true`` and ``build`` on it, against a session of 100 events.

Issue 13: one session of 100,000 events made ``status`` take 14 s and 620 MB, ``run -- true`` 3.4 s
and 552 MB before the child started, and ``build`` not finish in 25 minutes. This generates one
session of ``--events`` events (default 100,000: launches that work, crash or produce garbage,
benchmarks, a hypothesis every 50 attempts; ``tests/kb_factory.Writer``) in one store and one of
100 events (the baseline) in another, then runs, each as a real process on both stores:

* ``logkit status``: cold (no read cache), warm, and after a ``logkit run`` appended to the session;
* ``logkit run -- sh -c 'date +%s%N > FILE'``: the time from starting logkit to the child's first
  instruction, and the peak RSS of the whole ``logkit run``: cold (no run index) and warm; and the
  same for an SGLang launch (logkit/demo/standin/fake_sglang), which adds the planner and the refuted check;
* ``logkit session list`` and ``logkit session show`` (which prints one line per event);
* ``logkit build`` from scratch (``--no-build`` skips it: minutes at the full size on 2 cores).

Each figure is printed with its ratio to the same command on the baseline (same run, alternating,
best of ``--rounds``), with the load average (the machine is shared):

    .venv/bin/python bench/bench_bigsession.py [--events 100000] [--rounds 2] [--no-build] [--keep]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import kb_factory  # noqa: E402

SID = "big"


def make_session(root: Path, events: int, seed: int = 7) -> int:
    """One session of about ``events`` events in store ``root``; the number written."""
    rng = random.Random(seed)
    start = datetime(2026, 6, 1, 8, 0, tzinfo=UTC)
    w = kb_factory.Writer(SID, start)
    arch = "SM120"
    while len(w.events) < events - 1:
        if w.n_attempt % 50 == 0:
            w.hypothesis(f"{rng.choice(kb_factory.MOE)} MoE is the fastest on {arch} ({w.n_hyp + 1})")
        moe, attn = rng.choice(kb_factory.MOE), rng.choice(kb_factory.ATTN)
        fail = kb_factory.FAILS.get((moe, arch)) or kb_factory.FAILS.get((attn, arch))
        w.launch(kb_factory.MODELS[0], arch, 8, moe, attn, kb_factory.VERSIONS[1],
                 extra=["--mem-fraction-static", rng.choice(["0.85", "0.9"])], fail=fail,
                 throughput=rng.uniform(800, 6000) if fail is None and rng.random() < 0.2 else None)
    store = kb_factory.Store(root)
    kb_factory._write(store, SID, f"One long bring-up ({events} events)", start, w)
    (root / ".current").write_text(SID + "\n")
    return len(w.events) + 1


#: a small wrapper (python -S, ~10 MB) that runs the command and reports its peak RSS: a child
#: forked from this process (pydantic and the generated events loaded) would start with this
#: process's RSS as its peak, and the peak survives ``exec``
WRAPPER = ("import os, sys\npid = os.fork()\nif pid == 0:\n    os.execvpe(sys.argv[2], sys.argv[2:], os.environ)\n"
           "_p, status, usage = os.wait4(pid, 0)\nopen(sys.argv[1], 'w').write(str(usage.ru_maxrss))\n"
           "sys.exit(os.waitstatus_to_exitcode(status))\n")


def measured(cmd: list[str], env: dict[str, str], check: bool = True) -> tuple[float, float, str]:
    """Run ``cmd``: (wall seconds, peak RSS of exactly that process in MB, stderr); ``check``: exit 0."""
    work = Path(env["LOGKIT_SESSIONS"]).parent
    rss_path = work / "maxrss.txt"
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-S", "-c", WRAPPER, str(rss_path), *cmd], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    wall = time.perf_counter() - start
    err = proc.stderr.decode(errors="replace")
    if check and proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err[-3000:]}")
    return wall, int(rss_path.read_text()) / 1024, err


def logkit(root: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "logkit", "--sessions", str(root), *args]


def env_for(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["LOGKIT_SESSIONS"] = str(root)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


LAUNCH = ["python", "-m", "sglang.launch_server", "--model-path", "zai-org/GLM-5-NVFP4", "--tp", "8",
          "--moe-runner-backend", "flashinfer_trtllm", "--attention-backend", "flashinfer", "--port", "30000"]


def run_to_child(root: Path, work: Path, launch: bool = False) -> tuple[float, float]:
    """``logkit run -- true``-like: (seconds from starting logkit to the child's start, peak RSS MB).

    With ``launch`` the command is an SGLang launch (the stand-in server of logkit/demo/standin/fake_sglang, which
    exits at once with an OOM): the planner, the config diff against the last launch and the
    refuted-configuration check (``$LOGKIT_GPU_ARCH=SM120``, no terminal: it warns and launches) run.
    """
    stamp = work / "child-started"
    stamp.unlink(missing_ok=True)
    env = env_for(root)
    script = f"date +%s%N > {stamp}"
    if launch:
        env.update(LOGKIT_GPU_ARCH="SM120", FAKE_SGLANG_MODE="oom",
                   PYTHONPATH=os.pathsep.join([str(REPO / "logkit" / "demo" / "standin" / "fake_sglang"), env["PYTHONPATH"]]))
        script += "; exec " + " ".join([sys.executable, *LAUNCH[1:]])
    start = time.time()
    _wall, rss, _err = measured(logkit(root, "run", "--", "sh", "-c", script), env, check=not launch)  # it OOMs
    return int(stamp.read_text()) / 1e9 - start, rss


def wait_for_refuted_cache(root: Path, timeout: float = 120.0) -> None:
    """Until the refuted read cache holds the session (a cold check has it filled in the background)."""
    path = root / ".cache" / "refuted.json"
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if f'"{SID}":' in path.read_text():
                return
        except OSError:
            pass
        time.sleep(0.5)


def drop_caches(root: Path, *names: str) -> None:
    for name in names:
        path = root / ".cache" / name
        shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--baseline", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--work", type=Path, default=REPO / "bench" / "out-bigsession")
    parser.add_argument("--no-build", action="store_true", help="skip the build (minutes at the full size)")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    work = args.work.resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    stores = {"big": work / "big", "base": work / "base"}
    t0 = time.perf_counter()
    written = {name: make_session(root, args.events if name == "big" else args.baseline)
               for name, root in stores.items()}
    size_mb = (stores["big"] / SID / "events.jsonl").stat().st_size / 1e6
    print(f"sessions written in {time.perf_counter() - t0:.1f}s: {written['big']} events ({size_mb:.0f} MB) "
          f"and a baseline of {written['base']} events", flush=True)

    figures: dict[str, dict[str, list[tuple[float, float]]]] = {}

    def note(name: str, which: str, value: tuple[float, float]) -> None:
        figures.setdefault(name, {}).setdefault(which, []).append(value)

    loads = []
    for round_ in range(args.rounds):
        for which, root in stores.items():
            env = env_for(root)
            drop_caches(root, "status.json", "run")
            note("status, cold (no cache)", which, measured(logkit(root, "status"), env)[:2])
            note("status, warm", which, measured(logkit(root, "status"), env)[:2])
            note("run -- true, cold (no index): to child start", which, run_to_child(root, work))
            note("run -- true, warm: to child start", which, run_to_child(root, work))
            drop_caches(root, "refuted.json")
            note("launch, cold refuted cache: to child start*", which, run_to_child(root, work, launch=True))
            wait_for_refuted_cache(root)  # filled in the background after a cold check
            note("launch, warm: to child start*", which, run_to_child(root, work, launch=True))
            note("status after that run", which, measured(logkit(root, "status"), env)[:2])
            note("session list, warm", which, measured(logkit(root, "session", "list"), env)[:2])
            note("session show", which, measured(logkit(root, "session", "show"), env)[:2])
            loads.append(os.getloadavg()[0])
        print(f"round {round_ + 1} done (load {loads[-1]:.1f})", flush=True)
    if not args.no_build:
        for which, root in stores.items():
            out = work / f"site-{which}"
            wall, rss, _err = measured(logkit(root, "build", "--docs", str(out / "docs"), "--out", str(out / "site")),
                                       env_for(root))
            note("build, from scratch", which, (wall, rss))
            loads.append(os.getloadavg()[0])
            if which == "big":
                pages = sum(1 for _ in (out / "docs" / "sessions" / SID).rglob("*.md"))
                biggest = max(p.stat().st_size for p in (out / "docs" / "sessions" / SID).rglob("*.md")) / 1e6
                print(f"build: the session is {pages} page(s), the biggest {biggest:.2f} MB of Markdown", flush=True)

    print(f"\nload average (1 min) during the run: {min(loads):.1f} to {max(loads):.1f} "
          f"(1.0 per busy core; this machine has {os.cpu_count()})")
    print(f"{'':48} {'big':>10} {'baseline':>10} {'ratio':>7}   {'big RSS':>8} {'base RSS':>8}")
    for name, by in figures.items():
        big = min(by["big"])
        base = min(by["base"])
        print(f"{name:48} {big[0]:9.2f}s {base[0]:9.2f}s {big[0] / base[0]:6.1f}x   "
              f"{big[1]:6.0f}MB {base[1]:6.0f}MB")
    print("* an SGLang launch (logkit/demo/standin/fake_sglang's server, which OOMs at once); its RSS is the server's "
          "(logkit waits for it)")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
