#!/usr/bin/env bash
# Run the whole snowid test suite on every supported PostgreSQL major: for
# each, build snowid (warnings are errors) and install it, then run
# pg_regress, isolation, TAP, the registry fuzzer, PostgreSQL's own
# regression suite with snowid in it (18 only: test/core/run.sh),
# postgres_exporter with snowid's query file (15 only:
# test/monitoring/exporter.sh) and the benchmark smoke test, each against
# servers they start themselves.  Prints
# a section per major and ends with one line "N passed, M failed" summed
# over all of them.
#
#   bash test/run-tests.sh                                 # 15, 17, 18 and 19
#   PG_VERSIONS="15 18" bash test/run-tests.sh             # some majors
#   PG_CONFIG=/path/to/pg_config bash test/run-tests.sh    # one installation you have
#   SNOWID_TAP_TESTS='test/t/001_*.pl' bash test/run-tests.sh   # some TAP files
#   SNOWID_TAP_JOBS=1 bash test/run-tests.sh               # TAP files one at a time (default 2)
#   SNOWID_PREBUILD=0 bash test/run-tests.sh               # build 17, 18, 19 only when their turn comes
#
# 15 comes from Debian's packages; the others are built from Debian's source
# packages into a cache outside the repository by test/pg-build.sh (a few
# minutes each, the first time only).  19 (a release candidate) is
# optional: if its source package cannot be downloaded here it is reported
# as skipped, not counted; for the others that is a failure.
#
# The Citus TAP tests (test/t/07x_*.pl) need Citus in the PostgreSQL under
# test: test/citus-build.sh builds it from ../shared/vendor/citus-14.0.1.tar.gz
# beside the repository (or $SNOWID_CITUS_TARBALL) into it, once (about half
# a minute).  Where it cannot (no tarball, or a major Citus does not support:
# 15, 19), those files are skipped and the reason is printed, also in the
# summary.  The same for pgEdge's snowflake (test/t/083_from_pgedge.pl):
# test/snowflake-build.sh builds it from
# ../shared/vendor/pgedge-snowflake-2.6.0.tar.gz (or $SNOWID_SNOWFLAKE_TARBALL)
# into the PostgreSQL under test (a second or two, every major), once.
# TAP 102's old member: test/old-build.sh builds snowid 1.10 from this
# repository's git history into a copy of the first major's installation
# (under a minute, once); elsewhere, or without that history, its part is
# skipped with the reason.
set -u
SNOWID_USER_PG_CONFIG=${PG_CONFIG:-}
. "$(dirname "$0")/lib.sh"

passed=0
failed=0
summary=()
base_path=$PATH

ensure_packages make gcc libipc-run-perl postgresql-15 \
	postgresql-server-dev-15 python3-hypothesis python3-psycopg2 || { echo "could not install packages"; echo "0 passed, 1 failed"; exit 1; }
# pg_partman 4.7 for the pg_partman recipe (TAP 080) on 15, where Debian
# packages it; optional: without it that file skips and says why.
ensure_packages postgresql-15-partman ||
	echo "snowid: postgresql-15-partman could not be installed: TAP 080 (pg_partman) will skip"

# The pg_config of a major: Debian's for 15, else a build from the cache.
# Returns 3 if the major's source cannot be had here.
pg_config_of() {
	local major=$1 out rc
	if [ "$major" = 15 ]; then
		echo /usr/lib/postgresql/15/bin/pg_config
		return 0
	fi
	# The background build of this major (prebuild, below), if one runs:
	# wait for it, and take its installation if it built.
	if [ -n "${prebuild_pid:-}" ]; then
		while [ ! -f "$prebuild_dir/$major.rc" ] && kill -0 "$prebuild_pid" 2>/dev/null; do
			sleep 5
		done
		if [ "$(cat "$prebuild_dir/$major.rc" 2>/dev/null)" = 0 ] &&
			bash "$SNOWID_SRC/test/pg-build.sh" --print-pg-config "$major" 2>/dev/null; then
			return 0
		fi
	fi
	out=$(bash "$SNOWID_SRC/test/pg-build.sh" "$major" 2>"/tmp/snowid-pg-build-$major.log")
	rc=$?
	if [ $rc -ne 0 ]; then
		tail -15 "/tmp/snowid-pg-build-$major.log" | sed 's/^/  /'
		return $rc
	fi
	echo "$out" | tail -n1
}

# pg_regress and the isolation tester print "test NAME ... ok" (15) or
# "ok N - NAME" (16 and later, TAP-like); failures "... FAILED" or "not ok".
count_regress() {
	local log=$1 ok bad
	ok=$(grep -cE '^(test | )?\S+ +\.\.\. ok|^ok [0-9]+ ' "$log")
	bad=$(grep -cE '^(test | )?\S+ +\.\.\. (FAILED|failed)|^not ok [0-9]+ ' "$log")
	major_passed=$((major_passed + ok))
	major_failed=$((major_failed + bad))
	echo "  $ok passed, $bad failed"
}

run_make() {
	as_runner make -s PG_CONFIG="$PG_CONFIG" with_llvm=no "$@"
}

