#!/usr/bin/env bash
# seqtransfer against its peers on a GPU (the device issue's speed point), each tool in its own
# process, on the machine's first GPU, with no network and no shared datasets: it reads
# .gpu-bench/ (made by scripts/gpu_bench_bundle.sh in the checkout the device tool sends; carry it).
#   flair:   the BiLSTM-CRF tagger against flair 0.15.1 (benchmarks/compare_flair.py), one dataset and
#            training batch size at a time, test-set inference timed at each --inference batch size;
#   encoder: MiniLM fine-tuned with a softmax head against flair 0.15.1's TransformerWordEmbeddings
#            (benchmarks/compare_flair_encoder.py) on WNUT-17, seqtransfer training and predicting in
#            bf16 autocast (flair's runner in fp32), batches of 16, test-set inference at 16/32/64/128.
#            The weights are RANDOM, of MiniLM's shape: the bundle carries MiniLM's config and tokenizer
#            only (its 90 MB of weights do not fit a call), and scripts/random_encoder.py draws the
#            weights here once (seed 0, with flair's transformers 4.x; the image's 5.x, seqtransfer's,
#            is checked to read them) into $GPU_BENCH_WORK/minilm-random, which both tools fine-tune.
#            A step costs the same whatever the weights' values: the speeds hold, the F1 mean nothing
#            (each row of the JSON says so in encoder_note);
#   supar:   the biaffine parser against SuPar 1.1.4 (benchmarks/compare_supar.py), one treebank at a time.
# With flair, first: benchmarks/profile_step.py on WNUT-17 (the tagger's step part by part on the
# device: batch assembly, the copy to the device, each module forward and backward, the optimiser;
# torch.profiler's 25 costliest operators in the log), gpu-bench-profile-wnut17.json.
# Usage:
#   bash scripts/gpu_bench.sh [--tools "flair encoder supar"] [--datasets "wnut17 conll2003"] [--batches "16 64"]
#                             [--treebanks "ud_ewt tweebank_single_root"] [--epochs 3] [--inference "16 128 512 2048"]
#                             [--device cuda] [--time-budget SECONDS] [--quick]
# --tools: the comparisons to run (default: those the bundle holds; scripts/gpu_bench_bundle.sh packs
#   flair, encoder and supar unless told otherwise). --datasets, --batches and --inference are the
#   flair tool's; the encoder tool always runs WNUT-17 (one comparison).
# --time-budget SECONDS: the whole call, installs included, ends within about SECONDS (default 450:
#   one 8-minute call of the device tool, with 30 s for its start and the files' return; 0: no limit).
#   What is left of it (less 15 s for the last reports) is shared equally by the comparisons not yet
#   run. Within one, each tool gets an equal share of what is left (seqtransfer first) and trains
#   whole epochs of --epochs while another and the inference after it fit, and where not even one
#   does, the first part of an epoch that fits (benchmarks/budget.py: its tokens/s are measured on
#   the sentences it trained; the parser sizes its training file first and SuPar trains on the same
#   file). Each share is a hard limit: a runner still running at its end is killed, and its row keeps
#   the training speed of the progress lines it printed (per epoch, and every 10 s within one), so a
#   time-out loses only what was unfinished. A comparison whose share falls under 30 s is skipped
#   and said so. The encoder tool's learning-rate schedule is planned over all --epochs: a budget
#   that cuts it leaves it unfinished (speeds hold; its F1 mean nothing anyway: random weights).
# --quick: the first 200 training and 100 dev/test sentences, one epoch (a check of the set-up).
# --device cpu: a CPU check (a machine without a GPU stops otherwise).
#
# Install: seqtransfer's wheel (built from this tree: a bundle built from other sources is refused)
# with what it needs beyond the image, flair's wheels (once, for flair and encoder) and SuPar's, each
# with pip --no-index into its own folder under $GPU_BENCH_WORK (default /tmp/gpu-bench): site/,
# flair-site/, supar-site/ (and minilm-random/, the encoder tool's weights, reused likewise). The
# seqtransfer processes read site/ first (PYTHONPATH), flair's and SuPar's through small `python`
# wrappers (flair-venv/bin/python, supar-venv/bin/python) that put their own folder first (flair's
# transformers 4.x before the image's 5.x) over the image's torch. A second call on the same machine
# reuses a folder that holds the same wheels, and installs afresh where they differ; every call sets
# all the paths itself. Which package was installed where, and where each is imported from, goes to
# $GPU_BENCH_WORK/installed.json and $OUT/gpu-bench-install.json.
# Output ($OUT, else /tmp): gpu-bench.log (everything), gpu-bench-install.json, and per comparison
# gpu-bench-flair-DATASET-batchN.json, gpu-bench-encoder-wnut17.json or gpu-bench-supar-TREEBANK.json,
# each rewritten as each tool ends, so a call stopped at its limit keeps what finished. The device tool
# brings back 8 files: keep the comparisons of one call at 6 or fewer (the default: 5, with the profile).
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; }
TOOLS="" DATASETS="wnut17 conll2003" TREEBANKS="ud_ewt" BATCHES="16" EPOCHS=3 INFERENCE="16 128 512 2048" DEVICE=cuda BUDGET=450 QUICK=()
while [ $# -gt 0 ]; do
  case "$1" in
    --tools) TOOLS="$2"; shift 2 ;;
    --datasets) DATASETS="$2"; shift 2 ;;
    --treebanks) TREEBANKS="$2"; shift 2 ;;
    --batches) BATCHES="$2"; shift 2 ;;
    --epochs) EPOCHS="$2"; shift 2 ;;
    --inference) INFERENCE="$2"; shift 2 ;;
    --device) DEVICE="$2"; shift 2 ;;
    --time-budget) BUDGET="$2"; shift 2 ;;
    --quick) QUICK=(--max-train-sentences 200 --max-evaluation-sentences 100); EPOCHS=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gpu_bench: unknown option $1 (--help)" >&2; exit 2 ;;
  esac
