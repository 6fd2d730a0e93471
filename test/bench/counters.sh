#!/usr/bin/env bash
# Counters per key beside what applications write by hand, in one run on
# one server: snowid_counter_next() in mode fast and in mode gapless, a
# sequence per key (nextval of 'ks_<key>') and the hand-written row per
# key (UPDATE counters SET last = last + 1 WHERE key = $1 RETURNING last,
# its rows made ahead), for one hot key and for KEYS keys at random, at 1
# and 4 clients.  pgbench, one value per transaction (autocommit); every
# candidate runs in a pair of adjacent runs with the hand-written row, which
# of the two first alternating, and each ratio is taken within its pair;
# medians over the rounds, with the middle half and the range of the
# rounds' ratios.  Each round starts with a VACUUM of the two tables that
# take the updates (the row's and snowid_counter_key) and a CHECKPOINT,
# outside the timed runs, so the row (paired with every candidate, so run
# most often) does not carry more dead rows than the others.
#
# Every statement is sent with pgbench -M prepared (PROTO changes it): the
# row's UPDATE is parsed and planned once per connection, as the SELECT
# of snowid_counter_next() is, whose own statement on snowid_counter_key
# is prepared once per backend (SPI_keepplan); with -M simple the row
# would pay a parse at every call and ours would not.
#
# Writes test/bench/results/counters.md (RESULT names another file).
#
#   bash test/bench/counters.sh            # full run (about 10 minutes)
#   bash test/bench/counters.sh --smoke    # tiny run that only proves it works
#   CANDS=gapless KEYSETS=hot CLIENTS=4 ROUNDS=15 SECS=5 \
#     RESULT=counters-gapless.md nice -n 19 bash test/bench/counters.sh
#
# TOGETHER=1 runs each pair at the same time instead (two pgbench, each
# with the case's clients, the row's on its own table and keys): both see
# the same moments of a shared disk, whose flush times here vary several
# fold from one second to the next.  SYNC=off sets synchronous_commit off
# on the server: no commit waits for its flush, so a pair compares the
# work of each and its row lock, not the disk.
# ROUNDS, SECS (of every pgbench run) and KEYS shorten a full run, CANDS
# (some of: fast gapless sequence) runs only those beside the row, KEYSETS
# (some of: hot many) and CLIENTS (some of: 1 4) only those cases.  On a
# shared machine run it under nice: the server it starts inherits it, so
# both runs of a pair run alike.
# PostgreSQL: SNOWID_BENCH_PG_CONFIG, else PG_CONFIG (test/lib.sh); snowid
# is built and installed into it unless SNOWID_SKIP_BUILD is set.  The
# server is a throwaway one (fsync on, default settings, autovacuum off) on
# port SNOWID_BENCH_PORT (default 55495).
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
[ $mode = smoke ] && out=$(mktemp -d "${TMPDIR:-/tmp}/snowid-bench-counters.XXXXXX")
mkdir -p "$out"
if [ $mode = full ]; then
	ROUNDS=${ROUNDS:-7}; RUN="-T ${SECS:-3}"; KEYS=${KEYS:-100000}
else
	ROUNDS=1; RUN="-t 50"; KEYS=100
fi
started=$SECONDS
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

if [ -z "${SNOWID_SKIP_BUILD:-}" ]; then
	ensure_packages make gcc
	build_and_install /tmp/snowid-bench-counters-build.log || { cat /tmp/snowid-bench-counters-build.log; exit 1; }
fi
sdir=$(bench_scratch counters-server)
port=${SNOWID_BENCH_PORT:-55495}
trap bench_cleanup EXIT
bench_server "$sdir/data" "$sdir/server.log" "$port" "" \
	"shared_preload_libraries = 'snowid'" "snowid.node_id = 1" "autovacuum = off" \
	"snowid.counter_keys = $((KEYS + 1000))" "synchronous_commit = ${SYNC:-on}"
export PGHOST=$sdir PGPORT=$port PGDATABASE=postgres
export PGOPTIONS="-c client_min_messages=warning"

# every key has its row ahead, the hand-written one and gapless's (whose
# first use of a key would otherwise insert it, a second statement)
echo "== setup: $KEYS keys (a sequence and a row each)"
q -c "CREATE EXTENSION snowid" \
	-c "SELECT snowid_counter_create('c_fast', mode => 'fast', block => 1000)" \
	-c "SELECT snowid_counter_create('c_gapless')" \
	-c "CREATE TABLE counters (key bigint PRIMARY KEY, last bigint NOT NULL)" \
	-c "INSERT INTO counters SELECT k, 0 FROM generate_series(1, $KEYS) k" \
	-c "SELECT count(snowid_counter_next('c_gapless', k)) FROM generate_series(1, $KEYS) k" >/dev/null
printf '%s\n' "SELECT format('CREATE SEQUENCE ks_%s', k) FROM generate_series(1, $KEYS) k \\gexec" | q >/dev/null
q -c "VACUUM ANALYZE" -c "CHECKPOINT" >/dev/null
version=$(q -c "SELECT current_setting('server_version')")

declare -A script
script[row]='UPDATE counters SET last = last + 1 WHERE key = :k RETURNING last;'
script[fast]="SELECT snowid_counter_next('c_fast', :k);"
script[gapless]="SELECT snowid_counter_next('c_gapless', :k);"
script[sequence]="SELECT nextval(('ks_' || :k::bigint)::regclass);"
# CANDS: some of them only (e.g. CANDS=fast)
read -r -a cands <<<"${CANDS:-fast gapless sequence}"
read -r -a keysets <<<"${KEYSETS:-hot many}"
read -r -a clientsets <<<"${CLIENTS:-1 4}"
proto=${PROTO:-prepared}
result=${RESULT:-counters.md}
declare -A label=([fast]=fast [gapless]=gapless [sequence]='sequence per key')
declare -A keyset=([hot]='\set k 1' [many]="\\set k random(1, $KEYS)")

