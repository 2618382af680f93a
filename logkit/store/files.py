"""The session files, without pydantic: the one layer every reader and writer of ``sessions/`` uses.

Contract:

* **Where**: the sessions root is ``--sessions``, else ``$LOGKIT_SESSIONS``, else ``./sessions``
  (:func:`root`; a root that exists but is not a directory is a :class:`~logkit.errors.StoreError`).
  A session is ``<root>/<id>/events.jsonl`` plus ``<root>/<id>/logs/``; ``<root>/.current`` names
  the current session (:func:`current`, :func:`set_current`); ``<root>/.store.lock`` is the lock
  over the whole store (:func:`store_lock`). :func:`session_dirs` lists the sessions: directories named by a
  session id holding a regular ``events.jsonl`` (any other kind, a FIFO, is skipped with a warning, once).
* **Ids**: new session ids are ``DATE-slug-<host tag>`` (:func:`logkit.store.shared.host_tag`; older ids stay valid); one pattern each for session ids, ``A<n>`` and ``H<n>`` (decision ids: :data:`logkit.events.DECISION_ID_RE`); they match whole
  strings (:func:`valid_session_id` refuses ``"x\\n"``). Byte regexes find the numbers in use.
* **Reading**: every line goes through :func:`decode` (JSON object, then :func:`upgrade` to
  :data:`SCHEMA_VERSION`); it never raises on bad content (too deep, too new, not JSON: ``None``),
  :func:`load` says why instead. :func:`dicts` reads a file's usable lines. Readers of derived
  facts query the index (:mod:`logkit.store.index`), not the bytes.
* **Writing**: :func:`append` writes whole lines under :func:`logkit.store.lockfile.appending`; a short
  or failed write (disk full, size limit) is cut back so the file ends in a whole line, and raises
  :class:`~logkit.errors.StoreError`. :func:`rewrite` replaces a file under its lock by writing a new
  file, fsyncing it and renaming it over the old one: a crash leaves the old file whole.
* **Events as dicts**: :func:`event` is the one constructor of the run path's events (``v``, ``id``,
  ``ts``; ``None`` dropped; a field the model does not have is refused). ``tests/test_files.py``
  checks :data:`FIELDS` against :mod:`logkit.events` and validates what :func:`event` builds.
* **Reconciliation**: :func:`orphaned` is the one rule (same host, recording logkit gone) by which
  the journal and the typed store decide that an attempt without an outcome was abandoned.

:mod:`logkit.events` re-exports :data:`SCHEMA_VERSION`, :data:`UPGRADES` and :func:`upgrade`.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from .. import procs
from ..errors import BadInput, NotFound, SchemaTooNew, StoreError
from .lockfile import appending, lock

__all__ = [
    "ATTEMPT_ID_RE",
    "CURRENT_FILE",
    "ENV_SESSIONS",
    "EVENTS_FILE",
    "FIELDS",
    "HYPOTHESIS_ID_RE",
    "LOGS_DIR",
    "REF_RE",
    "SCHEMA_VERSION",
    "SESSION_ID_RE",
    "STORE_LOCK",
    "SessionDir",
    "UPGRADES",
    "append",
    "check_regular",
    "check_session_id",
    "current",
    "decode",
    "dicts",
    "event",
    "events_path",
    "json_line",
    "kind_of",
    "load",
    "max_short_numbers",
    "may_hold",
    "no_current",
    "open_attempts",
    "orphaned",
    "reserve_path",
    "rewrite",
    "root",
    "session_dirs",
    "session_ids",
    "set_current",
    "short_numbers",
    "store_lock",
    "upgrade",
    "utc",
    "valid_session_id",
    "write_line",
]

SCHEMA_VERSION = 1
ENV_SESSIONS = "LOGKIT_SESSIONS"
EVENTS_FILE = "events.jsonl"
LOGS_DIR = "logs"
CURRENT_FILE = ".current"
STORE_LOCK = ".store.lock"

# \Z, not $: "$" also matches before a final newline, and "x\n" is no session id.
SESSION_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}\Z")
ATTEMPT_ID_RE = re.compile(r"A[0-9]+\Z")
HYPOTHESIS_ID_RE = re.compile(r"H[0-9]+\Z")
#: ``A7``/``H3``, or ``other-session/A4``: what decisions, verdicts and notes cite.
REF_RE = re.compile(r"(?:(?P<session>[A-Za-z0-9][A-Za-z0-9._-]{0,99})/)?(?P<id>[AH][0-9]+)\Z")
_SHORT_NUMBER_RE = {
    "A": re.compile(rb'"short_id":\s*"A([0-9]{1,18})"'),
    "H": re.compile(rb'"short_id":\s*"H([0-9]{1,18})"'),
}
_SHORT_KEY = b'"short_id":'
_SHORT_AT = re.compile(rb'"short_id":\s*"([AH])([0-9]{1,18})"')


#: ``UPGRADES[n]`` turns an event dict of version ``n`` into version ``n + 1``.
UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}

_BASE = frozenset({"v", "id", "session", "ts", "kind", "provenance"})
#: The fields of the kinds :func:`event` builds (the run path's); a test compares them with the models.
FIELDS: dict[str, frozenset[str]] = {
    "attempt": _BASE | {"short_id", "argv", "cwd", "role", "started", "tests", "environment", "log", "pid", "pgid",
                        "recorder_pid", "recorder_host", "launch", "bench", "label", "model"},
    "environment": _BASE | {"attempt", "environment"},
    "outcome": _BASE | {"attempt", "status", "label", "signature", "ended", "duration_s", "exit_code", "signal",
                        "ready_at", "evidence", "tail", "timeline", "log", "survivors", "capture_truncated"},
}
#: Mappings whose None values mean something ("not installed") and are kept.
_KEEP_NONE = frozenset({"packages"})


# -- ids and places ------------------------------------------------------------------------------


def valid_session_id(value: object) -> bool:
    """Whether ``value`` is a session id (letters, digits, ``.``, ``_``, ``-``; up to 100)."""
    return isinstance(value, str) and SESSION_ID_RE.match(value) is not None


def check_session_id(value: str, fix: str = "use letters, digits, '.', '_' and '-' (see 'logkit session list')") -> str:
    """``value``, or :class:`BadInput` when it is no session id."""
    if not valid_session_id(value):
        raise BadInput(f"{value!r} is not a valid session id", fix=fix)
    return value


def root(override: str | os.PathLike[str] | None = None) -> Path:
    """The sessions directory: ``override``, else ``$LOGKIT_SESSIONS``, else ``./sessions``."""
    path = Path(override or os.environ.get(ENV_SESSIONS) or "sessions")
    if path.exists() and not path.is_dir():
        source = "--sessions" if override else (f"${ENV_SESSIONS}" if os.environ.get(ENV_SESSIONS) else "./sessions")
        raise StoreError(f"the sessions directory {path} (from {source}) is not a directory",
                         fix=f"point {source} at a directory (it is created when missing)")
    return path


def events_path(root_dir: Path, session_id: str) -> Path:
    """``<root>/<session>/events.jsonl``."""
    return root_dir / session_id / EVENTS_FILE


def reserve_path(session_dir: Path, short_id: str) -> Path:
    """The disk space set aside for an attempt's outcome while its log is written (``logs/.A7.reserve``)."""
    return session_dir / LOGS_DIR / f".{short_id}.reserve"


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words (``a FIFO``)."""
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def check_regular(path: Path | str) -> None:
    """Raise :class:`StoreError` when ``path`` exists and is not a regular file (a FIFO would block its reader;
    a symbolic link, which arrives through git as any file does, would have logkit write where it leads)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return
    if not stat.S_ISREG(mode):
        raise StoreError(f"{path} is {kind_of(mode)}, not a regular file; logkit does not open it",
                         fix=f"remove or rename it (rm {path}); logkit skips it meanwhile")


