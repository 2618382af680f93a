"""Reading session files: every line validated, every problem named ``file:line``, nothing raised.

Contract:

* :func:`read_events` (:func:`iter_events`: one event at a time) validates each line of one ``events.jsonl`` (upgrading an older schema's
  line first) and returns a :class:`ReadResult`: the events that validated, in file order, with
  their line numbers, and a :class:`Problem` for each line that did not, naming ``file:line``, the
  field and the fix. A torn last line is a problem too, and never loses the lines before it.
* :func:`clash` and :func:`unknown_refs` are the checks a line must pass against the lines before
  it (a repeated event or short id, an outcome of an attempt no earlier line records, a second
  outcome; a decision or verdict citing what the session does not record); every reader that folds
  a session line by line (``status``, ``session show``) calls them, so all say the same.
* :func:`cross_check` adds the problems found across sessions.
* Writing is :mod:`logkit.store`'s; the bytes of lines, ids and paths are :mod:`logkit.store.files`'.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from . import files
from ..errors import SchemaTooNew
from ..events import BaseEvent, event_adapter, parse_event

__all__ = [
    "Problem",
    "ReadResult",
    "clash",
    "cross_check",
    "iter_events",
    "problem_from_validation",
    "read_events",
    "unknown_refs",
]


@dataclass(frozen=True)
class Problem:
    """A line of a session file that could not be used."""

    path: Path
    line: int
    message: str
    field: str | None = None
    torn: bool = False

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}"
        what = f" field '{self.field}':" if self.field else ""
        return f"{where}:{what} {self.message}"


@dataclass
class ReadResult:
    """The events of one session that validated, and the problems of those that did not."""

    path: Path
    events: list[BaseEvent] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    #: the 1-based line of each event in ``events`` (same order)
    lines: list[int] = field(default_factory=list)
    #: the byte offset of each event's line in the bytes read (same order; the index keeps it to read the line again)
    offsets: list[int] = field(default_factory=list)


def problem_from_validation(path: Path, line: int, err: ValidationError) -> Problem:
    first = err.errors()[0]
    loc = ".".join(str(part) for part in first.get("loc", ()))
    # The discriminated union puts the kind name first in the location: keep it, it helps.
    message = first.get("msg", "invalid")
    if first.get("type") == "union_tag_invalid":
        message += " (known kinds: see 'logkit schema --list')"
    elif first.get("type") == "extra_forbidden":
        message = "unknown field (written by a newer logkit, or a typo in a hand edit)"
    return Problem(path, line, message + "; fix or delete that line", field=loc or None)


def read_events(path: Path, raw: bytes | None = None, *, seen: dict[str, int] | None = None,
                after: int = 0) -> ReadResult:
    """Read and validate every line of one ``events.jsonl`` (or ``raw``, after line ``after``); never raises."""
    result = ReadResult(path)
    if raw is None:
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            result.problems.append(Problem(path, 0, "file is missing"))
            return result
        except OSError as exc:
            result.problems.append(Problem(path, 0, f"cannot read: {exc.strerror}"))
            return result
    for number, offset, _length, event in iter_events(path, raw, result.problems, seen=seen, after=after):
        result.events.append(event)
        result.lines.append(number)
        result.offsets.append(offset)
    return result


def iter_events(path: Path, raw: bytes, problems: list[Problem], *, seen: dict[str, int] | None = None,
                after: int = 0, chunks: list[bytes] | None = None) -> Iterator[tuple[int, int, int, BaseEvent]]:
    """:func:`read_events` one ``(line, offset, length, event)`` at a time, problems appended to ``problems``."""
    seen = {} if seen is None else seen
    current_prefix = b'{"v":%d,' % files.SCHEMA_VERSION
    validate = event_adapter().validator.validate_json  # the adapter's validator itself: no wrapper call per line
    ends_clean = True
    if chunks is None:
        chunks = raw.split(b"\n")
        ends_clean = raw.endswith(b"\n") or not raw
        if ends_clean:
            chunks.pop()
    last, offset = len(chunks), 0
    for number, chunk in enumerate(chunks, start=1 + after):
        at, offset = offset, offset + len(chunk) + 1
        event = None
        if chunk.startswith(current_prefix):
            # The common case, a line this logkit wrote: pydantic-core parses the JSON itself, one
            # call per line (the union picks the model by its tag as fast as a sniffed kind's model
            # would). Anything it refuses takes the slow path below, which names the problem.
            try:
                event = validate(chunk)
            except (ValueError, RecursionError, OverflowError):
                pass
        if event is None:
            if not chunk.strip():
                continue
            event = _slow(path, chunk, number, number - after == last and not ends_clean, problems)
            if event is None:
                continue
        why = clash(event, number, seen)
        if why:
            problems.append(Problem(path, number, why + "; skipped (fix or delete that line)"))
            continue
        if event.kind in ("decision", "verdict"):
            for ref in unknown_refs(event, seen):
                problems.append(Problem(
                    path, number, f"{event.kind} cites {ref}, which no earlier line of this session records; "
                    "the event is kept (fix or remove that reference)", field="evidence"))
        yield number, at, offset - at - 1, event


def _slow(path: Path, chunk: bytes, number: int, torn: bool, problems: list[Problem]) -> BaseEvent | None:
    """A line the fast path refused (an older schema's, or a bad one): upgraded and validated, or its problem named."""
    try:
        data = files.load(chunk)
    except SchemaTooNew as exc:
        problems.append(Problem(path, number, f"{exc.message}; {exc.fix}", field="v"))
        return None
    except ValueError as exc:
        if torn:
            problems.append(Problem(path, number, "torn last line (logkit was killed while writing it); skipped",
                                    torn=True))
        else:
            field_name = "v" if str(exc).startswith("'v'") else None
            problems.append(Problem(path, number, f"{exc}; fix or delete that line", field=field_name))
        return None
    try:
        return parse_event(data)
    except SchemaTooNew as exc:
        problems.append(Problem(path, number, f"{exc.message}; {exc.fix}", field="v"))
    except ValidationError as exc:
        problems.append(problem_from_validation(path, number, exc))
    except (ValueError, RecursionError, OverflowError) as exc:
        problems.append(Problem(path, number, f"{exc}; fix or delete that line"))
    return None


def unknown_refs(event: BaseEvent, seen: dict[str, int]) -> list[str]:
    """The ``A7``/``H3`` references of a decision or verdict that name nothing (or a malformed one)."""
    refs = list(event.evidence)  # type: ignore[attr-defined]
    for option in getattr(event, "options", ()):
        refs += option.attempts + option.hypotheses
    bad = []
    for ref in refs:
        sid, _, short = ref.rpartition("/")
        if sid and not files.valid_session_id(sid):
            bad.append(ref)
        elif not sid and short not in seen:
            bad.append(ref)
    return bad


def clash(event: BaseEvent, number: int, seen: dict[str, int]) -> str | None:
    """Why ``event`` cannot join the events before it; ``seen``: ids and short ids read so far, by line (updated)."""
    fields = event.__dict__  # not getattr: pydantic's __getattr__ hook is in every attribute read
    short = fields.get("short_id")
    kind = fields["kind"]
    event_id = fields["id"]
    if event_id in seen:
        return f"event id {event_id} repeats line {seen[event_id]}"
    if short is not None and short in seen:
        return f"{short} is already taken by line {seen[short]}"
    ref = fields.get("attempt") if kind != "verdict" else fields.get("hypothesis")
    if kind in _NEEDS_EARLIER and isinstance(ref, str) and ref not in seen:
        return f"{kind} of {ref}, which no earlier line records"
    if kind == "metric":
        server = fields.get("server_attempt")
        if isinstance(server, str) and server not in seen:
            return f"metric of server {server}, which no earlier line records"
    if kind == "outcome":
        first = seen.get("outcome:" + ref)
        if first is not None:
            return f"a second outcome of {ref} (line {first} has its outcome)"
        seen["outcome:" + ref] = number
    seen[event_id] = number
    if short is not None:
        seen[short] = number
    return None


#: Kinds whose ``attempt`` (a verdict: ``hypothesis``) must be recorded on an earlier line.
_NEEDS_EARLIER = frozenset({"outcome", "environment", "launch_config", "verdict", "metric", "server_info", "smoke"})


def cross_check(results: dict[str, ReadResult], attempts: dict[str, list[str]] | None = None) -> dict[str, ReadResult]:
    """Add to ``results`` the problems found across sessions; ``attempts``: short ids a result leaves out."""
    # one pass over the events: what every session records, and the events that cite across sessions
    known: set[str] = set()
    shorts: dict[str, set[str]] = {}
    citing: list[tuple[ReadResult, int, BaseEvent]] = []
    for sid, result in results.items():
        own = shorts[sid] = set(attempts.get(sid, ())) if attempts else set()
        for index, event in enumerate(result.events):
            kind = event.kind
            if kind == "attempt" or kind == "hypothesis":
                own.add(event.short_id)  # type: ignore[attr-defined]
            elif kind == "decision":
                known.add(event.decision_id)  # type: ignore[attr-defined]
                citing.append((result, index, event))
            elif kind == "verdict":
                citing.append((result, index, event))

    def line_of(result: ReadResult, index: int) -> int:
        return result.lines[index] if index < len(result.lines) else 0

    for result, index, event in citing:
        target = getattr(event, "supersedes", None)
        if target and target not in known:
            result.problems.append(Problem(
                result.path, line_of(result, index), f"{event.decision_id} supersedes {target}, which no "  # type: ignore[attr-defined]
                "session records; the decision is kept without that link (fix its 'supersedes', or restore "
                f"the session that recorded {target})", field="supersedes"))
        for ref in event.evidence:  # type: ignore[attr-defined]
            sid, _, short = ref.rpartition("/")
            if sid in shorts and short not in shorts[sid]:
                result.problems.append(Problem(
                    result.path, line_of(result, index), f"{event.kind} cites {ref}, which session {sid} "
                    "does not record; the event is kept (fix that reference)", field="evidence"))
    return results
