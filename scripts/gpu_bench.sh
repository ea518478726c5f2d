#!/usr/bin/env bash
# seqtransfer against flair 0.15.1 on a GPU (the device issue's speed point): the BiLSTM-CRF tagger,
# same data, vectors and settings, each tool in its own process (benchmarks/compare_flair.py), one
# dataset and training batch size at a time, on the machine's first GPU. No network and no shared
# datasets: it reads .gpu-bench/ (made by scripts/gpu_bench_bundle.sh in the checkout the device
# tool sends; carry it). Each comparison writes its JSON under $OUT (or /tmp) as soon as it ends,
# and the whole log goes to $OUT/gpu-bench.log. A second call on the same machine reuses the
# installed packages. Usage:
#   bash scripts/gpu_bench.sh [--datasets "wnut17 conll2003"] [--batches "16 64"] [--epochs 3]
#                             [--inference "16 128 512 2048"] [--device cuda] [--quick]
# --quick: the first 200 training and 100 dev/test sentences, one epoch (a check of the set-up).
set -euo pipefail
cd "$(dirname "$0")/.."
DATASETS="wnut17 conll2003" BATCHES="16" EPOCHS=3 INFERENCE="16 128 512 2048" DEVICE=cuda QUICK=()
while [ $# -gt 0 ]; do
  case "$1" in
    --datasets) DATASETS="$2"; shift 2 ;;
    --batches) BATCHES="$2"; shift 2 ;;
    --epochs) EPOCHS="$2"; shift 2 ;;
    --inference) INFERENCE="$2"; shift 2 ;;
    --device) DEVICE="$2"; shift 2 ;;
    --quick) QUICK=(--max-train-sentences 200 --max-evaluation-sentences 100); EPOCHS=1; shift ;;
    *) echo "gpu_bench: unknown option $1" >&2; exit 2 ;;
  esac
done
PYTHON="${PYTHON:-$(command -v python3)}"
[ -d .gpu-bench/wheels-flair ] || { echo "gpu_bench: .gpu-bench/ is missing: run scripts/gpu_bench_bundle.sh first (where the datasets are)" >&2; exit 2; }
WORK="${GPU_BENCH_WORK:-/tmp/gpu-bench}"
OUTPUT="${OUT:-/tmp}"
LOG="$OUTPUT/gpu-bench.log"
if [ ! -f "$WORK/ready" ]; then  # unpack the data and install the wheels once per machine
  rm -rf "$WORK" && mkdir -p "$WORK/data" "$WORK/flair-venv/bin"
  for archive in .gpu-bench/data/*.tar.gz; do tar -xzf "$archive" -C "$WORK/data"; done
  if ! "$PYTHON" -c "import ufal.chu_liu_edmonds, seqeval" 2>/dev/null; then  # seqtransfer's needs beyond the image
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$WORK/site" .gpu-bench/wheels/*
  fi
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$WORK/flair-site" .gpu-bench/wheels-flair/*
  # flair's process reads its own packages first (transformers 4.x among them), then the image's torch
  cat > "$WORK/flair-venv/bin/python" <<EOF
#!/usr/bin/env bash
PYTHONPATH="$WORK/flair-site:\${PYTHONPATH:-}" exec "$PYTHON" "\$@"
EOF
  chmod +x "$WORK/flair-venv/bin/python"
  touch "$WORK/ready"
fi
[ -d "$WORK/site" ] && export PYTHONPATH="$WORK/site:${PYTHONPATH:-}"
export PYTHONPATH="$PWD/src:$PWD/benchmarks:${PYTHONPATH:-}" PYTHONUNBUFFERED=1
"$WORK/flair-venv/bin/python" -c "import flair, torch, transformers; print('flair', flair.__version__, 'torch', torch.__version__, 'transformers', transformers.__version__)" 2>&1 | tee -a "$LOG"
if [ "$DEVICE" != cpu ]; then
  "$PYTHON" -c "import torch, sys; print(torch.cuda.get_device_name(0)) if torch.cuda.is_available() else sys.exit('gpu_bench: no GPU here (pass --device cpu for a CPU check)')" 2>&1 | tee -a "$LOG"
fi
for dataset in $DATASETS; do
  for batch in $BATCHES; do
    echo "== $dataset, training batch $batch, $EPOCHS epochs" | tee -a "$LOG"
    "$PYTHON" benchmarks/compare_flair.py --datasets "$dataset" --epochs "$EPOCHS" --device "$DEVICE" --threads 4 --train-batch-size "$batch" \
      --batch-sizes $INFERENCE --data-dir "$WORK/data" --embeddings .gpu-bench/data/glove-rows.txt.gz --flair-venv "$WORK/flair-venv" --no-install \
      "${QUICK[@]}" --json "$OUTPUT/gpu-bench-$dataset-batch$batch.json" 2>&1 | tee -a "$LOG"
  done
done
