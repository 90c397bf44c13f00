#!/usr/bin/env bash
# The main job: install, regenerate the data with the default models if stale, build figures and site.
#   bash scripts/site.sh            -> site/ (static, works offline)
#   bash scripts/site.sh --serve    -> also serve it on http://127.0.0.1:8000
# Extra arguments after --data-args are passed to scripts/build_data.py (e.g. --force, --device cpu).
set -euo pipefail
cd "$(dirname "$0")/.."
serve=0; data_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --serve) serve=1 ;;
    --data-args) shift; data_args=("$@"); break ;;
    *) echo "usage: bash scripts/site.sh [--serve] [--data-args ARGS...]" >&2; exit 2 ;;
  esac
  shift
done
bash scripts/install.sh
export NO_MKDOCS_2_WARNING=1
.venv/bin/python scripts/build_data.py --device cpu ${data_args[@]+"${data_args[@]}"}
.venv/bin/python scripts/build_figures.py
.venv/bin/mkdocs build --strict
echo "site built into site/ (open site/index.html through a web server, or run with --serve)"
if [ "$serve" = 1 ]; then
  exec .venv/bin/mkdocs serve --dev-addr 127.0.0.1:8000
fi
