#!/usr/bin/env bash
# What a registry costs snowid_next(): the same server with snowid.registry
# set (the lease held, state ok) and unset, switched by reload between runs,
# interleaved over several rounds; medians of the ratios taken within each
# round.  Writes test/bench/results/registry.md.
#
#   bash test/bench/registry.sh            # full run (about three minutes)
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
	ROUNDS=11; BULK_N=2000000; CALL_SECS=3
else
	ROUNDS=2; BULK_N=20000; CALL_SECS=1
fi

ensure_packages make gcc postgresql-15 postgresql-server-dev-15
if [ -z "${SNOWID_SKIP_BUILD:-}" ]; then
	build_and_install /tmp/snowid-bench-build.log || { cat /tmp/snowid-bench-build.log; exit 1; }
fi
sdir=$(mktemp -d "${TMPDIR:-/tmp}/snowid-bench-registry-server.XXXXXX")
[ "$(id -u)" -eq 0 ] && chown postgres "$sdir"
port=${SNOWID_BENCH_PORT:-55441}
as_runner initdb -D "$sdir/data" -A trust >/dev/null
cat >>"$sdir/data/postgresql.conf" <<CONF
port = $port
listen_addresses = ''
unix_socket_directories = '$sdir'
shared_preload_libraries = 'snowid'
snowid.node_id = 1
CONF
as_runner initdb -D "$sdir/registry" -A trust >/dev/null
cat >>"$sdir/registry/postgresql.conf" <<CONF
port = $((port + 1))
listen_addresses = ''
unix_socket_directories = '$sdir'
CONF
as_runner pg_ctl -D "$sdir/data" -l "$sdir/server.log" -w start >/dev/null
as_runner pg_ctl -D "$sdir/registry" -l "$sdir/registry.log" -w start >/dev/null
export PGHOST=$sdir PGPORT=$port PGDATABASE=postgres
trap 'as_runner pg_ctl -D "$sdir/data" -m immediate stop >/dev/null 2>&1; as_runner pg_ctl -D "$sdir/registry" -m immediate stop >/dev/null 2>&1; rm -rf "$sdir"' EXIT
export PGOPTIONS="-c client_min_messages=warning"
q() { as_runner psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

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
time_ms() {
	q -c "DO \$\$DECLARE t0 timestamptz := clock_timestamp(); BEGIN PERFORM $1; RAISE WARNING 'ms=%', extract(epoch FROM clock_timestamp() - t0) * 1000; END\$\$" 2>&1 |
		sed -n 's/.*ms=//p'
}
pgb() {
	local f
	f=$(mktemp "${TMPDIR:-/tmp}/snowid-bench.XXXXXX.sql")
	echo "SELECT snowid_next();" >"$f"
	chmod 644 "$f"
	as_runner pgbench -n -M prepared -c 1 -j 1 -T "$CALL_SECS" -f "$f" 2>/dev/null |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p'
	rm -f "$f"
}

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
done
use_registry on
renewals=$(q -c "SELECT renewals FROM snowid_registry_stats()")

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
} | tee "$out/registry.md"
