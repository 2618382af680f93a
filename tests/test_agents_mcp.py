"""``logkit mcp`` as a subprocess, driven by the ``mcp`` SDK's own stdio client.

The knowledge base is recorded the way a user records one (tests/agents_kb.py: real ``logkit run``
of the stand-in SGLang server on a stand-in SM120 nvidia-smi): a refuted cell (flashinfer_trtllm
MoE crashed, A1), a working one (triton, A2, launched with an API key), a refuted hypothesis and a
decision. Every tool is called; no reply may hold the API key, a secret sent in, or an absolute
path of this machine.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

import agents_kb
from agents_kb import MODEL, SECRET, TRTLLM_ERROR

mcp = pytest.importorskip("mcp", reason="the mcp extra: pip install '.[mcp]'")

pytestmark = pytest.mark.sglang

TOOLS = {"why", "check_launch", "working_configurations", "matrix", "status", "add_hypothesis", "record_verdict",
         "import_todos", "note", "draft_decision", "record_decision", "cite"}
HF_TOKEN = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("agents")
    env = agents_kb.build(tmp)
    return {"env": env, "tmp": tmp, "sessions": tmp / "sessions"}


def serve(lab: dict[str, Any], body: Callable[[Any], Awaitable[Any]]) -> Any:
    """Start ``python -m logkit --sessions DIR mcp`` and run ``body(client)`` against it."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    env = {**lab["env"], "LOGKIT_GPU_ARCH": "12.0"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "logkit", "--sessions", str(lab["sessions"]), "mcp"],
                                   env=env, cwd=str(lab["tmp"]))

    async def main() -> Any:
        async with Client(params, read_timeout_seconds=120) as client:
            return await body(client)

    return asyncio.run(main())


class Replies:
    """Every text a client received, checked for leaks at the end."""

    def __init__(self, lab: dict[str, Any]) -> None:
        self.lab, self.texts = lab, []

    async def call(self, client: Any, tool: str, args: dict[str, Any] | None = None, *, error: bool = False) -> Any:
        result = await client.call_tool(tool, args or {})
        text = "\n".join(c.text for c in result.content)
        self.texts.append(text)
        assert result.is_error is error, (tool, text)
        if error:
            assert "Traceback" not in text
            return text
        return json.loads(text)

    async def read(self, client: Any, uri: str) -> str:
        found = await client.read_resource(uri)
        text = "\n".join(c.text for c in found.contents)
        self.texts.append(text)
        return text

    def no_leaks(self) -> None:
        joined = "\n".join(self.texts)
        for secret in (SECRET, HF_TOKEN):
            assert secret not in joined
        for path in {str(self.lab["tmp"]), str(Path(self.lab["tmp"]).resolve()), os.path.expanduser("~") + "/"}:
            assert path not in joined, path


def test_tools_are_listed_with_schemas_and_read_only_hints(lab: dict[str, Any]) -> None:
    async def body(client: Any) -> Any:
        return (await client.list_tools()).tools, (await client.list_resource_templates()).resource_templates

    tools, templates = serve(lab, body)
    assert {t.name for t in tools} == TOOLS
    by_name = {t.name: t for t in tools}
    assert by_name["check_launch"].input_schema["required"] == ["argv"]
    assert by_name["why"].annotations.read_only_hint and not by_name["record_decision"].annotations.read_only_hint
    assert all(t.description for t in tools)
    assert {t.uri_template for t in templates} == {"logkit://decisions/{decision_id}", "logkit://configs/{config_id}"}


