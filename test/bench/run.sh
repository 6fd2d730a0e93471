#!/usr/bin/env bash
# snowid benchmark suite: snowid against the usual ways of making keys,
# side by side in one run, candidates interleaved over several rounds,
# medians and ratios reported.  Writes test/bench/results/results.md and
# results/chart.svg.
#
#   bash test/bench/run.sh            # full run (several minutes)
#   bash test/bench/run.sh --smoke    # tiny run that only proves the suite works
#
# It starts its own throwaway server (fsync on, default settings, snowid
# preloaded) unless PGHOST is set, in which case it uses that server (which
# must preload snowid and have snowid.node_id set; it needs a superuser).
set -eu
. "$(dirname "$0")/../lib.sh"

mode=full
[ "${1:-}" = --smoke ] && mode=smoke
bench_dir=$(cd "$(dirname "$0")" && pwd)
out=${SNOWID_BENCH_OUT:-$bench_dir/results}
[ $mode = smoke ] && out=$(mktemp -d "${TMPDIR:-/tmp}/snowid-bench-smoke.XXXXXX")
mkdir -p "$out"

if [ $mode = full ]; then
	ROUNDS=5; BULK_N=2000000; CALL_SECS=3; CEIL_N=40000000
	INSERT_PREFILL=3000000; INSERT_SECS=5; WAL_N=1000000
else
	ROUNDS=2; BULK_N=20000; CALL_SECS=1; CEIL_N=200000
	INSERT_PREFILL=20000; INSERT_SECS=1; WAL_N=20000
fi

# ---- the server ----
own_server=no
if [ -z "${PGHOST:-}" ]; then
	own_server=yes
	ensure_packages make gcc postgresql-15 postgresql-server-dev-15 gnuplot-nox
	if [ -z "${SNOWID_SKIP_BUILD:-}" ]; then
		build_and_install /tmp/snowid-bench-build.log || { cat /tmp/snowid-bench-build.log; exit 1; }
	fi
	sdir=$(mktemp -d "${TMPDIR:-/tmp}/snowid-bench-server.XXXXXX")
	[ "$(id -u)" -eq 0 ] && chown postgres "$sdir"
	as_runner initdb -D "$sdir/data" -A trust >/dev/null
	cat >>"$sdir/data/postgresql.conf" <<CONF
port = ${SNOWID_BENCH_PORT:-55439}
listen_addresses = ''
unix_socket_directories = '$sdir'
shared_preload_libraries = 'snowid'
snowid.node_id = 1
CONF
	as_runner pg_ctl -D "$sdir/data" -l "$sdir/server.log" -w start >/dev/null
	export PGHOST=$sdir PGPORT=${SNOWID_BENCH_PORT:-55439} PGDATABASE=postgres
	trap 'as_runner pg_ctl -D "$sdir/data" -m immediate stop >/dev/null 2>&1; rm -rf "$sdir"' EXIT
fi

export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"
q() { as_runner psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

q -c "CREATE EXTENSION IF NOT EXISTS snowid"
q -f "$bench_dir/instagram.sql" >/dev/null
q -c "DROP SEQUENCE IF EXISTS bench_seq, bench_seq100;
      CREATE SEQUENCE bench_seq; CREATE SEQUENCE bench_seq100 CACHE 100;"
have_tickets=$(q -c "SELECT count(*) FROM pg_proc WHERE proname = 'snowid_ticket_next'")
if [ "$have_tickets" -gt 0 ]; then
	q -c "SELECT snowid_ticket_create('bench_ticket', block => 10000)" >/dev/null 2>&1 || true
fi

# name|expression, the floor first
cands=("floor|1" "snowid_next|snowid_next()" "nextval|nextval('bench_seq')"
	"nextval_cache100|nextval('bench_seq100')" "gen_random_uuid|gen_random_uuid()"
	"instagram_plpgsql|bench_instagram_id()")
[ "$have_tickets" -gt 0 ] && cands+=("snowid_ticket_next|snowid_ticket_next('bench_ticket')")

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "n/a"; else printf "%.2f", a / b }'; }

declare -A samples
add() { samples[$1]="${samples[$1]:-} $2"; }
med() { printf '%s\n' ${samples[$1]} | median; }

# Server-side elapsed milliseconds of one statement.
time_ms() {
	q -c "DO \$\$DECLARE t0 timestamptz := clock_timestamp(); BEGIN PERFORM $1; RAISE WARNING 'ms=%', extract(epoch FROM clock_timestamp() - t0) * 1000; END\$\$" 2>&1 |
		sed -n 's/.*ms=//p'
}

