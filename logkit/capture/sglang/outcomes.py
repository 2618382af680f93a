"""Classify how an SGLang attempt ended, from its log (streamed or whole) and its exit.

Contract:

* The knowledge is data (signatures.toml, sglang.toml), compiled by :mod:`.table`; this module applies it.
* :class:`Classifier` is fed chunks of complete lines as bytes (the recorder's hot path): each row is a
  compiled regex run with ``finditer`` (one alternation of all rows measured 7x slower), reading only
  the lines whose shape holds one of its ``needles`` (:mod:`.prefilter`): a healthy log's chunks cost a
  translate, a split and set lookups (goal >= 200 MiB/s, ``bench/bench_classify.py``).
* :meth:`Classifier.decide` turns what was seen plus how the process ended into a status of
  :data:`logkit.events.OUTCOME_STATUSES`: the highest-priority row wins (the earliest line among equals);
  a server ready and then failed gets the failure's class with ``ready`` true; weak rows (the generic
  layer's too) count only when the run ended badly and nothing specific matched.
* Evidence beats position: a log read on its own is classified by its strongest failure evidence, else
  ``incomplete`` (never ``abandoned``); serving lines make it ready without the ready line; degenerate
  output anywhere is ``garbage`` (:mod:`.smoke`); an unexplained failure is ``other_crash`` labelled with
  its exception line (:func:`error_template` normalises it for grouping).
* :func:`classify_text` / :func:`classify_file` / :func:`classify_stream` read a log written without
  logkit in blocks: bounded memory whatever its size.
"""

from __future__ import annotations

import io
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from ... import statuses
from ...errorlines import EXCEPTION_LINE as _EXC_LINE
from ...errorlines import error_template
from ...errors import BadInput
from ..shapes import SHAPE
from .prefilter import INPUT_LINES, OWN_LINES, SERVER_LINES, LineKinds, Reading, needle_key, without_inputs
from .table import Signature, compiled, extras, input_spans, lines_of, load_signatures, server_regexes

if TYPE_CHECKING:  # the models (pydantic) are imported only when evidence is built: `logkit run` of a
    from ...events import EvidenceLine  # command that prints nothing worth reading never loads them


__all__ = ["Classification", "Classifier", "HANG_STOP", "Signature", "blocks", "check_log_path", "classify_file",
           "classify_stream", "classify_text", "error_template", "load_signatures"]

#: The signature of logkit's own hang stop (``--hang-timeout``): the log just stops, so a log read alone
#: cannot show it (``logkit why`` reads it back from the recorded outcome).
HANG_STOP = "logkit-hang"
#: Bytes read at a time by :func:`classify_stream` (and the importer).
BLOCK = 1 << 20

#: At most this many evidence lines are kept per signature (a crash loop prints thousands).
MAX_PER_SIGNATURE = 5
MAX_LINE_CHARS = 2000
#: The last lines an ``incomplete`` verdict shows, looked for in a chunk's last TAIL_BYTES first.
TAIL_LINES = 3
TAIL_BYTES = 1 << 16


def _lines(pairs: Any) -> list[EvidenceLine]:
    """Evidence lines from ``(number, text)`` pairs (the models imported only when there are some)."""
    pairs = list(pairs)
    if not pairs:
        return []
    from ...events import EvidenceLine

    return [EvidenceLine(line=n, text=t) for n, t in pairs]


@dataclass
class Classification:
    """What the classifier concluded."""

    status: str
    label: str | None
    signature: str | None
    evidence: list[EvidenceLine]
    ready: bool
    ready_line: int | None = None
    ready_text: str | None = None


def _line_kinds() -> LineKinds:
    """A classifier's memory of line shapes (:class:`.prefilter.LineKinds`); own lines' literals are needles."""
    _rows, ready, needles, _whole = compiled()
    _serving, row, scanner = extras()
    owners = dict(needles)
    startup, engine = lines_of("startup"), lines_of("engine_startup")
    own = (ready, server_regexes()[2], *(startup[1] if startup else ()), *(engine[1] if engine else ()))
    for group, literals in ((OWN_LINES, own), (SERVER_LINES, server_regexes()[3]), (INPUT_LINES, input_spans()[0])):
        for literal in filter(None, literals):
            key = needle_key(literal)
            owners[key] = (*owners.get(key, ()), group)
    if row is None or scanner is None:
        return LineKinds(owners, None)
    return LineKinds(owners, scanner.first, scanner.may_hold)


