#!/usr/bin/env bash
# Two builds of snowid side by side: two git revisions, each built and
# installed into its own copy of one PostgreSQL installation, one throwaway
# server each, the same statements on both, interleaved (A B, then B A, ...)
# over several rounds.  Reports, per build, the medians of the bulk cost
# above the floor, the bulk and per-call ratios, and the newer build's
# figures over the older's; then instructions per row (callgrind), which
# the machine's noise cannot blur.  For a change that should cost nothing
# (a restructuring), or to see what a change to a hot path costs.  Writes
# test/bench/results/builds.md.
#
#   bash test/bench/builds.sh REV                # REV against HEAD
#   bash test/bench/builds.sh REV1 REV2          # two revisions
#   bash test/bench/builds.sh --smoke REV        # tiny run that only proves it works
#
# PostgreSQL: the major in PG_MAJOR (default 18), built from Debian's source
# package by test/pg-build.sh: its installation is copied twice (it can be
# moved as a whole), so each build has a library directory of its own.
set -u
. "$(dirname "$0")/../lib.sh"

mode=full
if [ "${1:-}" = --smoke ]; then
	mode=smoke
	shift
fi
if [ $# -lt 1 ]; then
	echo "usage: bash test/bench/builds.sh [--smoke] OLD_REVISION [NEW_REVISION]" >&2
	exit 2
fi
bench_dir=$(cd "$(dirname "$0")" && pwd)
revs=("$(git -C "$SNOWID_SRC" rev-parse --short "$1")" "$(git -C "$SNOWID_SRC" rev-parse --short "${2:-HEAD}")") || exit 2
[ "${revs[0]}" != "${revs[1]}" ] || { echo "builds.sh: the two revisions are the same" >&2; exit 2; }
out=${SNOWID_BENCH_OUT:-$bench_dir/results}
[ $mode = smoke ] && out=$(mktemp -d "${TMPDIR:-/tmp}/snowid-builds-smoke.XXXXXX")
mkdir -p "$out"
if [ $mode = full ]; then
	ROUNDS=9; BULK_N=2000000; CALL_SECS=2; CG_N=100000
else
	ROUNDS=2; BULK_N=20000; CALL_SECS=1; CG_N=200
fi
major=${PG_MAJOR:-18}

ensure_packages make gcc valgrind || exit 1
base_pgc=$(bash "$SNOWID_SRC/test/pg-build.sh" "$major" | tail -n1) || exit 1
base_prefix=$(cd "$("$base_pgc" --bindir)/.." && pwd)

scratch=$(mktemp -d "${TMPDIR:-/tmp}/snowid-builds.XXXXXX")
chmod 755 "$scratch"
declare -A pgc host port
cleanup() {
	bench_cleanup
	rm -rf "$scratch"
}
trap cleanup EXIT

i=0
for b in a b; do
	rev=${revs[$i]}
	cp -a "$base_prefix" "$scratch/pg-$b"
	pgc[$b]=$scratch/pg-$b/bin/pg_config
	mkdir "$scratch/src-$b"
	git -C "$SNOWID_SRC" archive "$rev" | tar -x -C "$scratch/src-$b"
	(
		cd "$scratch/src-$b" &&
			make -s PG_CONFIG="${pgc[$b]}" with_llvm=no &&
			make -s install PG_CONFIG="${pgc[$b]}" with_llvm=no
	) >"$scratch/build-$b.log" 2>&1 || { echo "build of $rev failed:"; cat "$scratch/build-$b.log"; exit 1; }
	host[$b]=$scratch/host-$b
	mkdir "${host[$b]}"
	[ "$(id -u)" -eq 0 ] && chown postgres "${host[$b]}"
	port[$b]=$((${SNOWID_BENCH_PORT:-55480} + i))
	bench_server "${host[$b]}/data" "${host[$b]}/server.log" "${port[$b]}" "$scratch/pg-$b/bin" \
		"shared_preload_libraries = 'snowid'" "snowid.node_id = 1"
	i=$((i + 1))
done

export PGOPTIONS="-c client_min_messages=warning" PGDATABASE=postgres
q() {
	local b=$1
	shift
	as_runner "$(${pgc[$b]} --bindir)/psql" -h "${host[$b]}" -p "${port[$b]}" -X -q -At -v ON_ERROR_STOP=1 "$@"
}
setup_sql="CREATE EXTENSION snowid; CREATE SEQUENCE bench_seq;
	SELECT snowid_ticket_create('bench_ticket', block => 10000);"
for b in a b; do
	q "$b" -c "$setup_sql" >/dev/null
done
echo "PostgreSQL $(q a -c 'SHOW server_version'): ${revs[0]} against ${revs[1]}"

cands=("floor|1" "snowid_next|snowid_next()" "nextval|nextval('bench_seq')"
	"snowid_ticket_next|snowid_ticket_next('bench_ticket'::regclass)"
	"snowid_ticket_next_by_name|snowid_ticket_next('bench_ticket')")

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "n/a"; else printf "%.3f", a / b }'; }
declare -A samples
add() { samples[$1]="${samples[$1]:-} $2"; }
med() { printf '%s\n' ${samples[$1]} | median; }

time_ms() {
	q "$1" -c "DO \$\$DECLARE t0 timestamptz := clock_timestamp(); BEGIN PERFORM $2; RAISE WARNING 'ms=%', extract(epoch FROM clock_timestamp() - t0) * 1000; END\$\$" 2>&1 |
		sed -n 's/.*ms=//p'
}
pgb() {
	local b=$1 secs=$2 statement=$3 f
	f=$(mktemp "$scratch/call.XXXXXX.sql")
	echo "$statement" >"$f"
	chmod 644 "$f"
	as_runner "$(${pgc[$b]} --bindir)/pgbench" -h "${host[$b]}" -p "${port[$b]}" -n -M prepared \
		-c 1 -j 1 -T "$secs" -f "$f" 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p'
	rm -f "$f"
}

