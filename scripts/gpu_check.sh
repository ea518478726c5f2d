#!/usr/bin/env bash
# The GPU check (one command, at most 10 minutes, no network, no shared datasets): the test suite
# on the GPU (tests use --device auto), then one epoch of a CRF tagger, PretRand and the parser on
# CPU and GPU with their agreement, speed-up and GPU peak memory (scripts/gpu_check.py).
# Needs .gpu-check/ (made here by scripts/gpu_check_bundle.sh; carry it to the GPU machine).
# On a machine without a GPU it says so and runs the CPU half only.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-$(command -v python3)}"
[ -x .venv/bin/python ] && [ -z "${PYTHON_FROM_ENV:-}" ] && PYTHON=.venv/bin/python
if [ ! -d .gpu-check/data ]; then
  echo "gpu_check: .gpu-check/ is missing: run scripts/gpu_check_bundle.sh first (where the datasets are)" >&2; exit 2
fi
if ! "$PYTHON" -c "import ufal.chu_liu_edmonds" 2>/dev/null; then  # a bare GPU image: install the carried wheels
  "$PYTHON" -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --no-cache-dir --upgrade --target /tmp/site .gpu-check/wheels/*
  export PYTHONPATH="/tmp/site:${PYTHONPATH:-}"
fi
export PYTHONPATH="$PWD/src:${PYTHONPATH:-}" PYTHONUNBUFFERED=1
if "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  echo "== test suite on the GPU (device auto)"
  "$PYTHON" -m pytest -q -x -p no:cacheprovider tests || exit 1
else
  echo "== no GPU on this machine: the CPU half only"
fi
echo "== one epoch on each device"
"$PYTHON" scripts/gpu_check.py --data .gpu-check/data --output "${OUT:-/tmp}/gpu-check"
