
# Copyright (c) snowid contributors
#
# The registry and its members: node leases.
#
# 1. Two members A and B with the same snowid.node_id, A started first and
#    holding the node, under pgbench at the same time: B issues nothing
#    (every transaction fails with 55000 naming the node and its holder, its
#    state is 'conflict'), A is unaffected, and no ID is shared.
# 2. A stopped cleanly releases the node; B takes it by itself at its next
#    heartbeat and continues above every ID A issued, although A ran seconds
#    ahead of its clock (the floor the registry hands over); the registry
#    names B as the holder.
# 3. A member C with another layout is refused ('conflict', the detail names
#    both layouts) and issues nothing.
# 4. Members D and E without snowid.node_id get the lowest free nodes, distinct
#    from each other and from the held one, and issue; D restarted cleanly
#    keeps its node although a lower one is free then (it was persisted).
# 5. A clean restart of a member continues at once, above its IDs before
#    (ten times).  Every clean stop or restart in this test releases the
#    node at the registry, also one that comes after the member's claims
#    failed there (another session held a table they need: no claim waits).
# 6. The registry's view snowid_registry_nodes lists the holders, and each
#    member's snowid_registry_stats() counted its claims and conflicts.
# 7. Without a registry, a member behaves as before: state 'off'.

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;
use Time::HiRes qw(time);

my $tmp = PostgreSQL::Test::Utils::tempdir;

# ---- the registry: an ordinary server with the extension, snowid preloaded ----

my ($registry, $reg_conninfo) = registry();

# A member named $name (also its cluster_name, and the application_name of
# its worker's connection to the registry) with node ID $node_id (undef:
# unset), started, with the extension and a table for the IDs it issues
# (take_setup_sql); extra postgresql.conf lines: member(..., @member,
# extra => '...').
my @member = (
	registry => $reg_conninfo,
	application_name => 1,
	sql => take_setup_sql());

# Stop or restart $node cleanly ($method) and check that it released its
# node at the registry on the way.
sub clean
{
	my ($node, $method, $what) = @_;
	my $pos = -s $node->logfile;
	$node->$method;
	like(slurp_file($node->logfile, $pos),
		qr/LOG:  snowid released node \d+ at the registry/,
		"$what: it released its node at the registry");
	return;
}

sub system_identifier
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		'SELECT system_identifier FROM pg_control_system()');
}

# ==== 1. two members with the same node ID under pgbench ====

my $node_id = 1;
my $per_txn = 20;

# A may run up to 10 s ahead of its clock (used in 2.); B waits up to 10 s
# for its clock instead of failing.
my $a = member('member_a', $node_id, @member, extra => "snowid.max_lead = '10s'\n");
wait_state($a, 'ok', 'A, first with node 1');
my $b = member('member_b', $node_id, @member, extra => "snowid.max_wait = '10s'\n");
wait_state($b, 'conflict', 'B, second with node 1');

my $a_port = $a->port;
my $a_sysid = system_identifier($a);
is(status_of($b, 'node_id'), $node_id, 'B\'s status names node 1');
like(status_of($b, 'detail'), qr/^node 1 is held by cluster "member_a" on \S+:$a_port, system identifier $a_sysid/,
	'B\'s status detail says who holds it');
like(next_error($b),
	qr/ERROR:  55000: snowid node 1 is held by cluster "member_a" on \S+:$a_port, system identifier $a_sysid\n/,
	'on B, snowid_next() fails with 55000 naming node 1 and its holder A');

my $run_a = start_pgbench($a, 'a', 2, 3,
	"INSERT INTO ids(id) SELECT snowid_next() FROM generate_series(1, $per_txn);");
my $run_b = start_pgbench($b, 'b', 2, 3, "SELECT take($per_txn);");
for my $r ([ 'A', $run_a ], [ 'B', $run_b ])
{
	my ($who, $run) = @$r;
	ok($run->{handle}->finish, "pgbench on $who ran")
	  or diag "pgbench on $who: exit $?\n$run->{out}\n$run->{err}";
}
my $txn_a = pgbench_processed($run_a) // 0;
my $txn_b = pgbench_processed($run_b) // 0;
cmp_ok($txn_a, '>', 0, "pgbench on A processed transactions ($txn_a)");
unlike($run_a->{out}, qr/number of failed transactions: [1-9]/,
	'pgbench on A: no failed transactions');
is($a->safe_psql('postgres', 'SELECT count(*) FROM ids'),
	$txn_a * $per_txn, 'A stored an ID for every call of every transaction');
cmp_ok($txn_b, '>', 0, "pgbench on B ran transactions ($txn_b)");
is( $b->safe_psql('postgres',
		"SELECT count(*), count(*) FILTER (WHERE sqlstate = '55000' AND message LIKE 'snowid node 1 is held by cluster \"member\\_a\" on %') FROM errs"),
	"$txn_b|$txn_b",
	'every transaction on B failed with 55000 naming node 1 held by A');
