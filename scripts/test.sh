#!/usr/bin/env bash
# Install seqtransfer with its test extras and run the whole test suite, real-data smoke runs included.
set -euo pipefail
cd "$(dirname "$0")/.."
export SEQTRANSFER_DATA="${SEQTRANSFER_DATA:-$(cd .. && pwd)/shared/datasets}"
bash scripts/setup.sh test
.venv/bin/python -m pytest -m "slow or not slow" "$@"
