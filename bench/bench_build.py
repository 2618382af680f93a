"""Scale check of `logkit build` against a bare `mkdocs build` of the same Markdown, in one run.

Generates a synthetic knowledge base (``tests/kb_factory.synthetic``: SESSIONS sessions, about
ATTEMPTS attempts in all, each with its environment, outcome, hypotheses, decisions, metrics),
then, each as a real process and alternating:

1. ``logkit build`` from scratch (no docs, no site, no read cache): wall time and peak memory
   (its process tree's PSS summed, sampled every 0.2 s; also the largest single process's RSS);
2. a bare ``mkdocs build`` of the Markdown it generated (same configuration, fresh site dir, in a
   fresh process), measured the same way;
3. one new attempt (attempt + outcome lines, through the store API) in one session, then
   ``logkit build`` again over the existing docs and site.

Best of ``--rounds`` for each (other processes share this machine). Goals (issue 19): build <=
1.2x bare mkdocs, peak memory <= bare mkdocs' + 150 MB; rebuild after one new attempt <= 1.1x
bare mkdocs. Sizes are flags (the full size takes long on 2 cores):

    .venv/bin/python bench/bench_build.py [--sessions 200] [--attempts 10000] [--rounds 2] [--keep]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# THIS tree's logkit, in this process too (it writes the knowledge base and the new attempt): an
# installed logkit (an editable install of another checkout) would otherwise come first
sys.path[:0] = [str(REPO), str(REPO / "tests")]

import kb_factory  # noqa: E402

from logkit.events import Attempt, Outcome  # noqa: E402
from logkit.store import Store  # noqa: E402

# MkDocs as configured, as logkit's build runs it
BARE = ("import sys; from pathlib import Path; from logkit.builder.site import run_mkdocs; "
        "run_mkdocs(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))")


def size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def _tree_pss_mb(root: int) -> float:
    """Proportional set size (shared pages split between their users) of ``root`` and its descendants."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            with open(f"/proc/{pid}/smaps_rollup") as fh:
                total += next(int(line.split()[1]) for line in fh if line.startswith("Pss:"))
        except (OSError, StopIteration, ValueError):
            pass
    return total / 1024


