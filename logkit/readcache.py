"""A per-session cache of what a reader derives from ``events.jsonl``, so a big store reads fast.

Contract:

* One cache file per *reader* (``name``) for the whole store: ``<root>/.cache/<name>.json``,
  holding, per session, the key of the ``events.jsonl`` it was derived from and the derived value
  (plain JSON). ``<root>/.cache/.gitignore`` keeps it out of git: a cache is never shipped. The
  file is a header line and one line per session (its id and its entry as JSON, a tab between):
  an entry is parsed when its session is asked for (a file under 4 MiB, the pre-launch check's,
  whole when read), and written back as it was read unless it changed, so a big store's cache is
  never all in memory as objects at once.
* **Key**: the file's size, ``mtime_ns``, ``ctime_ns`` and inode, and the sha256 of its bytes.
  When the stat fields all match, the value is used without reading the file (``ctime`` cannot be
  set back by ``touch``, and a checkout or copy gets a new inode). When they do not, the file is
  read, hashed and the value derived again (validating the file as the reader does), even when the
  bytes hash the same: a cache planted through git with a forged hash is never believed. The
  hash is the content's identity for :meth:`SessionCache.digest` (the builder re-renders only
  sessions whose content changed).
* **Appends** (a reader that passes ``extend``): when the file has the inode it was derived from,
  has grown by at most :data:`EXTEND_LIMIT` bytes of whole lines, and the 4 KiB before the old end
  are unchanged (``tail``, their sha256), only the appended bytes are read and
  ``extend(value, state, appended)`` gives the new ``(value, state)`` (``state``: what the reader
  keeps beside the value to extend it; ``None`` from ``extend``: derive from the whole file). Such an
  entry has no content hash (``""``); :meth:`SessionCache.digest` is then unknown. ``logkit run``
  appends a few lines to a session: the check before the next launch reads those, not the session.
* **Never trusted**: a cache file that does not parse, has another format, version or reader
  name, or whose entry is not shaped as written, is ignored and rebuilt. ``version`` is the
  reader's own: bump it when what it derives changes.
* Writing is best effort and atomic (a new file, then ``rename``): a read-only store, a full disk
  or a concurrent writer never fails a reader, the cache is just not saved this time.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["CACHE_DIR", "EXTEND_LIMIT", "SessionCache", "read_file", "stat_key", "write_file"]

CACHE_DIR = ".cache"
_FORMAT = 3
#: an entry: [size, mtime_ns, ctime_ns, inode, sha256, tail sha256, state, value]
_KEY_LEN = 4
_ENTRY_LEN = _KEY_LEN + 4
#: appended bytes an ``extend`` reader reads instead of the whole file
EXTEND_LIMIT = 8 << 20
_TAIL = 4096
#: a cache file this small is parsed whole when read; a bigger one entry by entry, when asked for
_EAGER_BYTES = 4 << 20
_KEY_RE = re.compile(rb"\[(\d+),(\d+),(\d+),(\d+),")


def _tail_hash(raw: bytes) -> str:
    return hashlib.sha256(raw[-_TAIL:]).hexdigest()


def stat_key(st: os.stat_result) -> list[int]:
    """The stat part of an entry's key: size, ``mtime_ns``, ``ctime_ns``, inode."""
    return _stat_key(st)


