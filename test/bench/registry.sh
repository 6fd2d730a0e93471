#!/usr/bin/env bash
# What a registry costs snowid_next(): the same server with snowid.registry
# set (the lease held, state ok) and unset, switched by reload between runs,
# interleaved over several rounds; medians of the ratios taken within each
# round.  In the same rounds, with the registry on: snowid_ticket_next() of a
# pooled ticket (ranges of a registry pool) against a striped ticket of the
# same block size on the same member, the order alternating.  Writes
# test/bench/results/registry.md.
#
#   bash test/bench/registry.sh            # full run (about five minutes)
#   bash test/bench/registry.sh --smoke    # tiny run that only proves it works
#
# The registry is a second throwaway server on the same machine (a member
# refuses a registry in itself), so the worker's heartbeat and the
# registry's work run on the same cores as the measurement: if anything,
# this overstates the cost.
set -eu
. "$(dirname "$0")/../lib.sh"

mode=full
[ "${1:-}" = --smoke ] && mode=smoke
bench_dir=$(cd "$(dirname "$0")" && pwd)
out=${SNOWID_BENCH_OUT:-$bench_dir/results}
[ $mode = smoke ] && out=$(mktemp -d "${TMPDIR:-/tmp}/snowid-bench-registry.XXXXXX")
mkdir -p "$out"
if [ $mode = full ]; then
	ROUNDS=11; BULK_N=2000000; CALL_SECS=3; WARM_SECS=3
else
	ROUNDS=2; BULK_N=20000; CALL_SECS=1; WARM_SECS=1
fi
BLOCK=1000	# block size of both tickets

ensure_packages make gcc postgresql-15 postgresql-server-dev-15
if [ -z "${SNOWID_SKIP_BUILD:-}" ]; then
	build_and_install /tmp/snowid-bench-build.log || { cat /tmp/snowid-bench-build.log; exit 1; }
fi
sdir=$(bench_scratch registry-server)
port=${SNOWID_BENCH_PORT:-55441}
trap bench_cleanup EXIT
bench_server "$sdir/data" "$sdir/server.log" "$port" "" \
	"shared_preload_libraries = 'snowid'" "snowid.node_id = 1"
# (the registry preloads snowid: from 2.0 its server processes apply calls)
bench_server "$sdir/registry" "$sdir/registry.log" $((port + 1)) "" \
	"shared_preload_libraries = 'snowid'"
export PGHOST=$sdir PGPORT=$port PGDATABASE=postgres
export PGOPTIONS="-c client_min_messages=warning"

q -c "CREATE EXTENSION snowid"
q -p $((port + 1)) -c "CREATE EXTENSION snowid"
registry="host=$sdir port=$((port + 1)) dbname=postgres"