done
PYTHON="${PYTHON:-$(command -v python3)}"
[ -f .gpu-bench/payload.tar.xz ] || { echo "gpu_bench: .gpu-bench/ is missing: run scripts/gpu_bench_bundle.sh first (where the datasets are)" >&2; exit 2; }
TOOLS="${TOOLS:-$(cat .gpu-bench/tools)}"
for tool in $TOOLS; do
  grep -qw "$tool" .gpu-bench/tools || { echo "gpu_bench: the bundle holds no $tool (it holds: $(cat .gpu-bench/tools)): scripts/gpu_bench_bundle.sh --tools" >&2; exit 2; }
done
[[ "$BUDGET" =~ ^[0-9]+$ ]] || { echo "gpu_bench: --time-budget takes whole seconds (0: no limit)" >&2; exit 2; }
[ "$BUDGET" != 0 ] || BUDGET=""
source_digest() {  # as scripts/gpu_bench_bundle.sh computes it
  find src pyproject.toml -type f ! -path '*/__pycache__/*' ! -path '*.egg-info/*' ! -name '*.pyc' ! -name '*.tmp' -print0 \
    | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16
}
if [ "$(source_digest)" != "$(cat .gpu-bench/source-digest)" ]; then
  echo "gpu_bench: .gpu-bench/ holds a seqtransfer wheel built from other sources than src/: run scripts/gpu_bench_bundle.sh again" >&2; exit 2
fi
STARTED=$SECONDS
WORK="${GPU_BENCH_WORK:-/tmp/gpu-bench}"
OUTPUT="${OUT:-/tmp}"
LOG="$OUTPUT/gpu-bench.log"
mkdir -p "$WORK" "$OUTPUT"
say() { echo "$*" | tee -a "$LOG"; }

# The payload, unpacked once per bundle (a different bundle replaces it).
payload=$(sha256sum .gpu-bench/payload.tar.xz | cut -c1-16)
if [ "$(cat "$WORK/bundle/.payload-digest" 2>/dev/null)" != "$payload" ]; then
  rm -rf "$WORK/bundle" && mkdir -p "$WORK/bundle"
  "$PYTHON" -c "import sys, tarfile; tarfile.open(sys.argv[1], 'r:xz').extractall(sys.argv[2], **({'filter': 'data'} if hasattr(tarfile, 'data_filter') else {}))" \
    .gpu-bench/payload.tar.xz "$WORK/bundle"
  echo "$payload" > "$WORK/bundle/.payload-digest"
fi
BUNDLE="$WORK/bundle"

