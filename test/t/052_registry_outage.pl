
# Copyright (c) snowid contributors
#
# The registry out of reach.
#
#  1. The registry stops: two members (nodes 1 and 2, default lease) keep
#     generating (state 'unreachable', outages counted); member 1 is
#     restarted during the outage and goes on under the lease it persisted
#     in $PGDATA/snowid.lease; when the registry is back, both return to
#     'ok' by themselves.  Every ID is unique, and each member's IDs strictly
#     increase across the outage and the restart.
#  2. A long outage with snowid.lease = 25 s: member 3 keeps issuing at
#     first, warns in the log that the lease "runs out in" so many seconds,
#     then that it "ran out", and snowid_next() fails with SQLSTATE 55000
#     naming the node; when the registry returns it issues again, above
#     every ID before.  (25 s: the last quarter of the lease, when the
#     warning is due, is then shorter than the worker's longest backoff and
#     falls between two of its retries, 15 s and 25 s into the outage: the
#     warning comes only if the worker wakes for it.)
#  3. A member (node 4) whose registry cannot be reached from its start and
#     that has no lease file issues nothing (55000, "no node lease"); a
#     reload to '' returns it to state 'off', issuing as its configured
#     node; a reload of snowid.registry to (4.) a database without the
#     extension says so in snowid_registry_status().detail and in a WARNING,
#     without a crash, and the member goes on issuing as its configured
#     node, unchecked (a registry added to a server issuing under
#     snowid.node_id stops it only by refusing the node); a reload to the
#     running registry makes it hold its node; a reload to '' returns it to
#     state 'off' again.
#
# snowid_health() follows each state: the lease ok, then a warning during
# the outage (critical with a lease under an hour), the generator and the
# lease critical once the lease ran out or when none was ever held, no
# lease row without a registry, a warning while a registry named by reload
# is unchecked.
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

# A started member (member(..., @member, registry => $conninfo)), its
# cluster_name its name, with the extension and a table for its IDs.
my @member = (
	cluster_name => 1,
	sql => 'CREATE TABLE ids(seq bigserial, phase text, id bigint NOT NULL UNIQUE);');

# Insert $n IDs from $node; returns them in issue order.
sub insert_ids
{
	my ($node, $phase, $n) = @_;
	return split /\n/,
	  $node->safe_psql('postgres',
		"INSERT INTO ids(phase, id) SELECT '$phase', snowid_next() FROM generate_series(1, $n) RETURNING id"
	  );
}

# snowid_health()'s row of $component on $node: "status|seconds|reason"
# (seconds of issues_for, or 'null'), or '' where there is none.
sub health
{
	my ($node, $component) = @_;
	return $node->safe_psql('postgres',
		"SELECT status || '|' || coalesce(extract(epoch FROM issues_for)::bigint::text, 'null') || '|' || reason FROM snowid_health() WHERE component = '$component'"
	);
}

# Wait until the node's log after $offset matches $re; true if it did.
sub wait_log
{
	my ($node, $re, $offset) = @_;
	my $until = time + $PostgreSQL::Test::Utils::timeout_default;
	while (time < $until)
	{
		return 1
		  if slurp_file($node->logfile, $offset) =~ $re;
		usleep(100_000);
	}
	return 0;
}

# No process of $node died of a signal, an assertion or a PANIC since
# $offset (background workers exit with code 1 at every shutdown: not
# counted).
sub no_crash
{
	my ($node, $offset, $what) = @_;
	unlike(
		slurp_file($node->logfile, $offset),
		qr/terminated by signal|server process .* exited with exit code|TRAP:|PANIC:/,
		"$what: no process crashed");
	return;
}

# ---- the registry ----

my ($reg, $conninfo) = registry();
my $reg_port = $reg->port;

# ==== 1. the registry stopped: members keep going, across a restart ====

my $m1 = member('member_a', 1, @member, registry => $conninfo);
my $m2 = member('member_b', 2, @member, registry => $conninfo);
ok(wait_state($m1, 'ok'), 'member 1 holds its node');
ok(wait_state($m2, 'ok'), 'member 2 holds its node');
like(health($m1, 'lease'),
	qr/^ok\|null\|the registry leases node 1 to this server and renews the lease every second$/,
	'snowid_health(): the lease is ok, with no end in sight');
