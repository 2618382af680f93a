"""A named pipe in place of a benchmark's ``--output-file``, so its secrets never touch disk.

SGLang's benchmark client appends one JSON line per run to ``--output-file``, and that line embeds
the server's ``/server_info`` with ``api_key`` and ``admin_api_key`` in clear. When logkit chooses
the output file it hands the client a FIFO instead, and a reader thread writes what arrives,
redacted, to the file.

Contract:

* :meth:`FifoSink.create` makes the FIFO (0600) at the output path in the session, else in a private
  temporary directory, opens it ``O_RDWR`` (no open blocks, no early EOF between writers) and starts the
  reader thread before the child exists; ``OSError`` when no FIFO can be made (the caller falls back
  to a plain file scrubbed afterwards).
* The thread passes every complete record to ``redact`` and appends the result to a hidden
  ``.<name>.part`` beside the final file: nothing unredacted is written anywhere.
* :meth:`FifoSink.close` (idempotent; also run at exit) writes a NUL wake-up byte (JSON never holds
  one), waits up to ``drain_s``, removes the FIFO and moves the redacted records to the final path
  (none: no file). A record cut short by the client's death is redacted as it is.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["DRAIN_S", "FifoSink"]

READ_SIZE = 1 << 20
#: How long :meth:`FifoSink.close` waits for the thread to redact what the client wrote.
DRAIN_S = 10.0
_WAKE = b"\0"


class FifoSink:
    """One benchmark output FIFO and the thread that redacts what comes through it."""

    def __init__(self, fifo: Path, final: Path, redact: Callable[[bytes], bytes], tmpdir: Path | None) -> None:
        self.fifo = fifo
        self.final = final
        self.part = final.with_name(f".{final.name}.part")
        self.tmpdir = tmpdir
        self.redact = redact
        self.where = "session" if tmpdir is None else "temporary directory"  # where the FIFO is, and why
        self.records = 0
        self.problems: list[str] = []
        self._fd = os.open(fifo, os.O_RDWR | os.O_CLOEXEC)
        self._out = open(self.part, "wb")  # noqa: SIM115 - closed by the thread
        self._closed = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, name="logkit-bench-fifo", daemon=True)
        self._thread.start()
        atexit.register(self.close, 0.0)

    @classmethod
    def create(cls, final: Path, redact: Callable[[bytes], bytes]) -> FifoSink:
        """A started sink whose FIFO the client may open at :attr:`fifo`; OSError if none can be made."""
        final.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkfifo(final, 0o600)
            return cls._opened(final, final, redact, None)
        except OSError as session_exc:
            why = f"{final.parent}: {session_exc.strerror or session_exc}"
        tmpdir = Path(tempfile.mkdtemp(prefix="logkit-bench-"))  # 0700: only this user
        fifo = tmpdir / final.name
        try:
            os.mkfifo(fifo, 0o600)
            sink = cls._opened(fifo, final, redact, tmpdir)
        except OSError as exc:
            shutil.rmtree(tmpdir, ignore_errors=True)
            raise OSError(exc.errno, f"no FIFO in the session ({why}) nor in {tmpdir}: {exc.strerror}") from exc
        sink.where = f"temporary directory (the session cannot hold a FIFO: {why})"
        return sink

    @classmethod
    def _opened(cls, fifo: Path, final: Path, redact: Callable[[bytes], bytes], tmpdir: Path | None) -> FifoSink:
        try:
            return cls(fifo, final, redact, tmpdir)
        except OSError:
            fifo.unlink(missing_ok=True)
            raise

    def _deliver(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            out = self.redact(line)
        except Exception as exc:  # noqa: BLE001 - drop the record rather than write it unredacted
            self.problems.append(f"bench record dropped: redaction failed: {type(exc).__name__}: {exc}")
            return
        self._out.write(out + b"\n")
        self._out.flush()
        self.records += 1

    def _read(self) -> None:
        buf = bytearray()
        try:
            while True:
                data = os.read(self._fd, READ_SIZE)
                if not data:  # cannot happen while we hold a write end; be safe
                    break
                wake = data.find(_WAKE)
                if wake >= 0:
                    data = data[:wake]
                buf += data
                if b"\n" in data:  # split only when a record ends: a long one is not copied per read
                    *complete, buf = buf.split(b"\n")  # the last piece: a record still arriving
                    for line in complete:
                        self._deliver(bytes(line))
                if wake >= 0:
                    break
            if buf.strip():
                self._deliver(bytes(buf))  # the client died mid-record
        except Exception as exc:  # noqa: BLE001 - never raised into the run
            self.problems.append(f"bench output reader failed: {type(exc).__name__}: {exc}")
        finally:
            os.close(self._fd)
            self._out.close()

    def _wake(self, deadline: float) -> None:
        fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            while True:
                try:
                    os.write(fd, _WAKE)
                    return
                except BlockingIOError:  # the pipe is full: the thread is still reading
                    if time.monotonic() > deadline or not self._thread.is_alive():
                        return
                    time.sleep(0.01)
        finally:
            os.close(fd)

    def close(self, drain_s: float = DRAIN_S) -> None:
        """Drain, stop the thread, remove the FIFO, keep the redacted records at :attr:`final`."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        deadline = time.monotonic() + drain_s
        try:
            if self._thread.is_alive():
                self._wake(deadline)
            self._thread.join(max(0.0, deadline - time.monotonic()))
            if self._thread.is_alive():
                self.problems.append(f"bench output still being read after {drain_s:g}s: the rest is lost")
        except OSError as exc:
            self.problems.append(f"could not stop the bench output reader: {exc}")
        finally:
            self.fifo.unlink(missing_ok=True)
            if self.tmpdir is not None:
                shutil.rmtree(self.tmpdir, ignore_errors=True)
            if self.records:
                os.replace(self.part, self.final)
            else:
                self.part.unlink(missing_ok=True)
        atexit.unregister(self.close)
