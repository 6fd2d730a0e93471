#!/usr/bin/env bash
# The registry fuzzer's CI run (issue 29): test/fuzz/registry_fuzz.py,
# short, on the PostgreSQL of PG_CONFIG (snowid installed there), fixed
# seeds, about a minute.  Prints TAP-like "ok N - ..." / "not ok N - ..."
# lines for run-tests.sh to count; a fuzzer that dies prints "not ok".
#
#   PG_CONFIG=... bash test/fuzz/run.sh
#
# Every invariant fails the run (1.8 fixed what 1.7 broke); with
# SNOWID_FUZZ_EXPECT_17=1, run against 1.7, what 1.7 is known to break is
# reported as known findings ("# TODO") instead.  Every SNOWID_FUZZ_*
# setting of the fuzzer passes through (see its header).
set -u
here=$(cd "$(dirname "$0")" && pwd)
export PG_CONFIG=${PG_CONFIG:-pg_config}
export SNOWID_FUZZ_SEED=${SNOWID_FUZZ_SEED:-1}
export SNOWID_FUZZ_SEEDS=${SNOWID_FUZZ_SEEDS:-4}
export SNOWID_FUZZ_SECONDS=${SNOWID_FUZZ_SECONDS:-45}
export SNOWID_FUZZ_EXAMPLES=${SNOWID_FUZZ_EXAMPLES:-40}
export SNOWID_FUZZ_PORT=${SNOWID_FUZZ_PORT:-56610}
export SNOWID_FUZZ_EXPECT_17=${SNOWID_FUZZ_EXPECT_17:-0}
if ! /usr/bin/python3 -c 'import hypothesis, psycopg2' 2>/dev/null; then
	echo "not ok 1 - registry fuzzer: python3-hypothesis and python3-psycopg2 are not installed"
	exit 1
fi
out=$(mktemp "${TMPDIR:-/tmp}/snowid-fuzz.XXXXXX")
# (python3 of the system: Debian's Hypothesis and psycopg2)
timeout -k 10 "${SNOWID_FUZZ_LIMIT:-300}" /usr/bin/python3 "$here/registry_fuzz.py" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ] && ! grep -q '^not ok [0-9]' "$out"; then
	echo "not ok 999 - registry fuzzer ended with status $rc"
fi
rm -f "$out"
exit "$rc"
