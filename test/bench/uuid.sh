#!/usr/bin/env bash
# snowid beside the keys PostgreSQL makes itself: snowid_next(), an integer
# ticket and nextval() (bigserial) against uuidv7() (PostgreSQL 18) and
# gen_random_uuid(), in one run on one server, candidates interleaved in
# every round, each in a pair of adjacent runs with its reference (the
# floor; bigserial for inserts), medians, ratios taken within each pair:
#
#   1. bulk: ns per value above the generate_series floor, × nextval();
#   2. per call: pgbench SELECT fn at 1 and 4 clients, × SELECT 1;
#   3. after 1 M rows inserted in one statement into a table keyed by each:
#      the primary key's size, the table's size, the WAL written;
#   4. inserts into those tables at 1 and 4 clients (rows/s, × bigserial);
#   5. order across sessions: 4 clients insert one row per transaction, and
#      the fraction of rows whose key is smaller than a key that arrived
#      (or committed) before it is counted (see the definition in the
#      report).
#
# Writes test/bench/results/uuid.md.
#
#   bash test/bench/uuid.sh            # full run (about 15 minutes)
#   bash test/bench/uuid.sh --smoke    # tiny run that only proves it works
#
# ROUNDS (rounds of every part), SECS (seconds of every pgbench run) and
# SIZE_N (rows before the inserts) shorten a full run.
#
# PostgreSQL: the installation of SNOWID_BENCH_PG_CONFIG, else PG_CONFIG
# (test/lib.sh); uuidv7() needs 18, and below 18 its rows read
# "n/a (PostgreSQL < 18)" (a smoke run there says so and succeeds).  snowid
# is built and installed into it unless SNOWID_SKIP_BUILD is set.  The
# server is a throwaway one (fsync on, default settings, autovacuum off so
# that no vacuum writes WAL or competes during a measurement), on port
# SNOWID_BENCH_PORT (default 55470).
set -eu
if [ -n "${SNOWID_BENCH_PG_CONFIG:-}" ]; then
	PG_CONFIG=$SNOWID_BENCH_PG_CONFIG
	export PG_CONFIG
fi
. "$(dirname "$0")/../lib.sh"

mode=full
[ "${1:-}" = --smoke ] && mode=smoke
bench_dir=$(cd "$(dirname "$0")" && pwd)
out=${SNOWID_BENCH_OUT:-$bench_dir/results}
[ $mode = smoke ] && out=$(mktemp -d "${TMPDIR:-/tmp}/snowid-bench-uuid.XXXXXX")
mkdir -p "$out"

# pgbench runs for a time (-T) in a full run and for a count of
# transactions (-t, per client) in a smoke run, which only proves the
# script works.
if [ $mode = full ]; then
	BULK_ROUNDS=${ROUNDS:-11}; BULK_N=2000000; CALL_ROUNDS=${ROUNDS:-7}
	CALL_RUN="-T ${SECS:-2}"; SIZE_N=${SIZE_N:-1000000}; INSERT_ROUNDS=${ROUNDS:-5}
	INSERT_RUN="-T ${SECS:-3}"; INSERT_ROWS=100; ORDER_RUN="-T ${SECS:-5}"; ORDER_CLIENTS=4
else
	BULK_ROUNDS=2; BULK_N=20000; CALL_ROUNDS=1; CALL_RUN="-t 50"
	SIZE_N=20000; INSERT_ROUNDS=1; INSERT_RUN="-t 5"; INSERT_ROWS=10
	ORDER_RUN="-t 50"; ORDER_CLIENTS=4
fi
started=$SECONDS
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

if [ -z "${SNOWID_SKIP_BUILD:-}" ]; then
	ensure_packages make gcc
	build_and_install /tmp/snowid-bench-uuid-build.log || { cat /tmp/snowid-bench-uuid-build.log; exit 1; }
fi
sdir=$(bench_scratch uuid-server)
port=${SNOWID_BENCH_PORT:-55470}
trap bench_cleanup EXIT
bench_server "$sdir/data" "$sdir/server.log" "$port" "" \
	"shared_preload_libraries = 'snowid'" "snowid.node_id = 1" "autovacuum = off"
