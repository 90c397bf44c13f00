#!/usr/bin/env bash
# Create .venv and install specdec with everything the build script, the site and the tests need.
# Idempotent: a second run installs nothing new.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# CPU torch first: a bare `torch` requirement on an empty machine pulls a multi-GB CUDA build.
# (On a GPU machine, install the torch build for your CUDA first; this step then does nothing.)
.venv/bin/python -c "import torch" 2>/dev/null || .venv/bin/pip install -q "torch==2.13.0"
.venv/bin/pip install -q -e ".[models,dev,docs]"
# Browser tests drive Debian's Chromium (Playwright cannot download browsers offline).
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
