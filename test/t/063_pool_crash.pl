
# Copyright (c) snowid contributors
#
# Pooled tickets across crashes, clean shutdowns and pg_dump/restore.  A
# registry with pool 'orders' (bigint); members A (node 1) and B (node 2),
# snowid.lease = 60 s, each with the pooled ticket 't' (block 100).
#
# 1. Clean shutdown.  A took its range first, B the one above it.  A stops
#    cleanly: someone (B) advanced past A's range, so its tail is kept
#    (snowid_pool_ranges.returned false, snowid_pools.next_value unchanged).
#    B stops cleanly: its range is the top one, its unused tail goes back
#    (returned true, returned_from above every value B issued and within two
#    ticket blocks of them, next_value moved back to returned_from).  Both
#    start again: A goes on in its kept range above its values, B gets a
#    new range that starts at returned_from (the tail re-granted), above its
#    values.
# 2. Crash during generation, twice on A under pgbench (2 clients): a
#    backend killed with SIGKILL (the postmaster reinitialises shared
#    memory and replays WAL), then an immediate stop; after each, the new
#    values are above every value issued before, and no value is in A's
#    table twice.
# 3. pg_dump/restore of a member database: database app on B with the
#    pooled ticket 'tk', dumped, dropped, created and restored with
#    pg_restore: the ticket is still pooled, and its new values are above
#    and distinct from those before; the same dump restored on a third
#    member C (node 3) issues values none of A's or B's.
# At the end, no value anywhere twice.
#
# No assertion depends on elapsed time.

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;
use Time::HiRes qw(usleep);

my $tmp = PostgreSQL::Test::Utils::tempdir;
my $block = 100;

# ---- helpers (local to this file) ----

# The pooled ticket $ticket and the table vals in database $db of $node.
sub make_ticket
{
	my ($node, $db, $ticket) = @_;
	$node->safe_psql($db,
		"SELECT snowid_ticket_create('$ticket', pool => 'orders', block => $block);"
		  . 'CREATE TABLE vals(seq bigserial, phase text NOT NULL, client integer NOT NULL DEFAULT 0, v bigint NOT NULL);'
	);
	return;
}

# The first value of $ticket in $db after $what (a ticket just created, a
# restart): the call must not fail for want of a range (the worker fetches
# one for a ticket that exists, or the call waits for it); then wait until
# the member holds a range.  Returns the value (none if the call failed).
sub take_first
{
	my ($node, $db, $ticket, $phase, $what) = @_;
	my ($ret, $out, $err) = $node->psql($db,
		"\\set VERBOSITY verbose\nINSERT INTO vals(phase, v) VALUES ('$phase', snowid_ticket_next('$ticket')) RETURNING v");
	is($ret, 0, $node->name . ": the first snowid_ticket_next() $what succeeds")
	  or diag $err;
	ok( $node->poll_query_until($db,
			q{SELECT state = 'ok' AND values_in_hand > 0 FROM snowid_pool_holdings() WHERE pool = 'orders'}),
		$node->name . ": holds a range of orders ($what)")
	  or diag 'holdings: ' . $node->safe_psql($db, 'SELECT * FROM snowid_pool_holdings()');
	return $ret == 0 ? ($out) : ();
}

# $n values of $ticket in $db; returns them in issue order.
sub take_values
{
	my ($node, $db, $ticket, $phase, $n) = @_;
	return split /\n/,
	  $node->safe_psql($db,
		"INSERT INTO vals(phase, v) SELECT '$phase', snowid_ticket_next('$ticket') FROM generate_series(1, $n) RETURNING v"
	  );
}

sub column
{
	my ($node, $db, $sql) = @_;
	return split /\n/, $node->safe_psql($db, $sql);
}

# Ranges of pool orders on the registry for node $node_id: [first, last,
# returned, returned_from], by first value.
sub ranges_of
{
	my ($reg, $node_id) = @_;
	return map { [ split /\|/ ] } split /\n/,
	  $reg->safe_psql('postgres',
		"SELECT first_value, last_value, returned, returned_from FROM snowid_pool_ranges WHERE pool = 'orders' AND node_id = $node_id ORDER BY first_value"
	  );
}

sub next_value
{
	my ($reg) = @_;
	return $reg->safe_psql('postgres',
		q{SELECT next_value FROM snowid_pools WHERE name = 'orders'});
}

# Wait until the log of $node after $offset says it is ready to accept
# connections (after a crash and the reinitialisation that follows);
# true if it did.
sub wait_ready
{
	my ($node, $offset) = @_;
	for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
	{
		return 1
		  if slurp_file($node->logfile, $offset) =~
		  /database system is ready to accept connections/;
		usleep(100_000);
	}
	return 0;
}

