#!/usr/bin/env bash
# snowid's query file for postgres_exporter (test/monitoring/snowid-queries.yaml)
# against a real server (issue 40): Debian 12's prometheus-postgres-exporter
# (0.11) scrapes a throwaway PostgreSQL with snowid preloaded (node 3) as a
# login role in pg_monitor that is not a superuser, and its /metrics must
# carry snowid's metrics with the right values.
#
#   bash test/monitoring/exporter.sh     # as root, or a user with sudo;
#                                        # prints "ok - ..." / "not ok - ..."
#                                        # and ends with
#                                        # "exporter: N passed, M failed"
#
# PG_CONFIG names the PostgreSQL to run (default Debian's 15), with snowid
# installed in it; the server runs as the postgres OS user (as root) or as
# the caller, on a socket only, in a scratch directory removed at the end.
# Ports: SNOWID_EXPORTER_PG_PORT (the server's socket, default 55495) and
# SNOWID_EXPORTER_PORT (the exporter, on 127.0.0.1; default the first free
# one from 55496).  Skipped, with the reason, where the exporter (or curl)
# cannot be installed.  test/run-tests.sh runs it on PostgreSQL 15.
set -u
. "$(dirname "$0")/../lib.sh"

pass=0
fail=0
ok() { echo "ok - $*"; pass=$((pass + 1)); }
not_ok() { echo "not ok - $*"; fail=$((fail + 1)); }
check() { # check DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@"; then ok "$what"; else not_ok "$what"; fi
}
finish() {
	echo "exporter: $pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
}
skip() {
	echo "exporter: skipped: $*"
	exit 0
}

ensure_packages prometheus-postgres-exporter curl >/dev/null 2>&1 ||
	skip "prometheus-postgres-exporter and curl cannot be installed here (Debian 12 packages them)"
exporter=$(command -v prometheus-postgres-exporter) ||
	skip "no prometheus-postgres-exporter on the PATH"
echo "exporter: $("$exporter" --version 2>&1 | head -1)"
echo "exporter: PostgreSQL $("$PG_CONFIG" --version) ($PG_BINDIR)"
[ -f "$("$PG_CONFIG" --pkglibdir)/snowid.so" ] || {
	not_ok "snowid is installed in the PostgreSQL of $PG_CONFIG"
	finish
}

pg_port=${SNOWID_EXPORTER_PG_PORT:-55495}
port=${SNOWID_EXPORTER_PORT:-}
if [ -z "$port" ]; then
	for port in $(seq 55496 55520); do
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break
	done
fi

exporter_pid=
cleanup() {
	if [ -n "$exporter_pid" ]; then
		kill "$exporter_pid" 2>/dev/null
		wait "$exporter_pid" 2>/dev/null
	fi
	bench_cleanup
}
trap cleanup EXIT

# ---- the server: snowid preloaded, node 3; a monitoring role ----
sdir=$(bench_scratch exporter) || { not_ok "a scratch directory"; finish; }
check "a PostgreSQL server with snowid preloaded (node 3) starts" \
	bench_server "$sdir/data" "$sdir/server.log" "$pg_port" "$PG_BINDIR" \
	"shared_preload_libraries = 'snowid'" "snowid.node_id = 3"
psql_su() { q -h "$sdir" -p "$pg_port" -d postgres "$@"; }
setup_sql() {
	psql_su -c "CREATE EXTENSION snowid;
		CREATE ROLE snowid_exporter LOGIN IN ROLE pg_monitor;
		SELECT snowid_ticket_create('exp_near', block => 10, start => 2147483647 - 999, type => 'integer');
		SELECT count(snowid_ticket_next('exp_near')) FROM generate_series(1, 995);" >/dev/null
}
check "CREATE EXTENSION snowid, a login role in pg_monitor, a ticket near its end" setup_sql
check "the monitoring role is no superuser" \
	test "$(psql_su -c "SELECT rolsuper FROM pg_roles WHERE rolname = 'snowid_exporter'")" = f

# ---- the exporter, with the query file, as that role ----
# (the query file copied where the server's OS user may read it: the
# checkout may lie in a directory of root's)
cp "$SNOWID_SRC/test/monitoring/snowid-queries.yaml" "$sdir/" && chmod 644 "$sdir/snowid-queries.yaml"
DATA_SOURCE_NAME="host=$sdir port=$pg_port user=snowid_exporter dbname=postgres sslmode=disable" \
	"$exporter" --extend.query-path="$sdir/snowid-queries.yaml" \
	--web.listen-address="127.0.0.1:$port" >"$sdir/exporter.log" 2>&1 &
exporter_pid=$!
url=http://127.0.0.1:$port/metrics
for _ in $(seq 60); do
	curl -sf "$url" -o /dev/null && break
	kill -0 "$exporter_pid" 2>/dev/null || break
	sleep 0.5
done
scrape() { curl -sf "$url" >"$sdir/metrics.$1"; }
check "the exporter serves $url" scrape 1
m=$sdir/metrics.1