def _line_at(chunk: bytes, pos: int, limit: int = MAX_LINE_CHARS) -> str:
    start = chunk.rfind(b"\n", 0, pos) + 1
    end = chunk.find(b"\n", pos)
    raw = chunk[start:end] if end >= 0 else chunk[start:]
    # Progress bars rewrite a line with carriage returns: keep the segment that matched.
    cr = raw.rfind(b"\r", 0, pos - start)
    if cr >= 0:
        raw = raw[cr + 1 :]
    return raw.decode("utf-8", "replace").rstrip("\r")[:limit]


@dataclass
class _Hit:
    sig: Signature
    line: int
    text: str
    why: str | None = None


@dataclass
class Classifier:
    """Streams a log and remembers the signature hits, the ready line and the line count."""

    hits: dict[str, list[_Hit]] = field(default_factory=dict)
    ready_line: int | None = None
    ready_text: str | None = None
    serving_line: int | None = None  # the first line showing the server serving (a batch, a request's 200)
    serving_text: str | None = None
    #: the first line of an ASGI server's start-up finished: readiness only when the log shows no SGLang
    #: server line (SGLang warms up after uvicorn starts)
    startup_line: int | None = None
    startup_text: str | None = None
    #: an engine's own start-up line after ``startup_line``: that ASGI server was a wrapper's, not ready
    engine_after_startup: int | None = None
    server_line: int | None = None  # the first line only an SGLang server prints: the output is a launch's
    server_args: str | None = None  # the server's ``server_args=ServerArgs(...)`` line, whole
    lines: int = 0
    tail: list[tuple[int, str]] = field(default_factory=list)  # the last lines seen (number, text)
    _kinds: LineKinds | None = field(default=None, repr=False, compare=False)  # made at the first chunk
    _echoes: bool = field(default=False, repr=False, compare=False)  # the last chunk held a request's input

    def _add(self, sig: Signature, line: int, text: str, why: str | None = None) -> bool:
        bucket = self.hits.setdefault(sig.id, [])
        bucket.append(_Hit(sig, line, text, why))
        return len(bucket) >= MAX_PER_SIGNATURE

    def feed(self, chunk: bytes, first_line: int) -> None:
        """Scan complete lines (``first_line``: the chunk's first line's number, from 1)."""
        # A request's input a server's log echoes (``input_spans``) is cut out before any row reads it: it is
        # evidence of nothing (the request line itself, read in ``raw``, still shows the server serving).
        raw = chunk
        sigs, ready, _needles, whole = compiled()
        serving, garbage_row, scanner = extras()
        if self._echoes:  # the chunk before held a request's input: so will most of this log's
            chunk = without_inputs(raw, input_spans()[1])
            self._echoes = chunk is not raw
        norm = chunk.translate(SHAPE)
        shapes = norm.split(b"\n")
        if not self._echoes and self._has_inputs(norm, shapes):
            chunk = without_inputs(raw, input_spans()[1])
            if chunk is not raw:
                self._echoes = True
                norm = chunk.translate(SHAPE)
                shapes = norm.split(b"\n")
        # A chunk none of whose lines holds an own line's needle (OWN_LINES) holds no ready, args or start-up line.
        scan = (scanner is not None and garbage_row is not None
                and len(self.hits.get(garbage_row.id, ())) < MAX_PER_SIGNATURE)
        reading = self._lines_to_read(chunk, norm, shapes, first_line, scan=scan)
        quiet = reading is not None and OWN_LINES not in reading.groups
        if self.ready_line is None and not quiet:
            at = _unquoted(chunk, ready)
            if at >= 0:
                self.ready_line = first_line + chunk.count(b"\n", 0, at)
                self.ready_text = _line_at(chunk, at)
        if self.serving_line is None and serving is not None:
            m = serving.search(raw)
            if m:
                self.serving_line = first_line + raw.count(b"\n", 0, m.start())
                self.serving_text = _line_at(raw, m.start())
        startup = lines_of("startup") if self.startup_line is None else None
        if startup is not None and (not startup[1] or not quiet and any(n in chunk for n in startup[1])):
            m = startup[0].search(chunk)
            if m:
                self.startup_line = first_line + chunk.count(b"\n", 0, m.start())
                self.startup_text = _line_at(chunk, m.start())
        if self.startup_line is not None and self.engine_after_startup is None and not quiet:
            self._engine_startup(chunk, first_line)
        if self.server_line is None or self.server_args is None:
            self._server_lines(chunk, first_line, quiet, reading)
        for regex, sig, needles, by_lines, group in whole if reading is not None and reading.clean else sigs:
            bucket = self.hits.get(sig.id)
            if bucket is not None and len(bucket) >= MAX_PER_SIGNATURE:
                continue
            if reading is not None and by_lines:
                for lo, hi, first in reading.runs(group, regex, sig.gate, chunk):
                    if self._find(regex, sig, chunk, first, lo, hi):
                        break
                continue
            if needles is not None and not any(n in norm for n in needles):
                continue
            self._find(regex, sig, chunk, first_line, 0, len(chunk))
        if scanner is not None and garbage_row is not None:
            parts = [(0, len(chunk), first_line)] if reading is None else reading.garbage_runs()
            for lo, hi, first in parts:
                if len(self.hits.get(garbage_row.id, ())) >= MAX_PER_SIGNATURE:
                    break
                part = chunk[lo:hi]
                for offset, text, why in scanner.scan(part):
                    line = first + part.count(b"\n", 0, offset)
                    if self._add(garbage_row, line, text.rstrip("\r")[:MAX_LINE_CHARS], why):
                        break
        self.lines = max(self.lines, first_line - 2 + len(shapes) + (0 if chunk.endswith(b"\n") or not chunk else 1))
        self._keep_tail(chunk)

    def _find(self, regex: re.Pattern[bytes], sig: Signature, chunk: bytes, first: int, lo: int, hi: int) -> bool:
        """Add ``regex``'s matches in ``chunk[lo:hi]`` (line ``first`` at ``lo``); True once the row is full."""
        pos = lo
        line = first
        for m in regex.finditer(chunk, lo, hi):
            line += chunk.count(b"\n", pos, m.start())
            pos = m.start()
            if self._add(sig, line, _line_at(chunk, m.start())):
                return True
        return False

    def _lines_to_read(self, chunk: bytes, norm: bytes, shapes: list[bytes], first_line: int, *,
                       scan: bool = True) -> Reading | None:
        """The lines each row and the garbage scan read (:mod:`.prefilter`); None (a test's): every line."""
        return self._memory().read(chunk, norm, shapes, first_line, scan=scan)

    def _memory(self) -> LineKinds:
        if self._kinds is None:
            self._kinds = _line_kinds()
        return self._kinds

    def _engine_startup(self, chunk: bytes, first_line: int) -> None:
        """An engine's own start-up line after the ASGI server's start-up (``startup_line``), if any."""
        engine = lines_of("engine_startup")
        if engine is None or (engine[1] and not any(n in chunk for n in engine[1])):
            return
        for m in engine[0].finditer(chunk):
            line = first_line + chunk.count(b"\n", 0, m.start())
            if self.startup_line is not None and line > self.startup_line:
                self.engine_after_startup = line
                return

    def _has_inputs(self, norm: bytes, shapes: list[bytes]) -> bool:
        """Whether a line not known clean may echo a request's input (holds an ``input_spans`` literal's shape)."""
        # known clean lines hold none (they are needles, INPUT_LINES): a search per chunk would cost half the time
        literals = input_spans()[0]
        if not literals or not all(literals):
            return bool(literals)
        memory = self._memory()
        if memory.clean.issuperset(shapes):
            return False
        rest = b"\n".join(set(shapes).difference(memory.clean))
        return any(needle_key(literal).translate(SHAPE) in rest for literal in literals)

    def _server_lines(self, chunk: bytes, first_line: int, quiet: bool, reading: Reading | None) -> None:
        """The server's first own line (on the lines holding a ``server_needles``) and its args line."""
        server, args, args_literal, needles = server_regexes()
        if self.server_line is None:
            whole = reading is None or not needles
            for lo, hi, first in [(0, len(chunk), first_line)] if whole else reading.runs(SERVER_LINES, server):
                m = server.search(chunk, lo, hi)
                if m:
                    self.server_line = first + chunk.count(b"\n", lo, m.start())
                    if self._kinds is not None:  # found: a server's batch lines are no longer read for it
                        self._kinds.forget(SERVER_LINES)
                    break
        if self.server_args is None and (not args_literal or not quiet and args_literal in chunk):
            m = args.search(chunk)
            if m:
                self.server_args = _line_at(chunk, m.start(), 1 << 16)

    def _keep_tail(self, chunk: bytes) -> None:
        """The last few non-empty lines (rsplit from the end: nothing scans the whole chunk)."""
        end = self.lines
        text = chunk[-TAIL_BYTES:].rstrip(b"\r\n")  # the tail alone, when it holds the last lines whole
        if len(chunk) > TAIL_BYTES and text.count(b"\n") < TAIL_LINES:
            text = chunk.rstrip(b"\r\n")
        parts = text.rsplit(b"\n", TAIL_LINES)[-TAIL_LINES:]
        lines = [(end - len(parts) + 1 + i, p.decode("utf-8", "replace").rstrip("\r")[:MAX_LINE_CHARS])
                 for i, p in enumerate(parts)]
        kept = [t for t in lines if t[1].strip()]
        if kept:
            self.tail = (self.tail + kept)[-TAIL_LINES:] if len(kept) < TAIL_LINES else kept

    @property
    def ready(self) -> bool:
        return self.ready_line is not None or self.serving_line is not None or self._started

    @property
    def _started(self) -> bool:
        """Another server's start-up finished, with no SGLang server line and no engine start-up after it."""
        return self.startup_line is not None and self.server_line is None and self.engine_after_startup is None

    def best(self, *, include_weak: bool) -> _Hit | None:
        """The deciding hit: highest priority, then earliest line."""
        best: _Hit | None = None
        for bucket in self.hits.values():
            hit = bucket[0]
            if hit.sig.weak and not include_weak:
                continue
            if best is None or (hit.sig.priority, -hit.line) > (best.sig.priority, -best.line):
                best = hit
        return best

    def evidence(self, limit: int = 20, first: _Hit | None = None) -> list[EvidenceLine]:
        """Matching lines (a few per signature) in log order, the deciding row's never crowded out."""
        lines: dict[int, str] = {}
        if first is not None:
            lines.update((h.line, h.text) for h in self.hits.get(first.sig.id, ()))
        for bucket in sorted(self.hits.values(), key=lambda b: -b[0].sig.priority):
            for h in bucket:
                if len(lines) >= limit:
                    break
                lines.setdefault(h.line, h.text)
        return _lines(sorted(lines.items())[:limit])

    def exception_line(self) -> str | None:
        """The first exception line with a message (the cause, in a chain), never a quoted ``raise``."""
        found: list[str] = []
        for h in self.hits.get("python-exception", []):
            for m in _EXC_LINE.finditer(h.text):
                if not h.text[: m.start(1)].rstrip().endswith("raise"):
                    found.append(m.group(1).strip())
        with_msg = [x for x in found if ": " in x]
        pick = (with_msg or found or [None])[0]
        return pick[:200] if pick else None

    def failure_line(self) -> str | None:
        """The first line the generic layer took as a failure line (its row labelled ``{line}``)."""
        lines = [h for hs in self.hits.values() for h in hs[:1] if h.sig.label == "{line}"]
        return min(lines, key=lambda h: h.line).text.strip()[:200] if lines else None

    def decide(self, *, exit_code: int | None = None, signal: int | None = None, stopped_by_logkit: bool = False,
               finished: bool = True, http_ready: bool = False, hang: str | None = None,
               launch: bool = True) -> Classification:
        """The outcome, for ``logkit run`` (with the exit) and a log read alone (``finished=False``)."""
        # launch=False: a command that showed no SGLang server; exiting 0 it did what it was run for
        ready = self.ready or http_ready
        ended, ended_label = statuses.from_exit(exit_code, signal, stopped_by_logkit=stopped_by_logkit)
        if not launch and finished and ended == "exit_ok":
            return Classification(ended, ended_label, None, [], ready, None, None)
        killed = finished and ended == "killed"
        ended_badly = (not finished and not ready) or (finished and not stopped_by_logkit
                                                       and (exit_code not in (0, None) or signal is not None))
        hit = self.best(include_weak=False)
        fatal = any(h.sig.fatal for hs in self.hits.values() for h in hs[:1])
        if hit is None and (ended_badly or (fatal and not stopped_by_logkit)):
            hit = self.best(include_weak=True)
            # A bare kill with a generic traceback before it: the kill is the better answer.
            # A kill the exit itself shows: its signal says more than a shell's "Killed" line.
            if hit is not None and killed and (hit.sig.status == "other_crash" and hit.sig.priority < 20
                                               or hit.sig.status == "killed"):
                hit = None
        evidence = self.evidence(first=hit)
        mark_line = self.ready_line if self.ready_line is not None else self.serving_line
        mark_text = self.ready_text if self.ready_line is not None else self.serving_text
        if mark_line is None and self._started:
            mark_line, mark_text = self.startup_line, self.startup_text
        if mark_line is not None and not any(e.line == mark_line for e in evidence):
            evidence = sorted([*evidence, *_lines([(mark_line, mark_text or "")])], key=lambda e: e.line)

        def out(status: str, label: str | None, sig: str | None = None) -> Classification:
            return Classification(status, label, sig, evidence, ready, mark_line, mark_text)

        if hit is not None:
            label = hit.sig.label
            if "{line}" in label:  # the generic layer's rows: the failure line is the label
                label = label.replace("{line}", hit.text.strip()[:200])
            if hit.sig.status == "other_crash" and hit.sig.weak:
                label = self.exception_line() or self.failure_line() or label
            elif hit.why:
                label = f"{label}: {hit.why}"
            return out(hit.sig.status, label, hit.sig.id)
        if hang:
            return out("hang", hang, HANG_STOP)
        if not finished:
            if ready:
                return out("ready", "server ready" if self.ready_line is not None else "server serving (no ready line in the log)")
            # Not `abandoned` (a recorder that died): the text stops before it shows how the run ended.
            last = self.tail[-1][1].strip() if self.tail else ""
            return Classification("incomplete", "no verdict and no failure in the log: it stops before showing how the run "
                                  "ended" + (f"; last line: {last[:160]}" if last else " (it is empty)"), None,
                                  _lines(self.tail), ready)
        if stopped_by_logkit:
            return out("ready", "server ready when recording stopped") if ready else out(ended, "stopped before ready")
        return out(ended, ended_label)


