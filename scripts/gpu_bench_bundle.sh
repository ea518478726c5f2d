#!/usr/bin/env bash
# Pack what scripts/gpu_bench.sh needs on a GPU machine without network or shared datasets into
# .gpu-bench/ (git-ignored; name it in the device tool's `carry`, about 45 MB): WNUT-17 and
# CoNLL-2003 as compressed dataset folders (CoNLL-2003 is research-only: it goes to a machine lent
# to us for the measurement, never into the repository), the GloVe 6B 50d rows of their words
# (gzip text), the wheels seqtransfer needs beyond the image (as scripts/gpu_check_bundle.sh),
# and flair 0.15.1 with what it needs beyond the image (benchmarks/gpu_flair_requirements.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
export SEQTRANSFER_DATA="${SEQTRANSFER_DATA:-$(cd .. && pwd)/shared/datasets}"
PLATFORMS=(--python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux2014_x86_64 --platform manylinux1_x86_64)
rm -rf .gpu-bench && mkdir -p .gpu-bench/wheels .gpu-bench/wheels-flair .gpu-bench/data
for folder in wnut17 conll2003_en; do
  tar -czf ".gpu-bench/data/$folder.tar.gz" -C "$SEQTRANSFER_DATA" "$folder"
done
.venv/bin/python - <<'PY'
import gzip
from seqtransfer.data.registry import load_split
from seqtransfer.embeddings.static import load_vectors

words = {token.lower() for dataset in ("wnut17", "conll2003") for split in ("train", "dev", "test") for sentence in load_split(dataset, split)
         for token in sentence.tokens}
vectors = load_vectors("glove-6b-50d", words, lowercase=True)
with gzip.open(".gpu-bench/data/glove-rows.txt.gz", "wt", encoding="utf-8") as handle:
    for word, row in zip(vectors.words, vectors.matrix):
        handle.write(word + " " + " ".join(f"{value:.6f}" for value in row) + "\n")
print(f"{len(vectors.words)} GloVe rows for {len(words)} words")
PY
.venv/bin/python -m pip download --quiet --no-deps --only-binary=:all: "${PLATFORMS[@]}" -d .gpu-bench/wheels ufal.chu_liu_edmonds==1.0.3
.venv/bin/python -m pip wheel --quiet --no-deps -w .gpu-bench/wheels seqeval==1.2.2
sources="^(langdetect|pptree|segtok|sqlitedict)=="
grep -v '^#' benchmarks/gpu_flair_requirements.txt | grep -Ev "$sources" > .gpu-bench/binary.txt
.venv/bin/python -m pip download --quiet --no-deps --only-binary=:all: "${PLATFORMS[@]}" -d .gpu-bench/wheels-flair -r .gpu-bench/binary.txt
grep -E "$sources" benchmarks/gpu_flair_requirements.txt | xargs .venv/bin/python -m pip wheel --quiet --no-deps -w .gpu-bench/wheels-flair
rm .gpu-bench/binary.txt
du -sh .gpu-bench
