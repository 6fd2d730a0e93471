#!/usr/bin/env bash
# Can one registry serve the whole node space?  1,024 members renewing their
# leases every second, simulated by pgbench against a throwaway registry
# server: renewals of random nodes among 1,024 held ones (each client its
# own eighth of them: a member renews only its own node, so two renewals of
# one node never meet), at 1,024 a second (latency p50/p99/max, and the
# clients an error stopped), and as fast as they go (renewals a second), for
# the registry of this version beside the same server's registry of 1.10
# (a second database with CREATE EXTENSION snowid VERSION '1.10': its
# calls run in the caller's transaction, where 2.0's go to the registry's
# server process), interleaved over several rounds, medians.  Writes
# test/bench/results/renewals.md.
#
#   bash test/bench/renewals.sh            # full run (about four minutes)
#   bash test/bench/renewals.sh --smoke    # tiny run that only proves it works
#   SNOWID_RENEWALS_BASE=1.4 bash test/bench/renewals.sh   # against 1.4 (any from 1.4)
#
# Also: PG_CONFIG (the PostgreSQL 15 to build for and run), SNOWID_BENCH_PORT
# (55461), SNOWID_BENCH_OUT (where renewals.md goes), SNOWID_SKIP_BUILD=1,
# SNOWID_RENEWALS_PROCESSES (snowid.registry_processes, 2),
# SNOWID_RENEWALS_ROUNDS, _RATE_SECS, _MAX_SECS (5 rounds of 20 s and 10 s).
#
# The registry preloads snowid (2.0 needs it); the clients run on the same cores as the
# registry (8 pgbench clients on this 2-core machine), so if anything this
# overstates the latency.
set -eu
. "$(dirname "$0")/../lib.sh"

mode=full
[ "${1:-}" = --smoke ] && mode=smoke
bench_dir=$(cd "$(dirname "$0")" && pwd)
out=${SNOWID_BENCH_OUT:-$bench_dir/results}
[ $mode = smoke ] && out=$(mktemp -d "${TMPDIR:-/tmp}/snowid-bench-renewals.XXXXXX")
mkdir -p "$out"
if [ $mode = full ]; then
	ROUNDS=5; RATE_SECS=20; MAX_SECS=10
else
	ROUNDS=1; RATE_SECS=2; MAX_SECS=1
fi
# (a shorter or longer run: rounds, seconds at the rate, seconds flat out)
ROUNDS=${SNOWID_RENEWALS_ROUNDS:-$ROUNDS}
RATE_SECS=${SNOWID_RENEWALS_RATE_SECS:-$RATE_SECS}
MAX_SECS=${SNOWID_RENEWALS_MAX_SECS:-$MAX_SECS}
NODES=1024
CLIENTS=8

ensure_packages make gcc postgresql-15 postgresql-server-dev-15
if [ -z "${SNOWID_SKIP_BUILD:-}" ]; then
	build_and_install /tmp/snowid-bench-build.log || { cat /tmp/snowid-bench-build.log; exit 1; }
fi
sdir=$(bench_scratch renewals-server)
port=${SNOWID_BENCH_PORT:-55461}
trap bench_cleanup EXIT
bench_server "$sdir/registry" "$sdir/registry.log" "$port" "" "max_connections = 50" \
	"shared_preload_libraries = 'snowid'" \
	"snowid.registry_processes = ${SNOWID_RENEWALS_PROCESSES:-2}"
export PGHOST=$sdir PGPORT=$port

layout='epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 10, sequence_bits 12, id_bits 63'
q -d postgres -c "CREATE DATABASE r14" -c "CREATE DATABASE r15"
base=${SNOWID_RENEWALS_BASE:-1.10}
q -d r14 -c "CREATE EXTENSION snowid VERSION '$base'"
if [ "$base" != 1.4 ]; then
	q -d r14 -c "INSERT INTO snowid_registry_settings (only_row, max_nodes_per_role) VALUES (true, $NODES)"
fi
q -d r15 -c "CREATE EXTENSION snowid" \
	-c "INSERT INTO snowid_registry_settings (only_row, max_nodes_per_role) VALUES (true, $NODES)"

# The renewal of node :n by its member, as each version's worker sends it.
renew14="SELECT result FROM snowid_registry_claim(:n, false, $((NODES - 1)), '$layout', 'c', 'h', 5432, :n, 's' || :n, NULL, false, 600000, 5000, NULL);"
renew15="SELECT result FROM snowid_registry_claim(:n, false, $((NODES - 1)), '$layout', 'c', 'h', 5432, :n, 's' || :n, rpad('s' || :n, 32, '#'), NULL, false, 600000, 5000, 1000, NULL);"
# a base of 1.5 or later renews as this version does (a secret, a bound)
if [ "$base" != 1.4 ]; then renew14=$renew15; fi
for v in 14 15; do
	f="$sdir/renew$v.sql"
	eval "body=\$renew$v"
	printf '\\set n :client_id + %d * random(0, %d)\n%s\n' $CLIENTS $((NODES / CLIENTS - 1)) "$body" >"$f"
	chmod 644 "$f"
	# every node held, by its own start
	q -d r$v -c "SELECT count(*) FROM generate_series(0, $((NODES - 1))) AS g(n),
		LATERAL (SELECT * FROM snowid_registry_claim($(sed -e 's/^SELECT result FROM snowid_registry_claim(//' -e 's/);$//' -e 's/:n/g.n/g' <<<"$body"))) c
		WHERE c.result = 'ok'" >"$sdir/held$v"
	[ "$(cat "$sdir/held$v")" = "$NODES" ] || { echo "registry $v: only $(cat "$sdir/held$v") of $NODES nodes held" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] && chown -R postgres "$sdir"

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
declare -A samples
add() { samples[$1]="${samples[$1]:-} $2"; }
med() { printf '%s\n' ${samples[$1]} | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "n/a"; else printf "%.3f", a / b }'; }

