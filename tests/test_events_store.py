"""The event schema and the session store, on real files."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from logkit import schema
from logkit.errors import BadInput, NotFound
from logkit.events import SCHEMA_VERSION, Attempt, Hypothesis, Note, Outcome, parse_event
from logkit.store import Store

REPO = Path(__file__).resolve().parent.parent


def test_schemas_on_disk_are_current() -> None:
    stale = schema.stale(REPO / "schemas")
    assert stale == [], f"run: logkit schema --write schemas  (stale: {stale})"


def test_create_session_and_current_pointer(sessions: Path) -> None:
    st = Store(sessions)
    handle = st.create("GLM-5 NVFP4 on 8x RTX PRO 6000", goal="coherent decode", tags=["glm5"])
    from logkit.store.shared import host_tag

    assert handle.id.endswith(f"-glm-5-nvfp4-on-8x-rtx-pro-6000-{host_tag()}")
    assert st.current() == handle.id
    again = st.create("GLM-5 NVFP4 on 8x RTX PRO 6000")
    assert again.id == handle.id + "-2"
    meta = handle.meta()
    assert meta is not None and meta.title.startswith("GLM-5") and meta.schema_version == SCHEMA_VERSION


def test_short_ids_are_allocated_in_order(sessions: Path) -> None:
    handle = Store(sessions).create("t")
    ids = [
        handle.append_new(lambda tx: Attempt(session=handle.id, short_id=tx.next_short_id("A"), argv=["true"])).short_id
        for _ in range(3)
    ]
    hyp = handle.append_new(lambda tx: Hypothesis(session=handle.id, short_id=tx.next_short_id("H"), text="x"))
    assert ids == ["A1", "A2", "A3"] and hyp.short_id == "H1"


def test_reader_names_file_line_and_field(sessions: Path) -> None:
    handle = Store(sessions).create("t")
    handle.append(Note(session=handle.id, text="fine"))
    with open(handle.events_path, "a") as fh:
        fh.write('{"kind":"outcome","session":"x","attempt":"A1","status":"exploded"}\n')
        fh.write("not json\n")
        fh.write('{"kind":"telepathy","session":"x"}\n')
        fh.write('{"kind":"note","session":"x","text":"after"}\n')
        fh.write('{"kind":"note","session":"x","te')  # torn last line
    result = handle.read()
    texts = [e.text for e in result.events if isinstance(e, Note)]
    assert texts == ["fine", "after"]
    by_line = {p.line: p for p in result.problems}
    assert by_line[3].field == "outcome.status" and "events.jsonl:3" in str(by_line[3])
    assert "not valid JSON" in by_line[4].message
    assert "telepathy" in by_line[5].message or by_line[5].field
    assert by_line[7].torn
    with pytest.raises(BadInput):
        handle.read(strict=True)


def test_append_after_torn_line_keeps_new_line_whole(sessions: Path) -> None:
    handle = Store(sessions).create("t")
    with open(handle.events_path, "a") as fh:
        fh.write('{"kind":"note","sess')
    handle.append(Note(session=handle.id, text="kept"))
    result = handle.read()
    assert [e.text for e in result.events if isinstance(e, Note)] == ["kept"]
    assert len(result.problems) == 1 and not result.problems[0].torn  # no longer last: plain bad JSON


def test_newer_schema_is_refused_with_upgrade_hint(sessions: Path) -> None:
    handle = Store(sessions).create("t")
    with open(handle.events_path, "a") as fh:
        fh.write(json.dumps({"v": SCHEMA_VERSION + 1, "kind": "note", "session": handle.id, "text": "x"}) + "\n")
    (problem,) = handle.read().problems
    assert "newer logkit" in problem.message and "upgrade" in problem.message


def test_old_events_are_upgraded_step_by_step(monkeypatch: pytest.MonkeyPatch) -> None:
    from logkit import events

    # Pretend the current schema is one newer than v1 and v1 called the note text "body".
    from logkit.store import files

    # Pretend the current schema is one newer than v1 and v1 called the note text "body".
    monkeypatch.setattr(files, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    assert events.UPGRADES is files.UPGRADES and events.upgrade is files.upgrade
    monkeypatch.setitem(events.UPGRADES, SCHEMA_VERSION, lambda d: {**{k: v for k, v in d.items() if k != "body"},
                                                                   "text": d.get("body", d.get("text"))})
    note = parse_event({"v": SCHEMA_VERSION, "kind": "note", "session": "s", "body": "old"})
    assert isinstance(note, Note) and note.text == "old" and note.v == SCHEMA_VERSION + 1


def test_unknown_session_names_the_fix(sessions: Path) -> None:
    with pytest.raises(NotFound) as err:
        Store(sessions).handle("nope")
    assert "logkit session start" in str(err.value)


def _writer(root: str, session_id: str, worker: int, count: int) -> None:
    handle = Store(root).handle(session_id)
    for i in range(count):
        handle.append(Note(session=session_id, text=f"w{worker}-{i}-" + "x" * 3000))


@pytest.mark.slow
def test_concurrent_writers_never_tear_or_lose_lines(sessions: Path) -> None:
    handle = Store(sessions).create("t")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(sessions), handle.id, w, 500)) for w in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    result = handle.read()
    assert result.problems == []
    texts = sorted(e.text.split("-x")[0] for e in result.events if isinstance(e, Note))
    assert texts == sorted(f"w{w}-{i}" for w in range(8) for i in range(500))


def test_reconcile_marks_dead_recorder_abandoned(sessions: Path) -> None:
    handle = Store(sessions).create("t")
    log = handle.log_path("A1.log")
    log.write_bytes(b"line one\nline two\n")
    handle.append(Attempt(session=handle.id, short_id="A1", argv=["sleep", "9"], recorder_pid=2**22 + 7,
                          log={"path": handle.relative(log)}))
    (outcome,) = handle.reconcile()
    assert isinstance(outcome, Outcome) and outcome.status == "abandoned"
    assert outcome.log is not None and outcome.log.size == 18
    assert [t.text for t in outcome.tail] == ["line one", "line two"]
    assert handle.reconcile() == []  # idempotent


@pytest.mark.parametrize("text", ["2026-11-14T09:30:00Z", "2026-11-14T09:30:00+00:00", "2026-11-14T09:30:00",
                                  "2026-11-14T14:30:00+05:00", "2026-11-14T04:30:00-05:00"])
def test_ts_is_the_utc_instant_however_written(text: str) -> None:
    """A zero-offset ``ts`` keeps pydantic's own UTC tzinfo (no copy per event); every form is the
    same UTC instant, shown and written the same."""
    from datetime import UTC, datetime

    line = json.dumps({"v": SCHEMA_VERSION, "kind": "note", "session": "s", "ts": text, "text": "t"}).encode()
    for event in (parse_event(json.loads(line)), Note.model_validate_json(line)):
        assert event.ts == datetime(2026, 11, 14, 9, 30, tzinfo=UTC)
        assert event.ts.utcoffset().total_seconds() == 0
        assert event.ts.isoformat() == "2026-11-14T09:30:00+00:00"
        assert event.ts.strftime("%Z %z") == "UTC +0000"
        assert event.model_dump(mode="json")["ts"] == "2026-11-14T09:30:00Z"
