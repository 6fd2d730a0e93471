#!/usr/bin/env bash
# Inserts on Citus: a coordinator and two workers on this machine, tables
# distributed by their key, single-row INSERTs by pgbench through the
# coordinator and through the workers (one pgbench against each worker at
# the same time, their rows/s summed).  The keys: bigserial, snowid_next()
# and an integer ticket (striped by Citus group on every node, as README's
# "With Citus" says), and integer serial through the coordinator only
# (Citus refuses it on workers: the results quote its error).  In every
# round and path, each key runs in a pair of adjacent runs with bigserial
# (which one first alternates; the keys' order is reversed every other
# round), each run right after a CHECKPOINT on every node; medians of rows/s
# and of the ratios to bigserial taken within each pair, with their range
# (the machine's speed moves within seconds).  At the end, through the
# coordinator, every table's rows, distinct keys and the rows made on each
# node: duplicates fail the run.  Writes test/bench/results/citus.md.
#
#   bash test/bench/citus.sh            # full run (about five minutes)
#   bash test/bench/citus.sh --smoke    # tiny run that only proves it works
#
# PostgreSQL: the major in PG_MAJOR (default 18), built by test/pg-build.sh,
# or the installation of SNOWID_BENCH_PG_CONFIG; it is copied to a scratch
# directory (it can be moved as a whole) and Citus and snowid are installed
# into the copy, never into the original.  Citus: what that installation
# holds already, else built from $SNOWID_CITUS_TARBALL (default
# ../shared/vendor/citus-14.0.1.tar.gz beside the repository) by
# test/citus-build.sh where there is one, else by the configure/make below.
# Without Citus (no tarball, a major Citus does not support) a smoke run
# prints "skipped: <reason>" and succeeds; a full run fails.
# SNOWID_SKIP_BUILD=1 takes snowid as installed in that PostgreSQL.
#
# The servers run with synchronous_commit = off (as inserts.sh), so that a
# transaction's cost is its insert, not the WAL flush of its commit.
# CLIENTS (default 4) is the pgbench clients in all: all on the coordinator,
# or half on each worker.  Ports SNOWID_BENCH_PORT (default 55490) to +2.
set -u
. "$(dirname "$0")/../lib.sh"

mode=full
[ "${1:-}" = --smoke ] && mode=smoke
bench_dir=$(cd "$(dirname "$0")" && pwd)
out=${SNOWID_BENCH_OUT:-$bench_dir/results}
[ $mode = smoke ] && out=$(mktemp -d "${TMPDIR:-/tmp}/snowid-bench-citus.XXXXXX")
mkdir -p "$out"
CLIENTS=${CLIENTS:-4}
if [ $mode = full ]; then
	ROUNDS=${ROUNDS:-7}; SECS=${SECS:-3}
else
	ROUNDS=2; SECS=1; CLIENTS=2
fi
[ "$CLIENTS" -ge 2 ] || CLIENTS=2
started=$SECONDS
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

# No Citus here: a smoke run says why and succeeds, a full run fails.
no_citus() {
	if [ $mode = smoke ]; then
		echo "citus bench: skipped: $1"
		exit 0
	fi
	echo "citus.sh: $1" >&2
	exit 1
}

tarball=${SNOWID_CITUS_TARBALL:-$(dirname "$SNOWID_SRC")/shared/vendor/citus-14.0.1.tar.gz}
if [ -n "${SNOWID_BENCH_PG_CONFIG:-}" ]; then
	base_pgc=$SNOWID_BENCH_PG_CONFIG
else
	major=${PG_MAJOR:-18}
	case $major in
	16 | 17 | 18) ;;
	*) no_citus "Citus 14.0.1 builds against PostgreSQL 16 to 18, not $major" ;;
	esac
	ensure_packages make gcc || exit 1
	base_pgc=$(bash "$SNOWID_SRC/test/pg-build.sh" "$major" | tail -n1) || exit 1
