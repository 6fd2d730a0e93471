# Copyright (c) snowid contributors
#
# Counters per key on Citus, attacked by roles that are not superusers:
# - alice owns a distributed table and a counter co-located with it (her
#   counter's state table is granted to her with DELETE and GRANT OPTION);
#   the counter is handed to bob (ALTER SEQUENCE ... OWNER TO on every
#   node).  alice may then not drop a key through snowid, nor delete its
#   row in the state table: either would make bob's key start over and
#   give its numbers again.  bob, granted the state table, takes the
#   next number and may drop the key;
# - clerk, a taker (USAGE on the counter; SELECT, INSERT, UPDATE on its
#   state table, as the README says), writes the state table directly:
#   a key started below the counter's start, or above it, or moved by
#   more than one value (each a hole in a gapless counter, or a key made
#   unusable) is refused (it needs UPDATE on the counter, as
#   snowid_counter_restart does); moved by one it passes;
# - the statements on the state table run as the caller, parsed in its
#   search_path: a schema first in it with operators = and + on bigint
#   (always true, a minus) is never used, from the coordinator or a
#   worker.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;
use SnowidCitus;

citus_skip_unless_available();

my $c = citus_cluster(workers => 1, snowid => 1);
my $coord = $c->{coordinator};
my ($w1) = @{ $c->{workers} };
my ($rc, $out, $err);

$coord->safe_psql(
	'postgres', q{
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
GRANT CREATE ON SCHEMA public TO alice, bob;
});
$coord->safe_psql(
	'postgres', q{
SET ROLE alice;
CREATE TABLE inv (tenant bigint, no bigint, PRIMARY KEY (tenant, no));
SELECT create_distributed_table('inv', 'tenant');
SELECT snowid_counter_create('public.inv_no', colocate_with => 'public.inv');
});
$w1->safe_psql('postgres',
	q{SET ROLE alice; SELECT snowid_counter_create('public.inv_no', colocate_with => 'public.inv')});
my $state = $coord->safe_psql('postgres',
	q{SELECT state::text FROM snowid_counter WHERE counter = 'inv_no'::regclass});
note "state table $state";
is( $coord->safe_psql(
		'postgres',
		q{SET ROLE alice; INSERT INTO inv VALUES (7, snowid_counter_next('inv_no', 7)), (7, snowid_counter_next('inv_no', 7)) RETURNING no}),
	"1\n2", 'alice numbers tenant 7: 1, 2');

# the counter (and the table) go to bob, on every node
for my $n ($coord, $w1)
{
	$n->safe_psql('postgres',
		q{ALTER SEQUENCE inv_no OWNER TO bob});
}
$coord->safe_psql('postgres', q{ALTER TABLE inv OWNER TO bob});

($rc, $out, $err) = $coord->psql('postgres',
	q{SET ROLE alice; SELECT snowid_counter_drop_key('inv_no', 7)});
like($err, qr/permission denied for counter/,
	'alice, no longer the owner, may not drop a key');
($rc, $out, $err) = $coord->psql('postgres',
	qq{SET ROLE alice; DELETE FROM $state WHERE key = 7});
like($err, qr/only the owner of a counter may drop its keys/,
	"nor delete the key's row in the state table (the shard's trigger)");
$coord->safe_psql('postgres',
	qq{GRANT SELECT, INSERT, UPDATE, DELETE ON $state TO bob});
is( $coord->safe_psql(
		'postgres',
		q{SET ROLE bob; INSERT INTO inv VALUES (7, snowid_counter_next('inv_no', 7)) RETURNING no}),
	'3', "bob's next number of tenant 7 is 3");
is( $w1->safe_psql(
		'postgres', q{SET ROLE bob; SELECT snowid_counter_drop_key('inv_no', 7)}),
	't', 'bob, the owner, drops the key (from a worker)');

# ---- a taker writes the state table directly
$coord->safe_psql('postgres',
	qq{CREATE ROLE clerk LOGIN; GRANT ALL ON inv TO clerk;
	   GRANT SELECT, INSERT, UPDATE ON $state TO clerk});
$_->safe_psql('postgres', q{GRANT USAGE ON SEQUENCE inv_no TO clerk})
  for ($coord, $w1);
is( $w1->safe_psql(
		'postgres',
		q{SET ROLE clerk; INSERT INTO inv VALUES (20, snowid_counter_next('inv_no', 20)) RETURNING no}),
	'1', 'clerk takes tenant 20\'s first number');
