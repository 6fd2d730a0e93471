
# Copyright (c) snowid contributors
#
# The boot record under faults (issue 38; found by a hostile review of
# TAP 094's fix):
#  1. (run second) Two writes of the lease file fail in a row (a full or failing data
#     disk; here snowid.lease.tmp is a directory), then the server, in
#     place, crashes and restarts while the registry is down: it must
#     resume on its lease, not be taken for a restored copy (the record
#     once kept as "pending" a seal the file never got).
#  2. (run first) The same old copy restored into the directory twice, a newer copy
#     restored after: the second restore must not lower the pool change
#     count the record holds, or the newer copy would pass for current and
#     hand its ranges' values out again.

use strict;
use warnings;

use Time::HiRes qw(sleep);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

sub try_sql
{
	my ($node, $sql) = @_;
	return $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
}

sub take
{
	my ($node, $sql, $n) = @_;
	my ($ret, $out) = try_sql($node, "SELECT ($sql) FROM generate_series(1, $n)");
	return $ret == 0 ? (split /\n/, $out) : ();
}

my $tmp = PostgreSQL::Test::Utils::tempdir;
my ($reg, $conninfo) = registry(sql => "SELECT snowid_pool_create('orders')");

# Both members first, while the registry grants new nodes at once.
my $m = member('lease', 1, registry => $conninfo, lease => '60s',
	wait => 'the member holds node 1');
my $p = member('pools', 2, registry => $conninfo,
	sql => "SELECT snowid_ticket_create('t', pool => 'orders')",
	wait => 'the member holds node 2');

# ---- 2. one old copy restored twice, then a newer one ----

my $ticket = q{snowid_ticket_next('t')};
my @pool = take($p, $ticket, 100);
$p->stop('immediate');
save_copy($p, "$tmp/c1");
$p->start;
push @pool, take($p, $ticket, 1000);
$p->stop('immediate');
restore_in_place($p, "$tmp/c1");
$p->start;
ok(wait_registry_state($p, 'ok'), 'restored from the old copy: ok again');
push @pool, take($p, $ticket, 1000);
$p->stop('immediate');
save_copy($p, "$tmp/c2");
$reg->stop;
$p->start;
my @after_c2 = take($p, $ticket, 2000);
cmp_ok(scalar(@after_c2), '>', 0, 'the registry down, the member hands out values');
push @pool, @after_c2;
$p->stop('immediate');
restore_in_place($p, "$tmp/c1");
$p->start;
push @pool, take($p, $ticket, 50);
$p->stop('immediate');
restore_in_place($p, "$tmp/c2");
my $offset = -s $p->logfile;
$p->start;
like(slurp_file($p->logfile, $offset),
	qr/snowid gave up the pool ranges this data directory was copied with/,
	'the newer copy, restored after the old one a second time, gives its ranges up');
push @pool, take($p, $ticket, 2000);
is(dups(@pool), 0, 'no pool value was handed out twice');
$p->stop;
$reg->start;
ok(wait_registry_state($m, 'ok'), 'registry back: the first member holds node 1 again');

# ---- 1. failed lease-file writes, then a crash in place ----

my $dir = $m->data_dir;
$offset = -s $m->logfile;
mkdir "$dir/snowid.lease.tmp" or die "could not make the obstacle: $!";
my $failed = 0;
for (1 .. 150)
{
	$failed = () = slurp_file($m->logfile, $offset) =~ /snowid\.lease\.tmp/g;
	last if $failed >= 2;
	sleep 1;
}
cmp_ok($failed, '>=', 2, 'two writes of the lease file failed');
$reg->stop;
ok(wait_registry_state($m, 'unreachable'), 'registry stopped: unreachable');
rmdir "$dir/snowid.lease.tmp" or die "could not remove the obstacle: $!";
$m->stop('immediate');
$m->start;
my ($ret, $out, $err) = try_sql($m, 'SELECT snowid_next()');
is($ret, 0, 'restarted in place during the outage, the member issues on its lease')
  or diag $err;
$m->stop;
$reg->stop;

done_testing();
