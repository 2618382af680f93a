"""One outcome-status table (logkit/data/statuses.toml): the event vocabulary, the table and every
consumer (runner, SGLang classifier and watcher, reasoning status and refuted check, site matrix)
agree, and the one exit mapping gives the runner and the classifier the same answers."""

from __future__ import annotations

import signal
import tomllib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from logkit import statuses
from logkit.builder.load import tables as build_tables
from logkit.capture.hooks import ExitInfo
from logkit.capture.runner import _generic_status
from logkit.capture.sglang.outcomes import Classifier, load_signatures
from logkit.errors import BadInput
from logkit.events import OUTCOME_STATUSES, Attempt, Hypothesis, Outcome, Session
from logkit.reasoning import matrix, refuted

from kb_factory import status_of

ROOT = Path(__file__).resolve().parent.parent


def test_table_is_the_event_vocabulary_in_order() -> None:
    assert statuses.names() == OUTCOME_STATUSES


def test_every_signature_class_has_a_row() -> None:
    assert {s.status for s in load_signatures()} <= set(statuses.names())


def test_every_shown_category_has_an_icon_and_a_style() -> None:
    icons = build_tables()["matrix"]["icons"]
    css = (ROOT / "logkit" / "assets" / "stylesheets" / "logkit.css").read_text()
    for name in statuses.names():
        cat = statuses.category(name)
        if cat is not None:
            assert cat in icons and f".lk-{cat} " in css, name


def test_old_copies_of_the_taxonomy_are_gone() -> None:
    reasoning = tomllib.loads((ROOT / "logkit" / "data" / "reasoning.toml").read_text())
    knowledge = tomllib.loads((ROOT / "logkit" / "data" / "knowledge.toml").read_text())
    assert "failure_classes" not in reasoning and "exonerate" not in reasoning
    assert not {"works", "crash", "garbage", "oom", "ignore"} & set(knowledge["matrix"])


@pytest.mark.parametrize("name", OUTCOME_STATUSES)
def test_matrix_and_refutation_agree(name: str) -> None:
    row = statuses.row(name)
    launch = matrix.Row("s", "A1", "launch", "", name, backends={"moe_runner_backend": "x"})
    shown = matrix.category(launch)  # the cell every reader reads, the site's matrix included
    assert shown == (None if row.category == "ignore" else row.category)
    assert row.refutes == (shown in statuses.REFUTING_CATEGORIES) == matrix.refutes(name)
    assert set(statuses.REFUTING_CATEGORIES) == {"crash", "garbage", "oom", "inaccurate"}
    if row.refutes:
        assert statuses.verb(name) != "was refuted"


def test_unexplained_kill_and_refused_flags_refute_nothing() -> None:
    # The matrix used to count these as crashes while the reasoning commands did not.
    for name in ("killed", "arg_error", "interrupted", "abandoned"):
        assert matrix.category(matrix.Row("s", "A1", "launch", "", name)) is None and name not in statuses.refuting()
    assert statuses.of_class("works") == ("ready", "exit_ok")


def test_status_proposes_refutations_exactly_for_refuting_statuses(tmp_path: Path) -> None:
    """Only a refuting status (statuses.toml category crash, garbage, oom) proposes refuting the
    hypothesis a launch tested (the matrix cell's rule); a working launch withdraws it."""
    sid, t = "2026-12-03-x", datetime(2026, 12, 3, tzinfo=UTC)
    events: list = [Session(session=sid, title="x", ts=t),
                    Hypothesis(session=sid, short_id="H1", text="backend X works", ts=t)]
    failing = [n for n in OUTCOME_STATUSES if n not in statuses.of_class("works")]
    for i, name in enumerate(failing, 1):
        events.append(Attempt(session=sid, short_id=f"A{i}", argv=["python", "-m", "sglang.launch_server"],
                              role="launch", cwd="/", started=t, tests=["H1"], ts=t))
        events.append(Outcome(session=sid, attempt=f"A{i}", status=name, ts=t))
    proposed = {p["status"] for p in status_of(tmp_path / "a", events)["proposals"]}
    assert proposed == set(statuses.refuting())  # nccl, import_error, other_crash, arg_error: nothing
    n = len(failing) + 1
    events.append(Attempt(session=sid, short_id=f"A{n}", argv=["python", "-m", "sglang.launch_server"],
                          role="launch", cwd="/", started=t, tests=["H1"], ts=t))
    events.append(Outcome(session=sid, attempt=f"A{n}", status="ready", ts=t))
    assert status_of(tmp_path / "b", events)["proposals"] == []