# samples, add, med, range, ratio: test/lib.sh; the middle half of KEY's
# samples (the 25th to the 75th percentile, nearest rank)
mid() {
	# shellcheck disable=SC2086,SC2154 # split on purpose; samples: test/lib.sh
	printf '%s\n' ${samples[$1]} | sort -g |
		awk '{a[NR] = $1} END {lo = int((NR + 3) / 4); hi = NR + 1 - lo; printf "%.2f–%.2f", a[lo], a[hi]}'
}

# TPS of one pgbench run: clients, the transaction's script.
pgb() {
	local clients=$1 body=$2 f
	f=$(mktemp "${TMPDIR:-/tmp}/snowid-bench-counters.XXXXXX.sql")
	printf '%s\n' "$body" >"$f"
	chmod 644 "$f"
	# shellcheck disable=SC2086
	as_runner pgbench -n -M "$proto" -c "$clients" -j "$clients" $RUN -f "$f" 2>/dev/null |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p'
	rm -f "$f"
}

for ((r = 1; r <= ROUNDS; r++)); do
	echo "== round $r of $ROUNDS (load $(cut -d' ' -f1-3 /proc/loadavg))"
	q -c "VACUUM counters, snowid_counter_key" -c "CHECKPOINT" >/dev/null
	i=0
	for ks in "${keysets[@]}"; do
		for clients in "${clientsets[@]}"; do
			for c in "${cands[@]}"; do
				i=$((i + 1))
				if [ -n "${TOGETHER:-}" ]; then
					pgb "$clients" "${keyset[$ks]}
${script[row]}" >"$sdir/ref.tps" &
					t=$(pgb "$clients" "${keyset[$ks]}
${script[$c]}")
					wait $!
					ref=$(cat "$sdir/ref.tps")
				elif [ $(((r + i) % 2)) -eq 0 ]; then
					ref=$(pgb "$clients" "${keyset[$ks]}
${script[row]}")
					t=$(pgb "$clients" "${keyset[$ks]}
${script[$c]}")
				else
					t=$(pgb "$clients" "${keyset[$ks]}
${script[$c]}")
					ref=$(pgb "$clients" "${keyset[$ks]}
${script[row]}")
				fi
				add "tps:$ks$clients:$c" "$t"
				add "tps:$ks$clients:row" "$ref"
				add "ratio:$ks$clients:$c" "$(ratio "$t" "$ref")"
				echo "   $ks key(s), $clients client(s): $c $t tps, row $ref tps"
			done
		done
	done
done

{
	echo "# Counters per key: snowid_counter_next() beside a sequence per key and the hand-written row"
	echo
	echo "snowid $(q -c "SELECT extversion FROM pg_extension WHERE extname = 'snowid'") ($(git -C "$bench_dir" rev-parse --short HEAD 2>/dev/null || echo '?')), PostgreSQL $version, $(nproc) cores (shared with other work: load $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end), $(date -u +%Y-%m-%d), $ROUNDS rounds of ${RUN} pgbench runs (-M $proto$([ -n "${TOGETHER:-}" ] && echo ', each pair at the same time'), synchronous_commit ${SYNC:-on}), $((SECONDS - started)) s in all. One value per transaction (autocommit); hot: key 1 always; many: a key at random of $KEYS. Median TPS, and the median over the rounds of each candidate's TPS over the hand-written row's in $([ -n "${TOGETHER:-}" ] && echo 'the run beside it' || echo 'the adjacent run') (in brackets: the middle half of the rounds' ratios; their range)."
	echo
	printf '| keys | clients | row (hand-written)'
	for c in "${cands[@]}"; do printf ' | %s | × row' "${label[$c]}"; done
	printf ' |\n|---|---|---'
	for c in "${cands[@]}"; do printf '|---|---'; done
	echo '|'
	for ks in "${keysets[@]}"; do
		for clients in "${clientsets[@]}"; do
			printf '| %s | %s | %.0f' "$([ "$ks" = hot ] && echo 1 || echo "$KEYS")" "$clients" "$(med "tps:$ks$clients:row")"
			for c in "${cands[@]}"; do
				printf ' | %.0f | %.2f (%s; %s)' "$(med "tps:$ks$clients:$c")" "$(med "ratio:$ks$clients:$c")" "$(mid "ratio:$ks$clients:$c")" "$(range "ratio:$ks$clients:$c")"
			done
			echo ' |'
		done
	done
	echo
	echo "**How**: \`counters (key bigint PRIMARY KEY, last bigint)\` holds a row per key made ahead (the hand-written row: \`UPDATE counters SET last = last + 1 WHERE key = :k RETURNING last\`); a sequence per key \`ks_<key>\` (\`nextval(('ks_' || :k::bigint)::regclass)\`); \`snowid_counter_next('c_fast', :k)\` (mode fast, blocks of 1000, \`snowid.counter_keys\` above the keys used) and \`snowid_counter_next('c_gapless', :k)\` (every key taken once ahead, so its row exists, as the hand-written ones do). Gapless does the hand-written row's work (its row update in the caller's transaction, on \`snowid_counter_key\`: a regclass and a text key, and a BEFORE ROW trigger enabled REPLICA) plus the counter's lookup (cached per backend) and privilege check; fast takes a value from shared memory and, per block, has the database's server process write the key's row in a committed transaction of its own (a round trip and a commit; a key that uses its block up within a second gets twice that block next time, up to 64 times the counter's). Each round starts with \`VACUUM counters, snowid_counter_key\` and a \`CHECKPOINT\`."
} >"$out/$result"

cat "$out/$result"
echo
echo "written: $out/$result"
