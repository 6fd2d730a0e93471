
# Copyright (c) snowid contributors
#
# The registry trusts no caller (1.5), attacked from the roles that can
# reach it.  A registry database "reg" owned by a role that is not a
# superuser; members A (node 1) and B (node 2), each with its own login
# role (m_a, m_b; the group snowid_members holds the grants).  An attacker
# who knows A's login:
#
# 1. forges claims of B's node and of A's own node (as A's promoted standby
#    or restart, asking for no takeover delay), and a release naming A's
#    start: every one is refused, A and B go on issuing under their nodes;
# 2. claims a free node for 40 years: granted for the registry's longest
#    lease (7 days); and claims nodes until the role's limit: no more;
# 3. reports a range of a pool that would empty it: nothing recorded;
# 4. leaves a transaction open for 8 s after a claim: A and B renew
#    meanwhile, every second, never waiting;
# 5. the registry database's owner cannot rename the extension's schema;
#    when a superuser does and plants a function of the claim's name where
#    it was, A and B refuse its answer (the function is not the
#    extension's) and issue nothing under it; once the schema is back, they
#    hold their nodes again;
# 6. a superuser of the registry makes the claim answer node 5000 to a
#    member with 10 node bits: the member refuses the answer and issues
#    nothing.
# Every step checks that no ID was issued twice.

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;
use Time::HiRes qw(time sleep);

my $claim_sig = registry_signature('claim');
# what a member holding its lease calls on a registry of 1.8 on
my $reassert_sig = registry_signature('reassert');

# ---- the registry ----

# The group snowid_members holds the grants of the members' functions.
my ($registry, $reg) = registry(
	dbname => 'reg',
	owner => 'regowner',
	group => 'snowid_members',
	logins => [qw(m_a m_b)],
	sql => "SELECT snowid_pool_create('orders', 'integer');");

# A member logs in as its role (member(..., @member, user => ROLE)), with a
# table of the IDs it issues.
my @member = (
	registry => $reg,
	application_name => 1,
	lease => '60s',
	sql => 'CREATE TABLE ids(id bigint NOT NULL)');

sub state_of
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		'SELECT state, node_id, detail FROM snowid_registry_status()');
}

sub take
{
	my ($node, $n) = @_;
	return $node->psql('postgres',
		"INSERT INTO ids SELECT snowid_next() FROM generate_series(1, $n)");
}

sub renewals
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		'SELECT renewals FROM snowid_registry_stats()');
}

