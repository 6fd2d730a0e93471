
# Copyright (c) snowid contributors
#
# Pools clean up after themselves (issue 22, item 9), on a member of a
# registry:
#
#  1. A database owner who is no superuser fills all 16 pool slots with
#     pooled tickets naming pools the registry does not have (each creation
#     fails, 42704, and leaves a slot behind); the slots count the
#     registry's 'unknown' answers as failures.  Another database then
#     creates a pooled ticket of a real pool and takes values: a slot of a
#     pool that does not exist is freed for it.  The rest are freed by the
#     worker once idle.
#  2. A pool whose start lies below 0 (as 1.4 registries accepted): the
#     member refuses it at ticket creation, saying why (55000), counts the
#     failure, and asks for no range: after several heartbeats the registry
#     has granted nothing of it (values lost: 0).
#  3. Dropped tickets free their pool's slot: DROP SEQUENCE of the last
#     ticket of a pool that holds nothing, and DROP DATABASE; a pool with
#     values in hand keeps them until a clean shutdown gives them back, and
#     is freed at the next start.  A freed slot does not come back after a
#     restart, nor after a crash (the WAL replayed from the last checkpoint
#     holds the pool's older states).
#  4. snowid_pool_holdings' rate decays while the pool is idle, also while
#     the registry is down (nothing updates it then): it falls and
#     time_left grows.
#
# The refusals of snowid_pool_create (a start below 1) are in sql/pool.sql.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;
use Time::HiRes qw(usleep);

my $reg = PostgreSQL::Test::Cluster->new('registry');
$reg->init;
$reg->start;
$reg->safe_psql(
	'postgres', q{
CREATE EXTENSION snowid;
SELECT snowid_pool_create('real');
SELECT snowid_pool_create('held');
SELECT snowid_pool_create('idle');
-- a pool as 1.4 accepted it: snowid_pool_create refuses this start now
INSERT INTO snowid_pool (name, type, start, maxvalue, next_value, upstream, created_at)
VALUES ('neg', 'integer', -1000000, 2147483647, -1000000, false, now());
});
my $conninfo =
  'host=' . $reg->host . ' port=' . $reg->port . ' dbname=postgres';

my $m = snowid_node('member', 1,
	"snowid.registry = '$conninfo'\nsnowid.lease = '60s'\n");
$m->start;
$m->safe_psql('postgres', 'CREATE EXTENSION snowid');
ok(wait_registry_state($m, 'ok'), 'the member holds its node');
$m->safe_psql(
	'postgres', q{
CREATE ROLE mallory LOGIN;
CREATE DATABASE attack OWNER mallory;
CREATE DATABASE app;
});
$m->safe_psql($_, 'CREATE EXTENSION snowid') for qw(attack app);

sub holdings
{
	my ($cols, $where) = @_;
	return $m->safe_psql('postgres',
		"SELECT $cols FROM snowid_pool_holdings()"
		  . ($where ? " WHERE $where" : ''));
}

# ---- 1. ----
my $refused = 0;
for my $i (1 .. 16)
{
	my ($rc, $out, $err) = $m->psql('attack',
		"\\set VERBOSITY verbose\nSELECT snowid_ticket_create('t$i', pool => 'nope$i')",
		extra_params => [ '-U', 'mallory' ]);
	$refused++ if $err =~ /42704: pool "nope$i" does not exist in the registry/;
}
is($refused, 16, 'a database owner names 16 pools the registry does not have');
is(holdings('count(*)'), '16', '... which fills the 16 pool slots');
is(holdings('count(*)', "state = 'unknown' AND failures >= 1"),
	'16', '... each counting the registry\'s answer as a failure');

my ($rc, $out, $err) = $m->psql('app',
	"\\set VERBOSITY verbose\nSELECT snowid_ticket_create('orders_id', pool => 'real')"
);
is($rc, 0, 'another database then creates a pooled ticket of a real pool')
  or diag $err;
($rc, $out, $err) = $m->psql('app',
	"SELECT count(*) FROM (SELECT snowid_ticket_next('orders_id') FROM generate_series(1, 100)) s"
);
is($out, '100', '... and takes values of it') or diag $err;
ok( $m->poll_query_until(
		'postgres',
		"SELECT count(*) = 0 FROM snowid_pool_holdings() WHERE pool LIKE 'nope%'"),
	'the slots of pools the registry does not have are freed once idle');
is(holdings('pool'), 'real', '... the real pool keeps its slot');

# ---- 2. ----
($rc, $out, $err) = $m->psql('app',
	"\\set VERBOSITY verbose\nSELECT snowid_ticket_create('neg_id', pool => 'neg')");
like(
	$err,
	qr/55000: pool "neg" cannot serve this server.*starts at -1000000/s,
	'a pool starting below 0: the ticket is refused, saying why');
