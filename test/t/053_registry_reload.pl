# Copyright (c) snowid contributors
#
# A member's registry settings and the cases around them.
#
#  1. snowid.registry names a database of the member itself: refused
#     (state 'unreachable', detail "the registry is a database of this
#     server itself"), snowid_next() fails with 55000, no node is granted.
#  4. On that member, then named to a registry that is not running: a role
#     that may not read settings gets errors without the registry's host and
#     port, and snowid_registry_status() without registry or detail; a
#     superuser gets both.
#  3. A reload while a claim waits on the registry (another session holds
#     the registry's node table locked): once the lock goes, the member is
#     'ok' and its worker never sent a command on a busy connection ("another
#     command is already in progress").
#  2. A reload from registry R1 to R2 warns ("snowid.registry now names
#     another registry") and the member gets its node from R2; a reload to
#     '' warns ("snowid.registry was emptied").
#  5. A member with an assigned node (snowid.node_id unset) crashes and
#     restarts at once: it gets the same node back after the old start's
#     silence, and its new IDs are above the old ones.
#  6. A member whose node is taken by another live holder ('conflict')
#     clears its local lease (deadline 0 in $PGDATA/snowid.lease): restarted
#     while the registry is down, it issues nothing.
#
# No assertion depends on elapsed time: every state is waited for by
# polling (up to the TAP timeout).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;
use Time::HiRes qw(time usleep);

# ---- helpers (local to this file) ----

