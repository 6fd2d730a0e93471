
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
# 5. A restart that lost rows: the grace is unconditional; a role that lies
#    about a lease gets the node above the time it asked.
# 6. A registry restored from an early base backup while three members
#    hold pool ranges granted after it (issue 38): their reports during
#    the grace move the pool above them, no value is issued twice, and a
#    hostile report beyond the pool's lost bound is refused.

use strict;
use warnings;

use IPC::Run;
use Time::HiRes qw(sleep);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

# ---- the registry, a grace of 0 to start (the settings are lost with it) ----

# (wal_level replica: part 6 takes a base backup of it)
my ($registry, $reg) = registry(conf => "wal_level = replica\nmax_wal_senders = 2\n", sql => q{
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

# ---- 6. a registry restored from an early base backup ----
#
# Members P1, P2 and P3 (login roles m_p1, m_p2, m_p3) draw a pooled
# ticket from the integer pool 'orders' of registry database "pools", in
# ranges of 1,024 values (max_grant_share).  P3 takes a few values; P1 and
# P2 are loaded.  A base backup of the registry is taken early; P1 and P2
# are granted many more ranges; the load stops (each member keeps the
# ranges it holds), the registry stops and the backup is restored in its
# place (same host and port): it has forgotten every range granted after
# the backup.  The members report the ranges they hold during its grace;
# after it all three are loaded: P3, whose last range is older than the
# backup, asks for new ones.
#
# - no value of the pool is issued by two members (nor twice by one);
# - after the grace the pool stands above every range granted before the
#   restore;
# - a role's report of a range beyond what the registry could have granted
#   since its restored state (every member role's max_grants_per_hour for
#   each hour begun since, each grant at most max_grant_share) is refused
#   (22023) and recorded nowhere, during the grace and after it.

$_->stop for ($a, $b, $c);

my $pool_start = 2147483647 - 100_000_000 + 1;    # 100,000,000 values
$registry->safe_psql('postgres', q{
CREATE ROLE m_p1 LOGIN;
CREATE ROLE m_p2 LOGIN;
CREATE ROLE m_p3 LOGIN;
CREATE ROLE m_x LOGIN;
CREATE DATABASE pools;
});
$registry->safe_psql('pools', qq{
CREATE EXTENSION snowid;
INSERT INTO snowid_registry_settings
	(only_row, reassert_grace, max_grant_share, max_grants_per_hour)
VALUES (true, '10s', 0.00001, 2000);
GRANT EXECUTE ON FUNCTION ${\ registry_signature('claim')}, ${\ registry_signature('release')},
	${\ registry_signature('pool_grant')}, ${\ registry_signature('pool_report')},
	${\ registry_signature('pool_return')} TO m_p1, m_p2, m_p3, m_x;
SELECT snowid_pool_create('orders', 'integer', $pool_start);
});

# ptake(n): n values of the pooled ticket 't' into vals, or none (no
# range in hand while the registry is away or in its grace).
my $ptake_sql = q{
SELECT snowid_ticket_create('t', pool => 'orders', block => 64);
CREATE TABLE vals(v bigint NOT NULL);
CREATE FUNCTION ptake(n integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO vals SELECT snowid_ticket_next('t') FROM generate_series(1, n);
EXCEPTION WHEN OTHERS THEN
	NULL;
END
$$;
};
my @p = map {
	member("p$_", undef,
		registry => registry_conninfo($registry, 'pools'),
		user => "m_p$_",
		application_name => 1,
		lease => '60s',
		sql => $ptake_sql,
		wait => "P$_ holds a node of registry database pools")
} (1, 2, 3);

# pgbench on each member: ptake(250), 20 times a second (about 5 ranges a
# second each), until stopped.
my $load_dir = PostgreSQL::Test::Utils::tempdir;
open my $lf, '>', "$load_dir/ptake.sql" or die "could not write ptake.sql: $!";
print $lf "SELECT ptake(250);\n";
close $lf;

sub load_start
{
	my (@on) = @_;
	return [
		map {
			my $out = '';
			IPC::Run::start(
				[
					'pgbench', '-n', '-c', 1, '-j', 1, '-T', 300, '-R', 20,
					'-f', "$load_dir/ptake.sql", '-h', $_->host, '-p', $_->port,
					'postgres'
				],
				'>', \$out, '2>', \$out);
		} @on
	];
}

sub load_stop
{
	my ($handles) = @_;
	$_->kill_kill for @$handles;
	return;
}

sub pool_next
{
	my ($node) = @_;
	return $node->safe_psql('pools',
		q{SELECT coalesce(next_value, maxvalue + 1) FROM snowid_pools WHERE name = 'orders'});
}

# P3: a few values (less than half its first range: it asks for no more)
my $p3_took = 0;
for (1 .. 300)
{
	$p[2]->safe_psql('postgres', 'SELECT ptake(300)');
	$p3_took = $p[2]->safe_psql('postgres', 'SELECT count(*) FROM vals');
	last if $p3_took > 0;
	sleep 0.2;
}
is($p3_took, 300, 'P3 takes values of pool orders');
my $load = load_start(@p[ 0, 1 ]);
ok( $registry->poll_query_until('pools',
		q{SELECT count(*) >= 6 FROM snowid_pool_ranges WHERE pool = 'orders'}),
	'P1 and P2 are granted ranges of pool orders under load');
$registry->backup('early');
my $backup_next = pool_next($registry);
ok( $registry->poll_query_until('pools',
		"SELECT next_value >= $backup_next + 40 * 1024 FROM snowid_pools WHERE name = 'orders'"),
	'... and 40 more after the base backup');
load_stop($load);
my $top = $registry->safe_psql('pools',
	q{SELECT max(last_value) FROM snowid_pool_ranges WHERE pool = 'orders'});
my $held = join '/',
  map { $_->safe_psql('postgres', 'SELECT values_in_hand FROM snowid_pool_holdings()') } @p;
note "pool orders: next_value $backup_next at the backup, ranges up to $top granted; holdings $held";

# the registry lost: the backup restored in its place
$registry->stop('immediate');
my $restored = PostgreSQL::Test::Cluster->new('registry_restored', port => $registry->port);
$restored->init_from_backup($registry, 'early');
$restored->start;
cmp_ok(pool_next($restored), '<', $top - 30 * 1024,
	'the restored registry has forgotten the ranges granted after the backup');
like(
	$restored->safe_psql('pools', 'SELECT snowid_registry_recovering()'),
	qr/restarted \(or was restored\)/,
	'the restored registry is in its grace');

# A role that re-asserts a node it never held (the registry cannot know
# better) and reports a range far beyond what could have been granted.
my $layout_p = $restored->safe_psql('pools', 'SELECT layout FROM snowid_registry_settings');
my $far = $pool_start + 60_000_000;
sub hostile_report
{
	return $restored->psql(
		'pools',
		"\\set VERBOSITY verbose\nSELECT snowid_pool_report(900, 42, 'startx', rpad('s', 32, '#'), "
		  . "'{orders}', '{$far}', '{" . ($far + 1023) . "}')",
		extra_params => [ '-U', 'm_x' ]);
}
is( $restored->safe_psql(
		'pools',
		"SELECT result FROM snowid_registry_reassert(900, false, 1023, \$\$$layout_p\$\$, 'x', 'h', 1, 42,
			'startx', rpad('s', 32, '#'), NULL, false, 60000, 5000, 1000, NULL,
			clock_timestamp() + interval '60 s')",
		extra_params => [ '-U', 'm_x' ]),
	'ok', 'a hostile role re-asserts a node it never held during the grace');
my ($rc, $out, $err) = hostile_report();
like($err, qr/22023.*not where a grant to this member could have been/s,
	'its report of a range beyond what the registry could have granted since its restored state is refused');
is($restored->safe_psql('pools', "SELECT snowid_pool_owner('orders', $far) IS NULL"),
	't', '... and recorded nowhere');

ok($restored->poll_query_until('pools', 'SELECT snowid_registry_recovering() IS NULL'),
	'the grace ends');
cmp_ok(pool_next($restored), '>', $top,
	'the members reported their ranges: the pool stands above every range granted before the restore');
($rc, $out, $err) = hostile_report();
like($err, qr/22023/, 'after the grace the hostile report is refused too');
is($restored->safe_psql('pools', "SELECT snowid_pool_owner('orders', $far) IS NULL"),
	't', '... and recorded nowhere');

# all three loaded until 20 more ranges are granted
my $after = pool_next($restored);
$load = load_start(@p);
ok( $restored->poll_query_until('pools',
		"SELECT next_value >= $after + 20 * 1024 FROM snowid_pools WHERE name = 'orders'"),
	'the restored registry grants ranges again');
load_stop($load);

my %seen_p;
my $total = 0;
my $dups_p = 0;
for my $m (@p)
{
	for my $v (split /\n/, $m->safe_psql('postgres', 'SELECT v FROM vals'))
	{
		$total++;
		$dups_p++ if $seen_p{$v}++;
	}
}
note "values of pool orders issued by P1, P2 and P3: $total, $dups_p of them issued before";
cmp_ok($total, '>', 40 * 1024, 'the members issued values of the pool before and after the restore');
is($dups_p, 0, 'no value of the pool was issued twice across the restore');

$_->stop for @p;
$restored->stop;
done_testing();

