"""A small per-session index of what ``logkit run`` needs from ``events.jsonl`` before the spawn.

``logkit run`` must start the child in a bounded time whatever the size of the session; reading
and parsing a session of 100,000 events took 2.5 s and 600 MB. This index holds, for the bytes
``[0, size)`` of one ``events.jsonl``:

* ``max_a`` / ``max_h``: the highest ``A<n>`` / ``H<n>`` number (the next attempt id);
* ``hyps``: the hypothesis ids (``--tests H3`` is checked against them);
* ``open``: the attempts without an outcome, each with the offset and length of its line (the
  abandoned-attempt check);
* ``launch`` / ``env``: offset and length of the last launch attempt's line and of the last
  ``environment`` event of that attempt (the previous launch of the config diff).

Contract:

* It lives in ``<root>/.cache/run/<session>.json`` (``<root>/.cache`` is git-ignored: a cache is
  never shipped) and is written atomically, best effort: a read-only store or a full disk never
  fails a run, the index is just not saved.
* **Fresh** when the file has the inode and size it was made from. **Grown** (same inode, larger,
  the 4 KiB before the indexed end unchanged: ``tail``, a sha256): only the appended lines are
  read, when they are at most :data:`EXTEND_LIMIT` bytes. Anything else (no index, a damaged or
  foreign one, a replaced, shrunk or rewritten file, a big append) rebuilds it: in full for a file
  of at most :data:`FULL_LIMIT` bytes, else (:meth:`RunIndex.load` with ``partial=True``) from the
  last :data:`TAIL_BYTES` only, marked ``partial``; :meth:`RunIndex.complete` then indexes the whole
  file, in bounded chunks, once the child runs.
* Never trusted blindly: the file's shape is checked field by field, and a line the index points
  at is read and must decode to what the index says (its kind and short id) before it is used;
  otherwise the index is rebuilt. Lines are only indexed up to the last newline (a torn last line
  is read again once it is ended).
* Pure bytes and ``json``: no pydantic, nothing imported that ``logkit run`` would not import anyway.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .. import files

__all__ = ["EXTEND_LIMIT", "FULL_LIMIT", "RunIndex", "TAIL_BYTES"]

#: a file up to this size is indexed in full before the spawn (about 10,000 events; ~50 ms)
FULL_LIMIT = 8 << 20
#: at most this many appended bytes are read to bring an index up to date before the spawn
EXTEND_LIMIT = 8 << 20
#: a bigger file without a usable index is read from its end only, this much, before the spawn
TAIL_BYTES = 1 << 20
#: how much is read at a time when a whole file is indexed
CHUNK = 4 << 20
_TAIL_HASHED = 4096
_FORMAT = 1
_DIR = ("run",)

_KIND = re.compile(rb'"kind":\s*"([a-z_]+)"')
_SHORT = re.compile(rb'"short_id":\s*"([AH])([0-9]{1,18})"')
_ATTEMPT = re.compile(rb'"attempt":\s*"(A[0-9]{1,18})"')
_LAUNCH = re.compile(rb'"role":\s*"launch"')
_KINDS = frozenset({b"attempt", b"outcome", b"hypothesis", b"environment"})


class RunIndex:
    """The index of one session file (see the module contract)."""

    def __init__(self, events_path: Path, root: Path, session_id: str) -> None:
        self.events_path = events_path
        self.root = root
        self.session_id = session_id
        self.path = root / ".cache" / Path(*_DIR) / f"{session_id}.json"
        self.size = 0
        self.ino = 0
        self.tail = ""
        self.max_a = 0
        self.max_h = 0
        self.hyps: list[str] = []
        #: attempt id -> [offset, length] of its line
        self.open: dict[str, list[int]] = {}
        #: [offset, length, short id] of the last launch attempt's line
        self.launch: list[Any] | None = None
        #: [offset, length] of the last environment event of that launch
        self.env: list[int] | None = None
        #: built from the end of the file only: ids and open attempts before it are unknown
        self.partial = False
        #: what :meth:`load` did: "fresh", "extended", "full" or "tail" (tests and the bench read it)
        self.how = ""
        #: bytes of ``events.jsonl`` read by :meth:`load` / :meth:`update`
        self.bytes_read = 0

    # -- loading ---------------------------------------------------------------------------------

    @classmethod
    def load(cls, events_path: Path, root: Path, session_id: str, *, partial: bool = True) -> RunIndex:
        """The index, up to date with the file; from its end only when it would mean reading a big file
        in full and ``partial`` allows it."""
        index = cls(events_path, root, session_id)
        index._restore()
        index.update(partial=partial)
        return index

    def _restore(self) -> None:
        try:
            data = json.loads(self.path.read_bytes())
        except (OSError, ValueError, RecursionError):
            return
        if not _well_formed(data):
            return
        self.size, self.ino, self.tail = data["size"], data["ino"], data["tail"]
        self.max_a, self.max_h, self.hyps = data["max_a"], data["max_h"], list(data["hyps"])
        self.open = {k: list(v) for k, v in data["open"].items()}
        self.launch, self.env = data["launch"], data["env"]

    def _reset(self) -> None:
        fresh = RunIndex(self.events_path, self.root, self.session_id)
        for name in ("size", "ino", "tail", "max_a", "max_h", "hyps", "open", "launch", "env", "partial"):
            setattr(self, name, getattr(fresh, name))

    def update(self, *, partial: bool = False) -> None:
        """Bring the index up to date with the file (see the module contract for how much is read)."""
        try:
            st = os.stat(self.events_path)
        except OSError:
            self._reset()
            self.how = "missing"
            return
        if self.ino == st.st_ino and self.size == st.st_size and self.tail and not self.partial:
            self.how = "fresh"
            return
        if (self.ino == st.st_ino and self.tail and not self.partial and self.size < st.st_size
                and st.st_size - self.size <= EXTEND_LIMIT and self._tail_matches()):
            self._scan(self._read(self.size, st.st_size - self.size), self.size)
            self._hash_tail()
            self.how = "extended"
            return
        self._reset()
        self.ino = st.st_ino
        if partial and st.st_size > FULL_LIMIT:
            self._from_tail(st.st_size)
            self.how = "tail"
            return
        self._full()
        self._hash_tail()
        self.how = "full"

    def complete(self) -> None:
        """Index the whole file if only its end was (in chunks: bounded memory); then save."""
        if self.partial:
            self._reset()
            with contextlib.suppress(OSError):
                self.ino = os.stat(self.events_path).st_ino
            self._full()
            self._hash_tail()
            self.how = "full"
        self.update()
        self.save()

    def _tail_matches(self) -> bool:
        start = max(0, self.size - _TAIL_HASHED)
        try:
            chunk = self._read(start, self.size - start)
        except OSError:
            return False
        return len(chunk) == self.size - start and hashlib.sha256(chunk).hexdigest() == self.tail

    def _full(self) -> None:
        try:
            with open(self.events_path, "rb") as fh:
                carry = b""  # bounded memory: CHUNK bytes and one line at a time
                offset = 0
                for block in iter(lambda: fh.read(CHUNK), b""):
                    self.bytes_read += len(block)
                    data = carry + block
                    end = data.rfind(b"\n") + 1
                    self._scan(data[:end], offset)
                    offset += end
                    carry = data[end:]
                self._scan(carry, offset)  # a torn last line: not indexed (no newline)
        except OSError:
            return

    def _from_tail(self, size: int) -> None:
        start = size - TAIL_BYTES
        data = self._read(start, TAIL_BYTES)
        skip = data.find(b"\n") + 1  # the first line is probably cut
        self.partial = True
        self.size = start + skip
        self._scan(data[skip:], start + skip)

    # -- scanning --------------------------------------------------------------------------------

    def _scan(self, data: bytes, base: int) -> None:
        """Index the complete lines of ``data``, which starts at byte ``base`` of the file."""
        end = data.rfind(b"\n") + 1
        prefix = b'{"v":%d,' % files.SCHEMA_VERSION
        offset = base
        for line in data[:end].split(b"\n")[:-1] if end else []:
            here, offset = offset, offset + len(line) + 1
            if line.startswith(prefix):
                kind = _KIND.search(line, 0, 400)
                if kind is None or kind.group(1) not in _KINDS:
                    continue
                self._take(kind.group(1), line, here)
            elif line.strip():
                self._take_decoded(line, here)
        if end:
            self.size = base + end

    def _hash_tail(self) -> None:
        start = max(0, self.size - _TAIL_HASHED)
        self.tail = hashlib.sha256(self._read(start, self.size - start) if self.size else b"").hexdigest()

    def _take(self, kind: bytes, line: bytes, offset: int) -> None:
        if kind == b"attempt" or kind == b"hypothesis":
            short = _SHORT.search(line)
            if short is not None:
                self._record(kind, short.group(1).decode() + short.group(2).decode(), None,
                             _LAUNCH.search(line) is not None, offset, len(line))
            return
        ref = _ATTEMPT.search(line)
        if ref is None:
            return
        if kind == b"outcome" and (files.decode(line) or {}).get("attempt") != ref.group(1).decode():
            return  # a torn or damaged outcome closes nothing (the typed reader skips it too)
        self._record(kind, None, ref.group(1).decode(), False, offset, len(line))

    def _take_decoded(self, line: bytes, offset: int) -> None:
        """A line at an older schema (or spaced otherwise): decoded, then indexed like the others."""
        data = files.decode(line)
        if data is None or data.get("kind") not in ("attempt", "outcome", "hypothesis", "environment"):
            return
        short, ref = data.get("short_id"), data.get("attempt")
        self._record(str(data["kind"]).encode(), short if isinstance(short, str) else None,
                     ref if isinstance(ref, str) else None, data.get("role") == "launch", offset, len(line))

    def _record(self, kind: bytes, short: str | None, ref: str | None, launch: bool, offset: int, length: int) -> None:
        if short is not None:
            if files.HYPOTHESIS_ID_RE.match(short) and kind == b"hypothesis":
                self.max_h = max(self.max_h, int(short[1:]))
                self.hyps.append(short)
            elif files.ATTEMPT_ID_RE.match(short) and kind == b"attempt" and len(short) < 20:
                self.max_a = max(self.max_a, int(short[1:]))
                self.open[short] = [offset, length]
                if launch:
                    self.launch, self.env = [offset, length, short], None
            return
        if ref is None:
            return
        if kind == b"outcome":
            self.open.pop(ref, None)
        elif kind == b"environment" and self.launch is not None and ref == self.launch[2]:
            self.env = [offset, length]

    # -- reading what the index points at --------------------------------------------------------

    def _read(self, offset: int, length: int) -> bytes:
        with open(self.events_path, "rb") as fh:
            fh.seek(offset)
            data = fh.read(length)
        self.bytes_read += len(data)
        return data

    def line(self, ref: list[Any] | None, kind: str, short_id: str | None = None,
             attempt: str | None = None) -> dict[str, Any] | None:
        """The event the index points at, decoded, if it is what the index says; else None."""
        if ref is None:
            return None
        try:
            data = files.decode(self._read(int(ref[0]), int(ref[1])))
        except (OSError, ValueError):
            return None
        if data is None or data.get("kind") != kind:
            return None
        if short_id is not None and data.get("short_id") != short_id:
            return None
        if attempt is not None and data.get("attempt") != attempt:
            return None
        return data

    def last_launch(self) -> dict[str, Any] | None:
        """The last launch attempt (its environment event merged), or None; None too when the line
        the index names is not that attempt (the index is then rebuilt)."""
        if self.launch is None:
            return None
        found = self.line(self.launch, "attempt", short_id=self.launch[2])
        if found is None:
            self.stale()
            return None
        env = self.line(self.env, "environment", attempt=self.launch[2]) if self.env else None
        if env is not None:
            found["environment"] = env.get("environment")
        return found

    def open_attempts(self) -> Iterator[dict[str, Any]]:
        """The attempt dicts without an outcome (those the index could verify).

        A line that names the attempt but does not decode (torn, damaged) is dropped: the typed
        reader skips it too. A line that is not that attempt at all means the index is wrong: it is
        forgotten (rebuilt on the next :meth:`update`).
        """
        for sid, ref in list(self.open.items()):
            found = self.line(ref, "attempt", short_id=sid)
            if found is None:
                try:
                    raw = self._read(int(ref[0]), int(ref[1]))
                except (OSError, ValueError):
                    raw = b""
                short = _SHORT.search(raw)
                if short is not None and short.group(1) + short.group(2) == sid.encode():
                    del self.open[sid]
                    continue
                self.stale()
                return
            yield found

    def stale(self) -> None:
        """Forget everything: the next :meth:`update` rebuilds (a line was not where the index said)."""
        self._reset()
        self.ino = -1

    # -- saving ----------------------------------------------------------------------------------

    def save(self) -> bool:
        """Write the index (atomically, best effort); False when it could not be written."""
        if self.partial or not self.tail:
            return False  # an index of the file's end is never saved: the next run would trust it
        data = {"format": _FORMAT, "size": self.size, "ino": self.ino, "tail": self.tail, "max_a": self.max_a,
                "max_h": self.max_h, "hyps": self.hyps, "open": self.open, "launch": self.launch, "env": self.env}
        folder = self.path.parent
        tmp = folder / f".{self.path.name}.{os.getpid()}.tmp"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            ignore = folder.parent / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# logkit's read caches: derived from events.jsonl, never committed\n*\n")
            tmp.write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()
            return False
        return True


def _int(value: object) -> bool:
    return type(value) is int and value >= 0


def _ref(value: object, size: int, named: bool = False) -> bool:
    if value is None:
        return True
    if type(value) is not list or len(value) != (3 if named else 2):
        return False
    if not (_int(value[0]) and _int(value[1]) and value[0] + value[1] <= size):
        return False
    return not named or (type(value[2]) is str and files.ATTEMPT_ID_RE.match(value[2]) is not None)


def _well_formed(data: object) -> bool:
    if type(data) is not dict or data.get("format") != _FORMAT:
        return False
    size = data.get("size")
    if not (_int(size) and _int(data.get("ino")) and _int(data.get("max_a")) and _int(data.get("max_h"))):
        return False
    if type(data.get("tail")) is not str or len(data["tail"]) != 64:
        return False
    hyps, open_ = data.get("hyps"), data.get("open")
    if type(hyps) is not list or not all(type(h) is str and files.HYPOTHESIS_ID_RE.match(h) for h in hyps):
        return False
    if type(open_) is not dict or not all(files.ATTEMPT_ID_RE.match(k) and _ref(v, size) for k, v in open_.items()):
        return False
    return _ref(data.get("launch"), size, named=True) and _ref(data.get("env"), size)