sub conninfo_of
{
	my ($host, $port, $dbname) = @_;
	return sprintf('host=%s port=%d dbname=%s', $host, $port, $dbname // 'postgres');
}

# Wait until $cond->() is true, up to $secs seconds; true if it was.
sub wait_for
{
	my ($cond, $secs) = @_;
	my $until = time + ($secs // $PostgreSQL::Test::Utils::timeout_default);
	while (time < $until)
	{
		return 1 if $cond->();
		usleep(100_000);
	}
	return $cond->();
}

# Fields of $PGDATA/snowid.lease: node, auto, start_id, deadline, port,
# host; () if none.
sub lease_file
{
	my ($node) = @_;
	my $path = $node->data_dir . '/snowid.lease';
	return () unless -e $path;
	my $line = slurp_file($path);
	return () unless $line =~ /^snowid-lease-1 (-?\d+) (\d) ([0-9a-f]+) (-?\d+) (\d+) (\S+)/;
	return (node => $1, auto => $2, start_id => $3, deadline => $4, port => $5, host => $6);
}

# $n new IDs of $node, stored in its table ids.
sub insert_ids
{
	my ($node, $n) = @_;
	return split /\n/,
	  $node->safe_psql('postgres',
		"INSERT INTO ids SELECT snowid_next() FROM generate_series(1, $n) RETURNING id");
}

# ---- the registry ----

my ($reg, $r1) = registry();
# a second registry: another database of the same server
$reg->safe_psql('postgres', 'CREATE DATABASE reg2');
$reg->safe_psql('reg2', 'CREATE EXTENSION snowid');
my $r2 = registry_conninfo($reg, 'reg2');

# ==== 1. a registry in the member itself ====

my $self = PostgreSQL::Test::Cluster->new('member_self');
$self->init;
$self->append_conf('postgresql.conf',
	"shared_preload_libraries = 'snowid'\nsnowid.node_id = 1\ncluster_name = 'member_self'\n"
	  . "snowid.max_wait = '100ms'\n"
	  . "snowid.registry = '" . conninfo_of($self->host, $self->port) . "'\n");
$self->start;
$self->safe_psql('postgres', 'CREATE EXTENSION snowid');
$self->poll_query_until('postgres',
	"SELECT state = 'ok' OR coalesce(detail, '') LIKE '%database of this server itself%' FROM snowid_registry_status()"
) or die 'member_self: neither ok nor refused';
is(status_of($self, 'state', null => '<null>'), 'unreachable',
	'a registry in the member itself: state unreachable');
like(status_of($self, 'detail', null => '<null>'),
	qr/^the registry is a database of this server itself/,
	'the detail says the registry is a database of this server itself');
my ($ret, $out, $err) = try_next($self);
isnt($ret, 0, 'snowid_next() fails');
like($err, qr/ERROR:  55000: snowid has no node lease from the registry/,
	'with 55000, no node lease');
is($self->safe_psql('postgres', 'SELECT count(*) FROM snowid_registry_nodes'),
	'0', 'the member granted itself no node');
is($self->safe_psql('postgres', 'SELECT claims FROM snowid_registry_stats()'),
	'0', 'no claim was granted');

# ==== 4. errors for a role that may not read settings ====

my $dead_port = PostgreSQL::Test::Cluster::get_free_port();
my $dead = conninfo_of($reg->host, $dead_port);
$self->safe_psql('postgres',
	"CREATE ROLE lowly LOGIN; ALTER SYSTEM SET snowid.registry = '$dead'; SELECT pg_reload_conf()");
$self->poll_query_until('postgres',
	"SELECT registry LIKE '%port=$dead_port%' AND state = 'unreachable' AND detail NOT LIKE '%this server itself%' FROM snowid_registry_status()"
) or die 'member_self: not unreachable at the dead port';
($ret, $out, $err) = try_next($self);
like($err, qr/ERROR:  55000: snowid has no node lease from the registry/,
	'no lease: superuser gets 55000');
like($err, qr/DETAIL:  .*port=$dead_port/,
	'the superuser\'s error detail names the registry\'s port');
my ($lret, $lout, $lerr) = try_next($self, user => 'lowly');
isnt($lret, 0, 'snowid_next() fails for lowly');
like($lerr, qr/ERROR:  55000: snowid has no node lease from the registry/,
	'lowly gets 55000 too');
like($lerr, qr/DETAIL:  /, 'with a detail');
unlike($lerr, qr/port=|\Q$dead_port\E/,
	'lowly\'s error does not name the registry\'s port');
my $host_re = quotemeta($reg->host);
unlike($lerr, qr/$host_re/, 'nor its host');
is(status_of($self, 'registry', null => '<null>', user => 'lowly'), '<null>',
	'snowid_registry_status().registry is NULL for lowly');
is(status_of($self, 'detail', null => '<null>', user => 'lowly'), '<null>',
	'so is the detail (libpq\'s words name the address)');
like(status_of($self, 'registry', null => '<null>'), qr/port=$dead_port/,
	'a superuser sees the registry');
$self->stop;

# ==== 3. a reload while a claim waits on the registry ====

my $b = member('member_b', 2, registry => $r1, cluster_name => 1);
ok(wait_state($b, 'ok'), 'member_b holds node 2 from R1');

my $b_log = -s $b->logfile;
my $locker = $reg->background_psql('postgres');
$locker->query_safe('BEGIN; LOCK TABLE snowid_registry_node IN ACCESS EXCLUSIVE MODE;');
# A claim waits for the lock at most 100 ms (then fails, and the worker
# connects again and claims again): catch one waiting, reload meanwhile.
my $waiters = q{SELECT coalesce(min(l.pid), 0) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
	WHERE c.relname = 'snowid_registry_node' AND NOT l.granted};
$reg->poll_query_until('postgres', "SELECT ($waiters) <> 0")
  or die 'no claim waits on the lock';
my $first_waiter = $reg->safe_psql('postgres', $waiters);
$b->safe_psql('postgres', 'SELECT pg_reload_conf()');
# the worker has taken the reload once another claim waits (or it failed)
ok( wait_for(
		sub {
			my $w = $reg->safe_psql('postgres', $waiters);
			($w != 0 && $w != $first_waiter)
			  || slurp_file($b->logfile, $b_log) =~ /another command is already in progress/;
		}),
	'member_b\'s worker has taken the reload');
$locker->query_safe('COMMIT');
$locker->quit;
ok(wait_state($b, 'ok'), 'after the lock: member_b is ok');
my ($bret, $bid) = $b->psql('postgres', 'SELECT snowid_next()');
is($bret, 0, 'and issues');
unlike(slurp_file($b->logfile, $b_log), qr/another command is already in progress/,
	'no command was sent on a busy connection');

# ==== 2. a reload to another registry, then to '' ====

$b_log = -s $b->logfile;
$b->safe_psql('postgres',
	"ALTER SYSTEM SET snowid.registry = '$r2'; SELECT pg_reload_conf()");
# The status names R2 as soon as the worker takes the reload, and says ok
# on R1's lease until R2 answers: wait for R2's grant, not for the status.
$reg->poll_query_until('reg2',
	"SELECT count(*) = 1 FROM snowid_registry_nodes WHERE state = 'held' AND cluster_name = 'member_b'")
  or die 'R2 granted member_b nothing';
$b->poll_query_until('postgres',
	"SELECT state = 'ok' AND registry LIKE '%dbname=reg2%' FROM snowid_registry_status()")
  or die 'member_b not ok on R2';
ok( wait_for(
		sub {
			slurp_file($b->logfile, $b_log) =~
			  /WARNING:  snowid\.registry now names another registry/;
		},
		30),
	'the change of registry is warned of');
is( $reg->safe_psql('reg2',
		"SELECT node_id || ' ' || cluster_name FROM snowid_registry_nodes WHERE state = 'held'"),
	'2 member_b',
	'R2 granted node 2 to member_b');

$b_log = -s $b->logfile;
$b->safe_psql('postgres',
	"ALTER SYSTEM SET snowid.registry = ''; SELECT pg_reload_conf()");
ok(wait_state($b, 'off'), 'registry emptied: state off');
ok( wait_for(sub { slurp_file($b->logfile, $b_log) =~ /WARNING:  snowid\.registry was emptied/ }, 30),
	'emptying snowid.registry is warned of');
$b->stop;

# ==== 5. an assigned node across a crash restart ====

my $c = member('member_c', undef, registry => $r1, cluster_name => 1,
	sql => 'CREATE TABLE ids(id bigint PRIMARY KEY)');
ok(wait_state($c, 'ok'), 'member_c is granted a node');
my $n = status_of($c, 'node_id', null => '<null>');
like($n, qr/^\d+$/, "member_c got node $n");
my @old = insert_ids($c, 1000);
$c->stop('immediate');
$c->start;
ok(wait_state($c, 'ok'), 'member_c, restarted after a crash, is ok again');
is(status_of($c, 'node_id', null => '<null>'), $n, 'with the same node');
is($c->safe_psql('postgres', 'SELECT node_id FROM snowid_layout()'), $n,
	'snowid_layout() says so too');
my @new = insert_ids($c, 1000);
cmp_ok(min_of(@new), '>', max_of(@old), 'its new IDs are above the old ones');
note sprintf('member_c: node %s, %d IDs before the crash, %d after', $n,
	scalar @old, scalar @new);
$c->stop;

# ==== 6. a refusal naming another holder clears the local lease ====

my $d = member('member_d', 9, registry => $r1, cluster_name => 1,
	extra => "snowid.max_wait = '100ms'\n");
ok(wait_state($d, 'ok'), 'member_d holds node 9');
($ret) = $d->psql('postgres', 'SELECT snowid_next()');
is($ret, 0, 'member_d issues');
my %lease = lease_file($d);
cmp_ok($lease{deadline} // 0, '>', 0, 'its lease file holds a deadline');

$reg->safe_psql('postgres',
	"UPDATE snowid_registry_node SET start_id = '" . ('f' x 32)
	  . "', system_identifier = 1, last_seen = now() + interval '1 hour' WHERE node_id = 9");
ok(wait_state($d, 'conflict'), 'another live holder of node 9: member_d is in conflict');
ok(wait_for(sub { my %l = lease_file($d); ($l{deadline} // -1) == 0 }, 30),
	'its local lease is cleared (deadline 0 in snowid.lease)');
%lease = lease_file($d);
is($lease{node}, 9, 'the lease file still names node 9');

$reg->stop;
$d->stop;
$d->start;
ok(wait_state($d, 'unreachable'), 'member_d restarted with the registry down: unreachable');
($ret, $out, $err) = try_next($d);
isnt($ret, 0, 'it issues nothing');
like($err, qr/ERROR:  55000: snowid has no node lease from the registry/,
	'snowid_next() fails with 55000, no lease');
$d->stop;

done_testing();
