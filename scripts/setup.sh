#!/usr/bin/env bash
# Create .venv (if missing) and install seqtransfer with the given extras.
# torch==2.13.0 (CPU) goes in first: a range that admits a newer torch would pull several GB.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-glove}"
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check torch==2.13.0
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[${extras}]"
