#!/usr/bin/env bash
# Does the package work where it is installed, not only in this clone? Builds the sdist and the
# wheel (python -m build), installs the wheel (not editable; torch==2.13.0 first, so that pip
# keeps the CPU build) into a fresh virtual environment outside the clone, and from a folder
# outside the clone runs: `seqtransfer --help`, `experiment list` (the shipped paper
# experiments), `experiment list pretrand-table4` (one found by name), and a tiny
# train -> predict round trip on the test fixtures.
#
#   bash scripts/wheel_check.sh            # uses .venv's python to build; about 1-2 minutes
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
builder="${BUILD_PYTHON:-$root/.venv/bin/python}"

step() { echo "== $*"; }

step "build sdist and wheel"
"$builder" -m build --sdist --wheel --outdir "$work/dist" "$root" > "$work/build.log" 2>&1 || { tail -30 "$work/build.log"; exit 1; }
wheel="$(ls "$work"/dist/seqtransfer-*.whl)"
sdist="$(ls "$work"/dist/seqtransfer-*.tar.gz)"
unzip -l "$wheel" > "$work/wheel.list"
tar tzf "$sdist" > "$work/sdist.list"
for listing in wheel sdist; do
  for shipped in paper_experiments/pretrand_table4.yaml paper_experiments/configs/ptb_to_upos.yaml; do
    grep -q "$shipped" "$work/$listing.list" || { echo "$shipped is missing from the $listing"; exit 1; }
  done
done

step "install the wheel into a clean virtual environment"
python3 -m venv "$work/venv"
pip_install() { "$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@" > "$work/pip.log" 2>&1 || { tail -30 "$work/pip.log"; exit 1; }; }
pip_install torch==2.13.0
pip_install "$wheel" torch==2.13.0
installed="$work/venv/bin/seqtransfer"

cd "$work"  # outside the clone: nothing of src/ or experiments/ is importable or readable from here
step "the installed package, not the clone"
"$work/venv/bin/python" -c "import seqtransfer, sys; path = seqtransfer.__file__; print(path); sys.exit(path.startswith('$root'))"
step "seqtransfer --help"
"$installed" --help > /dev/null
step "experiment list (shipped experiments)"
"$installed" experiment list > "$work/shipped.txt"
grep -q "^pretrand-table4 " "$work/shipped.txt"
step "experiment list pretrand-table4 (by name; its label map read from the package)"
"$installed" experiment list pretrand-table4 --targets WNUT --only From-scratch200 --results "$work/results" | tail -1
"$installed" experiment list mutspad-table2 --results "$work/results" > /dev/null
step "train -> predict round trip"
fixtures="$root/tests/fixtures"
"$installed" train --train "$fixtures/tiny_ner_train.conll" --dev "$fixtures/tiny_ner_dev.conll" --columns word,ner --output "$work/run" --quiet \
  model.embeddings=null train.max_epochs=2 model.word_dimension=8 model.char_dimension=4 model.char_hidden=4 model.hidden=8
printf 'John lives in New York\n' | "$installed" predict "$work/run" > "$work/predicted.txt"
test -s "$work/predicted.txt" && head -3 "$work/predicted.txt"
echo "wheel check passed: $(basename "$wheel")"