# One round on one build: the bulk statement of every candidate, then one
# pgbench run of each; costs and ratios within the round.
declare -A round_ms round_tps
round() {
	local b=$1 c n
	for c in "${cands[@]}"; do
		round_ms[$b:${c%%|*}]=$(time_ms "$b" "count(${c#*|}) FROM generate_series(1, $BULK_N)")
	done
	for c in "${cands[@]}"; do
		round_tps[$b:${c%%|*}]=$(pgb "$b" "$CALL_SECS" "SELECT ${c#*|};")
	done
	for c in "${cands[@]}"; do
		n=${c%%|*}
		add "$b:bulk_ns:$n" "$(awk -v a="${round_ms[$b:$n]}" -v f="${round_ms[$b:floor]}" -v N="$BULK_N" 'BEGIN { printf "%.2f", (a - f) * 1e6 / N }')"
		add "$b:bulk_xnv:$n" "$(ratio "${round_ms[$b:nextval]}" "${round_ms[$b:$n]}")"
		add "$b:call:$n" "$(ratio "${round_tps[$b:$n]}" "${round_tps[$b:floor]}")"
	done
}

echo "== $ROUNDS rounds, the two builds interleaved"
for r in $(seq "$ROUNDS"); do
	if [ $((r % 2)) -eq 1 ]; then order=(a b); else order=(b a); fi
	for b in "${order[@]}"; do round "$b"; done
	# the second build over the first, within the round: time and calls
	for c in "${cands[@]}"; do
		n=${c%%|*}
		add "time:$n" "$(ratio "${round_ms[b:$n]}" "${round_ms[a:$n]}")"
		add "calls:$n" "$(ratio "${round_tps[b:$n]}" "${round_tps[a:$n]}")"
	done
	echo "  round $r done"
done

# Instructions per row: callgrind on a single-user backend of each build,
# the difference between 2N and N rows.
echo "== instructions per row (callgrind), $CG_N and $((2 * CG_N)) rows"
declare -A cg
for b in a b; do
	cgdir=$scratch/cg-$b
	mkdir "$cgdir"
	[ "$(id -u)" -eq 0 ] && chown postgres "$cgdir"
	as_runner "$scratch/pg-$b/bin/initdb" -D "$cgdir/data" -A trust >/dev/null
	printf "shared_preload_libraries = 'snowid'\nsnowid.node_id = 1\n" >>"$cgdir/data/postgresql.conf"
	printf '%s\n' "$setup_sql" | tr '\n\t' '  ' | sed 's/; */;\n/g' |
		as_runner "$scratch/pg-$b/bin/postgres" --single -D "$cgdir/data" postgres >/dev/null 2>&1
	cg_rows() {
		printf 'SELECT count(%s) FROM generate_series(1, %s);\n' "$1" "$2" |
			as_runner valgrind --tool=callgrind --callgrind-out-file=/dev/null \
				"$scratch/pg-$b/bin/postgres" --single -D "$cgdir/data" postgres 2>&1 >/dev/null |
			sed -n 's/.*Collected : //p'
	}
	for c in "${cands[@]}"; do
		n=${c%%|*}
		cg[$b:$n]=$(( ($(cg_rows "${c#*|}" $((2 * CG_N))) - $(cg_rows "${c#*|}" "$CG_N")) / CG_N ))
	done
done

a=${revs[0]}
b=${revs[1]}
{
	echo "# snowid builds $a and $b side by side"
	echo
	echo "$(date -u +%Y-%m-%d), PostgreSQL $(q a -c 'SHOW server_version'), $(nproc) cores; $ROUNDS rounds, the two servers interleaved (one round: every bulk statement, then a ${CALL_SECS} s pgbench run of each, 1 client); medians of the per-round figures. Bulk: \`SELECT count(<fn>) FROM generate_series(1, $BULK_N)\`, cost above the \`1\` floor in ns per row and speed × \`nextval\`; per call: TPS × the \`SELECT 1\` floor; $b ÷ $a: the ratio of the two builds' times (bulk) and TPS (per call) within each round."
	echo
	echo "| function | bulk ns/row above floor, $a | $b | bulk × nextval, $a | $b | per call × floor, $a | $b | bulk time $b ÷ $a | per-call TPS $b ÷ $a |"
	echo "|---|---|---|---|---|---|---|---|---|"
	for c in "${cands[@]}"; do
		n=${c%%|*}
		[ "$n" = floor ] && continue
		echo "| \`$n\` | $(med "a:bulk_ns:$n") | $(med "b:bulk_ns:$n") | $(med "a:bulk_xnv:$n") | $(med "b:bulk_xnv:$n") | $(med "a:call:$n") | $(med "b:call:$n") | $(med "time:$n") | $(med "calls:$n") |"
	done
	echo
	echo "Instructions per row (\`valgrind --tool=callgrind\`, a single-user backend, the difference between $((2 * CG_N)) and $CG_N rows):"
	echo
	echo "| function | $a | $b | above the floor, $a | $b |"
	echo "|---|---:|---:|---:|---:|"
	for c in "${cands[@]}"; do
		n=${c%%|*}
		echo "| \`$n\` | ${cg[a:$n]} | ${cg[b:$n]} | $((cg[a:$n] - cg[a:floor])) | $((cg[b:$n] - cg[b:floor])) |"
	done
} >"$out/builds.md"
cat "$out/builds.md"
