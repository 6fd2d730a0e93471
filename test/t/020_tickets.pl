# Copyright (c) snowid contributors
#
# Ticket sequences under load and across failures:
# - concurrent pgbench clients take many values (small blocks, so block
#   boundaries are crossed all the time), with rolled-back transactions
#   mixed in: no value twice, per-client strict order;
# - kill -9 of the server right after values escaped from a block that a
#   rolled-back transaction reserved: after the restart, no value reused;
# - three servers as shards 0, 1, 2 of 3: disjoint values, each carrying
#   its shard;
# - pg_dump of a database using tickets, restored into a fresh server:
#   it continues above every value the old one issued.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;
use Time::HiRes qw(usleep);

sub new_node
{
	my ($name, $extra) = @_;
	my $node = snowid_node($name, 1,
		"restart_after_crash = on\nwal_writer_delay = 10s\n" . ($extra // ''));
	$node->start;
	return $node;
}

# ---------------------------------------------------------------------
# Concurrent clients with rollbacks.

my $node = new_node('tickets');
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION snowid;
SELECT snowid_ticket_create('load_t', 0, 1, 7);
CREATE TABLE ids (seq bigserial, client int, v bigint NOT NULL UNIQUE);
CREATE TABLE rolled (v bigint NOT NULL);
});

my $clients = 4;
my $txns = 300;
my $per_txn = 20;

$node->pgbench(
	"-n -c $clients -j 2 -t $txns",
	0,
	[qr{processed: @{[ $clients * $txns ]}/@{[ $clients * $txns ]}}],
	[qr{^$}],
	'pgbench: concurrent snowid_ticket_next() with rollbacks',
	{
		'020_take.sql@3' =>
		  "INSERT INTO ids (client, v) SELECT :client_id, snowid_ticket_next('load_t') FROM generate_series(1, $per_txn);\n",
		'020_rollback.sql@1' => q{BEGIN;
SELECT snowid_ticket_next('load_t') AS v \gset
INSERT INTO ids (client, v) SELECT :client_id, snowid_ticket_next('load_t') FROM generate_series(1, 5);
ROLLBACK;
INSERT INTO rolled (v) VALUES (:v);
}
	});

my $taken = $node->safe_psql('postgres', 'SELECT count(*) FROM ids');
my $rolled = $node->safe_psql('postgres', 'SELECT count(*) FROM rolled');
cmp_ok($taken, '>', 0, "values taken ($taken) and rolled back ($rolled)");
is( $node->safe_psql(
		'postgres',
		'SELECT count(*) - count(DISTINCT v) FROM (SELECT v FROM ids UNION ALL SELECT v FROM rolled) s'
	),
	'0',
	'no value issued twice, counting values of rolled-back transactions');
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) FROM (
			SELECT v, lag(v) OVER (PARTITION BY client ORDER BY seq) AS prev FROM ids) s
		  WHERE v <= prev}),
	'0',
	'values strictly increase per client in issue order');

# ---------------------------------------------------------------------
# kill -9 after values escaped from a block reserved by a rolled-back
# transaction (commits without an XID do not flush WAL; the reservation
# must be durable anyway).

$node->safe_psql(
	'postgres', q{
SELECT snowid_ticket_create('crash_t', 0, 1, 1000000);
BEGIN; SELECT snowid_ticket_next('crash_t'); ROLLBACK;
});
my $escaped = $node->safe_psql('postgres', "SELECT snowid_ticket_next('crash_t')");
my $load_max = $node->safe_psql('postgres', "SELECT snowid_ticket_next('load_t')");
my $postmaster = $node->{_pid};
$node->kill9;
# kill9 does not wait: wait for the postmaster to go, then start again
# (retrying while its orphaned backends still hold the shared memory).
for (my $i = 0; $i < 300 && kill(0, $postmaster); $i++)
{
	usleep(100_000);
}
my $started = 0;
for (my $i = 0; $i < 30 && !$started; $i++)
{
	$started = $node->start(fail_ok => 1);
	usleep(500_000) unless $started;
}
ok($started, 'server restarted after kill -9');

my $after = $node->safe_psql('postgres', "SELECT snowid_ticket_next('crash_t')");
cmp_ok($after, '>', $escaped,
	"after kill -9, crash_t continues above the escaped value ($after > $escaped)");
my $load_after = $node->safe_psql('postgres', "SELECT snowid_ticket_next('load_t')");
cmp_ok($load_after, '>', $load_max,
	"after kill -9, load_t continues above its last value ($load_after > $load_max)");
is( $node->safe_psql(
		'postgres',
		"SELECT count(*) FROM ids WHERE v >= $load_after"),
	'0',
	'no value after the restart was issued before it');

# A crash of one backend (shared memory re-initialised) skips, never reuses.
$node->safe_psql('postgres',
	"INSERT INTO ids (client, v) SELECT 99, snowid_ticket_next('load_t') FROM generate_series(1, 50)");
