# The registry on a server that issues IDs itself (a Citus coordinator
# hosting the registry database is the common case): that server cannot be
# a member of its own registry, so it issues under snowid.node_id unchecked;
# the registry must never grant its node to another server.
#
# 1. The host issues under snowid.node_id = 0 and holds the registry; two
#    members with automatic node IDs get other nodes than 0, and
#    concurrent inserts of snowid_next() on all three leave no duplicate.
# 2. A member that names node 0 gets a conflict naming the registry's own
#    server, and issues nothing.
# 3. A member added later gets a free node, not 0.
# 4. The registry's view shows node 0 held by the registry's own server.
# 5. The host restarted with snowid.node_id = 5: node 0 is not granted
#    while the row of the host lasts (the registry's max_lease), then the
#    member that names it gets it and issues above every ID the host
#    issued, and no ID of any server came out twice.
# 6. The host restarted under the node of an automatic member: the member
#    moves to a free node.
#
# One layout for all: 4 sequence bits (16 IDs per millisecond), so that a
# batch runs the host ahead of its clock (borrowing within max_lead).

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

my $layout =
    "snowid.sequence_bits = 4\n"
  . "snowid.max_lead = '2s'\n"
  . "snowid.max_wait = '10s'\n";

# The IDs table and take(n) (n IDs, or the error kept in errs) on a server.
my $setup = take_setup_sql();

# ---- the host: issues under node 0, holds the registry database ----

# A short max_lease, so that the host's row of an old node runs out within
# the test (members' leases: 30 s, at least max_lead plus the margin).
my ($host, $reg_conninfo) = registry(
	name => 'host',
	node_id => 0,
	conf => "cluster_name = 'host'\n" . $layout,
	sql => $setup
	  . q{INSERT INTO snowid_registry_settings (only_row, max_lease) VALUES (true, '30 s');});

# The host issues before any member claims.
$host->safe_psql('postgres', 'SELECT take(100)');

# A member with node $node_id (undef: automatic), started, with the tables:
# member($name, $node_id, @member).
my @member = (
	registry => $reg_conninfo,
	cluster_name => 1,
	application_name => 1,
	extra => $layout,
	sql => $setup);

# Every ID of the servers given, and how many came out more than once.
sub duplicates
{
	my %seen;
	my $dups = 0;
	my $all = 0;
	for my $node (@_)
	{
		for my $id (ids_of($node))
		{
			$all++;
			$dups++ if $seen{$id}++;
		}
	}
	return ($all, $dups);
}

# ==== 1. two automatic members, concurrent inserts everywhere ====

my $a = member('member_a', undef, @member);
my $b = member('member_b', undef, @member);
wait_state($a, 'ok', 'A (automatic)');
wait_state($b, 'ok', 'B (automatic)');
my $a_node = status_of($a, 'node_id');
my $b_node = status_of($b, 'node_id');
isnt($a_node, '0', "A is not granted node 0, the host's (got $a_node)");
isnt($b_node, '0', "B is not granted node 0, the host's (got $b_node)");
isnt($a_node, $b_node, 'A and B hold different nodes');

my @runs = map { start_pgbench($_->[0], $_->[1], 2, 4, 'SELECT take(20);') }
  ([ $host, 'host' ], [ $a, 'a' ], [ $b, 'b' ]);
for my $run (@runs)
{
	ok($run->{handle}->finish, 'pgbench ran') or diag $run->{err};
}
for my $r ([ 'host', $host, 0 ], [ 'A', $a, $a_node ], [ 'B', $b, $b_node ])
{
	my ($who, $node, $n) = @$r;
	is($node->safe_psql('postgres', 'SELECT count(*) FROM errs'),
		'0', "$who: no call failed")
	  or diag $node->safe_psql('postgres', 'SELECT * FROM errs LIMIT 5');
	my ($count, $wrong) = split /\|/,
	  $node->safe_psql('postgres',
		"SELECT count(*), count(*) FILTER (WHERE snowid_node(id) <> $n) FROM ids");
	cmp_ok($count, '>=', 1000, "$who issued $count IDs");
	is($wrong, '0', "$who: every ID carries node $n");
}
my ($all, $dups) = duplicates($host, $a, $b);
is($dups, 0, "concurrent inserts on the host and both members: $all IDs, no duplicate");

# ==== 2. a member naming the host's node ====

my $c = member('member_c', 0, @member);
wait_state($c, 'conflict', 'C (node 0 named)');
like(status_of($c, 'detail'),
	qr/the registry's own server issues IDs as node 0/,
	'C: the detail says the registry\'s own server issues as node 0');
like(next_error($c), qr/ERROR:  55000: snowid node 0 is held by the registry's own server: /,
	'C: snowid_next() fails with 55000, naming the registry\'s own server');
is($c->safe_psql('postgres', 'SELECT count(*) FROM ids'), '0', 'C issued nothing');

# ==== 3. a member added later ====