EXITS = [
    (0, None), (1, None), (3, None), (None, signal.SIGKILL), (None, signal.SIGTERM), (None, signal.SIGINT),
    (None, signal.SIGHUP), (None, signal.SIGSEGV), (None, signal.SIGABRT), (137, None), (143, None), (130, None),
    (-9, None), (-15, None), (139, None),
]


@pytest.mark.parametrize(("code", "sig"), EXITS)
@pytest.mark.parametrize("stopped", [False, True])
def test_runner_and_classifier_map_an_exit_alike(code: int | None, sig: int | None, stopped: bool) -> None:
    generic, _ = _generic_status(ExitInfo(exit_code=code, signal=sig, stopped_by_logkit=stopped, stop_reason="x"))
    assert Classifier().decide(exit_code=code, signal=sig, stopped_by_logkit=stopped).status == generic


@pytest.mark.parametrize(("code", "sig", "status", "label"), [
    (0, None, "exit_ok", "exited 0"),
    (3, None, "other_crash", "exited 3"),
    (None, 9, "killed", "killed by SIGKILL (the OOM killer?)"),
    (137, None, "killed", "killed by SIGKILL (the OOM killer?)"),  # a shell reporting its child's SIGKILL
    (-9, None, "killed", "killed by SIGKILL (the OOM killer?)"),  # Popen's returncode
    (None, 15, "interrupted", "stopped by SIGTERM"),
    (129, None, "interrupted", "stopped by SIGHUP"),
    (None, 11, "other_crash", "died of SIGSEGV"),
    (139, None, "other_crash", "exited 139"),  # SIGSEGV is named by no rule: the code stays a code
])
def test_exit_rules(code: int | None, sig: int | None, status: str, label: str) -> None:
    assert statuses.from_exit(code, sig) == (status, label)


def test_stopped_by_logkit_names_the_reason_and_the_escalation() -> None:
    assert statuses.from_exit(None, 15, stopped_by_logkit=True, reason="SIGINT received") == (
        "interrupted", "stopped by logkit (SIGINT received)")
    info = ExitInfo(exit_code=None, signal=9, stopped_by_logkit=True, stop_reason="SIGINT received", escalated=True)
    assert _generic_status(info) == ("interrupted", "stopped by logkit (SIGINT received); SIGKILLed after the grace period")


@pytest.mark.parametrize(("text", "needle"), [
    ('[status.ready]\nclass = "fine"\ncategory = "works"\n', "class 'fine'"),
    ('[status.ready]\nclass = "works"\ncategory = "crash"\n', "class 'works' with category 'crash'"),
    ('[status.oom]\nclass = "failure"\ncategory = "oom"\n', "needs a verb"),
    ('[status.ready]\nclass = "works"\ncategory = "works"\n[[exit]]\nstatus = "nope"\n', "status 'nope'"),
    ('[status.ready]\nclass = "works"\ncategory = "works"\n[[exit]]\nsignals = ["SIGNOPE"]\nstatus = "ready"\n',
     "unknown signal 'SIGNOPE'"),
    ('[status.ready]\nclass = "works"\ncategory = "works"\n[[exit]]\nexit_codes = [0]\nstatus = "ready"\n',
     "must match anything"),
    ("[status\n", "statuses.toml"),
])
def test_a_broken_table_names_the_file_and_the_fix(text: str, needle: str) -> None:
    with pytest.raises(BadInput) as err:
        statuses._load(text)
    assert needle in str(err.value) and "logkit/data/statuses.toml" in str(err.value) and err.value.fix


def test_no_module_keeps_its_own_set_of_status_names() -> None:
    """statuses.toml is the only source: a literal tuple/set/list naming two statuses anywhere else in
    logkit/ is a copy that will drift (sweep/cell.py and capture/sglang/seen.py each had one)."""
    import ast

    found = []
    for path in sorted((ROOT / "logkit").rglob("*.py")):
        if path.name in ("events.py", "statuses.py"):  # the vocabulary and its one reader
            continue
        if "demo/standin" in path.as_posix():  # the stand-in server's modes: how it misbehaves, not statuses
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Tuple, ast.Set, ast.List)):
                named = [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in OUTCOME_STATUSES]
                if len(named) >= 2:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {named}")
    assert found == [], "use logkit.statuses (is_failure, of_class, refuting) instead:\n" + "\n".join(found)


@pytest.mark.parametrize("name", OUTCOME_STATUSES)
def test_what_is_a_failure_comes_from_the_table(name: str) -> None:
    from logkit.reasoning.why import failure_key

    assert statuses.is_failure(name) == (statuses.row(name).klass == "failure")
    # `logkit why` compares failures only: the table says which
    assert (failure_key(name, "some-signature", "a label") is not None) == statuses.is_failure(name)
    assert not statuses.is_failure(None) and not statuses.is_failure("no-such-status")
