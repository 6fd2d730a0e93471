#!/usr/bin/env bash
# PostgreSQL's own regression suite with snowid in it: pg_regress with
# src/test/regress/parallel_schedule of the PostgreSQL under test, on a
# temporary instance with snowid preloaded (test/snowid.conf) and created in
# every test database (--load-extension=snowid), its differences from
# PostgreSQL's expected output compared with the ones snowid is known to
# make, test/core/expected-<major>.diffs (kept for 18 only).  Any other
# change snowid makes to PostgreSQL's behaviour fails.
#
#   PG_CONFIG=.../18/bin/pg_config bash test/core/run.sh   # snowid installed there
#   PG_CONFIG=... bash test/core/run.sh --regenerate       # write what it sees as expected
#
# Checks, one "ok N - ..." or "not ok N - ..." line each: one per core test
# that the expected file names (its differences are exactly those), and one
# for all the other core tests (no difference at all).  Ends with
# "core: N passed, M failed", or "core: skipped: <reason>" (nothing counted)
# for a major without an expected file or an installation without the
# sources of its regression suite that is not a build of test/pg-build.sh.
#
# The sources: $SNOWID_PG_REGRESS_SRC (a PostgreSQL source tree, or a tar of
# one's src/test/regress), else <prefix>/.snowid-regress-src.tar.gz, kept
# beside its builds by test/pg-build.sh.  Everything runs in a scratch
# directory the runner owns (the checkout may be unreadable to it).
#
# The differences are compared normalized (test/core/normalize.pl): only the
# lines added and removed, per test, without file names, timestamps and line
# numbers; and rows that list snowid's own objects (a name snowid_..., an
# OID) stand for any number of such rows, so that a function or event
# trigger added to snowid does not change the file, while every other line,
# and any line in another test, does.
set -u
. "$(dirname "$0")/../lib.sh"

regenerate=
[ "${1:-}" = --regenerate ] && regenerate=1

major=$("$PG_CONFIG" --version | sed -n 's/^PostgreSQL \([0-9]*\).*/\1/p')
expected=$SNOWID_SRC/test/core/expected-$major.diffs
normalize=$SNOWID_SRC/test/core/normalize.pl

if [ -z "$regenerate" ] && [ ! -f "$expected" ]; then
	echo "core: skipped: PostgreSQL $major: the expected differences are kept for 18 only (no test/core/expected-$major.diffs)"
	exit 0
fi

prefix=$(cd "$("$PG_CONFIG" --bindir)/.." && pwd)
src=${SNOWID_PG_REGRESS_SRC:-$prefix/.snowid-regress-src.tar.gz}
if [ ! -e "$src" ]; then
	if [ -f "$prefix/.snowid-stamp" ]; then
		# a build of test/pg-build.sh: it should have kept them
		echo "not ok 1 - the sources of PostgreSQL $major's regression suite are beside its build ($src missing: run bash test/pg-build.sh $major)"
		echo "core: 0 passed, 1 failed"
		exit 1
	fi
	echo "core: skipped: no sources of PostgreSQL $major's regression suite for $PG_CONFIG (set SNOWID_PG_REGRESS_SRC to a source tree)"
	exit 0
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/snowid-core.XXXXXX")
cleanup() {
	# a pg_regress stopped by the time limit leaves its instance running
	if [ -f "$scratch/instance/data/postmaster.pid" ]; then
		as_runner "$("$PG_CONFIG" --bindir)/pg_ctl" -D "$scratch/instance/data" \
			-m immediate stop >/dev/null 2>&1
	fi
	# keep the scratch directory of a failed run for its logs
	[ "${keep_scratch:-}" = 1 ] || rm -rf "$scratch"
}
trap cleanup EXIT
keep_scratch=1
mkdir -p "$scratch/src/test"
if [ -d "$src" ]; then
	if [ -d "$src/src/test/regress" ]; then
		cp -r "$src/src/test/regress" "$scratch/src/test/"
	else
		cp -r "$src" "$scratch/src/test/regress"
	fi
else
	tar -C "$scratch" -xf "$src" src/test/regress