# Kill the servers a stopped TAP file left running (their postmaster.pid
# files lie under tmp_check/t_<file>_<node>_data/), with their children.
kill_tap_servers() {
	local base=$1 pidfile pid
	for pidfile in tmp_check/t_"${base}"_*_data/pgdata/postmaster.pid; do
		[ -f "$pidfile" ] || continue
		pid=$(head -1 "$pidfile")
		[ -n "$pid" ] || continue
		pkill -9 -P "$pid" 2>/dev/null
		kill -9 "$pid" 2>/dev/null
	done
	return 0
}

# One TAP file in a prove of its own, so that a file that bails out (a
# server that does not start) cannot stop the files after it.  Counts every
# subtest; a script that died or planned more than it ran counts once more
# as a failure.  For a failure, prints the failing subtests with their
# diagnostics and the tails of its logs (prove deletes tmp_check before the
# next file), so that a failure that happens once in many runs leaves its
# evidence in the output.
# A TAP file that runs past SNOWID_TAP_LIMIT seconds (default 900; the
# slowest file takes about 2 minutes) is stopped, its servers killed, and
# it is run once more; a second overrun counts as a failure.  The one hang
# seen so far was not snowid's: with the clock faked by libfaketime, a
# backend interrupted by SIGALRM while libfaketime held glibc's stdio lock
# (it re-reads its offset file on every clock read) called the clock again
# from PostgreSQL's timeout handler and deadlocked on that lock.  The clock
# tests now fake the clock with test/clockshim.c, which reads its file
# with async-signal-safe calls only.
#   run_tap_file FILE RESULTS
# runs in the current directory (a lane's copy of the test tree), prints
# its report (a line, and the evidence of a failure) and writes
# "PASSED FAILED" to RESULTS/<file>.count ("skip" for a file that skips).
run_tap_file() {
	local t=$1 results=$2 out base ok bad died log try rc runner
	base=$(basename "$t" .pl)
	out=$results/tap-$base.log
	runner=()
	[ "$(id -u)" -eq 0 ] && runner=(runuser -u postgres --)
	for try in 1 2; do
		rc=0
		timeout -k 30 "${SNOWID_TAP_LIMIT:-900}" \
			"${runner[@]}" env PG_TEST_PORT_DIR="$results/portlock" \
			make -s PG_CONFIG="$PG_CONFIG" with_llvm=no prove PROVE_FLAGS=-v PROVE_TESTS="$t" >"$out" 2>&1 || rc=$?
		[ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] && break
		echo "  $t ran past ${SNOWID_TAP_LIMIT:-900} s (try $try): stopped" | tee -a "$out"
		kill_tap_servers "$base"
		[ "$try" -eq 1 ] && { cp "$out" "$out.try1"; echo "  $t: running it once more"; }
	done
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		echo "not ok 9999 - $t ran past the time limit twice" >>"$out"
	fi
	ok=$(grep -cE '^\s*ok [0-9]+' "$out")
	bad=$(grep -cE '^\s*not ok [0-9]+' "$out")
	died=$(grep -cE 'Dubious, test returned|Bad plan|No plan found|Parse errors|Bailout called|FAILED--Further testing stopped' "$out")
	[ "$died" -gt 0 ] && died=1
	if [ "$ok" -eq 0 ] && [ "$bad" -eq 0 ] && [ "$died" -eq 0 ]; then
		# A file that skips says why ("skipped: <reason>"); one that ran
		# nothing without saying so failed.
		if grep -qE '^\S+\.pl \.+ skipped: ' "$out"; then
			printf '  %-40s skipped: %s\n' "$t" "$(sed -n 's/^\S*\.pl \.* skipped: //p' "$out" | head -1)"
			echo skip >"$results/$base.count"
			return
		fi
		died=1
	fi
	printf '  %-40s %4d passed, %d failed (%s s)\n' "$t" "$ok" "$((bad + died))" \
		"$(grep -oE '[0-9]+ wallclock secs' "$out" | head -1 | cut -d' ' -f1)"
	if [ "$bad" -gt 0 ] || [ "$died" -gt 0 ]; then
		log=tmp_check/log/regress_log_$base
		echo "=== FAILED: $t (PostgreSQL $major)"
		echo "--- prove's output, passing subtests left out (last 60 lines):"
		grep -vE '^\s*ok [0-9]' "$out" | tail -60
		if [ -f "$log" ]; then
			echo "--- failing subtests in $log:"
			grep -E -A8 '^(\[[^]]*\] *)?not ok [0-9]+' "$log" | head -120
			echo "--- $log (last 80 lines)"
			tail -80 "$log"
		fi
		for s in tmp_check/log/"${base}"_*.log; do
			[ -f "$s" ] && { echo "--- $s (last 25 lines)"; tail -25 "$s"; }
		done
		mkdir -p "$results/failed-logs" && cp -r tmp_check/log "$results/failed-logs/$base" 2>/dev/null
	fi
	echo "$ok $((bad + died))" >"$results/$base.count"
}