ok( $m->poll_query_until(
		'postgres',
		"SELECT failures >= 1 AND state = 'unusable' FROM snowid_pool_holdings() WHERE pool = 'neg'"
	),
	'... the member counts it as a failure');
# several heartbeats (one a second), a take among them
$m->psql('app', "SELECT snowid_ticket_next('neg_id')");
sleep 4;
is( $reg->safe_psql(
		'postgres',
		q{SELECT p.next_value || '|' || (SELECT count(*) FROM snowid_pool_range r WHERE r.pool = 'neg')
		    FROM snowid_pool p WHERE p.name = 'neg'}),
	'-1000000|0',
	'... and the registry granted nothing of it: no value lost');

# ---- 3. ----
# No value taken: the slot holds nothing once its last ticket is dropped.
$m->safe_psql('app', "SELECT snowid_ticket_create('idle_a', pool => 'idle')");
$m->safe_psql('app', "SELECT snowid_ticket_create('idle_b', pool => 'idle')");
$m->safe_psql('app', 'DROP SEQUENCE idle_a');
sleep 2;
is(holdings('count(*)', "pool = 'idle'"),
	'1', 'a pool keeps its slot while a ticket of it remains');
$m->safe_psql('app', 'DROP SEQUENCE idle_b');
ok( $m->poll_query_until(
		'postgres',
		"SELECT count(*) = 0 FROM snowid_pool_holdings() WHERE pool = 'idle'"),
	'DROP SEQUENCE of its last ticket frees the slot of a pool holding nothing'
);
$m->safe_psql('postgres', 'CREATE DATABASE gone');
$m->safe_psql('gone',
	"CREATE EXTENSION snowid; SELECT snowid_ticket_create('g', pool => 'idle')");
is(holdings('count(*)', "pool = 'idle'"), '1', 'a ticket in another database takes it again');
$m->safe_psql('postgres', 'DROP DATABASE gone');
ok( $m->poll_query_until(
		'postgres',
		"SELECT count(*) = 0 FROM snowid_pool_holdings() WHERE pool = 'idle'"),
	'DROP DATABASE frees it');

# Values in hand: kept, until a clean shutdown gives them back.
$m->safe_psql('app',
	"SELECT snowid_ticket_create('held_id', pool => 'held'); SELECT snowid_ticket_next('held_id') FROM generate_series(1, 5)"
);
$m->safe_psql('app', 'DROP SEQUENCE held_id');
sleep 17;    # past the idle time
is(holdings('values_in_hand > 0', "pool = 'held'"),
	't', 'a pool with values in hand keeps them when its last ticket is dropped');
$m->restart;
ok(wait_registry_state($m, 'ok'), 'the member holds its node after a restart');
ok( $m->poll_query_until(
		'postgres',
		"SELECT count(*) = 0 FROM snowid_pool_holdings() WHERE pool = 'held'"),
	'... the clean shutdown gave its values back, and the slot is freed');
is( $reg->safe_psql('postgres',
		q{SELECT count(*) FROM snowid_pool_range WHERE pool = 'held' AND returned_from IS NOT NULL}),
	'1', '... the registry has the tail back');
$m->stop('immediate');
$m->start;
is(holdings('string_agg(pool, \',\' ORDER BY pool)'),
	'real', 'a crash restart brings no freed slot back (replayed from the WAL)');
$m->restart;
is(holdings('string_agg(pool, \',\' ORDER BY pool)'),
	'real', '... nor does a restart');

# ---- 4. ----
ok(wait_registry_state($m, 'ok'), 'the member holds its node');
# a slow load: some ten values a second, a range of 10,000: minutes left
for (1 .. 6)
{
	$m->safe_psql('app',
		"SELECT count(snowid_ticket_next('orders_id')) FROM generate_series(1, 20)"
	);
	usleep(500_000);
}
ok( $m->poll_query_until(
		'postgres',
		"SELECT rate > 0 AND time_left IS NOT NULL FROM snowid_pool_holdings() WHERE pool = 'real'"
	),
	'the pool shows a rate and the time left at it');
$reg->stop;
my ($rate1, $left1) = split /\|/,
  holdings('rate || \'|\' || extract(epoch FROM time_left)', "pool = 'real'");
sleep 6;
my ($rate2, $left2) = split /\|/,
  holdings('rate || \'|\' || extract(epoch FROM time_left)', "pool = 'real'");
note "rate $rate1 -> $rate2, time_left $left1 -> $left2";
ok($rate2 < $rate1 * 0.99, 'idle, with the registry down, the rate falls');
ok($left2 > $left1, '... and time_left grows');
$reg->start;

$m->stop;
$reg->stop;
done_testing();
