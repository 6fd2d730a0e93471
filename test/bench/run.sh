#!/usr/bin/env bash
# snowid benchmark suite: snowid against the usual ways of making keys,
# side by side in one run, candidates interleaved over several rounds,
# medians and ratios reported.  Writes test/bench/results/results.md and
# results/chart.png.
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
	CEIL_ROUNDS=5; BULK_ROUNDS=11; BULK_N=2000000; CALL_ROUNDS=15; CALL_SECS=2
	CEIL_N=20000000; INSERT_ROUNDS=7; INSERT_PREFILL=3000000; INSERT_SECS=8
	INSERT_ROWS=100; WAL_N=1000000; CG_N=100000
else
	CEIL_ROUNDS=2; BULK_ROUNDS=2; BULK_N=20000; CALL_ROUNDS=2; CALL_SECS=1
	CEIL_N=200000; INSERT_ROUNDS=2; INSERT_PREFILL=20000; INSERT_SECS=1
	INSERT_ROWS=10; WAL_N=20000; CG_N=200
fi

# ---- the server ----
own_server=no
if [ -z "${PGHOST:-}" ]; then
	own_server=yes
	ensure_packages make gcc postgresql-15 postgresql-server-dev-15 gnuplot-nox valgrind
	if [ -z "${SNOWID_SKIP_BUILD:-}" ]; then
		build_and_install /tmp/snowid-bench-build.log || { cat /tmp/snowid-bench-build.log; exit 1; }
	fi
	sdir=$(bench_scratch server)
	trap bench_cleanup EXIT
	bench_server "$sdir/data" "$sdir/server.log" "${SNOWID_BENCH_PORT:-55439}" "" \
		"shared_preload_libraries = 'snowid'" "snowid.node_id = 1"
	export PGHOST=$sdir PGPORT=${SNOWID_BENCH_PORT:-55439} PGDATABASE=postgres
fi

export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"

q -c "CREATE EXTENSION IF NOT EXISTS snowid"
# read by this shell, not by psql: the postgres user may not be able to
# read a checkout that only root can (a clone in a mode-700 directory)
q <"$bench_dir/instagram.sql" >/dev/null
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
[ "$have_tickets" -gt 0 ] && cands+=("snowid_ticket_next|snowid_ticket_next('bench_ticket'::regclass)")

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

# The same statement varies by up to half its time from run to run on a
# virtual machine (the floor itself took 199 to 322 ms in one series), so
# costs above the floor and ratios are taken within each round, next to the
# floor run, over more rounds than elsewhere.
echo "== 1. bulk: SELECT count(<fn>) FROM generate_series(1, $BULK_N), $BULK_ROUNDS rounds"
for r in $(seq "$BULK_ROUNDS"); do
	declare -A round_ms=()
	for c in "${cands[@]}"; do
		round_ms[${c%%|*}]=$(time_ms "count(${c#*|}) FROM generate_series(1, $BULK_N)")
		add "bulk:${c%%|*}" "${round_ms[${c%%|*}]}"
	done
	for c in "${cands[@]}"; do
		n=${c%%|*}
		add "bulk_ns:$n" "$(awk -v m="${round_ms[$n]}" -v f="${round_ms[floor]}" -v N="$BULK_N" 'BEGIN { printf "%.2f", (m - f) * 1e6 / N }')"
		add "bulk_xnv:$n" "$(ratio "${round_ms[nextval]}" "${round_ms[$n]}")"
	done
done