# The TAP files, SNOWID_TAP_JOBS (default 2) at a time: most of their time
# is spent waiting for leases, renewals and clocks, not on a core.  Each
# lane is a copy of the test tree (prove empties its tmp_check), takes the
# next file from one queue (the slowest known files first, so that the
# lanes end together) and runs it as run_tap_file does; every server picks
# its own port (PostgreSQL::Test::Cluster, its reservations in one
# directory for all lanes).  The reports are printed in the files' order,
# each when its file and all before it are done, and counted at the end.
#   run_tap_files FILE...
run_tap_files() {
	local jobs=${SNOWID_TAP_JOBS:-2} results queue t k lane base c ok bad shown=0 lanes=()
	results=$PWD/tap-results
	rm -rf "$results" && mkdir -p "$results/portlock"
	[ "$(id -u)" -eq 0 ] && chown -R postgres "$results"
	queue=$results/queue
	# Slowest first (seconds on a 2-core machine, PostgreSQL 18): 095 130
	# (15 only), 110 150 (the first major: a million keys; 40 elsewhere),
	# 100 92, 068 90, 094 75, 052 74, 057 65, 051 57, 059 56, 050 48, 096
	# 40, 097 33, 055 32, 070 28, 071 24.
	{
		for k in 095 110 100 068 094 052 057 051 059 050 096 097 055 070 071; do
			for t in "$@"; do
				[[ $(basename "$t") == ${k}_* ]] && echo "$t"
			done
		done
		for t in "$@"; do
			[[ " 095 110 100 068 094 052 057 051 059 050 096 097 055 070 071 " == *" $(basename "$t" | cut -c1-3) "* ]] || echo "$t"
		done
	} >"$queue"
	echo 0 >"$queue.next"
	for k in $(seq "$jobs"); do
		lane=$PWD
		if [ "$k" -gt 1 ]; then
			lane=$(copy_tree_for_runner)
		fi
		(
			cd "$lane" || exit 1
			while :; do
				t=$(
					exec 8>>"$queue.lock"
					flock 8
					n=$(cat "$queue.next")
					echo $((n + 1)) >"$queue.next"
					sed -n "$((n + 1))p" "$queue"
				)
				[ -n "$t" ] || break
				base=$(basename "$t" .pl)
				run_tap_file "$t" "$results" >"$results/$base.report.part" 2>&1
				mv "$results/$base.report.part" "$results/$base.report"
			done
		) &
		lanes+=($!)
	done
	# Print each report as soon as it and the ones before it are done.
	while :; do
		while [ "$shown" -lt $# ]; do
			k=$((shown + 1))
			base=$(basename "${!k}" .pl)
			[ -f "$results/$base.report" ] || break
			cat "$results/$base.report"
			shown=$k
		done
		[ "$shown" -lt $# ] || break
		if ! kill -0 "${lanes[@]}" 2>/dev/null; then
			# every lane ended: a file with no report is a failure
			k=$((shown + 1))
			base=$(basename "${!k}" .pl)
			[ -f "$results/$base.report" ] && continue
			echo "  ${!k}: no report (its lane ended early): FAILED"
			echo "0 1" >"$results/$base.count"
			echo "  (no report)" >"$results/$base.report"
			continue
		fi
		sleep 1
	done
	wait "${lanes[@]}"
	for t in "$@"; do
		base=$(basename "$t" .pl)
		c=$(cat "$results/$base.count" 2>/dev/null || echo "0 1")
		[ "$c" = skip ] && continue
		read -r ok bad <<<"$c"
		major_passed=$((major_passed + ok))
		major_failed=$((major_failed + bad))
		cat "$results/tap-$base.log.try1" "$results/tap-$base.log" >>tap.log 2>/dev/null
	done
	[ -d "$results/failed-logs" ] && cp -r "$results/failed-logs" . 2>/dev/null
	return 0
}

# Citus for the Citus TAP tests, installed into the PostgreSQL of PG_CONFIG;
# where it cannot be, SNOWID_CITUS_SKIP holds the reason (those tests read
# it and skip) and citus_note says it for the summary.  A failed build
# counts as a failure.
prepare_citus() {
	local out rc
	citus_note=
	out=$(bash "$SNOWID_SRC/test/citus-build.sh" "$PG_CONFIG" 2>&1)
	rc=$?
	echo "$out" | sed 's/^/  /'
	if [ $rc -eq 0 ]; then
		unset SNOWID_CITUS_SKIP
		return
	fi
	if [ $rc -eq 3 ]; then
		SNOWID_CITUS_SKIP=$(echo "$out" | tail -n1 | sed 's/^citus-build: //; s/: the Citus tests are skipped$//')
	else
		SNOWID_CITUS_SKIP="the build of Citus failed (counted as a failure)"
		major_failed=$((major_failed + 1))
	fi
	export SNOWID_CITUS_SKIP
	citus_note=" (Citus tests skipped: $SNOWID_CITUS_SKIP)"
	echo "Citus tests skipped: $SNOWID_CITUS_SKIP"
}

# pgEdge snowflake for test/t/083_from_pgedge.pl, installed into the
# PostgreSQL of PG_CONFIG; where it cannot be (no tarball),
# SNOWID_SNOWFLAKE_SKIP holds the reason (083 reads it and skips) and
# snowflake_note says it for the summary.  A failed build counts as a
# failure.
prepare_snowflake() {
	local out rc
	snowflake_note=
	out=$(bash "$SNOWID_SRC/test/snowflake-build.sh" "$PG_CONFIG" 2>&1)
	rc=$?
	echo "$out" | sed 's/^/  /'
	if [ $rc -eq 0 ]; then
		unset SNOWID_SNOWFLAKE_SKIP
		return
	fi
	if [ $rc -eq 3 ]; then
		SNOWID_SNOWFLAKE_SKIP=$(echo "$out" | tail -n1 | sed 's/^snowflake-build: //; s/: the pgEdge snowflake test is skipped$//')
	else
		SNOWID_SNOWFLAKE_SKIP="the build of pgEdge snowflake failed (counted as a failure)"
		major_failed=$((major_failed + 1))
	fi
	export SNOWID_SNOWFLAKE_SKIP
	snowflake_note=" (pgEdge snowflake test skipped: $SNOWID_SNOWFLAKE_SKIP)"
	echo "pgEdge snowflake test skipped: $SNOWID_SNOWFLAKE_SKIP"
}

# snowid 1.10 for TAP 102's old member, on the first major of the run only
# (1.10 predates the shims for newer majors); where it cannot be built,
# SNOWID_OLD_SKIP holds the reason (102 reads it and skips that part).  A
# failed build counts as a failure.
prepare_old_member() {
	local out rc
	old_note=
	unset SNOWID_OLD_INSTALL
	if [ -n "${old_bindir:-}" ]; then
		SNOWID_OLD_SKIP="built for the first major of the run only"
		export SNOWID_OLD_SKIP
		return
	fi
	out=$(bash "$SNOWID_SRC/test/old-build.sh" "$PG_CONFIG" 2>&1)
	rc=$?
	echo "$out" | sed 's/^/  /'
	if [ $rc -eq 0 ]; then
		SNOWID_OLD_INSTALL=$(echo "$out" | tail -n1)
		export SNOWID_OLD_INSTALL
		unset SNOWID_OLD_SKIP
		return
	fi
	if [ $rc -eq 3 ]; then
		SNOWID_OLD_SKIP=$(echo "$out" | tail -n1 | sed 's/^old-build: //; s/: the old member test is skipped$//')
	else
		SNOWID_OLD_SKIP="the build of snowid 1.10 failed (counted as a failure)"
		major_failed=$((major_failed + 1))
	fi
	export SNOWID_OLD_SKIP
	old_note=" (1.10 member test skipped: $SNOWID_OLD_SKIP)"
	echo "1.10 member test skipped: $SNOWID_OLD_SKIP"
}

# One benchmark of test/bench as a smoke run, in the current directory:
#   bench_smoke LABEL SCRIPT PORT LOG CHECK
# runs SCRIPT --smoke on PORT into LOG, then CHECK LOG, which returns 0
# (passed), 1 (failed) or 2 (skipped, not counted), and may print a note
# for the line it gets (the skip's reason, say).
bench_smoke() {
	local label=$1 script=$2 port=$3 log=$4 check=$5 note= rc=1
	if SNOWID_SKIP_BUILD=1 SNOWID_BENCH_PORT=$port bash "$SNOWID_SRC/test/bench/$script" --smoke >"$log" 2>&1; then
		note=$("$check" "$log")
		rc=$?
	fi
	if [ $rc -eq 0 ]; then
		echo "  $label smoke ... ok${note:+ ($note)}"
		major_passed=$((major_passed + 1))
	elif [ $rc -eq 2 ]; then
		echo "  $label smoke ... $note"
	else
		tail -40 "$log"
		echo "  $label smoke ... FAILED ($PWD/$log)"
		major_failed=$((major_failed + 1))
	fi
}

no_nan() { ! grep -qE '\b(nan|inf)\b' "$1"; }
check_run_bench() {
	grep -q '^| snowid_next |' "$1" && grep -q '^## 7. Instructions per ID' "$1" &&
		grep -q '^## 8. Two bulk sessions' "$1" && no_nan "$1"
}
check_registry_bench() { grep -q '^| bulk: ms for' "$1" && no_nan "$1"; }
check_renewals_bench() {
	grep -q '^| p99 renewal at 1024/s' "$1" && grep -q 'not held by their role at the end: 0\.' "$1"
}
check_inserts_bench() { grep -q '^| snowid_hash8 |' "$1" && no_nan "$1"; }
# counters per key (issue 41): every row of the table, no empty TPS
check_counters_bench() { [ "$(grep -c '^| [0-9]* | [14] | [0-9]' "$1")" -eq 4 ] && no_nan "$1"; }
check_uuid_bench() {
	grep -q '^| bulk, ns per value above the floor |' "$1" &&
		grep -q '^| out of order across 4 sessions, by commit |' "$1" && no_nan "$1" || return 1
	if grep -q '^uuid bench: uuidv7() skipped: ' "$1"; then
		echo "uuidv7() skipped: PostgreSQL < 18"
	else
		! grep -q 'n/a (PostgreSQL < 18)' "$1"
	fi
}
check_mesh_bench() {
	if grep -q '^mesh bench: skipped: ' "$1"; then
		sed -n 's/^mesh bench: //p' "$1" | head -1
		return 2
	fi
	grep -q '^| `snowid_next()` |' "$1" && grep -q 'Duplicate keys at the end, all tables: 0\.' "$1" &&
		no_nan "$1" || return 1
	if grep -q '^mesh bench: uuidv7() skipped: ' "$1"; then
		echo "uuidv7() skipped: PostgreSQL < 18"
	else
		! grep -q 'n/a (PostgreSQL < 18)' "$1"
	fi
}
check_citus_bench() {
	if grep -q '^citus bench: skipped: ' "$1"; then
		sed -n 's/^citus bench: //p' "$1" | head -1
		return 2
	fi
	grep -q '^| snowid_next() |' "$1" && grep -q '^Duplicate keys at the end, all tables: 0\.' "$1" && no_nan "$1"
}

# The whole suite on the installation named by PG_CONFIG.
run_suite() {
	local work t side side_passed side_failed
	if build_and_install "/tmp/snowid-build-$major.log"; then
		echo "build: ok (warnings as errors)"
	else
		cat "/tmp/snowid-build-$major.log"
		echo "build: FAILED"
		major_failed=$((major_failed + 1))
		return
	fi

	work=$(copy_tree_for_runner)
	echo "test tree: $work"
	cd "$work" || return

	echo "== pg_regress"
	run_make installcheck SNOWID_TEMP_INSTANCE=1 ISOLATION= >regress.log 2>&1
	grep -E '\.\.\. |^(not )?ok [0-9]+ ' regress.log
	count_regress regress.log
	[ -f regression.diffs ] && cat regression.diffs && mv regression.diffs regression-regress.diffs

	echo "== isolation"
	run_make installcheck SNOWID_TEMP_INSTANCE=1 REGRESS= >isolation.log 2>&1
	grep -E '\.\.\. |^(not )?ok [0-9]+ ' isolation.log
	count_regress isolation.log
	[ -f output_iso/regression.diffs ] && cat output_iso/regression.diffs

	# The benchmark smoke runs (servers of their own, on sockets only, so
	# that no TAP file can take their ports) go on beside the TAP files;
	# their report prints after the fuzzer's.
	(
		renice -n 10 -p "$BASHPID" >/dev/null 2>&1 # they time nothing
		major_passed=0
		major_failed=0
		bench_smoke bench run.sh 55449 bench.log check_run_bench
		bench_smoke "registry bench" registry.sh 55451 bench-registry.log check_registry_bench
		bench_smoke "renewals bench" renewals.sh 55461 bench-renewals.log check_renewals_bench
		bench_smoke "inserts bench" inserts.sh 55455 bench-inserts.log check_inserts_bench
		# snowid beside uuidv7() (issue 25): below PostgreSQL 18 the uuidv7()
		# rows say "n/a (PostgreSQL < 18)" and the rest runs.
		bench_smoke "uuid bench" uuid.sh 55470 bench-uuid.log check_uuid_bench
		# three servers under bidirectional logical replication (issue 31):
		# skipped on 15 (no origin = none), uuidv7() n/a below 18.
		bench_smoke "mesh bench" mesh.sh 55484 bench-mesh.log check_mesh_bench
		bench_smoke "counters bench" counters.sh 55495 bench-counters.log check_counters_bench
		echo "$major_passed $major_failed" >bench-side.count
	) >bench-side.out 2>&1 &
	side=$!

	echo "== TAP (the benchmark smoke runs go on beside it)"
	: >tap.log
	# shellcheck disable=SC2086 # a glob, split on purpose
	run_tap_files ${SNOWID_TAP_TESTS:-test/t/*.pl}
	wait "$side"

	# The registry fuzzer (issue 29): about a minute, fixed seeds; its
	# "ok N" / "not ok N" lines count as pg_regress's do.
	echo "== registry fuzzer"
	bash test/fuzz/run.sh >fuzz.log 2>&1
	grep -E '^(not )?ok [0-9]+ ' fuzz.log
	count_regress fuzz.log
	grep -q '^not ok [0-9]' fuzz.log && grep -E -A40 '^not ok [0-9]' fuzz.log | head -120

	# PostgreSQL's own regression suite (parallel_schedule) on a server
	# with snowid preloaded and created in every test database, compared
	# with the differences snowid is known to make (issue 38): about a
	# minute, on 18 only (elsewhere it says why it skips).  Its "ok N" /
	# "not ok N" lines count as pg_regress's do: one per core test that
	# snowid is expected to change, one for all the others.
	echo "== PostgreSQL's own regression suite with snowid in it"
	bash test/core/run.sh >core.log 2>&1
	if grep -q '^core: skipped: ' core.log; then
		sed -n 's/^core: /  /p' core.log
	elif grep -qE '^core: [0-9]+ passed, [0-9]+ failed' core.log; then
		grep -E '^(not )?ok [0-9]+ ' core.log
		count_regress core.log
		grep -q '^core: [0-9]* passed, 0 failed' core.log || grep -vE '^(not )?ok [0-9]+ ' core.log | head -200
	else
		tail -40 core.log
		echo "  test/core/run.sh ended without its count: FAILED"
		major_failed=$((major_failed + 1))
	fi

	# snowid's query file for postgres_exporter (issue 40), on 15 only:
	# test/monitoring/exporter.sh scrapes a server of this installation with
	# Debian 12's prometheus-postgres-exporter as a pg_monitor login, its
	# "ok - " / "not ok - " lines counted as newcomer.sh's are; skipped,
	# saying why (also in the summary), where the exporter cannot be
	# installed.
	exporter_note=
	if [ "$major" = 15 ]; then
		echo "== postgres_exporter with test/monitoring/snowid-queries.yaml"
		bash test/monitoring/exporter.sh >exporter.log 2>&1
		grep -E '^(not )?ok - |^exporter: ' exporter.log | sed 's/^/  /'
		if grep -q '^exporter: skipped: ' exporter.log; then
			exporter_note=" (exporter check skipped: $(sed -n 's/^exporter: skipped: //p' exporter.log | head -1))"
		else
			e_ok=$(grep -c '^ok - ' exporter.log)
			e_bad=$(grep -c '^not ok - ' exporter.log)
			grep -q '^exporter: [0-9]* passed' exporter.log || e_bad=$((e_bad + 1))
			[ "$e_bad" -gt 0 ] && tail -40 exporter.log
			major_passed=$((major_passed + e_ok))
			major_failed=$((major_failed + e_bad))
		fi
	fi

	echo "== benchmark smoke (proves the suite runs; times nothing)"
	cat bench-side.out
	read -r side_passed side_failed <bench-side.count 2>/dev/null || {
		side_passed=0
		side_failed=1
		echo "  benchmark smoke runs beside TAP: no count (FAILED)"
	}
	major_passed=$((major_passed + side_passed))
	major_failed=$((major_failed + side_failed))
	# The Citus bench (issue 23) listens on 127.0.0.1, so it runs after the
	# TAP files, whose servers may take any free TCP port.  Where Citus
	# cannot be had (no tarball, a major Citus 14 does not build against)
	# it prints "citus bench: skipped: <reason>", counted neither way.
	SNOWID_BENCH_PG_CONFIG=$PG_CONFIG bench_smoke "citus bench" citus.sh 55490 bench-citus.log check_citus_bench
	echo "logs: $work/{regress,isolation,tap,fuzz,core,exporter,bench,bench-registry,bench-renewals,bench-inserts,bench-uuid,bench-mesh,bench-citus}.log"
	cd "$SNOWID_SRC" || return
}

if [ -n "${SNOWID_USER_PG_CONFIG:-}" ]; then
	majors=user
else
	majors=${PG_VERSIONS:-15 17 18 19}
fi

# Building PostgreSQL 17, 18 and 19 from source (and Citus and pgEdge
# snowflake into each) is most of a fresh machine's run: it goes on in the
# background from the start, one major after the other, while the suites of
# the majors already there run; pg_config_of waits for the major it needs.
# A major that does not build is built once more in the foreground, for its
# error and log.
prebuild_pid=
prebuild_dir=$(mktemp -d "${TMPDIR:-/tmp}/snowid-prebuild.XXXXXX")
prebuild() {
	local major out rc
	# niced: the builds take what the tests leave of the cores
	renice -n 15 -p "$BASHPID" >/dev/null 2>&1
	for major in "$@"; do
		[ "$major" = 15 ] && continue
		rc=0
		out=$(bash "$SNOWID_SRC/test/pg-build.sh" "$major" 2>"$prebuild_dir/$major.log") || rc=$?
		if [ "$rc" -eq 0 ]; then
			bash "$SNOWID_SRC/test/citus-build.sh" "$(echo "$out" | tail -n1)" \
				>"$prebuild_dir/citus-$major.log" 2>&1
			bash "$SNOWID_SRC/test/snowflake-build.sh" "$(echo "$out" | tail -n1)" \
				>"$prebuild_dir/snowflake-$major.log" 2>&1
		fi
		echo "$rc" >"$prebuild_dir/$major.rc"
	done
}
if [ "$majors" != user ] && [ "${SNOWID_PREBUILD:-1}" = 1 ]; then
	prebuild $majors &
	prebuild_pid=$!
	trap 'kill "$prebuild_pid" 2>/dev/null' EXIT
fi

for major in $majors; do
	major_passed=0
	major_failed=0
	if [ "$major" = user ]; then
		PG_CONFIG=$SNOWID_USER_PG_CONFIG
		major=$("$PG_CONFIG" --version | sed -n 's/^PostgreSQL \([0-9]*\).*/\1/p')
		echo "=================== PostgreSQL $major ($PG_CONFIG)"
	else
		echo "=================== PostgreSQL $major"
		PG_CONFIG=$(pg_config_of "$major")
		rc=$?
		if [ $rc -eq 3 ] && [[ " ${SNOWID_OPTIONAL_MAJORS:-19} " == *" $major "* ]]; then
			echo "PostgreSQL $major: its source package cannot be downloaded here: skipped"
			summary+=("PostgreSQL $major: skipped (no source package)")
			continue
		elif [ $rc -ne 0 ]; then
			echo "PostgreSQL $major: could not be built: FAILED"
			summary+=("PostgreSQL $major: build of the server failed")
			failed=$((failed + 1))
			continue
		fi
		echo "pg_config: $PG_CONFIG ($("$PG_CONFIG" --version))"
	fi
	export PG_CONFIG
	export PATH="$("$PG_CONFIG" --bindir):$base_path"
	# TAP 040 upgrades a cluster of the oldest major tested in this run
	# (snowid installed there by this run) to this one with pg_upgrade.
	# The fault soak (TAP 095) runs on the first major of the run only: its
	# faults do not depend on the major, and it takes two minutes.  TAP 110
	# takes a fast counter's keys through a cache of 1,000: a million keys
	# on the first major (issue 41's figure), 50,000 on the others (the same
	# code, evicted 50 times over, in a quarter of the time of its default).
	if [ -n "${old_bindir:-}" ]; then
		export SNOWID_OLD_PG_BINDIR=$old_bindir
		export SNOWID_SOAK_DONE_ON=$first_major
		export SNOWID_COUNTER_KEYS=50000
	else
		unset SNOWID_OLD_PG_BINDIR SNOWID_SOAK_DONE_ON
		export SNOWID_COUNTER_KEYS=1000000
	fi
	echo "== Citus"
	prepare_citus
	echo "== pgEdge snowflake"
	prepare_snowflake
	echo "== snowid 1.10 (an old member)"
	prepare_old_member
	run_suite
	if [ -f "$("$PG_CONFIG" --pkglibdir)/snowid.so" ]; then
		if [ -z "${old_bindir:-}" ]; then
			old_bindir=$("$PG_CONFIG" --bindir)
			first_major=$major
		fi
		last_major=$major
	fi
	echo "PostgreSQL $major: $major_passed passed, $major_failed failed$citus_note$snowflake_note${old_note:-}${exporter_note:-}"
	summary+=("PostgreSQL $major: $major_passed passed, $major_failed failed$citus_note$snowflake_note${old_note:-}${exporter_note:-}")
	passed=$((passed + major_passed))
	failed=$((failed + major_failed))
done

# The two-major benchmark, as a smoke run: the first and the last major
# this run tested.
if [ -n "${old_bindir:-}" ] && [ -n "${last_major:-}" ] && [ "$last_major" != "$first_major" ]; then
	echo "=================== benchmark smoke, PostgreSQL $first_major beside $last_major (times nothing)"
	if SNOWID_SKIP_BUILD=1 bash "$SNOWID_SRC/test/bench/majors.sh" --smoke "$first_major" "$last_major" >/tmp/snowid-majors-smoke.log 2>&1 &&
		grep -q '^| `snowid_next` |' /tmp/snowid-majors-smoke.log; then
		echo "  majors bench smoke ... ok"
		passed=$((passed + 1))
	else
		tail -30 /tmp/snowid-majors-smoke.log
		echo "  majors bench smoke ... FAILED"
		failed=$((failed + 1))
	fi
	summary+=("benchmark smoke on PostgreSQL $first_major and $last_major")
fi

# The two-build benchmark, as a smoke run: the commit before this one
# beside this one, on the last major tested (a source build: its
# installation is copied per build).  Needs the git history (a clone).
if [ -n "${last_major:-}" ] && [ "$last_major" != 15 ] &&
	git -C "$SNOWID_SRC" rev-parse -q --verify HEAD~1 >/dev/null 2>&1; then
	echo "=================== benchmark smoke, two builds (HEAD~1 beside HEAD) on PostgreSQL $last_major (times nothing)"
	if PG_MAJOR=$last_major SNOWID_BENCH_PORT=55457 bash "$SNOWID_SRC/test/bench/builds.sh" --smoke HEAD~1 HEAD >/tmp/snowid-builds-smoke.log 2>&1 &&
		grep -q '^| `snowid_next` |' /tmp/snowid-builds-smoke.log; then
		echo "  builds bench smoke ... ok"
		passed=$((passed + 1))
	else
		tail -30 /tmp/snowid-builds-smoke.log
		echo "  builds bench smoke ... FAILED"
		failed=$((failed + 1))
	fi
	summary+=("benchmark smoke of two builds on PostgreSQL $last_major")
fi

# A release a packager can take (test/dist.sh): the versions of META.json,
# snowid.control and the newest upgrade script agree, META.json follows
# PGXN's spec, and make dist's zip builds, installs and passes installcheck
# from a clean directory, on Debian's PostgreSQL 15.  Needs the git history.
echo "=================== a release from make dist (Debian's PostgreSQL 15)"
PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config bash "$SNOWID_SRC/test/dist.sh" >/tmp/snowid-dist.log 2>&1
grep -E '^(not )?ok - |^dist: ' /tmp/snowid-dist.log | sed 's/^/  /'
d_ok=$(grep -c '^ok - ' /tmp/snowid-dist.log)
d_bad=$(grep -c '^not ok - ' /tmp/snowid-dist.log)
grep -q '^dist: [0-9]* passed' /tmp/snowid-dist.log || { d_bad=$((d_bad + 1)); tail -30 /tmp/snowid-dist.log; }
[ "$d_bad" -gt 0 ] && grep -A30 '^--- ' /tmp/snowid-dist.log | head -100
passed=$((passed + d_ok))
failed=$((failed + d_bad))
summary+=("release zip (make dist): $d_ok passed, $d_bad failed")

# The ORMs people use (test/orm/run.sh): keys inserted through SQLAlchemy,
# Django, ActiveRecord, node-postgres, Sequelize, knex, Prisma and JDBC and
# read back digit for digit, on Debian's PostgreSQL 15.  A client that cannot
# be installed here is skipped with the reason (not counted).
echo "=================== the ORMs (Debian's PostgreSQL 15)"
PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config bash "$SNOWID_SRC/test/orm/run.sh" >/tmp/snowid-orm.log 2>&1
grep -E '^(not )?ok - |^orm: ' /tmp/snowid-orm.log | sed 's/^/  /'
o_ok=$(grep -c '^ok - ' /tmp/snowid-orm.log)
o_bad=$(grep -c '^not ok - ' /tmp/snowid-orm.log)
grep -q '^orm: [0-9]* passed' /tmp/snowid-orm.log || { o_bad=$((o_bad + 1)); tail -30 /tmp/snowid-orm.log; }
o_skip=$(sed -n 's/^orm: \([a-z]*\) skipped: .*/\1/p' /tmp/snowid-orm.log | paste -sd, -)
passed=$((passed + o_ok))
failed=$((failed + o_bad))
summary+=("ORMs: $o_ok passed, $o_bad failed${o_skip:+ (skipped: $o_skip)}")

# A newcomer's path through the README (test/newcomer.sh): the quick start,
# the install on Debian's PostgreSQL 15 as root, a table converted, a role
# restricted, a registry and a member set up with the README's blocks.  Skipped, with the reason, where it cannot run (not root, no
# Debian postgresql-common).
echo "=================== a newcomer's path through the README (Debian's PostgreSQL 15, as root)"
bash "$SNOWID_SRC/test/newcomer.sh" >/tmp/snowid-newcomer.log 2>&1
grep -E '^(not )?ok - |^newcomer: ' /tmp/snowid-newcomer.log | sed 's/^/  /'
if grep -q '^newcomer: skipped: ' /tmp/snowid-newcomer.log; then
	summary+=("newcomer's path: $(sed -n 's/^newcomer: //p' /tmp/snowid-newcomer.log)")
else
	nc_ok=$(grep -c '^ok - ' /tmp/snowid-newcomer.log)
	nc_bad=$(grep -c '^not ok - ' /tmp/snowid-newcomer.log)
	grep -q '^newcomer: [0-9]* passed' /tmp/snowid-newcomer.log || nc_bad=$((nc_bad + 1))
	[ "$nc_bad" -gt 0 ] && tail -20 /tmp/snowid-newcomer.log
	passed=$((passed + nc_ok))
	failed=$((failed + nc_bad))
	summary+=("newcomer's path: $nc_ok passed, $nc_bad failed")
fi

# The Debian package (test/package/deb.sh): debian/ builds
# postgresql-15-snowid with pg_buildext from a copy of the tree, dpkg -i
# installs it, a throwaway server creates the extension from it, dpkg -r
# removes it and the snowid files that were installed before are put back.
# Debian's PostgreSQL 15 only; skipped, with the reason, where it cannot
# run (no dpkg, no postgresql-15, packaging tools not installable).
echo "=================== the Debian package (Debian's PostgreSQL 15)"
bash "$SNOWID_SRC/test/package/deb.sh" >/tmp/snowid-deb.log 2>&1
grep -E '^(not )?ok - |^deb: ' /tmp/snowid-deb.log | sed 's/^/  /'
if grep -q '^deb: skipped: ' /tmp/snowid-deb.log; then
	summary+=("Debian package: $(sed -n 's/^deb: //p' /tmp/snowid-deb.log)")
else
	deb_ok=$(grep -c '^ok - ' /tmp/snowid-deb.log)
	deb_bad=$(grep -c '^not ok - ' /tmp/snowid-deb.log)
	grep -q '^deb: [0-9]* passed' /tmp/snowid-deb.log || deb_bad=$((deb_bad + 1))
	[ "$deb_bad" -gt 0 ] && tail -40 /tmp/snowid-deb.log
	passed=$((passed + deb_ok))
	failed=$((failed + deb_bad))
	summary+=("Debian package: $deb_ok passed, $deb_bad failed")
fi

echo "=================== summary"
printf '%s\n' "${summary[@]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
