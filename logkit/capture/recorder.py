"""The log side of a recording: redacted raw log, digest, line numbers, tail, watcher feed.

Contract:

* :meth:`Recorder.consume` stores the complete lines of a read, redacted, one ``os.write`` per call; a
  partial line waits until it completes, is older than :data:`PARTIAL_AGE_S` (flushed up to its last
  space or ``\\r``: a token is never written in halves) or longer than :data:`PARTIAL_MAX`. A later part
  of a line is redacted together with the raw text written so far (up to :data:`CONTEXT_MAX` bytes):
  ``password `` then, a second later, ``hunter2`` is redacted.
* After :meth:`Recorder.start`, :meth:`submit` and :meth:`tick` hand work, in order, to one recorder
  thread (``Watcher.feed`` and ``Watcher.tick`` run there); at most :data:`QUEUE_CHUNKS` reads wait:
  a slow recorder slows the pipe, it never drops output.
* The redaction prefilter (:meth:`scan`) runs on the reading thread; the last ``window`` bytes of the
  previous read are rescanned with this one (a trigger split across reads).
* Nothing here raises: an error is appended to :attr:`problems` (``capture_truncated``), the stream goes on.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from .redact import Redactor

__all__ = ["CONTEXT_MAX", "NUMPY_COUNT_MIN", "PARTIAL_AGE_S", "PARTIAL_MAX", "QUEUE_CHUNKS", "Recorder", "newlines",
           "tail_lines"]

QUEUE_CHUNKS = 32
PARTIAL_MAX = 64 * 1024
PARTIAL_AGE_S = 1.0
CONTEXT_MAX = 4096
# bytes that end a token: a partial line cut for its size is cut after the last of them
_BREAKS = tuple(bytes([c]) for c in b",;'\"()[]{}<>|`=:/@")
TAIL_LINES = 20
TAIL_BYTES = 65536
#: a stored chunk at least this big has its newlines counted by numpy (4x faster than ``bytes.count``)
NUMPY_COUNT_MIN = 256 * 1024
_numpy: Any = None


def newlines(data: bytes) -> int:
    """``data.count(b"\n")``, by numpy on big chunks where numpy imports (pandas needs it)."""
    global _numpy
    if _numpy is None and len(data) >= NUMPY_COUNT_MIN:
        try:
            import numpy as _numpy
        except Exception:
            _numpy = False
    if len(data) < NUMPY_COUNT_MIN or _numpy is False:
        return data.count(b"\n")
    return int(_numpy.count_nonzero(_numpy.frombuffer(data, _numpy.uint8) == 10))


class _Hasher:
    """sha256 of the stored log, computed on a thread: hashlib releases the GIL on big buffers."""

    EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    def __init__(self) -> None:
        self._queue: Any = None  # started on the first byte: a silent command pays nothing

    def _work(self) -> None:
        while (data := self._queue.get()) is not None:
            self._sha.update(data)

    def update(self, data: bytes) -> None:
        if self._queue is None:
            import hashlib
            import queue
            import threading

            self._sha = hashlib.sha256()
            self._queue = queue.SimpleQueue()
            self._thread = threading.Thread(target=self._work, name="logkit-sha256", daemon=True)
            self._thread.start()
        self._queue.put(data)

    def hexdigest(self) -> str:
        if self._queue is None:
            return self.EMPTY
        self._queue.put(None)
        self._thread.join()
        return self._sha.hexdigest()


class Recorder:
    """The streaming half: terminal copy, redacted log, watcher, tail, digest."""

    def __init__(self, log_fd: int | None, redactor: Redactor, watcher: Any) -> None:
        self.log_fd = log_fd
        self.redactor = redactor
        self.watcher = watcher
        self.partial: dict[int, bytes] = {}
        self.partial_since: dict[int, float] = {}
        self.lines = 0
        self.size = 0
        self.sha = _Hasher()
        self.tail = b""
        self.problems: list[str] = []
        self.echo_ok = {1: True, 2: True}
        self._queue: Any = None
        self._dropped_fd: int | None = None
        self._scan_tail: dict[int, bytes] = {}
        self._partial_suspicious: dict[int, bool] = {}
        self._context: dict[int, bytes] = {}  # per fd: the line already written in part (raw)
        self._ph = redactor.placeholder.encode()
        self._window = max(redactor.window - 1, 1)

    def start(self) -> None:
        """Run redaction, log writes, digest and the watcher on a recorder thread, in order."""
        import queue
        import threading

        self._queue = queue.Queue(maxsize=QUEUE_CHUNKS)
        self._worker = threading.Thread(target=self._drain, name="logkit-recorder", daemon=True)
        self._worker.start()

    def _drain(self) -> None:
        while (item := self._queue.get()) is not None:
            fd, payload, suspicious = item
            try:
                if fd is None:
                    self._tick(payload)
                else:
                    self.consume(fd, payload, suspicious)
            except BaseException as exc:  # the thread must outlive anything
                self.problems.append(f"recording failed: {type(exc).__name__}: {exc}")

    def scan(self, fd: int, data: bytes) -> bool | None:
        """The redaction prefilter for one read (on the reading thread); None if it failed."""
        try:
            window = self._window
            before = self._scan_tail.get(fd, b"")
            # short reads add up: the tail is the last `window` bytes of the stream, not of this read
            self._scan_tail[fd] = data[-window:] if len(data) >= window else (before + data)[-window:]
            return self.redactor.suspicious(data) or bool(before and self.redactor.suspicious(before + data[:window]))
        except Exception:
            return None  # the recorder thread will decide on its own

    def submit(self, fd: int, data: bytes, waiting: Callable[[], None], suspicious: bool | None = None) -> None:
        """Queue output for the recorder thread (at most QUEUE_CHUNKS reads ahead)."""
        if self._queue is None:
            self.consume(fd, data, suspicious)
            return
        import queue

        while True:
            try:
                self._queue.put((fd, data, suspicious), timeout=0.25)
                return
            except queue.Full:
                waiting()  # keep forwarding signals while the recorder catches up

    def tick(self, now: float) -> None:
        """Flush stale partial lines and tick the watcher (on the recorder thread)."""
        if self._queue is None:
            self._tick(now)
            return
        import queue

        with contextlib.suppress(queue.Full):  # busy recording: the next tick will do
            self._queue.put_nowait((None, now, None))

    def _tick(self, now: float) -> None:
        self.flush_stale(now)
        if self.watcher is not None:
            try:
                self.watcher.tick(now)
            except Exception as exc:
                self.problems.append(f"watcher failed: {type(exc).__name__}: {exc}")
                self.watcher = None

    def stop(self) -> None:
        """Wait until everything queued is recorded."""
        if self._queue is not None:
            self._queue.put(None)
            self._worker.join()
            self._queue = None

    def _drop_log(self) -> None:
        """Stop writing the log after a failure; the descriptor stays open for :meth:`close_log`."""
        if self.log_fd is not None:
            self._dropped_fd = self.log_fd
        self.log_fd = None

    def close_log(self, sync: bool = False) -> None:
        """Close the log's descriptor (``fsync`` first with ``sync``), also one dropped after a failure."""
        fd = self.log_fd if self.log_fd is not None else self._dropped_fd
        self.log_fd = self._dropped_fd = None
        if fd is None:
            return
        if sync:
            with contextlib.suppress(OSError):
                os.fsync(fd)
        with contextlib.suppress(OSError):
            os.close(fd)

    def echo(self, dest: int, data: bytes) -> None:
        if not self.echo_ok.get(dest, True):
            return
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(dest, view):]
        except OSError:
            self.echo_ok[dest] = False  # logkit's own stdout is gone: keep recording

    def _store(self, data: bytes, suspicious: bool | None = None) -> None:
        data = self.redactor.stream(data, suspicious)
        if self.log_fd is not None:
            # size and sha256 describe the stored file, also when the disk fills up mid-chunk
            written = 0
            try:
                while written < len(data):
                    written += os.write(self.log_fd, memoryview(data)[written:])
            except OSError as exc:
                self.problems.append(f"log write failed after {self.size + written} bytes: {exc.strerror}")
                self._drop_log()
                sys.stderr.write(f"logkit: warning: the log stopped at {self.size + written} bytes ({exc.strerror}); "
                                 "the command runs on and its output still reaches this terminal\n")
            self.size += written
            self.sha.update(memoryview(data)[:written])
        first = self.lines + 1
        self.lines += newlines(data)
        self.tail = (self.tail + data)[-TAIL_BYTES:] if len(data) < TAIL_BYTES else data[-TAIL_BYTES:]
        if self.watcher is not None:
            try:
                self.watcher.feed(data, first)
            except Exception as exc:
                self.problems.append(f"watcher failed: {type(exc).__name__}: {exc}")
                self.watcher = None

    def consume(self, fd: int, data: bytes, suspicious: bool | None = None) -> None:
        """Store the complete lines of one read; ``suspicious`` is :meth:`scan`'s verdict."""
        try:
            carried = self._partial_suspicious.pop(fd, False)
            if suspicious is not None:
                suspicious = suspicious or carried
            buf = self.partial.pop(fd, b"") + data if fd in self.partial else data
            cut = buf.rfind(b"\n") + 1
            if cut and fd in self._context:
                # the end of a line already flushed in part: redacted together with its earlier parts
                first = buf.find(b"\n") + 1
                self._store_continued(fd, buf[:first])
                if first < cut:
                    self._store(buf[first:cut], suspicious)
                buf = buf[cut:]
            elif cut:
                self._store(buf[:cut], suspicious)
                buf = buf[cut:]
            if len(buf) > PARTIAL_MAX:
                buf = self._flush_partial(fd, buf, "size")
            if buf:
                self.partial[fd] = buf
                self.partial_since.setdefault(fd, time.monotonic())
                if suspicious is not False:
                    self._partial_suspicious[fd] = True  # the leftover may hold the trigger
            else:
                self.partial_since.pop(fd, None)
        except Exception as exc:  # never let recording stop the stream
            self.problems.append(f"recording failed: {type(exc).__name__}: {exc}")
            self._drop_log()

    def _store_continued(self, fd: int, raw: bytes) -> None:
        """Store the next part of a line whose earlier part (the context) is in the log, redacted with it."""
        # a match reaching back into what was written starts the part with the placeholder
        ctx = self._context.pop(fd, b"")
        if ctx:
            before = self.redactor.chunk(ctx)
            after = self.redactor.chunk(ctx + raw)
            if after.startswith(before):
                out = after[len(before):]
            else:
                same = next((i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b),
                            min(len(before), len(after)))
                at = after.find(self._ph, same)
                out = after[at:] if at >= 0 else self._ph + (b"\n" if raw.endswith(b"\n") else b"")
        else:
            out = self.redactor.chunk(raw)
        self._store(out, False)
        if raw.endswith(b"\n"):
            return
        line = ctx + raw
        line = line[line.rfind(b"\r") + 1:]  # a progress bar redrawn after "\r" starts afresh
        if len(line) > CONTEXT_MAX:
            line = line[-CONTEXT_MAX:]
            line = line[line.find(b" ") + 1:]  # start the kept context at a word
        if line:
            self._context[fd] = line

    def _flush_partial(self, fd: int, buf: bytes, why: str) -> bytes:
        """Store all of a partial line (``all``), up to its last blank (``age``) or token end (``size``); the rest."""
        if why == "all":
            self._store_continued(fd, buf)
            return b""
        cut = max(buf.rfind(b" "), buf.rfind(b"\r"), buf.rfind(b"\t")) + 1
        if cut <= 0 and why == "size":
            cut = max(buf.rfind(c) for c in _BREAKS) + 1
            if cut <= 0:
                cut = max(len(buf) - 512, 1)  # one 64 KiB word: no pattern matches inside it
        if cut <= 0:
            return buf
        self._store_continued(fd, buf[:cut])
        return buf[cut:]

    def flush_stale(self, now: float, everything: bool = False) -> None:
        for fd, since in list(self.partial_since.items()):
            if everything or now - since >= PARTIAL_AGE_S:
                rest = self._flush_partial(fd, self.partial.pop(fd), "all" if everything else "age")
                self.partial_since.pop(fd, None)
                if not rest:
                    self._partial_suspicious.pop(fd, None)
                else:  # held back: its verdict (a trigger in it) carries over to the read completing it
                    self.partial[fd] = rest
                    self.partial_since[fd] = now

    def tail_lines(self) -> list[dict[str, Any]]:
        """The outcome's ``tail``: the last lines stored (:func:`tail_lines`)."""
        last = self.lines if self.tail.endswith(b"\n") else self.lines + 1
        return tail_lines(self.tail, last, cut=len(self.tail) >= TAIL_BYTES)


def tail_lines(data: bytes, last: int, *, cut: bool) -> list[dict[str, Any]]:
    """The last :data:`TAIL_LINES` lines of ``data``, ending at line ``last`` (``cut``: the first is left out)."""
    text = data.decode("utf-8", "replace")
    lines = [ln.rstrip("\r").rsplit("\r", 1)[-1] for ln in text.split("\n")]
    if text.endswith("\n") or not text:
        lines.pop()
    picked = lines[1 if cut else 0:][-TAIL_LINES:]
    first = last - len(picked) + 1
    return [{"line": first + i, "text": t[:2000]} for i, t in enumerate(picked)]