#: the non-regular ``events.jsonl`` files already warned about (once per process)
_warned: set[str] = set()


class SessionDir(NamedTuple):
    """One session directory: id, events file (a str: cheaper than a Path) and its stat."""

    id: str
    events: str
    stat: os.stat_result


def session_dirs(root_dir: Path | str, only: list[str] | None = None) -> list[SessionDir]:
    """Every session of ``root_dir`` (or of ``only``), sorted: the one answer to "which directories are sessions"."""
    try:
        names = [entry.name for entry in os.scandir(root_dir)] if only is None else list(only)
    except OSError:
        return []
    found = []
    for name in names:
        if not valid_session_id(name):
            continue
        path = f"{root_dir}/{name}/{EVENTS_FILE}"
        try:
            st = os.lstat(path)  # a link is not followed: it may lead out of the store (it came through git)
        except OSError:
            continue  # not a session directory
        if stat.S_ISREG(st.st_mode):
            found.append(SessionDir(name, path, st))
        elif path not in _warned:  # a FIFO would block every reader: skipped, and said
            _warned.add(path)
            print(f"logkit: warning: skipped {path}: {kind_of(st.st_mode)}, not a regular file (remove or rename it)",
                  file=sys.stderr)
    return sorted(found, key=lambda d: d.id)


