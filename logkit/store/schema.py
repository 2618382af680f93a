"""The index's schema as numbered migrations (simonw/llm's habit): ``MIGRATIONS[n]`` takes a database
at ``PRAGMA user_version`` ``n`` to ``n + 1``. Append a migration; never edit a shipped one (a
change to what a column *means* bumps :data:`logkit.store.derive.DERIVATION` instead)."""

from __future__ import annotations

__all__ = ["MIGRATIONS"]

MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
    CREATE TABLE sessions (
        session TEXT PRIMARY KEY, ino INTEGER, seen INTEGER, mtime INTEGER, size INTEGER, lines INTEGER,
        tail TEXT, torn INTEGER, events INTEGER DEFAULT 0, max_a INTEGER DEFAULT 0, max_h INTEGER DEFAULT 0,
        title TEXT, goal TEXT, started TEXT, host TEXT, tags TEXT);
    CREATE TABLE events (
        session TEXT NOT NULL, line INTEGER NOT NULL, kind TEXT NOT NULL, id TEXT NOT NULL, short_id TEXT,
        attempt TEXT, ts TEXT, json TEXT NOT NULL);
    CREATE UNIQUE INDEX events_line ON events (session, line);
    CREATE INDEX events_kind ON events (kind, session);
    CREATE INDEX events_attempt ON events (session, attempt) WHERE attempt IS NOT NULL;
    CREATE TABLE problems (
        session TEXT NOT NULL, line INTEGER NOT NULL, message TEXT NOT NULL, field TEXT);
    CREATE INDEX problems_session ON problems (session, line);
    CREATE TABLE attempts (
        session TEXT NOT NULL, short_id TEXT NOT NULL, line INTEGER, role TEXT, label TEXT, started TEXT,
        ended TEXT, command TEXT, model TEXT, gpu TEXT, gpu_count INTEGER, arch TEXT, sglang TEXT,
        flashinfer TEXT, torch TEXT, fingerprint TEXT, config TEXT, backends TEXT, tests TEXT, sweep TEXT,
        cell TEXT, status TEXT, category TEXT, signature TEXT, hang_timeout REAL, smoke_ok INTEGER,
        recorder_pid INTEGER, recorder_host TEXT);
    CREATE UNIQUE INDEX attempts_id ON attempts (session, short_id);
    CREATE INDEX attempts_status ON attempts (status);
    CREATE INDEX attempts_cell ON attempts (arch, model);
    CREATE TABLE metrics (
        session TEXT NOT NULL, line INTEGER NOT NULL, name TEXT NOT NULL, value REAL, unit TEXT, attempt TEXT,
        server_attempt TEXT, ts TEXT, concurrency, dataset, input_len, output_len, labels TEXT);
    CREATE UNIQUE INDEX metrics_line ON metrics (session, line);
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
    # 2: the facts the site shows (logkit.builder reads them instead of deriving them again)
    """
    ALTER TABLE attempts ADD COLUMN configuration TEXT;
    ALTER TABLE attempts ADD COLUMN config_key TEXT;
    ALTER TABLE attempts ADD COLUMN versions TEXT;
    ALTER TABLE attempts ADD COLUMN source TEXT;
    ALTER TABLE attempts ADD COLUMN outcome_label TEXT;
    ALTER TABLE metrics ADD COLUMN item TEXT
    """,
)
