# Copyright (c) snowid contributors
#
# The registry's claims after the hostile review of 1.7 (issue 29, findings
# 1, 8 and 9).  A registry database "reg"; a member V (node 1, login role
# m_v, cluster_name "V"); an attacker logged in as m_a, another
# member's role, calling the registry's functions directly:
#
# 1. poisoned floors: a claim of the node V released at its clean shutdown
#    reporting p_last_id = 2^62, and a release reporting 2^63-1, are refused
#    (22023) and recorded nowhere; V restarts, holds node 1 again and
#    issues above its earlier IDs;
# 2. a floor from the registry that no holder can have reached (the row
#    poisoned by hand, as a registry of 1.7 could be): V refuses the
#    answer, says why in snowid_registry_status(), issues nothing from it
#    and prints no negative "next ID", and refuses it again at its next
#    claims (the registry recorded it as the holder when it answered:
#    1.10 answered those without the floor, and V issued); once the row is
#    corrected it holds its node again;
# 3. max_nodes_per_role = 2 under concurrent claims of one role: three
#    sessions claiming in transactions left open, and 30 pgbench clients at
#    once: never more than 2 nodes held;
# 4. identities: a conflict over V's node and a pool grant on it name V's
#    cluster, host, port and system identifier to no member role, but to a
#    role in pg_monitor.

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

# ---- the registry ----

# The group snowid_members holds the grants of claim, release and
# pool_grant; m_mon is in pg_monitor too.
my ($registry, $reg) = registry(
	dbname => 'reg',
	group => 'snowid_members',
	logins => [qw(m_v m_a m_c m_d m_mon)],
	monitor => ['m_mon'],
	grant => [qw(claim release pool_grant)],
	sql => "SELECT snowid_pool_create('orders', 'integer');");

my $v = member('V', 1,
	registry => $reg,
	user => 'm_v',
	application_name => 1,
	lease => '60s',
	sql => 'CREATE TABLE ids(id bigint NOT NULL)',
	wait => 'V holds node 1');

sub take
{
	my ($node, $n) = @_;
	return $node->psql('postgres',
		"INSERT INTO ids SELECT snowid_next() FROM generate_series(1, $n)");
}

sub state_of
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		'SELECT state, node_id, detail FROM snowid_registry_status()');
}

is(take($v, 100), 0, 'V issues');
my $layout = $registry->safe_psql('reg',
	'SELECT layout FROM snowid_registry_settings');

# A call on the registry as a role: 'error: <stderr>' or its output.
sub as_role
{
	my ($role, $sql) = @_;
	my ($ret, $out, $err) =
	  $registry->psql('reg', $sql, extra_params => [ '-U', $role ]);
	return $ret == 0 ? $out : "error: $err";
}

