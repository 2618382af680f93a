#!/usr/bin/env bash
# Set up logkit from nothing: a virtual environment in .venv with logkit and what it needs.
#   bash scripts/setup.sh          runtime only (enough for `logkit build`)
#   bash scripts/setup.sh --test   also the test tools, the lean SGLang install and Debian's chromium
# Each step says what it installs and how long it took; pip's own progress is shown on a terminal.
set -euo pipefail
cd "$(dirname "$0")/.."
want_test=0
[ "${1:-}" = "--test" ] && want_test=1

say() { printf 'setup: %s\n' "$*" >&2; }
step_start=$SECONDS
done_step() { say "  done in $((SECONDS - step_start)) s"; step_start=$SECONDS; }
# pip's progress bars on a terminal; one line per package otherwise (CI logs stay short)
if [ -t 2 ]; then pip_out=(); else pip_out=(-q); fi
pip() { .venv/bin/python -m pip --disable-pip-version-check "${pip_out[@]}" "$@"; }

py=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  say "creating the virtual environment .venv ($("$py" --version 2>&1))"
  "$py" -m venv .venv
  done_step
fi

if [ "$want_test" = 1 ]; then
  say "installing logkit (editable) with its runtime and test dependencies: pydantic, jinja2, mkdocs-material, pandas, altair, vl-convert, pytest, hypothesis, selenium, pyarrow, and the MCP SDK of the mcp extra (requirements/test.txt, requirements/mcp.txt; 1-3 min)"
  pip install -e '.[test,mcp]'
  done_step
  # SGLang, lean: its declared dependencies pull multi-GB CUDA builds, so it is installed with
  # --no-deps next to the few small packages its modules import. All pins live in that one file.
  say "installing SGLang 0.5.23 lean (--no-deps) with torch 2.13.0 CPU and the small packages its flag parser imports: requirements/sglang-lean.txt (2-5 min)"
  pip install --no-deps -r requirements/sglang-lean.txt
  done_step
  # SGLang's real benchmark client for the tests: its packages (transformers above all) in a folder of
  # their own that only the client's PYTHONPATH names (tests/benchclient.py), so that logkit's parse
  # of every launch (import sglang.srt.server_args) does not import transformers too.
  say "installing SGLang's benchmark client's packages (transformers, tokenizers, datasets, pyarrow) into .venv/sglang-bench-client: requirements/sglang-bench-client.txt (under a minute)"
  pip install --no-deps --upgrade --target .venv/sglang-bench-client -r requirements/sglang-bench-client.txt
  done_step
  if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    apt=(apt-get)
    if [ "$(id -u)" != 0 ]; then
      if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        apt=(sudo apt-get)
      else
        apt=()
      fi
    fi
    if ! command -v apt-get >/dev/null; then
      say "no apt-get here: install chromium and chromedriver yourself; the browser tests skip without them"
    elif [ ${#apt[@]} -eq 0 ]; then
      say "chromium and chromedriver are missing and installing them needs root: run"
      say "  sudo apt-get install -y chromium chromium-driver"
      say "the browser tests skip until then"
    else
      say "installing Debian's chromium and chromium-driver with ${apt[*]} (1-2 min)"
      "${apt[@]}" update -qq && DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y -qq chromium chromium-driver >/dev/null
      done_step
    fi
  fi
else
  say "installing logkit (editable) with its runtime dependencies: pydantic, jinja2, mkdocs-material, pandas, altair, vl-convert (1-3 min)"
  pip install -e .
  done_step
fi
say "ready: .venv/bin/logkit"