def test_reading_tools_answer_from_the_knowledge_base(lab: dict[str, Any]) -> None:
    replies = Replies(lab)
    decision = lab["env"]["DECISION"]

    async def body(client: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        launch = ["python", "-m", "sglang.launch_server", "--model-path", MODEL, "--api-key", SECRET,
                  "--moe-runner-backend"]
        out["refuted"] = await replies.call(client, "check_launch", {"argv": [*launch, "flashinfer_trtllm"]})
        out["works"] = await replies.call(client, "check_launch", {"argv": f"cd /x && logkit run -- {' '.join(launch)} triton"})
        out["elsewhere"] = await replies.call(client, "check_launch", {"argv": [*launch, "flashinfer_trtllm"], "arch": "10.0"})
        out["none"] = await replies.call(client, "check_launch", {"argv": "ls -la"})
        out["why"] = await replies.call(client, "why", {"text": f"HF_TOKEN={HF_TOKEN}\n{TRTLLM_ERROR}\n"})
        out["configs"] = await replies.call(client, "working_configurations", {"model": "fake"})
        out["no_configs"] = await replies.call(client, "working_configurations", {"gpu": "H100"})
        out["matrix"] = await replies.call(client, "matrix", {"backend": "moe", "arch": "SM120"})
        out["status"] = await replies.call(client, "status")
        out["cite"] = await replies.call(client, "cite", {"decision_id": decision})
        out["config_md"] = await replies.read(client, out["configs"]["resources"][0])
        out["decision_md"] = await replies.read(client, f"logkit://decisions/{decision}")
        return out

    out = serve(lab, body)
    replies.no_leaks()
    refuted = out["refuted"]
    assert refuted["verdict"] == "refuted"
    (launch,) = refuted["launches"]
    assert launch["arch"] == "SM120" and launch["backends"] == {"moe_runner_backend": "flashinfer_trtllm"}
    (cell,) = launch["cells"]
    assert cell["state"] == "refuted" and cell["refuting"]["attempt"] == "2026-12-01-glm/A1"
    assert cell["refuting"]["status"] == "arch_mismatch" and "crashed on SM120" in cell["warning"]
    assert out["works"]["verdict"] == "works" and out["works"]["launches"][0]["wrapped_in_logkit_run"] is True
    assert out["elsewhere"]["verdict"] == "untested"  # SM100: nothing recorded there
    assert out["none"] == {"launches": [], "verdict": "not_a_launch"}

    why = out["why"]
    assert why["status"] == "arch_mismatch"
    (same,) = why["same"]
    assert same["attempt"] == "2026-12-01-glm/A1" and same["config"]["moe_runner_backend"] == "flashinfer_trtllm"
    assert same["decisions"][0]["id"] == decision and f"decisions/{decision}/" in same["decisions"][0]["cite"]

    (page,) = out["configs"]["pages"]
    assert page["model"] == MODEL and page["arch"] == "SM120"
    (config,) = page["configurations"]
    assert config["backends"]["moe_runner_backend"] == "triton"  # and the attention backend /server_info named
    assert page["configurations"][0]["attempts"] == ["2026-12-01-glm/A2"]
    assert out["no_configs"] == {"pages": [], "resources": []}
    states = {c["value"]: c["state"] for c in out["matrix"]["cells"]}
    assert states == {"flashinfer_trtllm": "refuted", "triton": "works"}

    status = out["status"]
    assert status["session"] == "2026-12-01-glm" and status["closed_hypotheses"] == 1
    assert [a["id"] for a in status["attempts"]] == ["A1", "A2"] and status["decisions"][0]["id"] == decision
    assert "[REDACTED]" in status["attempts"][1]["command"]
    assert out["cite"]["link"].startswith(f"[{decision}: Use triton MoE on SM120]")

    assert "triton" in out["config_md"] and "2026-12-01-glm/A2" in out["config_md"]
    assert out["decision_md"].startswith("---") and "Use triton MoE on SM120" in out["decision_md"]
    assert "flashinfer_trtllm" in out["decision_md"]  # the option that lost, and why


def test_writing_tools_record_in_the_current_session(lab: dict[str, Any]) -> None:
    replies = Replies(lab)
    events = lab["sessions"] / "2026-12-01-glm" / "events.jsonl"

    async def body(client: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["hyp"] = await replies.call(client, "add_hypothesis", {"text": "cutlass MoE beats triton on SM120",
                                                                   "priority": "high"})
        hid = out["hyp"]["id"]
        out["todos"] = await replies.call(client, "import_todos", {"todos": {"todos": [
            {"content": f"{hid}: measure cutlass against triton", "status": "in_progress",
             "activeForm": "Measuring cutlass against triton"},
            {"content": "write the report", "status": "pending"}]}})
        out["note"] = await replies.call(client, "note", {"text": f"token {HF_TOKEN} rotated", "refs": ["A2"]})
        out["verdict"] = await replies.call(client, "record_verdict", {"hypothesis": hid, "verdict": "inconclusive",
                                                                       "because": "not measured yet"})
        before = events.read_bytes()
        out["draft"] = await replies.call(client, "draft_decision", {
            "title": "Keep triton MoE until cutlass is measured", "options": ["triton: works (A2)"],
            "chosen": ["triton"], "evidence": ["A2"]})
        out["unchanged"] = events.read_bytes() == before
        out["recorded"] = await replies.call(client, "record_decision", {"draft": out["draft"]["draft"]})
        out["again"] = await replies.call(client, "record_decision", {"draft": out["draft"]["draft"]}, error=True)
        out["status"] = await replies.call(client, "status")
        out["page"] = await replies.read(client, out["recorded"]["resource"])
        return out

    out = serve(lab, body)
    replies.no_leaks()
    assert out["hyp"]["session"] == "2026-12-01-glm"
    matches = out["todos"]["matches"]
    assert out["todos"]["items"] == 2 and matches[0]["hypothesis"] == out["hyp"]["id"]
    assert "[REDACTED]" in out["note"]["noted"]
    assert out["verdict"]["verdict"] == "inconclusive"
    assert out["draft"]["written"] is False and out["unchanged"]
    assert out["draft"]["preview"]["options"][0]["name"] == "triton"
    assert out["recorded"]["id"].startswith("DR-")
    assert "already records this decision" in out["again"] and "fix:" in out["again"]
    assert [t["content"] for t in out["status"]["todo"]] == [f"{out['hyp']['id']}: measure cutlass against triton",
                                                             "write the report"]
    assert "Keep triton MoE until cutlass is measured" in out["page"]
    on_disk = events.read_text()
    assert HF_TOKEN not in on_disk and SECRET not in on_disk


def test_errors_are_tool_errors_with_the_cli_fix(lab: dict[str, Any]) -> None:
    replies = Replies(lab)

    async def body(client: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["cite"] = await replies.call(client, "cite", {"decision_id": "DR-ZZZZZ"}, error=True)
        out["note"] = await replies.call(client, "note", {"text": "about nothing", "refs": ["A99"]}, error=True)
        out["verdict"] = await replies.call(client, "record_verdict", {"hypothesis": "H1", "verdict": "maybe"}, error=True)
        out["todos"] = await replies.call(client, "import_todos", {"todos": "{\"todos\": [{\"content\": "}, error=True)
        out["draft"] = await replies.call(client, "record_decision", {"draft": {"title": "x", "bogus": 1}}, error=True)
        out["session"] = await replies.call(client, "status", {"session": "no-such-session"}, error=True)
        from mcp.shared.exceptions import MCPError

        try:
            await replies.read(client, "logkit://configs/no-such-page")
        except MCPError as exc:
            out["resource"] = str(exc)
            replies.texts.append(out["resource"])
        return out

    out = serve(lab, body)
    replies.no_leaks()
    for name, text in out.items():
        assert "logkit: error:" in text and "fix:" in text, (name, text)
    assert "DR-ZZZZZ" in out["cite"] and "A99" in out["note"] and "not valid JSON" in out["todos"]
    assert "bogus" in out["draft"] and "no-such-page" in out["resource"]


def test_mcp_without_the_extra_says_how_to_install_it(tmp_path: Path) -> None:
    # a stand-in `mcp` that is not importable: the one error the base install gives
    shadow = tmp_path / "shadow"
    (shadow / "mcp").mkdir(parents=True)
    (shadow / "mcp" / "__init__.py").write_text("raise ModuleNotFoundError('No module named mcp', name='mcp')\n")
    import subprocess

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shadow), str(agents_kb.ROOT)])}
    done = subprocess.run([sys.executable, "-m", "logkit", "mcp"], env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and "pip install 'logkit[mcp]'" in done.stderr and "Traceback" not in done.stderr
