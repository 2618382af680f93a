"""The index's schema as numbered migrations (simonw/llm's habit): ``MIGRATIONS[n]`` takes a database
at ``PRAGMA user_version`` ``n`` to ``n + 1``. The index is derived data: a file at an older version
is rebuilt from ``events.jsonl``, not migrated in place (:class:`logkit.store.index.Index`), so the
steps that made a schema may be folded into one (as 1 to 4 were) and a new one may reshape tables
freely; a change to what a column *means* bumps :data:`logkit.store.derive.DERIVATION` instead. Column order: :data:`~logkit.store.derive.ATTEMPT_COLUMNS`
and :data:`~logkit.store.derive.METRIC_COLUMNS` (metric rows are inserted by position)."""

from __future__ import annotations

__all__ = ["MIGRATIONS", "PAGE_SIZE"]

#: The page size of a new index file (SQLite's default is 4096): a read of every attempt row (about
#: 1 KB each) crosses a quarter as many pages; set before the first table is made (a no-op later).
PAGE_SIZE = 16384

MIGRATIONS: tuple[str, ...] = (
    # 1. events: where each line is (byte offset, length), not a copy of its JSON (events.jsonl is
    # read again for the few whole events a reader wants). attempts and metrics are keyed by
    # (session, line), WITHOUT ROWID: a build's read of every row in that order is one scan.
    # attempt_backends: each attempt's backend axes as rows carrying what a matrix cell is keyed
    # and ordered by, so the pre-launch check counts a cell's attempts per matrix category in its
    # covering index and seeks each side's latest, reading no attempt row. attempts_role: the last
    # launch of a session; events_environment: the environment an attempt probed after its start.
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
    CREATE TABLE sessions (
        session TEXT PRIMARY KEY, ino INTEGER, seen INTEGER, mtime INTEGER, size INTEGER, lines INTEGER,
        tail TEXT, torn INTEGER, events INTEGER DEFAULT 0, max_a INTEGER DEFAULT 0, max_h INTEGER DEFAULT 0,
        title TEXT, goal TEXT, started TEXT, host TEXT, tags TEXT);
    CREATE TABLE events (
        session TEXT NOT NULL, line INTEGER NOT NULL, kind TEXT NOT NULL, id TEXT NOT NULL, short_id TEXT,
        attempt TEXT, offset INTEGER NOT NULL, length INTEGER NOT NULL, ts TEXT, source TEXT,
        PRIMARY KEY (session, line)) WITHOUT ROWID;
    CREATE INDEX events_environment ON events (session, attempt) WHERE kind = 'environment';
    CREATE TABLE problems (
        session TEXT NOT NULL, line INTEGER NOT NULL, message TEXT NOT NULL, field TEXT);
    CREATE INDEX problems_session ON problems (session, line);
    CREATE TABLE attempts (
        session TEXT NOT NULL, short_id TEXT NOT NULL, line INTEGER NOT NULL, role TEXT, label TEXT, started TEXT,
        ended TEXT, command TEXT, model TEXT, gpu TEXT, gpu_count INTEGER, arch TEXT, sglang TEXT,
        flashinfer TEXT, torch TEXT, fingerprint TEXT, config TEXT, backends TEXT, tests TEXT, sweep TEXT,
        cell TEXT, status TEXT, category TEXT, signature TEXT, hang_timeout REAL, smoke_ok INTEGER,
        recorder_pid INTEGER, recorder_host TEXT, outcome_label TEXT, configuration TEXT, config_key TEXT,
        versions TEXT, source TEXT, matrix TEXT, PRIMARY KEY (session, line)) WITHOUT ROWID;
    CREATE UNIQUE INDEX attempts_id ON attempts (session, short_id);
    CREATE INDEX attempts_status ON attempts (status);
    CREATE INDEX attempts_cell ON attempts (arch, model);
    CREATE INDEX attempts_signature ON attempts (signature) WHERE signature IS NOT NULL;
    CREATE INDEX attempts_role ON attempts (session, role, line);
    CREATE TABLE attempt_backends (
        session TEXT NOT NULL, short_id TEXT NOT NULL, axis TEXT NOT NULL, value TEXT NOT NULL, arch TEXT,
        matrix TEXT, model TEXT, sglang TEXT, flashinfer TEXT, started TEXT, num INTEGER);
    CREATE INDEX attempt_backends_cell ON attempt_backends
        (axis, value, arch, matrix, model, sglang, flashinfer, started, session, num);
    CREATE INDEX attempt_backends_id ON attempt_backends (session, short_id);
    CREATE TABLE metrics (
        session TEXT NOT NULL, line INTEGER NOT NULL, name TEXT NOT NULL, value REAL, unit TEXT, attempt TEXT,
        server_attempt TEXT, ts TEXT, concurrency, dataset, input_len, output_len, labels TEXT, item TEXT,
        PRIMARY KEY (session, line)) WITHOUT ROWID;
    CREATE INDEX metrics_name ON metrics (name);
    CREATE TABLE hypotheses (
        session TEXT NOT NULL, short_id TEXT NOT NULL, line INTEGER, ts TEXT, text TEXT, priority TEXT, tags TEXT,
        PRIMARY KEY (session, short_id)) WITHOUT ROWID;
    CREATE TABLE verdicts (
        session TEXT NOT NULL, line INTEGER NOT NULL, ts TEXT, hypothesis TEXT, verdict TEXT, evidence TEXT,
        because TEXT, PRIMARY KEY (session, line)) WITHOUT ROWID;
    CREATE TABLE decisions (
        session TEXT NOT NULL, line INTEGER NOT NULL, ts TEXT, decision_id TEXT, title TEXT, status TEXT,
        supersedes TEXT, PRIMARY KEY (session, line)) WITHOUT ROWID;
    CREATE INDEX decisions_id ON decisions (decision_id)
    """,
)