is($b->safe_psql('postgres', 'SELECT count(*) FROM ids'), '0', 'B stored no ID');
is($b->safe_psql('postgres', 'SELECT ids_issued FROM snowid_stats()'),
	'0', 'B issued nothing (snowid_stats)');
is(status_of($b, 'state'), 'conflict', 'B is still in conflict');
is(status_of($a, 'state'), 'ok', 'A is still ok');
is( $a->safe_psql('postgres',
		"SELECT count(DISTINCT id), bool_and(snowid_node(id) = $node_id) FROM ids"),
	($txn_a * $per_txn) . '|t', 'A\'s IDs are distinct and carry node 1');

# Shared IDs: A's IDs loaded into B, joined with B's.
my $a_file = "$tmp/a_ids.copy";
$a->safe_psql('postgres', "COPY (SELECT id FROM ids) TO '$a_file'");
$b->safe_psql('postgres',
	"CREATE TABLE a_ids(id bigint); COPY a_ids FROM '$a_file'");
my $shared = $b->safe_psql('postgres',
	'SELECT count(*) FROM ids JOIN a_ids USING (id)');
is($shared, '0', 'no ID shared between A and B');
my $b_conflicts_1 =
  $b->safe_psql('postgres', 'SELECT conflicts FROM snowid_registry_stats()');
cmp_ok($b_conflicts_1, '>=', 1, 'B counted its conflicts');
my ($b_refused, $b_stored) = split /\|/,
  $b->safe_psql('postgres', 'SELECT (SELECT count(*) FROM errs), (SELECT count(*) FROM ids)');
note "1. same node ID under pgbench: A $txn_a transactions, "
  . ($txn_a * $per_txn)
  . " IDs; B $txn_b transactions, $b_refused refused, $b_stored IDs; conflicts on B: $b_conflicts_1; shared IDs: $shared";

# ==== 2. B takes the node over once A has released it ====

# A runs ahead of its clock first: 16 batches of 1,000,000 positions are
# about 4 s of ticks, beyond B's max_lead (1 s), so that only the bound A
# reported (floor_id) keeps B above A's IDs, not the release time.
my @a_out = split /\n/,
  $a->safe_psql('postgres',
	join('', map { "SELECT snowid_next_batch(1000000) LIMIT 1;\n" } 1 .. 16)
	  . 'SELECT last_id FROM snowid_stats();'
	  . 'SELECT lead_ms FROM snowid_stats();');
my $a_lead = pop @a_out;
my $a_last = pop @a_out;
my $a_max = max_of(@a_out, $a_last, ids_of($a));
note "A before it stops: last_id $a_last, $a_lead ms ahead of its clock"
  . ($a_lead > 1000 ? '' : ' (not beyond B\'s max_lead: the check below does not depend on floor_id this time)');

