"""``logkit demo DIR``: the whole bring-up on stand-in servers, as a new user runs it (a real process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a sweep of five stand-in servers and a real mkdocs build (~20 s)

PY = sys.executable


def test_demo_records_a_sweep_a_decision_and_builds_the_site(tmp_path: Path) -> None:
    target = tmp_path / "demo"
    r = subprocess.run([PY, "-m", "logkit", "demo", str(target)], capture_output=True, text=True, timeout=300,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = r.stdout
    for shown in ("$ logkit session start", "$ logkit sweep", "arch_mismatch", "garbage", "oom", "works",
                  "$ logkit decide --from-sweep", "$ logkit build", "stand-ins", "no GPU was used"):
        assert shown in out, shown
    (session,) = [p for p in (target / "sessions").iterdir() if p.is_dir() and not p.name.startswith(".")]
    events = [json.loads(line) for line in (session / "events.jsonl").read_text().splitlines()]
    statuses = {e["status"] for e in events if e["kind"] == "outcome"}
    assert {"arch_mismatch", "garbage", "oom", "ready", "exit_ok"} <= statuses, statuses
    assert sum(1 for e in events if e["kind"] == "metric") >= 20
    (decision,) = [e for e in events if e["kind"] == "decision"]
    assert any(o.get("chosen") and "flashinfer_cutlass" in o["name"] for o in decision["options"])
    site = target / "site" / "out"
    assert (site / "index.html").is_file() and (site / "decisions" / decision["decision_id"] / "index.html").is_file()
    assert list(site.glob("sweeps/SW-*/index.html")) and list(site.glob("backends/*flashinfer-trtllm*/index.html"))
    again = subprocess.run([PY, "-m", "logkit", "demo", str(target)], capture_output=True, text=True, timeout=60)
    assert again.returncode == 2 and "exists and is not empty" in again.stderr and "fix:" in again.stderr
