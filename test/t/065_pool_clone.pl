
# Copyright (c) snowid contributors
#
# Pooled tickets on a copy of a member.  A pg_basebackup clone of member P
# carries P's $PGDATA/snowid.pools: the same ranges, persisted at the same
# point.  Started as a primary with P's node ID, the registry refuses it
# ('conflict'), and it must then hand out no pool value either (values are
# issued only under the node lease, like IDs), or it would issue the very
# values P issues next.  Checked: every try on the clone fails with 55000
# saying the server does not hold its node, P goes on, and no value is
# shared.  It gave up the copied ranges at its first start (backup_label):
# once given a node ID of its own, it issues values of its own ranges only.
# A restart of P (clean) and a crash restart continue without reusing a
# value.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

my ($reg, $regconn) = registry(sql => "SELECT snowid_pool_create('orders', 'integer', 1)");

my $P = member('P', 5,
	registry => $regconn,
	lease => '60s',
	init => { allows_streaming => 1 });
wait_state($P, 'ok', die => 1);
$P->safe_psql('postgres', q{
SELECT snowid_ticket_create('t', pool => 'orders', block => 10);
CREATE TABLE vals(v bigint NOT NULL);
INSERT INTO vals SELECT snowid_ticket_next('t') FROM generate_series(1, 2000);
});
is($P->safe_psql('postgres', 'SELECT count(DISTINCT v) FROM vals'),
	'2000', 'P issued 2000 distinct pool values');

$P->backup('b');
ok(-f $P->backup_dir . '/b/snowid.pools', 'the base backup carries snowid.pools');

my $clone = PostgreSQL::Test::Cluster->new('clone');
$clone->init_from_backup($P, 'b');    # no standby.signal: a primary
$clone->start;
wait_state($clone, 'conflict', die => 1);
is( $clone->safe_psql('postgres',
		'SELECT coalesce(sum(ranges), 0) FROM snowid_pool_holdings()'),
	'0', "the clone holds none of P's ranges");

# P goes on while the clone tries.
$P->safe_psql('postgres',
	'INSERT INTO vals SELECT snowid_ticket_next(\'t\') FROM generate_series(1, 2000)');
my ($tries, $refused, @clone_vals) = (0, 0);
for my $i (1 .. 20)
{
	my ($ret, $out, $err) = $clone->psql('postgres',
		"\\set VERBOSITY verbose\nSELECT snowid_ticket_next('t')");
	$tries++;
	if ($ret == 0) { push @clone_vals, $out; next; }
	$refused++
	  if $err =~ /ERROR:  55000: snowid hands out no values of pool "orders" while this server does not hold its node/;
}
is($refused, $tries, "every one of the clone's $tries tries was refused with 55000");
is(scalar(@clone_vals), 0, 'the clone handed out no pool value');
my $shared = @clone_vals
  ? $P->safe_psql('postgres',
	"SELECT count(*) FROM vals WHERE v = ANY('{" . join(',', @clone_vals) . "}')")
  : 0;
is($shared, 0, 'no value shared between the clone and P');
like(slurp_file($clone->logfile),
	qr/snowid gave up the pool ranges this data directory was copied with/,
	'the clone logs that it gave up the ranges it was copied with');

# The usual way to add a member: a clone given a node ID of its own.  It
# holds its node legitimately now, and must still never use P's ranges.
$clone->append_conf('postgresql.conf', "snowid.node_id = 6\n");
$clone->restart;
wait_state($clone, 'ok', die => 1);
$clone->safe_psql('postgres', q{
CREATE TABLE clone_vals AS SELECT snowid_ticket_next('t') AS v FROM generate_series(1, 2000);
});
$P->safe_psql('postgres',
	'INSERT INTO vals SELECT snowid_ticket_next(\'t\') FROM generate_series(1, 2000)');
@clone_vals = split /\n/, $clone->safe_psql('postgres', 'SELECT v FROM clone_vals');
is(scalar(@clone_vals), 2000, 'the clone, as node 6, issued 2000 pool values');
$shared = $P->safe_psql('postgres',
	"SELECT count(*) FROM vals WHERE v = ANY('{" . join(',', @clone_vals) . "}')");
is($shared, '0', 'none of them is one of P\'s values');
is( $reg->safe_psql('postgres',
		"SELECT count(*) FROM unnest('{" . join(',', @clone_vals)
		  . "}'::bigint[]) v WHERE snowid_pool_owner('orders', v) IS DISTINCT FROM 6"),
	'0', 'every one of them lies in a range the registry granted node 6');
$clone->stop('immediate');

# Restarts of P: clean, then a crash; no value comes out twice.
$P->restart;
wait_state($P, 'ok', die => 1);
$P->safe_psql('postgres',
	'INSERT INTO vals SELECT snowid_ticket_next(\'t\') FROM generate_series(1, 1000)');
$P->stop('immediate');
$P->start;
$P->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM (SELECT snowid_ticket_next('t')) s",
	't')
  or die 'P never issued again after its crash';
$P->safe_psql('postgres',
	'INSERT INTO vals SELECT snowid_ticket_next(\'t\') FROM generate_series(1, 1000)');
my ($n, $d) = split /\|/, $P->safe_psql('postgres',
	'SELECT count(*), count(DISTINCT v) FROM vals');
is($d, $n, "all $n values of P across a clean restart and a crash are distinct");
note "P: $n values; the clone: $tries tries, $refused refused";

done_testing();
