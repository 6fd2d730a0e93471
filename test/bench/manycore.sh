#!/bin/bash
# Many-core scaling of snowid vs native sequences, run as root on a machine with many cores
# (../shared/bench/manycore/scale-bench.sh, with the parts issue 14 asks for added).
# Needs BUNDLE (default .manycore/pg15.tar.xz): PostgreSQL 15 + snowid packed by
# ../shared/bench/manycore/make-bundle.sh (see ../shared/bench/manycore/README.md).
# Usage: bash test/bench/manycore.sh percall|inserts|bulk|bulk0|bulk16   (writes $OUT/<part>.txt)
#   bulk0:  the default layout with snowid.max_lead = 0: 1, 4, 16 sessions against the
#           layout's ceiling of 4,096,000 IDs/s (target at 16: >= 0.9 of it)
#   bulk16: a 16-bit sequence layout (node_bits 6, sequence_bits 16; its own data
#           directory): snowid_next() against snowid_ticket_next() (target at 16: >= 0.9)
set -u
part=${1:-percall}; T=${T:-5}; R=${R:-2}
O=${OUT:-/tmp/out}; mkdir -p "$O"
if [ ! -x /usr/lib/postgresql/15/bin/postgres ]; then tar -C / -xJf "${BUNDLE:-.manycore/pg15.tar.xz}" || exit 1; fi
export LD_LIBRARY_PATH=/opt/pgdeps
id postgres >/dev/null 2>&1 || useradd -M postgres
B=/usr/lib/postgresql/15/bin; D=/tmp/pgdata
[ "$part" = bulk16 ] && D=/tmp/pgdata16
run() { runuser -u postgres -- env LD_LIBRARY_PATH=/opt/pgdeps "$@"; }
if [ ! -f $D/PG_VERSION ]; then
  rm -rf $D; mkdir -p $D; chown postgres $D; chmod 700 $D
  run $B/initdb -D $D -U postgres --auth=trust -E UTF8 --locale=C >/tmp/initdb.log 2>&1 || { cat /tmp/initdb.log; exit 1; }
  cat >> $D/postgresql.conf <<CONF
shared_preload_libraries='snowid'
snowid.node_id=1
snowid.max_lead='5s'
snowid.max_wait='10s'
max_connections=300
shared_buffers='8GB'
synchronous_commit=off
listen_addresses=''
unix_socket_directories='/tmp'
max_wal_size='40GB'
checkpoint_timeout='30min'
jit=off
autovacuum=off
CONF
  [ "$part" = bulk16 ] && printf 'snowid.node_bits=6\nsnowid.sequence_bits=16\n' >> $D/postgresql.conf
fi
run $B/pg_ctl -D $D -l /tmp/pg.log -w start >/dev/null || { tail /tmp/pg.log; exit 1; }
q() { run $B/psql -X -q -At -h /tmp -U postgres -d postgres -c "$1"; }
q "CREATE EXTENSION IF NOT EXISTS snowid; CREATE SEQUENCE IF NOT EXISTS s; CREATE SEQUENCE IF NOT EXISTS s100 CACHE 100;" 
q "SELECT snowid_ticket_create('tk', block => 10000) WHERE to_regclass('tk') IS NULL" >/dev/null
nproc; q "SELECT version()"
pgb() { # clients script -> tps
  local c=$1 f=$2 j=$1; [ $j -gt 16 ] && j=16
  run $B/pgbench -n -M prepared -h /tmp -U postgres -c $c -j $j -T $T -f "$f" postgres 2>&1 | sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}
mk() { echo "$2" > /tmp/$1.sql; chmod 644 /tmp/$1.sql; }
case $part in
percall)
  mk floor 'SELECT 1;'; mk snowid 'SELECT snowid_next();'; mk nextval "SELECT nextval('s');"; mk ticket "SELECT snowid_ticket_next('tk'::regclass);"; mk uuid 'SELECT gen_random_uuid();'
  for c in 1 4 16 64; do for r in $(seq 1 $R); do for k in floor snowid nextval ticket uuid; do
    echo "percall c=$c round=$r $k $(pgb $c /tmp/$k.sql)"; done; done; done | tee $O/percall.txt ;;
