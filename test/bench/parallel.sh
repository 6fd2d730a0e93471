#!/usr/bin/env bash
# Two bulk sessions at once: does snowid_next() keep up with
# snowid_ticket_next() when two backends draw IDs as fast as they can?
# A throwaway server with a 16-bit sequence (snowid.node_bits = 6,
# snowid.sequence_bits = 16: 65,536,000 IDs/s, so the layout's ceiling is
# not what is measured), and one session on a server with the default
# layout; candidates interleaved over several rounds (the
# order alternating), medians of the figures taken within each round.
# Writes test/bench/results/parallel.md.
#
#   bash test/bench/parallel.sh            # full run (about a minute)
#   bash test/bench/parallel.sh --smoke    # tiny run that only proves it works
#
# Each session of a pair waits server-side for a common start time, then
# runs SELECT count(fn) FROM generate_series(1, N) and reports when it began
# and ended; the pair's rate is 2N over the span from the first start to
# the last end, so connection set-up is not counted.  The single-session
# cost above the floor comes from the same rounds.  With valgrind, the
# instructions per ID of one backend are counted too (callgrind).
set -eu
. "$(dirname "$0")/../lib.sh"

mode=full
[ "${1:-}" = --smoke ] && mode=smoke
bench_dir=$(cd "$(dirname "$0")" && pwd)
out=${SNOWID_BENCH_OUT:-$bench_dir/results}
[ $mode = smoke ] && [ -z "${SNOWID_BENCH_OUT:-}" ] && out=$(mktemp -d "${TMPDIR:-/tmp}/snowid-bench-parallel.XXXXXX")
mkdir -p "$out"
if [ $mode = full ]; then
	ROUNDS=${ROUNDS:-11}; N=${N:-2000000}; CG_N=${CG_N:-100000}
else
	ROUNDS=2; N=20000; CG_N=200
fi

if [ -z "${SNOWID_SKIP_BUILD:-}" ]; then
	ensure_packages make gcc postgresql-15 postgresql-server-dev-15
	build_and_install /tmp/snowid-bench-build.log || { cat /tmp/snowid-bench-build.log; exit 1; }
fi
sdir=$(bench_scratch parallel-server)
port=${SNOWID_BENCH_PORT:-55443}
trap bench_cleanup EXIT
# wide: the 16-bit sequence; default: the default layout, for the cost of
# one backend as section 1 of run.sh measures it
bench_server "$sdir/wide" "$sdir/wide.log" "$port" "" \
	"shared_preload_libraries = 'snowid'" "snowid.node_id = 1" \
	"snowid.node_bits = 6" "snowid.sequence_bits = 16"
bench_server "$sdir/default" "$sdir/default.log" $((port + 1)) "" \
	"shared_preload_libraries = 'snowid'" "snowid.node_id = 1"
export PGHOST=$sdir PGPORT=$port PGDATABASE=postgres
export PGOPTIONS="-c client_min_messages=warning"

for p in $port $((port + 1)); do
	q -p $p -c "CREATE EXTENSION snowid"
	q -p $p -c "SELECT snowid_ticket_create('bench_ticket', block => 10000)" >/dev/null
done
per_second=$(q -c "SELECT ids_per_second FROM snowid_layout()")

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
declare -A samples
add() { samples[$1]="${samples[$1]:-} $2"; }
med() { printf '%s\n' ${samples[$1]} | median; }

# One session on the server at port $3: wait until the epoch second $2,
# run count($1) over N rows, print the epoch seconds it began and ended.
session() {
	q -p "$3" -c "DO \$\$
DECLARE t0 float8; t1 float8;
BEGIN
	PERFORM pg_sleep(greatest($2 - extract(epoch FROM clock_timestamp()), 0));
	t0 := extract(epoch FROM clock_timestamp());
	PERFORM count($1) FROM generate_series(1, $N);
	t1 := extract(epoch FROM clock_timestamp());
	RAISE WARNING 'span=% %', t0, t1;
END\$\$" 2>&1 | sed -n 's/.*span=//p'
}
# IDs/s of $2 sessions running count($1) at once, on the server at port $3.
together() {
	local fn=$1 p=$2 port=${3:-$PGPORT} at i f
	at=$(awk -v t="$(date +%s.%N)" 'BEGIN { printf "%.3f", t + 0.3 }')
	f=$(mktemp)
	for i in $(seq "$p"); do session "$fn" "$at" "$port" >>"$f" & done
	wait
	awk -v n="$N" -v p="$p" 'NR == 1 || $1 < s { s = $1 } NR == 1 || $2 > e { e = $2 }
		END { printf "%.0f", n * p / (e - s) }' "$f"
	rm -f "$f"
}

