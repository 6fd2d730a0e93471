#!/usr/bin/env bash
# Inserts on a mesh of three servers under bidirectional logical replication
# (README "With logical replication (active-active)"): every server
# publishes the tables and subscribes to the two others (origin = none,
# copy_data = false), and pgbench inserts on all three at once.  The keys:
# snowid_next(), uuidv7() (PostgreSQL 18 and later) and the manual recipe,
# a bigserial striped per server (INCREMENT 3, START 1, 2 and 3).  In every
# round each key runs in a pair of adjacent runs with striped bigserial
# (which one first alternates), each run right after a CHECKPOINT on every
# server; a run's rate is the rows/s of the three servers summed.  After
# each run, the lag: the time from the end of the load until every server
# holds every row (a row each server writes at the end of the load,
# polled).  Medians of rows/s, of the ratios to striped bigserial taken
# within each pair, and of the lags.  At the end, every table holds the
# same rows on every server without a duplicate key, or the run fails.
# Writes test/bench/results/mesh.md.
#
#   bash test/bench/mesh.sh            # full run (about four minutes)
#   bash test/bench/mesh.sh --smoke    # tiny run that only proves it works
#
# PostgreSQL 16 or later (origin = none), the installation of PG_CONFIG; on
# 15 a smoke run prints "mesh bench: skipped: <reason>" and succeeds, a
# full run fails.  Below 18 the uuidv7() rows say "n/a (PostgreSQL < 18)".
# SNOWID_SKIP_BUILD=1 takes snowid as installed there.  The servers listen
# on sockets only (ports SNOWID_BENCH_PORT, default 55484, to +2) and run
# with synchronous_commit = off (as inserts.sh).  CLIENTS (default 2) is
# the pgbench clients on each server.
set -u
. "$(dirname "$0")/../lib.sh"

mode=full
[ "${1:-}" = --smoke ] && mode=smoke
bench_dir=$(cd "$(dirname "$0")" && pwd)
out=${SNOWID_BENCH_OUT:-$bench_dir/results}
[ $mode = smoke ] && out=$(mktemp -d "${TMPDIR:-/tmp}/snowid-bench-mesh.XXXXXX")
mkdir -p "$out"
CLIENTS=${CLIENTS:-2}
if [ $mode = full ]; then
	ROUNDS=${ROUNDS:-7}; SECS=${SECS:-3}
else
	ROUNDS=1; SECS=1; CLIENTS=1
fi
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

major=$("$PG_CONFIG" --version | sed -n 's/^PostgreSQL \([0-9]*\).*/\1/p')
if [ "${major:-0}" -lt 16 ]; then
	reason="bidirectional logical replication needs CREATE SUBSCRIPTION ... WITH (origin = none), new in PostgreSQL 16; this is PostgreSQL ${major:-unknown}"
	[ $mode = smoke ] && { echo "mesh bench: skipped: $reason"; exit 0; }
	echo "mesh.sh: $reason" >&2
	exit 1
fi
version=$("$PG_CONFIG" --version | sed 's/^PostgreSQL //')

if [ -z "${SNOWID_SKIP_BUILD:-}" ]; then
	(
		cd "$SNOWID_SRC" &&
			make -s PG_CONFIG="$PG_CONFIG" with_llvm=no COPT="-Wall -Wextra -Werror -Wno-unused-parameter" &&
			as_root make -s install PG_CONFIG="$PG_CONFIG" with_llvm=no
	) >/tmp/snowid-bench-build.log 2>&1 || { cat /tmp/snowid-bench-build.log; exit 1; }
fi

# kind|key column's DDL (the table is bench_<kind>)
kinds=(
	"striped|id bigserial PRIMARY KEY"
	"snowid|id bigint PRIMARY KEY DEFAULT snowid_next()"
)
if [ "$major" -ge 18 ]; then
	kinds+=("uuidv7|id uuid PRIMARY KEY DEFAULT uuidv7()")
else
	echo "mesh bench: uuidv7() skipped: PostgreSQL $major has no uuidv7() (new in 18)"
fi

servers=(1 2 3)
base=${SNOWID_BENCH_PORT:-55484}
declare -A sdir port
trap bench_cleanup EXIT
for s in "${servers[@]}"; do
	sdir[$s]=$(bench_scratch "mesh-$s") || exit 1
	port[$s]=$((base + s - 1))
	bench_server "${sdir[$s]}/data" "${sdir[$s]}/server.log" "${port[$s]}" "$PG_BINDIR" \
		"shared_preload_libraries = 'snowid'" "snowid.node_id = $s" \
		"synchronous_commit = off" "autovacuum = off" "max_connections = 50" \
		"wal_level = logical" "max_wal_senders = 10" "max_replication_slots = 10" \
		"max_logical_replication_workers = 8" "max_worker_processes = 16" ||
		{ cat "${sdir[$s]}/server.log"; exit 1; }
