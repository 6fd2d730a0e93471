#!/usr/bin/env bash
# Inserts at many clients: every monotonic key (bigserial, snowid_next())
# lands on the right-most leaf of its primary key, where concurrent inserts
# queue for the same buffer lock; random UUIDs spread over the whole index.
# This measures the usual answers with snowid keys beside bigserial and
# gen_random_uuid(): a table hash-partitioned by id (8 partitions, so 8
# right-most leaves) and a primary key with fillfactor 70.  pgbench, the
# tables interleaved in every round, each run right after a CHECKPOINT;
# medians of rows/s and of the ratios to bigserial taken within each round.
# Writes test/bench/results/inserts.md.
#
#   bash test/bench/inserts.sh            # full run (about five minutes)
#   bash test/bench/inserts.sh --smoke    # tiny run that only proves it works
#
# The server runs with synchronous_commit = off (as on the many-core
# machine), so that a transaction's cost is its inserts, not the WAL flush
# of its commit.  CLIENTS (default 16) sets the pgbench clients.
set -eu
. "$(dirname "$0")/../lib.sh"

mode=full
[ "${1:-}" = --smoke ] && mode=smoke
bench_dir=$(cd "$(dirname "$0")" && pwd)
out=${SNOWID_BENCH_OUT:-$bench_dir/results}
[ $mode = smoke ] && out=$(mktemp -d "${TMPDIR:-/tmp}/snowid-bench-inserts.XXXXXX")
mkdir -p "$out"
CLIENTS=${CLIENTS:-16}
if [ $mode = full ]; then
	ROUNDS=${ROUNDS:-5}; SECS=${SECS:-5}; ROWS=100
else
	ROUNDS=2; SECS=1; ROWS=10; CLIENTS=2
fi

if [ -z "${SNOWID_SKIP_BUILD:-}" ]; then
	ensure_packages make gcc postgresql-15 postgresql-server-dev-15
	build_and_install /tmp/snowid-bench-build.log || { cat /tmp/snowid-bench-build.log; exit 1; }
fi
sdir=$(bench_scratch inserts-server)
port=${SNOWID_BENCH_PORT:-55445}
trap bench_cleanup EXIT
bench_server "$sdir/data" "$sdir/server.log" "$port" "" \
	"shared_preload_libraries = 'snowid'" "snowid.node_id = 1" "synchronous_commit = off" \
	"max_connections = 100" "autovacuum = off"
export PGHOST=$sdir PGPORT=$port PGDATABASE=postgres
export PGOPTIONS="-c client_min_messages=warning"

q -c "CREATE EXTENSION snowid"
# name|DDL (the table is bench_<name>, its primary key bench_<name>_pkey)
tables=(
	"bigserial|CREATE TABLE bench_bigserial (id bigserial PRIMARY KEY, payload text)"
	"snowid|CREATE TABLE bench_snowid (id bigint PRIMARY KEY DEFAULT snowid_next(), payload text)"
	"uuid|CREATE TABLE bench_uuid (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), payload text)"
	"snowid_hash8|CREATE TABLE bench_snowid_hash8 (id bigint PRIMARY KEY DEFAULT snowid_next(), payload text) PARTITION BY HASH (id)"
	"snowid_ff70|CREATE TABLE bench_snowid_ff70 (id bigint DEFAULT snowid_next(), payload text, CONSTRAINT bench_snowid_ff70_pkey PRIMARY KEY (id) WITH (fillfactor = 70))"
)
for t in "${tables[@]}"; do
	q -c "${t#*|}"
done
for i in 0 1 2 3 4 5 6 7; do
	q -c "CREATE TABLE bench_snowid_hash8_$i PARTITION OF bench_snowid_hash8 FOR VALUES WITH (MODULUS 8, REMAINDER $i)"