echo "== 1. bulk: SELECT count(<fn>) FROM generate_series(1, $BULK_N), $ROUNDS rounds"
for r in $(seq "$ROUNDS"); do
	for c in "${cands[@]}"; do
		add "bulk:${c%%|*}" "$(time_ms "count(${c#*|}) FROM generate_series(1, $BULK_N)")"
	done
done

echo "== 2. per call: pgbench SELECT <fn>, 1 and 4 clients, ${CALL_SECS}s each, $ROUNDS rounds"
pgb() {
	local clients=$1 expr=$2 f
	f=$(mktemp "${TMPDIR:-/tmp}/snowid-bench.XXXXXX.sql")
	echo "SELECT $expr;" >"$f"
	chmod 644 "$f"
	as_runner pgbench -n -M prepared -c "$clients" -j "$clients" -T "$CALL_SECS" -f "$f" 2>/dev/null |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p'
	rm -f "$f"
}
for r in $(seq "$ROUNDS"); do
	for clients in 1 4; do
		for c in "${cands[@]}"; do
			add "call$clients:${c%%|*}" "$(pgb "$clients" "${c#*|}")"
		done
	done
done

echo "== 3. at the ceiling: max_lead = 0, $CEIL_N IDs"
q -c "ALTER SYSTEM SET snowid.max_lead = 0" -c "ALTER SYSTEM SET snowid.max_wait = '10s'" -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
stats0=$(q -c "SELECT waits, wait_time_ms FROM snowid_stats()")
cpu0=$(awk '{print $14 + $15}' /proc/$(q -c "SELECT pg_backend_pid()")/stat 2>/dev/null || echo 0)
ceil_ms=$(time_ms "count(snowid_next()) FROM generate_series(1, $CEIL_N)")
stats1=$(q -c "SELECT waits, wait_time_ms FROM snowid_stats()")
q -c "ALTER SYSTEM RESET snowid.max_lead" -c "ALTER SYSTEM RESET snowid.max_wait" -c "SELECT pg_reload_conf()" >/dev/null
ceil_rate=$(awk -v n="$CEIL_N" -v ms="$ceil_ms" 'BEGIN { printf "%.0f", n / (ms / 1000) }')
ceil_frac=$(awk -v r="$ceil_rate" 'BEGIN { printf "%.3f", r / 4096000 }')
ceil_waits=$(awk -F'|' -v a="$stats0" 'BEGIN { split(a, x, "|") } { printf "%d waits, %.0f ms waited", $1 - x[1], $2 - x[2] }' <<<"$stats1")

echo "== 4. inserts: pgbench, 4 clients, after $INSERT_PREFILL rows per table"
itables=("snowid_next|bigint PRIMARY KEY DEFAULT snowid_next()" "bigserial|bigserial PRIMARY KEY"
	"gen_random_uuid|uuid PRIMARY KEY DEFAULT gen_random_uuid()")
[ "$have_tickets" -gt 0 ] && itables+=("snowid_ticket_next|bigint PRIMARY KEY DEFAULT snowid_ticket_next('bench_ticket')")
for t in "${itables[@]}"; do
	n=${t%%|*}
	q -c "DROP TABLE IF EXISTS bench_ins_$n; CREATE TABLE bench_ins_$n (id ${t#*|}, payload text);
	      INSERT INTO bench_ins_$n (payload) SELECT 'row ' || g FROM generate_series(1, $INSERT_PREFILL) AS g;
	      CHECKPOINT;"
done
for r in $(seq "$ROUNDS"); do
	for t in "${itables[@]}"; do
		n=${t%%|*}
		f=$(mktemp "${TMPDIR:-/tmp}/snowid-bench.XXXXXX.sql")
		echo "INSERT INTO bench_ins_$n (payload) VALUES ('bench');" >"$f"
		chmod 644 "$f"
		add "insert:$n" "$(as_runner pgbench -n -M prepared -c 4 -j 4 -T "$INSERT_SECS" -f "$f" 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p')"
		rm -f "$f"
	done
done
declare -A idx
for t in "${itables[@]}"; do
	n=${t%%|*}
	idx[$n]=$(q -c "SELECT pg_relation_size('bench_ins_${n}_pkey'::regclass) / 1024 / 1024.0")
done

echo "== 5. WAL per million IDs (no insert)"
declare -A wal
for c in "${cands[@]}"; do
	n=${c%%|*}
	[ "$n" = floor ] && continue
	wal[$n]=$(q -c "SELECT pg_current_wal_lsn()" | { read -r l0; q -c "SELECT count(${c#*|}) FROM generate_series(1, $WAL_N)" >/dev/null; q -c "SELECT round((pg_current_wal_lsn() - '$l0'::pg_lsn) * 1000000.0 / $WAL_N)"; })
done

echo "== 6. shared memory"
shmem=$(q -c "SELECT coalesce(string_agg(name || ': ' || allocated_size || ' bytes', ', ' ORDER BY name), 'none') FROM pg_shmem_allocations WHERE name LIKE 'snowid%'")

# ---- report ----
host="$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), $(q -c 'SELECT version()' | cut -d, -f1)"
floor_ms=$(med bulk:floor)
nextval_ms=$(med bulk:nextval)
{
	echo "# snowid benchmark ($mode run)"
	echo
	echo "Machine: $host. Command: \`bash test/bench/run.sh\`. $ROUNDS rounds, candidates interleaved, medians."
	echo
	echo "## 1. Bulk: \`SELECT count(<fn>) FROM generate_series(1, $BULK_N)\`"
	echo
	echo "| candidate | median ms | IDs/s | ns per ID above floor | × nextval IDs/s |"
	echo "|---|---:|---:|---:|---:|"
	for c in "${cands[@]}"; do
		n=${c%%|*}; m=$(med "bulk:$n")
		awk -v n="$n" -v m="$m" -v f="$floor_ms" -v nv="$nextval_ms" -v N="$BULK_N" \
			'BEGIN { printf "| %s | %.1f | %.0f | %.1f | %.2f |\n", n, m, N / (m / 1000), (m - f) * 1e6 / N, nv / m }'
	done
	echo
	echo "## 2. Per call: pgbench \`SELECT <fn>\` (TPS, × the \`SELECT 1\` floor)"
	echo
	echo "| candidate | 1 client TPS | × floor | 4 clients TPS | × floor |"
	echo "|---|---:|---:|---:|---:|"
	for c in "${cands[@]}"; do
		n=${c%%|*}; t1=$(printf '%.0f' "$(med "call1:$n")"); t4=$(printf '%.0f' "$(med "call4:$n")")
		echo "| $n | $t1 | $(ratio "$t1" "$(med call1:floor)") | $t4 | $(ratio "$t4" "$(med call4:floor)") |"
	done
	echo
	echo "## 3. At the ceiling (default layout, \`snowid.max_lead = 0\`)"
	echo
	echo "$CEIL_N IDs in $(printf '%.0f' "$ceil_ms") ms: $ceil_rate IDs/s, **$ceil_frac** of the layout's 4,096,000 IDs/s ($ceil_waits: callers sleep until the next tick instead of spinning)."
	echo
	echo "## 4. Inserts: pgbench, 4 clients, ${INSERT_SECS}s, tables prefilled with $INSERT_PREFILL rows"
	echo
	echo "| primary key | median TPS | × bigserial | index size (MiB) |"
	echo "|---|---:|---:|---:|"
	for t in "${itables[@]}"; do
		n=${t%%|*}; m=$(printf '%.0f' "$(med "insert:$n")")
		echo "| $n | $m | $(ratio "$m" "$(med insert:bigserial)") | $(printf '%.1f' "${idx[$n]}") |"
	done
	echo
	echo "## 5. WAL per million IDs generated (no insert)"
	echo
	echo "| candidate | bytes of WAL per 1M IDs |"
	echo "|---|---:|"
	for c in "${cands[@]}"; do
		n=${c%%|*}; [ "$n" = floor ] && continue
		echo "| $n | ${wal[$n]} |"
	done
	echo
	echo "## 6. Shared memory"
	echo
	echo "$shmem"
} >"$out/results.md"

# chart: bulk IDs/s per candidate
{
	for c in "${cands[@]}"; do
		n=${c%%|*}; [ "$n" = floor ] && continue
		awk -v n="$n" -v m="$(med "bulk:$n")" -v N="$BULK_N" 'BEGIN { printf "%s %.3f\n", n, N / (m / 1000) / 1e6 }'
	done
} >"$out/bulk.dat"
if command -v gnuplot >/dev/null; then
	gnuplot <<GP
set terminal svg size 800,400 font "sans,12"
set output "$out/chart.svg"
set title "IDs per second in one backend (millions, median of $ROUNDS rounds)"
set style fill solid 0.8
set boxwidth 0.6
set yrange [0:*]
set xtics rotate by -20
set grid ytics
unset key
plot "$out/bulk.dat" using 0:2:xtic(1) with boxes lc rgb "#3b7dd8", "" using 0:2:(sprintf("%.2f", \$2)) with labels offset 0,0.8
GP
fi

cat "$out/results.md"
echo
echo "written: $out/results.md $( [ -f "$out/chart.svg" ] && echo "$out/chart.svg")"
