#!/usr/bin/env bash
# The registry fuzzer's long run (issue 29): test/fuzz/registry_fuzz.py
# against a throwaway registry server, seed after seed, until the time is
# up; prints the calls made, the distinct rules and (call, answer) states
# reached, and every violation with its seed and shrunk calls.
#
#   SNOWID_FUZZ_SEED=7 SNOWID_FUZZ_SECONDS=600 bash test/bench/fuzz.sh
#
# Seed: random unless SNOWID_FUZZ_SEED is set (it is printed); 600 s unless
# SNOWID_FUZZ_SECONDS.  SNOWID_FUZZ_EXPECT_17=1 reports the findings of
# 1.7 that issue 29 fixes as known; SNOWID_FUZZ_INVARIANTS=a,b checks only
# those (each violation then shrinks to its own calls).  --smoke: 20 s.
set -u
. "$(dirname "$0")/../lib.sh"
ensure_packages make gcc postgresql-15 postgresql-server-dev-15 libfaketime \
	python3-hypothesis python3-psycopg2 || exit 1
if [ -z "${SNOWID_SKIP_BUILD:-}" ]; then
	build_and_install /tmp/snowid-bench-build.log || { cat /tmp/snowid-bench-build.log; exit 1; }
fi
export PG_CONFIG=${PG_CONFIG:-$(command -v pg_config)}
export SNOWID_FUZZ_SEED=${SNOWID_FUZZ_SEED:-$((RANDOM * 32768 + RANDOM))}
export SNOWID_FUZZ_SECONDS=${SNOWID_FUZZ_SECONDS:-600}
[ "${1:-}" = --smoke ] && SNOWID_FUZZ_SECONDS=20
export SNOWID_FUZZ_EXAMPLES=${SNOWID_FUZZ_EXAMPLES:-50}
export SNOWID_FUZZ_STEPS=${SNOWID_FUZZ_STEPS:-40}
export SNOWID_FUZZ_PORT=${SNOWID_BENCH_PORT:-${SNOWID_FUZZ_PORT:-56630}}
echo "registry fuzzer long run: seed $SNOWID_FUZZ_SEED, $SNOWID_FUZZ_SECONDS s"
exec /usr/bin/python3 "$(dirname "$0")/../fuzz/registry_fuzz.py"
