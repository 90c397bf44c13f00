#!/usr/bin/env bash
# Install everything (scripts/install.sh) and run the whole test suite, offline: every tier (RUN_SLOW=1; plain
# `pytest` is the fast tier alone, tests/conftest.py).
#
# Two chains side by side, one per core of a 2-core machine, each on one torch thread, balanced by their measured
# times (TIMINGS.md):
#   - convert the default target (once per machine; a cached conversion is only checked), then
#     `-m "real or build or first_chain"`: the real-pair greedy checks (which load the pair in this process), the
#     --quick build and the trace command on a tiny pair with the default pair's tokenizer, the tiny artifact sets
#     and their sites, and the modules of tests/conftest.py's FIRST_CHAIN_MODULES (the policies'
#     statistical tests), which balance the chains' times;
#   - convert the default draft, then all the other tests (the fast tier, the audit's and the smaller head's
#     statistics, the committed site in a browser), which start as soon as the draft is converted.
# The two conversions are independent (a model each), so they run on a core each rather than one after the
# other inside the first build; the first chain's tests start once both are done (its tiny pair copies the
# draft's tokenizer).
# One thread each: decoding one token is a matrix-vector product bound by memory bandwidth, as fast on one
# thread as on two here; two processes with two OpenMP threads each on two cores made the threads wait for
# each other at every product. When the other tests are done, the real-pair process takes every core for its
# remaining tests (SPECDEC_TEST_CORES_FREE, tests/conftest.py).
# Not pytest-xdist's workers (plain `pytest` runs the fast tier on them; with RUN_SLOW=1 tests/conftest.py asks for
# none): they are scheduled without regard to memory; the real-pair tests hold the pair (about
# 9 GB), and two workers running them side by side would hold it twice. Here the other chain stays under about
# 4 GB (the draft's conversion), then 1 GB.
#
# Arguments go to both halves (e.g. -x, -ra, -k NAME, a test file); a half that selects no test is not a
# failure. The exit status is non-zero when either half fails. SPECDEC_TEST_SERIAL=1: one plain pytest run
# (use it with a -m of your own).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 RUN_SLOW=1
if [ "${SPECDEC_TEST_SERIAL:-0}" = 1 ]; then
  exec .venv/bin/python -m pytest "$@"
fi

export OMP_NUM_THREADS=1
logs=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$logs"' EXIT

convert() {  # one model of the default pair into the model cache; on a failure the real-pair tests fail too, saying why
  .venv/bin/python -c "import sys, specdec.models as m; m.converted_folder(m.PYPI_SOURCES[getattr(m, sys.argv[1])])" \
    "$1" >"$logs/convert-$1.log" 2>&1 || { echo "test.sh: converting $1 failed:"; tail -5 "$logs/convert-$1.log"; }
  echo "$SECONDS" >"$logs/convert-$1.end"
}
SECONDS=0  # the chains' times, from here
convert DEFAULT_DRAFT &
draft_pid=$!
convert DEFAULT_TARGET &
target_pid=$!

wait "$draft_pid"
set +e
(.venv/bin/python -m pytest -m "not (real or build or first_chain)" "$@"; echo $? >"$logs/rest.status"; echo "$SECONDS" >"$logs/rest.done") 2>&1 \
  | tee "$logs/rest.log" &
rest_pid=$!
wait "$target_pid"
SPECDEC_TEST_CORES_FREE="$logs/rest.done" .venv/bin/python -m pytest -m "real or build or first_chain" "$@" >"$logs/real.log" 2>&1
real=$?
real_end=$SECONDS
wait "$rest_pid"
rest=$(cat "$logs/rest.status" 2>/dev/null || echo 1)
set -e
echo
echo "================ the real model pair and the builds end to end (pytest -m \"real or build or first_chain\") ================"
cat "$logs/real.log"
# pytest's exit status 5: no test selected (e.g. -k picked tests of the other half only)
if [ "$real" = 5 ] && [ "$rest" = 5 ]; then exit 5; fi
[ "$real" = 5 ] && real=0
[ "$rest" = 5 ] && rest=0
echo "test.sh: real-pair half exit $real, other half exit $rest"
echo "test.sh: seconds from the start: draft converted at $(cat "$logs/convert-DEFAULT_DRAFT.end"), target at" \
  "$(cat "$logs/convert-DEFAULT_TARGET.end"); other half done at $(cat "$logs/rest.done" 2>/dev/null || echo '?')," \
  "real-pair half at $real_end"
[ "$real" = 0 ] && [ "$rest" = 0 ]