# More rounds than elsewhere: short pgbench runs on a small machine vary by
# +-10% from one run to the next.
echo "== 2. per call: pgbench SELECT <fn>, 1 and 4 clients, ${CALL_SECS}s each, $CALL_ROUNDS rounds"
# TPS of one pgbench run: clients, seconds, the statement of each transaction.
pgb() {
	local clients=$1 secs=$2 statement=$3 f
	f=$(mktemp "${TMPDIR:-/tmp}/snowid-bench.XXXXXX.sql")
	echo "$statement" >"$f"
	chmod 644 "$f"
	as_runner pgbench -n -M prepared -c "$clients" -j "$clients" -T "$secs" -f "$f" 2>/dev/null |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p'
	rm -f "$f"
}
for r in $(seq "$CALL_ROUNDS"); do
	for clients in 1 4; do
		declare -A round_tps=()
		for c in "${cands[@]}"; do
			round_tps[${c%%|*}]=$(pgb "$clients" "$CALL_SECS" "SELECT ${c#*|};")
			add "call$clients:${c%%|*}" "${round_tps[${c%%|*}]}"
		done
		for c in "${cands[@]}"; do
			add "call_ratio$clients:${c%%|*}" "$(ratio "${round_tps[${c%%|*}]}" "${round_tps[floor]}")"
		done
	done
done

# Measured before the inserts, whose tables autovacuum later works on: WAL
# written by other processes would count too.
echo "== 5. WAL per million IDs (no insert)"
declare -A wal
for c in "${cands[@]}"; do
	n=${c%%|*}
	[ "$n" = floor ] && continue
	wal[$n]=$(q -c "SELECT pg_current_wal_lsn()" | { read -r l0; q -c "SELECT count(${c#*|}) FROM generate_series(1, $WAL_N)" >/dev/null; q -c "SELECT round((pg_current_wal_lsn() - '$l0'::pg_lsn) * 1000000.0 / $WAL_N)"; })
done

echo "== 3. at the ceiling: max_lead = 0, $CEIL_N IDs per run, $CEIL_ROUNDS rounds"
q -c "ALTER SYSTEM SET snowid.max_lead = 0" -c "ALTER SYSTEM SET snowid.max_wait = '10s'" -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
ceil_per_tick=$(q -c "SELECT 1::bigint << sequence_bits FROM snowid_layout()")
ceil_max=$(q -c "SELECT ids_per_second FROM snowid_layout()")
# One run of a query that draws the IDs x: wall ms, IDs, ticks from the
# first ID's to the last ID's, CPU ms of the backend (from /proc/self/stat),
# ms from the statement's start to the start of the first ID's tick (what
# the statement did before it drew an ID, to a tick).
ceil_run() {
	q -c "DO \$\$
DECLARE
	t0 timestamptz; s0 text; s1 text; r record;
BEGIN
	s0 := pg_read_file('/proc/self/stat');
	t0 := clock_timestamp();
	SELECT count(*) AS n, min(x) AS lo, max(x) AS hi INTO r FROM ($1) AS s;
	s1 := pg_read_file('/proc/self/stat');
	RAISE WARNING 'res=% % % % %',
		extract(epoch FROM clock_timestamp() - t0) * 1000, r.n,
		(extract(epoch FROM snowid_timestamp(r.hi) - snowid_timestamp(r.lo)) * 1000000 /
		 (SELECT extract(epoch FROM tick) * 1000000 FROM snowid_layout()))::bigint + 1,
		(split_part(s1, ' ', 14)::bigint + split_part(s1, ' ', 15)::bigint -
		 split_part(s0, ' ', 14)::bigint - split_part(s0, ' ', 15)::bigint) * 1000 / $(getconf CLK_TCK),
		greatest(extract(epoch FROM snowid_timestamp(r.lo) - t0) * 1000, 0);
END\$\$" 2>&1 | sed -n 's/.*res=//p'
}
stats0=$(q -c "SELECT waits, wait_time_ms FROM snowid_stats()")
for r in $(seq "$CEIL_ROUNDS"); do
	# generate_series in the target list streams its rows; in FROM (the bulk
	# form) it is first materialised, past work_mem into a temporary file.
	for form in stream from; do
		if [ $form = stream ]; then
			res=$(ceil_run "SELECT snowid_next() AS x, generate_series(1, $CEIL_N)")
		else
			res=$(ceil_run "SELECT snowid_next() AS x FROM generate_series(1, $CEIL_N)")
		fi
		read -r ms n span cpu first <<<"$res"
		add "ceil_wall:$form" "$(awk -v n="$n" -v ms="$ms" -v c="$ceil_max" 'BEGIN { printf "%.4f", n / (ms / 1000) / c }')"
		add "ceil_span:$form" "$(awk -v n="$n" -v s="$span" -v t="$ceil_per_tick" 'BEGIN { printf "%.4f", n / (s * t) }')"
		add "ceil_cpu:$form" "$(awk -v c="$cpu" -v ms="$ms" 'BEGIN { printf "%.2f", c / ms }')"
		add "ceil_first:$form" "$first"
	done
