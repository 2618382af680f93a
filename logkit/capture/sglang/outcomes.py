"""Classify how an SGLang attempt ended, from its log (streamed or whole) and its exit.

Contract:

* The knowledge is data: :file:`logkit/data/signatures.toml` (one row per known failure text:
  pattern, class, label, priority, weak) and the ready line in :file:`logkit/data/sglang.toml`,
  loaded and compiled by :mod:`.table`. This module only applies the table.
* :class:`Classifier` is fed chunks of complete lines as bytes (the recorder's hot path): each
  signature is a compiled regex scanned with ``finditer`` over the whole chunk (one alternation of
  all rows measured 7x slower: it defeats the regex engine's literal-prefix search), and lines are
  counted with ``bytes.count``; nothing loops per line in Python. A row's ``needles`` (literals
  of which every match contains one, checked on the corpus by ``tests/test_sglang_classify.py``)
  let a chunk holding none of them skip the regex at ``bytes.__contains__`` speed. Rows whose
  needles all hold a prefilter word, and the garbage scan, read only the lines whose *shape* is
  not known clean (:meth:`Classifier._unknown_lines`): a healthy log's lines repeat a few hundred
  shapes, so its chunks cost a translate, a split and set lookups (>= 200 MiB/s,
  ``bench/bench_classify.py``); a test replays the corpus with and without the skip.
* :meth:`Classifier.decide` turns what was seen plus how the process ended into a status from
  :data:`logkit.events.OUTCOME_STATUSES`: the highest-priority signature wins (the earliest line
  among equals), so the cause beats the last line; a server that was ready and then failed gets
  the failure's class with ``ready`` still true; weak signatures count only when the run ended
  badly and nothing specific matched. The generic layer (``[generic]`` in sglang.toml: a failure
  line's shape and a family's word) is weak rows like any other, made by :func:`.table.generic_rows`.
* Evidence beats position: a log that ends without a verdict (cut short, still running, pasted in
  part) is classified by its strongest failure evidence; ``incomplete`` (with its last lines) when
  there is none: a log read on its own is never ``abandoned`` (that is a recorder that died). A
  log that shows the server serving (``serving_patterns`` in sglang.toml) is ready even without
  the ready line. Degenerate output anywhere in the printed text is ``garbage`` (the ``--smoke``
  detector, :mod:`.smoke`). An unexplained failure is ``other_crash`` labelled with its exception
  line ("KeyError: 'x'"), which :func:`error_template` normalises for grouping.
* :func:`classify_text` / :func:`classify_file` / :func:`classify_stream` do the same for a log
  written without logkit, reading it in blocks: memory stays bounded whatever the file's size (a
  line longer than a block is scanned in block-sized pieces).
"""

from __future__ import annotations

import bisect
import io
import itertools
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
from ..shapes import SHAPE, CleanShapes
from .table import Signature, compiled, data, extras, load_signatures, server_regexes, startup_regex

if TYPE_CHECKING:  # the models (pydantic) are imported only when evidence is built: `logkit run` of a
    from ...events import EvidenceLine  # command that prints nothing worth reading never loads them


def _lines(pairs: Any) -> list[EvidenceLine]:
    """Evidence lines from ``(number, text)`` pairs (the models imported only when there are some)."""
    pairs = list(pairs)
    if not pairs:
        return []
    from ...events import EvidenceLine

    return [EvidenceLine(line=n, text=t) for n, t in pairs]

__all__ = [
    "Classification",
    "Classifier",
    "Signature",
    "blocks",
    "check_log_path",
    "classify_file",
    "classify_stream",
    "classify_text",
    "error_template",
    "load_signatures",
]

#: Bytes read at a time by :func:`classify_stream` (and the importer).
BLOCK = 1 << 20

#: At most this many evidence lines are kept per signature (a crash loop prints thousands).
MAX_PER_SIGNATURE = 5
MAX_LINE_CHARS = 2000
#: Lines an ``incomplete`` verdict shows: the last ones the log has.
TAIL_LINES = 3


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