export PGHOST=$sdir PGPORT=$port PGDATABASE=postgres
export PGOPTIONS="-c client_min_messages=warning"

q -c "CREATE EXTENSION snowid" -c "CREATE SEQUENCE bench_seq" \
	-c "SELECT snowid_ticket_create('bench_ticket', block => 10000)" >/dev/null
version=$(q -c "SELECT current_setting('server_version')")
has_v7=$(q -c "SELECT current_setting('server_version_num')::int >= 180000 AND to_regprocedure('pg_catalog.uuidv7()') IS NOT NULL")
na_v7="n/a (PostgreSQL < 18)"
if [ "$has_v7" != t ]; then
	echo "uuid bench: uuidv7() skipped: PostgreSQL $version has none (it came in 18); its rows say $na_v7"
fi

# The candidates: name|key type|the expression that makes a value.  The
# integer ticket is bound (::regclass), the path its README figures use.
cands=("snowid_next|bigint|snowid_next()"
	"snowid_ticket_next|bigint|snowid_ticket_next('bench_ticket'::regclass)"
	"nextval|bigint|nextval('bench_seq')")
[ "$has_v7" = t ] && cands+=("uuidv7|uuid|uuidv7()")
cands+=("gen_random_uuid|uuid|gen_random_uuid()")
# every column of the report, uuidv7 included where it did not run
all_names=(snowid_next snowid_ticket_next nextval uuidv7 gen_random_uuid)
declare -A cname=([snowid_next]="snowid_next()" [snowid_ticket_next]="snowid_ticket_next()"
	[nextval]="nextval() / bigserial" [uuidv7]="uuidv7()" [gen_random_uuid]="gen_random_uuid()")
