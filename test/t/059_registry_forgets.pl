
# Copyright (c) snowid contributors
#
# A registry that may have forgotten its leases waits before it grants.
#
# 1. Member A holds node 1 and issues.  A superuser drops snowid in the
#    registry database and creates it again (every lease gone), then the
#    registry server restarts; A cannot reach it meanwhile (its login is
#    barred) and goes on issuing on its lease.  Member B, named node 1, and
#    member C, with no node, claim at once: both are refused while the
#    grace lasts (the detail says when the registry grants again) and issue
#    nothing.
# 2. A reaches the registry again, re-asserts its lease and keeps node 1
#    (the registry names A as the holder); it issues on, above its IDs.
# 3. After the grace B still gets a conflict for node 1, held by A; C gets
#    a free node other than 1.  No ID is shared.
# 4. The registry database's owner (not a superuser) can drop neither the
#    schema snowid lives in (DROP SCHEMA public CASCADE) nor the extension
#    (42501); a superuser still can.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

# ---- the registry, a grace of 0 to start (the settings are lost with it) ----

my ($registry, $reg) = registry(sql => q{
INSERT INTO snowid_registry_settings (only_row, reassert_grace) VALUES (true, '0');
CREATE ROLE member_a LOGIN SUPERUSER;
});

# A member (member($name, $node_id, @member [, user => ROLE])) with the
# IDs table and take(n).  B and C are made (initdb) before the registry
# forgets and only started after (start_member), so that their starts fall
# in its grace of 20 s, however slow the machine is at initdb.
my @member = (registry => $reg, application_name => 1, sql => take_setup_sql());

sub start_member
{
	my ($node) = @_;
	$node->start;
	$node->safe_psql('postgres', "CREATE EXTENSION snowid;\n" . take_setup_sql());
	return $node;
}

sub status
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		q{SELECT state || ' ' || coalesce(node_id::text, '-') || ' ' || coalesce(detail, '')
		    FROM snowid_registry_status()});
}

my $a = member('member_a', 1, @member, user => 'member_a');
my $b = member('member_b', 1, @member, start => 0);
my $c = member('member_c', undef, @member, start => 0);
ok(wait_registry_state($a, 'ok'), 'A holds node 1');
$a->safe_psql('postgres', 'SELECT take(1000)');

# ---- 1. the registry forgets; A cannot reach it ----

$registry->safe_psql('postgres', q{
ALTER ROLE member_a NOLOGIN;
SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'member_a';
DROP EXTENSION snowid;
CREATE EXTENSION snowid;
});
$registry->restart;
is($registry->safe_psql('postgres', 'SELECT count(*) FROM snowid_registry_node'),
	'0', 'the registry has forgotten every lease');

$a->safe_psql('postgres', 'SELECT take(1000)');
is($a->safe_psql('postgres', 'SELECT count(*) FROM errs'), '0',
	'A issues on its lease while the registry is out of its reach');

start_member($b);
start_member($c);
for my $m ([ $b, 'B' ], [ $c, 'C' ])
{
	my ($node, $label) = @$m;
	ok( $node->poll_query_until('postgres',
			q{SELECT state = 'conflict' AND detail LIKE '%grants new leases after 20 s%'
			    FROM snowid_registry_status()}),
		"$label is refused while the registry may have forgotten")
	  or diag status($node);
	my ($ret, $out, $err) = $node->psql('postgres', 'SELECT snowid_next()');
	isnt($ret, 0, "$label issues nothing meanwhile");
}

# ---- 2. A re-asserts and keeps node 1 ----

$registry->safe_psql('postgres', 'ALTER ROLE member_a LOGIN');
ok( $registry->poll_query_until('postgres',
		q{SELECT count(*) = 1 FROM snowid_registry_nodes
		   WHERE node_id = 1 AND cluster_name = 'member_a' AND state = 'held'}),
	'A re-asserted its lease of node 1 during the grace');
like(status($a), qr/^ok 1 /, 'A holds node 1');
like(
	$registry->safe_psql('postgres', 'SELECT snowid_registry_recovering()'),
	qr/grants new leases after 20 s/, 'the grace still lasts');
$a->safe_psql('postgres', 'SELECT take(1000)');

# ---- 3. after the grace ----

ok( $registry->poll_query_until('postgres',
		'SELECT snowid_registry_recovering() IS NULL'),
	'the grace ends');