like(health($m1, 'generator'), qr/^ok\|\d+\|this server issues ids as node 1 /,
	'snowid_health(): the generator is ok');

my %ids = (a => [], b => []);
push @{ $ids{a} }, insert_ids($m1, 'before the outage', 5000);
push @{ $ids{b} }, insert_ids($m2, 'before the outage', 5000);

my $m1_log = -s $m1->logfile;
my $m2_log = -s $m2->logfile;
$reg->stop;

ok(wait_state($m1, 'unreachable'), 'registry stopped: member 1 is unreachable');
ok(wait_state($m2, 'unreachable'), 'registry stopped: member 2 is unreachable');
is($m1->safe_psql('postgres', 'SELECT outages >= 1 FROM snowid_registry_stats()'),
	't', 'member 1 counts an outage');
is($m2->safe_psql('postgres', 'SELECT outages >= 1 FROM snowid_registry_stats()'),
	't', 'member 2 counts an outage');
like(
	$m1->safe_psql('postgres',
		'SELECT detail FROM snowid_registry_status()'),
	qr/registry/, 'the detail says what failed');
my ($h_status, $h_left, $h_reason) = split /\|/, health($m1, 'lease');
is($h_status, 'warning',
	'snowid_health(): during the outage the lease (12 h) is a warning');
ok($h_left > 11 * 3600 && $h_left <= 12 * 3600,
	"... issuing for the rest of the lease ($h_left s)");
like($h_reason,
	qr/^the registry is unreachable: this server issues until its lease of node 1 ends at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC; bring the registry back$/,
	'... saying until when, and what to do');
like(health($m1, 'generator'), qr/^ok\|/,
	'snowid_health(): the generator is still ok');

my @a_outage = insert_ids($m1, 'outage', 20000);
my @b_outage = insert_ids($m2, 'outage', 20000);
is(scalar(@a_outage), 20000, 'member 1 issued 20000 IDs during the outage');
is(scalar(@b_outage), 20000, 'member 2 issued 20000 IDs during the outage');
push @{ $ids{a} }, @a_outage;
push @{ $ids{b} }, @b_outage;
is(status_of($m1, 'state'), 'unreachable', 'member 1 is still unreachable after issuing');

# A restart of member 1 during the outage: it issues under its persisted lease.
ok(-e $m1->data_dir . '/snowid.lease', 'member 1 persisted its lease');
my $lease_before = $m1->safe_psql('postgres',
	'SELECT lease_until FROM snowid_registry_status()');
$m1->restart;
ok(wait_state($m1, 'unreachable'),
	'member 1 restarted during the outage: state unreachable');
my ($ret, $out, $err) = try_next($m1);
is($ret, 0, 'the restarted member 1 issues IDs during the outage')
  or diag $err;
push @{ $ids{a} }, $out if $ret == 0;
ok( wait_log(
		$m1,
		qr/snowid issues IDs as node 1 under the lease it held before the restart/,
		$m1_log),
	'its log says it issues under the lease it held before the restart');
is( $m1->safe_psql('postgres',
		q{SELECT node_id, lease_until > now() FROM snowid_registry_status()}),
	'1|t', 'snowid_registry_status() shows node 1 and a lease in the future');
note "member 1 lease before the restart: $lease_before, after: "
  . $m1->safe_psql('postgres', 'SELECT lease_until FROM snowid_registry_status()');
my @a_restarted = insert_ids($m1, 'outage, restarted', 20000);
is(scalar(@a_restarted), 20000, 'the restarted member 1 issued 20000 more IDs');
push @{ $ids{a} }, @a_restarted;
push @{ $ids{b} }, insert_ids($m2, 'outage, late', 5000);

