"""The benchmark output FIFO: the client's record is redacted before anything reaches disk.

Real FIFOs, real writer processes, and ``logkit run`` on the stand-in benchmark client
(logkit/demo/standin/fake_sglang/sglang/bench_serving.py, which appends its record with ``open(path, "a")``
exactly like SGLang's) against a real loopback HTTP server whose ``/server_info`` carries a planted
``api_key``/``admin_api_key``.
"""

from __future__ import annotations

import http.server
import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from logkit.capture.redact import Redactor
from logkit.capture.sglang.bench import parse_file, redact_record
from logkit.capture.sglang.fifo import FifoSink

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
FAKE = str(ROOT / "logkit" / "demo" / "standin" / "fake_sglang")
TOKEN = "planted-Xk93mQ7vLw2pR5tZ"
ADMIN = "planted-admin-Hq4nV8cJ1sY6"


def fifos_under(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if stat.S_ISFIFO(p.lstat().st_mode)]


def assert_no_token(root: Path) -> None:
    files = [p for p in root.rglob("*") if p.is_file()]
    assert files
    for p in files:
        data = p.read_bytes()
        assert TOKEN.encode() not in data and ADMIN.encode() not in data, f"planted token in {p}"


WRITER = """
import json, sys
rec = {"completed": 7, "output_throughput": 1.5, "server_info": {"api_key": sys.argv[2],
       "admin_api_key": sys.argv[3], "attention_backend": "fa3"},
       "generated_texts": ["x" * 1000 for _ in range(int(sys.argv[4]))]}
with open(sys.argv[1], "a") as file:
    file.write(json.dumps({"completed": 1, "server_info": {"api_key": sys.argv[2]}}) + "\\n")
    file.write(json.dumps(rec) + "\\n")
print(len(json.dumps(rec)))
"""


def test_multi_megabyte_record_from_another_process(tmp_path: Path) -> None:
    final = tmp_path / "logs" / "bench.jsonl"
    redactor = Redactor.for_run({}, [])
    sink = FifoSink.create(final, lambda line: redact_record(line, redactor))
    assert sink.fifo == final and stat.S_ISFIFO(final.lstat().st_mode) and sink.tmpdir is None
    # 6000 texts of 1 kB: a 6 MB record, far past the 64 kB pipe buffer; the writer must not block.
    w = subprocess.run([PY, "-c", WRITER, str(sink.fifo), TOKEN, ADMIN, "6000"], capture_output=True, text=True,
                       timeout=60)
    assert w.returncode == 0, w.stderr
    assert int(w.stdout) > 6_000_000
    sink.close()
    assert not sink.problems and sink.records == 2
    assert final.is_file() and not fifos_under(tmp_path)
    assert [p.name for p in final.parent.iterdir()] == ["bench.jsonl"]  # no .part left
    lines = final.read_text().splitlines()
    assert len(lines) == 2
    rec = json.loads(lines[1])
    assert rec["server_info"] == {"api_key": "[REDACTED]", "admin_api_key": "[REDACTED]", "attention_backend": "fa3"}
    assert len(rec["generated_texts"]) == 6000 and rec["generated_texts"][0] == "x" * 1000
    assert parse_file(final).metrics == {"completed": 7.0, "output_throughput": 1.5}
    assert_no_token(tmp_path)


def test_record_cut_short_and_nothing_written(tmp_path: Path) -> None:
    redactor = Redactor.for_run({}, [])
    sink = FifoSink.create(tmp_path / "a.jsonl", lambda line: redact_record(line, redactor))
    with open(sink.fifo, "a") as fh:  # a client killed mid-write: no newline, not valid JSON
        fh.write('{"completed": 3, "api_key": "' + TOKEN + '", "server_inf')
    sink.close()
    assert sink.records == 1 and not fifos_under(tmp_path)
    assert TOKEN not in (tmp_path / "a.jsonl").read_text()
    empty = FifoSink.create(tmp_path / "b.jsonl", lambda line: line)
    empty.close()
    empty.close()  # idempotent
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl"]