#: What opens a quotation: a report quoting the ready line (dev36 hang-sglang-4160) shows no server that printed
#: it; SGLang prints it bare after its logger's prefix (http_server.py _wait_and_warmup).
_QUOTES = (b"'", b'"', b"`", "\u2018".encode(), "\u201c".encode())


def _unquoted(chunk: bytes, literal: bytes) -> int:
    """Where ``literal`` first stands in ``chunk`` not right after an opening quote; -1 when nowhere."""
    at = chunk.find(literal)
    while at >= 0 and any(chunk.endswith(q, 0, at) for q in _QUOTES):
        at = chunk.find(literal, at + 1)
    return at


def blocks(stream: BinaryIO, size: int = BLOCK) -> Iterator[tuple[bytes, int]]:
    """``(chunk, first_line)`` pieces ending at line ends, about ``size`` bytes at most (a longer line cut)."""
    carry = b""
    line = 1
    while True:
        data = stream.read(size)
        if not data:
            break
        buf = carry + data if carry else data
        cut = buf.rfind(b"\n") + 1
        if cut == 0 and len(buf) >= size:
            ws = max(buf.rfind(b" "), buf.rfind(b"\t"))
            cut = ws + 1 if ws > len(buf) // 2 else len(buf)
        if cut == 0:
            carry = buf
            continue
        chunk, carry = buf[:cut], buf[cut:]
        yield chunk, line
        line += chunk.count(b"\n")
    if carry:
        yield carry, line


