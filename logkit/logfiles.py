"""An attempt's raw log on disk: plain while the attempt runs, gzip-compressed once it has ended.

Contract: the events name a log by the path it was written under (``logs/A7.log``, relative to the
session directory) and keep that name for good. Once the attempt has ended, :func:`compress` swaps
the file for ``logs/A7.log.gz`` (written beside it, flushed, renamed, then the plain file removed:
a crash leaves one whole copy or the other, never neither). Every reader goes through
:func:`log_file` (which of the two is there) and :func:`read_log` / :func:`open_log` (the bytes,
decompressed), so classify, ``why``, ``show`` and the site read either form alike. The log is
redacted as it is written; compression changes nothing in its text.
"""

from __future__ import annotations

import gzip
import io
import os
import sys
import zlib
from pathlib import Path
from typing import Any, BinaryIO

__all__ = ["SUFFIX", "compress", "compress_ended", "compress_over", "log_file", "open_log", "read_log", "tail"]

#: overrides ``[logs] compress_over_bytes`` of logkit/data/storage.toml
ENV_COMPRESS_OVER = "LOGKIT_COMPRESS_LOGS_OVER"

#: the compressed form's suffix, after the recorded name
SUFFIX = ".gz"


def log_file(session_dir: Path, rel: str) -> Path | None:
    """The file holding the log recorded as ``rel`` (plain, else compressed), or None (a path out of the session too)."""
    from .abandon import confined_log

    plain = confined_log(session_dir, rel)
    if plain is None:
        return None
    if plain.exists():
        return plain
    packed = plain.with_name(plain.name + SUFFIX)
    return packed if packed.exists() else None


class _Readable(io.RawIOBase):
    """A compressed log's text up to where it is damaged (cut short, a flipped byte), then one warning."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh = gzip.open(path, "rb")
        self.damaged: str | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.damaged is not None:
            return 0
        try:
            data = self._fh.read1(len(buffer))  # one step at a time: a damaged step loses only itself
            buffer[: len(data)] = data
            return len(data)
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            self.damaged = str(exc) or type(exc).__name__
            print(f"logkit: warning: {self.path}: the compressed log is damaged ({self.damaged}); read up to "
                  "there\n  fix: restore the file from git or from the host that recorded it", file=sys.stderr)
            return 0

    def close(self) -> None:
        self._fh.close()
        super().close()


def open_log(path: Path) -> BinaryIO:
    """``path`` (as :func:`log_file` gave it) open for reading its text's bytes (see :class:`_Readable`)."""
    if path.name.endswith(SUFFIX):
        return io.BufferedReader(_Readable(path), 1 << 20)  # type: ignore[return-value]
    return open(path, "rb")


def read_log(path: Path) -> bytes:
    """The whole text of the log at ``path``, decompressed."""
    with open_log(path) as fh:
        return fh.read()


def compress(session_dir: Path, rel: str, *, level: int = 6) -> Path | None:
    """Compress the ended attempt's log ``rel`` (idempotent); the new file or None; a failure keeps the plain log."""
    plain = session_dir / rel
    if not plain.is_file():
        return None
    packed = plain.with_name(plain.name + SUFFIX)
    tmp = plain.with_name(f".{plain.name}{SUFFIX}.{os.getpid()}.tmp")
    try:
        with open(plain, "rb") as src, open(tmp, "wb") as raw:
            with gzip.GzipFile(filename=plain.name, mode="wb", fileobj=raw, compresslevel=level, mtime=0) as gz:
                while chunk := src.read(1 << 20):
                    gz.write(chunk)
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, packed)
        plain.unlink()
    except OSError:
        tmp.unlink(missing_ok=True)
        if packed.exists() and plain.exists():
            packed.unlink(missing_ok=True)
        return None
    return packed


def compress_over() -> int:
    """Logs bigger than this many bytes are compressed once their attempt has ended."""
    env = os.environ.get(ENV_COMPRESS_OVER, "").strip()
    if env.isdigit():
        return int(env)
    import tomllib
    from importlib import resources

    with resources.files("logkit").joinpath("data/storage.toml").open("rb") as fh:
        return int(tomllib.load(fh)["logs"]["compress_over_bytes"])


def compress_ended(session_dir: Path, rel: str) -> Path | None:
    """Compress an ended attempt's log over :func:`compress_over`; the compressed file, or None when it stays plain."""
    plain = session_dir / rel  # the log this run just wrote (its own path, not one read from git)
    try:
        if plain.is_symlink() or plain.stat().st_size <= compress_over():
            return None
    except OSError:
        return None
    return compress(session_dir, rel)


def tail(path: Path, limit: int = 1 << 16) -> bytes:
    """The last ``limit`` bytes of the log's text (a compressed log is read through once)."""
    if not path.name.endswith(SUFFIX):
        with open(path, "rb") as fh:
            fh.seek(0, io.SEEK_END)
            fh.seek(max(0, fh.tell() - limit))
            return fh.read()
    keep = b""
    with open_log(path) as fh:
        while chunk := fh.read(1 << 20):
            keep = (keep + chunk)[-limit:]
    return keep