def test_session_without_fifos_uses_a_private_temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.mkfifo
    logs = tmp_path / "logs"

    def mkfifo(path: os.PathLike[str] | str, mode: int = 0o666) -> None:
        if Path(path).parent == logs:
            raise OSError(95, "Operation not supported")
        real(path, mode)

    monkeypatch.setattr(os, "mkfifo", mkfifo)
    sink = FifoSink.create(logs / "bench.jsonl", lambda line: line.upper())
    assert sink.tmpdir is not None and sink.fifo.parent == sink.tmpdir and "Operation not supported" in sink.where
    assert stat.S_IMODE(sink.tmpdir.stat().st_mode) == 0o700
    subprocess.run([PY, "-c", f"open({str(sink.fifo)!r}, 'a').write('{{\"a\": 1}}\\n')"], check=True, timeout=30)
    sink.close()
    assert not sink.tmpdir.exists()
    assert (logs / "bench.jsonl").read_text() == '{"A": 1}\n'


class _Info(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        body = json.dumps({"version": "0.5.23", "attention_backend": "flashinfer", "api_key": TOKEN,
                           "admin_api_key": ADMIN, "tp_size": 1}).encode()
        self.send_response(200 if self.path == "/server_info" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def info_port() -> Iterator[int]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Info)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def _logkit(sessions: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "logkit", "--sessions", str(sessions), *args], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize("details", [False, True])
def test_logkit_run_bench_secret_never_on_disk(tmp_path: Path, info_port: int, details: bool) -> None:
    sessions = tmp_path / "sessions"
    assert _logkit(sessions, "session", "start", "fifo").returncode == 0
    extra = ["--output-details", "--num-prompts", "3000", "--random-output-len", "200"] if details else []
    r = _logkit(sessions, "run", "--yes", "--", "env", f"PYTHONPATH={FAKE}", PY, "-m", "sglang.bench_serving",
                "--backend", "sglang", "--host", "127.0.0.1", "--port", str(info_port), "--dataset-name",
                "random-ids", "--max-concurrency", "4", *extra)
    assert r.returncode == 0, r.stderr
    (ev_file,) = sessions.glob("*/events.jsonl")
    evs = [json.loads(line) for line in ev_file.read_text().splitlines()]
    (att,) = [e for e in evs if e["kind"] == "attempt"]
    out_file = Path(att["argv"][att["argv"].index("--output-file") + 1])
    assert out_file.parent == ev_file.parent / "logs" and att["bench"]["output_file"] == str(out_file)
    metrics = {m["name"]: m["value"] for m in evs if m["kind"] == "metric"}
    assert metrics["output_throughput"] == 62.86 and metrics["completed"] == 32
    assert not any(k in metrics for k in ("generated_texts", "itls"))
    (outcome,) = [e for e in evs if e["kind"] == "outcome"]
    assert outcome["status"] == "exit_ok" and "from the jsonl result" in outcome["label"], outcome
    assert not [e for e in evs if e["kind"] == "note"]
    rec = json.loads(out_file.read_text())
    assert rec["server_info"]["api_key"] == "[REDACTED]" and rec["server_info"]["admin_api_key"] == "[REDACTED]"
    assert rec["server_info"]["attention_backend"] == "flashinfer"
    if details:
        assert out_file.stat().st_size > 3_000_000 and len(rec["generated_texts"]) == 3000
    assert not fifos_under(tmp_path)
    assert_no_token(sessions)


def test_plan_falls_back_to_a_scrubbed_file_when_no_fifo_can_be_made(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from logkit.capture.sglang import plan

    argv = [PY, "-m", "sglang.bench_serving", "--port", "1"]
    p = plan(argv, {}, {"session_dir": str(tmp_path)})
    assert p is not None and p.watcher.sink is not None
    handed = p.argv[p.argv.index("--output-file") + 1]
    assert handed == p.bench.output_file and stat.S_ISFIFO(Path(handed).lstat().st_mode)
    p.watcher.sink.close()
    assert not fifos_under(tmp_path)

    def no_fifo(*_: object) -> None:
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(os, "mkfifo", no_fifo)
    p = plan(argv, {}, {"session_dir": str(tmp_path)})
    assert p.watcher.sink is None and p.watcher.owned
    assert p.argv[p.argv.index("--output-file") + 1] == p.bench.output_file
    assert any("no FIFO possible" in n and "Operation not permitted" in n for n in p.notes), p.notes
    assert p.watcher.fallback in p.notes
    user = plan([*argv, "--output-file", str(tmp_path / "mine.jsonl")], {}, {"session_dir": str(tmp_path)})
    assert user.argv is None and user.watcher.sink is None and not user.watcher.owned  # the user's file: left as is
