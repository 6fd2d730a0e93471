#!/usr/bin/env bash
# Run the whole snowid test suite: build (warnings are errors), install, then
# pg_regress, isolation and TAP tests, each against servers they start
# themselves.  Prints a log per suite and ends with "N passed, M failed".
#
#   bash test/run-tests.sh            # everything
#   SNOWID_TAP_TESTS='test/t/001_*.pl' bash test/run-tests.sh   # some TAP files
set -u
. "$(dirname "$0")/lib.sh"

passed=0
failed=0

ensure_packages make gcc libipc-run-perl libfaketime faketime postgresql-15 \
	postgresql-server-dev-15 || { echo "could not install packages"; echo "0 passed, 1 failed"; exit 1; }

if build_and_install /tmp/snowid-build.log; then
	echo "build: ok (warnings as errors)"
else
	cat /tmp/snowid-build.log
	echo "build: FAILED"
	echo "0 passed, 1 failed"
	exit 1
fi

work=$(copy_tree_for_runner)
echo "test tree: $work"
cd "$work" || exit 1

# Each pg_regress line is "test NAME ... ok" or "... FAILED" (with
# "ok"/"failed" lower case for ignored tests).
count_regress() {
	local log=$1 ok bad
	ok=$(grep -cE '^(test | )?\S+ +\.\.\. ok' "$log")
	bad=$(grep -cE '^(test | )?\S+ +\.\.\. (FAILED|failed)' "$log")
	passed=$((passed + ok))
	failed=$((failed + bad))
	echo "  $ok passed, $bad failed"
}

run_make() {
	as_runner make -s PG_CONFIG="$PG_CONFIG" with_llvm=no "$@"
}

echo "== pg_regress"
run_make installcheck SNOWID_TEMP_INSTANCE=1 ISOLATION= TAP_TESTS= >regress.log 2>&1
grep -E '\.\.\. ' regress.log
count_regress regress.log
[ -f regression.diffs ] && cat regression.diffs && mv regression.diffs regression-regress.diffs

echo "== isolation"
run_make installcheck SNOWID_TEMP_INSTANCE=1 REGRESS= TAP_TESTS= >isolation.log 2>&1
grep -E '\.\.\. ' isolation.log
count_regress isolation.log
[ -f output_iso/regression.diffs ] && cat output_iso/regression.diffs

echo "== TAP"
run_make prove PROVE_FLAGS=-v ${SNOWID_TAP_TESTS:+PROVE_TESTS="$SNOWID_TAP_TESTS"} >tap.log 2>&1
# Count every subtest; a script that died or planned more than it ran
# counts once more as a failure.
ok=$(grep -cE '^\s*ok [0-9]+' tap.log)
bad=$(grep -cE '^\s*not ok [0-9]+' tap.log)
died=$(grep -cE 'Dubious, test returned|Bad plan|No plan found|Parse errors' tap.log)
grep -E '^test/t/.*\.\.' tap.log | sed 's/^/  /'
# For every file prove lists as failed (a failed subtest, a death, a bad
# plan), print its failing subtests with their diagnostics, the tail of its
# regress_log and of its servers' logs, so that a failure that happens once
# in many runs leaves its evidence in CI's output.
failed_files=$(sed -n 's/^\(test\/t\/[^ ]*\.pl\) *(Wstat.*/\1/p' tap.log | sort -u)
if [ "$bad" -gt 0 ] || [ "$died" -gt 0 ] || [ -n "$failed_files" ]; then
	sed -n '/^Test Summary Report/,$p' tap.log
	for t in $failed_files; do
		base=$(basename "$t" .pl)
		log=tmp_check/log/regress_log_$base
		echo "=== FAILED: $t"
		echo "--- prove's output for $t, passing subtests left out (last 60 lines):"
		awk -v t="$t" 'index($0, t " ..") == 1 { on = 1; next }
			on && (/^test\/t\/.*\.pl \.\./ || /^Test Summary Report/) { on = 0 }
			on && !/^[[:space:]]*ok [0-9]/' tap.log | tail -60
		if [ -f "$log" ]; then
			echo "--- failing subtests in $log:"
			grep -E -A8 '^(\[[^]]*\] *)?not ok [0-9]+' "$log" | head -120
			echo "--- $log (last 80 lines)"
			tail -80 "$log"
		fi
		for s in tmp_check/log/"${base}"_*.log; do
			[ -f "$s" ] && { echo "--- $s (last 25 lines)"; tail -25 "$s"; }
		done
	done
	echo "(all logs kept in $work/tmp_check/log)"
fi
grep -E '^(Files=|Result:)' tap.log
echo "  $ok passed, $((bad + died)) failed"
passed=$((passed + ok))
failed=$((failed + bad + died))
if [ "$ok" -eq 0 ] && [ "$bad" -eq 0 ]; then
	echo "TAP: no subtest ran"
	tail -30 tap.log
	failed=$((failed + 1))
fi

echo "== benchmark smoke (proves the suite runs; times nothing)"
if SNOWID_SKIP_BUILD=1 SNOWID_BENCH_PORT=55449 bash "$SNOWID_SRC/test/bench/run.sh" --smoke >bench.log 2>&1 &&
	grep -q '^| snowid_next |' bench.log && grep -q '^## 7. Instructions per ID' bench.log && ! grep -qE '\b(nan|inf)\b' bench.log; then
	echo "  bench smoke ... ok"
	passed=$((passed + 1))
else
	tail -40 bench.log
	echo "  bench smoke ... FAILED"
	failed=$((failed + 1))
fi

echo "logs: $work/{regress,isolation,tap,bench}.log"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
