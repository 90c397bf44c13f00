#!/usr/bin/env bash
# The main job: install, regenerate the data with the default models if stale, build figures and site.
#   bash scripts/site.sh                      -> site/ (static, works offline), from docs/data/cpu/ (and, if a GPU
#                                                run is committed, site/cuda/ from docs/data/cuda/, a switch between them)
#   bash scripts/site.sh --serve              -> also serve it on http://127.0.0.1:8000
#   bash scripts/site.sh --device cuda        -> the committed configuration on a GPU: docs/data/cuda/, and its site
#                                                (with docs/data/cpu/ as a copy under site/cpu/, a switch between them)
#   bash scripts/site.sh --data DIR           -> the site from an artifact folder of your own (built with --out), every
#                                                page its own (the Notebook too), built from a copy of docs/: the
#                                                committed files are left as they are; its data is not regenerated
# Served anywhere but at http://127.0.0.1:8000/: set SPECDEC_SITE_URL to the URL it is served at (its 404 page and
# instant navigation need it), e.g. SPECDEC_SITE_URL=https://example.org/specdec/ bash scripts/site.sh
# Extra arguments after --data-args are passed to scripts/build_data.py (e.g. --force).
set -euo pipefail
cd "$(dirname "$0")/.."
serve=0; device=cpu; data=; data_args=()
usage="usage: bash scripts/site.sh [--serve] [--device cpu|cuda] [--data DIR] [--data-args ARGS...]"
while [ $# -gt 0 ]; do
  case "$1" in
    --serve) serve=1 ;;
    --device|--data)
      if [ $# -lt 2 ] || [ -z "$2" ]; then echo "site.sh: $1 needs a value; $usage" >&2; exit 2; fi
      if [ "$1" = --device ]; then device=$2; else data=$2; fi
      shift ;;
    --data-args) shift; data_args=("$@"); break ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
  shift
done
case "$device" in cpu|cuda) ;; *) echo "$usage" >&2; exit 2 ;; esac
if [ -n "$data" ] && [ ! -f "$data/traces.json" ]; then echo "site.sh: $data has no traces.json (build it with --out)" >&2; exit 2; fi
bash scripts/install.sh
export NO_MKDOCS_2_WARNING=1
if [ -z "$data" ]; then
  .venv/bin/python scripts/build_data.py --device "$device" ${data_args[@]+"${data_args[@]}"}
  data=docs/data/$device
fi
# figures and `mkdocs build --strict`; with the committed data, also a copy of the site per other device with data
# (docs/data/cuda/ beside docs/data/cpu/: site/cuda/, and a switch on every page)
if [ "$data" = "docs/data/$device" ]; then
  .venv/bin/python scripts/build_site.py --device "$device"
else
  .venv/bin/python scripts/build_site.py --data "$data"
fi
echo "site built into site/ (open site/index.html through a web server, or run with --serve)"
if [ "$serve" = 1 ]; then
  # the built site as it is (its device copies included); `mkdocs serve` rebuilds the main copy as you edit pages
  echo "serving site/ on http://127.0.0.1:8000/ (Ctrl-C stops)"
  exec .venv/bin/python -m http.server 8000 --bind 127.0.0.1 --directory site
fi
