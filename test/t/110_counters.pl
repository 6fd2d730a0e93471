# Copyright (c) snowid contributors
#
# Counters per key (issue 41), on servers of their own:
# - crash: a transaction takes values of a fast counter and stays open;
#   none of them is handed out again after the crash restart (a fast
#   block is committed by a server process before its values are used);
# - crash: pgbench clients take values of a fast and a gapless counter
#   (some transactions roll back) while the server is stopped in
#   immediate mode; after the restart more values are taken.  No key
#   holds a value twice (a unique index on key and value: an insert that
#   repeated one would fail), and the committed values of each gapless key
#   run 1, 2, 3, ... with no hole;
# - many keys with a small cache (snowid.counter_keys = 1000): $nkeys
#   keys of a fast counter (200,000 unless SNOWID_COUNTER_KEYS says; each
#   key's block is a round trip to the server process and a commit) each
#   take a value, then each again after all were evicted: no value twice,
#   the second above the first, the cache within its setting (keys
#   cached, shared memory allocated);
# - failover: a streaming standby promoted (the primary stopped in
#   immediate mode while clients take values) goes on with no fast value
#   twice and no gapless hole;
# - a key restarted in a transaction still open keeps its cache slot
#   through evictions: its takers wait for that transaction;
# - a server process stopped while a caller waits for it: the error names
#   the counter, and the next call goes on;
# - pg_dump of a database using counters, restored into a fresh server:
#   every key's next value lies above those issued before the dump.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

my $nkeys = $ENV{SNOWID_COUNTER_KEYS} // 200000;

my $node = snowid_node('counters', 1, "snowid.counter_keys = 1000\n",
	allows_streaming => 1);
$node->start;
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION snowid;
SELECT snowid_counter_create('fast_no', mode => 'fast', block => 10);
SELECT snowid_counter_create('gap_no', type => 'integer');
CREATE TABLE fast_taken (key text, v bigint, UNIQUE (key, v));
CREATE TABLE gap_taken (key text, v bigint, UNIQUE (key, v));
});

# ---------------------------------------------------------------------
# Crash while clients take values; restart; take more.