def run_measured(cmd: list[str], cwd: Path) -> tuple[float, float, float, str, float]:
    """Run ``cmd``: (wall seconds, peak RSS in MB of its largest single process via ``os.wait4``,
    peak memory in MB of its whole process tree at once (PSS summed, sampled every 0.2 s), stdout,
    CPU seconds: user + system of it and its waited-for children, every thread's; on a shared
    machine the steadier figure, since other work stretches the wall time of each run apart)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak_tree = 0.0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak_tree
        while not done.wait(0.2):
            peak_tree = max(peak_tree, _tree_pss_mb(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.stdout.read(), proc.stderr.read()  # type: ignore[union-attr]
    done.set()
    sampler.join()
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err.decode(errors='replace')[-3000:]}")
    return wall, usage.ru_maxrss / 1024, peak_tree, out.decode(errors="replace"), usage.ru_utime + usage.ru_stime


def add_attempt(sessions: Path, n: int) -> str:
    """Append one new launch attempt and its outcome to the first session; its reference."""
    store = Store(sessions)
    sid = store.session_ids()[0]
    handle = store.handle(sid)
    events = handle.read().events
    template = next(e for e in events if isinstance(e, Attempt) and e.role == "launch")
    with handle.transaction() as txn:
        short = txn.next_short_id("A")
        txn.append(template.model_copy(update={"id": os.urandom(16).hex(), "short_id": short,
                                               "label": f"bench rebuild {n}"}))
        txn.append(Outcome(session=sid, attempt=short, status="ready", duration_s=42.0))
    return f"{sid}/{short}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--attempts", type=int, default=10_000)
    parser.add_argument("--work", type=Path, default=REPO / "bench" / "out")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of (build, bare, rebuild); the best of each counts")
    parser.add_argument("--keep", action="store_true", help="keep the generated knowledge base and site")
    args = parser.parse_args()
    # the children import THIS tree's logkit: a relative PYTHONPATH (``PYTHONPATH=.``) would name
    # the work directory they run in, and they would import whatever logkit is installed instead
    os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    work = args.work.resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    t0 = time.perf_counter()
    kb_factory.synthetic(work / "sessions", args.sessions, args.attempts)
    gen = time.perf_counter() - t0
    config = REPO / "mkdocs.yml"
    logkit = [sys.executable, "-m", "logkit", "--sessions", str(work / "sessions"), "build",
              "--docs", str(work / "docs"), "--out", str(work / "out"), "--config", str(config)]

    fulls, rebuilds, bares, rss, trees, bare_trees = [], [], [], [], [], []
    cpus: dict[str, list[float]] = {"build": [], "bare": [], "rebuild": []}
    loads = [os.getloadavg()[0]]
    for round_ in range(args.rounds):
        for path in (work / "docs", work / "out", work / "bare-out", work / ".cache", work / "sessions" / ".cache"):
            shutil.rmtree(path, ignore_errors=True)
        wall, peak, tree, _out, cpu = run_measured(logkit, work)
        cpus["build"].append(cpu)
        fulls.append(wall)
        rss.append(peak)
        trees.append(tree)
        loads.append(os.getloadavg()[0])
        wall_bare, bare_peak, bare_tree, _, cpu = run_measured(
            [sys.executable, "-c", BARE, str(config), str(work / "docs"), str(work / "bare-out")], work)
        cpus["bare"].append(cpu)
        bares.append(wall_bare)
        bare_trees.append(bare_tree)
        loads.append(os.getloadavg()[0])
        ref = add_attempt(work / "sessions", round_)
        wall_re, re_peak, re_tree, out, cpu = run_measured(logkit, work)
        cpus["rebuild"].append(cpu)
        rebuilds.append(wall_re)
        loads.append(os.getloadavg()[0])
        print(f"round {round_ + 1}: build {wall:.1f}s (largest process {peak:.0f} MB, all its processes at once "
              f"{tree:.0f} MB), bare mkdocs {wall_bare:.1f}s ({bare_peak:.0f} MB), rebuild after {ref} {wall_re:.1f}s "
              f"({re_peak:.0f} MB, {re_tree:.0f} MB at once): {out.strip()}", flush=True)
    full, bare, rebuild = min(fulls), min(bares), min(rebuilds)
    site = size_mb(work / "out")
    pages = sum(1 for _ in (work / "docs").rglob("*.md"))
    n_sessions = sum(1 for _ in (work / "sessions").glob("*/events.jsonl"))
    events_mb = size_mb(work / "sessions")
    print(f"1-minute load average at the start and after each step: {', '.join(f'{x:.1f}' for x in loads)} "
          f"(1.0 per busy core; this machine has {os.cpu_count()})")
    print(f"knowledge base: {n_sessions} sessions, {args.attempts} attempts requested, {events_mb:.0f} MB "
          f"(written in {gen:.1f}s); {pages} pages; site {site:.1f} MB")
    print(f"logkit build:           {full:6.1f} s")
    print(f"bare mkdocs build:      {bare:6.1f} s")
    print(f"ratio build/bare:       {full / bare:6.2f}    (goal <= 1.2)")
    print(f"peak memory of build:   {min(trees):6.0f} MB  (all its processes at once, PSS; largest single process "
          f"{min(rss):.0f} MB)")
    print(f"peak memory of bare:    {min(bare_trees):6.0f} MB  (build - bare: {min(trees) - min(bare_trees):.0f} MB, "
          f"goal <= 150 MB)")
    print(f"rebuild, one attempt:   {rebuild:6.1f} s")
    print(f"ratio rebuild/bare:     {rebuild / bare:6.2f}    (goal <= 1.1)")
    cpu_full, cpu_bare, cpu_re = (min(cpus[k]) for k in ("build", "bare", "rebuild"))
    print(f"CPU seconds (user+sys): build {cpu_full:.1f}, bare {cpu_bare:.1f}, rebuild {cpu_re:.1f}; ratios "
          f"build/bare {cpu_full / cpu_bare:.2f}, rebuild/bare {cpu_re / cpu_bare:.2f}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    ok = full / bare <= 1.2 and min(trees) - min(bare_trees) <= 150 and rebuild / bare <= 1.1
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
