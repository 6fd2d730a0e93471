
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
#     worker once idle, as is the slot of a real pool whose only ticket's
#     creation was rolled back.
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
#     time_left grows.  snowid_health() says the pool is ok while the
#     registry answers, whatever its time_left (minutes here), and while it
#     does not, how long the values in hand last within the lease (60 s:
#     critical); ok again once it is back.
#  5. An upstream pool whose own registry has no such pool is freed too
#     (part of 3.).
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

my ($reg, $conninfo) = registry(sql => q{
SELECT snowid_pool_create('real');
SELECT snowid_pool_create('held');
SELECT snowid_pool_create('idle');
SELECT snowid_pool_create('rolled');
-- a pool as 1.4 accepted it: snowid_pool_create refuses this start now
INSERT INTO snowid_pool (name, type, start, maxvalue, next_value, upstream, created_at)
VALUES ('neg', 'integer', -1000000, 2147483647, -1000000, false, now());
});

my $m = member('member', 1, registry => $conninfo, lease => '60s');
wait_registry_state($m, 'ok') or die 'the member does not hold its node';
$m->safe_psql(
	'postgres', q{
CREATE ROLE mallory LOGIN;
CREATE DATABASE attack OWNER mallory;
CREATE DATABASE app;
});
$m->safe_psql($_, 'CREATE EXTENSION snowid') for qw(attack app);