done
on() { local s=$1; shift; q -h "${sdir[$s]}" -p "${port[$s]}" -d postgres "$@"; }
export PGOPTIONS="-c client_min_messages=warning"

# The same tables on every server; each row says which server inserted it.
tables=
end_rows=()
for s in "${servers[@]}"; do
	on "$s" -c "CREATE EXTENSION snowid" || exit 1
	for k in "${kinds[@]}"; do
		n=${k%%|*}
		on "$s" -c "CREATE TABLE bench_$n (${k#*|}, origin integer NOT NULL DEFAULT $s, payload text)" || exit 1
	done
	on "$s" -c "ALTER SEQUENCE bench_striped_id_seq INCREMENT 3 START $s RESTART $s" || exit 1
	on "$s" -c "CREATE TABLE bench_done (run integer, origin integer, PRIMARY KEY (run, origin))" || exit 1
done
tables=bench_done
for k in "${kinds[@]}"; do tables+=", bench_${k%%|*}"; done
for s in "${servers[@]}"; do
	on "$s" -c "CREATE PUBLICATION mesh FOR TABLE $tables" || exit 1
done
for s in "${servers[@]}"; do
	for p in "${servers[@]}"; do
		[ "$s" = "$p" ] && continue
		on "$s" -c "CREATE SUBSCRIPTION s${s}_from_$p CONNECTION 'host=${sdir[$p]} port=${port[$p]} dbname=postgres' PUBLICATION mesh WITH (origin = none, copy_data = false)" ||
			exit 1
	done
done
for s in "${servers[@]}"; do
	for _ in $(seq 300); do
		[ "$(on "$s" -c "SELECT count(DISTINCT subid) FROM pg_stat_subscription WHERE pid IS NOT NULL AND relid IS NULL")" = 2 ] && break
		sleep 0.1
	done
done

median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
declare -A samples
add() { samples[$1]="${samples[$1]:-} $2"; }
med() { printf '%s\n' ${samples[$1]} | median; }
range() { printf '%s\n' ${samples[$1]} | sort -g | awk 'NR == 1 {lo=$1} {hi=$1} END {printf "%.2f-%.2f", lo, hi}'; }

script=$(mktemp "${TMPDIR:-/tmp}/snowid-bench-mesh.XXXXXX.sql")
chmod 644 "$script"
trap 'bench_cleanup; rm -f "$script"' EXIT

# Run $2, of kind $1: pgbench on the three servers at once; prints the rows/s
# summed, then the lag in ms until every server holds every row: when the
# load ends, each server writes a row of this run into bench_done, and a
# server that holds the rows of all three holds every row before them (a
# subscription applies its publisher's transactions in commit order).
run() {
	local n=$1 runs=$2 s rate=0 t0 t1 ok pids=()
	for s in "${servers[@]}"; do on "$s" -c "CHECKPOINT"; done
	echo "INSERT INTO bench_$n (payload) VALUES ('bench');" >"$script"
	for s in "${servers[@]}"; do
		as_runner pgbench -n -M prepared -h "${sdir[$s]}" -p "${port[$s]}" -c "$CLIENTS" -j "$CLIENTS" \
			-T "$SECS" -f "$script" postgres >"${sdir[$s]}/pgbench.out" 2>&1 &
		pids+=($!)
	done
	wait "${pids[@]}"
	t0=$(date +%s%N)
	for s in "${servers[@]}"; do
		on "$s" -c "INSERT INTO bench_done VALUES ($runs, $s)" || return 1
	done
	while :; do
		ok=1
		for s in "${servers[@]}"; do
			[ "$(on "$s" -c "SELECT count(*) FROM bench_done WHERE run = $runs")" = 3 ] || { ok=0; break; }
		done
		t1=$(date +%s%N)
		[ $ok = 1 ] && break
		[ $(((t1 - t0) / 1000000000)) -ge 300 ] && { echo "mesh.sh: bench_$n not caught up after 300 s" >&2; return 1; }
		sleep 0.01
	done
	for s in "${servers[@]}"; do
		rate=$(awk -v a="$rate" -v b="$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "${sdir[$s]}/pgbench.out")" 'BEGIN { print a + b }')
	done
	printf '%.0f %.0f\n' "$rate" "$(((t1 - t0) / 1000000))"
}

