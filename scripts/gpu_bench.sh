#!/usr/bin/env bash
# seqtransfer against flair 0.15.1 on a GPU (the device issue's speed point): the BiLSTM-CRF tagger,
# same data, vectors and settings, each tool in its own process (benchmarks/compare_flair.py), at
# each training batch size given, on the machine's first GPU. No network and no shared datasets:
# it reads .gpu-bench/ (made by scripts/gpu_bench_bundle.sh; carry it). Writes one JSON per batch
# size under $OUT (or /tmp). Usage:
#   bash scripts/gpu_bench.sh [--datasets "wnut17 conll2003"] [--batches "16 64"] [--epochs 2] [--device cuda] [--quick]
# --quick: the first 200 training and 100 dev/test sentences, one epoch (a smoke test of the set-up).
set -euo pipefail
cd "$(dirname "$0")/.."
DATASETS="wnut17 conll2003" BATCHES="16" EPOCHS=2 DEVICE=cuda QUICK=()
while [ $# -gt 0 ]; do
  case "$1" in
    --datasets) DATASETS="$2"; shift 2 ;;
    --batches) BATCHES="$2"; shift 2 ;;
    --epochs) EPOCHS="$2"; shift 2 ;;
    --device) DEVICE="$2"; shift 2 ;;
    --quick) QUICK=(--max-train-sentences 200 --max-evaluation-sentences 100); EPOCHS=1; shift ;;
    *) echo "gpu_bench: unknown option $1" >&2; exit 2 ;;
  esac
done
PYTHON="${PYTHON:-$(command -v python3)}"
[ -d .gpu-bench/wheels-flair ] || { echo "gpu_bench: .gpu-bench/ is missing: run scripts/gpu_bench_bundle.sh first (where the datasets are)" >&2; exit 2; }
WORK="${GPU_BENCH_WORK:-/tmp/gpu-bench}"
OUTPUT="${OUT:-/tmp}"
rm -rf "$WORK" && mkdir -p "$WORK/data" "$WORK/flair-venv/bin"
for archive in .gpu-bench/data/*.tar.gz; do tar -xzf "$archive" -C "$WORK/data"; done
if ! "$PYTHON" -c "import ufal.chu_liu_edmonds, seqeval" 2>/dev/null; then  # seqtransfer's needs beyond the image
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$WORK/site" .gpu-bench/wheels/*
  export PYTHONPATH="$WORK/site:${PYTHONPATH:-}"
fi
export PYTHONPATH="$PWD/src:$PWD/benchmarks:${PYTHONPATH:-}" PYTHONUNBUFFERED=1
# flair's process reads its own packages first (transformers 4.x among them), then the image's torch:
# a "venv" whose python is the image's, with flair's folder in front of PYTHONPATH
"$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$WORK/flair-site" .gpu-bench/wheels-flair/*
cat > "$WORK/flair-venv/bin/python" <<EOF
#!/usr/bin/env bash
PYTHONPATH="$WORK/flair-site:\${PYTHONPATH:-}" exec "$PYTHON" "\$@"
EOF
chmod +x "$WORK/flair-venv/bin/python"
"$WORK/flair-venv/bin/python" -c "import flair, torch, transformers; print('flair', flair.__version__, 'torch', torch.__version__, 'transformers', transformers.__version__, 'cuda', torch.cuda.is_available())"
"$PYTHON" -c "import torch; print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU')"
for batch in $BATCHES; do
  echo "== training batch $batch"
  "$PYTHON" benchmarks/compare_flair.py --datasets $DATASETS --epochs "$EPOCHS" --device "$DEVICE" --threads 4 --train-batch-size "$batch" \
    --data-dir "$WORK/data" --embeddings .gpu-bench/data/glove-rows.txt.gz --flair-venv "$WORK/flair-venv" \
    "${QUICK[@]}" --json "$OUTPUT/gpu-bench-batch$batch.json"
done
