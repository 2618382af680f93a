#!/usr/bin/env bash
# Set up logkit from nothing: a virtual environment in .venv with logkit and what it needs.
#   bash scripts/setup.sh          runtime only (enough for `logkit build`)
#   bash scripts/setup.sh --test   also the test tools, the fast redaction engines (logkit[fast]: Hyperscan on
#                                  x86, RE2), the lean SGLang install and Debian's chromium
set -euo pipefail
cd "$(dirname "$0")/.."
want_test=0
[ "${1:-}" = "--test" ] && want_test=1

py=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$py" -m venv .venv
fi
pip() { .venv/bin/python -m pip --disable-pip-version-check -q "$@"; }

if [ "$want_test" = 1 ]; then
  pip install -e '.[test,fast]'  # the tests run the redaction with every engine installed, stdlib too
  # SGLang, lean: its declared dependencies pull multi-GB CUDA builds, so it is installed with
  # --no-deps next to the few small packages its modules import. All pins live in that one file.
  pip install --no-deps -r requirements/sglang-lean.txt
  if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    if command -v apt-get >/dev/null; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
    fi
  fi
else
  pip install -e .
fi
