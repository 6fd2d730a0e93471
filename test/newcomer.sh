#!/usr/bin/env bash
# A newcomer's path through the README, as root on Debian (issue 24): the
# quick start's demo with SNOWID_DEMO_PORT/SNOWID_DEMO_DIR and the stop
# command it prints; the README's install on the system's PostgreSQL 15
# (make && make install, a conf.d file, pg_ctlcluster); a bigserial table
# converted to snowid_next(); a role restricted as "Who may generate" says;
# "Across servers" (issue 32): a registry cluster and a member cluster
# configured with the README's blocks as written (the ones marked
# registry-conf, registry-hba, member-conf, member-passfile, and the
# registry's SQL), the member's snowid_next() issuing under the node the
# registry leased it, and the README's status queries showing it.
#
#   bash test/newcomer.sh      # as root; prints "ok - ..." / "not ok - ..."
#                              # and ends with "newcomer: N passed, M failed"
#
# It uses a cluster of its own, 15/snowid_newcomer (the README's commands
# name 15/main: the test runs them with that name changed), and for "Across
# servers" 15/snowid_newcomer_registry and 15/snowid_newcomer_member, created
# with pg_createcluster and dropped at the end, so that a machine's own
# clusters are left alone (SNOWID_NEWCOMER_CLUSTER names them otherwise).
# Ports: SNOWID_NEWCOMER_PORT, SNOWID_NEWCOMER_DEMO_PORT,
# SNOWID_NEWCOMER_REGISTRY_PORT, SNOWID_NEWCOMER_MEMBER_PORT.  Where the
# README names the registry's host and port, its members' network, a listen
# address of '*' or the passfile's path, this machine's take their place, as
# in TAP 030.  Skipped, with the reason, where it cannot run: not root, or
# no Debian postgresql-common.  test/run-tests.sh runs it after the suites.
set -u
# A newcomer's shell: Debian's PATH and no PG_CONFIG (test/run-tests.sh's
# own environment names the last major it tested).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
unset PG_CONFIG PGHOST PGPORT PGDATA PGUSER
newcomer_path=$PATH
. "$(dirname "$0")/lib.sh"
# The checkout may lie where the postgres OS user cannot go (a mode-700
# directory of root's): work from /.
cd / || exit 1

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
	echo "newcomer: $pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
}
skip() {
	echo "newcomer: skipped: $*"
	exit 0
}

[ "$(id -u)" -eq 0 ] || skip "it runs as root (the README's install is a root's)"
command -v pg_createcluster >/dev/null && command -v pg_ctlcluster >/dev/null ||
	skip "no pg_createcluster/pg_ctlcluster (Debian's postgresql-common)"
[ -x /usr/lib/postgresql/15/bin/postgres ] || skip "Debian's postgresql-15 is not installed"

readme=$SNOWID_SRC/README.md
cluster=${SNOWID_NEWCOMER_CLUSTER:-snowid_newcomer}
port=${SNOWID_NEWCOMER_PORT:-55478}
demo_dir=/tmp/$cluster-demo
demo_port=${SNOWID_NEWCOMER_DEMO_PORT:-55477}
reg_cluster=${cluster}_registry
reg_port=${SNOWID_NEWCOMER_REGISTRY_PORT:-55475}
mem_cluster=${cluster}_member
mem_port=${SNOWID_NEWCOMER_MEMBER_PORT:-55476}
across=/tmp/$cluster-across

# ---- the README says what this test does ----
for phrase in 'bash test/demo.sh' 'SNOWID_DEMO_PORT' 'SNOWID_DEMO_DIR' \
	'make && make install' '/etc/postgresql/15/main/conf.d/snowid.conf' \
	'pg_ctlcluster 15 main restart' "shared_preload_libraries = 'snowid'" \
	'snowid_convert_column(' 'REVOKE EXECUTE ON FUNCTION snowid_next()' \
	'<!-- readme-examples: registry-conf -->' '<!-- readme-examples: registry-hba -->' \
	'<!-- readme-examples: member-conf -->' '<!-- readme-examples: member-passfile -->'; do
	check "the README says: $phrase" grep -qF "$phrase" "$readme"