# Crash $node while pgbench generates on it ($how: a code ref that crashes
# it); returns (values committed before, values taken after the restart).
sub crash_under_load
{
	my ($node, $phase, $how) = @_;
	my $before = $node->safe_psql('postgres', 'SELECT count(*) FROM vals');
	my $log = -s $node->logfile;
	my $run = start_pgbench($node, $phase, 2, 15,
		"INSERT INTO vals(phase, client, v) VALUES ('$phase', :client_id, snowid_ticket_next('t'));");
	ok( $node->poll_query_until('postgres',
			"SELECT count(*) >= $before + 2000 FROM vals"),
		"$phase: pgbench generates on " . $node->name);
	$how->();
	$run->{handle}->finish;    # fails: its server went away
	like($run->{err}, qr/server closed the connection|terminat|connection|the backend died/i,
		"$phase: pgbench lost its connections")
	  or diag "pgbench: $run->{out}\n$run->{err}";
	ok(wait_ready($node, $log),
		"$phase: " . $node->name . ' accepts connections again');
	my @old = column($node, 'postgres', q{SELECT v FROM vals});
	my @new = take_values($node, 'postgres', 't', "after $phase", 2000);
	is(scalar(@new), 2000, "$phase: " . $node->name . ' issues values again');
	cmp_ok(min_of(@new), '>', max_of(@old),
		"$phase: the new values are above every value issued before");
	is( $node->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT v) FROM vals'),
		'0', "$phase: no value of " . $node->name . ' twice');
	note sprintf('%s: %d values committed before (%d during the load), first value after - last before - 1 = %d (lost)',
		$phase, scalar(@old), scalar(@old) - $before, min_of(@new) - max_of(@old) - 1);
	return;
}

# ---- the registry and the members ----

my ($reg, $conninfo) = registry(sql => "SELECT snowid_pool_create('orders');");

# The members: member($name, $node_id, @member, wait => "$name holds its
# node"), started, holding their node (a test).
my @member = (
	registry => $conninfo,
	cluster_name => 1,
	application_name => 1,
	lease => '60s');

# A crashes in 2.: the postmaster reinitialises after a backend's crash
# (TAP clusters turn restart_after_crash off).
my $a = member('member_a', 1, @member,
	extra => "restart_after_crash = on\n",
	wait => 'member_a holds its node');
make_ticket($a, 'postgres', 't');
my @a_vals = take_first($a, 'postgres', 't', 'first', 'after snowid_ticket_create()');
push @a_vals, take_values($a, 'postgres', 't', 'first', 50);

my $b = member('member_b', 2, @member, wait => 'member_b holds its node');
make_ticket($b, 'postgres', 't');
my @b_vals = take_first($b, 'postgres', 't', 'first', 'after snowid_ticket_create()');
push @b_vals, take_values($b, 'postgres', 't', 'first', 50);

# ==== 1. clean shutdown ====

my @a_ranges = ranges_of($reg, 1);
my @b_ranges = ranges_of($reg, 2);
ok( @a_ranges && @b_ranges && $a_ranges[-1][1] < $b_ranges[0][0],
	'A\'s range lies below B\'s (A asked first)')
  or diag 'ranges: ' . $reg->safe_psql('postgres', 'SELECT * FROM snowid_pool_ranges');
my $next_before = next_value($reg);
is($next_before, $b_ranges[-1][1] + 1, 'next_value follows B\'s range');

$a->stop;
is(next_value($reg), $next_before,
	'A stopped cleanly below B\'s range: next_value unchanged');
is($reg->safe_psql('postgres',
		q{SELECT count(*) FROM snowid_pool_ranges WHERE pool = 'orders' AND node_id = 1 AND returned}),
	'0', 'A\'s tail is kept (not returned): B advanced past it');

my $b_max = max_of(@b_vals);
$b->stop;
my ($b_first, $b_last, $returned, $returned_from) = @{ (ranges_of($reg, 2))[-1] };
is($returned, 't', 'B stopped cleanly at the top: its range shows returned');
cmp_ok($returned_from, '>', $b_max,
	"B's returned tail starts above every value B issued ($returned_from > $b_max)");
cmp_ok($returned_from, '<=', $b_max + 1 + 2 * $block,
	'and within two ticket blocks of them (what the ticket had taken)');
cmp_ok($returned_from, '<=', $b_last, 'inside its range');
is(next_value($reg), $returned_from,
	'next_value moved back to the start of the returned tail');
is( defined $returned_from
	? $reg->safe_psql('postgres', "SELECT snowid_pool_owner('orders', $returned_from) IS NULL")
	: '(nothing returned)',
	't', 'snowid_pool_owner: nobody owns the returned tail');