my $script = q{\set k random(1, 20)
\set r random(1, 10)
BEGIN;
INSERT INTO fast_taken VALUES (:k, snowid_counter_next('fast_no', :k::text));
INSERT INTO gap_taken VALUES (:k, snowid_counter_next('gap_no', :k::text));
\if :r = 1
ROLLBACK;
\else
COMMIT;
\endif
};
# A session holds values of key 'open' in a transaction open at the crash.
my ($open_in, $open_out, $open_err) = ('', '', '');
my $open = IPC::Run::start(
	[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-f', '-' ],
	'<', \$open_in, '>', \$open_out, '2>', \$open_err);
$open_in .= "BEGIN;\nSELECT snowid_counter_next('fast_no', 'open') FROM generate_series(1, 5);\n";
my $open_timer = IPC::Run::timer($PostgreSQL::Test::Utils::timeout_default);
$open_timer->start;
$open->pump until $open_out =~ /^(?:\d+\n){5}/ || $open_timer->is_expired;
my @open_values = split /\n/, $open_out;
is(scalar(@open_values), 5, "an open transaction took 5 values (@open_values)");
my $run = start_pgbench($node, 'crash', 4, 30, $script);
sleep 4;
$node->stop('immediate');
$run->{handle}->finish;
$open->kill_kill;
$node->start;
my $open_after = $node->safe_psql('postgres',
	"SELECT string_agg(snowid_counter_next('fast_no', 'open')::text, ' ') FROM generate_series(1, 25)");
my %open_seen = map { $_ => 1 } @open_values;
is( join(' ', grep { $open_seen{$_} || $_ <= max_of(@open_values) } split / /, $open_after),
	'',
	"no value of the transaction open at the crash comes again, later ones lie above ($open_after)");
my $before = $node->safe_psql('postgres',
	'SELECT count(*) FROM fast_taken');
cmp_ok($before, '>', 0, "values were taken before the crash ($before)");
# Take more values on $node after $what; then no key may hold a value
# twice (fast or gapless) and no gapless key may have a hole.
sub take_more
{
	my ($node, $tag, $what) = @_;
	my $run = start_pgbench($node, $tag, 4, 3, $script);
	$run->{handle}->finish;
	unlike($run->{err}, qr/duplicate key/, "no value twice after $what (pgbench)");
	cmp_ok(pgbench_processed($run) // 0, '>', 0, "values taken after $what");
	is( $node->safe_psql(
			'postgres', q{
SELECT (SELECT count(*) FROM (SELECT key, v FROM fast_taken GROUP BY 1, 2 HAVING count(*) > 1) d),
       (SELECT count(*) FROM (SELECT key, v FROM gap_taken GROUP BY 1, 2 HAVING count(*) > 1) d),
       (SELECT count(*) FROM (SELECT key FROM gap_taken GROUP BY key
                              HAVING max(v) <> count(*) OR min(v) <> 1) h)}),
		'0|0|0',
		"after $what: no key holds a value twice, fast or gapless, and gapless keys run 1, 2, 3 ... with no hole");
	return;
}
take_more($node, 'after', 'the crash restart');
is( $node->safe_psql(
		'postgres', q{
SELECT bool_and(snowid_counter_current('gap_no', key) = m)
FROM (SELECT key, max(v) m FROM gap_taken GROUP BY key) k}),
	't',
	'the current value of each gapless key is its last committed one');

# ---------------------------------------------------------------------
# Failover: a streaming standby promoted while clients take values of
# the fast and the gapless counter goes on above what the primary issued.

$node->backup('failover_base');
my $standby = PostgreSQL::Test::Cluster->new('counters_standby');
$standby->init_from_backup($node, 'failover_base', has_streaming => 1);
$standby->start;
$run = start_pgbench($node, 'before_failover', 4, 30, $script);
sleep 3;
$node->wait_for_catchup($standby);
$node->stop('immediate');
$run->{handle}->finish;
$standby->promote;
take_more($standby, 'after_failover', 'the promotion');
$standby->stop;
$node->start;

# ---------------------------------------------------------------------
# Many keys, a small cache.

$node->safe_psql(
	'postgres', q{
SELECT snowid_counter_create('many_no', mode => 'fast', block => 5);
CREATE UNLOGGED TABLE many_taken (key bigint, v bigint);
});
my $t0 = time;
$node->safe_psql('postgres',
	"INSERT INTO many_taken SELECT k, snowid_counter_next('many_no', k) FROM generate_series(1, $nkeys) k"
);
$node->safe_psql('postgres',
	"INSERT INTO many_taken SELECT k, snowid_counter_next('many_no', k) FROM generate_series(1, $nkeys) k"
);
note('two passes over ' . $nkeys . ' keys: ' . (time - $t0) . ' s');
is( $node->safe_psql(
		'postgres', q{
SELECT sum(n), count(*), bool_and(hi > lo)
FROM (SELECT key, count(*) n, min(v) lo, max(v) hi FROM many_taken
      WHERE key % 1000 = 7 GROUP BY key) k}),
	($nkeys / 1000 * 2) . '|' . ($nkeys / 1000) . '|t',
	'keys evicted and used again: no value twice, the second above the first (sample)');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) - count(DISTINCT (key, v)) FROM many_taken}),
	'0', "no value twice over $nkeys keys");
is( $node->safe_psql(
		'postgres', q{
SELECT keys <= 1000, capacity, evictions >= 2 * (} . $nkeys . q{ - 1000)
FROM snowid_counter_cache()}),
	't|1000|t',
	'at most snowid.counter_keys keys cached; the others evicted');
my $shmem = $node->safe_psql(
	'postgres', q{
SELECT sum(allocated_size) FROM pg_shmem_allocations
WHERE name IN ('snowid_counter', 'snowid_counter keys')});
cmp_ok($shmem, '<=', 1000 * 1024,
	"shared memory of the key cache within the setting ($shmem bytes for 1000 keys)");

