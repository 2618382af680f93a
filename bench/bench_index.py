#!/usr/bin/env python3
"""How fast the one derived index (``logkit.store.index``) is kept up to date and read, on a big store.

Generates the store with ``bench/bigstore.py`` (``tests/kb_factory.synthetic``; default 2,000
sessions, ~1,000,000 events, ~216,000 attempts at its 4.6 events per attempt; ``--attempts`` sets
the attempts instead), then times in this process:

* baseline: ``json.loads`` of every line of every ``events.jsonl`` (no validation);
* from nothing: ``Index(root).refresh()`` with no ``.cache/`` (every line validated, every row made,
  in this one process);
* nothing changed: opening the index and ``refresh()`` again;
* one new attempt: a launch and its outcome appended to one session, then ``refresh()``;
* read (the goal's figure): one snapshot reading every attempt and metric row as a build reads them:
  the builder's own queries (``logkit.builder.load.attempt_rows`` with the columns its pages read,
  ``logkit.builder.frames.FACT_COLUMNS``, and ``logkit.builder.load.metric_rows``), as tuples,
  cyclic GC paused as the build pauses it;
* read, every column: ``Snapshot.attempts``/``metrics`` with every column, as tuples
  (``tuples=True``) and as dicts (the default): what ``export`` reads.

Each is printed in seconds (wall, and the process's CPU: less at the mercy of a shared machine's
load) and as a ratio to the baseline of the same run (wall to wall, CPU to CPU), with the index's
size. Goals (issue 19) at 2,000 sessions / 100,000 attempts / 1,000,000 events: 0.1 s, 0.2 s,
20 s, 2 s.

``--digest`` also prints, after the build from nothing, the sha256 of every table's rows (all
columns, in key order) and of the schema: an ingest change that keeps the index the same keeps
every line the same (the store must be the same too: ``--keep``, and the bench appends an
attempt to it each run, so compare the digests of two builds of one copy of it, or use
:func:`digest` on two indexes).

    .venv/bin/python bench/bench_index.py [--events 1000000] [--sessions 2000] [--work DIR] [--keep] [--digest]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bigstore import REPO, baseline, generate, timed  # noqa: E402  (the same store, the same baseline)

from logkit.store import files  # noqa: E402
from logkit.store.index import Index  # noqa: E402

GOALS = {"from nothing": 20.0, "nothing changed": 0.1, "one new attempt": 0.2, "read attempts + metrics": 2.0,
         "read, every column": None, "read, every column, dicts": None}


def refresh(root: Path) -> int:
    with Index(root) as index:
        return index.refresh()


def append_attempt(root: Path) -> None:
    """A finished launch appended to the last session, as ``logkit run`` writes it."""
    sid = files.session_ids(root)[-1]
    path = files.events_path(root, sid)
    number = max(files.short_numbers(path.read_bytes(), "A"), default=0) + 1
    attempt = files.event("attempt", sid, short_id=f"A{number}", argv=["python", "-m", "sglang.launch_server"],
                          role="launch", started=files.utc())
    outcome = files.event("outcome", sid, attempt=f"A{number}", status="ready", ended=files.utc())
    for event in (attempt, outcome):
        files.append(path, (json.dumps(event) + "\n").encode())


def read_rows(root: Path, tuples: bool = True) -> tuple[int, int]:
    with Index(root) as index, index.snapshot() as snap:
        return len(snap.attempts(tuples=tuples)), len(snap.metrics(tuples=tuples))


def read_build(root: Path) -> tuple[int, int]:
    """Every attempt and metric row as a build reads them (its queries, its columns, GC paused)."""
    from logkit.builder.frames import FACT_COLUMNS
    from logkit.builder.load import attempt_rows, metric_rows
    from logkit.store.snapshot import gc_paused

    with Index(root) as index, index.snapshot() as snap, gc_paused():
        return len(attempt_rows(snap.conn, FACT_COLUMNS).fetchall()), len(metric_rows(snap.conn).fetchall())


def digest(db: Path) -> dict[str, str]:
    """The sha256 of every table's rows (every column with its type, ordered by every column) and of
    the schema (``sqlite_master``), with each table's row count: equal digests, equal indexes."""
    out = {}
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        for table in tables:
            width = len(conn.execute(f"PRAGMA table_info({table})").fetchall())
            sha, count = hashlib.sha256(), 0
            for row in conn.execute(f"SELECT * FROM {table} ORDER BY {', '.join(str(i + 1) for i in range(width))}"):
                sha.update(repr(tuple((type(v).__name__, v) for v in row)).encode())
                count += 1
            out[table] = f"{count} rows {sha.hexdigest()[:16]}"
        sha = hashlib.sha256()
        for row in conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name"):
            sha.update(repr(row).encode())
        out["(schema)"] = sha.hexdigest()[:16]
    finally:
        conn.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--work", type=Path, default=REPO / "bench" / "out-index")
    parser.add_argument("--keep", action="store_true", help="keep the generated store for the next run")
    parser.add_argument("--digest", action="store_true", help="print every table's digest after the build from nothing")
    args = parser.parse_args()
    root = args.work.resolve() / "sessions"
    generate(root, args.events, args.sessions)
    shutil.rmtree(root / ".cache", ignore_errors=True)
    size = sum(p.stat().st_size for p in root.glob("*/events.jsonl")) / 1e6
    (base, base_cpu), lines = timed(lambda: baseline(root))
    print(f"store: {lines} events in {args.sessions} sessions, {size:.0f} MB of events.jsonl", flush=True)
    db = root / ".cache" / "index.sqlite"
    results = {}
    results["from nothing"] = timed(lambda: refresh(root))[0]
    if args.digest:
        for table, text in digest(db).items():
            print(f"digest {table:18} {text}")
    results["nothing changed"] = min(timed(lambda: refresh(root))[0] for _ in range(3))
    append_attempt(root)
    results["one new attempt"], ingested = timed(lambda: refresh(root))
    assert ingested == 1, ingested
    import logkit.builder.frames  # noqa: F401  (pandas and the builder imported before the clock starts)

    results["read attempts + metrics"], (attempts, metrics) = timed(lambda: read_build(root))
    results["read, every column"] = timed(lambda: read_rows(root))[0]
    results["read, every column, dicts"] = timed(lambda: read_rows(root, tuples=False))[0]
    print(f"index: {attempts} attempts, {metrics} metrics, {db.stat().st_size / 1e6:.0f} MB ({size:.0f} MB of JSONL)")
    print(f"{'':28} {'seconds':>8} {'/ baseline':>10} {'CPU s':>8} {'/ base CPU':>10}   goal at 1M events")
    print(f"{'baseline, json.loads':28} {base:8.3f} {1:10.3f} {base_cpu:8.3f} {1:10.3f}")
    ok = True
    for name, (seconds, cpu) in results.items():
        goal = GOALS[name]
        print(f"{name:28} {seconds:8.3f} {seconds / base:10.3f} {cpu:8.3f} {cpu / base_cpu:10.3f}   "
              + (f"<= {goal:g} s" if goal else ""))
        ok = ok and (goal is None or seconds <= goal * max(1.0, lines / 1e6))
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