# No ID issued twice across the members.
sub no_shared_ids
{
	my ($what, @nodes) = @_;
	my (%seen, $dup, $n);
	for my $node (@nodes)
	{
		for my $id (split /\n/, $node->safe_psql('postgres', 'SELECT id FROM ids'))
		{
			$n++;
			$dup++ if $seen{$id}++;
		}
	}
	is($dup // 0, 0, "$what: none of $n IDs issued twice");
	return;
}

my $a = member('A', 1, @member, user => 'm_a');
my $b = member('B', 2, @member, user => 'm_b');
ok(wait_registry_state($a, 'ok'), 'A holds its node');
ok(wait_registry_state($b, 'ok'), 'B holds its node');
is(take($a, 100), 0, 'A issues');
is(take($b, 100), 0, 'B issues');

my $sysid_a = $a->safe_psql('postgres',
	'SELECT system_identifier FROM pg_control_system()');
my $sysid_b = $b->safe_psql('postgres',
	'SELECT system_identifier FROM pg_control_system()');
my $start_a = $registry->safe_psql('reg',
	'SELECT start_id FROM snowid_registry_node WHERE node_id = 1');
my $layout = $registry->safe_psql('reg',
	'SELECT layout FROM snowid_registry_settings');

# A claim as the attacker (logged in as m_a): its result and detail.
sub attack
{
	my ($node, $sysid, $start, $pred, $promoted, $lease_ms, $auto) = @_;
	my $sql = sprintf(
		"SELECT result || ' ' || coalesce(node_id::text, '-') || ' ' || coalesce(lease_ms::text, '-') "
		  . "FROM snowid_registry_claim(%s, %s, 1023, \$\$%s\$\$, 'x', 'evil', 1, %s, '%s', repeat('e', 32), %s, %s, %d, 0, 0, NULL)",
		$node // 'NULL', $auto ? 'true' : 'false', $layout, $sysid, $start,
		defined $pred ? "'$pred'" : 'NULL', $promoted ? 'true' : 'false', $lease_ms);
	my ($ret, $out, $err) =
	  $registry->psql('reg', $sql, extra_params => [ '-U', 'm_a' ]);
	return $ret == 0 ? $out : "error: $err";
}

# ==== 1. forged claims and releases ====

like(attack(2, $sysid_b, 'forged', undef, 1, 60000),
	qr/^conflict 2/, "B's node claimed as its promoted standby: conflict");
like(attack(1, $sysid_a, 'forged', $start_a, 1, 60000),
	qr/^conflict 1/,
	"A's node claimed by A's role as its restart, no takeover delay asked: conflict");
like(attack(1, $sysid_a, $start_a, undef, 0, 60000),
	qr/^conflict 1/, "A's node claimed naming A's start without its secret: conflict");
is( $registry->safe_psql(
		'reg',
		"SELECT snowid_registry_release(1, '$start_a', repeat('e', 32), NULL)",
		extra_params => [ '-U', 'm_a' ]),
	'f',
	"a release naming A's start without its secret: refused");
sleep 1.5;
like(state_of($a), qr/^ok\|1\|/, 'A still holds node 1');
like(state_of($b), qr/^ok\|2\|/, 'B still holds node 2');
is(take($a, 100), 0, 'A still issues');
is(take($b, 100), 0, 'B still issues');
is( $registry->safe_psql(
		'reg', 'SELECT string_agg(holder_role::text, \',\' ORDER BY node_id) FROM snowid_registry_node'),
	'm_a,m_b',
	'the registry binds each lease to its member\'s login role');

# ==== 2. a lease of 40 years; nodes up to the role's limit ====

like(attack(5, 1, 'greedy1', undef, 0, 40 * 365 * 86400 * 1000),
	qr/^ok 5 604800000$/, 'a lease of 40 years is granted for 7 days');
$registry->safe_psql('reg',
	'UPDATE snowid_registry_settings SET max_nodes_per_role = 3');
like(attack(undef, 2, 'greedy2', undef, 0, 60000, 1),
	qr/^ok \d+/, "a third node for A's role");
like(attack(undef, 3, 'greedy3', undef, 0, 60000, 1),
	qr/^conflict/, "no fourth node for A's role (max_nodes_per_role 3)");
is( $registry->safe_psql(
		'reg',
		"SELECT count(*) FROM snowid_registry_nodes WHERE holder_role = 'm_a' AND state = 'held'"),
	'3',
	"A's role holds 3 nodes, its member's and two of the attacker's");

# ==== 3. a report that would empty a pool ====

my $left = $registry->safe_psql('reg',
	"SELECT values_left FROM snowid_pools WHERE name = 'orders'");
is( $registry->safe_psql(
		'reg',
		"SELECT snowid_pool_report(5, 1, 'greedy1', repeat('e', 32), '{orders}', '{1}', '{2147483647}')",
		extra_params => [ '-U', 'm_a' ]),
	'0',
	'a report of the whole pool by a holder of a node: nothing recorded');
is( $registry->safe_psql(
		'reg', "SELECT values_left FROM snowid_pools WHERE name = 'orders'"),
	$left, 'the pool keeps every value');

# ==== 4. a transaction left open after a claim ====

my $r_a = renewals($a);
my $r_b = renewals($b);
my ($out, $err) = ('', '');
my $open = IPC::Run::start(
	[
		'psql', '-X', '-h', $registry->host, '-p', $registry->port,
		'-U', 'm_a', '-d', 'reg', '-c',
		"BEGIN; SELECT result FROM snowid_registry_claim(5, false, 1023, \$\$$layout\$\$, 'x', 'evil', 1, 1, 'greedy1', repeat('e', 32), NULL, false, 60000, 0, 0, NULL); "
		  . "SELECT pg_sleep(8); COMMIT;"
	],
	'>', \$out, '2>', \$err);
sleep 7;
cmp_ok(renewals($a) - $r_a, '>=', 4,
	'A renewed its lease while the transaction stayed open');
cmp_ok(renewals($b) - $r_b, '>=', 4,
	'B renewed its lease while the transaction stayed open');
like(state_of($a), qr/^ok\|1\|/, 'A holds node 1 meanwhile');
$open->finish;
like($out, qr/ok/, 'the open transaction had its claim');
no_shared_ids('after the forged calls', $a, $b);

# ==== 5. a planted function in a renamed schema ====

# The registry database's owner owns public (PostgreSQL 15 and later) but
# may not rename it while snowid lives there.
my ($ret, $stdout, $stderr) = $registry->psql('reg',
	'ALTER SCHEMA public RENAME TO snowid_real',
	extra_params => [ '-U', 'regowner' ]);
isnt($ret, 0, "the registry database's owner cannot rename snowid's schema");
like($stderr, qr/the schema of the snowid extension cannot be renamed/,
	'the error says why');

# Had it (a superuser turning the guard off stands in for a way around it),
# and planted a claim function where the extension's was, the members would
# refuse the answers of a function that is not the extension's.
$registry->safe_psql(
	'reg', qq{
BEGIN;
ALTER EVENT TRIGGER snowid_schema_renamed DISABLE;
ALTER SCHEMA public RENAME TO snowid_real;
CREATE SCHEMA public;
GRANT USAGE ON SCHEMA public TO PUBLIC;
CREATE FUNCTION public.$claim_sig
RETURNS TABLE (result text, node_id integer, lease_ms bigint, holder text,
			   detail text, floor_id bigint, floor_until timestamptz)
LANGUAGE sql AS \$\$ SELECT 'ok', 7, 60000::bigint, NULL::text, NULL::text,
	NULL::bigint, NULL::timestamptz \$\$;
GRANT EXECUTE ON FUNCTION public.$claim_sig TO PUBLIC;
CREATE FUNCTION public.$reassert_sig
RETURNS TABLE (result text, node_id integer, lease_ms bigint, holder text,
			   detail text, floor_id bigint, floor_until timestamptz)
LANGUAGE sql AS \$\$ SELECT 'ok', 7, 60000::bigint, NULL::text, NULL::text,
	NULL::bigint, NULL::timestamptz \$\$;
GRANT EXECUTE ON FUNCTION public.$reassert_sig TO PUBLIC;
COMMIT;
});
ok( $a->poll_query_until(
		'postgres', 'SELECT state FROM snowid_registry_status()', 'conflict'),
	"A refuses the planted function's answer");
like(
	$a->safe_psql('postgres', 'SELECT detail FROM snowid_registry_status()'),
	qr/not the function of its snowid extension/,
	'A says why');
isnt(take($a, 1), 0, 'A issues nothing meanwhile');
ok( $b->poll_query_until(
		'postgres', 'SELECT state FROM snowid_registry_status()', 'conflict'),
	"B refuses it too");
isnt($a->safe_psql('postgres', 'SELECT node_id FROM snowid_registry_status()'),
	'7', 'A does not take node 7');
$registry->safe_psql(
	'reg', q{
BEGIN;
ALTER EVENT TRIGGER snowid_dropped DISABLE;
DROP SCHEMA public CASCADE;
ALTER SCHEMA snowid_real RENAME TO public;
ALTER EVENT TRIGGER snowid_dropped ENABLE;
ALTER EVENT TRIGGER snowid_schema_renamed ENABLE;
COMMIT;
});
ok(wait_registry_state($a, 'ok'), 'A holds its node again once the schema is back');
like(state_of($a), qr/^ok\|1\|/, 'A holds node 1, not 7');
ok(wait_registry_state($b, 'ok'), 'B holds its node again');
is(take($a, 100), 0, 'A issues again');
no_shared_ids('after the planted function', $a, $b);

# ==== 6. a tampered answer: a node outside the layout ====

my $c = member('C', 3, @member, user => 'm_b');
ok(wait_registry_state($c, 'ok'), 'C holds its node');
$registry->safe_psql(
	'reg', qq{
ALTER FUNCTION $claim_sig RENAME TO snowid_registry_claim_real;
CREATE FUNCTION $claim_sig
RETURNS TABLE (result text, node_id integer, lease_ms bigint, holder text,
			   detail text, floor_id bigint, floor_until timestamptz)
LANGUAGE sql AS \$\$ SELECT 'ok', 5000, 60000::bigint, NULL::text, NULL::text,
	NULL::bigint, NULL::timestamptz \$\$;
ALTER EXTENSION snowid ADD FUNCTION $claim_sig;
});
ok( $c->poll_query_until(
		'postgres', 'SELECT state FROM snowid_registry_status()', 'conflict'),
	'C refuses node 5000 from its registry');
like(
	$c->safe_psql('postgres', 'SELECT detail FROM snowid_registry_status()'),
	qr/node 5000, outside this server's layout/,
	'C says why');
isnt(take($c, 1), 0, 'C issues nothing under it');
no_shared_ids('at the end', $a, $b, $c);

$_->stop for ($a, $b, $c);
$registry->stop;
done_testing();