# The registry returns: both back to 'ok' without a restart.
$reg->start;
ok(wait_state($m1, 'ok'), 'registry back: member 1 returns to ok by itself');
ok(wait_state($m2, 'ok'), 'registry back: member 2 returns to ok by itself');
like(health($m1, 'lease'), qr/^ok\|null\|/, 'snowid_health(): the lease is ok again');
push @{ $ids{a} }, insert_ids($m1, 'after the outage', 5000);
push @{ $ids{b} }, insert_ids($m2, 'after the outage', 5000);
is( $reg->safe_psql('postgres',
		q{SELECT string_agg(node_id || ':' || state || ':' || cluster_name, ',' ORDER BY node_id) FROM snowid_registry_nodes}
	),
	'1:held:member_a,2:held:member_b',
	'the registry shows nodes 1 and 2 held by the two members');

my %seen;
my $shared = 0;
for my $m ('a', 'b')
{
	for (@{ $ids{$m} }) { $shared++ if $seen{$_}++; }
}
is($shared, 0, 'no ID issued twice across both members');
ok(strictly_increasing(@{ $ids{a} }),
	'member 1\'s IDs strictly increase across the outage and its restart');
ok(strictly_increasing(@{ $ids{b} }),
	'member 2\'s IDs strictly increase across the outage');
is( $m1->safe_psql('postgres',
		'SELECT count(*) FILTER (WHERE snowid_node(id) <> 1) FROM ids'),
	'0', 'member 1\'s IDs carry node 1');
is( $m2->safe_psql('postgres',
		'SELECT count(*) FILTER (WHERE snowid_node(id) <> 2) FROM ids'),
	'0', 'member 2\'s IDs carry node 2');
note sprintf(
	'scenario 1: member 1 issued %d IDs (%d during the outage, %d of them after its restart), member 2 %d (%d during the outage); shared IDs: %d',
	scalar(@{ $ids{a} }), scalar(@a_outage) + scalar(@a_restarted) + 1,
	scalar(@a_restarted), scalar(@{ $ids{b} }),
	scalar(@b_outage) + 5000, $shared);
note 'member 1 stats: ' . $m1->safe_psql('postgres', 'SELECT * FROM snowid_registry_stats()');
note 'member 2 stats: ' . $m2->safe_psql('postgres', 'SELECT * FROM snowid_registry_stats()');
no_crash($m1, $m1_log, 'member 1');
no_crash($m2, $m2_log, 'member 2');
$m1->stop;
$m2->stop;

# ==== 2. the lease runs out during a long outage ====

my $e = member('member_e', 3, @member, registry => $conninfo, extra => "snowid.lease = 25\n");
ok(wait_state($e, 'ok'), 'member 3 (lease 25 s) holds its node');
is( $e->safe_psql('postgres',
		q{SELECT lease_until - now() BETWEEN interval '1 s' AND interval '25 s' FROM snowid_registry_status()}
	),
	't', 'its lease ends within 25 s (snowid.lease = 25)');
my @e_before = insert_ids($e, 'before the outage', 5000);

my $e_log = -s $e->logfile;
$reg->stop;
ok(wait_state($e, 'unreachable'), 'registry stopped: member 3 is unreachable');
($ret, $out, $err) = try_next($e);
is($ret, 0, 'member 3 keeps issuing at first') or diag $err;
($h_status, $h_left) = split /\|/, health($e, 'lease');
ok($h_status eq 'critical' && $h_left <= 25,
	"snowid_health(): a lease of 25 s, unrenewed, is critical at once ($h_status, $h_left s)");
push @e_before, $out if $ret == 0;
ok(wait_log($e, qr/WARNING:  snowid lease of node 3 runs out in \d+ s and the registry does not answer/, $e_log),
	'the log warns that the lease of node 3 runs out in so many seconds');
ok(wait_log($e, qr/WARNING:  snowid lease of node 3 ran out: this server issues no more IDs/, $e_log),
	'then that it ran out');
($ret, $out, $err) = try_next($e);
isnt($ret, 0, 'snowid_next() fails once the lease ran out');
like($err, qr/ERROR:  55000: snowid lease of node 3 ran out at \d{4}-/,
	'with SQLSTATE 55000, saying the lease of node 3 ran out');