runs=0
echo "== mesh of 3, PostgreSQL $version: $CLIENTS clients per server, ${SECS}s per run, $ROUNDS rounds"
for r in $(seq "$ROUNDS"); do
	line="round $r:"
	for k in "${kinds[@]:1}"; do
		n=${k%%|*}
		if [ $((r % 2)) = 1 ]; then order="striped $n"; else order="$n striped"; fi
		declare -A rate=()
		for m in $order; do
			runs=$((runs + 1))
			read -r rate[$m] lag < <(run "$m" "$runs") || exit 1
			[ -n "${rate[$m]:-}" ] || { echo "mesh.sh: a run of bench_$m failed" >&2; exit 1; }
			add "rate:$m" "${rate[$m]}"
			add "lag:$m" "$lag"
			line+=" $m ${rate[$m]}/s (lag ${lag} ms)"
		done
		add "x:$n" "$(awk -v a="${rate[$n]}" -v b="${rate[striped]}" 'BEGIN { printf "%.3f", a / b }')"
		add "x:striped" 1
	done
	echo "$line"
done

# Every server holds the same rows of every table, no key twice.
dups=0
for k in "${kinds[@]}"; do
	n=${k%%|*}
	states=
	for s in "${servers[@]}"; do
		st=$(on "$s" -c "SELECT count(*) || ' rows, ' || (count(*) - count(DISTINCT id)) || ' duplicates, ' || md5(coalesce(string_agg(id::text || '/' || origin, ',' ORDER BY id), '')) FROM bench_$n")
		states+="$st|"
		d=${st#*, }
		dups=$((dups + ${d%% *}))
	done
	if [ "$(echo "$states" | tr '|' '\n' | sed '/^$/d' | sort -u | wc -l)" != 1 ]; then
		echo "mesh.sh: bench_$n differs between the servers: $states" >&2
		exit 1
	fi
	end_rows[${#end_rows[@]}]="$n ${states%%,*}"
done
[ "$dups" = 0 ] || { echo "mesh.sh: $dups duplicate keys" >&2; exit 1; }

host="$(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
cell() { if [ -n "${samples[$1]:-}" ]; then printf "$2" "$(med "$1")"; else printf 'n/a (PostgreSQL < 18)'; fi; }
{
	echo "# Inserts on a mesh of three servers ($mode run)"
	echo
	echo "Machine: $host; load average at the start $load_start, at the end $(cut -d' ' -f1-3 /proc/loadavg). PostgreSQL $version. Command: \`bash test/bench/mesh.sh\`. Three servers on this machine, each publishing the tables FOR TABLE and subscribing to the two others (origin = none, copy_data = false); pgbench on all three at once, single-row INSERTs by $CLIENTS clients on each, ${SECS}s per run, $ROUNDS rounds, each key paired with striped bigserial in adjacent runs (which one first alternates), each run after a CHECKPOINT on every server; synchronous_commit = off. Rows/s: the three servers summed, medians; × striped bigserial: the median of the ratios within each pair (their range in brackets); lag: from the end of a run until every server holds every row (a row of each server written at the end, polled every ~10 ms on every server), median."
	echo
	echo "| key | rows/s, 3 servers | × striped bigserial | lag (ms) |"
	echo "|---|---:|---:|---:|"
	printf '| striped bigserial (INCREMENT 3, START 1/2/3) | %s | 1.00 | %s |\n' "$(cell rate:striped '%.0f')" "$(cell lag:striped '%.0f')"
	printf '| `snowid_next()` | %s | %s (%s) | %s |\n' "$(cell rate:snowid '%.0f')" "$(cell x:snowid '%.2f')" "$(range x:snowid)" "$(cell lag:snowid '%.0f')"
	if [ -n "${samples[x:uuidv7]:-}" ]; then
		printf '| `uuidv7()` | %s | %s (%s) | %s |\n' "$(cell rate:uuidv7 '%.0f')" "$(cell x:uuidv7 '%.2f')" "$(range x:uuidv7)" "$(cell lag:uuidv7 '%.0f')"
	else
		echo '| `uuidv7()` | n/a (PostgreSQL < 18) | n/a (PostgreSQL < 18) | n/a (PostgreSQL < 18) |'
	fi
	echo
	echo "Rows at the end, the same on every server: $(IFS=';'; echo "${end_rows[*]}" | sed 's/;/; /g'). Duplicate keys at the end, all tables: $dups."
} >"$out/mesh.md"
cat "$out/mesh.md"