def session_ids(root_dir: Path) -> list[str]:
    """The ids of :func:`session_dirs`."""
    return [d.id for d in session_dirs(root_dir)]


def current(root_dir: Path) -> str | None:
    """The current session id, if one is set, valid and still there."""
    try:
        check_regular(root_dir / CURRENT_FILE)  # a FIFO would block; no_current says why
        value = (root_dir / CURRENT_FILE).read_text(encoding="utf-8", errors="replace").strip()
    except (OSError, StoreError):
        return None
    if valid_session_id(value) and events_path(root_dir, value).exists():
        return value
    return None


def no_current(root_dir: Path) -> NotFound:
    """The error for "no current session", saying why an existing ``.current`` is unusable."""
    fix = 'start one with: logkit session start "TITLE" (or pass --session ID)'
    path = root_dir / CURRENT_FILE
    try:
        check_regular(path)
    except StoreError as exc:
        return NotFound(f"no current session: {exc.message}", fix=f"rm {path}; then logkit session use ID")
    try:
        value = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return NotFound(f"no current session in {root_dir}", fix=fix)
    except OSError as exc:
        return NotFound(f"no current session: {path} cannot be read ({exc.strerror})", fix=fix)
    if "<<<<<<<" in value or ">>>>>>>" in value:
        return NotFound(
            f"no current session: {path} holds git merge-conflict markers (the pointer was committed and two clones changed it)",
            fix="logkit session use ID (see 'logkit session list'); it is per clone: sessions/.gitignore keeps it out of git")
    value = value.strip()
    if not valid_session_id(value):
        return NotFound(f"no current session: {path} holds {value[:60]!r}, not a session id",
                        fix="logkit session use ID (see 'logkit session list')")
    return NotFound(f"no current session: {path} names {value!r}, which is not in {root_dir}",
                    fix="logkit session use ID (see 'logkit session list'), or pass --session ID")


def set_current(root_dir: Path, session_id: str) -> None:
    """Point ``<root>/.current`` at ``session_id`` (written aside, then renamed)."""
    tmp = root_dir / f"{CURRENT_FILE}.{os.getpid()}"
    try:
        tmp.write_text(session_id + "\n", encoding="utf-8")
        os.replace(tmp, root_dir / CURRENT_FILE)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise StoreError(f"cannot write {root_dir / CURRENT_FILE}: {exc.strerror}",
                         fix=f"check that {root_dir} is writable and has space; or pass --session {session_id}") from exc