ok( $c->poll_query_until('postgres',
		q{SELECT state = 'ok' AND node_id <> 1 FROM snowid_registry_status()}),
	'C gets a free node other than 1 after the grace')
  or diag status($c);
$c->safe_psql('postgres', 'SELECT take(1000)');
sleep 2;    # B claims every second
like(status($b), qr/^conflict 1 node 1 is held by cluster "member_a"/,
	'B still gets a conflict for node 1, held by A');
like(status($a), qr/^ok 1 /, 'A still holds node 1');
$a->safe_psql('postgres', 'SELECT take(1000)');
is($a->safe_psql('postgres', 'SELECT count(*) FROM errs'), '0',
	'A issued throughout');
is($b->safe_psql('postgres', 'SELECT count(*) FROM ids'), '0', 'B issued nothing');

my $ids_a = $a->safe_psql('postgres', 'SELECT string_agg(id::text, \',\' ORDER BY seq) FROM ids');
my $ids_c = $c->safe_psql('postgres', 'SELECT string_agg(id::text, \',\') FROM ids');
my @a = split /,/, $ids_a;
ok(strictly_increasing(@a), 'A\'s IDs increase across the forgetting');
my %seen;
my $dups = grep { $seen{$_}++ } (@a, split(/,/, $ids_c));
is($dups, 0, 'no ID is shared');

# ---- 5. a restart that lost a row; a role that lies about a lease ----
#
# A restored backup or an asynchronous standby lacks the rows of the last
# grants: nothing says which.  So the grace after a start is unconditional:
# it lasts though every row the registry kept has been renewed since.  A
# role that claims, during the grace, to re-assert a lease it never held
# gets the node above the time it asked (its IDs lie above those of any
# real holder the registry forgot).

my $layout = $registry->safe_psql('postgres',
	'SELECT layout FROM snowid_registry_settings');
$registry->safe_psql('postgres', q{
CREATE ROLE liar LOGIN;
GRANT EXECUTE ON FUNCTION snowid_registry_claim(integer, boolean, integer, text, text, text, integer, numeric, text, text, text, boolean, bigint, bigint, bigint, bigint) TO liar;
DELETE FROM snowid_registry_node WHERE node_id <> 1;
});
$registry->restart;
ok( $registry->poll_query_until('postgres',
		q{SELECT last_seen > pg_postmaster_start_time() FROM snowid_registry_node
		   WHERE node_id = 1}),
	'after a restart that lost rows, A renews its lease');
like(
	$registry->safe_psql('postgres', 'SELECT snowid_registry_recovering()'),
	qr/grants new leases after 20 s/,
	'the grace lasts though every row the registry kept was renewed');
my $lie = $registry->safe_psql(
	'postgres',
	"SELECT result || ' ' || (floor_until >= clock_timestamp() - interval '1 s')
	   FROM snowid_registry_reassert(7, false, 1023, \$\$$layout\$\$, 'liar', 'h', 1, 42,
			'startliar', rpad('s', 32, '#'), NULL, false, 60000, 5000, 1000, NULL,
			clock_timestamp() + interval '10 s')",
	extra_params => [ '-U', 'liar' ]);
is($lie, 'ok true',
	'a role re-asserting a lease it never held gets the node above the time it asked');

# ---- 4. the database owner cannot drop snowid ----

$registry->safe_psql('postgres', q{
CREATE ROLE regowner LOGIN;
CREATE DATABASE ids OWNER regowner;
});
$registry->safe_psql('ids', 'CREATE EXTENSION snowid');
for my $sql ('DROP SCHEMA public CASCADE', 'DROP EXTENSION snowid')
{
	my ($ret, $out, $err) = $registry->psql('ids',
		"SET ROLE regowner; \\set VERBOSITY verbose\n$sql");
	like($err, qr/42501: only a superuser may drop/,
		"the database owner cannot run $sql");
}
is($registry->safe_psql('ids', q{SELECT count(*) FROM pg_extension WHERE extname = 'snowid'}),
	'1', 'snowid is still there');
$registry->safe_psql('ids', 'DROP SCHEMA public CASCADE');
is($registry->safe_psql('ids', q{SELECT count(*) FROM pg_extension WHERE extname = 'snowid'}),
	'0', 'a superuser may drop it');

$_->stop for ($a, $b, $c);
$registry->stop;
done_testing();