# The value of the one series of METRIC whose labels hold each of LABEL...
# (label="value" pairs), or nothing.
value() { # value FILE METRIC [LABEL...]
	local file=$1 metric=$2
	shift 2
	awk -v metric="$metric" -v want="$*" '
		index($0, metric "{") == 1 || index($0, metric " ") == 1 {
			n = split(want, w, " ")
			for (i = 1; i <= n; i++) if (index($0, w[i]) == 0) next
			print $NF; exit
		}' "$file"
}
# Is the value of A (a number as Prometheus writes it) OP B?
num() { awk -v a="$1" -v b="$3" -v op="$2" 'BEGIN {
	if (a == "") exit 1
	if (op == "==") exit !(a + 0 == b + 0)
	if (op == ">") exit !(a + 0 > b + 0)
	if (op == ">=") exit !(a + 0 >= b + 0)
	exit 1 }'; }

check "the exporter reaches the server (pg_up 1)" num "$(value "$m" pg_up)" == 1
check "it loaded the query file (pg_exporter_user_queries_load_error 0)" \
	num "$(value "$m" pg_exporter_user_queries_load_error 'snowid-queries.yaml')" == 0
check "its last scrape raised no error (pg_exporter_last_scrape_error 0)" \
	num "$(value "$m" pg_exporter_last_scrape_error)" == 0
check "its scrape of snowid's queries raised no error (log)" \
	bash -c "! grep -iE 'error.*(snowid|permission)|(snowid|permission).*error' '$sdir/exporter.log'"
check "snowid_health_level is a gauge, snowid_stats_ids_issued a counter" \
	bash -c "grep -q '^# TYPE snowid_health_level gauge' '$m' && grep -q '^# TYPE snowid_stats_ids_issued counter' '$m'"
check "snowid_health_level of the generator is 0 (ok)" \
	num "$(value "$m" snowid_health_level 'component="generator"')" == 0
gen_left=$(value "$m" snowid_health_seconds_left 'component="generator"')
check "snowid_health_seconds_left of the generator is over a year ($gen_left)" \
	num "$gen_left" ">" 31536000
check "snowid_health_level of ticket public.exp_near (5 of 1,000 left) is 1 (warning)" \
	num "$(value "$m" snowid_health_level 'component="ticket"' 'name="public.exp_near"')" == 1
check "its snowid_health_seconds_left is NaN (no bound known)" \
	test "$(value "$m" snowid_health_seconds_left 'component="ticket"' 'name="public.exp_near"')" = NaN
check "snowid_health carries the database as a label" \
	grep -q '^snowid_health_level{.*datname="postgres"' "$m"
check "no lease series without a registry" \
	test -z "$(value "$m" snowid_health_level 'component="lease"')"
check "snowid_registry_status is 1 for state off" \
	num "$(value "$m" snowid_registry_status 'state="off"')" == 1
check "snowid_registry_status is 0 for state ok" \
	num "$(value "$m" snowid_registry_status 'state="ok"')" == 0
for c in waits clock_errors clock_regressions; do
	check "snowid_stats_$c is 0" num "$(value "$m" snowid_stats_$c)" == 0
done
check "snowid_stats_lead_ms is there" num "$(value "$m" snowid_stats_lead_ms)" ">=" 0

issued1=$(value "$m" snowid_stats_ids_issued)
check "snowid_next() x 25 on the server" \
	test "$(psql_su -c 'SELECT count(snowid_next()) FROM generate_series(1, 25)')" = 25
check "a second scrape" scrape 2
issued2=$(value "$sdir/metrics.2" snowid_stats_ids_issued)
check "snowid_stats_ids_issued rose by 25 ($issued1 -> $issued2)" \
	num "$issued2" == "$(awk -v a="$issued1" 'BEGIN { print a + 25 }')"

# The ticket's last values taken: critical, issuing for 0.
ticket_used_up() {
	[ "$(psql_su -c "SELECT count(snowid_ticket_next('exp_near')) FROM generate_series(1, 5)")" = 5 ] &&
		scrape 3 &&
		num "$(value "$sdir/metrics.3" snowid_health_level 'name="public.exp_near"')" == 2 &&
		num "$(value "$sdir/metrics.3" snowid_health_seconds_left 'name="public.exp_near"')" == 0
}
check "the ticket's last 5 values taken: level 2 (critical), seconds_left 0" ticket_used_up

if [ "$fail" -gt 0 ]; then
	echo "--- the exporter's log (last 30 lines)"
	tail -30 "$sdir/exporter.log"
	echo "--- snowid's series in the last scrape"
	grep -h '^snowid_' "$sdir"/metrics.* 2>/dev/null | tail -40
	echo "--- the server's log (last 20 lines)"
	tail -20 "$sdir/server.log"
fi

kill "$exporter_pid" 2>/dev/null
wait "$exporter_pid" 2>/dev/null
exporter_pid=
check "the exporter stopped" bash -c "! curl -sf '$url' -o /dev/null"
trap - EXIT
bench_cleanup
check "the server stopped and its directory is gone" test ! -e "$sdir"
finish