for my $try (
	[ "INSERT INTO $state VALUES (21, -5)", qr/cannot start below the counter's start/, 'below the start' ],
	[ "INSERT INTO $state VALUES (22, 1000)", qr/permission denied to move key "22" of counter public\.inv_no forward/, 'above the start' ],
	[ "INSERT INTO $state VALUES (20, 1000) ON CONFLICT (key) DO UPDATE SET last = excluded.last", qr/permission denied to move key "20"/, 'an upsert by more than one' ],
	[ "UPDATE $state SET last = 1000000 WHERE key = 20", qr/permission denied to move key "20"/, 'an update by more than one' ])
{
	($rc, $out, $err) = $coord->psql('postgres', "SET ROLE clerk; $try->[0]");
	like($err, $try->[1], "clerk's direct write of a key $try->[2] is refused");
}
$coord->safe_psql('postgres', qq{SET ROLE clerk; UPDATE $state SET last = last + 1 WHERE key = 20});
is( $coord->safe_psql(
		'postgres',
		q{SET ROLE clerk; INSERT INTO inv VALUES (20, snowid_counter_next('inv_no', 20)) RETURNING no}),
	'3', 'a move by one passes (a value taken without its row: a gap, never a repeat)');
($rc, $out, $err) = $coord->psql('postgres',
	q{SET ROLE clerk; SELECT snowid_counter_restart('inv_no', 20, 100)});
like($err, qr/permission denied for counter inv_no/, 'clerk may not restart the key');
$coord->safe_psql('postgres', q{SELECT snowid_counter_restart('inv_no', 21, 50)});
is( $coord->safe_psql(
		'postgres',
		q{SET ROLE clerk; SELECT snowid_counter_next('inv_no', 21)}),
	'50', 'the owner\'s restart of a new key passes the trigger');

# ---- a hostile search_path (the statements on the state table run as
# the caller)
# (Citus sends the schema and functions to the workers, not operators)
$coord->safe_psql(
	'postgres', q{
CREATE SCHEMA evil;
CREATE FUNCTION evil.always(bigint, bigint) RETURNS boolean LANGUAGE sql AS 'SELECT true';
CREATE FUNCTION evil.minus(bigint, bigint) RETURNS bigint LANGUAGE sql AS 'SELECT $1 - $2';
CREATE OPERATOR evil.= (leftarg = bigint, rightarg = bigint, function = evil.always);
CREATE OPERATOR evil.+ (leftarg = bigint, rightarg = bigint, function = evil.minus);
CREATE OPERATOR evil.<= (leftarg = bigint, rightarg = bigint, function = evil.always);
GRANT USAGE ON SCHEMA evil TO PUBLIC;
});
$w1->safe_psql(
	'postgres', q{
CREATE OPERATOR evil.= (leftarg = bigint, rightarg = bigint, function = evil.always);
CREATE OPERATOR evil.+ (leftarg = bigint, rightarg = bigint, function = evil.minus);
CREATE OPERATOR evil.<= (leftarg = bigint, rightarg = bigint, function = evil.always);
});
for my $n ($coord, $w1)
{
	is( $n->safe_psql(
			'postgres',
			q{SELECT count(*) FROM pg_operator WHERE oprnamespace = 'evil'::regnamespace}),
		'3', 'operators planted on node ' . $n->name);
}
is( $coord->safe_psql(
		'postgres',
		q{SET search_path = evil, public; SET ROLE bob;
		  INSERT INTO inv VALUES (8, snowid_counter_next('inv_no', 8)), (8, snowid_counter_next('inv_no', 8)) RETURNING no}),
	"1\n2", 'under a hostile search_path, the coordinator numbers tenant 8: 1, 2');
is( $w1->safe_psql(
		'postgres',
		q{SET search_path = evil, public; SET ROLE bob;
		  SELECT snowid_counter_restart('inv_no', 8, 10);
		  INSERT INTO inv VALUES (8, snowid_counter_next('inv_no', 8)) RETURNING no}),
	"\n10", 'and a worker restarts it and goes on at 10');
is( $coord->safe_psql(
		'postgres',
		q{SET search_path = evil, public; SELECT snowid_counter_current('inv_no', 8), snowid_counter_current('inv_no', 9)}),
	'10|', 'the current values read right');

done_testing();
