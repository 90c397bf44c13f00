#!/usr/bin/env bash
# Install everything (scripts/install.sh) and run the whole test suite, offline: every tier (RUN_SLOW=1; plain
# `pytest` is the fast tier alone, tests/conftest.py).
#
# Two pytest processes side by side, one per core of a 2-core machine, each on one torch thread:
#   - the tests that load the real model pair (`-m real`: the --quick build end to end, whose build runs in
#     child processes, then the real-pair greedy checks, which load the pair in this process last);
#   - all the others (the fast tier, the slow statistics, the site in a browser).
# One thread each: decoding one token is a matrix-vector product bound by memory bandwidth, as fast on one
# thread as on two here; two processes with two OpenMP threads each on two cores made the threads wait for
# each other at every product (the --quick build took over twice as long and hit its timeout).
# Not pytest-xdist: its workers are scheduled without regard to memory; the real-pair tests and the --quick
# build each hold the pair (about 9 GB), and two workers running them side by side would hold it twice. Here
# they run one after the other, and the other half stays under about 1 GB.
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
.venv/bin/python -m pytest -m real "$@" >"$logs/real.log" 2>&1 &
real_pid=$!
set +e
.venv/bin/python -m pytest -m "not real" "$@" 2>&1 | tee "$logs/rest.log"
rest=${PIPESTATUS[0]}
wait "$real_pid"
real=$?
set -e
echo
echo "================ tests that load the real model pair (pytest -m real) ================"
cat "$logs/real.log"
# pytest's exit status 5: no test selected (e.g. -k picked tests of the other half only)
if [ "$real" = 5 ] && [ "$rest" = 5 ]; then exit 5; fi
[ "$real" = 5 ] && real=0
[ "$rest" = 5 ] && rest=0
echo "test.sh: real-pair half exit $real, other half exit $rest"
[ "$real" = 0 ] && [ "$rest" = 0 ]