# pgbench at $NODES renewals a second: p50, p99 and max latency in ms, the
# renewals done, and the clients an error stopped (pgbench ends a client at
# its first error: those after it are not run, nor counted).
at_rate() {
	local v=$1 logdir="$sdir/log$1.$2"
	mkdir -p "$logdir"
	[ "$(id -u)" -eq 0 ] && chown postgres "$logdir"
	(cd "$logdir" && as_runner pgbench -n -M prepared -c $CLIENTS -j 2 -R $NODES -T "$RATE_SECS" \
		-f "$sdir/renew$v.sql" -l --log-prefix="$logdir/tx" r$v >"$logdir/out" 2>&1) || true
	cat "$logdir"/tx* | awk '{print $3 / 1000}' | sort -g | awk '
		{a[NR]=$1} END {
			if (NR == 0) { printf "n/a n/a n/a 0"; exit }
			p50 = a[int(NR * 0.50) > 0 ? int(NR * 0.50) : 1]
			p99 = a[int(NR * 0.99) > 0 ? int(NR * 0.99) : 1]
			printf "%.2f %.2f %.2f %d", p50, p99, a[NR], NR }'
	echo " $(grep -c 'aborted' "$logdir/out" || true)"
}
# flat out: renewals a second, and the clients an error stopped
at_max() {
	local err="$sdir/max$1.err"
	as_runner pgbench -n -M prepared -c $CLIENTS -j 2 -T "$MAX_SECS" -f "$sdir/renew$1.sql" "r$1" 2>"$err" |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p' | tr '\n' ' '
	grep -c 'aborted' "$err" || true
}

declare -A stopped=()
load_start=$(uptime | sed 's/.*load average: //')
echo "== $NODES members renewing every second, registry $base against this version, $ROUNDS rounds (order alternates)"
for r in $(seq "$ROUNDS"); do
	declare -A p99=() tps=()
	order="14 15"
	[ $((r % 2)) -eq 0 ] && order="15 14"
	for v in $order; do
		read -r a50 a99 amax n stop <<<"$(at_rate "$v" "$r")"
		add "p50:$v" "$a50"; add "p99:$v" "$a99"; add "max:$v" "$amax"; add "n:$v" "$n"
		p99[$v]=$a99
		read -r tps[$v] stopmax <<<"$(at_max "$v")"
		add "tps:$v" "${tps[$v]}"
		stopped[$v]=$(( ${stopped[$v]:-0} + stop + stopmax ))
		echo "round $r, registry $([ "$v" = 14 ] && echo "$base" || echo this): p50 $a50 ms, p99 $a99 ms, max $amax ms ($n renewals at $NODES/s, $stop clients stopped by an error); $(printf '%.0f' "${tps[$v]}") renewals/s flat out ($stopmax stopped)"
	done
	add p99_ratio "$(ratio "${p99[15]}" "${p99[14]}")"
	add tps_ratio "$(ratio "${tps[15]}" "${tps[14]}")"
done
bad=$(q -d r15 -c "SELECT count(*) FROM snowid_registry_nodes WHERE state <> 'held' OR holder_role IS NULL")
load_end=$(uptime | sed 's/.*load average: //')

{
	echo "# One registry, the whole node space: $NODES members renewing every second"
	echo
	echo "Machine: $(nproc) cores. Command: \`bash test/bench/renewals.sh\`. One registry server (snowid preloaded) with two databases: snowid $base and this version; in each all $NODES nodes held, and pgbench ($CLIENTS clients, \`-M prepared\`, on the same machine) renewing random ones as the members' workers do (each client its own $((NODES / CLIENTS)) nodes): at $NODES renewals a second for $RATE_SECS s (latency per renewal), then flat out for $MAX_SECS s. $ROUNDS rounds, the order alternating; medians."
	echo
	echo "| measure | $base | this version | this ÷ $base (median of per-round ratios) |"
	echo "|---|---|---|---|"
	echo "| p50 renewal at $NODES/s, ms | $(med p50:14) | $(med p50:15) | |"
	echo "| p99 renewal at $NODES/s, ms | $(med p99:14) | $(med p99:15) | $(med p99_ratio) |"
	echo "| slowest renewal at $NODES/s, ms | $(med max:14) | $(med max:15) | |"
	echo "| renewals a second, flat out | $(printf '%.0f' "$(med tps:14)") | $(printf '%.0f' "$(med tps:15)") | $(med tps_ratio) |"
	echo "| clients stopped by an error, all runs | ${stopped[14]:-0} | ${stopped[15]:-0} | |"
	echo
	echo "Nodes of this version not held by their role at the end: $bad."
	echo
	echo "Load average (\`uptime\`, 1/5/15 min): $load_start at the start, $load_end at the end."
} | tee "$out/renewals.md"