inserts)
  q "CREATE TABLE IF NOT EXISTS t_snow(id bigint PRIMARY KEY DEFAULT snowid_next(), v int); CREATE TABLE IF NOT EXISTS t_serial(id bigserial PRIMARY KEY, v int); CREATE TABLE IF NOT EXISTS t_uuid(id uuid PRIMARY KEY DEFAULT gen_random_uuid(), v int); CREATE TABLE IF NOT EXISTS t_ticket(id bigint PRIMARY KEY DEFAULT snowid_ticket_next('tk'::regclass), v int);"
  for k in snow serial uuid ticket; do mk i1_$k "INSERT INTO t_$k(v) VALUES (1);"; mk i100_$k "INSERT INTO t_$k(v) SELECT 1 FROM generate_series(1,100);"; done
  for c in 4 16 64; do for r in $(seq 1 $R); do for k in snow serial uuid ticket; do
    echo "insert1 c=$c round=$r $k $(pgb $c /tmp/i1_$k.sql)"; done; for k in snow serial uuid ticket; do
    echo "insert100 c=$c round=$r $k $(pgb $c /tmp/i100_$k.sql)"; done; done; done | tee $O/inserts.txt
  q "SELECT relname, pg_size_pretty(pg_relation_size(oid)), pg_relation_size(oid) FROM pg_class WHERE relname LIKE 't_%_pkey'" | tee -a $O/inserts.txt ;;
bulk)
  N=${N:-2000000}
  for p in 1 4 16; do for r in $(seq 1 $R); do for k in "x" "snowid_next()" "nextval('s')" "nextval('s100')" "snowid_ticket_next('tk'::regclass)"; do
    s=$(date +%s.%N)
    for i in $(seq 1 $p); do run $B/psql -X -q -At -h /tmp -U postgres -d postgres -c "SELECT count($k) FROM generate_series(1,$N) x" >/dev/null & done; wait
    e=$(date +%s.%N); echo "bulk p=$p round=$r $k $(awk -v s=$s -v e=$e -v n=$N -v p=$p 'BEGIN{printf "%.0f", n*p/(e-s)}')"
  done; done; done | tee $O/bulk.txt
  q "SELECT * FROM snowid_stats()" | tee -a $O/bulk.txt ;;
bulk0|bulk16)
  N=${N:-2000000}
  if [ $part = bulk0 ]; then q "ALTER SYSTEM SET snowid.max_lead = 0"; q "ALTER SYSTEM SET snowid.max_wait = '30s'"; q "SELECT pg_reload_conf()"; sleep 1; fi
  q "SELECT 'layout: ' || ids_per_second || ' IDs/s' FROM snowid_layout()" | tee $O/$part.txt
  for p in 1 4 16; do for r in $(seq 1 $R); do for k in "snowid_next()" "snowid_ticket_next('tk'::regclass)"; do
    s=$(date +%s.%N)
    for i in $(seq 1 $p); do run $B/psql -X -q -At -h /tmp -U postgres -d postgres -c "SELECT count($k) FROM generate_series(1,$N) x" >/dev/null & done; wait
    e=$(date +%s.%N); echo "$part p=$p round=$r $k $(awk -v s=$s -v e=$e -v n=$N -v p=$p 'BEGIN{printf "%.0f", n*p/(e-s)}')"
  done; done; done | tee -a $O/$part.txt
  q "SELECT * FROM snowid_stats()" | tee -a $O/$part.txt
  if [ $part = bulk0 ]; then q "ALTER SYSTEM RESET snowid.max_lead"; q "ALTER SYSTEM RESET snowid.max_wait"; q "SELECT pg_reload_conf()"; fi ;;
esac
run $B/pg_ctl -D $D -m fast -w stop >/dev/null