done

# ---- quick start: the demo somewhere else, stopped as it says ----
rm -rf "$demo_dir"
out=$(SNOWID_DEMO_DIR=$demo_dir SNOWID_DEMO_PORT=$demo_port bash "$SNOWID_SRC/test/demo.sh" 2>&1)
rc=$?
check "the demo starts on port $demo_port in $demo_dir" \
	test $rc -eq 0 -a -f "$demo_dir/data/postmaster.pid"
check "the demo shows decoded IDs" grep -q 'three orders, their IDs decoded' <<<"$out"
stop_cmd=$(sed -n 's/^Stop and remove it with: *//p' <<<"$out")
check "the demo prints its stop command" test -n "$stop_cmd"
check "the stop command names the demo's directory" grep -qF "$demo_dir" <<<"$stop_cmd"
(cd / && env -u SNOWID_DEMO_DIR -u SNOWID_DEMO_PORT bash -c "$stop_cmd") >/dev/null 2>&1
check "the printed stop command stops the server and removes its files" test ! -e "$demo_dir"
mkdir -p "$demo_dir" && echo precious >"$demo_dir/thesis.txt"
check "stop leaves a directory the demo did not make" \
	bash -c "! SNOWID_DEMO_DIR='$demo_dir' bash '$SNOWID_SRC/test/demo.sh' stop >/dev/null 2>&1 && test -f '$demo_dir/thesis.txt'"
check "start refuses a directory with other files" \
	bash -c "! SNOWID_DEMO_DIR='$demo_dir' SNOWID_DEMO_PORT=$demo_port bash '$SNOWID_SRC/test/demo.sh' >/dev/null 2>&1 && test -f '$demo_dir/thesis.txt'"
rm -rf "$demo_dir"
check "no server is left in $demo_dir" bash -c "! pgrep -u postgres -f -- '$demo_dir/data' >/dev/null"

# ---- install on the system's server, as the README's Install says ----
build=$(mktemp -d /tmp/snowid-newcomer.XXXXXX)
tar -C "$SNOWID_SRC" --exclude=.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' -cf - . |
	tar -C "$build" -xf -
check "make && make install (as root, Debian's pg_config)" \
	env PATH="$newcomer_path" bash -c "cd '$build' && { make && make install; } >'$build/make.log' 2>&1"

cluster_log=/tmp/snowid-newcomer-cluster.log
pg_dropcluster --stop 15 "$cluster" >/dev/null 2>&1
rm -rf "/etc/postgresql/15/$cluster"
check "a cluster of its own (pg_createcluster 15 $cluster)" \
	bash -c "rm -f '$cluster_log' && touch '$cluster_log' && chown postgres '$cluster_log' &&
		pg_createcluster 15 $cluster -p $port -l '$cluster_log' >/dev/null 2>&1"
conf=/etc/postgresql/15/$cluster/conf.d/snowid.conf
cat >"$conf" <<'CONF'
shared_preload_libraries = 'snowid'
snowid.node_id = 1          # unique per server, 0 .. 1023 with the default layout
CONF
check "pg_ctlcluster 15 $cluster restart starts it with snowid preloaded" \
	bash -c "pg_ctlcluster 15 $cluster restart >/dev/null 2>&1 || pg_ctlcluster 15 $cluster start"

q() { runuser -u postgres -- psql -X -q -At -v ON_ERROR_STOP=1 -h /var/run/postgresql -p "$port" -d postgres "$@"; }

check "CREATE EXTENSION snowid" q -c 'CREATE EXTENSION snowid'
check "snowid_next() gives an ID of node 1" \
	test "$(q -c 'SELECT snowid_node(snowid_next())' 2>&1)" = 1

# ---- a bigserial table converted ----
q -c "CREATE TABLE shop_orders (id bigserial PRIMARY KEY, item text);
      CREATE TABLE shop_lines (order_id bigint REFERENCES shop_orders, qty int);
      INSERT INTO shop_orders (item) SELECT 'old ' || g FROM generate_series(1, 100) g;
      INSERT INTO shop_lines SELECT id, 1 FROM shop_orders;" >/dev/null 2>&1