def _stat_key(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


class SessionCache:
    """The values one reader derives per session, kept between runs (see the module contract)."""

    def __init__(self, root: Path, name: str, version: int | str) -> None:
        self.root = Path(root)
        self.name = name
        self.version = version
        self.path = self.root / CACHE_DIR / f"{name}.json"
        #: the cache file's bytes; an entry not parsed yet is its (start, end) in them
        self._raw = b""
        self._entries: dict[str, list[Any] | tuple[int, int]] = self._read()
        self._dirty = False
        #: what the last :meth:`get` calls did: session id -> "hit" | "derived"
        self.last: dict[str, str] = {}

    def _read(self) -> dict[str, list[Any] | tuple[int, int]]:
        try:
            raw = self.path.read_bytes()
            end = raw.index(b"\n")
            head = json.loads(raw[:end])
        except (OSError, ValueError, RecursionError):
            return {}
        if (not isinstance(head, dict) or head.get("format") != _FORMAT or head.get("reader") != self.name
                or head.get("version") != self.version):
            return {}
        if len(raw) <= _EAGER_BYTES and raw.endswith(b"\n"):
            # a small cache (the pre-launch check's) is parsed in one call, as [[id, entry], ...]:
            # 2,000 calls cost more than the stats of the files (a raw tab is never inside JSON)
            lines = raw[end + 1:-1].split(b"\n") if len(raw) > end + 1 else []
            try:
                pairs = json.loads(b"[" + b",".join([b"[" + line.replace(b"\t", b",", 1) + b"]" for line in lines]) + b"]")
            except (ValueError, RecursionError):
                pairs = None  # a damaged line: read entry by entry below, where it fails alone
            if pairs is not None and all(type(p) is list and len(p) == 2 and type(p[0]) is str for p in pairs):
                return dict(pairs)
        # each entry is parsed, and its shape checked, where it is used (get, read, digest): a big
        # store's cache is never all objects at once
        entries: dict[str, list[Any] | tuple[int, int]] = {}
        pos = end + 1
        while pos < len(raw):
            end = raw.find(b"\n", pos)
            tab = raw.find(b"\t", pos, end)
            if end < 0 or tab < 0:
                return {}  # cut or damaged: derived again
            try:
                sid = json.loads(raw[pos:tab])
            except (ValueError, RecursionError):
                return {}
            if type(sid) is not str:
                return {}
            entries[sid] = (tab + 1, end)
            pos = end + 1
        self._raw = raw
        return entries

    def _entry(self, session_id: str) -> Any:
        """The entry of ``session_id`` as JSON values (parsed now if it was not), None if none parses."""
        entry = self._entries.get(session_id)
        if type(entry) is tuple:
            try:
                return json.loads(self._raw[entry[0]:entry[1]])
            except (ValueError, RecursionError):
                return None
        return entry

    def get(self, session_id: str, events_file: str | os.PathLike[str], derive: Callable[[bytes], Any],
            valid: Callable[[Any], bool] = lambda _v: True, st: os.stat_result | None = None,
            extend: Callable[[Any, Any, bytes], tuple[Any, Any] | None] | None = None) -> Any:
        """The value ``derive(bytes of events_file)`` gives, from the cache when the file is unchanged.

        A cached value that ``valid`` refuses is treated as damaged and derived again. Returns
        ``derive(b"")``'s value for a file that cannot be read (not cached). With ``extend``,
        ``derive`` returns ``(value, state)`` and an appended-to file is brought up to date from
        its new lines only (see the module contract).
        """
        whole = derive if extend is None else (lambda raw: derive(raw)[0])
        try:
            st = st or os.stat(events_file)
        except OSError:
            self._drop(session_id)
            return whole(b"")
        entry = self._entry(session_id)
        if (_well_shaped(entry) and entry[0] == st.st_size and entry[1] == st.st_mtime_ns and entry[2] == st.st_ctime_ns
                and entry[3] == st.st_ino and valid(entry[-1])):
            self.last[session_id] = "hit"  # (compared field by field: this runs per session before every launch)
            return entry[-1]
        stat = _stat_key(st)
        if _well_formed(entry) and extend is not None and valid(entry[-1]):
            value = self._extend(session_id, events_file, entry, stat, extend)
            if value is not None:
                return value[0]
        try:
            with open(events_file, "rb") as fh:
                raw = fh.read()
            after = _stat_key(os.stat(events_file))
        except OSError:
            self._drop(session_id)
            return whole(b"")
        if after != stat or len(raw) != stat[0]:
            if not (extend is not None and after[3] == stat[3] and after[0] >= stat[0] and len(raw) >= stat[0]
                    and raw[stat[0] - 1:stat[0]] == b"\n"):
                # a writer appended while we read: use what we read, key nothing on it
                self.last[session_id] = "derived"
                return whole(raw)
            # an append-only file grew while we read (the run being checked wrote its attempt): the
            # bytes the stat saw are keyed on that stat, and the next read extends them
            raw = raw[:stat[0]]
        digest = hashlib.sha256(raw).hexdigest()
        # Same bytes under another stat (a checkout, a copy) are derived again all the same: a value
        # is only ever reused under the stat this machine saw, so a cache planted through git (its
        # sha256 forged to match) is never believed.
        self.last[session_id] = "derived"
        value, state = derive(raw) if extend is not None else (derive(raw), None)
        self._entries[session_id] = [*stat, digest, _tail_hash(raw), state, value]
        self._dirty = True
        return value

    def read(self, session_id: str, events_file: str | os.PathLike[str], derive: Callable[[bytes], Any],
             valid: Callable[[Any], bool] = lambda _v: True,
             st: os.stat_result | None = None) -> tuple[bytes | None, Any, bool]:
        """``(the file's bytes, the value, hit)``: :meth:`get` for a reader that needs the bytes too.

        The bytes are read either way; the cached value is used only when the stat before and after
        reading matches its key and the bytes have that size (``hit``). Otherwise the value is
        ``derive(bytes)`` (keyed when the file held still). ``None`` bytes: the file cannot be read
        (``derive(b"")``, not cached).
        """
        try:
            st = st or os.stat(events_file)
            with open(events_file, "rb") as fh:
                raw = fh.read()
            after = _stat_key(os.stat(events_file))
        except OSError:
            self._drop(session_id)
            return None, derive(b""), False
        stat = _stat_key(st)
        if after != stat or len(raw) != stat[0]:
            self.last[session_id] = "derived"  # a writer appended while we read: key nothing on it
            return raw, derive(raw), False
        entry = self._entry(session_id)
        if _well_formed(entry) and entry[:_KEY_LEN] == stat and valid(entry[-1]):
            self.last[session_id] = "hit"
            return raw, entry[-1], True
        self.last[session_id] = "derived"
        value = derive(raw)
        self.put(session_id, stat, raw, value)
        return raw, value, False

    def put(self, session_id: str, stat: list[int], raw: bytes, value: Any) -> None:
        """Key ``value`` on a file's stat (:func:`stat_key`) and its bytes ``raw`` (hashed here)."""
        self._entries[session_id] = [*stat, hashlib.sha256(raw).hexdigest(), _tail_hash(raw), None, value]
        self._dirty = True

    def _extend(self, session_id: str, events_file: str | os.PathLike[str], entry: list[Any], stat: list[int],
                extend: Callable[[Any, Any, bytes], tuple[Any, Any] | None]) -> tuple[Any] | None:
        """``(value,)`` brought up to date from the lines appended since ``entry``; None when it cannot be."""
        old = entry[0]
        if entry[3] != stat[3] or not old < stat[0] <= old + EXTEND_LIMIT:
            return None
        start = max(0, old - _TAIL)
        try:
            with open(events_file, "rb") as fh:
                fh.seek(start)
                raw = fh.read(stat[0] - start)
            after = _stat_key(os.stat(events_file))
        except OSError:
            return None
        if (after != stat or len(raw) != stat[0] - start or not raw.endswith(b"\n")
                or hashlib.sha256(raw[:old - start]).hexdigest() != entry[_KEY_LEN + 1]
                or (old and raw[old - start - 1:old - start] != b"\n")):
            return None  # changed before the old end, a line still being written, or a writer meanwhile
        try:
            extended = extend(entry[-1], entry[-2], raw[old - start:])
        except Exception:  # noqa: BLE001 - a reader's extension failing means: derive in full
            return None
        if extended is None:
            return None
        value, state = extended
        self.last[session_id] = "extended"
        self._entries[session_id] = [*stat, "", _tail_hash(raw), state, value]
        self._dirty = True
        return (value,)

    def _dump(self, path: Path) -> None:
        """The cache file (see the module contract), one entry at a time; an entry not parsed is
        written back as it was read."""
        encode = json.JSONEncoder(separators=(",", ":"), default=str).encode
        head = {"format": _FORMAT, "reader": self.name, "version": self.version}
        with open(path, "wb") as out:
            out.write(encode(head).encode() + b"\n")
            for sid, entry in self._entries.items():
                out.write(encode(sid).encode() + b"\t")
                out.write(self._raw[entry[0]:entry[1]] if type(entry) is tuple else encode(entry).encode())
                out.write(b"\n")

    def digest(self, session_id: str) -> str | None:
        """The sha256 of the session file as last read through :meth:`get`, if known."""
        entry = self._entry(session_id)
        return entry[_KEY_LEN] or None if _well_formed(entry) else None

    def _drop(self, session_id: str) -> None:
        if self._entries.pop(session_id, None) is not None:
            self._dirty = True

    def prune(self, keep: set[str]) -> None:
        """Forget sessions not in ``keep`` (deleted from the store)."""
        for sid in set(self._entries) - keep:
            self._drop(sid)

    def save(self) -> bool:
        """Write the cache if anything changed; False when it could not be written (never raises)."""
        if not self._dirty:
            return True
        folder = self.path.parent
        tmp = folder / f".{self.name}.{os.getpid()}.tmp"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            ignore = folder / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# logkit's read caches: derived from events.jsonl, never committed\n*\n")
            self._dump(tmp)
            os.replace(tmp, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()
            return False
        self._dirty = False
        return True


def read_file(path: Path) -> dict[str, Any]:
    """A cache file as one JSON object: its header's fields and ``sessions`` (id -> entry). For
    tests and for looking at a cache by hand; the readers parse it lazily."""
    head, _, body = Path(path).read_bytes().partition(b"\n")
    data = json.loads(head)
    data["sessions"] = {}
    for line in body.splitlines():
        sid, _, entry = line.partition(b"\t")
        data["sessions"][json.loads(sid)] = json.loads(entry)
    return data


def write_file(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` (shaped as :func:`read_file` returns it) as a cache file."""
    head = {k: v for k, v in data.items() if k != "sessions"}
    lines = [json.dumps(head)] + [json.dumps(sid) + "\t" + json.dumps(entry) for sid, entry in data["sessions"].items()]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def _well_shaped(entry: object) -> bool:
    """Enough to compare an entry's key field by field with a stat (ints compare equal only to numbers)."""
    return type(entry) is list and len(entry) == _ENTRY_LEN


def _well_formed(entry: object) -> bool:
    return (isinstance(entry, list) and len(entry) == _ENTRY_LEN
            and all(type(k) is int for k in entry[:_KEY_LEN]) and isinstance(entry[_KEY_LEN], str)
            and isinstance(entry[_KEY_LEN + 1], str))