# install GROUP WHEELS TARGET MODULE...: the wheels of WHEELS into TARGET with pip (no index, no dependencies:
# those are the image's or carried), unless TARGET holds the same wheels from an earlier call; then the
# record of GROUP in $WORK/installed.json: what TARGET holds, and where each MODULE is imported from when
# TARGET is first on the path (a package that TARGET holds must come from TARGET). Fails on any problem.
install() {
  local group=$1 wheels=$2 target=$3 digest reused=0
  shift 3
  digest=$(cd "$wheels" && sha256sum -- *.whl | sha256sum | cut -c1-16)
  if [ "$(cat "$target/.wheels-digest" 2>/dev/null)" = "$digest" ]; then
    reused=1; say "== $group: the same wheels are installed in $target (an earlier call): reused"
  else
    say "== $group: installing $(ls "$wheels"/*.whl | wc -l) wheels into $target (no index)"
    rm -rf "$target"
    "$PYTHON" -m pip --isolated --disable-pip-version-check install -q --no-index --find-links "$wheels" --no-deps --no-compile --no-cache-dir \
      --target "$target" "$wheels"/*.whl 2>&1 | tee -a "$LOG" || { echo "gpu_bench: pip could not install $group's wheels" >&2; exit 1; }
    echo "$digest" > "$target/.wheels-digest"
  fi
  local status=0
  PYTHONPATH="$target" "$PYTHON" scripts/install_record.py "$WORK/installed.json" "$group" "$target" "$digest" "$reused" "$@" 2>&1 | tee -a "$LOG" || status=$?
  [ "$status" = 0 ] || { echo "gpu_bench: $group cannot run (see above and $WORK/installed.json)" >&2; cp "$WORK/installed.json" "$OUTPUT/gpu-bench-install.json"; exit 1; }
}
# wrapper NAME TARGET: NAME-venv/bin/python, the image's python with TARGET first on its path (written every call).
wrapper() {
  mkdir -p "$WORK/$1-venv/bin"
  printf '#!/usr/bin/env bash\nPYTHONPATH="%s${PYTHONPATH:+:$PYTHONPATH}" exec "%s" "$@"\n' "$2" "$(realpath -s "$(command -v "$PYTHON")")" > "$WORK/$1-venv/bin/python"
  chmod +x "$WORK/$1-venv/bin/python"
}

say "== gpu_bench $(date -u +%FT%TZ): tools $TOOLS, device $DEVICE, epochs $EPOCHS${BUDGET:+, time budget $BUDGET s}${QUICK[*]:+, quick}"
rm -f "$WORK/installed.json"  # this call's record
install seqtransfer "$BUNDLE/wheels" "$WORK/site" seqtransfer seqtransfer.cli ufal.chu_liu_edmonds seqeval torch numpy yaml safetensors tqdm matplotlib
has_tool() { [[ " $TOOLS " == *" $1 "* ]]; }
if has_tool flair || has_tool encoder; then  # flair's wheels serve both tools: installed once
  install flair "$BUNDLE/wheels-flair" "$WORK/flair-site" flair flair.embeddings flair.models flair.trainers transformers tokenizers huggingface_hub torch
  wrapper flair "$WORK/flair-site"
fi
if has_tool supar; then
  install supar "$BUNDLE/wheels-supar" "$WORK/supar-site" supar supar.cmds.biaffine_dep nltk dill torch
  wrapper supar "$WORK/supar-site"
fi
cp "$WORK/installed.json" "$OUTPUT/gpu-bench-install.json"
export PYTHONPATH="$WORK/site${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
if [ "$DEVICE" != cpu ]; then
  "$PYTHON" -c "import torch, sys; print(torch.cuda.get_device_name(0)) if torch.cuda.is_available() else sys.exit('gpu_bench: no GPU here (pass --device cpu for a CPU check)')" 2>&1 | tee -a "$LOG" || exit 1
fi
# The encoder tool's weights: random, of MiniLM's shape (the bundle's minilm-shape/), drawn once by flair's
# transformers 4.x (reused while the bundle's files and the script are the same), then read by the image's
# transformers 5.x as seqtransfer loads an encoder. If either fails, the encoder comparison is skipped.
ENCODER="$WORK/minilm-random" ENCODER_READY=0
ENCODER_NOTE="RANDOM weights of MiniLM's shape (all-MiniLM-L6-v2's config and tokenizer; scripts/random_encoder.py, seed 0): speeds hold, F1 mean nothing"
if has_tool encoder; then
  say "== encoder: $ENCODER: $ENCODER_NOTE"
  if HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$WORK/flair-venv/bin/python" scripts/random_encoder.py "$BUNDLE/minilm-shape" "$ENCODER" --seed 0 2>&1 | tee -a "$LOG" \
     && HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$PYTHON" scripts/random_encoder.py --check --seqtransfer "$ENCODER" 2>&1 | tee -a "$LOG"; then
    ENCODER_READY=1
  else
    say "== encoder: the random MiniLM-shaped weights could not be made or read (see above): the encoder comparison is skipped"
  fi
fi

# The comparisons, in order; each is one command.
COMPARISONS=()
for tool in $TOOLS; do
  case "$tool" in
    flair) COMPARISONS+=("profile wnut17")  # first: where a training step's time goes on the device, part by part
           for dataset in $DATASETS; do for batch in $BATCHES; do COMPARISONS+=("flair $dataset $batch"); done; done ;;
    encoder) COMPARISONS+=("encoder wnut17") ;;  # batches of 16: seqtransfer's setting for fine-tuned encoders, both tools
    supar) for treebank in $TREEBANKS; do COMPARISONS+=("supar $treebank"); done ;;
  esac
done
DEADLINE=$(( ${BUDGET:-0} ? STARTED + BUDGET - 15 : 0 ))
failed=()
for index in "${!COMPARISONS[@]}"; do
  read -r tool dataset batch <<< "${COMPARISONS[$index]}"
  budget=()
  if [ -n "$BUDGET" ]; then
    share=$(( (DEADLINE - SECONDS) / (${#COMPARISONS[@]} - index) ))
    if [ "$share" -lt 30 ]; then
      say "== $tool $dataset${batch:+, batch $batch}: skipped: ${share}s of the time budget would be left for it"; failed+=("$tool-$dataset(skipped)"); continue
    fi
    budget=(--time-budget "$share")
  fi
  case "$tool" in
    flair)
      say "== flair: $dataset, training batch $batch, $EPOCHS epochs${budget[*]:+, ${budget[1]} s}"
      command=("$PYTHON" benchmarks/compare_flair.py --datasets "$dataset" --epochs "$EPOCHS" --device "$DEVICE" --threads 4 --train-batch-size "$batch"
               --batch-sizes $INFERENCE --data-dir "$BUNDLE/data" --embeddings "$BUNDLE/data/glove-rows.txt" --flair-venv "$WORK/flair-venv" --no-install
               "${QUICK[@]}" "${budget[@]}" --json "$OUTPUT/gpu-bench-flair-$dataset-batch$batch.json") ;;
    encoder)
      if [ "$ENCODER_READY" != 1 ]; then say "== encoder $dataset: skipped: no encoder weights (see above)"; failed+=("encoder-$dataset(skipped)"); continue; fi
      say "== encoder: $dataset, MiniLM-shaped random weights fine-tuned, seqtransfer in bf16, flair in fp32, $EPOCHS epochs${budget[*]:+, ${budget[1]} s}"
      command=("$PYTHON" benchmarks/compare_flair_encoder.py --datasets "$dataset" --encoder "$ENCODER" --encoder-note "$ENCODER_NOTE" --epochs "$EPOCHS" --device "$DEVICE"
               --threads 4 --amp bf16 --predict-amp bf16 --data-dir "$BUNDLE/data" --flair-venv "$WORK/flair-venv" --no-install
               "${QUICK[@]}" "${budget[@]}" --json "$OUTPUT/gpu-bench-encoder-$dataset.json") ;;
    profile)
      say "== profile: $dataset, one epoch of the BiLSTM-CRF tagger, batch 16, each part timed on the device"
      command=(${budget[1]:+timeout "${budget[1]}"} "$PYTHON" benchmarks/profile_step.py --dataset "$dataset" --device "$DEVICE" --threads 4 --data-dir "$BUNDLE/data"
               --embeddings "$BUNDLE/data/glove-rows.txt" --operators 25 ${budget[1]:+--time-budget "$(( ${budget[1]} - 10 ))"}
               --json "$OUTPUT/gpu-bench-profile-$dataset.json") ;;  # its share is a hard limit; it times the batches that fit
    supar)
      say "== supar: $dataset, $EPOCHS epochs${budget[*]:+, ${budget[1]} s}"
      command=("$PYTHON" benchmarks/compare_supar.py --datasets "$dataset" --epochs "$EPOCHS" --device "$DEVICE" --threads 4
               --data-dir "$BUNDLE/data" --venv "$WORK/supar-venv" --no-install "${QUICK[@]}" "${budget[@]}" --output "$OUTPUT/gpu-bench-supar-$dataset.json") ;;
  esac
  status=0 begun=$SECONDS
  # The comparisons keep their shares themselves; `timeout` is the net under them (30 s later).
  [ -z "$BUDGET" ] || command=(timeout --kill-after 5 "$(( ${budget[1]} + 30 ))" "${command[@]}")
  "${command[@]}" 2>&1 | tee -a "$LOG" || status=$?
  [ "$status" = 0 ] || { say "== $tool $dataset: FAILED (exit $status)"; failed+=("$tool-$dataset"); }
  say "== $tool $dataset: $(( SECONDS - begun )) s"
done
say "== gpu_bench: $(( SECONDS - STARTED )) s${failed[*]:+; failed or skipped: ${failed[*]}}"
[ ${#failed[@]} = 0 ]