#: One digit (not ``0``, a never-unit) six times in a row: the garbage candidate a shape hides.
_SAME_DIGITS = re.compile(rb"([1-9])\1{5}")
_LONG_NUMBER = re.compile(rb"000000+")
#: More runs of unknown lines than this in a chunk and the chunk is read whole (each run costs every
#: row's needle test; a few whole-chunk passes cost less).
MAX_RUNS = 256
#: At most this many kinds of unknown line are looked for one by one in a chunk; more and its lines
#: are walked once instead (the runs are made the same way).
MAX_SEARCHED = 32


def _digit_runs(chunk: bytes, norm: bytes) -> list[int]:
    """Offsets in ``chunk`` of runs of one repeated digit (``111111``), looked for only in the
    numbers of six digits or more (the ``000000`` of its shapes ``norm``): their raw bytes joined,
    one regex search, each hit mapped back to its number."""
    if b"000000" not in norm:
        return []
    spans = [m.span() for m in _LONG_NUMBER.finditer(norm)]
    joined = b" ".join([chunk[a:b] for a, b in spans])
    found = [m.start() for m in _SAME_DIGITS.finditer(joined)]
    if not found:
        return []
    starts = list(itertools.accumulate((b - a + 1 for a, b in spans), initial=0))
    return [spans[i][0] + at - starts[i] for at in found for i in [bisect.bisect_right(starts, at) - 1]]


def _clean_shapes() -> CleanShapes:
    """A classifier's memory of clean line shapes: no prefilter word, no garbage candidate run."""
    _rows, _ready, words = compiled()
    _serving, row, scanner = extras()
    return CleanShapes(words, None if row is None or scanner is None else scanner.candidates)


