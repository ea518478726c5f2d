#!/usr/bin/env bash
# Pack what scripts/gpu_check.sh needs on a GPU machine without network or shared datasets into
# .gpu-check/ (git-ignored; name it in the device tool's `carry`): 300/100/100 sentences of
# WNUT-17 (CC BY 4.0) and UD-EWT (CC BY-SA 4.0), the GloVe 6B 50d rows of their words (PDDL),
# and the wheels (Python 3.12, x86-64) that the GPU image lacks.
set -euo pipefail
cd "$(dirname "$0")/.."
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
    for split, count in (("train", 300), ("dev", 100), ("test", 100)):
        sentences = load_split(dataset, split)[:count]
        words |= {token.lower() for sentence in sentences for token in sentence.tokens}
        writer(root / f"{dataset}-{split}.{'conll' if dataset == 'wnut17' else 'conllu'}", sentences)
vectors = load_vectors("glove-6b-50d", words, lowercase=True)
with open(root / "glove-sample.txt", "w", encoding="utf-8") as handle:
    for word, row in zip(vectors.words, vectors.matrix):
        handle.write(word + " " + " ".join(f"{value:.6f}" for value in row) + "\n")
print(f"{len(vectors.words)} GloVe rows for {len(words)} words")
PY
.venv/bin/python -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
  -d .gpu-check/wheels ufal.chu_liu_edmonds==1.0.3
# seqeval ships an sdist whose build needs setuptools_scm from the network: build its wheel here
.venv/bin/python -m pip wheel --quiet --no-deps -w .gpu-check/wheels seqeval==1.2.2
du -sh .gpu-check