check "snowid_convert_column on the bigserial column" \
	test "$(q -c "SELECT snowid_convert_column('shop_orders', 'id')" 2>/dev/null)" = 'public.snowid_next()'
check "new rows take IDs of node 1 above the old keys, foreign keys still hold" \
	test "$(q -c "INSERT INTO shop_orders (item) VALUES ('new') RETURNING snowid_node(id), id > 100" 2>&1)" = '1|t'
check "the old rows kept their keys" \
	test "$(q -c "SELECT count(*), max(id) FROM shop_orders WHERE item LIKE 'old %'")" = '100|100'

# ---- a role restricted ----
q -c "REVOKE EXECUTE ON FUNCTION snowid_next(), snowid_next_batch(integer),
          snowid_ticket_next(regclass), snowid_ticket_next(text) FROM PUBLIC;
      CREATE ROLE newcomer_writer LOGIN; CREATE ROLE newcomer_other LOGIN;
      GRANT EXECUTE ON FUNCTION snowid_next() TO newcomer_writer;
      GRANT INSERT, SELECT ON shop_orders TO newcomer_writer, newcomer_other;" >/dev/null 2>&1
state=$(q -c "SET ROLE newcomer_other;
      DO \$\$ BEGIN INSERT INTO shop_orders (item) VALUES ('x');
      EXCEPTION WHEN OTHERS THEN RAISE NOTICE 'sqlstate %', SQLSTATE; END \$\$;" 2>&1)
check "a role without the grant gets 42501 from an insert through the default" \
	grep -q 'sqlstate 42501' <<<"$state"
check "the granted role inserts" \
	test "$(q -c "SET ROLE newcomer_writer; INSERT INTO shop_orders (item) VALUES ('ok') RETURNING snowid_node(id)" 2>&1)" = 1

# pg_dropcluster leaves conf.d behind when it holds a file it did not make.
drop_cluster() { # drop_cluster NAME
	pg_dropcluster --stop 15 "$1" >/dev/null 2>&1
	rm -f "/etc/postgresql/15/$1/conf.d/"*.conf
	rmdir "/etc/postgresql/15/$1/conf.d" "/etc/postgresql/15/$1" 2>/dev/null
}
drop_cluster "$cluster"
check "the cluster is dropped again" bash -c "! pg_lsclusters -h | grep -q ' $cluster '"

# ---- across servers: a registry and a member, as the README sets them up ----

# The README's block of a readme-examples MARKER (the first one holding
# the text CONTAINS, if given), with this machine's names in place of the
# README's: the registry's host and port, the members' network, '*' as
# listen address, the passfile's path (as TAP 030 does).
readme_block() { # readme_block MARKER [CONTAINS]
	awk -v m="$1" -v want="${2:-}" '
		inb && /^```[ \t]*$/ {
			inb = 0
			if (ours && (want == "" || index(body, want))) { printf "%s", body; exit }
			next
		}
		inb { body = body $0 "\n"; next }
		$0 ~ "^<!--[ \t]*readme-examples:[ \t]*" m "[ \t]*-->" { armed = 1; next }
		/^```/ { inb = 1; ours = armed; armed = 0; body = ""; next }
		/[^ \t]/ { armed = 0 }' "$readme" |
		sed -e 's/registry\.example\.com/127.0.0.1/g' -e "s/\b5432\b/$reg_port/g" \
			-e 's|10\.0\.0\.0/8|127.0.0.1/32|g' \
			-e "s/^\(listen_addresses[ \t]*=[ \t]*\)'\*'/\1'127.0.0.1'/" \
			-e "s|/var/lib/postgresql/snowid\.pgpass|$across/snowid.pgpass|g"
}
rq() { runuser -u postgres -- psql -X -q -At -v ON_ERROR_STOP=1 -h /var/run/postgresql -p "$reg_port" -d postgres "$@"; }
mq() { runuser -u postgres -- psql -X -q -At -v ON_ERROR_STOP=1 -h /var/run/postgresql -p "$mem_port" -d postgres "$@"; }
across_cleanup() {
	drop_cluster "$mem_cluster"
	drop_cluster "$reg_cluster"
	rm -rf "$across"
}
trap across_cleanup EXIT
across_cleanup
mkdir -p "$across" && chown postgres "$across" && chmod 700 "$across"
reg_etc=/etc/postgresql/15/$reg_cluster
mem_etc=/etc/postgresql/15/$mem_cluster

# The registry: the README's postgresql.conf lines (snowid preloaded) in conf.d,
# and its pg_hba.conf line the only way in over TCP (the socket, peer, is
# the test's way in).
check "a registry cluster (pg_createcluster 15 $reg_cluster)" \
	bash -c "pg_createcluster 15 $reg_cluster -p $reg_port -l '$across/registry.log' >/dev/null 2>&1"
readme_block registry-conf >"$reg_etc/conf.d/snowid-registry.conf"
{ echo 'local all all peer'; readme_block registry-hba; } >"$reg_etc/pg_hba.conf"
check "the registry takes the README's postgresql.conf and pg_hba.conf blocks" \
	bash -c "grep -q . '$reg_etc/conf.d/snowid-registry.conf' && grep -q '^host' '$reg_etc/pg_hba.conf' &&
		pg_ctlcluster 15 $reg_cluster start >/dev/null 2>&1"
reg_sql=$(readme_block registry 'CREATE DATABASE ids')
check "the README's registry block runs as pasted" \
	bash -c "test -n \"\$1\" && printf '%s' \"\$1\" | runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -h /var/run/postgresql -p $reg_port -d postgres -f - >'$across/registry-sql.log' 2>&1" _ "$reg_sql"

# The member: the README's postgresql.conf lines and passfile, then a start.
check "a member cluster (pg_createcluster 15 $mem_cluster)" \
	bash -c "pg_createcluster 15 $mem_cluster -p $mem_port -l '$across/member.log' >/dev/null 2>&1"
readme_block member-conf >"$mem_etc/conf.d/snowid.conf"
readme_block member-passfile >"$across/snowid.pgpass"
chown postgres "$across/snowid.pgpass" && chmod 600 "$across/snowid.pgpass"
check "the member starts with the README's postgresql.conf and passfile blocks" \
	bash -c "grep -q '^snowid.registry' '$mem_etc/conf.d/snowid.conf' && grep -q ':ids:' '$across/snowid.pgpass' &&
		pg_ctlcluster 15 $mem_cluster start >/dev/null 2>&1"

# The README's check on the member, until its state is ok (30 s at most).
mem_sql=$(readme_block member 'snowid_registry_status()')
status=
for _ in $(seq 60); do
	status=$(printf '%s' "$mem_sql" | mq -f - 2>"$across/member-sql.err" | tail -1)
	[ "${status%%|*}" = ok ] && break
	sleep 0.5
done
node=$(cut -d'|' -f2 <<<"$status")
check "the README's status query on the member: state ok, a node leased ($status)" \
	test "${status%%|*}" = ok -a -n "$node"
check "the member's snowid_next() issues under the node the registry leased ($node)" \
	test "$(mq -c 'SELECT snowid_node(snowid_next())' 2>&1)" = "$node"
nodes=$(readme_block registry 'FROM snowid_registry_nodes' | rq -f - 2>&1)
check "the README's query on the registry shows node $node held" \
	awk -F'|' -v n="$node" '$1 == n && $3 == "held" { found = 1 } END { exit !found }' <<<"$nodes"

if [ "$fail" -gt 0 ]; then
	echo "--- $build/make.log (last 15 lines)"; tail -15 "$build/make.log" 2>/dev/null
	echo "--- the cluster's log (last 15 lines)"; tail -15 "$cluster_log" 2>/dev/null
	for f in registry-sql.log member-sql.err registry.log member.log; do
		echo "--- $f (last 15 lines)"; tail -15 "$across/$f" 2>/dev/null
	done
	echo "--- the member's status: $status"
	echo "--- the registry's nodes:"; echo "$nodes"
fi
trap - EXIT
across_cleanup
check "the registry and member clusters are dropped again" \
	bash -c "! pg_lsclusters -h | grep -qE ' ($reg_cluster|$mem_cluster) '"
rm -rf "$build"
finish