# A key restarted by a transaction still open keeps its cache slot while
# 3,000 other keys pass through the cache of 1,000: its takers wait for
# that transaction (here until their statement_timeout), rather than
# asking the server process, which would find the row locked (55P03).
my ($mv_in, $mv_out, $mv_err) = ('', '', '');
my $mover = IPC::Run::start(
	[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-f', '-' ],
	'<', \$mv_in, '>', \$mv_out, '2>', \$mv_err);
$mv_in .= "BEGIN;\nSELECT snowid_counter_restart('fast_no', 'moved', 1000);\nSELECT 'restarted';\n";
my $mv_timer = IPC::Run::timer($PostgreSQL::Test::Utils::timeout_default);
$mv_timer->start;
$mover->pump until $mv_out =~ /restarted/ || $mv_timer->is_expired;
$node->safe_psql('postgres',
	"SELECT count(snowid_counter_next('many_no', 'other' || k)) FROM generate_series(1, 3000) k");
my ($mv_ret, $mv_stdout, $mv_stderr) = $node->psql('postgres',
	"SET statement_timeout = '3s'; SELECT snowid_counter_next('fast_no', 'moved')");
like($mv_stderr, qr/statement timeout/,
	"a taker of a key restarted by an open transaction waits for it, evicted or not ($mv_stderr)");
$mv_in .= "COMMIT;\n\\q\n";
$mover->finish;
is($node->safe_psql('postgres', "SELECT snowid_counter_next('fast_no', 'moved')"),
	'1000', 'once the restart commits, the key goes on at its new value');

# ---------------------------------------------------------------------
# pg_dump and restore.

$node->safe_psql('postgres', 'CREATE DATABASE shop');
$node->safe_psql(
	'shop', q{
CREATE EXTENSION snowid;
CREATE SCHEMA app;
SELECT snowid_counter_create('app.invoice_no', type => 'integer');
SELECT snowid_counter_create('app.order_no', mode => 'fast', block => 50);
CREATE ROLE counter_clerk;
GRANT USAGE ON SCHEMA app TO counter_clerk;
GRANT USAGE ON SEQUENCE app.invoice_no TO counter_clerk;
COMMENT ON SEQUENCE app.invoice_no IS 'invoice numbers per tenant';
CREATE TABLE app.invoice (tenant text, no integer, UNIQUE (tenant, no));
CREATE TABLE app.orders (shop text, no bigint, UNIQUE (shop, no));
INSERT INTO app.invoice SELECT t, snowid_counter_next('app.invoice_no', t)
  FROM generate_series(1, 5) i, unnest(ARRAY['acme', 'globex']) t;
INSERT INTO app.orders SELECT s, snowid_counter_next('app.order_no', s)
  FROM generate_series(1, 7) i, unnest(ARRAY['s1', 's2']) s;
});
my $dump = $node->basedir . '/shop.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('shop') ],
	'pg_dump of a database with counters');

my $fresh = snowid_node('restored', 1);
$fresh->start;
$fresh->safe_psql('postgres', 'CREATE ROLE counter_clerk; CREATE DATABASE shop');
$fresh->command_ok([ 'pg_restore', '-d', $fresh->connstr('shop'), $dump ],
	'pg_restore into a fresh server');
is( $fresh->safe_psql(
		'shop', q{SELECT counter, type, mode, block FROM snowid_counter ORDER BY 1::text}),
	"app.invoice_no|integer|gapless|1\napp.order_no|bigint|fast|50",
	'the restored database knows its counters');
is( $fresh->safe_psql(
		'shop', q{
SELECT has_sequence_privilege('counter_clerk', 'app.invoice_no', 'USAGE'),
       obj_description('app.invoice_no'::regclass, 'pg_class')}),
	't|invoice numbers per tenant',
	'its privileges and comment came along');
$fresh->safe_psql(
	'shop', q{
INSERT INTO app.invoice SELECT t, snowid_counter_next('app.invoice_no', t)
  FROM generate_series(1, 3) i, unnest(ARRAY['acme', 'globex']) t;
INSERT INTO app.orders SELECT s, snowid_counter_next('app.order_no', s)
  FROM generate_series(1, 3) i, unnest(ARRAY['s1', 's2']) s;
});
is( $fresh->safe_psql(
		'shop', q{
SELECT string_agg(tenant || ':' || array_to_string(nos, ','), ' ' ORDER BY tenant)
FROM (SELECT tenant, array_agg(no ORDER BY no) nos FROM app.invoice GROUP BY tenant) t}),
	'acme:1,2,3,4,5,6,7,8 globex:1,2,3,4,5,6,7,8',
	'gapless keys go on after the restore with no hole and no repeat');