done

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
declare -A samples
add() { samples[$1]="${samples[$1]:-} $2"; }
med() { printf '%s\n' ${samples[$1]} | median; }
pgb() {
	local f
	f=$(mktemp "${TMPDIR:-/tmp}/snowid-bench.XXXXXX.sql")
	echo "$1" >"$f"
	chmod 644 "$f"
	as_runner pgbench -n -M prepared -c "$CLIENTS" -j "$CLIENTS" -T "$SECS" -f "$f" 2>/dev/null |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p'
	rm -f "$f"
}

echo "== inserts: $CLIENTS clients, ${SECS}s per run, $ROUNDS rounds"
for r in $(seq "$ROUNDS"); do
	for rows in 1 "$ROWS"; do
		declare -A tps=()
		for t in "${tables[@]}"; do
			n=${t%%|*}
			q -c "CHECKPOINT"
			if [ "$rows" = 1 ]; then
				stmt="INSERT INTO bench_$n (payload) VALUES ('bench');"
			else
				stmt="INSERT INTO bench_$n (payload) SELECT 'bench' FROM generate_series(1, $rows);"
			fi
			tps[$n]=$(pgb "$stmt")
			add "rows$rows:$n" "$(awk -v t="${tps[$n]}" -v r="$rows" 'BEGIN { printf "%.0f", t * r }')"
		done
		for t in "${tables[@]}"; do
			n=${t%%|*}
			add "x$rows:$n" "$(awk -v a="${tps[$n]}" -v b="${tps[bigserial]}" 'BEGIN { printf "%.3f", a / b }')"
		done
		echo "round $r, $rows rows: $(for t in "${tables[@]}"; do printf '%s %s  ' "${t%%|*}" "${tps[${t%%|*}]}"; done)"
	done
done

# the primary key's size and rows at the end (partitions summed)
declare -A size rows_end
for t in "${tables[@]}"; do
	n=${t%%|*}
	size[$n]=$(q -c "SELECT round(sum(pg_relation_size(i.indexrelid)) / 1048576.0, 1) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid WHERE i.indisprimary AND (c.relname = 'bench_$n' OR c.relname ~ '^bench_${n}_[0-9]$') AND c.relkind = 'r'")
	rows_end[$n]=$(q -c "SELECT count(*) FROM bench_$n")
done
# a time range is still one index range per partition
plan=$(q -c "EXPLAIN (COSTS OFF) SELECT count(*) FROM bench_snowid_hash8 WHERE id BETWEEN snowid_from_timestamp('2025-06-01') AND snowid_from_timestamp('2025-06-02')" |
	grep -c 'Index Only Scan\|Index Scan\|Bitmap Index Scan' || true)

host="$(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
{
	echo "# Inserts at $CLIENTS clients ($mode run)"
	echo
	echo "Machine: $host; load average at the end $(cut -d' ' -f1-3 /proc/loadavg). Command: \`bash test/bench/inserts.sh\`. pgbench, $CLIENTS clients, ${SECS}s per run, $ROUNDS rounds, the tables interleaved, each run after a CHECKPOINT; synchronous_commit = off. Rows/s are medians, × bigserial the median of the ratios taken within each round. Tables start empty and grow through the runs."
	echo
	echo "| primary key | 1 row per transaction, rows/s | × bigserial | $ROWS rows per transaction, rows/s | × bigserial | primary key at the end (MiB) | rows at the end |"
	echo "|---|---:|---:|---:|---:|---:|---:|"
	for t in "${tables[@]}"; do
		n=${t%%|*}
		printf '| %s | %.0f | %.2f | %.0f | %.2f | %s | %s |\n' "$n" "$(med "rows1:$n")" "$(med "x1:$n")" \
			"$(med "rows$ROWS:$n")" "$(med "x$ROWS:$n")" "${size[$n]}" "${rows_end[$n]}"
	done
	echo
	echo "snowid_hash8: \`PARTITION BY HASH (id)\`, 8 partitions; a time range (\`id BETWEEN snowid_from_timestamp(a) AND snowid_from_timestamp(b)\`) is planned as $plan index scans, one per partition. snowid_ff70: the primary key \`WITH (fillfactor = 70)\`."
} >"$out/inserts.md"
cat "$out/inserts.md"