my $d = member('member_d', undef, @member);
wait_state($d, 'ok', 'D (automatic, added later)');
my $d_node = status_of($d, 'node_id');
ok( $d_node ne '0' && $d_node ne $a_node && $d_node ne $b_node,
	"D gets a free node ($d_node), not 0 nor A's nor B's");
$d->safe_psql('postgres', 'SELECT take(200)');
is($d->safe_psql('postgres', "SELECT count(*) FROM ids WHERE snowid_node(id) = $d_node"),
	'200', 'D issues under its node');

# ==== 4. what the registry shows ====

is( $host->safe_psql('postgres',
		q{SELECT node_id, state, registry_host, holder_role IS NULL,
				 holder LIKE 'the registry''s own server: cluster "host" on %'
			FROM snowid_registry_nodes WHERE registry_host}),
	'0|held|t|t|t',
	'snowid_registry_nodes: node 0 held by the registry\'s own server, no role');
is( $host->safe_psql('postgres',
		q{SELECT count(*) FROM snowid_registry_nodes WHERE NOT registry_host AND state = 'held'}),
	'3', 'the three automatic members hold their nodes');

# ==== 5. the host restarted under node 5 ====

# Run the host ahead of its clock (a batch, borrowing within max_lead),
# then restart it under another node.
$host->safe_psql('postgres',
	'INSERT INTO ids(id) SELECT snowid_next_batch(20000)');
my $host_max = $host->safe_psql('postgres', 'SELECT max(id) FROM ids');
my $lease_until = $host->safe_psql('postgres',
	q{SELECT lease_until FROM snowid_registry_node WHERE node_id = 0 AND registry_host});
$host->append_conf('postgresql.conf', "snowid.node_id = 5\n");
$host->restart;
is($host->safe_psql('postgres', 'SELECT snowid_node(snowid_next())'),
	'5', 'the host issues under node 5 now');
ok( $host->poll_query_until('postgres',
		q{SELECT count(*) = 1 FROM snowid_registry_nodes WHERE node_id = 5 AND registry_host}),
	'the registry keeps node 5 for the host once a claim came');

# Node 0 stays the host's while its row's lease lasts: C is still refused,
# now because the host issued under it.
ok( $c->poll_query_until('postgres',
		q{SELECT state = 'conflict' AND detail LIKE '%the registry''s own server issued IDs under it%' FROM snowid_registry_status()}),
	'C: still refused, node 0 kept for the host')
  or diag status_of($c, '*');
ok( $host->safe_psql('postgres',
		"SELECT now() < '$lease_until'::timestamptz"),
	'meanwhile the host\'s row of node 0 still lasts');

# Once it runs out, C gets node 0, not before, above every ID the host
# issued under it.
ok(wait_registry_state($c, 'ok'), 'C gets node 0 once the host\'s row ran out')
  or diag status_of($c, '*');
ok( $host->safe_psql('postgres',
		"SELECT claimed_at >= '$lease_until'::timestamptz AND NOT registry_host FROM snowid_registry_node WHERE node_id = 0"),
	'node 0 was granted to C only after the host\'s lease of it ended');
$c->safe_psql('postgres', 'SELECT take(500)');
my @c_ids = ids_of($c);
is(scalar(@c_ids), 500, 'C issued 500 IDs under node 0');
cmp_ok($c_ids[0], '>', $host_max,
	'C\'s first ID is above every ID the host issued');

# Everything, once more, with the host under node 5 and C under node 0.
@runs = map { start_pgbench($_->[0], $_->[1], 1, 2, 'SELECT take(20);') }
  ([ $host, 'host2' ], [ $a, 'a2' ], [ $c, 'c2' ]);
$_->{handle}->finish for @runs;
($all, $dups) = duplicates($host, $a, $b, $c, $d);
is($dups, 0, "every server, before and after the host's restart: $all IDs, no duplicate");

# ==== 6. the host restarted under a node a member holds ====

# The host asks no one (the README's limit: choose a node the registry does
# not show as held); the member is refused at its next claim and, assigned
# automatically, moves to a free node.  A issues nothing meanwhile.
$host->append_conf('postgresql.conf', "snowid.node_id = $a_node\n");
$host->restart;
ok( $a->poll_query_until('postgres',
		"SELECT state = 'ok' AND node_id NOT IN ($a_node, 0, 5, $b_node, $d_node) FROM snowid_registry_status()"),
	"A moves off node $a_node once the host issues under it")
  or diag status_of($a, '*');
$host->safe_psql('postgres', 'SELECT take(200)');
$a->safe_psql('postgres', 'SELECT take(200)');
my $a_new = status_of($a, 'node_id');
is( $a->safe_psql('postgres',
		"SELECT count(*) FROM (SELECT id FROM ids ORDER BY seq DESC LIMIT 200) l WHERE snowid_node(id) = $a_new"),
	'200', "A issues under its new node $a_new");
($all, $dups) = duplicates($host, $a, $b, $c, $d);
is($dups, 0, "every server, to the end: $all IDs, no duplicate");

$_->stop for ($a, $b, $c, $d, $host);
done_testing();
