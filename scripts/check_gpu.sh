#!/usr/bin/env bash
# For a GPU owner: check specdec's CUDA path on your machine, in three steps, each printed as it goes.
#   1. the real-pair tests on the GPU in bfloat16 (the build's CUDA dtype): greedy equality token for token, every
#      policy and drafter, EOS, the KV caches after every step (tests/test_real_pair.py, SPECDEC_TEST_DEVICE=cuda);
#   2. a --quick build on the GPU into a temporary folder (every stage; the pair's stages run on the GPU, the
#      exactness stage and the notebook on the CPU, as their metadata says);
#   3. the site built from it (figures, then mkdocs build --strict).
# Needs a CUDA build of torch in .venv (README, "I have a GPU"): this script will not replace a CPU build.
# Usage: bash scripts/check_gpu.sh [--dtype float32]   (the dtype of steps 1 and 2; default bfloat16)
set -euo pipefail
cd "$(dirname "$0")/.."
dtype=bfloat16
if [ "${1:-}" = --dtype ]; then dtype=${2:?--dtype needs a value}; fi
if ! .venv/bin/python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "check_gpu.sh: .venv has no torch that sees a GPU. Install the CUDA build first (README, 'I have a GPU'):" >&2
  echo "  python3 -m venv .venv && .venv/bin/pip install torch==2.13.0 && bash scripts/install.sh" >&2
  exit 2
fi
bash scripts/install.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/python -c "import torch; print('check_gpu.sh: torch', torch.__version__, 'on', torch.cuda.get_device_name(0))"
out=$(mktemp -d)
echo "== 1/3 real-pair tests on cuda, $dtype"
SPECDEC_RUN_REAL=1 SPECDEC_TEST_DEVICE=cuda SPECDEC_TEST_DTYPE=$dtype .venv/bin/python -m pytest -m real -q \
  tests/test_real_pair.py
echo "== 2/3 a --quick build on cuda into $out/data"
.venv/bin/python scripts/build_data.py --quick --device cuda --dtype "$dtype" --out "$out/data"
echo "== 3/3 the site from it"
mkdir -p "$out/site-src"
cp -r docs mkdocs.yml specdec specdec_site "$out/site-src/"
rm -rf "$out/site-src/docs/data/gpu-check" && cp -r "$out/data" "$out/site-src/docs/data/gpu-check"
.venv/bin/python scripts/build_figures.py --data "$out/site-src/docs/data/gpu-check" --out "$out/site-src/docs/figures"
repo=$PWD
(cd "$out/site-src" && NO_MKDOCS_2_WARNING=1 "$repo/.venv/bin/mkdocs" build --strict -d "$out/site")
echo "check_gpu.sh: all three passed; the quick build's artifacts are in $out/data, its site in $out/site"