note sprintf('clean shutdown: B range [%d, %d], its last value %d, tail returned from %d (%d values back; %d lost to the ticket blocks)',
	$b_first, $b_last, $b_max, $returned_from // -1, $b_last - ($returned_from // $b_last + 1) + 1,
	($returned_from // $b_max + 1) - $b_max - 1);

$a->start;
$b->start;
ok(wait_registry_state($a, 'ok'), 'A restarted holds its node');
ok(wait_registry_state($b, 'ok'), 'B restarted holds its node');
my @a_again = take_first($a, 'postgres', 't', 'after clean restart', 'after a clean restart (range kept)');
push @a_again, take_values($a, 'postgres', 't', 'after clean restart', 50);
my @b_again = take_first($b, 'postgres', 't', 'after clean restart', 'after a clean restart (tail returned)');
push @b_again, take_values($b, 'postgres', 't', 'after clean restart', 50);
cmp_ok(min_of(@a_again), '>', max_of(@a_vals), 'A continues above its values');
cmp_ok($a_again[-1], '<=', $a_ranges[-1][1], 'A continues in the range it kept');
cmp_ok(min_of(@b_again), '>', $b_max, 'B continues above its values');
is( $reg->safe_psql('postgres',
		q{SELECT first_value FROM snowid_pool_ranges WHERE pool = 'orders' AND node_id = 2 ORDER BY granted_at DESC, first_value DESC LIMIT 1}),
	$returned_from, 'B\'s new range starts at the returned tail (it went back to the pool)');
is($reg->safe_psql('postgres', "SELECT snowid_pool_owner('orders', $b_again[0])"),
	'2', 'snowid_pool_owner names B for its new values');

# ==== 2. crashes under load ====

crash_under_load(
	$a, 'backend killed',
	sub {
		my $pid = $a->safe_psql('postgres',
			q{SELECT pid FROM pg_stat_activity
			  WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
			    AND query LIKE '%snowid_ticket_next%' LIMIT 1});
		ok($pid =~ /^\d+$/ && kill('KILL', $pid), "kill -9 of a pgbench backend ($pid) of A");
	});
# After a crash the new start takes its node over once the old one has
# been silent 5 s; until then it hands out no pool value (as no ID).
crash_under_load(
	$a,
	'immediate stop',
	sub {
		$a->stop('immediate');
		$a->start;
		wait_state($a, 'ok', die => 1);
	});

# ==== 3. pg_dump/restore ====

$b->safe_psql('postgres', 'CREATE DATABASE app');
$b->safe_psql('app', 'CREATE EXTENSION snowid');
make_ticket($b, 'app', 'tk');
my @app_before = take_first($b, 'app', 'tk', 'before dump', 'in database app');
push @app_before, take_values($b, 'app', 'tk', 'before dump', 3000);
my $dump = "$tmp/app.dump";
$b->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $b->connstr('app') ],
	'pg_dump of database app on B');
$b->safe_psql('postgres', 'DROP DATABASE app');
$b->safe_psql('postgres', 'CREATE DATABASE app');
$b->command_ok([ 'pg_restore', '--exit-on-error', '-d', $b->connstr('app'), $dump ],
	'pg_restore into a new database app on B');
is($b->safe_psql('app', q{SELECT pool FROM snowid_ticket WHERE seqrelid = 'tk'::regclass}),
	'orders', 'the restored ticket is still pooled on orders');
is($b->safe_psql('app', 'SELECT count(*) FROM vals'), scalar(@app_before), 'the values before the dump are restored');
my @app_after = take_values($b, 'app', 'tk', 'after restore', 3000);
is(scalar(@app_after), 3000, 'the restored ticket issues values');
cmp_ok(min_of(@app_after), '>', max_of(@app_before), 'above every value before the dump');
is($b->safe_psql('app', 'SELECT count(*) - count(DISTINCT v) FROM vals'),
	'0', 'no collision with the values before the dump');

# The same dump on another member.
my $c = member('member_c', 3, @member, wait => 'member_c holds its node');
$c->safe_psql('postgres', 'CREATE DATABASE app');
$c->command_ok([ 'pg_restore', '--exit-on-error', '-d', $c->connstr('app'), $dump ],
	'pg_restore of the dump into database app on member C');
my @c_vals = take_first($c, 'app', 'tk', 'restored on C', 'of the restored ticket on C');
push @c_vals, take_values($c, 'app', 'tk', 'restored on C', 3000);
is($c->safe_psql('app', 'SELECT count(*) - count(DISTINCT v) FROM vals'),
	'0', 'on C, no collision with the restored values');
is($reg->safe_psql('postgres', "SELECT snowid_pool_owner('orders', $c_vals[0])"),
	'3', 'C\'s values come from its own range (node 3)');

# ==== everything once more ====

my %seen;
my $dups = 0;
for my $r ([ $a, 'postgres' ], [ $b, 'postgres' ], [ $b, 'app' ], [ $c, 'app' ])
{
	my ($node, $db) = @$r;
	my $where = ($node->name eq $c->name) ? q{ WHERE phase = 'restored on C'} : '';
	# the dump's values on C are B's (restored): count them once, at B
	$dups += grep { $seen{$_}++ } column($node, $db, "SELECT v FROM vals$where");
}
is($dups, 0, 'no value issued twice anywhere');
note sprintf('values: %d in all; ranges: %s', scalar(keys %seen),
	$reg->safe_psql('postgres',
		q{SELECT string_agg(format('%s:[%s,%s]%s', node_id, first_value, last_value, CASE WHEN returned THEN ' returned from ' || returned_from ELSE '' END), ' ' ORDER BY first_value) FROM snowid_pool_ranges WHERE pool = 'orders'}));

$c->stop;
$b->stop;
$a->stop;
$reg->stop;
done_testing();
