"""``logkit show``, ``logkit compare`` and ``logkit export`` on attempts recorded by the real ``logkit run``.

Two launches of the stand-in server (``python -m sglang.launch_server`` through
logkit/demo/standin/fake_sglang, flags parsed by SGLang's own ServerArgs) that run out of memory at
once, on different ports and MoE backends; every command runs as a real process.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
FAKE = str(ROOT / "logkit" / "demo" / "standin" / "fake_sglang")

pytestmark = [pytest.mark.sglang, pytest.mark.slow]  # two real launches of the stand-in server (~20 s)


def logkit(sessions: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "logkit", "--sessions", str(sessions), *args], capture_output=True, text=True,
                          timeout=120, env=env)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    sessions = tmp_path_factory.mktemp("inspect") / "sessions"
    assert logkit(sessions, "session", "start", "inspect").returncode == 0
    env = {**os.environ, "FAKE_SGLANG_MODE": "oom", "LOGKIT_GPU_ARCH": "SM120"}
    for port, moe in ((31001, "triton"), (31002, "flashinfer_cutlass")):
        r = logkit(sessions, "run", "--yes", "--", "env", f"PYTHONPATH={FAKE}", PY, "-m", "sglang.launch_server",
                   "--model-path", "fake/model", "--port", str(port), "--moe-runner-backend", moe, env=env)
        assert r.returncode != 0 and "oom" in r.stderr, r.stderr
    (sid,) = [p.name for p in sessions.iterdir() if p.is_dir()]
    return sessions, sid


def test_show_prints_one_attempt_whole(recorded: tuple[Path, str]) -> None:
    sessions, sid = recorded
    r = logkit(sessions, "show", "A1")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith(f"{sid}/A1  launch")
    assert "--moe-runner-backend triton" in out and "moe_runner_backend = triton" in out
    assert "outcome: oom" in out and "out of memory" in out.lower()
    assert f"log: {sessions / sid / 'logs' / 'A1.log'}" in out and "last " in out
    same = logkit(sessions, "show", f"{sid}/A1", "--json")
    data = json.loads(same.stdout)
    assert data["attempt"] == f"{sid}/A1" and data["outcome"]["status"] == "oom" and data["tail"]
    bad = logkit(sessions, "show", "A9")
    assert bad.returncode != 0 and f"no attempt A9 in session {sid}" in bad.stderr and "fix" in bad.stderr


def test_compare_leaves_the_port_out_of_the_configuration(recorded: tuple[Path, str]) -> None:
    sessions, _sid = recorded
    r = logkit(sessions, "compare", "A1", "A2")
    assert r.returncode == 0, r.stderr
    assert "moe_runner_backend: triton -> flashinfer_cutlass" in r.stdout
    assert "port" not in r.stdout
    c = json.loads(logkit(sessions, "compare", "A1", "A2", "--json").stdout)
    assert c["configuration"] == {"moe_runner_backend": ["triton", "flashinfer_cutlass"]}
    assert [o[0] for o in c["outcome"]] == ["oom", "oom"]


def test_export_tables_in_three_formats(recorded: tuple[Path, str], tmp_path: Path) -> None:
    sessions, sid = recorded
    r = logkit(sessions, "export")
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert [(x["session"], x["attempt"], x["status"]) for x in rows] == [(sid, "A1", "oom"), (sid, "A2", "oom")]
    cells = [json.loads(line) for line in logkit(sessions, "export", "--what", "matrix", "--format", "jsonl").stdout.splitlines()]
    moe = {c["value"]: c for c in cells if c["axis"] == "moe_runner_backend"}
    assert moe["triton"]["state"] == "refuted" and moe["triton"]["oom"] == 1 and moe["triton"]["latest"] == f"{sid}/A1"
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    out = tmp_path / "metrics.parquet"
    assert logkit(sessions, "export", "--what", "attempts", "--format", "parquet", "--out", str(out)).returncode == 0
    frame = pd.read_parquet(out)
    assert list(frame["attempt"]) == ["A1", "A2"] and "configuration" in frame.columns
    refused = logkit(sessions, "export", "--format", "parquet")
    assert refused.returncode != 0 and "--out" in refused.stderr
