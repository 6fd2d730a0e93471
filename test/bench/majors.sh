#!/usr/bin/env bash
# snowid on two PostgreSQL majors side by side: one throwaway server per
# major, the same statements on both, interleaved (A B, then B A, ...) over
# several rounds; reports the medians of the bulk cost above the floor, the
# bulk and per-call ratios, and how the second major compares with the
# first.  Writes test/bench/results/majors.md.
#
#   bash test/bench/majors.sh            # 15 against 18
#   bash test/bench/majors.sh 15 17      # other majors
#   bash test/bench/majors.sh --smoke    # tiny run that only proves it works
#
# 15 comes from Debian's packages, other majors from test/pg-build.sh;
# SNOWID_SKIP_BUILD=1 uses the snowid already installed in each.
set -u
. "$(dirname "$0")/../lib.sh"

mode=full
if [ "${1:-}" = --smoke ]; then
	mode=smoke
	shift
fi
majors=("${1:-15}" "${2:-18}")
bench_dir=$(cd "$(dirname "$0")" && pwd)
out=${SNOWID_BENCH_OUT:-$bench_dir/results}
[ $mode = smoke ] && out=$(mktemp -d "${TMPDIR:-/tmp}/snowid-majors-smoke.XXXXXX")
mkdir -p "$out"
if [ $mode = full ]; then
	ROUNDS=9; BULK_N=2000000; CALL_SECS=2
else
	ROUNDS=2; BULK_N=20000; CALL_SECS=1
fi

ensure_packages make gcc postgresql-15 postgresql-server-dev-15 || exit 1

declare -A pgc host port
trap bench_cleanup EXIT

i=0
for m in "${majors[@]}"; do
	if [ "$m" = 15 ]; then
		pgc[$m]=/usr/lib/postgresql/15/bin/pg_config
	else
		pgc[$m]=$(bash "$SNOWID_SRC/test/pg-build.sh" "$m" | tail -n1) || exit 1
	fi
	if [ -z "${SNOWID_SKIP_BUILD:-}" ]; then
		PG_CONFIG=${pgc[$m]} build_and_install "/tmp/snowid-majors-build-$m.log" ||
			{ cat "/tmp/snowid-majors-build-$m.log"; exit 1; }
	fi
	bindir=$(${pgc[$m]} --bindir)
	host[$m]=$(bench_scratch "majors-$m")
	port[$m]=$((55470 + i))
	i=$((i + 1))
	bench_server "${host[$m]}/data" "${host[$m]}/server.log" "${port[$m]}" "$bindir" \
		"shared_preload_libraries = 'snowid'" "snowid.node_id = 1"
done

export PGOPTIONS="-c client_min_messages=warning" PGDATABASE=postgres
q() {
	local m=$1
	shift
	as_runner "$(${pgc[$m]} --bindir)/psql" -h "${host[$m]}" -p "${port[$m]}" -X -q -At -v ON_ERROR_STOP=1 "$@"
}
for m in "${majors[@]}"; do
	q "$m" -c "CREATE EXTENSION snowid; CREATE SEQUENCE bench_seq;
		SELECT snowid_ticket_create('bench_ticket', block => 10000);" >/dev/null
	echo "PostgreSQL $m: $(q "$m" -c 'SHOW server_version')"
done

cands=("floor|1" "snowid_next|snowid_next()" "nextval|nextval('bench_seq')"
	"snowid_ticket_next|snowid_ticket_next('bench_ticket'::regclass)")

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
	local m=$1 secs=$2 statement=$3 f
	f=$(mktemp "${TMPDIR:-/tmp}/snowid-majors.XXXXXX.sql")
	echo "$statement" >"$f"
	chmod 644 "$f"
	as_runner "$(${pgc[$m]} --bindir)/pgbench" -h "${host[$m]}" -p "${port[$m]}" -n -M prepared \
		-c 1 -j 1 -T "$secs" -f "$f" 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p'
	rm -f "$f"
}

# One round on one major: the bulk statement of every candidate, then one
# pgbench run of each; costs and ratios within the round.
round() {
	local m=$1 c n
	declare -A ms=() tps=()
	for c in "${cands[@]}"; do
		ms[${c%%|*}]=$(time_ms "$m" "count(${c#*|}) FROM generate_series(1, $BULK_N)")
	done
	for c in "${cands[@]}"; do
		tps[${c%%|*}]=$(pgb "$m" "$CALL_SECS" "SELECT ${c#*|};")
	done
	for c in "${cands[@]}"; do
		n=${c%%|*}
		add "$m:bulk_ns:$n" "$(awk -v a="${ms[$n]}" -v f="${ms[floor]}" -v N="$BULK_N" 'BEGIN { printf "%.2f", (a - f) * 1e6 / N }')"
		add "$m:bulk_xnv:$n" "$(ratio "${ms[nextval]}" "${ms[$n]}")"
		add "$m:call:$n" "$(ratio "${tps[$n]}" "${tps[floor]}")"
	done
}

echo "== $ROUNDS rounds, PostgreSQL ${majors[0]} and ${majors[1]} interleaved"
for r in $(seq "$ROUNDS"); do
	if [ $((r % 2)) -eq 1 ]; then order=("${majors[0]}" "${majors[1]}"); else order=("${majors[1]}" "${majors[0]}"); fi
	for m in "${order[@]}"; do round "$m"; done
	echo "  round $r done"
done

a=${majors[0]}
b=${majors[1]}
{
	echo "# snowid on PostgreSQL $a and $b"
	echo
	echo "$(date -u +%Y-%m-%d), $(nproc) cores; $ROUNDS rounds, the two servers interleaved (one round: every bulk statement, then a ${CALL_SECS} s pgbench run of each, 1 client); medians of the per-round figures. Bulk: \`SELECT count(<fn>) FROM generate_series(1, $BULK_N)\`, cost above the \`1\` floor in ns per row and speed × \`nextval\`; per call: TPS × the \`SELECT 1\` floor."
	echo
	echo "| function | bulk ns/row above floor, $a | $b | bulk × nextval, $a | $b | per call × floor, $a | $b |"
	echo "|---|---|---|---|---|---|---|"
	for c in "${cands[@]}"; do
		n=${c%%|*}
		[ "$n" = floor ] && continue
		echo "| \`$n\` | $(med "$a:bulk_ns:$n") | $(med "$b:bulk_ns:$n") | $(med "$a:bulk_xnv:$n") | $(med "$b:bulk_xnv:$n") | $(med "$a:call:$n") | $(med "$b:call:$n") |"
	done
} >"$out/majors.md"
cat "$out/majors.md"