my $a_claims = $a->safe_psql('postgres', 'SELECT claims FROM snowid_registry_stats()');
cmp_ok($a_claims, '>=', 1, "A counted its claim ($a_claims)");
clean($a, 'stop', 'A stopped');
my $b_took = wait_state($b, 'ok', 'B, once A is gone');
cmp_ok($b_took // 999, '<', 60, 'B took node 1 over by itself');
note sprintf('2. B in state ok %.2f s after A stopped', $b_took // -1);
is(status_of($b, 'node_id'), $node_id, 'B holds node 1');

my $t0 = time;
$b->safe_psql('postgres',
	'INSERT INTO ids(id) SELECT snowid_next() FROM generate_series(1, 5000)');
note sprintf('B\'s first 5000 IDs took %.2f s (it waits for its clock to come within max_lead of the floor)',
	time - $t0);
my @b_ids = ids_of($b);
is(scalar(@b_ids), 5000, 'B issues IDs now');
cmp_ok(min_of(@b_ids), '>', $a_max,
	'every ID of B is above every ID A issued (returned or not)');
is($b->safe_psql('postgres',
		"SELECT count(*) FROM ids WHERE snowid_node(id) <> $node_id"),
	'0', 'B\'s IDs carry node 1');
my $b_port = $b->port;
my $b_sysid = system_identifier($b);
is( $registry->safe_psql('postgres',
		"SELECT state, port, system_identifier, holder FROM snowid_registry_nodes WHERE node_id = $node_id"),
	"held|$b_port|$b_sysid|cluster \"member_b\" on "
	  . $registry->safe_psql('postgres',
		"SELECT host FROM snowid_registry_nodes WHERE node_id = $node_id")
	  . ":$b_port, system identifier $b_sysid",
	'the registry\'s view names B as the holder of node 1');
my ($b_claims, $b_conflicts) = split /\|/,
  $b->safe_psql('postgres', 'SELECT claims, conflicts FROM snowid_registry_stats()');
cmp_ok($b_claims, '>=', 1, "B counted its claim ($b_claims)");
cmp_ok($b_conflicts, '>=', $b_conflicts_1, "B's conflicts stay counted ($b_conflicts)");

# ==== 3. another layout ====

my $c = member('member_c', 3, @member, extra => "snowid.sequence_bits = 11\n");
wait_state($c, 'conflict', 'C, with sequence_bits 11');
like(status_of($c, 'detail'),
	qr/^the registry's layout is .*sequence_bits 12.*; this server's is .*sequence_bits 11/,
	'C\'s status detail names both layouts');
like(next_error($c),
	qr/ERROR:  55000: snowid registry refused node 3 to this server\n.*DETAIL:  The registry's layout is/s,
	'on C, snowid_next() fails with 55000: refused, the layout in the detail');
my ($ret) = $c->psql('postgres', 'SELECT count(*) FROM snowid_next_batch(10)');
isnt($ret, 0, 'snowid_next_batch() fails on C too');
is($c->safe_psql('postgres', 'SELECT ids_issued FROM snowid_stats()'),
	'0', 'C issued nothing');
is($registry->safe_psql('postgres', 'SELECT count(*) FROM snowid_registry_nodes WHERE node_id = 3'),
	'0', 'the registry has no row for node 3');
my $c_conflicts =
  $c->safe_psql('postgres', 'SELECT conflicts FROM snowid_registry_stats()');
cmp_ok($c_conflicts, '>=', 1, "C counted its conflicts ($c_conflicts)");

# ==== 4. assigned node IDs ====

# Held now: node 1 (B).  The lowest free nodes are 0, then 2.
my $e = member('member_e', undef, @member);
wait_state($e, 'ok', 'E, without snowid.node_id');
my $d = member('member_d', undef, @member);
wait_state($d, 'ok', 'D, without snowid.node_id');
my $e_node = status_of($e, 'node_id');
my $d_node = status_of($d, 'node_id');
is($e_node, '0', 'E was assigned node 0, the lowest free');
is($d_node, '2', 'D was assigned node 2, the lowest free after 0 and B\'s 1');
is($e->safe_psql('postgres', 'SELECT node_id FROM snowid_layout()'),
	$e_node, 'snowid_layout().node_id on E shows it');
is($d->safe_psql('postgres', 'SELECT node_id FROM snowid_layout()'),
	$d_node, 'snowid_layout().node_id on D shows it');
for my $r ([ 'E', $e, $e_node ], [ 'D', $d, $d_node ])
{
	my ($who, $node, $n) = @$r;
	$node->safe_psql('postgres',
		'INSERT INTO ids(id) SELECT snowid_next() FROM generate_series(1, 2000)');
	is( $node->safe_psql('postgres',
			"SELECT count(DISTINCT id), bool_and(snowid_node(id) = $n) FROM ids"),
		'2000|t', "$who issues IDs of node $n");
}

# E stopped frees node 0, the lowest; D restarted asks for its node 2 again.
clean($e, 'stop', 'E stopped');
my @d_before = ids_of($d);
clean($d, 'restart', 'D restarted');
wait_state($d, 'ok', 'D, restarted while node 0 is free');
is(status_of($d, 'node_id'), '2', 'D keeps node 2 across a clean restart (persisted)');
is($d->safe_psql('postgres', 'SELECT node_id FROM snowid_layout()'),
	'2', 'snowid_layout().node_id on D still 2');
$d->safe_psql('postgres',
	'INSERT INTO ids(id) SELECT snowid_next() FROM generate_series(1, 2000)');
my @d_after = ids_of($d, 'seq > ' . scalar(@d_before));
cmp_ok(min_of(@d_after), '>', max_of(@d_before), 'D\'s IDs after its restart are above those before');
is($d->safe_psql('postgres', 'SELECT count(*) FROM ids WHERE snowid_node(id) <> 2'),
	'0', 'all of them of node 2');
$e->start;
wait_state($e, 'ok', 'E, started again');
is(status_of($e, 'node_id'), '0', 'E gets node 0 back');

# ==== 5. a clean restart continues at once ====

# A few times, since a release that fails now and then (the postmaster's
# second SIGTERM) shows only in some.
my @restart_took;
my $b_ids = scalar(ids_of($b));
for my $i (1 .. 10)
{
	my @before = ids_of($b);
	clean($b, 'restart', "B, clean restart $i");
	my $took = wait_state($b, 'ok', "B, after clean restart $i");
	push @restart_took, $took // 999;
	$b->safe_psql('postgres',
		'INSERT INTO ids(id) SELECT snowid_next() FROM generate_series(1, 1000)');
	my @after = ids_of($b, 'seq > ' . scalar(@before));
	is(scalar(@after), 1000, "B issues after clean restart $i");
	cmp_ok(min_of(@after), '>', max_of(@before),
		"B's IDs after clean restart $i are above those before");
}
$b_ids = scalar(ids_of($b)) - $b_ids;
cmp_ok(max_of(@restart_took), '<', 60, 'B goes on after each clean restart');
note '5. B in state ok after its clean restarts returned: '
  . join(', ', map { sprintf('%.2f s', $_) } @restart_took);

# The member's claims while another session holds the registry's settings
# table for 2.5 s: a claim waits for no lock longer than 100 ms, so each
# fails at once and the lease is kept; once the lock is gone, a clean stop
# releases the node.
my ($lock_out, $lock_err) = ('', '');
my $e_failures = $e->safe_psql('postgres', 'SELECT failures FROM snowid_registry_stats()');
my $lock = IPC::Run::start(
	[
		'psql', '-XAtq', '-d', $registry->connstr('postgres'), '-c',
		'BEGIN; LOCK TABLE snowid_registry_settings IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(2.5); COMMIT;'
	],
	'>', \$lock_out, '2>', \$lock_err,
	IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
ok( $e->poll_query_until('postgres',
		"SELECT failures > $e_failures FROM snowid_registry_stats()"),
	'E\'s claims fail at the registry, at once');
is(status_of($e, 'node_id'), '0', 'E keeps node 0 meanwhile');
ok($lock->finish, 'the lock was held and let go') or diag $lock_err;
wait_state($e, 'ok', 'E, once the lock is gone');
clean($e, 'stop', 'E stopped after its claims failed');
is( $registry->safe_psql('postgres',
		'SELECT state FROM snowid_registry_nodes WHERE node_id = 0'),
	'released', 'the registry shows node 0 released');
$e->start;
wait_state($e, 'ok', 'E, started again');
is(status_of($e, 'node_id'), '0', 'E gets node 0 back');

# ==== 6. what the registry and the members show ====

my $d_port = $d->port;
my $e_port = $e->port;
is( $registry->safe_psql('postgres',
		q{SELECT node_id, state, cluster_name, port FROM snowid_registry_nodes ORDER BY node_id}),
	"0|held|member_e|$e_port\n1|held|member_b|$b_port\n2|held|member_d|$d_port",
	'snowid_registry_nodes lists the holders: E, B and D');
is( $registry->safe_psql('postgres',
		q{SELECT count(*) FROM snowid_registry_nodes
		  WHERE holder = format('cluster "%s" on %s:%s, system identifier %s', cluster_name, host, port, system_identifier)
		    AND lease_until > now() AND last_seen <= now()}),
	'3', 'each with its holder text and a live lease');
for my $r ([ 'B', $b ], [ 'D', $d ], [ 'E', $e ])
{
	my ($who, $node) = @$r;
	my ($claims, $renewals, $conflicts) = split /\|/,
	  $node->safe_psql('postgres',
		'SELECT claims, renewals, conflicts FROM snowid_registry_stats()');
	cmp_ok($claims, '>=', 1, "$who counted its claim ($claims claims, $renewals renewals)");
	is($conflicts, '0', "$who had no conflict since its start") if $who ne 'B';
}
is(status_of($c, 'state'), 'conflict', 'C is still refused');
cmp_ok($c->safe_psql('postgres', 'SELECT conflicts FROM snowid_registry_stats()'),
	'>', $c_conflicts, 'C keeps retrying (its conflicts grow)');

# ==== 7. without a registry ====

my $plain = snowid_node('plain', 7);
$plain->start;
$plain->safe_psql('postgres', 'CREATE EXTENSION snowid');
is(status_of($plain, 'registry IS NULL, state, node_id'),
	't|off|7', 'without a registry: state off');
is($plain->safe_psql('postgres', 'SELECT snowid_node(snowid_next())'),
	'7', 'snowid_next() works with snowid.node_id');
is($plain->safe_psql('postgres', 'SELECT claims + renewals + conflicts + outages + failures + releases FROM snowid_registry_stats()'),
	'0', 'and the registry counters stay at zero');

note sprintf('figures: A %d IDs (+16 batches), B %d IDs, D %d, E 2000; conflicts: B %d, C %d; shared IDs %s; '
	  . 'B took over %.2f s after A stopped; clean restart to ok at most %.2f s',
	$txn_a * $per_txn, scalar(@b_ids) + $b_ids, scalar(@d_before) + 2000,
	$b_conflicts, $c_conflicts, $shared, $b_took // -1, max_of(@restart_took));

$_->stop for ($plain, $b, $c, $d, $e, $registry);

done_testing();