my $victim = $node->background_psql('postgres');
my $pid = $victim->query_safe('SELECT pg_backend_pid()');
kill 'KILL', $pid;
$victim->quit;
$node->poll_query_until('postgres', undef, '');
ok( $node->poll_query_until(
		'postgres',
		"WITH i AS (INSERT INTO ids (client, v) SELECT 98, snowid_ticket_next('load_t') FROM generate_series(1, 50) RETURNING 1) SELECT count(*) = 50 FROM i",
		't'),
	'values after a backend crash');
is( $node->safe_psql(
		'postgres',
		'SELECT count(*) FROM ids WHERE client = 98 AND v <= (SELECT max(v) FROM ids WHERE client = 99)'),
	'0',
	'after the crash restart, values continue above those issued before');

# ---------------------------------------------------------------------
# pg_dump of a database that uses tickets, restored into a fresh server.

$node->safe_psql('postgres', 'CREATE DATABASE shop');
$node->safe_psql(
	'shop', q{
CREATE EXTENSION snowid;
CREATE SCHEMA app;
SELECT snowid_ticket_create('app.orders_id', 1, 2, 10, 1, 'integer');
CREATE TABLE app.orders (id integer PRIMARY KEY DEFAULT snowid_ticket_next('app.orders_id'), note text);
INSERT INTO app.orders (note) SELECT 'before dump' FROM generate_series(1, 25);
});
my $dump = $node->basedir . '/shop.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('shop') ],
	'pg_dump of a database with tickets');
my $max_before = $node->safe_psql('shop', 'SELECT max(id) FROM app.orders');

my $fresh = new_node('restored', "snowid.ticket_slots = 2\n");
$fresh->safe_psql('postgres', 'CREATE DATABASE shop');
$fresh->command_ok([ 'pg_restore', '-d', $fresh->connstr('shop'), $dump ],
	'pg_restore into a fresh server');
is( $fresh->safe_psql(
		'shop', q{SELECT ticket, shard, shards, block, type FROM snowid_tickets}),
	'app.orders_id|1|2|10|integer',
	'the restored database knows its ticket sequence');
$fresh->safe_psql('shop',
	q{INSERT INTO app.orders (note) SELECT 'after restore' FROM generate_series(1, 40)});
is( $fresh->safe_psql(
		'shop',
		qq{SELECT count(*), count(DISTINCT id),
		          min(id) FILTER (WHERE note = 'after restore') > $max_before,
		          bool_and(snowid_ticket_shard('app.orders_id', id) = 1)
		   FROM app.orders}),
	'65|65|t|t',
	'the restored server continues above every dumped value, without collisions');

# A full slot table: a clear error with a hint; DROP frees a slot.
$fresh->safe_psql('postgres', q{
CREATE EXTENSION snowid;
SELECT snowid_ticket_create('s1'), snowid_ticket_create('s2');
SELECT snowid_ticket_next('s1');
});
my ($ret, $out, $err) = $fresh->psql('postgres', q{\set VERBOSITY verbose
SELECT snowid_ticket_next('s2')});
like($err, qr/ERROR:\s+53400: no free snowid ticket slot for "public.s2".*HINT:\s+Raise snowid.ticket_slots/s,
	'slot table full: error 53400 with a hint');
is( $fresh->safe_psql('postgres', q{DROP SEQUENCE s1; SELECT snowid_ticket_next('s2')}),
	'1', 'DROP of a ticket sequence frees its slot');
is( $fresh->safe_psql('postgres', q{SET client_min_messages = warning; DROP EXTENSION snowid CASCADE; CREATE EXTENSION snowid;
SELECT snowid_ticket_create('s3'); SELECT snowid_ticket_next('s3')}),
	"s3\n1", 'DROP EXTENSION frees the slots of the database');
$fresh->stop;

# ---------------------------------------------------------------------
# Three servers as shards 0, 1, 2 of 3.

my @shards;
my %values;
for my $s (0 .. 2)
{
	my $n = new_node("shard$s");
	$n->safe_psql(
		'postgres', qq{
CREATE EXTENSION snowid;
SELECT snowid_ticket_create('orders_id', $s, 3, 10);
});
	$values{$s} = [
		split /\n/,
		$n->safe_psql('postgres',
			"SELECT snowid_ticket_next('orders_id') FROM generate_series(1, 200)")
	];
	push @shards, $n;
}
my $list = join(',', map { my $s = $_; map { "($s,$_)" } @{ $values{$s} } } 0 .. 2);
$shards[0]->safe_psql('postgres', "CREATE TABLE allv AS SELECT * FROM (VALUES $list) AS t(shard, v)");
is($shards[0]->safe_psql('postgres', 'SELECT count(*), count(DISTINCT v) FROM allv'),
	'600|600', 'three shards: 600 values, all distinct');
is( $shards[0]->safe_psql(
		'postgres',
		q{SELECT count(*) FROM allv WHERE snowid_ticket_shard('orders_id', v) <> shard}),
	'0',
	'snowid_ticket_shard tells the server that issued each value');
is( $shards[0]->safe_psql(
		'postgres', q{SELECT string_agg(v::text, ',' ORDER BY v) FROM (SELECT v FROM allv ORDER BY v LIMIT 6) s}),
	'1,2,3,4,5,6',
	'the shards interleave without gaps at the start');
$_->stop for @shards;

$node->stop;

done_testing();
