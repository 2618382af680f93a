"""Scale check of `logkit build` against a bare `mkdocs build` of the same Markdown, in one run.

Generates a synthetic knowledge base (``tests/kb_factory.synthetic``: SESSIONS sessions, about
ATTEMPTS attempts in all, each with its environment, outcome, hypotheses, decisions, metrics),
then, each as a real process and alternating:

1. ``logkit build`` from scratch (no docs, no site, no read cache): wall time and peak RSS;
2. a bare ``mkdocs build`` of the Markdown it generated (same configuration, fresh site dir);
3. one new attempt (attempt + outcome lines, through the store API) in one session, then
   ``logkit build`` again over the existing docs and site.

Best of ``--rounds`` for each (other processes share this machine). Goals from issue 12 on the
2-core reference machine at 2,000 sessions / 100,000 attempts: build <= 1.3x bare mkdocs and
<= 500 MB; rebuild after one new attempt <= 1.1x bare mkdocs. Sizes are flags (the full size
takes long on 2 cores):

    .venv/bin/python bench/bench_build.py [--sessions 200] [--attempts 10000] [--rounds 2] [--keep]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import kb_factory  # noqa: E402

from logkit.events import Attempt, Outcome  # noqa: E402
from logkit.store import Store  # noqa: E402

BARE = ("import sys; from pathlib import Path; from logkit.builder.site import run_mkdocs; "
        "run_mkdocs(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))")


def size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def run_measured(cmd: list[str], cwd: Path) -> tuple[float, float, str]:
    """Run ``cmd``: (wall seconds, peak RSS in MB of exactly this child via ``os.wait4``, stdout)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.stdout.read(), proc.stderr.read()  # type: ignore[union-attr]
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err.decode(errors='replace')[-3000:]}")
    return wall, usage.ru_maxrss / 1024, out.decode(errors="replace")


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
    work = args.work.resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    t0 = time.perf_counter()
    kb_factory.synthetic(work / "sessions", args.sessions, args.attempts)
    gen = time.perf_counter() - t0
    config = REPO / "mkdocs.yml"
    logkit = [sys.executable, "-m", "logkit", "--sessions", str(work / "sessions"), "build",
              "--docs", str(work / "docs"), "--out", str(work / "out"), "--config", str(config)]

    fulls, rebuilds, bares, rss = [], [], [], []
    for round_ in range(args.rounds):
        for path in (work / "docs", work / "out", work / "bare-out", work / ".cache", work / "sessions" / ".cache"):
            shutil.rmtree(path, ignore_errors=True)
        wall, peak, _out = run_measured(logkit, work)
        fulls.append(wall)
        rss.append(peak)
        wall_bare, bare_peak, _ = run_measured(
            [sys.executable, "-c", BARE, str(config), str(work / "docs"), str(work / "bare-out")], work)
        bares.append(wall_bare)
        ref = add_attempt(work / "sessions", round_)
        wall_re, re_peak, out = run_measured(logkit, work)
        rebuilds.append(wall_re)
        print(f"round {round_ + 1}: build {wall:.1f}s ({peak:.0f} MB), bare mkdocs {wall_bare:.1f}s "
              f"({bare_peak:.0f} MB), rebuild after {ref} {wall_re:.1f}s ({re_peak:.0f} MB): {out.strip()}",
              flush=True)
    full, bare, rebuild = min(fulls), min(bares), min(rebuilds)
    site = size_mb(work / "out")
    pages = sum(1 for _ in (work / "docs").rglob("*.md"))
    n_sessions = sum(1 for _ in (work / "sessions").glob("*/events.jsonl"))
    events_mb = size_mb(work / "sessions")
    print(f"load average during the run: {os.getloadavg()[1]:.1f} (1.0 per busy core; this machine has {os.cpu_count()})")
    print(f"knowledge base: {n_sessions} sessions, {args.attempts} attempts requested, {events_mb:.0f} MB "
          f"(written in {gen:.1f}s); {pages} pages; site {site:.1f} MB")
    print(f"logkit build:           {full:6.1f} s")
    print(f"bare mkdocs build:      {bare:6.1f} s")
    print(f"ratio build/bare:       {full / bare:6.2f}    (goal <= 1.3)")
    print(f"peak memory of build:   {min(rss):6.0f} MB  (goal <= 500 MB)")
    print(f"rebuild, one attempt:   {rebuild:6.1f} s")
    print(f"ratio rebuild/bare:     {rebuild / bare:6.2f}    (goal <= 1.1)")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    ok = full / bare <= 1.3 and min(rss) <= 500 and rebuild / bare <= 1.1
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
