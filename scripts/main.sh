#!/usr/bin/env bash
# Install seqtransfer and run the main job: a news -> tweets transfer experiment. A NER tagger is
# trained on CoNLL-2003 (news), then WNUT-17 (tweets) taggers are trained from scratch, by
# fine-tuning and with PretRand; the report compares them with the paper's numbers.
# Results go to ./results (resumable: run the command again after an interruption).
set -euo pipefail
cd "$(dirname "$0")/.."
export SEQTRANSFER_DATA="${SEQTRANSFER_DATA:-$(cd .. && pwd)/shared/datasets}"
bash scripts/setup.sh glove
.venv/bin/seqtransfer experiment run experiments/news_to_tweets.yaml --seeds 1 --threads 2 --results results
.venv/bin/seqtransfer report experiments/news_to_tweets.yaml --results results --output results/news_to_tweets.md
cat results/news_to_tweets.md
