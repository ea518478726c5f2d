#!/usr/bin/env bash
# The GPU check (one command, at most 10 minutes, no network, no shared datasets): the test suite
# on the GPU (tests use --device auto), then one epoch of a CRF tagger, PretRand and the parser on
# CPU and GPU with their agreement, speed-up and GPU peak memory (scripts/gpu_check.py).
# Needs .gpu-check/ (made here by scripts/gpu_check_bundle.sh; carry it to the GPU machine).
# On a machine without a GPU it says so and runs the CPU half only.
#
# seqtransfer and what it needs beyond the image are installed from the carried wheels alone
# (pip --no-index) into $GPU_CHECK_WORK/site (default /tmp/gpu-check/site), which goes first on
# PYTHONPATH: the epochs run the wheel's code, built from this tree (a bundle built from other
# sources is refused); the test suite reads src/ before it, as CI does. A second call on the same
# machine finds the same wheels there and reuses them; other wheels are installed afresh. Which
# package was installed where, and where each one is imported from, goes to
# $GPU_CHECK_WORK/installed.json and $OUT/gpu-check-install.json; the report to $OUT/gpu-check.json,
# rewritten after each model and device. A second call trains afresh (the runs are removed first).
# The Python is $PYTHON, else this checkout's .venv if it has one, else python3.
# --skip-tests: the epochs only. A failing test makes the call fail, after the epochs have run.
set -euo pipefail
cd "$(dirname "$0")/.."
TESTS=1
case "${1:-}" in
  -h|--help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; exit 0 ;;
  --skip-tests) TESTS=0 ;;  # only the epochs on each device (a second call, when the suite has run)
esac
if [ -z "${PYTHON:-}" ]; then
  PYTHON=$(command -v python3)
  [ -x .venv/bin/python ] && PYTHON=.venv/bin/python
fi
WORK="${GPU_CHECK_WORK:-/tmp/gpu-check}"
OUTPUT="${OUT:-$WORK}"
if [ ! -d .gpu-check/data ] || [ ! -f .gpu-check/wheels/source-digest ]; then
  echo "gpu_check: .gpu-check/ is missing or incomplete: run scripts/gpu_check_bundle.sh first (where the datasets are)" >&2; exit 2
fi
source_digest() {  # as scripts/gpu_bench_bundle.sh computes it
  find src pyproject.toml -type f ! -path '*/__pycache__/*' ! -path '*.egg-info/*' ! -name '*.pyc' ! -name '*.tmp' -print0 \
    | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16
}
if [ "$(source_digest)" != "$(cat .gpu-check/wheels/source-digest)" ]; then
  echo "gpu_check: .gpu-check/ holds a seqtransfer wheel built from other sources than src/: run scripts/gpu_check_bundle.sh again" >&2; exit 2
fi
mkdir -p "$WORK" "$OUTPUT"
wheels=.gpu-check/wheels target="$WORK/site"
digest=$(cd "$wheels" && sha256sum -- *.whl | sha256sum | cut -c1-16)
if [ "$(cat "$target/.wheels-digest" 2>/dev/null)" = "$digest" ]; then
  reused=1; echo "== seqtransfer's wheels: already installed in $target by an earlier call (the same wheels)"
else
  reused=0; echo "== installing seqtransfer's wheels into $target (no index)"
  rm -rf "$target"
  "$PYTHON" -m pip --isolated --disable-pip-version-check install -q --no-index --find-links "$wheels" --no-deps --no-compile --no-cache-dir \
    --target "$target" "$wheels"/*.whl
  echo "$digest" > "$target/.wheels-digest"
fi
export PYTHONPATH="$target${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
# The record: what is in the target, and where each package is imported from (a carried one must come from there).
"$PYTHON" scripts/install_record.py "$WORK/installed.json" seqtransfer "$target" "$digest" "$reused" seqtransfer ufal.chu_liu_edmonds seqeval torch numpy yaml safetensors tqdm matplotlib
[ "$OUTPUT" = "$WORK" ] || cp "$WORK/installed.json" "$OUTPUT/gpu-check-install.json"
failed=0
if [ "$TESTS" = 0 ]; then
  echo "== test suite skipped (--skip-tests)"
elif "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  echo "== test suite on the GPU (device auto)"
  # The tests read seqtransfer from src/ (as CI does, where it is installed editable: some check the clone's
  # layout), and what it needs beyond the image from the carried wheels.
  PYTHONPATH="$PWD/src:$PYTHONPATH" "$PYTHON" -m pytest -q -p no:cacheprovider tests || failed=1  # the epochs below run anyway
else
  echo "== no GPU on this machine: the CPU half only"
fi
echo "== one epoch on each device"
rm -rf "$WORK/runs"  # a second call trains afresh (a finished run directory is never overwritten)
"$PYTHON" scripts/gpu_check.py --data .gpu-check/data --output "$WORK/runs" --json "$OUTPUT/gpu-check.json" || failed=1
exit "$failed"
