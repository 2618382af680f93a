"""Property-based: any bytes in events.jsonl give events or file:line problems, never a traceback."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logkit.events import Note
from logkit.store.reader import read_events

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)
kinds = st.sampled_from(["session", "note", "attempt", "outcome", "metric", "decision", "todo", "bogus", 7, None])
event_like = st.fixed_dictionaries(
    {"kind": kinds, "session": st.text(max_size=8)},
    optional={"v": st.integers(-2, 5), "text": json_values, "short_id": json_values, "status": json_values,
              "value": json_values, "ts": json_values, "items": json_values, "argv": json_values},
)

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(st.binary(max_size=400))
def test_any_bytes_never_raise(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(raw)
    result = read_events(path)
    lines = raw.count(b"\n") + 1
    for problem in result.problems:
        assert 1 <= problem.line <= lines
        assert str(path) in str(problem)


@pytest.mark.slow
@SETTINGS
@given(st.lists(event_like, max_size=6), st.integers(0, 40))
def test_event_like_lines_and_truncation(tmp_path: Path, dicts: list[dict], cut: int) -> None:
    good = Note(session="s", text="survivor")
    body = good.model_dump_json() + "\n" + "".join(json.dumps(d) + "\n" for d in dicts)
    raw = body.encode()
    raw = raw[: max(len(good.model_dump_json()) + 1, len(raw) - cut)]  # truncate, never into line 1
    path = tmp_path / "events.jsonl"
    path.write_bytes(raw)
    result = read_events(path)
    assert isinstance(result.events[0], Note) and result.events[0].text == "survivor"
    assert len(result.events) + len(result.problems) <= 1 + len(dicts)
    for problem in result.problems:
        assert problem.line >= 2 and problem.message


@settings(max_examples=400, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from("ab1 \t\n'\"$-_=./@%+:,é\\"), max_size=5) | st.text(max_size=6), max_size=6))
def test_an_attempts_command_is_shlex_join_of_its_argv(argv: list[str]) -> None:
    """The index's command column (logkit.store.derive._command, a shortcut for words needing no
    quotes) is exactly shlex.join's text for any words: empty ones, spaces, quotes, non-ASCII."""
    import shlex

    from logkit.store.derive import _command

    assert _command(argv) == shlex.join(argv)



@settings(max_examples=300, deadline=None)
@given(naive=st.datetimes(), offset=st.sampled_from(["Z", "+00:00", "-00:00", "+05:30", "-11:00", ""]),
       utc=st.booleans())
def test_the_index_formats_a_time_as_isoformat_does(naive: datetime, offset: str, utc: bool) -> None:
    """``store.ingest._iso`` puts the common time together itself: the same text as ``isoformat`` for
    the times pydantic gives a line (years 1-9999, microseconds or none, any offset or none) and
    for ``datetime.UTC`` ones."""
    from pydantic import TypeAdapter

    from logkit.store.ingest import _iso

    when = TypeAdapter(datetime).validate_json(json.dumps(naive.isoformat() + offset))
    if utc:
        when = when.replace(tzinfo=UTC)
    assert _iso(when) == when.isoformat()