@contextlib.contextmanager
def store_lock(root_dir: Path) -> Iterator[None]:
    """An exclusive lock over the whole store (for ids unique across sessions)."""
    try:
        root_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(root_dir / STORE_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StoreError(f"cannot lock the store {root_dir}: {exc.strerror}",
                         fix=f"check that {root_dir} is a writable directory (or set ${ENV_SESSIONS})") from exc
    try:
        try:
            release = lock(fd, root_dir / STORE_LOCK)
        except OSError as exc:
            raise StoreError(f"cannot lock the store {root_dir}: {exc.strerror}",
                             fix=f"check that {root_dir} is a writable directory (or set ${ENV_SESSIONS})") from exc
        try:
            yield
        finally:
            release()
    finally:
        os.close(fd)


# -- reading -------------------------------------------------------------------------------------


def upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """Bring an event dict written by any older logkit up to :data:`SCHEMA_VERSION`."""
    version = data.get("v", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"'v' must be a positive integer, got {version!r}")
    if version > SCHEMA_VERSION:
        raise SchemaTooNew(
            f"written by a newer logkit (event schema v{version}; this logkit reads up to v{SCHEMA_VERSION})",
            fix="upgrade logkit: pip install -U logkit",
        )
    while version < SCHEMA_VERSION:
        step = UPGRADES.get(version)
        if step is None:  # pragma: no cover - a missing step is a programming error
            raise RuntimeError(f"no upgrade step from event schema v{version}")
        data = step(dict(data))
        version += 1
        data["v"] = version
    return data


def load(line: bytes) -> dict[str, Any]:
    """One line as an event dict at the current schema; ``ValueError`` (or SchemaTooNew) says why not."""
    try:
        data = json.loads(line)
    except RecursionError:
        raise ValueError("not valid JSON (nested too deeply to be an event)") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"not valid JSON (not UTF-8: {exc.reason} at byte {exc.start})") from None
    except ValueError as exc:
        raise ValueError(f"not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError("an event must be a JSON object")
    return upgrade(data)


def decode(line: bytes) -> dict[str, Any] | None:
    """:func:`load`, or None for a line that cannot be used (never raises for content)."""
    try:
        return load(line)
    except (ValueError, RecursionError, SchemaTooNew):
        return None


def may_hold(line: bytes, needle: bytes) -> bool:
    """A cheap byte test: False only when a line at the current schema lacks ``needle``."""
    return needle in line or not line.startswith(b'{"v":%d,' % SCHEMA_VERSION)


def dicts(path: Path, keep: Callable[[bytes], bool] | None = None) -> list[dict[str, Any]]:
    """The usable lines of ``path`` as event dicts; ``keep``: a byte test, applied to current-schema lines only."""
    try:
        raw = path.read_bytes()
    except OSError:
        return []
    prefix = b'{"v":%d,' % SCHEMA_VERSION
    # like may_hold: only a current line can be judged by its bytes (a blank one decodes to None)
    found = (decode(c) for c in raw.split(b"\n") if keep is None or not c.startswith(prefix) or keep(c))
    return [data for data in found if data is not None]


def short_numbers(raw: bytes, prefix: str) -> list[int]:
    """The numbers of the ``A<n>`` (or ``H<n>``) short ids in a session file's bytes."""
    return [int(m) for m in _SHORT_NUMBER_RE[prefix].findall(raw)]


def max_short_numbers(raw: bytes) -> tuple[int, int]:
    """The largest ``A<n>`` and ``H<n>`` numbers in ``raw`` (0 where none), in one ``bytes.find`` pass."""
    best = {b"A": 0, b"H": 0}
    find, match = raw.find, _SHORT_AT.match
    at = find(_SHORT_KEY)
    while at >= 0:
        found = match(raw, at)
        if found is not None:
            number = int(found[2])
            if number > best[found[1]]:
                best[found[1]] = number
        at = find(_SHORT_KEY, at + len(_SHORT_KEY))
    return best[b"A"], best[b"H"]


# -- writing -------------------------------------------------------------------------------------

#: Lone surrogates: ``\udc80``-``\udcff`` are bytes that were not UTF-8 (``surrogateescape``: a
#: child's argv word, an environment value), any other one cannot be written as UTF-8 at all.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _visible_byte(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    # inside a JSON string: an escaped backslash, then xNN, so the stored text reads \xff
    return f"\\\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else "\ufffd"


def json_line(data: Any) -> bytes:
    """One event as its compact UTF-8 JSON line; a byte that was not UTF-8 is stored as the text ``\\xff``."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    if _SURROGATE.search(text):
        text = _SURROGATE.sub(_visible_byte, text)
    return (text + "\n").encode("utf-8")


def write_line(fd: int, data: bytes, *, path: Path, durable: bool = False) -> None:
    """Write whole lines on ``fd`` (locked, ``O_APPEND``): all of ``data`` or, on failure, none of it."""
    start = os.fstat(fd).st_size
    try:
        done = 0
        while done < len(data):
            written = os.write(fd, data[done:])
            if written <= 0:  # pragma: no cover - a regular file reports a full disk as ENOSPC
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            done += written
        if durable:
            os.fsync(fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, start)  # no torn line: the file ends where it did
        raise StoreError(f"cannot write to {path}: {exc.strerror or exc}",
                         fix=f"free space on the disk of {path.parent} (or check its permissions and size limit)") from exc


def append(path: Path, data: bytes, *, durable: bool = False, fix: str | None = None) -> None:
    """Append whole lines to ``path`` under its lock."""
    with appending(path, fix=fix or f"check that {path.parent} exists and is writable") as fd:
        write_line(fd, data, path=path, durable=durable)


def rewrite(path: Path, transform: Callable[[bytes], bytes]) -> None:
    """Replace ``path`` with ``transform(its bytes)`` under its lock: a new file, fsynced, renamed over it."""
    with appending(path, fix=f"check that {path.parent} is writable"):
        body = transform(path.read_bytes())
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                view = memoryview(body)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise StoreError(f"cannot rewrite {path}: {exc.strerror or exc}; the file is unchanged",
                             fix=f"free space on the disk of {path.parent}, then rerun") from exc
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)  # the rename itself survives a power cut
        finally:
            os.close(dir_fd)


# -- events as dicts -----------------------------------------------------------------------------


def utc(ts: datetime | None = None) -> str:
    """An ISO-8601 UTC timestamp as the models write it."""
    return (ts or datetime.now(UTC)).isoformat().replace("+00:00", "Z")


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: (v if k in _KEEP_NONE else _drop_none(v)) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


def event(kind: str, session: str, **fields: Any) -> dict[str, Any]:
    """An event of ``kind`` as the models would write it; ``ValueError`` for a kind or field they do not have."""
    allowed = FIELDS.get(kind)
    if allowed is None:
        raise ValueError(f"files.event builds {sorted(FIELDS)}, not {kind!r}")
    unknown = set(fields) - allowed
    if unknown:
        raise ValueError(f"{kind} events have no field(s) {sorted(unknown)}")
    return _drop_none({"v": SCHEMA_VERSION, "id": os.urandom(16).hex(), "session": session, "ts": utc(),
                       "kind": kind, **fields})


# -- reconciliation ------------------------------------------------------------------------------


def open_attempts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The attempt dicts of a session that have no outcome yet."""
    ended = {e.get("attempt") for e in events if e.get("kind") == "outcome"}
    return [e for e in events if e.get("kind") == "attempt" and e.get("short_id") not in ended]


def orphaned(recorder_pid: object, recorder_host: object, host: str | None = None) -> bool:
    """Whether an open attempt's recording is over: recorded on this host, and its logkit is gone."""
    if recorder_host not in (None, host or procs.hostname()):
        return False
    pid = recorder_pid
    if not pid or not isinstance(pid, int) or isinstance(pid, bool) or not procs.alive(pid):
        return True
    return "logkit" not in (procs.cmdline(pid) or "")  # a reused pid is not its recorder
