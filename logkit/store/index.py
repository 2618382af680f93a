"""The one derived index of a sessions root: what every reader queries instead of re-reading JSONL.

Contract:

* **Where**: one SQLite file (standard-library :mod:`sqlite3`, WAL), ``<root>/.cache/index.sqlite``
  (``<root>/.cache/.gitignore`` keeps it out of git). When the root is on a network filesystem
  (:func:`on_network_fs`: NFS, Lustre, CIFS, sshfs, GPFS, BeeGFS, Ceph, WekaFS, JuiceFS, 9p...; ``$LOGKIT_NETWORK_FS``
  ``1``/``0`` overrides), where SQLite's locks are unreliable, it lives on local disk instead:
  ``$XDG_CACHE_HOME/logkit/index/<sha256 of the resolved root>.sqlite`` (default ``~/.cache``; where
  that is on a network filesystem too, a home on NFS, ``$XDG_RUNTIME_DIR`` or ``<tmp>/logkit-<uid>``:
  :func:`local_cache`).
  When SQLite cannot open, lock or write that file (a read-only store, a lock that fails, a full
  disk) the index is an in-memory database ingested afresh: always correct, only slower
  (:attr:`Index.path` is then None).
* **Never trusted**: the schema is made by numbered :data:`MIGRATIONS` (``PRAGMA user_version``),
  the file carries :data:`APPLICATION_ID`, and a ``meta`` row holds the derivation key (the
  derivation version, the event schema version and the bytes of the data tables the rows are
  derived with). A file that is not a database, another application's, a newer schema's or another
  derivation's is deleted and rebuilt. Deleting ``.cache/`` loses nothing.
* **Built aside**: a missing file is made by the first full :meth:`Index.refresh`, in a private
  file linked into place only when complete (:mod:`logkit.store.fill`: a crash leaves no half
  index). ``refresh(only=[...])`` with no file makes it empty and ingests those sessions only.
* **Refresh** (:meth:`Index.refresh`): one pass over ``<root>/<id>/events.jsonl``. A file with the
  inode, size and mtime seen last is skipped. Same inode, grown, and the sha256 of the last 4 KiB
  of the ingested prefix unchanged: only the appended complete lines are ingested (a torn last
  line waits until it ends; :meth:`Snapshot.problems` names it meanwhile). Anything else: the
  session's rows are deleted and it is ingested whole; a vanished session's rows go. Every line is
  validated once, here, by :func:`logkit.store.reader.iter_events` (with the clash state of the lines
  before); its problems become ``problems`` rows, and a bad line never stops the rest. The rows of
  an attempt are derived by :func:`logkit.store.derive.attempt_row` whenever one of its events arrives.
* **No copies**: an ``events`` row holds where its line is (byte offset, length) and the columns
  readers filter on; a reader of whole events reads those lines from ``events.jsonl`` again
  (:func:`lines_at`: dicts at the current schema, not validated again), and a line that is no
  longer the event its row names (the file rewritten since the refresh) raises
  :class:`~logkit.errors.StoreError`.
* **Concurrency**: writers of ``events.jsonl`` never touch the index. Refreshing readers take
  SQLite's write lock (``BEGIN IMMEDIATE``) and, holding it, look at each file again, so two
  refreshes never ingest a line twice; a reader waits for another's refresh (it would have had to
  do the same work) up to :data:`BUSY_SECONDS`, then ingests into memory instead. A long refresh
  commits every :data:`BATCH_SECONDS` (whole sessions), so a waiting one soon shares the work. Readers query
  inside :meth:`Index.snapshot`: one read transaction, a consistent snapshot that a concurrent
  refresh does not change.
* **Reads** (:class:`~logkit.store.snapshot.Snapshot`) return plain dicts keyed by column name (the
  tables: :mod:`logkit.store.schema`). In ``attempts`` (:data:`~logkit.store.derive.ATTEMPT_COLUMNS`)
  ``fingerprint``, ``config``, ``backends`` and ``tests`` are JSON text, ``status`` None means no
  outcome yet, ``matrix`` is the matrix category; ``attempt_backends`` has one row per backend axis
  an attempt chose (value stripped, lower case), the matrix cells aggregated in SQL. Times are
  ISO 8601 text as written.

Only :meth:`Index.refresh` imports pydantic (when a line is to be validated); opening the index
and reading it need the standard library.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

from . import files
from .derive import DERIVATION
from .schema import MIGRATIONS, PAGE_SIZE
from .snapshot import Snapshot, lines_at

__all__ = [
    "APPLICATION_ID",
    "BATCH_SECONDS",
    "BUSY_SECONDS",
    "ENV_NETWORK_FS",
    "INDEX_FILE",
    "Index",
    "MIGRATIONS",
    "NETWORK_FS",
    "Snapshot",
    "current",
    "filesystem_type",
    "index_path",
    "lines_at",
    "local_cache",
    "on_network_fs",
]

INDEX_FILE = "index.sqlite"
APPLICATION_ID = 0x4C4B4958  # "LKIX"
ENV_NETWORK_FS = "LOGKIT_NETWORK_FS"
BUSY_SECONDS = 30.0
#: A long refresh (a cold index) commits at least this often, so another refresh waits at most this long.
BATCH_SECONDS = 1.0
NETWORK_FS = frozenset({
    "nfs", "nfs4", "lustre", "cifs", "smb3", "smbfs", "fuse.sshfs", "sshfs", "gpfs", "beegfs", "ceph",
    "fuse.ceph", "fuse.cephfs", "9p", "afs", "glusterfs", "fuse.glusterfs", "panfs", "fuse.s3fs", "fuse.gcsfuse",
    # GPU clusters' shared filesystems, and object stores mounted through FUSE
    "wekafs", "fuse.juicefs", "juicefs", "fuse.weka", "ocfs2", "gfs2", "orangefs", "pvfs2", "fuse.beegfs",
    "fuse.mountpoint-s3", "fuse.rclone", "fuse.goofys", "fuse.blobfuse2", "fuse.blobfuse", "fuse.alluxio-fuse",
    "fuse.davfs", "davfs", "fuse.lizardfs", "fuse.moosefs", "fuse.mfs", "fuse.seaweedfs", "fuse.xtreemfs",
})
_OCTAL = re.compile(r"\\([0-7]{3})")
_DATA = Path(__file__).resolve().parent.parent / "data"


class _Untrusted(Exception):
    """The index file is not one this logkit built: delete and rebuild it."""


def filesystem_type(path: Path, mounts: str | None = None) -> str | None:
    """The filesystem type of ``path``: its longest mount point in ``mounts`` (default: ``/proc/self/mountinfo``)."""
    tables = [mounts] if mounts is not None else []
    for source in () if mounts is not None else ("/proc/self/mountinfo", "/proc/mounts"):
        with contextlib.suppress(OSError):
            tables.append(Path(source).read_text(encoding="utf-8", errors="replace"))
            break
    target = str(path)
    best, kind = -1, None
    for text in tables:
        for line in text.splitlines():
            head, dash, tail = line.partition(" - ")
            fields = head.split()
            if dash and len(fields) >= 5 and tail.split():  # mountinfo: point is field 5, type after " - "
                point, fstype = fields[4], tail.split()[0]
            elif not dash and len(fields) >= 3:  # /proc/mounts: device, point, type
                point, fstype = fields[1], fields[2]
            else:
                continue
            point = _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), point)  # "\040" is a space
            inside = target == point or target.startswith(point.rstrip("/") + "/")
            if inside and len(point) > best:
                best, kind = len(point), fstype
    return kind


def on_network_fs(path: Path, mounts: str | None = None) -> bool:
    """Whether ``path`` (a sessions root) is on a network filesystem (``$LOGKIT_NETWORK_FS`` = 1/0 decides first)."""
    forced = os.environ.get(ENV_NETWORK_FS)
    if forced in ("0", "1"):
        return forced == "1"
    return (filesystem_type(path, mounts) or "") in NETWORK_FS


def local_cache(mounts: str | None = None) -> Path | None:
    """A folder on local disk for the indexes of roots on network filesystems: ``$XDG_CACHE_HOME/logkit/index``
    (default ``~/.cache``), else, where that is on one too (a home directory on NFS, as on most GPU
    clusters), ``$XDG_RUNTIME_DIR/logkit/index``, else ``<tmp>/logkit-<uid>/index``; None when none is
    local (the index is then in memory)."""
    import tempfile

    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    candidates = [home / "logkit" / "index"]
    if os.environ.get("XDG_RUNTIME_DIR"):
        candidates.append(Path(os.environ["XDG_RUNTIME_DIR"]) / "logkit" / "index")
    candidates.append(Path(tempfile.gettempdir()) / f"logkit-{os.getuid()}" / "index")
    for folder in candidates:
        if (filesystem_type(folder.resolve(), mounts) or "") in NETWORK_FS:
            continue
        if folder.parent.name.startswith("logkit-"):  # a shared /tmp: only a folder of our own
            try:
                folder.parent.mkdir(mode=0o700, exist_ok=True)
                if folder.parent.stat().st_uid != os.getuid():
                    continue
            except OSError:
                continue
        return folder
    return None


def index_path(root: Path, mounts: str | None = None) -> Path | None:
    """Where the index of ``root`` lives (see the module's contract); None: in memory."""
    resolved = Path(root).resolve()
    if not on_network_fs(resolved, mounts):
        return resolved / ".cache" / INDEX_FILE
    base = local_cache(mounts)
    if base is None:
        return None
    return base / (hashlib.sha256(str(resolved).encode()).hexdigest()[:32] + ".sqlite")


def _derivation() -> str:
    """The derivation key: what the rows depend on besides the files themselves."""
    digest = hashlib.sha256(f"{DERIVATION}:{files.SCHEMA_VERSION}".encode())
    for name in ("statuses.toml", "launch.toml"):
        with contextlib.suppress(OSError):
            digest.update((_DATA / name).read_bytes())
    return digest.hexdigest()[:16]


class Index:
    """The index of one sessions root; use as a context manager (or :meth:`close`)."""

    def __init__(self, root: Path | str, *, path: Path | None | bool = True, busy: float = BUSY_SECONDS) -> None:
        """``path``: True for :func:`index_path`, None for memory, or a file; ``busy``: seconds to wait for a lock."""
        self.root = Path(root)
        self.busy = busy
        wanted = index_path(self.root) if path is True else (path or None)
        self.path: Path | None = None
        #: the file is still to be built (by the next :meth:`refresh`); meanwhile an empty index in memory
        self._build = False
        self.conn = self._open(wanted) if wanted is not None and self.root.is_dir() else None
        if self.conn is not None or self._build:
            self.path = wanted
        if self.conn is None:
            self.conn = self._connect(None)

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.conn.close()

    # -- opening -------------------------------------------------------------------------------

    def _open(self, path: Path) -> sqlite3.Connection | None:
        """The file's connection, migrated (a foreign file made again); None when unusable or missing (``_build``)."""
        for _try in range(2):
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                if path.parent.name == ".cache" and not (path.parent / ".gitignore").exists():
                    (path.parent / ".gitignore").write_text("# logkit's index: derived from events.jsonl, never committed\n*\n")
                if not path.exists():
                    self._build = True
                    return None
                return self._connect(path)
            except _Untrusted:
                _unlink(path)
            except (sqlite3.Error, OSError):
                return None
        return None

    def _connect(self, path: Path | None) -> sqlite3.Connection:
        conn = sqlite3.connect(":memory:" if path is None else path, timeout=self.busy, isolation_level=None,
                               check_same_thread=False)
        try:
            if path is not None:
                try:
                    conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # a new file's (a no-op for one made)
                    mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                except sqlite3.DatabaseError as exc:
                    if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                        raise
                    raise _Untrusted(str(exc)) from exc
                if str(mode).lower() != "wal":
                    raise sqlite3.OperationalError(f"journal mode {mode}")
                conn.execute("PRAGMA synchronous=NORMAL")
            self._migrate(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    @staticmethod
    def _migrate(conn: sqlite3.Connection) -> None:
        """Apply the missing :data:`MIGRATIONS`; :class:`_Untrusted` for a file that is not ours."""
        def state() -> tuple[int, int, int]:
            try:
                tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
                return (conn.execute("PRAGMA application_id").fetchone()[0],
                        conn.execute("PRAGMA user_version").fetchone()[0], tables)
            except sqlite3.DatabaseError as exc:
                raise _Untrusted(str(exc)) from exc

        def check(app: int, version: int, tables: int) -> None:
            if (app, version, tables) != (0, 0, 0) and (app != APPLICATION_ID or version != len(MIGRATIONS)):
                # an older schema too: its rows were derived under it (a migration that reshapes a
                # table would leave the sessions it held marked ingested), so it is rebuilt, not migrated
                raise _Untrusted(f"application id {app}, schema {version}")

        app, version, tables = state()
        check(app, version, tables)
        if version < len(MIGRATIONS):
            conn.execute("BEGIN IMMEDIATE")
            try:
                app, version, tables = state()  # under the lock: another process may have done it
                check(app, version, tables)
                for number in range(version, len(MIGRATIONS)):
                    for statement in MIGRATIONS[number].split(";"):
                        if statement.strip():
                            conn.execute(statement)
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('derivation', ?)", (_derivation(),))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        row = conn.execute("SELECT value FROM meta WHERE key = 'derivation'").fetchone()
        if row is None or row[0] != _derivation():
            raise _Untrusted("derived by another logkit")

    # -- refreshing ----------------------------------------------------------------------------

    def refresh(self, only: list[str] | None = None, *, fallback: bool = True) -> int:
        """Update the index (``only``: these sessions); sessions ingested; ``fallback=False``: errors raise."""
        try:
            built = self._build_file(only) if self._build else 0
            return built + self._refresh(only)
        except (sqlite3.Error, OSError, _Untrusted):  # _Untrusted: a foreign file linked in meanwhile
            if self.path is None or not fallback:
                raise
            # a full disk, a lock that fails or waits too long: ingest into memory (correct, slower)
            self.conn.close()
            self.conn, self.path, self._build = self._connect(None), None, False
            return self._refresh(only)

    def _build_file(self, only: list[str] | None) -> int:
        """Make the missing index file (:func:`logkit.store.fill.build`), empty with ``only``."""
        assert self.path is not None
        count = 0
        if only is None:
            from .fill import build

            count = build(self.root, self.path, self._migrate, BUSY_SECONDS)
        conn = self._connect(self.path)
        self.conn.close()
        self.conn, self._build = conn, False
        return count

    def _refresh(self, only: list[str] | None) -> int:
        found = _scan(self.root, only)
        known = {r[0]: tuple(r[1:]) for r in self.conn.execute("SELECT session, ino, seen, mtime FROM sessions")}
        todo = [s for s in found if known.get(s[0]) != (s[2].st_ino, s[2].st_size, s[2].st_mtime_ns)]
        gone = (set(known) if only is None else set(only) & set(known)) - {s[0] for s in found}
        if not todo and not gone:
            return 0
        from .ingest import Ingest  # pydantic from here on, and only when something changed

        self.conn.execute("BEGIN IMMEDIATE")
        try:
            ingest = Ingest(self.conn, self.root)
            for sid in gone:
                ingest.forget(sid)
            count, since = 0, time.monotonic()
            for sid, path, _st in todo:
                count += ingest.session(sid, path)
                if time.monotonic() - since > BATCH_SECONDS:  # let a waiting refresh in: it goes on from here
                    self.conn.execute("COMMIT")
                    self.conn.execute("BEGIN IMMEDIATE")
                    since = time.monotonic()
            self.conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("ROLLBACK")
            raise
        return count

    # -- reading -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Snapshot]:
        """One read transaction: every query inside sees the same state of the index."""
        self.conn.execute("BEGIN")
        try:
            self.conn.execute("SELECT 1 FROM meta LIMIT 1").fetchall()  # the snapshot starts at the first read
            yield Snapshot(self.conn, self.root)
        finally:
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("COMMIT")


@contextlib.contextmanager
def current(root: Path, only: list[str] | None = None) -> Iterator[Snapshot]:
    """The index of ``root`` brought up to date (``only``: these sessions) and read in one snapshot."""
    with Index(root) as index:
        index.refresh(only)
        with index.snapshot() as snap:
            yield snap


def _unlink(path: Path) -> None:
    """Delete an index file with its WAL and shared-memory files."""
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(OSError):
            os.unlink(f"{path}{suffix}")


def _scan(root: Path, only: list[str] | None = None) -> list[tuple[str, Path, os.stat_result]]:
    """Every session file with its stat (:func:`logkit.store.files.session_dirs`), or those of ``only``."""
    return [(d.id, Path(d.events), d.stat) for d in files.session_dirs(root, only)]
