#!/usr/bin/env bash
# The GPU scripts' dry run on this CPU, as they would run on a bare GPU machine (issue 51, point 2).
# Run it before any GPU call: the last call that skipped it lost its speed figures to a bug it catches.
#   1. a clean virtual environment holding only packages the GPU image has (the device library's
#      KINDS.md list; versions from its pip-list row where it gives them), with torch 2.13.0's CPU
#      wheel in place of the image's torch 2.11 + CUDA, and pytest for gpu_check.sh's suite;
#   2. the bundles, built here for this Python (scripts/gpu_check_bundle.sh, scripts/gpu_bench_bundle.sh
#      --python-version of this Python; they read the datasets);
#   3. a copy of the working tree as the device tool sends it (tracked files and untracked ones git
#      does not ignore) with .gpu-check/ and .gpu-bench/ carried, run with no $SEQTRANSFER_DATA, no
#      src/ on the path and pip told not to use an index;
#   4. scripts/gpu_check.sh (--skip-tests: the epochs only), then scripts/gpu_bench.sh --device cpu
#      --quick --time-budget SECONDS, each twice (a second call must reuse the first's installs), and
#      a check that every JSON they wrote holds a training speed for every tool (benchmarks/budget.py
#      keeps a killed runner's).
# Usage: bash scripts/gpu_dry_run.sh [--skip-tests] [--time-budget 400] [--tools "flair encoder supar"] [--work /tmp/gpu-dry-run]
# The venv is made once and reused (remove WORK/venv for a fresh one). It is not a timing: the CPU
# figures it prints mean nothing, other jobs may run beside it. gpu_bench.sh's exit status is shown
# but not required: on a CPU some tools are cut or killed by the budget, which is part of what is
# checked (their rows must still hold a training speed).
set -euo pipefail
cd "$(dirname "$0")/.."
SKIP_TESTS=() BUDGET=400 TOOLS="flair encoder supar" WORK=/tmp/gpu-dry-run
while [ $# -gt 0 ]; do
  case "$1" in
    --skip-tests) SKIP_TESTS=(--skip-tests); shift ;;
    --time-budget) BUDGET="$2"; shift 2 ;;
    --tools) TOOLS="$2"; shift 2 ;;
    --work) WORK="$2"; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    *) echo "gpu_dry_run: unknown option $1 (--help)" >&2; exit 2 ;;
  esac
done
HOST_PYTHON=$(command -v python3)
VERSION=$("$HOST_PYTHON" -c 'import platform; print(platform.python_version())')  # with its micro: some pins need 3.11.5 or later
# The image's packages that seqtransfer, flair's and SuPar's wheels and the scripts import (KINDS.md).
IMAGE_PACKAGES=(numpy "transformers==5.17.0" "tokenizers==0.23.2" "huggingface_hub==1.33.0" "safetensors==0.8.0" "sentencepiece==0.2.2"
                pyyaml tqdm matplotlib scipy scikit-learn regex wrapt lxml packaging filelock requests psutil pytest pytest-xdist)
mkdir -p "$WORK"
if [ ! -f "$WORK/venv/.ready" ]; then
  echo "== gpu_dry_run: a clean venv in $WORK/venv (torch 2.13.0 CPU, then the image's packages)"
  rm -rf "$WORK/venv"
  "$HOST_PYTHON" -m venv "$WORK/venv"
  "$WORK/venv/bin/python" -m pip install -q --disable-pip-version-check torch==2.13.0
  "$WORK/venv/bin/python" -m pip install -q --disable-pip-version-check "${IMAGE_PACKAGES[@]}" torch==2.13.0
  touch "$WORK/venv/.ready"
fi
echo "== gpu_dry_run: the bundles, for Python $VERSION"
bash scripts/gpu_check_bundle.sh --python-version "$VERSION"
bash scripts/gpu_bench_bundle.sh --tools "$TOOLS" --python-version "$VERSION"
rm -rf "$WORK/tree" "$WORK/out" "$WORK/gpu-check" "$WORK/gpu-bench"
mkdir -p "$WORK/tree" "$WORK/out"
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$WORK/tree"
cp -r .gpu-check .gpu-bench "$WORK/tree/"
cd "$WORK/tree"
run() {  # the device machine's conditions: no datasets, no src/ on the path, no package index
  env -u SEQTRANSFER_DATA -u PYTHONPATH PIP_NO_INDEX=1 PYTHON="$WORK/venv/bin/python" OUT="$WORK/out" GPU_CHECK_WORK="$WORK/gpu-check" GPU_BENCH_WORK="$WORK/gpu-bench" "$@"
}
for call in 1 2; do
  echo "== gpu_dry_run: gpu_check.sh, call $call"
  run bash scripts/gpu_check.sh "${SKIP_TESTS[@]}"
  echo "== gpu_dry_run: gpu_bench.sh --device cpu --quick --time-budget $BUDGET, call $call"
  rm -f "$WORK/out"/gpu-bench-*  # this call's files only
  status=0
  run bash scripts/gpu_bench.sh --device cpu --quick --time-budget "$BUDGET" --tools "$TOOLS" || status=$?
  echo "== gpu_dry_run: gpu_bench.sh exited with $status"
  "$WORK/venv/bin/python" - "$WORK/out" "$call" $TOOLS <<'PY'
import json, sys
from pathlib import Path

out, call, tools = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
expected = {"flair": ["gpu-bench-flair-wnut17-batch16.json", "gpu-bench-flair-conll2003-batch16.json"], "encoder": ["gpu-bench-encoder-wnut17.json"], "supar": ["gpu-bench-supar-ud_ewt.json"]}
missing = [name for tool in tools for name in expected.get(tool, []) if not (out / name).is_file()]
if missing:
    sys.exit(f"gpu_dry_run: call {call} wrote no {', '.join(missing)}")
install = json.loads((out / "gpu-bench-install.json").read_text())
reused = {group: record.get("reused") for group, record in install.items()} if isinstance(install, dict) else install
print(f"call {call}: installs reused: {reused}")
if call == "2" and isinstance(install, dict) and not all(record.get("reused") for record in install.values()):
    sys.exit("gpu_dry_run: the second call installed again")
problems = []
for path in sorted(out.glob("gpu-bench-*.json")):
    if path.name in ("gpu-bench-install.json",) or "profile" in path.name:
        continue
    rows = json.loads(path.read_text())
    rows = rows if isinstance(rows, list) else [rows]
    for row in rows:
        tools = {name: row[name] for name in ("seqtransfer", "supar") if name in row} or {row.get("tool"): row}  # compare_supar's rows hold both tools
        for name, tool in tools.items():
            speed = tool.get("train_tokens_per_second")
            print(f"  {path.name}: {name} train tokens/s {speed}{' (killed)' if tool.get('killed') else ''}")
            if not speed:
                problems.append(f"{path.name}: no training speed for {name}")
if problems:
    sys.exit("gpu_dry_run: " + "; ".join(problems))
PY
done
echo "== gpu_dry_run: both scripts ran twice end to end in $WORK/tree; their output is in $WORK/out"
