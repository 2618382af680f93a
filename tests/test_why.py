"""`logkit why`: a log or a pasted error, matched against every attempt of the knowledge base (same
signature, or the same normalised error for other_crash), with configurations and the decisions
that cite them; and the site's Signatures page grouping unexplained failures by that template.
Everything runs as real `python -m logkit` processes on real sessions; the site is a real build."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import REPO, run_logkit

LOGS = Path(__file__).parent / "fixtures" / "logs"

KEYERROR = ("[2026-01-01 00:00:05 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/sgl/python/sglang/srt/models/llama.py", line 508, in load_weights\n'
            "    param = params_dict[name]\n"
            "KeyError: 'model.layers.{n}.mlp.gate_up_proj.input_scale'\n"
            "[2026-01-01 00:00:06] Received sigquit from a child process. It usually means the child failed.\n")


def lk(sessions: Path, *args: str, input: str | None = None):  # type: ignore[no-untyped-def]
    return run_logkit("--sessions", str(sessions), *args, input=input)


def _kb(tmp_path: Path) -> Path:
    s = tmp_path / "sessions"
    assert lk(s, "session", "start", "bring-up", "--id", "2026-12-01-bringup").returncode == 0
    # A1: an NCCL failure on tp=2, later decided about; A2, A3: the same unexplained KeyError.
    r = lk(s, "import", str(LOGS / "nccl-sglang-4289.log"), "--cmd",
           "python -m sglang.launch_server --model-path org/M --tp 2 --attention-backend fa3")
    assert r.returncode == 0, r.stderr
    for n in (55, 13):
        log = tmp_path / f"keyerror-{n}.log"
        log.write_text(KEYERROR.format(n=n))
        r = lk(s, "import", str(log), "--cmd", f"python -m sglang.launch_server --model-path org/M --tp {n % 4 + 1}")
        assert r.returncode == 0, r.stderr
    r = lk(s, "decide", "Disable custom all-reduce on PCIe hosts", "--option", "keep NCCL defaults: crashed (A1)",
           "--chosen", "disable custom all-reduce", "--evidence", "A1")
    assert r.returncode == 0, r.stderr
    return s


@pytest.mark.slow
def test_why_lists_attempts_with_the_same_signature_config_and_decision(tmp_path: Path) -> None:
    s = _kb(tmp_path)
    r = lk(s, "why", "--json", "--config", str(REPO / "mkdocs.yml"), str(LOGS / "nccl-vllm-8978.log"))
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["status"] == "hang"
    # 8978 is a collective timeout (a hang), 4289 an NCCL error code: different rows, so not "the same way".
    assert data["key"] == "signature collective-timeout" and data["same"] == []
    # another run that failed the same way (not A1's own log: that one is A1, not "seen before")
    other = tmp_path / "again.log"
    other.write_text((LOGS / "nccl-sglang-4289.log").read_text() + "[2026-01-02 00:00:00] the next day's run\n")
    r = lk(s, "why", "--json", "--config", str(REPO / "mkdocs.yml"), str(other))
    data = json.loads(r.stdout)
    assert data["key"] == "signature nccl-error"
    [m] = data["same"]
    assert m["attempt"] == "2026-12-01-bringup/A1" and m["config"]["tp_size"] == 2
    assert m["config"]["attention_backend"] == "fa3"
    [d] = m["decisions"]
    assert d["id"].startswith("DR-") and d["chosen"] == ["disable custom all-reduce"]
    # no site_url in mkdocs.yml until the team sets one: the link is relative to the site's root
    assert d["cite"] == f"[{d['id']}: Disable custom all-reduce on PCIe hosts](decisions/{d['id']}/)"


@pytest.mark.slow
def test_why_on_a_pasted_error_matches_the_normalised_template(tmp_path: Path) -> None:
    s = _kb(tmp_path)
    r = lk(s, "why", "--json", input="KeyError: 'model.layers.7.mlp.gate_up_proj.input_scale'\n")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["status"] == "other_crash"
    assert data["key"] == "template KeyError: 'model.layers.<n>.mlp.gate_up_proj.input_scale'"
    assert [m["attempt"] for m in data["same"]] == ["2026-12-01-bringup/A2", "2026-12-01-bringup/A3"]
    assert all(m["decisions"] == [] for m in data["same"])
    text = lk(s, "why", input="KeyError: 'model.layers.7.mlp.gate_up_proj.input_scale'\n").stdout
    assert "Seen before: 2 attempt(s) failed the same way" in text and "no decision cites it" in text


def test_why_on_the_shipped_kb_finds_the_account_and_its_decision() -> None:
    r = lk(REPO / "sessions", "why", "--json", str(LOGS / "arch-sglang-9140.log"))
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    refs = {m["attempt"]: m for m in data["same_class"]}
    a2 = refs["2026-11-14-qwen35-397b-nvfp4-sm120/A2"]
    # the configuration: model and parallelism too (issue 19), as the shipped session now records it
    assert a2["config"] == {"model_path": "Qwen3.5-397B-A17B-NVFP4", "tp_size": 8, "moe_runner_backend": "flashinfer_trtllm"}
    assert "DR-0001" in [d["id"] for d in a2["decisions"]]


def test_why_help_and_missing_file() -> None:
    assert "LOGFILE" in run_logkit("why", "--help").stdout
    r = run_logkit("why", "/nonexistent/x.log")
    assert r.returncode == 2 and "/nonexistent/x.log" in r.stderr and "fix:" in r.stderr


@pytest.mark.slow
def test_signatures_page_groups_unexplained_failures_by_template(tmp_path: Path) -> None:
    s = _kb(tmp_path)
    r = run_logkit("--sessions", str(s), "build", "--out", str(tmp_path / "out"), "--docs", str(tmp_path / "docs"),
                   cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    page = (tmp_path / "out" / "signatures" / "index.html").read_text(encoding="utf-8")
    assert "Unexplained failures" in page
    text = re.sub(r"<[^>]+>", "", page)  # the cell wraps its words in no-break spans
    assert "KeyError: 'model.layers.&#60;n&#62;.mlp.gate_up_proj.input_scale'" in text
    assert "2 (repeats)" in page


def test_why_does_not_list_the_attempt_asked_about(tmp_path: Path) -> None:
    """Asking about A2's own log (its stored copy, or the file it was imported from) lists A3, not A2."""
    s = _kb(tmp_path)
    for asked in (s / "2026-12-01-bringup" / "logs" / "A2-imported.log", tmp_path / "keyerror-55.log"):
        r = lk(s, "why", "--json", str(asked))
        assert r.returncode == 0, r.stderr
        data = json.loads(r.stdout)
        assert data["itself"] == ["2026-12-01-bringup/A2"], asked
        assert [m["attempt"] for m in data["same"]] == ["2026-12-01-bringup/A3"], asked
    text = lk(s, "why", str(tmp_path / "keyerror-55.log")).stdout
    assert "This log is 2026-12-01-bringup/A2's own" in text and "Seen before: 1 attempt(s)" in text