done
stats1=$(q -c "SELECT waits, wait_time_ms FROM snowid_stats()")
ceil_waits=$(awk -F'|' -v a="$stats0" 'BEGIN { split(a, x, "|") } { printf "%d waits, %.0f ms waited in all", $1 - x[1], $2 - x[2] }' <<<"$stats1")
# A long exhaustion: one batch that needs many ticks waits for the clock.
ceil_batch=$((CEIL_N / 20 > 1000000 ? 1000000 : CEIL_N / 20))
read -r batch_ms _ batch_span batch_cpu _ <<<"$(ceil_run "SELECT snowid_next_batch($ceil_batch) AS x")"
# Where the time goes at the ceiling, when perf can sample the whole machine
# (root, full run): the backend's on-CPU samples, by shared object and symbol.
profile_md=""
if [ $mode = full ] && [ "$(id -u)" -eq 0 ] && command -v perf >/dev/null; then
	pdata=$(mktemp "${TMPDIR:-/tmp}/snowid-bench-perf.XXXXXX")
	for form in stream from; do
		if [ $form = stream ]; then
			pq="SELECT count(x) FROM (SELECT snowid_next() AS x, generate_series(1, $CEIL_N)) s"
		else
			pq="SELECT count(x) FROM (SELECT snowid_next() AS x FROM generate_series(1, $CEIL_N)) s"
		fi
		if perf record -q -a -F 5000 -o "$pdata" -- runuser -u postgres -- env PGHOST="$PGHOST" PGPORT="$PGPORT" PGDATABASE="$PGDATABASE" psql -X -q -At -c "$pq" >/dev/null 2>&1; then
			profile_md+="**\`$pq\`**, on-CPU samples of the backend by shared object:"$'\n\n'
			profile_md+=$(perf report -i "$pdata" --comm postgres --percentage relative --no-children --sort dso --stdio 2>/dev/null |
				awk '/^ *[0-9.]+%/ && $1+0 >= 1 { printf "%s%s %s", sep, $2, $1; sep = ", " } END { print "" }')
			profile_md+=$'\n\n'"Top symbols:"$'\n\n```\n'
			profile_md+=$(perf report -i "$pdata" --comm postgres --percentage relative --no-children --sort dso,symbol --stdio 2>/dev/null |
				grep -E '^ *[0-9.]+%' | head -12 | sed -e 's/  */ /g' -e 's/ - - *$//')
			profile_md+=$'\n```\n\n'
		fi
	done
	rm -f "$pdata" "$pdata.old"
fi

q -c "ALTER SYSTEM RESET snowid.max_lead" -c "ALTER SYSTEM RESET snowid.max_wait" -c "SELECT pg_reload_conf()" >/dev/null

echo "== 4. inserts: pgbench, 4 clients, after $INSERT_PREFILL rows per table"
itables=("snowid_next|bigint PRIMARY KEY DEFAULT snowid_next()" "bigserial|bigserial PRIMARY KEY"
	"gen_random_uuid|uuid PRIMARY KEY DEFAULT gen_random_uuid()")
[ "$have_tickets" -gt 0 ] && itables+=("snowid_ticket_next|bigint PRIMARY KEY DEFAULT snowid_ticket_next('bench_ticket'::regclass)")
declare -A idx
for t in "${itables[@]}"; do
	n=${t%%|*}
	q -c "DROP TABLE IF EXISTS bench_ins_$n; CREATE TABLE bench_ins_$n (id ${t#*|}, payload text);
	      INSERT INTO bench_ins_$n (payload) SELECT 'row ' || g FROM generate_series(1, $INSERT_PREFILL) AS g;
	      CHECKPOINT;"
	# index size at equal row counts, before the runs make the tables differ
	idx[$n]=$(q -c "SELECT pg_relation_size('bench_ins_${n}_pkey'::regclass) / 1024 / 1024.0")
