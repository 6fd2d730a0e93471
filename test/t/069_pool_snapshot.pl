
# Copyright (c) snowid contributors
#
# Pooled tickets on a snapshot copy of a member (issue 22): a data directory
# copied without backup_label (a filesystem or volume snapshot: here, a
# copy of member S stopped in immediate mode, so that it is as a crash
# left it) and started on another port with an automatic node ID.  It gets
# a node of its own from the registry, and must not go on serving S's
# ranges, which S goes on using: it gives them up at its first start (its
# lease file names another port), says so in the log, and issues values of
# ranges of its own only.  Checked: no value is issued twice across S and
# the copy.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::RecursiveCopy;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

my ($reg, $regconn) = registry(sql => "SELECT snowid_pool_create('orders', 'integer', 1)");

my $S = member('S', undef, registry => $regconn, lease => '60s', wait => 'S holds a node');
$S->safe_psql(
	'postgres', q{
SELECT snowid_ticket_create('t', pool => 'orders', block => 10);
CREATE TABLE vals(v bigint NOT NULL);
INSERT INTO vals SELECT snowid_ticket_next('t') FROM generate_series(1, 2000);
});
my $node_s = $S->safe_psql('postgres',
	'SELECT node_id FROM snowid_registry_status()');

# The snapshot: S as a crash leaves it, copied; then S starts again.
$S->stop('immediate');
my $copy = PostgreSQL::Test::Cluster->new('copy');
PostgreSQL::Test::RecursiveCopy::copypath($S->data_dir, $copy->data_dir);
chmod 0700, $copy->data_dir;
ok(!-e $copy->data_dir . '/backup_label', 'the copy has no backup_label');
ok(-e $copy->data_dir . '/snowid.pools', 'the copy carries snowid.pools');
$copy->append_conf('postgresql.conf', 'port = ' . $copy->port . "\n");
$S->start;
ok(wait_registry_state($S, 'ok'), 'S holds its node again');

$copy->start;
ok(wait_registry_state($copy, 'ok'), 'the copy holds a node');
isnt($copy->safe_psql('postgres', 'SELECT node_id FROM snowid_registry_status()'),
	$node_s, 'of its own');
like(
	slurp_file($copy->logfile),
	qr/snowid gave up the pool ranges this data directory was copied with/,
	'the copy gave up the ranges it was copied with');

# Both go on issuing pool values.
for my $round (1 .. 3)
{
	for my $n ($S, $copy)
	{
		$n->safe_psql('postgres',
			"INSERT INTO vals SELECT snowid_ticket_next('t') FROM generate_series(1, 500)"
		);
	}
}
my %seen;
my $shared = 0;
my $total = 0;
for my $n ($S, $copy)
{
	for my $v (split /\n/, $n->safe_psql('postgres', 'SELECT v FROM vals'))
	{
		$total++;
		$shared++ if $seen{$v}++;
	}
}
# the copy's table holds S's first 2000 values (copied along): count those
# once, as they were issued once
is($shared, 2000,
	"no value issued twice: only S's 2000 values from before the copy appear in both tables"
);
is( $copy->safe_psql('postgres',
		'SELECT count(*) FROM vals WHERE v IN (SELECT v FROM vals GROUP BY v HAVING count(*) > 1)'),
	'0',
	'no value twice on the copy');
cmp_ok($total, '==', 2000 * 2 + 1500 * 2, 'every value counted');

$_->stop for ($S, $copy);
$reg->stop;
done_testing();
