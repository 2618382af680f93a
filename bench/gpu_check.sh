#!/usr/bin/env bash
# Real GPU failures, recorded live through `logkit run` (issue 25; docs/gpu-check.md).
#   bash bench/gpu_check.sh --prepare   here (network): the wheels logkit needs that the GPU machine
#                                       lacks, into ./.whl (git-ignored), to carry there
#   bash bench/gpu_check.sh             every step (bench/gpu_steps/check.py); without a GPU each one
#                                       says "skipped: no GPU" and the script exits 0
# Variables: GPU_CHECK_DIR (work and sessions directory, emptied first; default bench/out/gpu-check),
# GPU_CHECK_PYTHON (the interpreter the steps run under; default python3, the one holding PyTorch,
# CuPy and Triton on the GPU machine), OUT (where the table, events.jsonl and the logs are copied).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'gpu_check: %s\n' "$*" >&2; }
die() { printf 'logkit: error: %s\n  fix: %s\n' "$1" "$2" >&2; exit 2; }

# What `logkit run` and `logkit classify` import that the GPU machine's image does not hold
# (/work/.library/device/KINDS.md lists what it has); the site builder's packages are not needed there.
CARRY=(pydantic pydantic-core annotated-types typing-inspection typing-extensions)
DEVICE_PYTHON=${GPU_CHECK_DEVICE_PYTHON:-3.12}

prepare() {
  [ -x .venv/bin/python ] || die "no .venv here to read the tested versions from" "bash scripts/setup.sh"
  # the versions tested here, from the one install that the pins in requirements/ produced
  local pins
  pins=$(.venv/bin/python -c 'import sys, importlib.metadata as md; print(" ".join(f"{n}=={md.version(n)}" for n in sys.argv[1:]))' "${CARRY[@]}")
  rm -rf .whl && mkdir .whl
  say "downloading ${pins} for CPython ${DEVICE_PYTHON} x86-64 into .whl"
  .venv/bin/python -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --python-version "$DEVICE_PYTHON" --implementation cp --platform manylinux_2_28_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl $pins \
    || die "pip could not download the wheels" "check the network, or the versions in .venv"
  say "ready: $(ls .whl | wc -l) wheels, $(du -sh .whl | cut -f1); carry [\".whl\"] (docs/gpu-check.md)"
}

case "${1:-}" in
  --prepare) prepare; exit 0 ;;
  "") ;;
  *) die "unknown argument '$1'" "bash bench/gpu_check.sh [--prepare]" ;;
esac

py=${GPU_CHECK_PYTHON:-python3}
work=${GPU_CHECK_DIR:-bench/out/gpu-check}
# emptied first, but only a directory this script made (it leaves .gpu_check in it) or an empty one
if [ -d "$work" ] && [ -n "$(ls -A "$work")" ] && [ ! -e "$work/.gpu_check" ]; then
  die "GPU_CHECK_DIR=$work is not empty and was not made by bench/gpu_check.sh" "name a new or empty directory"
fi
rm -rf "$work" && mkdir -p "$work" && touch "$work/.gpu_check"
# the real nvidia-smi decides, never an override; the sessions directory is the fresh one in $work
unset LOGKIT_GPU_ARCH LOGKIT_SESSIONS

if .venv/bin/python -c 'import logkit.events' 2>/dev/null; then
  lk_py=.venv/bin/python
elif compgen -G '.whl/*.whl' >/dev/null; then
  say "installing the carried wheels from .whl into $work/site (offline)"
  "$py" -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-index --no-deps --no-compile --no-cache-dir \
    --target "$work/site" .whl/*.whl || die "the carried wheels did not install" "bash bench/gpu_check.sh --prepare, then carry [\".whl\"]"
  export PYTHONPATH="$PWD/$work/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
  lk_py=$py
else
  lk_py=$py
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
"$lk_py" -c 'import logkit.events' 2>/dev/null \
  || die "logkit does not import under $lk_py (pydantic missing?)" "bash bench/gpu_check.sh --prepare here, then carry [\".whl\"]"
exec "$lk_py" bench/gpu_steps/check.py --python "$py" --work "$work"