cands=("snowid_next|snowid_next()" "snowid_ticket_next|snowid_ticket_next('bench_ticket'::regclass)")
echo "== two sessions at once and one alone, $ROUNDS rounds of $N IDs per session"
for r in $(seq "$ROUNDS"); do
	declare -A one=() two=() dflt=()
	floor=$(together 1 1)
	order=("${cands[@]}")
	[ $((r % 2)) -eq 0 ] && order=("${cands[1]}" "${cands[0]}")
	for c in "${order[@]}"; do
		dflt[${c%%|*}]=$(together "${c#*|}" 1 $((port + 1)))
		one[${c%%|*}]=$(together "${c#*|}" 1)
		two[${c%%|*}]=$(together "${c#*|}" 2)
	done
	for c in "${cands[@]}"; do
		n=${c%%|*}
		add "one:$n" "${one[$n]}"
		add "two:$n" "${two[$n]}"
		add "dflt:$n" "${dflt[$n]}"
		add "ns:$n" "$(awk -v a="${one[$n]}" -v f="$floor" 'BEGIN { printf "%.2f", (1 / a - 1 / f) * 1e9 }')"
		add "dns:$n" "$(awk -v a="${dflt[$n]}" -v f="$floor" 'BEGIN { printf "%.2f", (1 / a - 1 / f) * 1e9 }')"
		add "x_one:$n" "$(awk -v a="${one[$n]}" -v b="${one[snowid_ticket_next]}" 'BEGIN { printf "%.3f", a / b }')"
		add "x_two:$n" "$(awk -v a="${two[$n]}" -v b="${two[snowid_ticket_next]}" 'BEGIN { printf "%.3f", a / b }')"
		add "x_dflt:$n" "$(awk -v a="${dflt[$n]}" -v b="${dflt[snowid_ticket_next]}" 'BEGIN { printf "%.3f", a / b }')"
	done
	add "floor" "$floor"
	echo "round $r: floor $floor; default layout one ${dflt[snowid_next]} / ${dflt[snowid_ticket_next]}; 16-bit one ${one[snowid_next]} / ${one[snowid_ticket_next]}; two ${two[snowid_next]} / ${two[snowid_ticket_next]}"
done
stats=$(q -c "SELECT 'waits ' || waits || ', ticks borrowed ' || ticks_borrowed || ', IDs issued ' || ids_issued FROM snowid_stats()")

cg_md=""
if command -v valgrind >/dev/null; then
	echo "== instructions per ID (callgrind), $CG_N and $((2 * CG_N)) rows"
	as_runner pg_ctl -D "$sdir/wide" -m fast -w stop >/dev/null
	cg_rows() {
		printf 'SELECT count(%s) FROM generate_series(1, %s);\n' "$1" "$2" |
			as_runner valgrind --tool=callgrind --callgrind-out-file=/dev/null \
				postgres --single -D "$sdir/wide" postgres 2>&1 >/dev/null |
			sed -n 's/.*Collected : //p'
	}
	declare -A cg
	for c in "floor|1" "${cands[@]}"; do
		cg[${c%%|*}]=$(( ($(cg_rows "${c#*|}" $((2 * CG_N))) - $(cg_rows "${c#*|}" "$CG_N")) / CG_N ))
	done
	cg_md="Instructions per ID in one backend (callgrind, single-user backend, $CG_N and $((2 * CG_N)) rows, the difference): floor ${cg[floor]}, snowid_next() ${cg[snowid_next]} (+$((cg[snowid_next] - cg[floor]))), snowid_ticket_next() ${cg[snowid_ticket_next]} (+$((cg[snowid_ticket_next] - cg[floor])))."
fi

host="$(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
{
	echo "# Two bulk sessions at once ($mode run)"
	echo
	echo "Machine: $host; load average at the end $(cut -d' ' -f1-3 /proc/loadavg). Command: \`bash test/bench/parallel.sh\`. Layout: snowid.node_bits = 6, snowid.sequence_bits = 16 ($per_second IDs/s). $ROUNDS rounds of \`SELECT count(fn) FROM generate_series(1, $N)\` per session, candidates interleaved (order alternating); IDs/s are medians, ratios and ns are medians of the figures taken within each round."
	echo
	echo "| candidate | 1 session IDs/s | ns per ID above floor | × tickets | 2 sessions, combined IDs/s | × tickets |"
	echo "|---|---:|---:|---:|---:|---:|"
	echo "| floor (\`count(1)\`) | $(printf '%.0f' "$(med floor)") | | | | |"
	for c in "${cands[@]}"; do
		n=${c%%|*}
		printf '| %s | %.0f | %.1f | %.2f | %.0f | %.2f |\n' "$n" "$(med "one:$n")" "$(med "ns:$n")" \
			"$(med "x_one:$n")" "$(med "two:$n")" "$(med "x_two:$n")"
	done
	echo
	echo "The same rounds, one session on a server with the default layout (10 node bits, 12 sequence bits: 4,096,000 IDs/s, so snowid_next() runs ahead of the clock, within snowid.max_lead, and takes its coarse-clock path):"
	echo
	echo "| candidate | 1 session IDs/s | ns per ID above floor | × tickets |"
	echo "|---|---:|---:|---:|"
	for c in "${cands[@]}"; do
		n=${c%%|*}
		printf '| %s | %.0f | %.1f | %.2f |\n' "$n" "$(med "dflt:$n")" "$(med "dns:$n")" "$(med "x_dflt:$n")"
	done
	echo
	echo "snowid_stats() after the runs: $stats."
	[ -n "$cg_md" ] && { echo; echo "$cg_md"; }
} >"$out/parallel.md"
cat "$out/parallel.md"
