#!/usr/bin/env bash
# Start a throwaway PostgreSQL 15 server with snowid preloaded
# (snowid.node_id = 1) and show it working.
#
#   bash test/demo.sh          # install what is missing, build, start, demo
#   bash test/demo.sh stop     # stop the server and remove its files
#
# SNOWID_DEMO_DIR (default /tmp/snowid-demo) and SNOWID_DEMO_PORT
# (default 55432) choose where it lives; give `stop` the same
# SNOWID_DEMO_DIR (the command printed at the end does).
set -eu
. "$(dirname "$0")/lib.sh"

dir=${SNOWID_DEMO_DIR:-/tmp/snowid-demo}
port=${SNOWID_DEMO_PORT:-55432}

# The demo's directory carries this marker from its start: stop removes a
# directory only if it has it, and a start refuses a directory with other
# files in it, so that a SNOWID_DEMO_DIR naming a directory of yours loses
# nothing.
marker=.snowid-demo

if [ "${1:-}" = stop ]; then
	if [ ! -e "$dir" ]; then
		echo "snowid demo: $dir does not exist: nothing to stop"
		exit 0
	fi
	if [ ! -f "$dir/$marker" ]; then
		echo "snowid demo: $dir was not made by test/demo.sh (no $marker in it): left as it is" >&2
		exit 1
	fi
	if [ -f "$dir/data/postmaster.pid" ]; then
		as_runner pg_ctl -D "$dir/data" -m fast stop
	fi
	rm -rf "$dir"
	echo "snowid demo stopped and $dir removed"
	exit 0
fi

if [ -e "$dir" ] && [ ! -f "$dir/$marker" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
	echo "snowid demo: $dir holds files that are not the demo's: choose another SNOWID_DEMO_DIR" >&2
	exit 1
fi

ensure_packages make gcc postgresql-15 postgresql-server-dev-15
echo "snowid: building and installing"
build_and_install /tmp/snowid-demo-build.log || {
	cat /tmp/snowid-demo-build.log
	exit 1
}

if [ ! -d "$dir/data" ]; then
	mkdir -p "$dir"
	touch "$dir/$marker"
	[ "$(id -u)" -eq 0 ] && chown postgres "$dir"
	as_runner initdb -D "$dir/data" -A trust >/dev/null
	cat >>"$dir/data/postgresql.conf" <<CONF
port = $port
listen_addresses = ''
unix_socket_directories = '$dir'
shared_preload_libraries = 'snowid'
snowid.node_id = 1
CONF
fi
if ! as_runner pg_ctl -D "$dir/data" status >/dev/null 2>&1; then
	as_runner pg_ctl -D "$dir/data" -l "$dir/server.log" -w start >/dev/null
fi

psql_cmd="psql -h $dir -p $port -d snowid_demo"
[ "$(id -u)" -eq 0 ] && psql_cmd="runuser -u postgres -- $psql_cmd"

# The demo has a database of its own, so that the README's examples run as
# pasted in a fresh one (postgres, say).
if [ "$(as_runner psql -X -At -h "$dir" -p "$port" -d postgres \
	-c "SELECT count(*) FROM pg_database WHERE datname = 'snowid_demo'")" = 0 ]; then
	as_runner createdb -h "$dir" -p "$port" snowid_demo
fi

as_runner psql -X -q -h "$dir" -p "$port" -d snowid_demo -v ON_ERROR_STOP=1 <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS snowid;
DROP TABLE IF EXISTS demo_orders;
CREATE TABLE demo_orders (
    id bigint PRIMARY KEY DEFAULT snowid_next(),
    item text NOT NULL
);
INSERT INTO demo_orders (item) VALUES ('tea'), ('milk'), ('bread');
INSERT INTO demo_orders (item) SELECT 'widget ' || g FROM generate_series(1, 1000) AS g;
\echo
\echo '-- the layout in force'
SELECT node_id, timestamp_bits, node_bits, sequence_bits, ids_per_second, last_timestamp
FROM snowid_layout();
\echo '-- three orders, their IDs decoded'
SELECT o.id, d.ts, d.node, d.sequence, o.item
FROM demo_orders AS o, snowid_decode(o.id) AS d
ORDER BY o.id LIMIT 3;
\echo '-- orders of the last hour, found by a range scan on the ID'
SELECT count(*) AS last_hour FROM demo_orders
WHERE id >= snowid_from_timestamp(now() - interval '1 hour');
\echo '-- what the generator did'
SELECT ids_issued, ticks_borrowed, waits, clock_errors FROM snowid_stats();
SQL

# The stop command names the same directory (and port) as this run, so that
# it stops this server and removes these files, whatever the caller's
# environment holds when it is pasted.
stop_cmd="bash $(printf '%q' "$(cd "$(dirname "$0")" && pwd)/demo.sh") stop"
[ -n "${SNOWID_DEMO_PORT:-}" ] && stop_cmd="SNOWID_DEMO_PORT=$(printf '%q' "$port") $stop_cmd"
[ -n "${SNOWID_DEMO_DIR:-}" ] && stop_cmd="SNOWID_DEMO_DIR=$(printf '%q' "$dir") $stop_cmd"

cat <<EOF2
snowid is running on port $port (data in $dir/data, log in $dir/server.log).
Connect with:  $psql_cmd
(the README's SQL examples run as pasted in the fresh database postgres: -d postgres)
Stop and remove it with:  $stop_cmd
EOF2