done
# Two shapes of transaction: one row (bound by the commit's WAL flush) and
# INSERT_ROWS rows (bound by the work per row: key, heap and index).  Each
# run starts right after a checkpoint, so every candidate pays the same
# full-page writes; ratios to bigserial are taken within each round.
for r in $(seq "$INSERT_ROUNDS"); do
	for rows in 1 "$INSERT_ROWS"; do
		declare -A round_tps=()
		for t in "${itables[@]}"; do
			n=${t%%|*}
			q -c "CHECKPOINT"
			if [ "$rows" = 1 ]; then
				stmt="INSERT INTO bench_ins_$n (payload) VALUES ('bench');"
			else
				stmt="INSERT INTO bench_ins_$n (payload) SELECT 'bench' FROM generate_series(1, $rows);"
			fi
			round_tps[$n]=$(pgb 4 "$INSERT_SECS" "$stmt")
			add "insert$rows:$n" "$(awk -v t="${round_tps[$n]}" -v r="$rows" 'BEGIN { printf "%.1f", t * r }')"
		done
		for t in "${itables[@]}"; do
			n=${t%%|*}
			add "insert_ratio$rows:$n" "$(ratio "${round_tps[$n]}" "${round_tps[bigserial]}")"
		done
	done
done
declare -A rows_end
for t in "${itables[@]}"; do
	n=${t%%|*}
	rows_end[$n]=$(q -c "SELECT count(*) FROM bench_ins_$n")
done

# Instructions are what a noisy virtual machine cannot blur: callgrind counts
# them the same in every run.  A single-user backend on a scratch data
# directory runs each statement for N and for 2N rows; the difference over
# N is the count per row, without start-up and shutdown.
cg_md=""
if [ "$CG_N" -gt 0 ] && command -v valgrind >/dev/null; then
	echo "== 7. instructions per ID (callgrind), $CG_N and $((2 * CG_N)) rows"
	cgdir=$(mktemp -d "${TMPDIR:-/tmp}/snowid-bench-cg.XXXXXX")
	[ "$(id -u)" -eq 0 ] && chown postgres "$cgdir"
	as_runner initdb -D "$cgdir/data" -A trust >/dev/null
	printf "shared_preload_libraries = 'snowid'\nsnowid.node_id = 1\n" >>"$cgdir/data/postgresql.conf"
	printf '%s\n' "CREATE EXTENSION snowid;" "CREATE SEQUENCE bench_seq;" "CREATE SEQUENCE bench_seq100 CACHE 100;" \
		"SELECT snowid_ticket_create('bench_ticket', block => 10000);" |
		as_runner postgres --single -D "$cgdir/data" postgres >/dev/null 2>&1
	cg_rows() {
		printf 'SELECT count(%s) FROM generate_series(1, %s);\n' "$1" "$2" |
			as_runner valgrind --tool=callgrind --callgrind-out-file=/dev/null \
				postgres --single -D "$cgdir/data" postgres 2>&1 >/dev/null |
			sed -n 's/.*Collected : //p'
	}
	declare -A cg
	for c in "${cands[@]}"; do
		n=${c%%|*}
		[ "$n" = instagram_plpgsql ] && continue	# PL/pgSQL: minutes under valgrind
		cg[$n]=$(( ($(cg_rows "${c#*|}" $((2 * CG_N))) - $(cg_rows "${c#*|}" "$CG_N")) / CG_N ))
	done
	rm -rf "$cgdir"
	cg_md="| candidate | instructions per row | above the floor |"$'\n'"|---|---:|---:|"$'\n'
	for c in "${cands[@]}"; do
		n=${c%%|*}
		[ -n "${cg[$n]:-}" ] && cg_md+="| $n | ${cg[$n]} | $((cg[$n] - cg[floor])) |"$'\n'
	done
fi