# Columns of snowid_pool_holdings() (an error is an empty answer: each
# assertion fails on its own).
sub holdings
{
	my ($cols, $where) = @_;
	my ($rc, $out, $err) = $m->psql('postgres',
		"SELECT $cols FROM snowid_pool_holdings()"
		  . ($where ? " WHERE $where" : ''));
	diag $err if $rc != 0;
	return $out;
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
# (the attack as 1.4 allowed it: 16 refusals, 16 slots held)
is( $refused . '|'
	  . holdings('count(*) || \'|\' || count(*) FILTER (WHERE state = \'unknown\' AND failures >= 1)'),
	'16|16|16',
	'a database owner fills the 16 pool slots with pools the registry does not have; each counts the registry\'s answer as a failure'
);

my ($rc, $out, $err) = $m->psql('app',
	"\\set VERBOSITY verbose\nSELECT snowid_ticket_create('orders_id', pool => 'real')"
);
is($rc, 0, 'another database then creates a pooled ticket of a real pool')
  or diag $err;
($rc, $out, $err) = $m->psql('app',
	"SELECT count(*) FROM (SELECT snowid_ticket_next('orders_id') FROM generate_series(1, 100)) s"
);
is($out, '100', '... and takes values of it') or diag $err;
# a creation rolled back leaves no user of its pool behind
$m->safe_psql('app',
	"BEGIN; SELECT snowid_ticket_create('rb', pool => 'rolled'); ROLLBACK;");
ok( $m->poll_query_until(
		'postgres',
		"SELECT count(*) = 0 FROM snowid_pool_holdings() WHERE pool LIKE 'nope%' OR pool = 'rolled'"
	),
	'the slots of pools the registry does not have, and of a pool whose ticket creation rolled back, are freed once idle'
);
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
# No value taken: the slot holds nothing once its last ticket is dropped
# (kept while another ticket of it remains, past the idle time).
$m->safe_psql('app', "SELECT snowid_ticket_create('idle_a', pool => 'idle')");
$m->safe_psql('app', "SELECT snowid_ticket_create('idle_b', pool => 'idle')");
$m->safe_psql('app', 'DROP SEQUENCE idle_a');
# (and for the part on values in hand below, in the same wait: a pool with
# values in hand whose only ticket is dropped)
$m->safe_psql('app',
	"SELECT snowid_ticket_create('held_id', pool => 'held'); SELECT snowid_ticket_next('held_id') FROM generate_series(1, 5)"
);
$m->safe_psql('app', 'DROP SEQUENCE held_id');
sleep 17;    # past the idle time
my $kept = holdings('count(*)', "pool = 'idle'");
$m->safe_psql('app', 'DROP SEQUENCE idle_b');
ok( $kept eq '1' && $m->poll_query_until(
		'postgres',
		"SELECT count(*) = 0 FROM snowid_pool_holdings() WHERE pool = 'idle'"),
	'DROP SEQUENCE of its last ticket (not before) frees the slot of a pool holding nothing'
);
$m->safe_psql('postgres', 'CREATE DATABASE gone');
$m->safe_psql('gone',
	"CREATE EXTENSION snowid; SELECT snowid_ticket_create('g', pool => 'idle')");
$kept = holdings('count(*)', "pool = 'idle'");
$m->safe_psql('postgres', 'DROP DATABASE gone');
ok( $kept eq '1' && $m->poll_query_until(
		'postgres',
		"SELECT count(*) = 0 FROM snowid_pool_holdings() WHERE pool = 'idle'"),
	'DROP DATABASE frees the slot its ticket took again');

# An upstream pool (of a datacenter registry) whose own registry has no
# such pool: its slot is freed too (sql/pool.sql makes one when make
# installcheck runs on a member).
$m->safe_psql('postgres', "SELECT snowid_pool_create('up_t', upstream => true)");
$kept = holdings('count(*)', "pool = 'up_t'");
ok( $kept eq '1' && $m->poll_query_until(
		'postgres',
		"SELECT count(*) = 0 FROM snowid_pool_holdings() WHERE pool = 'up_t'"),
	'the slot of an upstream pool is freed once its own registry has said it has no such pool'
);
$m->safe_psql('postgres', "DELETE FROM snowid_pool WHERE name = 'up_t'");

# Values in hand (the pool 'held', set up above): kept past the idle
# time, until a clean shutdown gives them back.
$kept = holdings('values_in_hand > 0', "pool = 'held'");
$m->restart;
wait_registry_state($m, 'ok') or die 'the member does not hold its node';
ok( $kept eq 't'
	  && $m->poll_query_until(
		'postgres',
		"SELECT count(*) = 0 FROM snowid_pool_holdings() WHERE pool = 'held'")
	  && $reg->safe_psql('postgres',
		q{SELECT count(*) FROM snowid_pool_range WHERE pool = 'held' AND returned_from IS NOT NULL}
	  ) eq '1',
	'a pool with values in hand keeps them when its last ticket is dropped; a clean shutdown gives them back, and the slot is freed at the next start'
);
$m->stop('immediate');
$m->start;
is(holdings('string_agg(pool, \',\' ORDER BY pool)'),
	'real', 'a crash restart brings no freed slot back (replayed from the WAL)');
$m->restart;
is(holdings('string_agg(pool, \',\' ORDER BY pool)'),
	'real', '... nor does a restart');

# ---- 4. ----
wait_registry_state($m, 'ok') or die 'the member does not hold its node';
# a slow load in blocks of 10 (the rate counts the values handed to
# tickets, a block at a time): some ten values a second, a range of
# 10,000, minutes left
$m->safe_psql('app',
	"SELECT snowid_ticket_create('slow_id', pool => 'real', block => 10)");
for (1 .. 6)
{
	$m->safe_psql('app',
		"SELECT count(snowid_ticket_next('slow_id')) FROM generate_series(1, 20)"
	);
	usleep(500_000);
}
$m->poll_query_until(
	'postgres',
	"SELECT rate > 0 AND time_left IS NOT NULL FROM snowid_pool_holdings() WHERE pool = 'real'"
) or die 'the pool shows no rate';
like(
	$m->safe_psql('postgres',
		q{SELECT status || '|' || coalesce(issues_for::text, 'null') || '|' || reason FROM snowid_health() WHERE name = 'real'}),
	qr/^ok\|null\|pool real holds \d+ values, and the registry refills it at half use$/,
	'snowid_health(): while the registry answers, the pool is ok, whatever its time_left ('
	  . holdings('time_left', "pool = 'real'") . ')');
$reg->stop;
my ($rate1, $left1) = split /\|/,
  holdings('rate || \'|\' || extract(epoch FROM time_left)', "pool = 'real'");
sleep 6;
my ($rate2, $left2) = split /\|/,
  holdings('rate || \'|\' || extract(epoch FROM time_left)', "pool = 'real'");
note "rate $rate1 -> $rate2, time_left $left1 -> $left2";
ok($rate2 < $rate1 * 0.99, 'idle, with the registry down, the rate falls');
ok($left2 > $left1, '... and time_left grows');
wait_registry_state($m, 'unreachable') or die 'the member does not see the registry gone';
my ($h_status, $h_left, $h_reason) = split /\|/,
  $m->safe_psql('postgres',
	q{SELECT status || '|' || coalesce(extract(epoch FROM issues_for)::bigint::text, 'null') || '|' || reason FROM snowid_health() WHERE name = 'real'});
ok($h_status eq 'critical' && $h_left ne 'null' && $h_left <= 60,
	"snowid_health(): with the registry down, the pool is critical, its values lasting at most the lease's 60 s ($h_status, $h_left s)");
like($h_reason,
	qr/^the registry does not answer: pool real hands out the \d+ values it holds for [^|]+ \(at its rate, within this server's lease\), then none$/,
	'... saying how long they last');
$reg->start;
wait_registry_state($m, 'ok') or die 'the member does not hold its node again';
like($m->safe_psql('postgres', q{SELECT status FROM snowid_health() WHERE name = 'real'}),
	qr/^ok$/, 'snowid_health(): the pool is ok again once the registry is back');

$m->stop;
$reg->stop;
done_testing();