fi
major=$("$base_pgc" --version | sed -n 's/^PostgreSQL \([0-9]*\).*/\1/p')
case $major in
16 | 17 | 18) ;;
*) no_citus "Citus 14.0.1 builds against PostgreSQL 16 to 18, not $major" ;;
esac
base_prefix=$(cd "$("$base_pgc" --bindir)/.." && pwd)
for d in "$("$base_pgc" --sharedir)" "$("$base_pgc" --pkglibdir)"; do
	case $d in
	"$base_prefix"/*) ;;
	*) no_citus "the PostgreSQL of $base_pgc keeps files outside $base_prefix ($d): it cannot be copied to install Citus into the copy" ;;
	esac
done

scratch=$(mktemp -d "${TMPDIR:-/tmp}/snowid-bench-citus-run.XXXXXX")
chmod 755 "$scratch"
nodes=(c w1 w2)
declare -A dir port
cleanup() {
	bench_cleanup
	rm -rf "$scratch"
}
trap cleanup EXIT

cp -a "$base_prefix" "$scratch/pg"
pgc=$scratch/pg/bin/pg_config
bindir=$scratch/pg/bin
pkglibdir=$("$pgc" --pkglibdir)

# Citus into the copy, unless it holds Citus already.
if ! grep -aq 'Citus [0-9.]* on ' "$pkglibdir/citus.so" 2>/dev/null; then
	[ -r "$tarball" ] || no_citus "no Citus source tarball at $tarball (set SNOWID_CITUS_TARBALL to one)"
	if [ -f "$SNOWID_SRC/test/citus-build.sh" ]; then
		SNOWID_CITUS_TARBALL=$tarball bash "$SNOWID_SRC/test/citus-build.sh" "$pgc" 2>"$scratch/citus-build.log"
		rc=$?
		[ $rc -eq 3 ] && no_citus "$(tail -n1 "$scratch/citus-build.log" | sed 's/^citus-build: //')"
		[ $rc -eq 0 ] || { cat "$scratch/citus-build.log"; exit 1; }
	else
		echo "citus bench: building Citus into a copy of PostgreSQL $major"
		mkdir "$scratch/citus"
		(
			tar -C "$scratch/citus" --strip-components=1 -xzf "$tarball" &&
				cd "$scratch/citus" &&
				./configure PG_CONFIG="$pgc" --without-libcurl --without-lz4 --without-zstd &&
				make -j"$(nproc)" && make install
		) >"$scratch/citus-build.log" 2>&1 || { tail -n 40 "$scratch/citus-build.log"; exit 1; }
	fi
fi

# snowid into the copy: the working tree, built with warnings as errors.
if [ -z "${SNOWID_SKIP_BUILD:-}" ]; then
	mkdir "$scratch/src"
	tar -C "$SNOWID_SRC" --exclude=.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
		--exclude=results --exclude=tmp_check --exclude=tmp_regress --exclude=tmp_isolation \
		--exclude=output_iso -cf - . | tar -C "$scratch/src" -xf -
	(
		cd "$scratch/src" &&
			make -s PG_CONFIG="$pgc" with_llvm=no COPT="-Wall -Wextra -Werror -Wno-unused-parameter" &&
			make -s install PG_CONFIG="$pgc" with_llvm=no
	) >"$scratch/snowid-build.log" 2>&1 || { cat "$scratch/snowid-build.log"; exit 1; }
fi
[ -f "$pkglibdir/snowid.so" ] || { echo "citus.sh: no snowid.so in $pkglibdir" >&2; exit 1; }

# The cluster: the coordinator (snowid.node_id 0, Citus group 0) and two
# workers (1 and 2), on 127.0.0.1 for Citus, on sockets for psql/pgbench.
i=0
for n in "${nodes[@]}"; do
	dir[$n]=$scratch/node-$n
	port[$n]=$((${SNOWID_BENCH_PORT:-55490} + i))
	mkdir "${dir[$n]}"
	[ "$(id -u)" -eq 0 ] && chown postgres "${dir[$n]}"
	bench_server "${dir[$n]}/data" "${dir[$n]}/server.log" "${port[$n]}" "$bindir" \
		"listen_addresses = '127.0.0.1'" "shared_preload_libraries = 'citus,snowid'" \
		"snowid.node_id = $i" "synchronous_commit = off" "max_connections = 100" "autovacuum = off" ||
		{ cat "${dir[$n]}/server.log"; exit 1; }
	i=$((i + 1))
done

export PGOPTIONS="-c client_min_messages=warning" PGDATABASE=postgres
q() {
	local n=$1
	shift
	as_runner "$bindir/psql" -h "${dir[$n]}" -p "${port[$n]}" -X -q -At -v ON_ERROR_STOP=1 "$@"
}
set -e
for n in "${nodes[@]}"; do
	q "$n" -c "CREATE EXTENSION citus"
done
q c -c "SELECT citus_set_coordinator_host('127.0.0.1', ${port[c]})" >/dev/null
q c -c "SELECT citus_add_node('127.0.0.1', ${port[w1]})" -c "SELECT citus_add_node('127.0.0.1', ${port[w2]})" >/dev/null
q c -c "CREATE EXTENSION snowid"
# The ticket on every node, its stripe the node's Citus group (README).
ok=$(q c -c "SELECT bool_and(success) AND count(*) = 3 FROM run_command_on_all_nodes(\$\$
	SELECT snowid_ticket_create('bench_no', shard => groupid, shards => 64, type => 'integer')
	  FROM pg_dist_local_group WHERE to_regclass('bench_no') IS NULL\$\$)")
[ "$ok" = t ] || { echo "citus.sh: the ticket was not created on every node" >&2; exit 1; }

# name|label|key|DDL (the table is bench_<name>)
tables=(
	"bigserial|bigserial|id|CREATE TABLE bench_bigserial (id bigserial PRIMARY KEY, payload text)"
	"snowid|snowid_next()|id|CREATE TABLE bench_snowid (id bigint PRIMARY KEY DEFAULT snowid_next(), payload text)"
	"ticket|integer ticket|no|CREATE TABLE bench_ticket (no integer PRIMARY KEY DEFAULT snowid_ticket_next('bench_no'), payload text)"
	"serial|serial (coordinator only)|id|CREATE TABLE bench_serial (id serial PRIMARY KEY, payload text)"
)
declare -A label key
names=()
for t in "${tables[@]}"; do
	IFS='|' read -r n l k ddl <<<"$t"
	names+=("$n")
	label[$n]=$l
	key[$n]=$k
	q c -c "$ddl" -c "SELECT create_distributed_table('bench_$n', '$k')" >/dev/null
done
set +e
# What Citus says to an integer serial default on a worker.
serial_refusal=$(q w1 -c "INSERT INTO bench_serial (payload) VALUES ('refused?')" 2>&1 | sed -n 's/^.*ERROR: *//p' | head -1)
[ -n "$serial_refusal" ] || { echo "citus.sh: a worker took an integer serial default" >&2; exit 1; }
worker_names=(bigserial snowid ticket)

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
declare -A samples
add() { samples[$1]="${samples[$1]:-} $2"; }
med() { printf '%s\n' ${samples[$1]} | median; }
spread() { printf '%s\n' ${samples[$1]} | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.2f–%.2f", lo, hi}'; }

checkpoint() {
	local n
	for n in "${nodes[@]}"; do
		q "$n" -c "CHECKPOINT" || exit 1
	done
}
# pgbench against the nodes given, at once, CLIENTS split among them; prints
# their rows/s summed.  A pgbench that fails (an aborted client included)
# fails the run.
pgb() {
	local table=$1 f n c pids=() rc=0
	shift
	c=$((CLIENTS / $#))
	f=$scratch/insert-$table.sql
	echo "INSERT INTO bench_$table (payload) VALUES ('bench');" >"$f"
	chmod 644 "$f"
	for n in "$@"; do
		as_runner "$bindir/pgbench" -h "${dir[$n]}" -p "${port[$n]}" -n -M prepared \
			-c "$c" -j "$c" -T "$SECS" -f "$f" >"$scratch/pgbench-$n.out" 2>&1 &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p" || rc=1
	done
	if [ $rc -ne 0 ]; then
		for n in "$@"; do
			echo "citus.sh: pgbench on $n, bench_$table:" >&2
			tail -n 15 "$scratch/pgbench-$n.out" >&2
		done
		exit 1
	fi
	for n in "$@"; do
		sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$scratch/pgbench-$n.out"
	done | awk '{s += $1} END {printf "%.0f", s}'
}

echo "== Citus inserts: PostgreSQL $(q c -c 'SHOW server_version'), $CLIENTS clients, ${SECS}s per run, $ROUNDS rounds"
# One round, per path: every key but bigserial in a pair of adjacent runs
# with a bigserial run (which first alternates), the ratio taken within the
# pair; the candidates' order reversed every other round.
for r in $(seq "$ROUNDS"); do
	for path in coordinator workers; do
		if [ $path = coordinator ]; then
			list=("${names[@]:1}")
			targets=(c)
		else
			list=("${worker_names[@]:1}")
			targets=(w1 w2)
		fi
		if [ $((r % 2)) -eq 0 ]; then
			rev=()
			for ((j = ${#list[@]} - 1; j >= 0; j--)); do rev+=("${list[$j]}"); done
			list=("${rev[@]}")
		fi
		line=
		p=0
		for n in "${list[@]}"; do
			if [ $(((r + p) % 2)) -eq 1 ]; then pair=(bigserial "$n"); else pair=("$n" bigserial); fi
			p=$((p + 1))
			declare -A tps=()
			for m in "${pair[@]}"; do
				checkpoint
				tps[$m]=$(pgb "$m" "${targets[@]}") || exit 1
				add "$path:rows:$m" "${tps[$m]}"
			done
			add "$path:x:$n" "$(awk -v a="${tps[$n]}" -v b="${tps[bigserial]}" 'BEGIN { printf "%.3f", a / b }')"
			line="$line  ${pair[0]} ${tps[${pair[0]}]} ${pair[1]} ${tps[${pair[1]}]} |"
		done
		echo "round $r, through the $path:$line"
	done
done
add "coordinator:x:bigserial" 1
add "workers:x:bigserial" 1

# At the end, through the coordinator: rows, distinct keys, and the Citus
# group each row was made on (bigserial: Citus starts a worker's sequence at
# its group ID shifted left by 48 bits; snowid_next(): the node ID, here the
# group; the ticket: its stripe, the group).
declare -A rows distinct dups groups
origin_bigserial="id >> 48"
origin_snowid="snowid_node(id)"
origin_ticket="snowid_ticket_shard('bench_no', no)"
origin_serial="0"
dup_total=0
for n in "${names[@]}"; do
	k=${key[$n]}
	IFS='|' read -r rows[$n] distinct[$n] <<<"$(q c -c "SELECT count(*), count(DISTINCT $k) FROM bench_$n")"
	dups[$n]=$((rows[$n] - distinct[$n]))
	dup_total=$((dup_total + dups[$n]))
	o=origin_$n
	groups[$n]=$(q c -c "SELECT string_agg(g || ': ' || c, ', ' ORDER BY g) FROM (SELECT ${!o} AS g, count(*) AS c FROM bench_$n GROUP BY 1) s")
done

pg_version=$(q c -c 'SHOW server_version')
citus_version=$(q c -c 'SELECT citus_version()' | sed -n 's/^\(Citus [0-9.]*\).*/\1/p')
host="$(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
{
	echo "# Inserts on Citus, through the coordinator and through the workers ($mode run)"
	echo
	echo "$(date -u +%Y-%m-%d), PostgreSQL $pg_version, $citus_version; a coordinator and two workers on one machine ($host; load average at the start $load_start, at the end $(cut -d' ' -f1-3 /proc/loadavg)). Command: \`bash test/bench/citus.sh\`. Every table distributed by its key (32 shards on the two workers); single-row \`INSERT INTO t (payload) VALUES ('bench')\` by pgbench (prepared), $CLIENTS clients in all: all on the coordinator, or $((CLIENTS / 2)) on each worker at the same time (rows/s summed); ${SECS}s per run, $ROUNDS rounds; in each round and path every key in a pair of adjacent runs with bigserial (which one first alternates), the keys' order reversed every other round, each run after a CHECKPOINT on every node; synchronous_commit = off. Rows/s are medians over all runs, × bigserial the median of the ratios taken within each pair (in brackets the lowest and highest: the machine is shared and its speed moves by tens of percent within seconds). Tables start empty and grow through the runs (bigserial's twice as fast: it runs in every pair)."
	echo
	echo "| primary key | through the coordinator, rows/s | × bigserial | through the workers, rows/s | × bigserial | rows at the end | distinct keys | duplicates | rows made per Citus group |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---|"
	for n in "${names[@]}"; do
		x=$(printf '%.2f (%s)' "$(med "coordinator:x:$n")" "$(spread "coordinator:x:$n")")
		[ "$n" = bigserial ] && x=1.00
		if [ "$n" = serial ]; then
			w="refused by Citus | –"
		else
			w="$(printf '%.0f | %.2f (%s)' "$(med "workers:rows:$n")" "$(med "workers:x:$n")" "$(spread "workers:x:$n")")"
		fi
		[ "$n" = bigserial ] && w="${w% (*}"
		printf '| %s | %.0f | %s | %s | %s | %s | %s | %s |\n' "${label[$n]}" \
			"$(med "coordinator:rows:$n")" "$x" "$w" \
			"${rows[$n]}" "${distinct[$n]}" "${dups[$n]}" "${groups[$n]}"
	done
	echo
	echo "Duplicate keys at the end, all tables: $dup_total."
	echo
	echo "Keys: bigserial \`id bigserial PRIMARY KEY\`; snowid_next() \`id bigint PRIMARY KEY DEFAULT snowid_next()\` (snowid.node_id 0 on the coordinator, 1 and 2 on the workers); integer ticket \`no integer PRIMARY KEY DEFAULT snowid_ticket_next('bench_no')\`, the ticket created on every node with \`shard => groupid, shards => 64, type => 'integer'\` (README, \"With Citus\"); serial \`id serial PRIMARY KEY\`, through the coordinator only: on a worker Citus refuses it (\"$serial_refusal\"). Rows made per Citus group: bigserial \`id >> 48\` (Citus starts a worker's sequence at its group ID shifted left by 48 bits), snowid_next() \`snowid_node(id)\`, the ticket \`snowid_ticket_shard('bench_no', no)\`."
	echo
	echo "The run took $((SECONDS - started)) s, the setup (PostgreSQL copied, Citus and snowid installed into the copy, the cluster started) included."
} >"$out/citus.md"
cat "$out/citus.md"
[ "$dup_total" -eq 0 ] || { echo "citus.sh: $dup_total duplicate keys" >&2; exit 1; }
