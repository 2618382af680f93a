"""SGLang's real benchmark client in the tests: its argv, its environment and a tiny offline tokenizer.

``python -m sglang.benchmark.serving`` (0.5.23) runs here for real: the lean SGLang install of the
venv, plus on the client's PYTHONPATH only its few dependencies and transformers
(requirements/sglang-bench-client.txt, installed by ``scripts/setup.sh --test`` into
``.venv/sglang-bench-client``) and the stand-in torchvision of tests/fake_torchvision (every import
succeeds, any call fails loudly). With ``--dataset-name random-ids`` it needs no download; the
tokenizer is a word-level one written at test time by :func:`tiny_tokenizer` (the ``tokenizers``
library's JSON format, a few kB), so nothing is fetched from a hub (``HF_HUB_OFFLINE=1``).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAKE_TORCHVISION = str(ROOT / "tests" / "fake_torchvision")
#: where setup.sh --test installs the client's packages (beside the venv's own site-packages)
CLIENT_PACKAGES = Path(sys.prefix) / "sglang-bench-client"
#: the words the stand-in server generates (logkit/demo/standin/fakeserver.py ``tokens``) and some filler
WORDS = ("the", "model", "said", "tokens", "here", "and", "more", "text", "alpha", "beta", "gamma", "delta")


def tiny_tokenizer(where: Path) -> Path:
    """A word-level tokenizer directory AutoTokenizer loads offline: tokenizer.json (the
    ``tokenizers`` library's own format: a WordLevel model split on whitespace) and
    tokenizer_config.json."""
    where.mkdir(parents=True, exist_ok=True)
    vocab = {"[UNK]": 0, **{w: i for i, w in enumerate(WORDS, 1)}}
    vocab |= {f"w{i}": len(WORDS) + 1 + i for i in range(100)}
    (where / "tokenizer.json").write_text(json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
        "pre_tokenizer": {"type": "WhitespaceSplit"}, "post_processor": None,
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},  # joins words with spaces
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}}))
    (where / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]", "model_max_length": 4096}))
    return where


def fake_server_argv(port: int, *extra: str) -> list[str]:
    """The stand-in SGLang server (logkit/demo/standin/fakeserver.py) on 127.0.0.1:``port``."""
    from logkit.demo import STANDIN

    script = STANDIN / "fakeserver.py"
    return [sys.executable, str(script), "--port", str(port), *extra]


@contextlib.contextmanager
def stand_in_server(*extra: str) -> Iterator[int]:
    """The stand-in server started on a free port and answering ``/ready``: its port; stopped after."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(fake_server_argv(port, *extra), stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=1)
                break
            except OSError:
                time.sleep(0.05)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def client_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of the client: the stand-in torchvision and the client's packages first on
    PYTHONPATH, no hub access."""
    if not (CLIENT_PACKAGES / "transformers").is_dir():
        raise RuntimeError(f"SGLang's benchmark client needs its packages in {CLIENT_PACKAGES}: "
                           "run bash scripts/setup.sh --test")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (FAKE_TORCHVISION, str(CLIENT_PACKAGES), env.get("PYTHONPATH")) if p)
    env |= {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
            "PYTHONWARNINGS": "ignore::UserWarning", **(extra or {})}
    return env


def client_argv(port: int, tokenizer: Path, *extra: str, num_prompts: int = 8, concurrency: int = 2,
                input_len: int = 16, output_len: int = 8, backend: str = "sglang") -> list[str]:
    """``python -m sglang.benchmark.serving`` against 127.0.0.1:``port``, a small random-ids load."""
    return [sys.executable, "-m", "sglang.benchmark.serving", "--backend", backend, "--host", "127.0.0.1",
            "--port", str(port), "--tokenizer", str(tokenizer), "--model", "fake/model",
            "--dataset-name", "random-ids", "--num-prompts", str(num_prompts), "--max-concurrency", str(concurrency),
            "--random-input-len", str(input_len), "--random-output-len", str(output_len), *extra]
