"""Classify how an SGLang attempt ended, from its log (streamed or whole) and its exit.

Contract:

* The knowledge is data: :file:`logkit/data/signatures.toml` (one row per known failure text:
  pattern, class, label, priority, weak) and the ready line in :file:`logkit/data/sglang.toml`.
  This module only applies the table.
* :class:`Classifier` is fed chunks of complete lines as bytes (the recorder's hot path): each
  signature is a compiled regex scanned with ``finditer`` over the whole chunk (one alternation of
  all rows measured 7x slower: it defeats the regex engine's literal-prefix search), and lines are
  counted with ``bytes.count``; nothing loops per line in Python.
* :meth:`Classifier.decide` turns what was seen plus how the process ended into a status from
  :data:`logkit.events.OUTCOME_STATUSES`: the highest-priority signature wins (the earliest line
  among equals), so the cause beats the last line; a server that was ready and then failed gets
  the failure's class with ``ready`` still true; weak signatures count only when the run ended
  badly and nothing specific matched.
* :func:`classify_text` / :func:`classify_file` do the same for a log written without logkit.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from ... import statuses
from ...errors import BadInput
from ...events import OUTCOME_STATUSES, EvidenceLine

__all__ = [
    "Classification",
    "Classifier",
    "Signature",
    "classify_file",
    "classify_text",
    "load_signatures",
]

#: At most this many evidence lines are kept per signature (a crash loop prints thousands).
MAX_PER_SIGNATURE = 5
MAX_LINE_CHARS = 2000


@dataclass(frozen=True)
class Signature:
    """One row of the signature table."""

    id: str
    status: str
    label: str
    pattern: str
    priority: int
    weak: bool = False
    source: str = ""


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


def _scoped(pattern: str) -> str:
    """Turn a leading global inline flag ``(?i)x`` into a scoped one ``(?i:x)`` so rows combine."""
    m = re.match(r"^\(\?([aimsux]+)\)", pattern)
    if m:
        return f"(?{m.group(1)}:{pattern[m.end():]})"
    return f"(?:{pattern})"


def _data(name: str) -> dict[str, Any]:
    text = resources.files("logkit.data").joinpath(name).read_text(encoding="utf-8")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"logkit/data/{name}: {exc}", fix="fix the TOML syntax at that line") from exc


@lru_cache(maxsize=1)
def load_signatures() -> tuple[Signature, ...]:
    """The signature table, validated (a bad row names its id and the problem)."""
    rows = _data("signatures.toml").get("signature", [])
    out: list[Signature] = []
    seen: set[str] = set()
    for i, row in enumerate(rows, 1):
        sid = row.get("id") or f"#{i}"
        if row.get("class") not in OUTCOME_STATUSES:
            raise BadInput(
                f"logkit/data/signatures.toml: signature {sid}: class {row.get('class')!r} is not an outcome status",
                fix=f"use one of {', '.join(OUTCOME_STATUSES)}",
            )
        if sid in seen:
            raise BadInput(f"logkit/data/signatures.toml: duplicate signature id {sid!r}", fix="give each row its own id")
        seen.add(sid)
        try:
            re.compile(_scoped(row["pattern"]).encode())
        except (KeyError, re.error) as exc:
            raise BadInput(f"logkit/data/signatures.toml: signature {sid}: bad pattern: {exc}", fix="fix the regex") from exc
        out.append(
            Signature(
                id=sid,
                status=row["class"],
                label=row.get("label", sid),
                pattern=row["pattern"],
                priority=int(row.get("priority", 50)),
                weak=bool(row.get("weak", False)),
                source=row.get("source", ""),
            )
        )
    return tuple(out)


def _needles(pattern: str) -> tuple[bytes, ...] | None:
    """Literals of which every match contains at least one (a prefilter), or None if none found.

    Derived from the regex's parse tree: the longest literal run of the top-level sequence, or an
    alternation whose every branch has one. Checking ``needle in chunk`` runs at memchr speed, so
    a chunk without any needle skips the regex (healthy logs: almost every chunk, every row).
    """
    from re import _constants as c  # type: ignore[attr-defined]
    from re import _parser  # type: ignore[attr-defined]

    def seq(items: Any) -> set[str] | None:
        best: set[str] | None = None
        run: list[str] = []

        def score(opt: set[str] | None) -> int:
            return min((len(x) for x in opt), default=0) if opt else 0

        def close() -> None:
            nonlocal best, run
            if run:
                cand = {"".join(run)}
                if score(cand) > score(best):
                    best = cand
            run = []

        for op, av in items:
            if op is c.LITERAL:
                run.append(chr(av))
                continue
            close()
            cand: set[str] | None = None
            if op is c.SUBPATTERN:
                cand = seq(av[-1])
            elif op is c.BRANCH:
                opts = [seq(b) for b in av[1]]
                cand = set().union(*opts) if opts and all(opts) else None  # type: ignore[arg-type]
            if cand and score(cand) > score(best):
                best = cand
        close()
        return best

    parsed = _parser.parse(pattern)
    found = seq(parsed.data)
    if not found or min(len(x) for x in found) < 3:
        return None
    return tuple(sorted(x.encode() for x in found))


_Row = tuple[re.Pattern[bytes], Signature, "tuple[bytes, ...] | None", bool, bool]


@lru_cache(maxsize=1)
def _gate(words: tuple[bytes, ...]) -> Callable[[bytes], bool]:
    """Does a lower-cased chunk contain any gate word? One RE2 DFA scan when google-re2 is
    installed (the optional extra ``logkit[fast]``; ~2 ms/MiB), else one substring test per word (~40 ms/MiB)."""
    try:
        import re2  # type: ignore[import-not-found]

        regex = re2.compile(b"|".join(re.escape(w) for w in words))
        return lambda low: regex.search(low) is not None
    except Exception:  # noqa: BLE001 - the stdlib path is always there
        return lambda low: any(w in low for w in words)


@lru_cache(maxsize=1)
def _compiled() -> tuple[tuple[_Row, ...], re.Pattern[bytes], Callable[[bytes], bool]]:
    """(regex, signature, needles, case-insensitive, behind the gate) rows, the ready regex, the gate."""
    data = _data("sglang.toml")
    gate = tuple(w.encode() for w in data.get("prefilter_words", []))
    rows = []
    for s in load_signatures():
        regex = re.compile(s.pattern.encode())
        nocase = bool(regex.flags & re.IGNORECASE) or "(?i" in s.pattern
        needles = _needles(s.pattern)
        if needles and nocase:
            needles = tuple(n.lower() for n in needles)
        gated = bool(gate) and needles is not None and all(any(g in n.lower() for g in gate) for n in needles)
        rows.append((regex, s, needles, nocase, gated))
    return tuple(rows), re.compile(re.escape(data["ready_pattern"].encode())), _gate(gate) if gate else (lambda _: True)


def _line_at(chunk: bytes, pos: int) -> str:
    start = chunk.rfind(b"\n", 0, pos) + 1
    end = chunk.find(b"\n", pos)
    if end < 0:
        end = len(chunk)
    raw = chunk[start:end]
    # Progress bars rewrite a line with carriage returns: keep the segment that matched.
    cr = raw.rfind(b"\r", 0, pos - start)
    if cr >= 0:
        raw = raw[cr + 1 :]
    return raw.decode("utf-8", "replace").rstrip("\r")[:MAX_LINE_CHARS]


@dataclass
class _Hit:
    sig: Signature
    line: int
    text: str


@dataclass
class Classifier:
    """Streams a log and remembers the signature hits, the ready line and the line count."""

    hits: dict[str, list[_Hit]] = field(default_factory=dict)
    ready_line: int | None = None
    ready_text: str | None = None
    lines: int = 0

    def feed(self, chunk: bytes, first_line: int) -> None:
        """Scan complete lines; ``first_line`` is the 1-based number of the chunk's first line."""
        sigs, ready, gate = _compiled()
        lowered = chunk.lower()
        gate_open = gate(lowered)
        if self.ready_line is None:
            m = ready.search(chunk)
            if m:
                self.ready_line = first_line + chunk.count(b"\n", 0, m.start())
                self.ready_text = _line_at(chunk, m.start())
        for regex, sig, needles, nocase, gated in sigs:
            if gated and not gate_open:
                continue
            bucket = self.hits.get(sig.id)
            if bucket is not None and len(bucket) >= MAX_PER_SIGNATURE:
                continue
            if needles is not None and not any(n in (lowered if nocase else chunk) for n in needles):
                continue
            pos = 0
            line = first_line
            for m in regex.finditer(chunk):
                line += chunk.count(b"\n", pos, m.start())
                pos = m.start()
                bucket = self.hits.setdefault(sig.id, [])
                bucket.append(_Hit(sig, line, _line_at(chunk, m.start())))
                if len(bucket) >= MAX_PER_SIGNATURE:
                    break
        self.lines = max(self.lines, first_line - 1 + chunk.count(b"\n") + (0 if chunk.endswith(b"\n") or not chunk else 1))

    @property
    def ready(self) -> bool:
        return self.ready_line is not None

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

    def evidence(self, limit: int = 20) -> list[EvidenceLine]:
        """Every matching line (a few per signature), in log order."""
        lines = {h.line: h.text for bucket in self.hits.values() for h in bucket}
        return [EvidenceLine(line=n, text=t) for n, t in sorted(lines.items())[:limit]]

    def decide(
        self,
        *,
        exit_code: int | None = None,
        signal: int | None = None,
        stopped_by_logkit: bool = False,
        finished: bool = True,
        http_ready: bool = False,
        hang: str | None = None,
    ) -> Classification:
        """The outcome. ``finished=False`` means no exit is known (a log file read on its own)."""
        ready = self.ready or http_ready
        # How the process ended, by the one exit mapping (logkit/data/statuses.toml).
        ended, ended_label = statuses.from_exit(exit_code, signal, stopped_by_logkit=stopped_by_logkit)
        killed = finished and ended == "killed"
        ended_badly = (not finished and not ready) or (
            finished and not stopped_by_logkit and (exit_code not in (0, None) or signal is not None)
        )
        hit = self.best(include_weak=False)
        if hit is None and ended_badly:
            hit = self.best(include_weak=True)
            # A bare kill with a generic traceback before it: the kill is the better answer.
            if hit is not None and killed and hit.sig.status == "other_crash" and hit.sig.priority < 20:
                hit = None
        evidence = self.evidence()

        if self.ready_line is not None and not any(e.line == self.ready_line for e in evidence):
            evidence = sorted([*evidence, EvidenceLine(line=self.ready_line, text=self.ready_text or "")],
                              key=lambda e: e.line)

        def out(status: str, label: str | None, sig: str | None = None) -> Classification:
            return Classification(status, label, sig, evidence, ready, self.ready_line, self.ready_text)

        if hit is not None:
            return out(hit.sig.status, hit.sig.label, hit.sig.id)
        if hang:
            return out("hang", hang, "logkit-hang")
        if not finished:
            if ready:
                return out("ready", "server ready")
            return out("abandoned", "log ends before ready, no known failure in it")
        if stopped_by_logkit:
            return out("ready", "server ready when recording stopped") if ready else out(ended, "stopped before ready")
        return out(ended, ended_label)


def classify_text(data: bytes | str) -> Classification:
    """Classify a whole log with no exit information."""
    raw = data.encode("utf-8", "replace") if isinstance(data, str) else data
    clf = Classifier()
    clf.feed(raw, 1)
    return clf.decide(finished=False)


def classify_file(path: str | Path) -> Classification:
    """Classify a log file written without logkit."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise BadInput(f"{p}: cannot read the log: {exc.strerror}", fix="check the path") from exc
    return classify_text(raw)