# A claim of node (undef: any, assigned) with the given start and report.
sub claim_sql
{
	my ($node, $start, $last, %o) = @_;
	return sprintf(
		"SELECT result || ' ' || coalesce(node_id::text, '-') || ' ' || coalesce(holder, '-') || ' | ' || coalesce(detail, '-') "
		  . "FROM snowid_registry_claim(%s, %s, 1023, \$\$%s\$\$, 'evil', 'evilhost', 1, 42, '%s', rpad('%s', 32, '#'), NULL, false, 60000, 0, 0, %s)",
		$node // 'NULL', defined $node ? 'false' : 'true',
		$layout, $start, $start, $last // 'NULL');
}

sub release_sql
{
	my ($node, $start, $last) = @_;
	return "SELECT snowid_registry_release($node, '$start', rpad('$start', 32, '#'), $last)";
}

# ==== 1. poisoned floors ====

my $v_max = $v->safe_psql('postgres', 'SELECT max(id) FROM ids');
$v->stop;
is( $registry->safe_psql('reg',
		'SELECT state FROM snowid_registry_nodes WHERE node_id = 1'),
	'released', 'V released node 1 at its clean shutdown');
my $row_before = $registry->safe_psql('reg',
	'SELECT last_id, floor_until FROM snowid_registry_node WHERE node_id = 1');

like(
	as_role('m_a', claim_sql(1, 'p1', '4611686018427387904')),
	qr/error: .*reported last ID 4611686018427387904 is outside 0 to \d+/,
	'a claim of the released node reporting 2^62: refused');
like(
	as_role('m_a', claim_sql(1, 'p1', '-1')),
	qr/error: .*reported last ID -1 is outside/,
	'a claim reporting -1: refused');
is( $registry->safe_psql('reg',
		'SELECT last_id, floor_until FROM snowid_registry_node WHERE node_id = 1'),
	$row_before, 'nothing recorded for node 1');
like(as_role('m_a', claim_sql(1, 'p1', undef)),
	qr/^ok 1 /, 'the attacker claims the released node without a report');
like(
	as_role('m_a', release_sql(1, 'p1', '9223372036854775807')),
	qr/error: .*reported last ID 9223372036854775807 is outside/,
	'its release reporting 2^63-1: refused');
is( $registry->safe_psql('reg',
		'SELECT last_id FROM snowid_registry_node WHERE node_id = 1'),
	(split /\|/, $row_before)[0] // '',
	'nothing recorded for node 1');
is(as_role('m_a', release_sql(1, 'p1', 'NULL')), 't',
	'its release without a report');

$v->start;
ok(wait_registry_state($v, 'ok'), 'V holds node 1 again after its restart');
is(take($v, 100), 0, 'V issues after its restart');
cmp_ok($v->safe_psql('postgres', 'SELECT min(id) FROM ids WHERE id > ' . $v_max),
	'>', 0, 'above its earlier IDs');
cmp_ok($registry->safe_psql('reg',
		'SELECT last_id FROM snowid_registry_node WHERE node_id = 1'),
	'<', '4611686018427387904', 'node 1 carries no poisoned last ID');

# ==== 2. a floor no holder can have reached ====

$v->stop;
my $last_ok = $registry->safe_psql('reg',
	'SELECT last_id FROM snowid_registry_node WHERE node_id = 1');
$registry->safe_psql('reg',
	'UPDATE snowid_registry_node SET last_id = 4611686018427387904 WHERE node_id = 1');
$v->start;
# (Its release at the stop may not have reached the registry on a loaded
# machine: then its predecessor's lease is taken over after 5 s of
# silence, with the same floor.)
$v->poll_query_until('postgres',
	"SELECT state = 'ok' OR detail LIKE '%floor of ID 4611686018427387904%' FROM snowid_registry_status()")
  or die 'V never answered';
like(state_of($v),
	qr/^conflict\|1\|.*floor of ID 4611686018427387904/,
	'V refuses a grant whose floor no holder can have reached, and says why');
# The registry recorded V as the holder when it answered: V's next claims
# are its holder's.  They carry the floor again, and are refused again
# (1.10 answered them without a floor, and V held node 1 a second later
# and issued below the floor it had refused).
my $refused = $v->safe_psql('postgres', 'SELECT conflicts FROM snowid_registry_stats()');
$v->poll_query_until('postgres',
	"SELECT state = 'ok' OR conflicts >= $refused + 2 FROM snowid_registry_status(), snowid_registry_stats()")
  or die 'V claimed no more';
like(state_of($v),
	qr/^conflict\|1\|.*floor of ID 4611686018427387904/,
	'and refuses it again at its next claims, as the holder the registry recorded');
my ($ret, $out, $err) = $v->psql('postgres', 'SELECT snowid_next()');
isnt($ret, 0, 'V issues nothing meanwhile');
my $log = slurp_file($v->logfile);
unlike($log, qr/next ID will be -/, 'no negative next ID in the log');
unlike($log, qr/out of range for type bigint/, 'no report beyond bigint');
$registry->safe_psql('reg',
	"UPDATE snowid_registry_node SET last_id = $last_ok WHERE node_id = 1");
ok(wait_registry_state($v, 'ok'), 'once the row is corrected V holds node 1');
is(take($v, 100), 0, 'and issues');

# ==== 3. max_nodes_per_role under concurrent claims ====

$registry->safe_psql('reg',
	'UPDATE snowid_registry_settings SET max_nodes_per_role = 2');

# three sessions of one role, each claiming in a transaction left open
my @open;
for my $i (1 .. 3)
{
	my %s = (out => '', err => '');
	$s{h} = IPC::Run::start(
		[
			'psql', '-X', '-h', $registry->host, '-p', $registry->port,
			'-U', 'm_c', '-d', 'reg', '-c',
			'BEGIN; ' . claim_sql(undef, "o$i", undef) . '; SELECT pg_sleep(3); COMMIT;'
		],
		'>', \$s{out}, '2>', \$s{err});
	push @open, \%s;
}
$_->{h}->finish for @open;
my $held_c = $registry->safe_psql('reg',
	"SELECT count(*) FROM snowid_registry_nodes WHERE holder_role = 'm_c' AND state = 'held'");
# (from 2.0 the registry's server process decides each claim and commits
# it at once, whatever the caller's transaction does: two are granted, the
# third is refused for the role's limit)
is($held_c, 2, 'three open claims of one role: it holds 2 nodes, its limit');
is(join('', map { $_->{err} } @open), '', 'and no claim failed');

# 30 clients of one role at once, each claiming a node
my $dir = PostgreSQL::Test::Utils::tempdir;
open my $fh, '>', "$dir/claim.sql" or die $!;
print $fh "SELECT snowid_registry_claim(NULL, true, 1023, \$\$$layout\$\$, 'evil', 'evilhost', 1, 42, 'b' || :client_id, rpad('b' || :client_id, 32, '#'), NULL, false, 60000, 0, 0, NULL);\n";
close $fh;
my ($pout, $perr) = ('', '');
IPC::Run::run(
	[
		'pgbench', '-n', '-c', 30, '-j', 30, '-t', 3, '-f', "$dir/claim.sql",
		'-h', $registry->host, '-p', $registry->port, '-U', 'm_d', 'reg'
	],
	'>', \$pout, '2>', \$perr);
my $held_d = $registry->safe_psql('reg',
	"SELECT count(*) FROM snowid_registry_nodes WHERE holder_role = 'm_d' AND state = 'held'");
cmp_ok($held_d, '>=', 1, 'the concurrent claims got nodes');
cmp_ok($held_d, '<=', 2,
	"30 concurrent claims of one role: it holds $held_d nodes, at most 2");

# ==== 4. identities ====

my $sysid_v = $v->safe_psql('postgres',
	'SELECT system_identifier FROM pg_control_system()');
my $port_v = $v->port;
my $c = as_role('m_a', claim_sql(1, 'p2', undef));
like($c, qr/^conflict 1 another server \| node 1 is held by another server/,
	'a conflict over V\'s node, to another member: "another server"');
unlike($c, qr/$sysid_v|cluster "V"|:$port_v\b|lease until/,
	'names neither V\'s system identifier, cluster, port nor lease');
my $g = as_role('m_a',
	"SELECT result || ' ' || coalesce(detail, '') FROM snowid_pool_grant('orders', 1, 42, 'p2', rpad('p2', 32, '#'), 'r1', 10, '{}', '{}')");
like($g, qr/^refused /, 'a pool grant on V\'s node: refused');
unlike($g, qr/$sysid_v|cluster "V"|:$port_v\b/, 'naming nothing of V');
$c = as_role('m_mon', claim_sql(1, 'p3', undef));
like($c, qr/^conflict 1 cluster "V" on .*:$port_v, system identifier $sysid_v/,
	'to a role in pg_monitor the conflict names V');

$v->stop;
$registry->stop;
done_testing();
