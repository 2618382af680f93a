"""``logkit hook pre-launch`` and ``logkit hook todo`` as processes, fed the JSON Claude Code sends its
hooks (its documented PreToolUse / PostToolUse input: session_id, transcript_path, cwd,
permission_mode, hook_event_name, tool_name, tool_input, tool_use_id; PostToolUse adds
tool_response). Exit 2 blocks the tool call (stderr is what the agent reads); any other failure
must exit 1, which blocks nothing.

The knowledge base: a real ``logkit run`` of the stand-in server with ``flashinfer_trtllm`` MoE on a
stand-in SM120 nvidia-smi, which crashed (tests/agents_kb.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import agents_kb

pytestmark = pytest.mark.sglang

LAUNCH = "python -m sglang.launch_server --model-path fake/model --tp 1 --moe-runner-backend"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("hooks")
    env = agents_kb.build(tmp, working=False)
    return {"env": env, "tmp": tmp, "sessions": tmp / "sessions"}


def call(tool: str, tool_input: dict[str, Any], event: str = "PreToolUse", **extra: Any) -> str:
    """A hook input as Claude Code writes it."""
    return json.dumps({"session_id": "abc123", "transcript_path": "/home/u/.claude/projects/p/abc123.jsonl",
                       "cwd": "/home/u/p", "permission_mode": "default", "hook_event_name": event,
                       "tool_name": tool, "tool_input": tool_input, "tool_use_id": "toolu_01ABC", **extra})


def hook(lab: dict[str, Any], which: str, stdin: str | bytes, **env: str) -> subprocess.CompletedProcess[bytes]:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return subprocess.run([sys.executable, "-m", "logkit", "hook", which], input=data, capture_output=True,
                          env={**lab["env"], **env}, cwd=lab["tmp"], timeout=60)


def bash(command: str) -> str:
    return call("Bash", {"command": command, "description": "Start the server", "timeout": 120000})


@pytest.mark.parametrize("command", [
    f"{LAUNCH} flashinfer_trtllm --port 30000 --api-key {agents_kb.SECRET}",
    f"logkit run -- {LAUNCH} flashinfer_trtllm",
    f"cd /srv/glm && CUDA_VISIBLE_DEVICES=0 nohup {LAUNCH} flashinfer_trtllm > server.log 2>&1",
    f"bash -c 'source .venv/bin/activate; {LAUNCH} flashinfer_trtllm'",
    f"python -m logkit run --label try-trtllm -- {LAUNCH} flashinfer_trtllm",
    f"LOGKIT_SESSIONS=sessions uv run logkit run -- {LAUNCH} flashinfer_trtllm",
])
def test_a_refuted_launch_is_blocked_with_the_evidence(lab: dict[str, Any], command: str) -> None:
    done = hook(lab, "pre-launch", bash(command))
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert "flashinfer_trtllm MoE crashed on SM120 in 2026-12-01-glm A1 (arch_mismatch)" in err
    assert "evidence: 2026-12-01-glm/A1 ended arch_mismatch" in err and "fix:" in err
    assert done.stdout == b"" and agents_kb.SECRET not in err


@pytest.mark.parametrize("prefix", ["", "env HF_HOME=/data ", "uv run "])
def test_logkit_run_yes_is_the_explicit_override(lab: dict[str, Any], prefix: str) -> None:
    done = hook(lab, "pre-launch", bash(f"{prefix}logkit run --yes -- {LAUNCH} flashinfer_trtllm"))
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


def test_the_same_launch_on_another_architecture_passes(lab: dict[str, Any]) -> None:
    done = hook(lab, "pre-launch", bash(f"logkit run -- {LAUNCH} flashinfer_trtllm"), LOGKIT_GPU_ARCH="10.0")
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


def test_an_unwrapped_launch_gets_one_line_suggesting_logkit_run(lab: dict[str, Any]) -> None:
    done = hook(lab, "pre-launch", bash(f"{LAUNCH} triton --api-key {agents_kb.SECRET}"))
    assert done.returncode == 0 and done.stderr == b""
    (line,) = done.stdout.decode().splitlines()
    out = json.loads(line)["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse"
    assert out["additionalContext"].startswith("logkit: this SGLang launch is not recorded; run it as `logkit run -- ")
    assert agents_kb.SECRET not in done.stdout.decode()


@pytest.mark.parametrize("stdin", [
    bash("ls -la && git status"),
    bash(f"logkit run -- {LAUNCH} triton"),
    bash("python -m sglang.bench_serving --backend sglang --num-prompts 8"),
    bash("pip show sglang"),
    bash(f"logkit run --grace -- {LAUNCH} flashinfer_trtllm"),  # a bad logkit run line: logkit run says so
    bash(f"logkit run --help -- {LAUNCH} triton"),
    call("Write", {"file_path": "/home/u/p/notes.md", "content": "sglang notes"}),
    call("Read", {"file_path": "/home/u/p/server.log"}),
])
def test_anything_else_passes_silently(lab: dict[str, Any], stdin: str) -> None:
    done = hook(lab, "pre-launch", stdin)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


@pytest.mark.parametrize("stdin,says", [
    ("", "not valid JSON"),
    ('{"tool_name": "Bash", "tool_input": {"command": "python -m sglang.launch_server', "not valid JSON"),
    ('["Bash"]', "not a tool call"),
    ('{"tool_name": "Bash", "tool_input": "python -m sglang.launch_server"}', "not a tool call"),
    (b"\xff\xfe{}", "not UTF-8"),
])
def test_malformed_input_is_a_clear_error_that_blocks_nothing(lab: dict[str, Any], stdin: str | bytes,
                                                              says: str) -> None:
    for which in ("pre-launch", "todo"):
        done = hook(lab, which, stdin)
        err = done.stderr.decode()
        assert done.returncode == 1, err  # 2 would block the agent's tool call
        assert err.startswith(f"logkit: error: logkit hook {which}: ") and says in err and "fix:" in err
        assert "Traceback" not in err


def test_todo_write_is_recorded_as_a_snapshot_matched_to_hypotheses(lab: dict[str, Any]) -> None:
    todos = [{"content": "H1: retry flashinfer_trtllm MoE with the SM120 build", "status": "in_progress",
              "activeForm": "Retrying flashinfer_trtllm"},
             {"content": "benchmark triton MoE at concurrency 64", "status": "pending", "activeForm": "Benchmarking"}]
    done = hook(lab, "todo", call("TodoWrite", {"todos": todos}, event="PostToolUse",
                                  tool_response={"oldTodos": [], "newTodos": todos}))
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), done.stderr
    status = json.loads(subprocess.run([sys.executable, "-m", "logkit", "status", "--json"], env=lab["env"],
                                       capture_output=True, text=True, check=True).stdout)
    assert status["todo"] == [
        {"content": todos[0]["content"], "status": "in_progress", "priority": None, "hypothesis": "H1"},
        {"content": todos[1]["content"], "status": "pending", "priority": None, "hypothesis": None},
    ]
    # a call of another tool is not a todo list: nothing recorded
    other = hook(lab, "todo", call("Bash", {"command": "ls"}, event="PostToolUse"))
    assert (other.returncode, other.stdout, other.stderr) == (0, b"", b"")


def test_todo_without_a_session_or_with_a_bad_item_says_the_fix(lab: dict[str, Any], tmp_path: Path) -> None:
    bad = hook(lab, "todo", call("TodoWrite", {"todos": [{"status": "pending"}]}, event="PostToolUse"))
    assert bad.returncode == 1 and b'has no "content" text' in bad.stderr and b"fix:" in bad.stderr
    empty = tmp_path / "sessions"
    empty.mkdir()
    none = hook(lab, "todo", call("TodoWrite", {"todos": [{"content": "x"}]}, event="PostToolUse"),
                LOGKIT_SESSIONS=str(empty))
    assert none.returncode == 1 and b"no current session" in none.stderr and b"fix:" in none.stderr


@pytest.mark.parametrize("command", ["ls -la", f"{LAUNCH} flashinfer_trtllm"])
def test_the_hook_loads_neither_pydantic_nor_the_mcp_sdk(lab: dict[str, Any], command: str) -> None:
    # what a hook run before every shell command imports (its time: bench/bench_hook.py), the index
    # up to date (a session line appended since is validated once, with pydantic, by whoever reads first)
    hook(lab, "pre-launch", bash(command))
    probe = ("import sys\nfrom logkit.cli import main\nrc = main(['hook', 'pre-launch'])\n"
             "print(sorted(m for m in ('pydantic', 'mcp', 'pandas', 'jinja2') if m in sys.modules), file=sys.stderr)\n"
             "sys.exit(rc)\n")
    done = subprocess.run([sys.executable, "-c", probe], input=bash(command).encode(), capture_output=True,
                          env=lab["env"], cwd=lab["tmp"], timeout=60)
    assert done.stderr.decode().splitlines()[-1] == "[]", done.stderr
