"""The refuted-configuration check reads the one index (logkit/store/index.py).

Real files: a store written through the store API, a new failure appended, a store whose
``.cache`` cannot be written (the index is then in memory).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from logkit.events import Attempt, Environment, Gpu, LaunchConfig, Outcome
from logkit.reasoning import refuted
from logkit.store import Store

SM120 = Environment(gpus=[Gpu(index=0, name="NVIDIA RTX PRO 6000 Blackwell", compute_cap="12.0")])
LIVE = {"moe_runner_backend": "flashinfer_trtllm", "attention_backend": "flashinfer", "tp_size": 8}


def _launch(store: Store, sid: str, backend: str, status: str) -> None:
    handle = store.handle(sid)
    with handle.transaction() as txn:
        short = txn.next_short_id("A")
        fp = {"moe_runner_backend": backend, "attention_backend": "flashinfer", "tp_size": 8}
        txn.append(Attempt(session=sid, short_id=short, argv=["python", "-m", "sglang.launch_server"], role="launch",
                           environment=SM120, launch=LaunchConfig(fingerprint=fp, non_default=fp)))
        txn.append(Outcome(session=sid, attempt=short, status=status))


@pytest.fixture
def store(tmp_path: Path) -> Store:
    st = Store(tmp_path / "sessions")
    for name in ("s-one", "s-two", "s-three"):
        st.create(name, session_id=name, make_current=False)
    _launch(st, "s-one", "flashinfer_trtllm", "arch_mismatch")
    _launch(st, "s-two", "triton", "ready")
    return st


def _hits(store: Store) -> list[tuple[str, str]]:
    return [(r.session, r.attempt) for r in refuted.check(LIVE, "SM120", store)]


def test_a_new_failure_is_seen_by_the_next_check(store: Store) -> None:
    assert _hits(store) == [("s-one", "A1")]
    _launch(store, "s-three", "flashinfer_trtllm", "arch_mismatch")
    assert _hits(store) == [("s-three", "A1")]  # one refuted cell, named by its latest refuting attempt


def test_a_cache_that_cannot_be_written_never_fails_the_check(store: Store) -> None:
    (store.root / ".cache").write_text("a file where the cache folder would go")  # as a read-only store would
    assert _hits(store) == [("s-one", "A1")]
    assert _hits(store) == [("s-one", "A1")]
    assert (store.root / ".cache").read_text().startswith("a file")




def test_cells_are_said_in_the_order_of_their_latest_attempts_by_number(tmp_path: Path) -> None:
    """Two refuted cells whose latest attempts started in the same second: A9's before A10's (the matrix's
    order), not A10's first as the text "A10" < "A9" had it."""
    from datetime import UTC, datetime

    st = Store(tmp_path / "sessions")
    st.create("tie", session_id="tie", make_current=False)
    when = datetime(2026, 1, 1, tzinfo=UTC)
    handle = st.handle("tie")
    for n in range(1, 11):
        fp = ({"moe_runner_backend": "flashinfer_trtllm"} if n == 9 else
              {"attention_backend": "flashinfer"} if n == 10 else {"sampling_backend": f"s{n}"})
        with handle.transaction() as txn:
            txn.append(Attempt(session="tie", short_id=f"A{n}", argv=["python", "-m", "sglang.launch_server"],
                               role="launch", started=when, environment=SM120,
                               launch=LaunchConfig(fingerprint=fp, non_default=fp)))
            txn.append(Outcome(session="tie", attempt=f"A{n}", status="arch_mismatch"))
    cells = refuted.launch_cells(LIVE, "SM120", st.root)
    assert [c.latest.attempt for c in cells] == ["A9", "A10"], [(c.axis, c.latest.attempt) for c in cells]