fi
rd=$scratch/src/test/regress
rm -rf "$rd/results" "$rd/regression.diffs" "$rd/regression.out" "$rd"/*.so "$rd"/*.o
# the same test/snowid.conf as snowid's own pg_regress runs
cp "$SNOWID_SRC/test/snowid.conf" "$scratch/core.conf"

# regress.so, the C functions of the suite, built alone against the headers
# of the PostgreSQL under test
# shellcheck disable=SC2046 # the flags, split on purpose
if ! gcc $("$PG_CONFIG" --cflags) $("$PG_CONFIG" --cflags_sl) -shared \
	-I"$("$PG_CONFIG" --includedir-server)" "$rd/regress.c" -o "$rd/regress.so" >"$scratch/gcc.log" 2>&1; then
	sed 's/^/  /' "$scratch/gcc.log"
	echo "not ok 1 - regress.so of PostgreSQL $major builds"
	echo "core: 0 passed, 1 failed"
	exit 1
fi
[ "$(id -u)" -eq 0 ] && chown -R postgres "$scratch"

echo "core: pg_regress --schedule=parallel_schedule on PostgreSQL $major ($("$PG_CONFIG" --version)), snowid preloaded and loaded"
start=$SECONDS
(
	cd "$rd" &&
		as_runner timeout -k 30 "${SNOWID_CORE_LIMIT:-900}" \
			"$("$PG_CONFIG" --pkglibdir)/pgxs/src/test/regress/pg_regress" \
			--inputdir=. --outputdir=. --dlpath="$rd" \
			--bindir="$("$PG_CONFIG" --bindir)" \
			--temp-instance="$scratch/instance" --temp-config="$scratch/core.conf" \
			--schedule=parallel_schedule --max-connections=8 --load-extension=snowid
) >"$scratch/pg_regress.log" 2>&1
rc=$?
secs=$((SECONDS - start))
total=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$scratch/pg_regress.log" | tail -n1)
nfail=$(grep -cE '^not ok [0-9]+ ' "$scratch/pg_regress.log")
if [ -z "$total" ] || { [ "$rc" -ne 0 ] && [ "$nfail" -eq 0 ]; }; then
	# pg_regress did not get to the end (the instance did not start, a
	# timeout): nothing to compare
	# (indented: pg_regress's own "ok N" lines are not this script's)
	echo "--- pg_regress's output (last 40 lines)"
	tail -40 "$scratch/pg_regress.log" | sed 's/^/  /'
	for f in "$rd"/log/*.log; do
		[ -f "$f" ] && { echo "--- $f (last 30 lines)"; tail -30 "$f" | sed 's/^/  /'; }
	done
	echo "not ok 1 - pg_regress ran to its end (exit status $rc after $secs s; logs in $scratch)"
	echo "core: 0 passed, 1 failed"
	exit 1
fi
echo "core: pg_regress ran $total tests in $secs s, $nfail of them differ from PostgreSQL's expected output"

actual=$scratch/actual.diffs
touch "$rd/regression.diffs"
perl "$normalize" "$rd/regression.diffs" >"$actual" || {
	echo "not ok 1 - regression.diffs normalized"
	echo "core: 0 passed, 1 failed"
	exit 1
}

if [ -n "$regenerate" ]; then
	{
		echo "# PostgreSQL's own regression suite with snowid in it: the differences"
		echo "# snowid is expected to make, normalized by test/core/normalize.pl."
		echo "# From $("$PG_CONFIG" --version), $total tests.  Regenerate with"
		echo "#   PG_CONFIG=<PostgreSQL $major>/bin/pg_config bash test/core/run.sh --regenerate"
		cat "$actual"
	} >"$expected.new"
	if [ -f "$expected" ]; then
		diff -u "$expected" "$expected.new" && echo "core: no change"
	fi
	mv "$expected.new" "$expected"
	echo "core: wrote $expected"
	keep_scratch=0
	exit 0
fi

# One section per test: "=== NAME" and its lines.
sections() { sed -n 's/^=== //p' "$1"; }
section() { awk -v t="$2" '/^=== / { on = ($2 == t); next } on' "$1"; }
grep -v '^#' "$expected" >"$scratch/expected.diffs"

n=0
passed=0
failed=0
report() {
	n=$((n + 1))
	if [ "$1" = ok ]; then
		passed=$((passed + 1))
		echo "ok $n - $2"
	else
		failed=$((failed + 1))
		echo "not ok $n - $2"
	fi
}
for t in $(sections "$scratch/expected.diffs"); do
	if diff -u <(section "$scratch/expected.diffs" "$t") <(section "$actual" "$t") >"$scratch/cmp-$t" 2>&1; then
		report ok "core test $t differs only as test/core/expected-$major.diffs says"
	else
		echo "--- $t: the expected differences (-) and those of this run (+), normalized:"
		tail -n +3 "$scratch/cmp-$t" | head -60
		echo "--- $t: this run's diff:"
		awk -v t="$t" '/^diff / { on = ($NF ~ ("/" t "\\.out$")) } on' "$rd/regression.diffs" | head -80
		report bad "core test $t differs only as test/core/expected-$major.diffs says"
	fi
done
# Every test pg_regress reports as failed has a section (even one that
# normalizes to nothing); one without a diff at all counts too.
sed -n 's/^not ok [0-9]* *[-+]* *\([A-Za-z0-9_]*\) .*/\1/p' "$scratch/pg_regress.log" >"$scratch/failed.list"
others=$(comm -13 <(sections "$scratch/expected.diffs" | sort) \
	<({ sections "$actual"; cat "$scratch/failed.list"; } | sort -u))
nother=$((total - $(sections "$scratch/expected.diffs" | wc -l)))
if [ -z "$others" ]; then
	report ok "the other $nother core tests give PostgreSQL's expected output"
else
	k=0
	for t in $others; do
		k=$((k + 1))
		if [ $k -gt 8 ]; then
			echo "--- (the diffs of $(($(wc -w <<<"$others") - 8)) more tests are in $rd/regression.diffs)"
			break
		fi
		echo "--- $t differs (not expected):"
		awk -v t="$t" '/^diff / { on = ($NF ~ ("/" t "\\.out$")) } on' "$rd/regression.diffs" | head -40
	done
	report bad "the other $nother core tests give PostgreSQL's expected output (differ: $(tr '\n' ' ' <<<"$others" | sed 's/ $//'))"
fi
[ "$failed" -eq 0 ] && keep_scratch=0
[ "$failed" -gt 0 ] && echo "core: logs and diffs in $scratch"
echo "core: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