def _line_at(chunk: bytes, pos: int, limit: int = MAX_LINE_CHARS) -> str:
    start = chunk.rfind(b"\n", 0, pos) + 1
    end = chunk.find(b"\n", pos)
    if end < 0:
        end = len(chunk)
    raw = chunk[start:end]
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
    #: the first line that shows the server serving (a batch scheduled, a request answered 200)
    serving_line: int | None = None
    serving_text: str | None = None
    #: the first line of an ASGI server's start-up finished (``startup_patterns``): readiness only when
    #: the log shows no SGLang server line (SGLang warms up after uvicorn starts)
    startup_line: int | None = None
    startup_text: str | None = None
    #: the first line only an SGLang server prints (``server_patterns``, the ready line): the
    #: output is an SGLang launch's, whatever command printed it
    server_line: int | None = None
    #: the server's ``server_args=ServerArgs(...)`` line, whole (its flags, as the server resolved them)
    server_args: str | None = None
    lines: int = 0
    #: the last lines seen (number, text): what an ``incomplete`` log shows last
    tail: list[tuple[int, str]] = field(default_factory=list)
    #: line shapes known clean (:meth:`_unknown_lines`)
    _shapes: CleanShapes | None = field(default=None, repr=False, compare=False)  # made at the first chunk

    def _add(self, sig: Signature, line: int, text: str) -> bool:
        bucket = self.hits.setdefault(sig.id, [])
        bucket.append(_Hit(sig, line, text))
        return len(bucket) >= MAX_PER_SIGNATURE

    def feed(self, chunk: bytes, first_line: int) -> None:
        """Scan complete lines; ``first_line`` is the 1-based number of the chunk's first line."""
        sigs, ready, _gate_words = compiled()
        serving, garbage_row, scanner = extras()
        if self.ready_line is None:
            m = ready.search(chunk)
            if m:
                self.ready_line = first_line + chunk.count(b"\n", 0, m.start())
                self.ready_text = _line_at(chunk, m.start())
        if self.serving_line is None and serving is not None:
            m = serving.search(chunk)
            if m:
                self.serving_line = first_line + chunk.count(b"\n", 0, m.start())
                self.serving_text = _line_at(chunk, m.start())
        startup = startup_regex() if self.startup_line is None else None
        if startup is not None and (not startup[1] or any(n in chunk for n in startup[1])):
            m = startup[0].search(chunk)
            if m:
                self.startup_line = first_line + chunk.count(b"\n", 0, m.start())
                self.startup_text = _line_at(chunk, m.start())
        if self.server_line is None or self.server_args is None:
            self._server_lines(chunk, first_line)
        # The gated rows and the garbage scan read only the lines whose shape is not known clean
        # (see :meth:`_unknown_lines`); the other rows read the whole chunk. Rows run in file order.
        whole = [[chunk, first_line, None]]
        unknown, garbage_too, hint = self._unknown_lines(chunk, first_line)
        parts: list[list[Any]] = [[c, n, None] for c, n in unknown]
        for regex, sig, needles, nocase, gated, shaped in sigs:
            bucket = self.hits.get(sig.id)
            if bucket is not None and len(bucket) >= MAX_PER_SIGNATURE:
                continue
            if gated and (not parts or hint is not None and shaped is not None and not any(n in hint for n in shaped)):
                continue  # none of its needles in the kinds of line read (``hint``: their shapes, joined)
            for target in parts if gated else whole:
                part, first, lowered = target
                if needles is not None:
                    if nocase and lowered is None:
                        lowered = target[2] = part.lower()
                    if not any(n in (lowered if nocase else part) for n in needles):
                        continue
                if self._find(regex, sig, part, first):
                    break
        if scanner is not None and garbage_row is not None and garbage_too:
            for part, first, _low in parts:
                if len(self.hits.get(garbage_row.id, ())) >= MAX_PER_SIGNATURE:
                    break
                for offset, text, why in scanner.scan(part):
                    line = first + part.count(b"\n", 0, offset)
                    full = self._add(garbage_row, line, text.rstrip("\r")[:MAX_LINE_CHARS])
                    self.hits[garbage_row.id][-1].why = why
                    if full:
                        break
        self.lines = max(self.lines, first_line - 1 + chunk.count(b"\n") + (0 if chunk.endswith(b"\n") or not chunk else 1))
        self._keep_tail(chunk)

    def _find(self, regex: re.Pattern[bytes], sig: Signature, part: bytes, first: int) -> bool:
        """Add ``regex``'s matches in ``part`` (line ``first`` on); True once the row is full."""
        pos = 0
        line = first
        for m in regex.finditer(part):
            line += part.count(b"\n", pos, m.start())
            pos = m.start()
            if self._add(sig, line, _line_at(part, m.start())):
                return True
        return False

    def _unknown_lines(self, chunk: bytes, first_line: int) -> tuple[list[tuple[bytes, int]], bool, bytes | None]:
        """The runs of ``chunk``'s lines (each with one line of context either side) whose *shape*
        is not known clean, as ``(bytes, first line number)``; the whole chunk when most are. And
        whether the garbage scan must read them: not when each is only a line known to hold a
        prefilter word and no garbage candidate. And, when they are runs, the shapes of their
        unknown kinds of line joined (a row whose needles, as shapes, are in none skips them: the
        context lines are clean, they hold none).

        A line's shape (:mod:`logkit.capture.shapes`) is clean when it holds no prefilter word and
        no candidate run of the garbage scanner: both only grow under the shape's mapping (a run
        stays a run, a word a word), except a run of one repeated digit, which ``0`` (a
        never-unit) hides: those are looked for in the raw bytes under each ``000000`` of the
        shapes. So a line whose shape is clean can match no gated row and hold no garbage.
        """
        memory = self._shapes
        if memory is None:
            memory = self._shapes = _clean_shapes()
        norm = chunk.translate(SHAPE)
        shapes = norm.split(b"\n")
        digits = _digit_runs(chunk, norm)
        if (memory.all_clean(shapes) or memory.learn(shapes)) and not digits:
            return [], False, None
        # Where the lines not known clean start: a few kinds of line are each found whole in the
        # shapes (a C search per kind: a healthy chunk with a few odd lines); many, by one walk
        unknown = set(shapes).difference(memory.known)
        garbage_too = bool(digits) or not all(s in memory.unclean and s not in memory.marked for s in unknown)
        starts: set[int] = {norm.rfind(b"\n", 0, at) + 1 for at in digits}
        if len(unknown) > MAX_SEARCHED:
            at = 0
            for shape in shapes:
                if shape in unknown:
                    starts.add(at)
                at += len(shape) + 1
        else:
            wrapped = b"\n" + norm + b"\n"
            for shape in unknown:
                needle = b"\n" + shape + b"\n"
                at = wrapped.find(needle)
                while at >= 0 and 2 * len(starts) <= len(shapes):
                    starts.add(at)  # the line's start in norm (wrapped has one byte more in front)
                    at = wrapped.find(needle, at + 1)
        if not starts:
            return [], False, None
        if 2 * len(starts) > len(shapes):
            return [(chunk, first_line)], True, None  # mostly unknown lines: one pass per row is cheaper
        runs: list[list[int]] = []  # [start byte, end byte, first line number], one line of context each side
        line, prev = first_line, 0
        for start in sorted(starts):
            line += norm.count(b"\n", prev, start)
            prev = start
            lo = norm.rfind(b"\n", 0, start - 1) + 1 if start else 0
            end = norm.find(b"\n", start)
            end = len(norm) if end < 0 else norm.find(b"\n", end + 1)
            hi = len(norm) if end < 0 else end + 1
            if runs and lo <= runs[-1][1]:
                runs[-1][1] = max(runs[-1][1], hi)
            else:
                runs.append([lo, hi, line - (1 if start else 0)])
        if len(runs) > MAX_RUNS:
            return [(chunk, first_line)], True, None  # scattered (a failure-dense log): one pass per row is cheaper
        return [(chunk[lo:hi], first) for lo, hi, first in runs], garbage_too, b"\n".join(unknown)

    def _server_lines(self, chunk: bytes, first_line: int) -> None:
        server, args = server_regexes()
        if self.server_line is None:
            m = server.search(chunk)
            if m:
                self.server_line = first_line + chunk.count(b"\n", 0, m.start())
        if self.server_args is None:
            m = args.search(chunk)
            if m:
                self.server_args = _line_at(chunk, m.start(), 1 << 16)

    def _keep_tail(self, chunk: bytes) -> None:
        """The last few non-empty lines (rsplit from the end: nothing scans the whole chunk)."""
        end = self.lines
        parts = chunk.rstrip(b"\r\n").rsplit(b"\n", TAIL_LINES)[-TAIL_LINES:]
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
        """Another server's start-up finished (uvicorn's lifespan) and no SGLang server line in the log."""
        return self.startup_line is not None and self.server_line is None

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
        """Matching lines (a few per signature) in log order; the deciding signature's lines first
        in line (they are never crowded out by generic ones)."""
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
        """The most informative exception line seen ("KeyError: 'x'"): the first with a message
        (the cause, in a chain of tracebacks), never a ``raise`` statement quoted by the traceback."""
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

    def decide(
        self,
        *,
        exit_code: int | None = None,
        signal: int | None = None,
        stopped_by_logkit: bool = False,
        finished: bool = True,
        http_ready: bool = False,
        hang: str | None = None,
        launch: bool = True,
    ) -> Classification:
        """The outcome: the one function ``logkit run`` (with the exit) and ``logkit classify`` /
        ``logkit why`` (``finished=False``: no exit is known, a log read on its own) both call.
        ``launch=False`` is a command that showed no SGLang server (no server lines, no ``--role
        launch``): exiting 0 it did what it was run for, whatever its output mentions."""
        ready = self.ready or http_ready
        # How the process ended, by the one exit mapping (logkit/data/statuses.toml).
        ended, ended_label = statuses.from_exit(exit_code, signal, stopped_by_logkit=stopped_by_logkit)
        if not launch and finished and ended == "exit_ok":
            return Classification(ended, ended_label, None, [], ready, None, None)
        killed = finished and ended == "killed"
        ended_badly = (not finished and not ready) or (
            finished and not stopped_by_logkit and (exit_code not in (0, None) or signal is not None)
        )
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
            return out("hang", hang, "logkit-hang")
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


def blocks(stream: BinaryIO, size: int = BLOCK) -> Iterator[tuple[bytes, int]]:
    """``(chunk, first_line)`` pieces of a byte stream ending at line ends, at most about ``size``
    bytes each (a line longer than ``size`` comes in ``size``-byte pieces, cut after whitespace
    where there is some): bounded memory whatever the input."""
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
    """Refuse what cannot be a log before reading it: a missing path, a directory, a device that
    never ends (``/dev/zero``; a pipe or a terminal is fine)."""
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
    """Classify a log file written without logkit (streamed: any size, bounded memory). A log logkit
    stored compressed reads the same, named by its recorded path or its ``.gz`` file."""
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
