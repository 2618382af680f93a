"""A digest of the classifier's answer on every corpus log, to show a change kept every answer.

    PYTHONPATH=$PWD .venv/bin/python bench/answers_digest.py OUT.txt

Writes one line per corpus log (its path under tests/fixtures/logs and a hash of its status, label,
evidence lines and readiness) to OUT.txt and prints the count and one digest of them all. Run it before
and after a change and `diff` the two files: no answer is printed, so a blind part's misses stay unread.
"""

from __future__ import annotations

import hashlib
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from logkit.capture.sglang.outcomes import classify_file  # noqa: E402


def main() -> int:
    logs = ROOT / "tests/fixtures/logs"
    out = {}
    for manifest in sorted(logs.glob("**/manifest.toml")):
        for entry in tomllib.loads(manifest.read_text())["log"]:
            path = manifest.parent / entry["file"]
            c = classify_file(path)
            answer = repr((c.status, c.label, c.evidence, c.ready)).encode()
            out[str(path.relative_to(logs))] = hashlib.sha1(answer).hexdigest()[:12]
    Path(sys.argv[1]).write_text("".join(f"{k} {v}\n" for k, v in sorted(out.items())))
    print(len(out), "logs, digest", hashlib.sha1(repr(sorted(out.items())).encode()).hexdigest()[:12])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
