#!/usr/bin/env bash
# Install everything (scripts/install.sh) and run the whole test suite, offline.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/python -m pytest "$@"