like($err, qr/DETAIL:  The registry \([^)]*port=$reg_port[^)]*\) has not answered since/,
	'the detail names the registry');
($ret, $out, $err) = $e->psql('postgres', 'SELECT count(*) FROM snowid_next_batch(10)');
like($err, qr/snowid lease of node 3 ran out/, 'so does snowid_next_batch()');
is( $e->safe_psql('postgres',
		q{SELECT state, lease_until < now() FROM snowid_registry_status()}),
	'unreachable|t', 'status: unreachable, lease in the past');
like(health($e, 'generator'),
	qr/^critical\|0\|the lease of node 3 ran out at \d{4}-[^|]* UTC and the registry does not answer: this server issues no ids until it does; bring the registry back$/,
	'snowid_health(): the generator is critical, issuing nothing, once the lease ran out');
like(health($e, 'lease'),
	qr/^critical\|0\|the registry is unreachable and the lease of node 3 ran out at /,
	'... and so is the lease');

$reg->start;
ok(wait_state($e, 'ok'), 'registry back: member 3 returns to ok by itself');
my @e_after = insert_ids($e, 'after the outage', 5000);
is(scalar(@e_after), 5000, 'member 3 issues again');
cmp_ok(min_of(@e_after), '>', max_of(@e_before),
	'its new IDs are above every ID before the outage');
ok(strictly_increasing(@e_before, @e_after), 'and all strictly increase');
note sprintf('scenario 2: member 3 issued %d IDs before the lease ran out, %d after the registry returned',
	scalar(@e_before), scalar(@e_after));
note 'member 3 stats: ' . $e->safe_psql('postgres', 'SELECT * FROM snowid_registry_stats()');
no_crash($e, $e_log, 'member 3');
$e->stop;

# ==== 3 and 4. never reached the registry; reloads of snowid.registry ====

# ALTER SYSTEM SET snowid.registry and reload (the worker picks it up).
sub set_registry
{
	my ($node, $value) = @_;
	$node->safe_psql('postgres',
		"ALTER SYSTEM SET snowid.registry = '$value'; SELECT pg_reload_conf();");
	return;
}

my $dead_port = PostgreSQL::Test::Cluster::get_free_port();
my $dead = sprintf('host=%s port=%d dbname=postgres', $reg->host, $dead_port);
my $c = member('member_c', 4, @member, registry => $dead);
my $c_log = 0;
my @c_ids;
ok(!-e $c->data_dir . '/snowid.lease', 'member 4 has no lease file');
ok(wait_state($c, 'unreachable'), 'member 4 (registry never reached) is unreachable');
($ret, $out, $err) = try_next($c);
isnt($ret, 0, 'member 4 issues nothing');
like($err, qr/ERROR:  55000: snowid has no node lease from the registry/,
	'55000: it has no node lease from the registry');
like($err, qr/DETAIL:  The registry \([^)]*port=$dead_port[^)]*\) cannot be reached/,
	'the detail names the registry it cannot reach');
is($c->safe_psql('postgres', 'SELECT ids_issued FROM snowid_stats()'),
	'0', 'member 4 issued no ID');
like(health($c, 'generator'),
	qr/^critical\|0\|the registry cannot be reached and this server holds no lease /,
	'snowid_health(): the generator of member 4 is critical, issuing nothing');
like(health($c, 'lease'),
	qr/^critical\|0\|the registry is unreachable and this server holds no lease it may issue under: /,
	'... and so is its lease');

# snowid.registry = '' by reload: state off, the configured node issues.
set_registry($c, '');
ok(wait_state($c, 'off'), 'reload of snowid.registry to \'\': state off');
is( $c->safe_psql('postgres',
		q{SELECT registry IS NULL, node_id, lease_until IS NULL FROM snowid_registry_status()}),
	't|4|t', 'status: no registry, node 4, no lease');
my @c_off1 = insert_ids($c, 'off', 2000);
is(scalar(@c_off1), 2000, 'member 4 issues without a registry, without a restart');
is(health($c, 'lease'), '', 'snowid_health(): no lease row without a registry');
like(health($c, 'generator'), qr/^ok\|/, '... and the generator is ok');
push @c_ids, @c_off1;