name_of() { echo "${1%%|*}"; }
type_of() { local r=${1#*|}; echo "${r%%|*}"; }
expr_of() { echo "${1#*|*|}"; }
# the candidates in the order of round r: reversed every other round, so
# that no candidate always runs first or last
order_of() {
	local r=$1 i
	if [ $((r % 2)) -eq 1 ]; then
		printf '%s\n' "${cands[@]}"
	else
		for ((i = ${#cands[@]} - 1; i >= 0; i--)); do printf '%s\n' "${cands[$i]}"; done
	fi
}

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "n/a"; else printf "%.3f", a / b }'; }
declare -A samples
add() { samples[$1]="${samples[$1]:-} $2"; }
med() { printf '%s\n' ${samples[$1]} | median; }
range() { printf '%s\n' ${samples[$1]} | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.2f–%.2f", lo, hi}'; }

# Server-side elapsed milliseconds of one statement.
time_ms() {
	q -c "DO \$\$DECLARE t0 timestamptz := clock_timestamp(); BEGIN PERFORM $1; RAISE WARNING 'ms=%', extract(epoch FROM clock_timestamp() - t0) * 1000; END\$\$" 2>&1 |
		sed -n 's/.*ms=//p'
}
# TPS of one pgbench run: clients, the run's length (-T s or -t n), the
# transaction's script.
pgb() {
	local clients=$1 run=$2 script=$3 f
	f=$(mktemp "${TMPDIR:-/tmp}/snowid-bench-uuid.XXXXXX.sql")
	printf '%s\n' "$script" >"$f"
	chmod 644 "$f"
	# shellcheck disable=SC2086
	as_runner pgbench -n -M prepared -c "$clients" -j "$clients" $run -f "$f" 2>/dev/null |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p'
	rm -f "$f"
}

# This machine's speed flips within seconds (../shared/TESTING.md):
# every candidate runs in a pair of adjacent runs with its reference (the
# floor; bigserial for inserts), which of the two first alternating, and
# each ratio is taken within its pair.
# whether the reference runs first in pair i of round r: every other pair
ref_first() { [ $((($1 + $2) % 2)) -eq 0 ]; }

echo "== 1. bulk: SELECT count(<fn>) FROM generate_series(1, $BULK_N), $BULK_ROUNDS rounds"
for r in $(seq "$BULK_ROUNDS"); do
	declare -A norm=()
	mapfile -t round_cands < <(order_of "$r")
	i=0
	for c in "${round_cands[@]}"; do
		n=$(name_of "$c")
		fstmt="count(1) FROM generate_series(1, $BULK_N)"
		cstmt="count($(expr_of "$c")) FROM generate_series(1, $BULK_N)"
		if ref_first "$r" "$i"; then
			f=$(time_ms "$fstmt"); m=$(time_ms "$cstmt")
		else
			m=$(time_ms "$cstmt"); f=$(time_ms "$fstmt")
		fi
		i=$((i + 1))
		add "bulk:floor" "$f"
		add "bulk:$n" "$m"
		add "bulk_ns:$n" "$(awk -v m="$m" -v f="$f" -v N="$BULK_N" 'BEGIN { printf "%.2f", (m - f) * 1e6 / N }')"
		norm[$n]=$(ratio "$m" "$f")
	done
	# × nextval(): the two candidates' times, each over the floor beside it
	for c in "${cands[@]}"; do
		n=$(name_of "$c")
		add "bulk_xnv:$n" "$(ratio "${norm[nextval]}" "${norm[$n]}")"
	done
done

echo "== 2. per call: pgbench SELECT <fn>, 1 and 4 clients, $CALL_ROUNDS rounds"
for r in $(seq "$CALL_ROUNDS"); do
	for clients in 1 4; do
		mapfile -t round_cands < <(order_of "$r")
		i=0
		for c in "${round_cands[@]}"; do
			n=$(name_of "$c")
			if ref_first "$r" "$i"; then
				f=$(pgb "$clients" "$CALL_RUN" "SELECT 1;")
				t=$(pgb "$clients" "$CALL_RUN" "SELECT $(expr_of "$c");")
			else
				t=$(pgb "$clients" "$CALL_RUN" "SELECT $(expr_of "$c");")
				f=$(pgb "$clients" "$CALL_RUN" "SELECT 1;")
			fi
			i=$((i + 1))
			add "call$clients:floor" "$f"
			add "call$clients:$n" "$t"
			add "call_ratio$clients:$n" "$(ratio "$t" "$f")"
		done
	done
done

# One statement fills each table, right after a CHECKPOINT: the WAL it
# writes is the rows', the index's and the full-page images of the pages
# it touches first after the checkpoint, as any insert pays.
echo "== 3. $SIZE_N rows into a table keyed by each: sizes and WAL"
declare -A heap_mib idx_mib wal_per
for c in "${cands[@]}"; do
	n=$(name_of "$c")
	q -c "CREATE TABLE bench_ins_$n (id $(type_of "$c") PRIMARY KEY DEFAULT $(expr_of "$c"), payload text)"
	q -c "CHECKPOINT"
	l0=$(q -c "SELECT pg_current_wal_insert_lsn()")
	q -c "INSERT INTO bench_ins_$n (payload) SELECT 'row ' || g FROM generate_series(1, $SIZE_N) AS g"
	wal_per[$n]=$(q -c "SELECT round((pg_current_wal_insert_lsn() - '$l0'::pg_lsn) * 1000000.0 / $SIZE_N)")
	idx_mib[$n]=$(q -c "SELECT round(pg_relation_size('bench_ins_${n}_pkey') / 1048576.0, 1)")
	heap_mib[$n]=$(q -c "SELECT round(pg_relation_size('bench_ins_$n') / 1048576.0, 1)")
done

# INSERT_ROWS rows per transaction: the work per row (key, heap, index)
# rather than the commit's WAL flush.  Each run starts after a CHECKPOINT,
# so every key pays the same full-page writes; each key runs in a pair with
# bigserial (the nextval table), the ratio taken within the pair.
echo "== 4. inserts: pgbench, 1 and 4 clients, $INSERT_ROWS rows per transaction, $INSERT_ROUNDS rounds"
ins_rows() {
	local clients=$1 n=$2 tps
	q -c "CHECKPOINT"
	tps=$(pgb "$clients" "$INSERT_RUN" "INSERT INTO bench_ins_$n (payload) SELECT 'bench' FROM generate_series(1, $INSERT_ROWS);")
	awk -v t="$tps" -v r="$INSERT_ROWS" 'BEGIN { printf "%.1f", t * r }'
}
for r in $(seq "$INSERT_ROUNDS"); do
	for clients in 1 4; do
		mapfile -t round_cands < <(order_of "$r")
		i=0
		for c in "${round_cands[@]}"; do
			n=$(name_of "$c")
			[ "$n" = nextval ] && continue
			if ref_first "$r" "$i"; then
				b=$(ins_rows "$clients" nextval); k=$(ins_rows "$clients" "$n")
			else
				k=$(ins_rows "$clients" "$n"); b=$(ins_rows "$clients" nextval)
			fi
			i=$((i + 1))
			add "ins$clients:nextval" "$b"
			add "ins$clients:$n" "$k"
			add "ins_ratio$clients:$n" "$(ratio "$k" "$b")"
		done
		add "ins_ratio$clients:nextval" 1
	done
done
declare -A rows_end
for c in "${cands[@]}"; do
	n=$(name_of "$c")
	rows_end[$n]=$(q -c "SELECT count(*) FROM bench_ins_$n")
done

# Order across sessions.  Each row takes two serials besides its key:
# arrival, an identity column filled in the same row just before the key
# (defaults are computed in column order), and commit_order, taken by a
# deferred constraint trigger, the last thing the transaction does before
# its commit record.  A row is out of order when its key is smaller than
# the largest key of the rows before it in that order: a reader that
# follows the table by key (WHERE id > the last one seen) would have
# passed it already.  Keys are compared as values, UUIDs as their bytes
# (their text in the C collation).
echo "== 5. order across $ORDER_CLIENTS sessions, one row per transaction"
q -c "CREATE SEQUENCE bench_commit_seq" \
	-c "CREATE FUNCTION bench_commit_order() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
	EXECUTE format('UPDATE %I SET commit_order = nextval(''bench_commit_seq'') WHERE arrival = \$1', TG_TABLE_NAME)
		USING NEW.arrival;
	RETURN NULL;
END\$\$" >/dev/null
declare -A ord_rows ord_arrival ord_commit
for c in "${cands[@]}"; do
	n=$(name_of "$c")
	if [ "$(type_of "$c")" = uuid ]; then k="key::text COLLATE \"C\""; else k=key; fi
	q -c "CREATE TABLE bench_ord_$n (arrival bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	          key $(type_of "$c") NOT NULL DEFAULT $(expr_of "$c"), commit_order bigint)" \
		-c "CREATE CONSTRAINT TRIGGER bench_ord_$n AFTER INSERT ON bench_ord_$n
	          DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bench_commit_order()"
	pgb "$ORDER_CLIENTS" "$ORDER_RUN" "INSERT INTO bench_ord_$n DEFAULT VALUES;" >/dev/null
	res=$(q -c "
		SELECT count(*),
			round(count(*) FILTER (WHERE k < before_arrival) / nullif(count(*), 0)::numeric, 4),
			round(count(*) FILTER (WHERE k < before_commit) / nullif(count(*), 0)::numeric, 4)
		FROM (SELECT $k AS k,
				max($k) OVER (ORDER BY arrival ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before_arrival,
				max($k) OVER (ORDER BY commit_order ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before_commit
			FROM bench_ord_$n) AS s")
	IFS='|' read -r "ord_rows[$n]" "ord_arrival[$n]" "ord_commit[$n]" <<<"$res"
	[ "${ord_rows[$n]}" -gt 0 ] || { echo "uuid.sh: no rows in bench_ord_$n" >&2; exit 1; }
done

# ---- report ----
# the cell of candidate n in a summary row: the figure, or n/a where
# uuidv7() did not run
cell() {
	local n=$1
	shift
	if [ "$n" = uuidv7 ] && [ "$has_v7" != t ]; then echo "$na_v7"; else "$@"; fi
}
fmt() { awk -v f="$1" -v x="$2" 'BEGIN { printf f, x }'; }
summary_row() {
	local label=$1 fn=$2 line n
	line="| $label |"
	for n in "${all_names[@]}"; do line+=" $(cell "$n" "$fn" "$n") |"; done
	echo "$line"
}
s_bulk_ids() { fmt "%.2f M" "$(awk -v m="$(med "bulk:$1")" -v N="$BULK_N" 'BEGIN { print N / (m / 1000) / 1e6 }')"; }
s_bulk_ns() { fmt "%.1f" "$(med "bulk_ns:$1")"; }
s_bulk_xnv() { fmt "%.2f" "$(med "bulk_xnv:$1")"; }
s_call1() { fmt "%.2f" "$(med "call_ratio1:$1")"; }
s_call4() { fmt "%.2f" "$(med "call_ratio4:$1")"; }
s_ins1() { echo "$(fmt "%.0f" "$(med "ins1:$1")") ($(fmt "%.2f" "$(med "ins_ratio1:$1")"))"; }
s_ins4() { echo "$(fmt "%.0f" "$(med "ins4:$1")") ($(fmt "%.2f" "$(med "ins_ratio4:$1")"))"; }
s_idx() { echo "${idx_mib[$1]}"; }
s_heap() { echo "${heap_mib[$1]}"; }
s_wal() { echo "${wal_per[$1]}" | sed -e ':a' -e 's/\B[0-9]\{3\}\>/,&/' -e 'ta'; }
s_ord_a() { fmt "%.4f" "${ord_arrival[$1]}"; }
s_ord_c() { fmt "%.4f" "${ord_commit[$1]}"; }

host="$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
size_label=$(awk -v n="$SIZE_N" 'BEGIN { if (n >= 1000000 && n % 1000000 == 0) printf "%d M", n / 1000000; else printf "%d", n }')
{
	echo "# snowid beside uuidv7() and gen_random_uuid() ($mode run)"
	echo
	echo "Machine: $host; PostgreSQL $version; load average $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end; $(((SECONDS - started) / 60)) min. Command: \`bash test/bench/uuid.sh\`. Candidates interleaved in every round (the order reversed every other round), each in a pair of adjacent runs with its reference (the floor; bigserial for inserts), which runs first alternating; medians, and ratios are medians of the ratios taken within each pair."
	echo
	echo "| measure | snowid_next() | snowid_ticket_next() | nextval() / bigserial | uuidv7() | gen_random_uuid() |"
	echo "|---|---:|---:|---:|---:|---:|"
	summary_row "bulk, values/s in one backend" s_bulk_ids
	summary_row "bulk, ns per value above the floor" s_bulk_ns
	summary_row "bulk, × nextval()" s_bulk_xnv
	summary_row "pgbench \`SELECT fn\`, 1 client, × \`SELECT 1\`" s_call1
	summary_row "pgbench \`SELECT fn\`, 4 clients, × \`SELECT 1\`" s_call4
	summary_row "inserts, 1 client, $INSERT_ROWS rows per transaction, rows/s (× bigserial)" s_ins1
	summary_row "inserts, 4 clients, $INSERT_ROWS rows per transaction, rows/s (× bigserial)" s_ins4
	summary_row "primary key index after $size_label rows (MiB)" s_idx
	summary_row "table after $size_label rows (MiB)" s_heap
	summary_row "WAL bytes per 1 M inserted rows" s_wal
	summary_row "out of order across $ORDER_CLIENTS sessions, by arrival" s_ord_a
	summary_row "out of order across $ORDER_CLIENTS sessions, by commit" s_ord_c
	echo
	echo "## How each figure is taken"
	echo
	echo "**Bulk**: \`SELECT count(fn) FROM generate_series(1, $BULK_N)\`, $BULK_ROUNDS rounds, each candidate beside a run of the floor (\`count(1)\`); ns per value above the floor within each pair; × nextval() is nextval()'s time over its floor's against the candidate's time over its floor's, in the same round. Median ms: floor $(fmt "%.1f" "$(med bulk:floor)")$(for c in "${cands[@]}"; do n=$(name_of "$c"); printf ', %s %.1f' "$n" "$(med "bulk:$n")"; done)."
	echo
	echo "**Per call**: pgbench \`SELECT fn\` (prepared), ${CALL_RUN} per run, $CALL_ROUNDS rounds, each candidate beside a run of \`SELECT 1\`. Median TPS at 1 client: floor $(fmt "%.0f" "$(med call1:floor)")$(for c in "${cands[@]}"; do n=$(name_of "$c"); printf ', %s %.0f' "$n" "$(med "call1:$n")"; done); at 4 clients: floor $(fmt "%.0f" "$(med call4:floor)")$(for c in "${cands[@]}"; do n=$(name_of "$c"); printf ', %s %.0f' "$n" "$(med "call4:$n")"; done). Ratios at 4 clients, their range over the rounds:$(for c in "${cands[@]}"; do n=$(name_of "$c"); printf ' %s %s' "$n" "$(range "call_ratio4:$n")"; done)."
	echo
	echo "**Sizes and WAL**: each table \`(id <key> PRIMARY KEY DEFAULT fn, payload text)\` filled with $SIZE_N rows by one \`INSERT ... SELECT\` right after a CHECKPOINT; WAL is \`pg_current_wal_insert_lsn()\` before and after that statement (rows, index, the full-page images of pages first touched after the checkpoint), scaled to 1 M rows. A \`uuid\` key is 16 bytes against 8, so its index tuples take 24 bytes of leaf space against 16 and its heap tuples 8 more."
	echo
	echo "**Inserts**: pgbench \`INSERT INTO t (payload) SELECT 'bench' FROM generate_series(1, $INSERT_ROWS)\` into the tables above (they start at $SIZE_N rows), ${INSERT_RUN} per run, $INSERT_ROUNDS rounds, every key beside a run of bigserial, every run after a CHECKPOINT. Rows at the end:$(for c in "${cands[@]}"; do n=$(name_of "$c"); printf ' %s %s' "$n" "${rows_end[$n]}"; done). Ratios to bigserial at 4 clients, their range over the rounds:$(for c in "${cands[@]}"; do n=$(name_of "$c"); printf ' %s %s' "$n" "$(range "ins_ratio4:$n")"; done)."
	echo
	echo "**Order across sessions**: $ORDER_CLIENTS pgbench clients at once (${ORDER_RUN}), each transaction one \`INSERT INTO t DEFAULT VALUES\` into \`(arrival bigint GENERATED ALWAYS AS IDENTITY, key <key> DEFAULT fn, commit_order bigint)\`. *Arrival*: the identity, taken in the same row just before the key. *Commit*: a serial taken by a deferred constraint trigger, the last step of each transaction before its commit record. A row counts as out of order when its key is smaller than the largest key of the rows before it in that order: a reader that follows the table by key (\`WHERE id > last_seen\`) would already have passed it. By arrival, a generator that orders values across sessions shows only the moments where a session was preempted between its identity and its key; by commit it shows also the time between making the key and committing, which every generator pays. Rows:$(for c in "${cands[@]}"; do n=$(name_of "$c"); printf ' %s %s' "$n" "${ord_rows[$n]}"; done)."
} >"$out/uuid.md"

# The chart of the README: bulk values/s and insert rows/s at 4 clients
# per candidate, from the medians above.
if [ $mode = full ]; then
	for n in "${all_names[@]}"; do
		[ "$n" = uuidv7 ] && [ "$has_v7" != t ] && continue
		awk -v n="$n" -v m="$(med "bulk:$n")" -v N="$BULK_N" 'BEGIN { printf "%s %.3f\n", n, N / (m / 1000) / 1e6 }'
	done >"$out/uuid-bulk.dat"
	for n in "${all_names[@]}"; do
		[ "$n" = uuidv7 ] && [ "$has_v7" != t ] && continue
		awk -v n="$([ "$n" = nextval ] && echo bigserial || echo "$n")" -v r="$(med "ins4:$n")" 'BEGIN { printf "%s %.1f\n", n, r / 1000 }'
	done >"$out/uuid-inserts.dat"
	bash "$bench_dir/chart.sh" "$out" "$BULK_ROUNDS" "$INSERT_ROUNDS" "$INSERT_ROWS" "$SIZE_N" uuid-
fi

cat "$out/uuid.md"
echo
echo "written: $out/uuid.md$( [ -f "$out/uuid-chart.png" ] && [ $mode = full ] && echo " $out/uuid-chart.png")"