# Switch the registry on (and wait for the lease) or off.
use_registry() {
	if [ "$1" = on ]; then
		q -c "ALTER SYSTEM SET snowid.registry = '$registry'" -c "SELECT pg_reload_conf()" >/dev/null
		for _ in $(seq 100); do
			[ "$(q -c "SELECT state FROM snowid_registry_status()")" = ok ] && return 0
			sleep 0.1
		done
		echo "the registry never granted the node" >&2
		exit 1
	fi
	q -c "ALTER SYSTEM RESET snowid.registry" -c "SELECT pg_reload_conf()" >/dev/null
	for _ in $(seq 100); do
		[ "$(q -c "SELECT state FROM snowid_registry_status()")" = off ] && return 0
		sleep 0.1
	done
	echo "the member never went back to state off" >&2
	exit 1
}

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "n/a"; else printf "%.3f", a / b }'; }
declare -A samples
add() { samples[$1]="${samples[$1]:-} $2"; }
med() { printf '%s\n' ${samples[$1]} | median; }
spread() { printf '%s\n' ${samples[$1]} | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {print lo "–" hi}'; }
time_ms() {
	q -c "DO \$\$DECLARE t0 timestamptz := clock_timestamp(); BEGIN PERFORM $1; RAISE WARNING 'ms=%', extract(epoch FROM clock_timestamp() - t0) * 1000; END\$\$" 2>&1 |
		sed -n 's/.*ms=//p'
}
pgb() {
	local f
	f=$(mktemp "${TMPDIR:-/tmp}/snowid-bench.XXXXXX.sql")
	echo "SELECT ${1:-snowid_next()};" >"$f"
	chmod 644 "$f"
	as_runner pgbench -n -M prepared -c 1 -j 1 -T "$CALL_SECS" -f "$f" 2>/dev/null |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p'
	rm -f "$f"
}

load_start=$(uptime | sed 's/.*load average: //')

# A pool on the registry, and on the member a pooled ticket 'tp' and a
# striped ticket 'ts' of the same block size and type.
q -p $((port + 1)) -c "SELECT snowid_pool_create('orders', 'bigint')" >/dev/null
use_registry on
q -c "SELECT snowid_ticket_create('tp', pool => 'orders', block => $BLOCK)" >/dev/null
q -c "SELECT snowid_ticket_create('ts', block => $BLOCK)" >/dev/null
# Warm-up: the first range is the smallest (10,000 values, no rate known
# yet); taking values for a few seconds gives the worker a rate, and the
# ranges it fetches then are sized for snowid.lease (12 h) at that rate, so
# that the rounds below draw on values in hand, not on the worker.
need=$((ROUNDS * (BULK_N + CALL_SECS * 50000)))
warm_end=$(($(date +%s) + WARM_SECS))
while [ "$(date +%s)" -lt "$warm_end" ]; do
	q -c "SELECT count(snowid_ticket_next('tp')) FROM generate_series(1, $BULK_N)" >/dev/null
	q -c "SELECT count(snowid_ticket_next('ts')) FROM generate_series(1, $BULK_N)" >/dev/null
done
for _ in $(seq 100); do
	in_hand=$(q -c "SELECT coalesce(sum(values_in_hand), 0) FROM snowid_pool_holdings() WHERE pool = 'orders'")
	[ "$in_hand" -ge "$need" ] && break
	q -c "SELECT count(snowid_ticket_next('tp')) FROM generate_series(1, 10000)" >/dev/null
	sleep 0.1
done
ranges_q="SELECT count(*) || ' ' || coalesce(max(last_value - first_value + 1), 0) FROM snowid_pool_ranges WHERE pool = 'orders'"
read -r ranges_warm _ <<<"$(q -p $((port + 1)) -c "$ranges_q")"
in_hand_warm=$in_hand

echo "== snowid_next() with and without a registry, $ROUNDS rounds (order alternates)"
for r in $(seq "$ROUNDS"); do
	declare -A bulk=() call=()
	order="off on"
	[ $((r % 2)) -eq 0 ] && order="on off"
	for s in $order; do
		use_registry "$s"
		bulk[$s]=$(time_ms "count(snowid_next()) FROM generate_series(1, $BULK_N)")
		call[$s]=$(pgb)
		add "bulk:$s" "${bulk[$s]}"
		add "call:$s" "${call[$s]}"
	done
	add bulk_ratio "$(ratio "${bulk[off]}" "${bulk[on]}")"
	add call_ratio "$(ratio "${call[on]}" "${call[off]}")"
	# The tickets, registry on: pooled against striped, the order alternating.
	if [ "$s" = off ]; then use_registry on; fi
	declare -A tbulk=() tcall=()
	order="tp ts"
	[ $((r % 2)) -eq 0 ] && order="ts tp"
	for t in $order; do
		tbulk[$t]=$(time_ms "count(snowid_ticket_next('$t')) FROM generate_series(1, $BULK_N)")
		tcall[$t]=$(pgb "snowid_ticket_next('$t')")
		add "tbulk:$t" "${tbulk[$t]}"
		add "tcall:$t" "${tcall[$t]}"
	done
	add tbulk_ratio "$(ratio "${tbulk[ts]}" "${tbulk[tp]}")"
	add tcall_ratio "$(ratio "${tcall[tp]}" "${tcall[ts]}")"
done
use_registry on
renewals=$(q -c "SELECT renewals FROM snowid_registry_stats()")
read -r ranges_end range_max <<<"$(q -p $((port + 1)) -c "$ranges_q")"
pool_rate=$(q -c "SELECT round(rate) FROM snowid_pool_holdings() WHERE pool = 'orders'")
load_end=$(uptime | sed 's/.*load average: //')
per_s() { awk -v n="$1" -v ms="$2" 'BEGIN { if (ms == 0) print "n/a"; else printf "%.0f", n / ms * 1000 }'; }
ns_per() { awk -v n="$1" -v ms="$2" 'BEGIN { if (n == 0) print "n/a"; else printf "%.0f", ms * 1e6 / n }'; }
tps_ns() { awk -v t="$1" 'BEGIN { if (t == 0) print "n/a"; else printf "%.0f", 1e9 / t }'; }

{
	echo "# snowid_next() with and without a registry"
	echo
	echo "Machine: $(nproc) cores. Command: \`bash test/bench/registry.sh\`. The member and, beside it on the same machine, the registry; snowid.registry switched by reload between runs, the order alternating; $ROUNDS rounds, medians."
	echo
	echo "| measure | without registry | with registry (lease held) | with ÷ without (median of per-round ratios) |"
	echo "|---|---|---|---|"
	echo "| bulk: ms for $BULK_N IDs | $(med bulk:off) | $(med bulk:on) | $(med bulk_ratio) (speed) |"
	echo "| per call: pgbench SELECT snowid_next(), 1 client, TPS | $(med call:off) | $(med call:on) | $(med call_ratio) |"
	echo
	echo "Renewals at the registry during the run (one a second): $renewals."
	echo
	echo "## snowid_ticket_next(): a pooled ticket against a striped one"
	echo
	echo "The same member, in the same rounds, registry on: 'tp' takes its blocks from ranges of the registry pool 'orders' (bigint), 'ts' is a striped ticket (one shard); both bigint, block $BLOCK; the order alternating; medians. Per call: pgbench \`SELECT snowid_ticket_next(...)\`, 1 client, $CALL_SECS s, so ns per value is a whole round trip."
	echo
	echo "| measure | striped ('ts') | pooled ('tp') | pooled ÷ striped (median of per-round ratios) |"
	echo "|---|---|---|---|"
	echo "| ticket bulk: ms for $BULK_N values | $(med tbulk:ts) | $(med tbulk:tp) | $(med tbulk_ratio) (speed; rounds $(spread tbulk_ratio)) |"
	echo "| ticket bulk: values/s | $(per_s "$BULK_N" "$(med tbulk:ts)") | $(per_s "$BULK_N" "$(med tbulk:tp)") | |"
	echo "| ticket bulk: ns per value | $(ns_per "$BULK_N" "$(med tbulk:ts)") | $(ns_per "$BULK_N" "$(med tbulk:tp)") | |"
	echo "| ticket per call: TPS (values/s) | $(med tcall:ts) | $(med tcall:tp) | $(med tcall_ratio) (rounds $(spread tcall_ratio)) |"
	echo "| ticket per call: ns per value | $(tps_ns "$(med tcall:ts)") | $(tps_ns "$(med tcall:tp)") | |"
	echo
	echo "Pool ranges granted to the member: $ranges_warm during the warm-up ($WARM_SECS s of bulk takes), $((ranges_end - ranges_warm)) during the rounds; values in hand after the warm-up: $in_hand_warm; largest range: $range_max values; the member's rate at the end: $pool_rate values/s."
	echo
	echo "Load average (\`uptime\`, 1/5/15 min): $load_start at the start, $load_end at the end."
} | tee "$out/registry.md"
