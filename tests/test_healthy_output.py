"""Healthy output is not a failure: real tools' output, run here, replayed through the classifier.

The corpus under tests/fixtures/logs is made of failure reports and server logs; the prose and
generic rows written from it (a crash told in prose, a bare exception line, a garbage run) could fire
on what healthy tools print around a launch. These are real processes run on this machine: pip, pytest
(tests named after failures, all passing), torch (tensors, ``collect_env``), ``mkdocs build -v``. Each
output must read ``incomplete`` (no verdict, no failure), whatever words it holds.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from logkit.capture.sglang.outcomes import classify_text

_PASSING = '''
def test_out_of_memory_is_reported(): assert True
def test_nccl_timeout_is_retried(): assert True
def test_cuda_error_no_kernel_image_message(): assert True
def test_garbage_output_is_flagged(): assert True
def test_server_hang_watchdog(): assert True
def test_killed_by_signal_9(): assert True
'''

_TORCH = ("import torch; torch.manual_seed(0); print(torch.__version__); print(torch.randn(6, 6));"
          " print(torch.cuda.is_available()); print(torch.arange(100)); print(torch.zeros(3, 3, dtype=torch.int64))")


def _commands(tmp: Path) -> dict[str, list[str]]:
    (tmp / "test_probe.py").write_text(_PASSING)
    site = tmp / "site"
    (site / "docs").mkdir(parents=True)
    (site / "mkdocs.yml").write_text("site_name: probe\n")
    (site / "docs" / "index.md").write_text("# Errors\n\nOOM, NCCL timeouts and CUDA errors are described here.\n")
    py = sys.executable
    return {
        "pip list -v": [py, "-m", "pip", "list", "-v"],
        "pip show -f pydantic": [py, "-m", "pip", "show", "-f", "pydantic"],
        "pytest -v (passing tests named after failures)": [py, "-m", "pytest", "-v", "-p", "no:cacheprovider",
                                                           str(tmp / "test_probe.py")],
        "torch tensors": [py, "-c", _TORCH],
        "torch collect_env": [py, "-m", "torch.utils.collect_env"],
        "mkdocs build -v": [py, "-m", "mkdocs", "build", "-v", "-f", str(site / "mkdocs.yml")],
    }


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    tmp = tmp_path_factory.mktemp("healthy")
    out = {}
    for name, argv in _commands(tmp).items():
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=tmp, timeout=120)
        assert done.returncode == 0, (name, done.stdout[-2000:])
        assert done.stdout.count(b"\n") >= 5, (name, done.stdout)
        out[name] = done.stdout
    return out


@pytest.mark.parametrize("name", ["pip list -v", "pip show -f pydantic", "pytest -v (passing tests named after failures)",
                                  "torch tensors", "torch collect_env", "mkdocs build -v"])
def test_a_healthy_tools_output_is_incomplete(outputs: dict[str, bytes], name: str) -> None:
    found = classify_text(outputs[name])
    assert found.status == "incomplete", (name, found.status, found.label, found.evidence)


@pytest.mark.parametrize("text", [
    # pytest --help wraps its --maxfail help onto an indented line ending in the bare word
    "  --maxfail=num         exit after first num failures or errors.\n"
    "  --strict-config       Any warnings encountered while parsing the `pytest`\n"
    "                        section of the configuration file raise errors.\n"
    "  --continue-on-collection-errors\n"
    "                        Force test execution even if collection errors occur.\n"
    "                        KeyboardInterrupt\n",
    # a condition, not a report
    "  --max-worker-restart=N  Maximum number of workers that can be restarted when crashed\n"
    "Restart the server if it crashes, or whether crashed workers are replaced once crashed.\n",
])
def test_help_columns_and_conditions_are_not_failures(text: str) -> None:
    found = classify_text(text)
    assert found.status == "incomplete", (found.status, found.label, found.evidence)


@pytest.mark.parametrize(("text", "status"), [
    ("Traceback (most recent call last):\n  File \"serve.py\", line 3, in <module>\n    time.sleep(60)\nKeyboardInterrupt\n",
     "interrupted"),
    ("[rank0]: Traceback (most recent call last):\n[rank0]:   File \"x.py\", line 1, in <module>\n[rank0]: KeyboardInterrupt\n",
     "interrupted"),
    ("sglang-1  | KeyboardInterrupt\n", "interrupted"),
    ("The server crashed when loading the second shard.\n", "other_crash"),
])
def test_the_real_texts_still_read_as_before(text: str, status: str) -> None:
    assert classify_text(text).status == status
