#!/usr/bin/env bash
# Install seqtransfer and run the main job: train the base BiLSTM tagger from scratch on WNUT-17
# (tweets, NER) and print its dev and test scores. The run directory is runs/wnut17-scratch.
set -euo pipefail
cd "$(dirname "$0")/.."
export SEQTRANSFER_DATA="${SEQTRANSFER_DATA:-$(cd .. && pwd)/shared/datasets}"
bash scripts/setup.sh glove
output="runs/wnut17-scratch-$(date +%Y%m%d-%H%M%S)"
.venv/bin/seqtransfer train --dataset wnut17 --classifier crf --seed 1 --output "$output"
