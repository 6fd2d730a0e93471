
# Copyright (c) snowid contributors
#
# A copy waits for the registry (issue 29, finding 3).
#
# A member holding node 1 (and ranges of a pool) is stopped while the
# registry is down; its data directory is copied with cp -a, and the copy
# started on the same host and port (another socket directory), as the
# original is.  The original, in place in the same boot, resumes on its
# lease and issues IDs and pool values.  The copy cannot prove it is the
# server that holds the lease: snowid_next() and a pooled ticket fail with
# SQLSTATE 55000 saying so.  When the registry returns, the original holds
# node 1 again, the copy gets a conflict, and no ID is issued by both.
# (1.7: the copy issued as node 1 under the lease of its lease file.)

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

sub try_sql
{
	my ($node, $sql) = @_;
	my ($ret, $out, $err) =
	  $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	return ($ret, $out, $err);
}

# $n new IDs of $node.
sub next_ids
{
	my ($node, $n) = @_;
	return split /\n/,
	  $node->safe_psql('postgres',
		"SELECT snowid_next() FROM generate_series(1, $n)");
}

my ($reg, $conninfo) = registry(sql => "SELECT snowid_pool_create('orders')");

my $m = member('original', 1,
	registry => $conninfo,
	cluster_name => 1,
	wait => 'the member holds node 1');
$m->safe_psql('postgres', "SELECT snowid_ticket_create('t', pool => 'orders')");
my @orig = next_ids($m, 1000);
my @orig_pool = split /\n/, $m->safe_psql('postgres',
	"SELECT snowid_ticket_next('t') FROM generate_series(1, 100)");
is( $m->safe_psql('postgres',
		q{SELECT ranges >= 1 FROM snowid_pool_holdings() WHERE pool = 'orders'}),
	't', 'the member holds a range of the pool');

# The registry goes away, then the member stops (its lease is kept).
$reg->stop;
ok(wait_registry_state($m, 'unreachable'), 'registry stopped: unreachable');
$m->stop;

# cp -a of the stopped data directory; the copy listens on the same port
# in a socket directory of its own: the same host and port to snowid.
my $copy = PostgreSQL::Test::Cluster->new('copy', port => $m->port, own_host => 1);
mkdir $copy->basedir;
system('cp', '-a', $m->data_dir, $copy->data_dir) == 0
  or die "cp -a failed: $?";
$copy->append_conf('postgresql.conf',
	"unix_socket_directories = '" . $copy->host . "'\ncluster_name = 'copy'\n");

$copy->start;
$m->start;

# The original resumes on its lease, as a restart in place always did.
my ($ret, $out, $err) = try_sql($m, 'SELECT snowid_next()');
is($ret, 0, 'the original, restarted in place, issues during the outage')
  or diag $err;
push @orig, $out if $ret == 0;
push @orig, next_ids($m, 1000) if $ret == 0;
($ret, $out, $err) = try_sql($m, q{SELECT snowid_ticket_next('t')});
is($ret, 0, 'the original hands out pool values during the outage') or diag $err;
push @orig_pool, $out if $ret == 0;

# The copy waits for the registry.
my @copy_ids;
($ret, $out, $err) = try_sql($copy, 'SELECT snowid_next()');
isnt($ret, 0, 'the copy issues no ID while the registry is down');
push @copy_ids, $out if $ret == 0;
like($err, qr/55000/, 'the refusal is SQLSTATE 55000');
like($err, qr/issues no IDs under the lease of node 1 until the registry confirms it/,
	'the refusal says the copy waits for the registry');
like($err, qr/cannot prove it is the server that holds the lease/,
	'the refusal says why');
like($err, qr/retries every/, 'the refusal says when it retries');
my @copy_pool;
($ret, $out, $err) = try_sql($copy, q{SELECT snowid_ticket_next('t')});
isnt($ret, 0, 'the copy hands out no pool value while the registry is down');
push @copy_pool, $out if $ret == 0;
like($err, qr/55000.*values of pool "orders" under the lease of node 1/s,
	'the pooled ticket says why, SQLSTATE 55000');

# The registry returns: the original keeps node 1, the copy conflicts.
$reg->start;
ok(wait_registry_state($m, 'ok'), 'registry back: the original holds node 1');
ok(wait_registry_state($copy, 'conflict'), 'registry back: the copy gets a conflict');
push @orig, next_ids($m, 1000);
($ret, $out, $err) = try_sql($copy, 'SELECT snowid_next()');
isnt($ret, 0, 'the copy issues no ID after the conflict');
push @copy_ids, $out if $ret == 0;
like($err, qr/55000/, 'its refusal is SQLSTATE 55000');
($ret, $out, $err) = try_sql($copy, q{SELECT snowid_ticket_next('t')});
isnt($ret, 0, 'the copy hands out no pool value after the conflict');
push @copy_pool, $out if $ret == 0;

my %seen = map { $_ => 1 } @orig;
is(scalar(grep { $seen{$_} } @copy_ids), 0, 'no ID was issued by both');
my %seen_pool = map { $_ => 1 } @orig_pool;
is(scalar(grep { $seen_pool{$_} } @copy_pool), 0,
	'no pool value was handed out by both');
is(scalar(@copy_ids) + scalar(@copy_pool), 0, 'the copy issued nothing at all');

$copy->stop;
$m->stop;
$reg->stop;
done_testing();