def classify_stream(stream: BinaryIO) -> Classification:
    """Classify a log read from a binary stream (no exit information), in bounded memory."""
    clf = Classifier()
    for chunk, first in blocks(stream):
        clf.feed(chunk, first)
    return clf.decide(finished=False)


def classify_text(data: bytes | str) -> Classification:
    """Classify a whole log with no exit information."""
    raw = data.encode("utf-8", "replace") if isinstance(data, str) else data
    return classify_stream(io.BytesIO(raw))


def _is_tty(p: Path) -> bool:
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return False
    try:
        return os.isatty(fd)
    finally:
        os.close(fd)


def check_log_path(p: Path) -> None:
    """Refuse a missing path, a directory, a device that never ends (``/dev/zero``; a pipe or tty is fine)."""
    try:
        mode = p.stat().st_mode
    except OSError as exc:
        raise BadInput(f"{p}: cannot read the log: {exc.strerror}", fix="check the path") from exc
    if stat.S_ISDIR(mode):
        raise BadInput(f"{p}: is a directory, not a log", fix="pass the log file itself")
    if (stat.S_ISCHR(mode) or stat.S_ISBLK(mode)) and not _is_tty(p):
        raise BadInput(f"{p}: is a device, not a log file (it may never end)",
                       fix="pass a log file, or pipe the text in: ... | logkit classify /dev/stdin")


def classify_file(path: str | Path) -> Classification:
    """Classify a log file (streamed), also one logkit stored compressed, named by its path or its ``.gz``."""
    from ...logfiles import SUFFIX, open_log

    p = Path(path)
    if not p.exists() and Path(f"{p}{SUFFIX}").is_file():
        p = Path(f"{p}{SUFFIX}")  # compressed once its attempt ended
    check_log_path(p)
    try:
        with open_log(p) as fh:
            return classify_stream(fh)
    except IsADirectoryError as exc:
        raise BadInput(f"{p}: is a directory, not a log", fix="pass the log file itself") from exc
    except OSError as exc:
        raise BadInput(f"{p}: cannot read the log: {exc.strerror}", fix="check the path") from exc