# Two sessions at once need a layout whose ceiling is not in play: a
# server of its own (parallel.sh, which also measures one session there
# and on the default layout).
echo "== 8. two bulk sessions at once (test/bench/parallel.sh)"
par_md=""
if SNOWID_SKIP_BUILD=1 SNOWID_BENCH_OUT="$out" SNOWID_BENCH_PORT=$((${SNOWID_BENCH_PORT:-55439} + 4)) \
	bash "$bench_dir/parallel.sh" $([ $mode = smoke ] && echo --smoke) >"$out/parallel.log" 2>&1; then
	par_md=$(sed '1,2d' "$out/parallel.md")
fi

echo "== 6. shared memory"
shmem=$(q -c "SELECT coalesce(string_agg(name || ': ' || allocated_size || ' bytes', ', ' ORDER BY name), 'none') FROM pg_shmem_allocations WHERE name LIKE 'snowid%'")
shmem_slot=$(q -c "SELECT coalesce(max(allocated_size / current_setting('snowid.ticket_slots')::int || ' bytes per ticket slot (' || current_setting('snowid.ticket_slots') || ' slots, table header included)'), 'no ticket slots') FROM pg_shmem_allocations WHERE name = 'snowid_ticket'")

# ---- report ----
host="$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), $(q -c 'SELECT version()' | cut -d, -f1)"
{
	echo "# snowid benchmark ($mode run)"
	echo
	echo "Machine: $host. Command: \`bash test/bench/run.sh\`. Candidates interleaved in every round, medians."
	echo
	echo "## 1. Bulk: \`SELECT count(<fn>) FROM generate_series(1, $BULK_N)\`"
	echo
	echo "$BULK_ROUNDS rounds. ms and IDs/s are medians; ns per ID above the floor and × nextval are medians of the figures taken within each round."
	echo
	echo "| candidate | median ms | IDs/s | ns per ID above floor | × nextval IDs/s |"
	echo "|---|---:|---:|---:|---:|"
	for c in "${cands[@]}"; do
		n=${c%%|*}; m=$(med "bulk:$n")
		awk -v n="$n" -v m="$m" -v d="$(med "bulk_ns:$n")" -v x="$(med "bulk_xnv:$n")" -v N="$BULK_N" \
			'BEGIN { printf "| %s | %.1f | %.0f | %.1f | %.2f |\n", n, m, N / (m / 1000), d, x }'
	done
	echo
	echo "## 2. Per call: pgbench \`SELECT <fn>\` (TPS, × the \`SELECT 1\` floor)"
	echo
	echo "${CALL_SECS}s per run, $CALL_ROUNDS rounds. TPS are medians; × floor is the median of the ratios taken within each round."
	echo
	echo "| candidate | 1 client TPS | × floor | 4 clients TPS | × floor |"
	echo "|---|---:|---:|---:|---:|"
	for c in "${cands[@]}"; do
		n=${c%%|*}; t1=$(printf '%.0f' "$(med "call1:$n")"); t4=$(printf '%.0f' "$(med "call4:$n")")
		echo "| $n | $t1 | $(printf '%.2f' "$(med "call_ratio1:$n")") | $t4 | $(printf '%.2f' "$(med "call_ratio4:$n")") |"
	done
	echo
	echo "## 3. At the ceiling (default layout, \`snowid.max_lead = 0\`)"
	echo
	echo "$CEIL_N IDs per run in one backend, $CEIL_ROUNDS rounds. *Wall*: IDs/s over the whole statement as a fraction of the layout's $ceil_max IDs/s. *Sustained*: IDs over the capacity of the ticks from the first ID's to the last ID's. *CPU*: the backend's CPU time over the statement's time."
	echo
	echo "| query | wall | sustained | CPU | ms before the first ID |"
	echo "|---|---:|---:|---:|---:|"
	echo "| \`SELECT count(x) FROM (SELECT snowid_next() AS x, generate_series(1, N)) s\` | $(printf '%.3f' "$(med ceil_wall:stream)") | $(printf '%.3f' "$(med ceil_span:stream)") | $(med ceil_cpu:stream) | $(printf '%.0f' "$(med ceil_first:stream)") |"
	echo "| \`SELECT count(x) FROM (SELECT snowid_next() AS x FROM generate_series(1, N)) s\` | $(printf '%.3f' "$(med ceil_wall:from)") | $(printf '%.3f' "$(med ceil_span:from)") | $(med ceil_cpu:from) | $(printf '%.0f' "$(med ceil_first:from)") |"
	echo
	echo "In the second form PostgreSQL materialises generate_series before the first ID is drawn (*ms before the first ID*: from the statement's start to the start of the first ID's tick), so its wall figure counts that time too: compare the two forms by *sustained*, never one form's wall figure with the other's. $ceil_waits: a caller that exhausts a tick sleeps until just before the next one. A batch of $ceil_batch IDs (snowid_next_batch, $batch_span ticks ahead of the clock) took $(printf '%.0f' "$batch_ms") ms and $(printf '%.0f' "$batch_cpu") ms of CPU: long waits sleep, they do not spin."
	echo
	if [ -n "$profile_md" ]; then
		echo "Profile (\`perf record -a\` while each form runs once):"
		echo
		printf '%s' "$profile_md"
	fi
	echo "## 4. Inserts: pgbench, 4 clients, ${INSERT_SECS}s per run, tables prefilled with $INSERT_PREFILL rows"
	echo
	echo "$INSERT_ROUNDS rounds. Each run starts after a CHECKPOINT. Rows/s are medians; × bigserial is the median of the ratios taken within each round. Index size of the primary key is measured at $INSERT_PREFILL rows in every table."
	echo
	echo "| primary key | 1 row per transaction, rows/s | × bigserial | $INSERT_ROWS rows per transaction, rows/s | × bigserial | index at $INSERT_PREFILL rows (MiB) | rows at the end |"
	echo "|---|---:|---:|---:|---:|---:|---:|"
	for t in "${itables[@]}"; do
		n=${t%%|*}
		echo "| $n | $(printf '%.0f' "$(med "insert1:$n")") | $(printf '%.2f' "$(med "insert_ratio1:$n")") | $(printf '%.0f' "$(med "insert$INSERT_ROWS:$n")") | $(printf '%.2f' "$(med "insert_ratio$INSERT_ROWS:$n")") | $(printf '%.1f' "${idx[$n]}") | ${rows_end[$n]} |"
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
	echo "$shmem; $shmem_slot."
	if [ -n "$cg_md" ]; then
		echo
		echo "## 7. Instructions per ID (\`valgrind --tool=callgrind\`)"
		echo
		echo "The bulk statement in a single-user backend, for $CG_N and $((2 * CG_N)) rows; instructions per row from the difference, the same in every run. Under valgrind the backend runs far slower than the layout's ticks, so snowid_next() never runs ahead of the clock and always takes its exact path, and clock_gettime() is a system call whose kernel side is not counted."
		echo
		printf '%s' "$cg_md"
	fi
	if [ -n "$par_md" ]; then
		echo
		echo "## 8. Two bulk sessions at once (16-bit sequence layout)"
		echo
		echo "$par_md"
	fi
} >"$out/results.md"

# chart: bulk IDs/s per candidate, and insert rows/s per primary key
{
	for c in "${cands[@]}"; do
		n=${c%%|*}; [ "$n" = floor ] && continue
		awk -v n="$n" -v m="$(med "bulk:$n")" -v N="$BULK_N" 'BEGIN { printf "%s %.3f\n", n, N / (m / 1000) / 1e6 }'
	done
} >"$out/bulk.dat"
{
	for t in "${itables[@]}"; do
		n=${t%%|*}
		awk -v n="$n" -v m="$(med "insert$INSERT_ROWS:$n")" 'BEGIN { printf "%s %.1f\n", n, m / 1000 }'
	done
} >"$out/inserts.dat"
rm -f "$out/chart.svg"
bash "$bench_dir/chart.sh" "$out" "$BULK_ROUNDS" "$INSERT_ROUNDS" "$INSERT_ROWS" "$INSERT_PREFILL"

cat "$out/results.md"
echo
echo "written: $out/results.md $( [ -f "$out/chart.png" ] && echo "$out/chart.png")"
