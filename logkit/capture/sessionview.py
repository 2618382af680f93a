"""What ``logkit run`` knows of its session before the spawn: the one index, plus what it has not
ingested yet.

Contract:

* :meth:`SessionView.load` answers, for the bytes ``[0, size)`` of one ``events.jsonl``: the highest
  ``A<n>``/``H<n>`` any line claims (a damaged line's too), the hypothesis ids, the attempts without
  an outcome and the last launch with its probed environment.
* A file of at most :data:`SCAN_LIMIT` bytes is scanned whole. A bigger one is read from
  :class:`logkit.store.index.Index` as it stands plus the lines appended since its offset, when the
  inode and the sha256 of the 4 KiB before that offset match; anything else scans the whole file.
* The scan is bytes and :mod:`json` (only lines of a ``kind`` it needs decoded); :meth:`catch_up`
  scans what was appended since; :func:`refresh` brings the index up to date (validated ingest).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from pathlib import Path
from typing import Any

from ..store import files
from ._slotted import Slotted

__all__ = ["INDEX_BUSY_S", "SCAN_LIMIT", "SessionView", "refresh"]

#: A session file up to this size is scanned whole before the spawn (about 2,000 events, a few ms).
SCAN_LIMIT = 1 << 20
#: How long opening the index before the spawn may wait for another process's lock.
INDEX_BUSY_S = 0.2
_TAIL = 4096  # the index's hashed tail (logkit.store.ingest)
_PREFIX = b'{"v":%d,' % files.SCHEMA_VERSION
_KIND = re.compile(rb'"kind":\s*"(?:attempt|outcome|hypothesis|environment)"')


class SessionView(Slotted):
    """The session as ``logkit run`` needs it (see the module contract)."""

    __slots__ = ("path", "root", "session", "ino", "size", "max_a", "max_h", "hyps", "open", "launch", "indexed",
                 "source")

    path: Path
    root: Path
    session: str
    ino: int  # the inode of the file this view covers (a file replaced since is read again whole)
    size: int  # the bytes of the file this view covers (complete lines)
    max_a: int
    max_h: int
    hyps: list[str]
    open: dict[str, dict[str, Any]]  # short id -> attempt event dict, for the attempts without an outcome
    launch: dict[str, Any] | None  # the last launch attempt's dict, its probed environment in place
    indexed: int  # the bytes of the file the index has ingested (what it lacks: :attr:`behind`)
    source: str  # "scan" (the whole file read) or "index" (the index, and the lines after its offset)

    def __init__(self, path: Path, root: Path, session: str) -> None:
        self.path, self.root, self.session = path, root, session
        self._reset()

    def _reset(self) -> None:
        self.ino = self.size = self.max_a = self.max_h = self.indexed = 0
        self.hyps, self.open, self.launch, self.source = [], {}, None, "scan"

    @classmethod
    def load(cls, root: Path, session: str, path: Path) -> SessionView:
        """The view of ``path`` (the events file of ``session`` in store ``root``), as of now."""
        view = cls(path, root, session)
        try:
            size = path.stat().st_size
        except OSError:
            return view
        if size > SCAN_LIMIT:
            with contextlib.suppress(Exception):  # the index only speeds this up: scan instead
                if view._from_index():
                    return view
            view._reset()
        view.catch_up()
        return view

    @property
    def behind(self) -> int:
        """How many bytes of the file the index has not ingested (as of this view)."""
        return max(0, self.size - self.indexed)

    def _from_index(self) -> bool:
        """Fill the view from the index and the lines after its offset; False when it cannot be used."""
        from ..store.index import Index  # sqlite3: only for a session big enough to need it

        with Index(self.root, busy=INDEX_BUSY_S) as index:
            if index.path is None:
                return False  # an in-memory index would be ingested afresh: slower than a scan
            with index.snapshot() as snap:
                state = snap.ingested(self.session)
                if state is None or not state["size"]:
                    return False
                start = max(0, state["size"] - _TAIL)
                with open(self.path, "rb") as fh:
                    self.ino = os.fstat(fh.fileno()).st_ino
                    if fh.seek(0, 2) < state["size"] or self.ino != state["ino"]:
                        return False
                    fh.seek(start)
                    data = fh.read()
                if hashlib.sha256(data[:state["size"] - start]).hexdigest() != state["tail"]:
                    return False  # rewritten before the indexed end
                self.max_a, self.max_h = state["max_a"] or 0, state["max_h"] or 0
                self.hyps = [row["short_id"] for row in snap.hypotheses(session=self.session)]
                self.open = {e["short_id"]: e for e in snap.open_attempts(self.session)}
                self.launch = snap.last_launch(self.session)
        self.size = self.indexed = state["size"]
        self.source = "index"
        self._scan(data[state["size"] - start:])
        return True

    def catch_up(self) -> None:
        """Take the complete lines appended since :attr:`size` (all of them, for a file replaced or shortened since)."""
        try:
            with open(self.path, "rb") as fh:
                st = os.fstat(fh.fileno())
                if st.st_ino != self.ino or st.st_size < self.size:
                    self._reset()
                    self.ino = st.st_ino
                fh.seek(self.size)
                data = fh.read()
        except OSError:
            return
        self._scan(data)

    def _scan(self, data: bytes) -> None:
        """Take ``data``, the file from byte :attr:`size` on (a torn last line is left for later)."""
        self.max_a = max(self.max_a, *files.short_numbers(data, "A"), 0)  # a torn or damaged line's id too
        self.max_h = max(self.max_h, *files.short_numbers(data, "H"), 0)
        end = data.rfind(b"\n") + 1
        for line in data[:end].split(b"\n"):
            if line.startswith(_PREFIX) and _KIND.search(line) is None:
                continue  # a kind the run does not need (only a current line can be judged by its bytes)
            event = files.decode(line) if line.strip() else None
            if event is not None:
                self._take(event)
        self.size += end

    def _take(self, event: dict[str, Any]) -> None:
        kind, short = event.get("kind"), event.get("short_id")
        if kind == "attempt" and isinstance(short, str) and files.ATTEMPT_ID_RE.match(short):
            self.open[short] = event
            if event.get("role") == "launch":
                self.launch = event
        elif kind == "outcome" and isinstance(event.get("attempt"), str):
            self.open.pop(event["attempt"], None)
        elif kind == "hypothesis" and isinstance(short, str) and files.HYPOTHESIS_ID_RE.match(short):
            self.hyps.append(short)
        elif kind == "environment" and self.launch is not None and event.get("attempt") == self.launch.get("short_id"):
            self.launch = {**self.launch, "environment": event.get("environment")}  # probed after the start


def refresh(root: Path, session: str) -> None:
    """Bring the index up to date with ``session``'s file (validated ingest); never raises."""
    with contextlib.suppress(Exception):  # only the next reader's speed depends on it
        from ..store.index import Index

        with Index(root) as index:
            if index.path is not None:
                index.refresh([session], fallback=False)