is( $fresh->safe_psql(
		'shop', q{
SELECT string_agg(shop || ':' || array_to_string(nos, ','), ' ' ORDER BY shop)
FROM (SELECT shop, array_agg(no ORDER BY no) nos FROM app.orders GROUP BY shop) t}),
	's1:1,2,3,4,5,6,7,51,52,53 s2:1,2,3,4,5,6,7,51,52,53',
	'fast keys go on above the block reserved before the dump');
$fresh->stop;

# No background worker slot for the server process that reserves a fast
# counter's blocks: the error speaks of the counter, and says what to
# raise (until 2.1 it spoke of a registry).
my $starved = snowid_node('starved', 1, "max_worker_processes = 0\n");
$starved->start;
$starved->safe_psql('postgres',
	"CREATE EXTENSION snowid; SELECT snowid_counter_create('lot_no', mode => 'fast')"
);
for my $try (1, 2)
{
	my ($ret, $out, $err) = $starved->psql('postgres',
		"SELECT snowid_counter_next('lot_no', 'k')");
	like(
		$err,
		qr/ERROR:  could not reserve values for counter public\.lot_no: no (background worker slot free for a server process|server process) of database "postgres".*HINT:  Raise max_worker_processes: each database with fast counters needs/s,
		"without a worker slot, taking a fast counter's value fails naming the counter (call $try)"
	);
	unlike($err, qr/(?<!snowid\.)registry/, "and says nothing of a registry (call $try)");
}
$starved->stop;

# The server process stops while a caller waits for its answer (here, for
# a key's row that a superuser holds): the error speaks of the counter
# (until 2.1: "the registry's server process stopped"), nothing is handed
# out, and the next call starts a new process and goes on above the block.
my $stops = snowid_node('stops', 1, '');
$stops->start;
$stops->safe_psql('postgres',
	"CREATE EXTENSION snowid; SELECT snowid_counter_create('srv_no', mode => 'fast', block => 10); SELECT snowid_counter_next('srv_no', 'k')"
);
$stops->restart;			# the cache forgets the key; its row says 10
my $holder = $stops->background_psql('postgres');
$holder->query_safe(
	q{BEGIN; SELECT last FROM snowid_counter_key WHERE key = 'k' FOR UPDATE});
my ($w_in, $w_out, $w_err) = ('') x 3;
my $waiter = IPC::Run::start(
	[ 'psql', '-XAtq', '-d', $stops->connstr('postgres'), '-c', "SELECT snowid_counter_next('srv_no', 'k')" ],
	'<', \$w_in, '>', \$w_out, '2>', \$w_err);
# while the server process waits for the row (its lock_timeout is 1 s)
$stops->safe_psql('postgres', q{
DO $$
BEGIN
	FOR i IN 1 .. 3000 LOOP
		PERFORM pg_catalog.pg_terminate_backend(pid) FROM pg_catalog.pg_stat_activity
		 WHERE backend_type = 'snowid registry server' AND wait_event_type = 'Lock';
		IF FOUND THEN RETURN; END IF;
		PERFORM pg_catalog.pg_sleep(0.003);
		PERFORM pg_catalog.pg_stat_clear_snapshot();	-- see the change
	END LOOP;
	RAISE 'no server process waited for the row: %', (SELECT pg_catalog.string_agg(backend_type || ':' || coalesce(wait_event_type, '') || ':' || coalesce(wait_event, '') || ':' || left(query, 60), ' | ') FROM pg_catalog.pg_stat_activity);
END
$$});
$waiter->finish;
like(
	$w_err,
	qr/ERROR:  could not reserve values for counter public\.srv_no: the server process of its database stopped before it answered.*DETAIL:  No value of the counter was handed out/s,
	'a server process stopped while a caller waits: the error names the counter');
unlike($w_err, qr/(?<!snowid\.)registry/, 'and says nothing of a registry');
$holder->query_safe('COMMIT');
$holder->quit;
is($stops->safe_psql('postgres', "SELECT snowid_counter_next('srv_no', 'k') > 10"),
	't', 'the next call starts a new server process and goes on above the block');
$stops->stop;

done_testing();
