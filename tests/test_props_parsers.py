"""Property-based: every parser gives a result or a clear error (file:line where there is a file), never a
traceback. Library functions get many generated inputs; the CLI gets a few, as real processes.

Extends tests/test_props_store.py (raw bytes into the event reader) with mutated valid events."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from logkit.capture.sglang import bench as sgbench
from logkit.capture.sglang import bench, outcomes
from logkit.errors import BadInput, LogkitError
from logkit.events import OUTCOME_STATUSES, Attempt, Decision, Hypothesis, Metric, Outcome
from logkit.launch import config as launch_config
from logkit.launch import flags as launch_flags
from logkit.reasoning import common, todo
from logkit.store.reader import read_events

import scenarios

MANY = settings(max_examples=int(os.environ.get("LOGKIT_PROPS_EXAMPLES", "200")), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
FEW = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

flag_words = st.lists(
    st.one_of(st.sampled_from(["--tp", "--port", "--host", "--moe-runner-backend", "--model-path", "-x", "--",
                               "--port=", "--api-key", "=", "--a=b=c", "²", "١٢", "nan", "-1", "1e309"]),
              st.text(max_size=12)),
    max_size=12,
)


@pytest.mark.slow
@MANY
@given(flag_words)
@example(["--port", "²"])
@example(["--port", "1e309"])  # found by a full-size run: int(inf) raised OverflowError
@example(["--port", "99999999999"])
def test_flag_parsers_never_raise(words: list[str]) -> None:
    parsed = launch_flags.plain_parse(words)
    assert isinstance(parsed, dict)
    launch_flags.fingerprint(parsed)
    cfg = launch_config.plain_config(["python", "-m", "sglang.launch_server", *words])
    assert cfg["parser"] == "plain" and cfg["unresolved"]
    assert cfg["port"] is None or 0 <= cfg["port"] <= 65535
    sgbench.parse_bench(words)


log_lines = st.lists(
    st.one_of(st.sampled_from([
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "The server is fired up and ready to roll!",
        "RuntimeError: CUDA error: no kernel image is available for execution on the device",
        "Traceback (most recent call last):", "\r", "\x00\xff", "Killed", "NaN detected",
    ]), st.text(max_size=60)),
    max_size=20,
)


@MANY
@given(log_lines, st.binary(max_size=200))
def test_log_classifier_any_text_gives_a_status(parts: list[str], noise: bytes) -> None:
    data = "\n".join(parts).encode("utf-8", "surrogatepass") + noise
    decision = outcomes.classify_text(data)
    assert decision.status in OUTCOME_STATUSES
    for ev in decision.evidence:
        assert ev.line >= 1


bench_text = st.one_of(
    st.text(max_size=300),
    st.lists(st.sampled_from(["============ Serving Benchmark Result ============", "Successful requests: 10",
                              "Output token throughput (tok/s): 123.4", "Mean TTFT (ms): x", "Backend: sglang",
                              '{"output_throughput": 1.5, "backend": "sglang"}', '{"a": [', "{", "{}",
                              '{"server_info": {"api_key": "k"}}']), max_size=8).map("\n".join),
)


@MANY
@given(bench_text)
def test_bench_parsers_raise_only_value_error(text: str) -> None:
    for parse in (bench.parse_jsonl, bench.parse_text):
        try:
            result = parse(text)
        except ValueError:
            continue
        assert all(isinstance(v, float) for v in result.metrics.values())


@MANY
@given(st.binary(max_size=300))
def test_bench_parse_file_any_bytes(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "bench.out"
    path.write_bytes(raw)
    try:
        bench.parse_file(path)
    except BadInput as exc:
        assert str(path) in str(exc) and exc.fix


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.sampled_from(["content", "status", "priority", "id", "x"]),
                                                        c, max_size=4),
    max_leaves=10,
)
todo_files = st.one_of(
    st.binary(max_size=200),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.lists(json_values, max_size=4).map(lambda v: json.dumps({"todos": v}).encode()),
    json_values.map(lambda v: json.dumps({"todos": [v]}, indent=1).encode()).map(lambda b: b[: len(b) // 2]),
)


@pytest.mark.slow
@MANY
@given(todo_files)
def test_todo_import_any_file(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "todos.json"
    path.write_bytes(raw)
    try:
        items = todo.parse(path)
    except BadInput as exc:
        assert str(path) in exc.message and exc.fix
        if "not valid JSON" in exc.message:
            assert f"{path}:" in exc.message  # file:line:col
        return
    assert all(i.content.strip() for i in items)


@MANY
@given(st.lists(st.text(max_size=10), max_size=4))
@example(["A1", "H1", "x/A1", "/A1", "../A1", "A1,H2", "A٣"])
def test_id_args_give_not_found_or_bad_input(tmp_path: Path, ids: list[str]) -> None:
    from logkit.store import Store

    store = Store(tmp_path / "s")
    handle = store.handle(store.create("props", make_current=False).id) if not store.session_ids() else \
        store.handle(store.session_ids()[0])
    refs = common.split_ids(ids)
    for allow in ("A", "H", "AH"):
        try:
            common.check_refs(handle, [], refs, allow=allow)
        except LogkitError as exc:
            assert exc.fix


valid_events = [
    Hypothesis(session="s", short_id="H1", text="t"),
    Attempt(session="s", short_id="A1", argv=["x"]),
    Outcome(session="s", attempt="A1", status="exit_ok"),
    Decision(session="s", decision_id="DR-0001", title="d", supersedes="DR-0000"),
    Metric(session="s", name="m", value=1.0),
]
mutated = st.tuples(st.sampled_from(valid_events), st.sampled_from(
    ["short_id", "attempt", "status", "decision_id", "supersedes", "value", "ts", "v", "kind", "id", "argv", "zz"]),
    st.one_of(st.none(), st.integers(-3, 99), st.text(max_size=8), st.lists(st.integers(), max_size=2)), st.booleans())


@pytest.mark.slow
@MANY
@given(st.lists(mutated, min_size=1, max_size=5))
def test_mutated_events_are_named_by_file_line_and_field(tmp_path: Path, edits: list) -> None:
    body = []
    for event, key, value, delete in edits:
        data = json.loads(event.model_dump_json())
        if delete:
            data.pop(key, None)
        else:
            data[key] = value
        body.append(json.dumps(data))
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(body) + "\n")
    result = read_events(path)
    assert len(result.events) + len(result.problems) == len(body)
    for problem in result.problems:
        assert str(problem).startswith(f"{path}:{problem.line}:") and 1 <= problem.line <= len(body)
        assert "fix" in problem.message or "upgrade" in problem.message or problem.field == "v"


# -- the same parsers through the CLI, as real processes, on generated files ----------------------

@pytest.mark.slow
@FEW
@given(st.one_of(st.binary(max_size=400), log_lines.map(lambda p: "\n".join(p).encode("utf-8", "replace"))))
def test_cli_parsers_on_generated_files(tmp_path: Path, raw: bytes) -> None:
    sessions = tmp_path / "s"
    sessions.mkdir(exist_ok=True)
    path = tmp_path / "input.txt"
    path.write_bytes(raw)
    for args in (["classify", str(path)], ["bench", "parse", str(path)], ["classify", "--json", str(path)]):
        done = scenarios.logkit(sessions, *args)
        assert done.returncode in (0, 2), (args, done.returncode, done.stderr)
        assert "Traceback" not in done.stderr, done.stderr
        if done.returncode == 2:
            assert str(path) in done.stderr and "fix:" in done.stderr


@pytest.mark.slow
def test_cli_id_and_todo_args_are_clear_errors(tmp_path: Path) -> None:
    sessions = tmp_path / "s"
    scenarios.new_session(sessions)
    bad_todo = tmp_path / "todos.json"
    bad_todo.write_text('{"todos": [\n  {"content": "x", "status": "pending"},\n  {"content": "y", "sta')
    cases = [
        (["hypothesis", "refute", "H99", "--because", "x"], "H99"),
        (["hypothesis", "refute", "../../etc", "--because", "x"], "../../etc"),
        (["hypothesis", "confirm", "H1", "--evidence", "A1"], "H1"),
        (["decide", "T", "--supersedes", "DR-9999"], "DR-9999"),
        (["decide", "T", "--supersedes", "DR-x"], "DR-x"),
        (["note", "n", "--session", "../escape"], "../escape"),
        (["todo", "import", str(bad_todo)], f"{bad_todo}:3:"),
        (["todo", "import", str(tmp_path / "missing.json")], "missing.json"),
    ]
    for args, named in cases:
        done = scenarios.logkit(sessions, *args)
        assert done.returncode == 2, (args, done.returncode, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr and named in done.stderr and "fix:" in done.stderr, (args, done.stderr)
    assert sys.executable
