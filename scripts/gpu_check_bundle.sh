#!/usr/bin/env bash
# Pack what scripts/gpu_check.sh needs on a GPU machine without network or shared datasets into
# .gpu-check/ (git-ignored; name it in the device tool's `carry`): 2,000/300/300 sentences of
# WNUT-17 (CC BY 4.0) and UD-EWT (CC BY-SA 4.0), the GloVe 6B 50d rows of their words (PDDL),
# and the wheels that the GPU image lacks: seqtransfer's own (built from this working tree), and
# ufal.chu_liu_edmonds and seqeval. The wheels are for CPython 3.12 on x86-64 (the GPU image's);
# `--python-version 3.11` packs them for this machine's Python instead (a dry run here).
# .gpu-check/wheels/source-digest is the digest of src/ and pyproject.toml that the wheel was built from:
# gpu_check.sh refuses a bundle older than the tree it runs in.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON_VERSION=3.12
while [ $# -gt 0 ]; do
  case "$1" in
    --python-version) PYTHON_VERSION="$2"; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    *) echo "gpu_check_bundle: unknown option $1" >&2; exit 2 ;;
  esac
done
export SEQTRANSFER_DATA="${SEQTRANSFER_DATA:-$(cd .. && pwd)/shared/datasets}"
rm -rf .gpu-check && mkdir -p .gpu-check/wheels .gpu-check/data
.venv/bin/python - <<'PY'
from pathlib import Path
from seqtransfer.data.conll import write_conll
from seqtransfer.data.conllu import write_conllu
from seqtransfer.data.registry import load_split
from seqtransfer.embeddings.static import load_vectors

root, words = Path(".gpu-check/data"), set()
for dataset, writer in (("wnut17", lambda path, sentences: write_conll(path, sentences, ["word", "ner"])), ("ud_ewt", write_conllu)):
    for split, count in (("train", 2000), ("dev", 300), ("test", 300)):  # a size where a GPU should win (issue 51)
        sentences = load_split(dataset, split)[:count]
        words |= {token.lower() for sentence in sentences for token in sentence.tokens}
        writer(root / f"{dataset}-{split}.{'conll' if dataset == 'wnut17' else 'conllu'}", sentences)
vectors = load_vectors("glove-6b-50d", words, lowercase=True)
with open(root / "glove-sample.txt", "w", encoding="utf-8") as handle:
    for word, row in zip(vectors.words, vectors.matrix):
        handle.write(word + " " + " ".join(f"{value:.6f}" for value in row) + "\n")
print(f"{len(vectors.words)} GloVe rows for {len(words)} words")
PY
bash scripts/gpu_bench_bundle.sh --seqtransfer-wheels .gpu-check/wheels --python-version "$PYTHON_VERSION"
du -sh .gpu-check