# 4. A registry database without the extension, named by reload to a
# server issuing under snowid.node_id: it goes on issuing, unchecked, and
# says so.
$reg->safe_psql('postgres', 'CREATE DATABASE noext');
my $noext = registry_conninfo($reg, 'noext');
my $c_noext_log = -s $c->logfile;
set_registry($c, $noext);
ok( $c->poll_query_until('postgres',
		q{SELECT detail LIKE '%no snowid extension%' FROM snowid_registry_status()}),
	'registry database without the extension: the status detail says so');
my ($state, $registry, $detail) = split /\|/,
  $c->safe_psql('postgres', 'SELECT state, registry, detail FROM snowid_registry_status()');
is($state, 'unreachable', 'state unreachable');
like($registry, qr/dbname=noext/, 'status names the new registry');
like($detail,
	qr/^unchecked: this server issues IDs as node 4 .*; the registry database has no snowid extension \(run CREATE EXTENSION snowid there\)$/,
	'the detail says the member issues unchecked, and that the registry database has no snowid extension, and what to do');
my @c_unchecked = insert_ids($c, 'unchecked', 2000);
is(scalar(@c_unchecked), 2000,
	'a registry named by reload to a server issuing under snowid.node_id: member 4 goes on issuing');
push @c_ids, @c_unchecked;
like(health($c, 'lease'),
	qr/^warning\|null\|the registry named by reload cannot be reached: this server issues ids as node 4 unchecked by a registry until it answers; /,
	'snowid_health(): a warning while member 4 issues unchecked');
like(health($c, 'generator'), qr/^ok\|/, '... and the generator is ok');
ok( wait_log($c,
		qr/WARNING:  snowid registry unreachable: this server goes on issuing IDs as node 4, unchecked by a registry\n.*DETAIL:  The registry database has no snowid extension/,
		$c_noext_log),
	'a WARNING says so, and why');
no_crash($c, $c_log, 'member 4');
no_crash($reg, 0, 'the registry');

# 3, continued: a reload to the running registry.
set_registry($c, $conninfo);
ok(wait_state($c, 'ok'), 'reload to the running registry: member 4 holds its node');
my @c_reg = insert_ids($c, 'registry', 5000);
is(scalar(@c_reg), 5000, 'member 4 issues IDs under the registry, without a restart');
push @c_ids, @c_reg;
is( $reg->safe_psql('postgres',
		q{SELECT state || ':' || cluster_name FROM snowid_registry_nodes WHERE node_id = 4}),
	'held:member_c', 'the registry shows node 4 held by member 4');

# Back to no registry: state off, the configured node issues.
set_registry($c, '');
ok(wait_state($c, 'off'), 'reload of snowid.registry to \'\' again: state off');
is( $c->safe_psql('postgres',
		q{SELECT registry IS NULL, node_id, lease_until IS NULL FROM snowid_registry_status()}),
	't|4|t', 'status: no registry, node 4, no lease');
my @c_off2 = insert_ids($c, 'off again', 5000);
is(scalar(@c_off2), 5000, 'member 4 issues without a registry');
push @c_ids, @c_off2;
is($c->safe_psql('postgres', 'SELECT count(*) FILTER (WHERE snowid_node(id) <> 4) FROM ids'),
	'0', 'as node 4');
ok(strictly_increasing(@c_ids), 'member 4\'s IDs strictly increase throughout');
note 'registry row of node 4 after the member dropped its registry: '
  . $reg->safe_psql('postgres',
	q{SELECT state || ', lease until ' || lease_until FROM snowid_registry_nodes WHERE node_id = 4});
note sprintf('scenarios 3/4: member 4 issued 0 IDs without a lease, %d with no registry, %d unchecked, %d under the registry, %d with none again',
	scalar(@c_off1), scalar(@c_unchecked), scalar(@c_reg), scalar(@c_off2));
no_crash($c, $c_log, 'member 4, at the end');

$c->stop;
$reg->stop;
done_testing();
