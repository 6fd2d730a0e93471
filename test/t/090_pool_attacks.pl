
# Copyright (c) snowid contributors
#
# Pools attacked from a member's login role (issue 29, findings 2 and 7).
# A registry database "reg" with the integer pool 'orders'; member B (a
# real server, node 2, login role m_b) draws its pooled ticket 't' from it.
# The attacker (login role m_x) and a second member (m_v) call the
# registry's functions directly, each holding a node it claimed (5 and 6).
#
# 1. A report of a "lost" range of 1,024 values at the pool's top is
#    refused (22023): nothing recorded, next_value and values_left
#    unchanged.  So are a small range far above next_value and four ranges
#    that together reach beyond one grant from it.
# 2. A report a real grant could have been (just above next_value, smaller
#    than one grant) is recorded and moves the pool by its size only.
# 3. The attacker holds a grant's transaction open for 10 s: m_v's grant
#    answers 'granted' within 1 s, and no session is ended (from 2.0 the
#    registry's server process applies each call in a transaction of its
#    own: the attacker's holds nothing of the registry's).
# 4. Again, with grants of about 2,000 values (max_grant_share): B's pooled
#    ticket keeps issuing while the attacker holds, every call succeeds and
#    no value comes out twice.
# 5. B's heartbeat report of ranges a registry forgot, refused while they lie
#    more than one grant above next_value, is sent again at later
#    heartbeats and recorded once they lie within one.
# 6. The attacker makes a new registry's first claim (which sets its layout)
#    and holds its transaction open: m_v's claim answers 'ok' within 1 s,
#    and no session is ended.
# 7. The attacker claims m_v's node 7 and holds that transaction open:
#    m_v's claim of its own node answers 'ok' within 1 s, and so does its
#    release; no session is ended.
# 8. The attacker prepares the transaction of such a claim, or of a
#    pool's grant (PREPARE TRANSACTION): it may (the transaction holds
#    nothing of the registry's), and m_v's claim and grant answer within
#    1 s while the prepared transactions stay.
# 9. Three attacker sessions claim m_v's node again and again: m_v's claim
#    answers 'ok' at its first call, three rounds.

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

# The group snowid_members holds the grants of the members' functions.
# (prepared transactions allowed, as on a Citus coordinator: part 8)
my ($registry, $conninfo) = registry(
	conf => 'max_prepared_transactions = 4',
	dbname => 'reg',
	owner => 'regowner',
	group => 'snowid_members',
	logins => [qw(m_b m_v m_x)],
	sql => "SELECT snowid_pool_create('orders', 'integer');");

my $b = member('B', 2,
	registry => $conninfo,
	user => 'm_b',
	application_name => 1,
	lease => '60s',
	sql => q{
SELECT snowid_ticket_create('t', pool => 'orders');
CREATE TABLE vals(v bigint NOT NULL);
},
	wait => 'B holds node 2');
# (the layout the registry took from its first member)
my $layout = $registry->safe_psql('reg', 'SELECT layout FROM snowid_registry_settings');
$b->safe_psql('postgres',
	"INSERT INTO vals SELECT snowid_ticket_next('t') FROM generate_series(1, 1000)");

# A node claimed directly by $role, as the start $start with its secret.
sub claim
{
	my ($role, $node, $start) = @_;
	return $registry->safe_psql(
		'reg',
		"SELECT result FROM snowid_registry_claim($node, false, 1023, \$\$$layout\$\$, "
		  . "'x', '$role', 1, 1, '$start', repeat('s', 32), NULL, false, 60000, 0, 0, NULL)",
		extra_params => [ '-U', $role ]);
}
is(claim('m_x', 5, 'evil5'), 'ok', 'the attacker holds node 5');
is(claim('m_v', 6, 'vic6'), 'ok', 'm_v holds node 6');

# The attacker's report of the ranges (lo, hi) of pool orders.
sub report
{
	my (@ranges) = @_;
	my $n = @ranges;
	my $firsts = join ',', map { $_->[0] } @ranges;
	my $lasts = join ',', map { $_->[1] } @ranges;
	return $registry->psql(
		'reg',
		"\\set VERBOSITY verbose\nSELECT snowid_pool_report(5, 1, 'evil5', repeat('s', 32), "
		  . "array_fill('orders'::text, ARRAY[$n]), '{$firsts}', '{$lasts}')",
		extra_params => [ '-U', 'm_x' ]);
}

sub pool_state
{
	return $registry->safe_psql('reg',
		"SELECT next_value || ' ' || values_left FROM snowid_pools WHERE name = 'orders'");
}

sub ranges_of_5
{
	return $registry->safe_psql('reg',
		'SELECT count(*) FROM snowid_pool_ranges WHERE node_id = 5');
}

# A member's call, as its worker makes it: again every 0.2 s while it
# fails or answers otherwise (a registry that finds the row it needs held
# by a transaction under 1 s old answers busy, or 55P03, once its own call
# is 0.5 s old), for at most 4 s.  (its last answer, the seconds until it,
# its last error)
sub until_answer
{
	my ($db, $sql, $user, $want) = @_;
	my $t0 = time;
	my ($rc, $out, $err);
	while (1)
	{
		($rc, $out, $err) = $registry->psql($db, $sql, extra_params => [ '-U', $user ]);
		last if ($out // '') eq $want || time - $t0 > 4;
		sleep(0.2);
	}
	return ($out, time - $t0, $err);
}

# The attacker's psql (login role m_x) running $sql in database $db,
# started and not waited for ({handle, out, err}).
sub attack
{
	my ($db, $sql) = @_;
	my %h = (out => '', err => '');
	$h{handle} = IPC::Run::start(
		[
			'psql', '-X', '-h', $registry->host, '-p', $registry->port,
			'-U', 'm_x', '-d', $db, '-c', $sql
		],
		'>', \$h{out}, '2>', \$h{err});
	return \%h;
}

# ... returned once it sleeps (pg_sleep) in the transaction of $sql.
sub attack_and_sleep
{
	my ($db, $sql) = @_;
	my $h = attack($db, $sql);
	$registry->poll_query_until($db,
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE usename = 'm_x' AND wait_event = 'PgSleep'")
	  or die 'the attacker never slept';
	return $h;
}

# The lease of node $node of registry database reg2 ended by hand, as if
# its holder had been out of reach that long.
sub lapse
{
	my ($node) = @_;
	$registry->safe_psql('reg2', qq{
UPDATE snowid_registry_node
   SET lease_until = now() - interval '1 min', last_seen = now() - interval '1 min'
 WHERE node_id = $node});
	return;
}

# ==== 1. reports no grant could have been ====

my $before = pool_state();
my ($next) = split / /, $before;
my ($rc, $out, $err) = report([ 2147482624, 2147483647 ]);
isnt($rc, 0, 'a lost range of 1,024 values at the top of the pool: refused');
like($err, qr/22023.*not where a grant to this member could have been/s,
	'... with 22023 saying why');
is(pool_state(), $before, '... next_value and values_left unchanged');
is(ranges_of_5(), '0', '... and nothing recorded');

($rc, $out, $err) = report([ $next + 100_000_000, $next + 100_000_999 ]);
like($err, qr/22023/, 'a small range far above next_value: refused');
is(pool_state(), $before, '... the pool unchanged');

# one grant from next_value is 1% of what is left (max_grant_share 0.01)
my $grant = $registry->safe_psql('reg',
	"SELECT ceil(values_left * 0.01) FROM snowid_pools WHERE name = 'orders'");
($rc, $out, $err) = report(map { [ $next + $_ * $grant, $next + ($_ + 1) * $grant - 1 ] } 0 .. 3);
like($err, qr/22023/,
	'four ranges of one grant each from next_value in one call: refused');
is(pool_state(), $before, '... the pool unchanged');
is(ranges_of_5(), '0', '... and nothing recorded');

# ==== 2. a report a grant could have been ====

($rc, $out, $err) = report([ $next, $next + 999 ]);
is($out, '1', 'a range just above next_value, smaller than a grant: recorded');
my ($next2, $left2) = split / /, pool_state();
my (undef, $left1) = split / /, $before;
is($next2, $next + 1000, '... next_value moves past it');
is($left1 - $left2, 1000, '... values_left falls by its size only');

# ==== 3. a grant's transaction held open ====

# The attacker's grant, then a sleep in the same transaction.
sub hold
{
	my ($key, $secs) = @_;
	return attack_and_sleep('reg',
		"BEGIN; SELECT result FROM snowid_pool_grant('orders', 5, 1, 'evil5', repeat('s', 32), '$key', 1000, '{}', '{}'); "
		  . "SELECT pg_sleep($secs); COMMIT;");
}

my $h = hold('k1', 10);
my ($res, $took);
($res, $took, $err) = until_answer('reg',
	"SELECT result FROM snowid_pool_grant('orders', 6, 1, 'vic6', repeat('s', 32), 'v1', 1000, '{}', '{}')",
	'm_v', 'granted');
is($res, 'granted', "another member's grant while the attacker holds the pool: granted")
  or diag($err);
cmp_ok($took, '<', 1, "... within 1 s (took ${\ sprintf('%.1f', $took)} s)");
$h->{handle}->finish;
is($h->{err}, '', "... and the attacker's session was not ended");

# ==== 4. a member's pooled ticket while the attacker holds ====

# grants of about 2,000 values, so that B asks every few hundred calls
$registry->safe_psql('reg', 'UPDATE snowid_registry_settings SET max_grant_share = 0.000001');
$b->safe_psql('postgres',
	"INSERT INTO vals SELECT snowid_ticket_next('t') FROM generate_series(1, 5000)");
my $ranges = $registry->safe_psql('reg',
	'SELECT count(*) FROM snowid_pool_ranges WHERE node_id = 2');
$h = hold('k2', 30);
my ($calls, $failed) = (0, 0);
my $until = time + 25;
# 60 calls of 200 values: three times what B holds in hand, so that it
# must ask for ranges meanwhile however many calls a second the machine makes
while (time < $until && $calls < 60)
{
	my ($r) = $b->psql('postgres',
		"INSERT INTO vals SELECT snowid_ticket_next('t') FROM generate_series(1, 200)");
	$calls++;
	$failed++ if $r != 0;
	sleep 0.05;
}
$h->{handle}->finish;
cmp_ok($calls, '>', 10, "B's ticket was called $calls times while the attacker held");
is($failed, 0, '... every call issued its values');
cmp_ok($registry->safe_psql('reg',
		'SELECT count(*) FROM snowid_pool_ranges WHERE node_id = 2'),
	'>', $ranges + 2, '... from ranges granted meanwhile');
is($b->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT v) FROM vals'),
	'0', '... and no value came out twice');

# ==== 5. a registry that forgot B's ranges ====

# Its rows of B's last ranges gone and next_value far below them (a restore
# stands in): B's heartbeat report is refused, more than one grant above
# next_value; once the pool stands within a grant of them (here a larger
# max_grant_share; other members' reports would move next_value), a later
# heartbeat records them.
my $top = $registry->safe_psql('reg',
	'SELECT max(last_value) FROM snowid_pool_ranges WHERE node_id = 2');
my $offset = -s $b->logfile;
$registry->safe_psql('reg', qq{
DELETE FROM snowid_pool_range WHERE node_id = 2 AND last_value > $top - 20000;
UPDATE snowid_pool SET next_value = greatest(1, $top - 20000) WHERE name = 'orders';
});
ok($b->wait_for_log(qr/could not report its pool ranges.*not where a grant/, $offset),
	"B's report of ranges one grant beyond next_value is refused");
$registry->safe_psql('reg', 'UPDATE snowid_registry_settings SET max_grant_share = 0.01');
my $recorded = 0;
for (1 .. 150)
{
	$recorded = $registry->safe_psql('reg',
		'SELECT count(*) FROM snowid_pool_ranges WHERE node_id = 2 AND reported');
	last if $recorded > 0;
	sleep 0.1;
}
cmp_ok($recorded, '>', 0, '... and recorded at a later heartbeat once it lies within a grant');
is($registry->safe_psql('reg', "SELECT next_value FROM snowid_pools WHERE name = 'orders'"),
	$top + 1, '... the pool moving past them');

# ==== 6. a registry's first claim held open ====

# A new registry has no layout until a first claim sets it; an attacker
# that makes that claim and leaves its transaction open must not keep
# every other claim out (found by the registry fuzzer, seed 6161: claims
# answered "the registry's layout is being set by another transaction" for
# as long as the attacker held).  A database of its own, with no grace.
$registry->safe_psql('postgres', 'CREATE DATABASE reg2 OWNER regowner');
$registry->safe_psql('reg2', qq{
CREATE EXTENSION snowid;
INSERT INTO snowid_registry_settings (only_row, reassert_grace) VALUES (true, '0');
GRANT EXECUTE ON FUNCTION ${\ registry_signature('claim')} TO snowid_members;
});
my $claim2 = "SELECT result FROM snowid_registry_claim(%d, false, 1023, \$\$$layout\$\$, "
  . "'x', '%s', 1, 1, '%s', repeat('s', 32), NULL, false, 60000, 0, 0, NULL)";
my $first = attack_and_sleep('reg2',
	'BEGIN; ' . sprintf($claim2, 5, 'm_x', 'evil5') . '; SELECT pg_sleep(10); COMMIT;');
my ($out2, $err2);
($out2, $took, $err2) = until_answer('reg2', sprintf($claim2, 6, 'm_v', 'vic6'), 'm_v', 'ok');
is($out2, 'ok', "a claim while the attacker's first claim holds the layout open: ok")
  or diag($err2);
cmp_ok($took, '<', 1, "... within 1 s (took ${\ sprintf('%.1f', $took)} s)");
$first->{handle}->finish;
is($first->{err}, '', "... and the attacker's session was not ended");
is($registry->safe_psql('reg2', 'SELECT layout FROM snowid_registry_settings'),
	$layout, "... the layout the first claim set");

# ==== 7. a claim of another's node held open ====

# A member out of reach may come back and renew, or release at its
# shutdown.  An attacker that claims its node and leaves its transaction
# open (on 1.10 the attacker's claim of a node whose lease had run out
# held the node's row: "node is being written by another transaction",
# fuzzer seed 6161) keeps nothing: the registry's server process decided
# the claim (conflict: the node is m_v's) and committed.
$registry->safe_psql('reg2',
	"GRANT EXECUTE ON FUNCTION ${\ registry_signature('release')} TO snowid_members");
sub claim_and_hold
{
	my ($node) = @_;
	return attack_and_sleep('reg2',
		'BEGIN; ' . sprintf($claim2, $node, 'm_x', "evil$node") . '; SELECT pg_sleep(10); COMMIT;');
}

is($registry->safe_psql('reg2', sprintf($claim2, 7, 'm_v', 'vic7'), extra_params => [ '-U', 'm_v' ]),
	'ok', 'm_v holds node 7');
my $held = claim_and_hold(7);
is($registry->safe_psql('reg2', q{
SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
 WHERE a.usename = 'm_x' AND l.relation = 'snowid_registry_node'::regclass}),
	'0', "the attacker's open transaction holds no lock on the nodes' table");
($out2, $took, $err2) = until_answer('reg2', sprintf($claim2, 7, 'm_v', 'vic7'), 'm_v', 'ok');
is($out2, 'ok', "7. the holder's claim of its node while the attacker's claim of it is open: ok")
  or diag($err2);
cmp_ok($took, '<', 1, "... within 1 s (took ${\ sprintf('%.1f', $took)} s)");
($out2, $took, $err2) = until_answer('reg2',
	"SELECT snowid_registry_release(7, 'vic7', repeat('s', 32), 0)", 'm_v', 't');
is($out2, 't', "the holder's release of its node meanwhile: done")
  or diag($err2);
cmp_ok($took, '<', 1, "... within 1 s (took ${\ sprintf('%.1f', $took)} s)");
$held->{handle}->finish;
is($held->{err}, '', "... and the attacker's session was not ended");
is($registry->safe_psql('reg2', 'SELECT released_at IS NOT NULL FROM snowid_registry_node WHERE node_id = 7'),
	't', '... node 7 is released');

# ==== 8. prepared transactions ====

# A prepared transaction keeps its locks with no session left to end (the
# registry here allows them, as a Citus coordinator hosting one does).  On
# 1.10 and 1.11 PREPARE of a transaction that called the registry's
# functions was refused; from 2.0 such a transaction holds nothing of the
# registry's, and may be prepared.
is($registry->safe_psql('reg2', sprintf($claim2, 7, 'm_v', 'vic7'), extra_params => [ '-U', 'm_v' ]),
	'ok', 'm_v holds node 7 again');
my ($rc8, $out8, $err8) = $registry->psql('reg2',
	'BEGIN; ' . sprintf($claim2, 7, 'm_x', 'evil7') . "; PREPARE TRANSACTION 'evil7';",
	extra_params => [ '-U', 'm_x' ]);
is($rc8, 0, "8. PREPARE TRANSACTION after the attacker's claim of m_v's node: prepared")
  or diag($err8);
($rc8, $out8, $err8) = $registry->psql('reg',
	"BEGIN; SELECT result FROM snowid_pool_grant('orders', 5, 1, 'evil5', repeat('s', 32), 'k8', 0, '{}', '{}'); "
	  . "PREPARE TRANSACTION 'evil8';",
	extra_params => [ '-U', 'm_x' ]);
is($rc8, 0, '... and after a grant of a pool asking for nothing') or diag($err8);
is(claim('m_v', 6, 'vic6'), 'ok', "... m_v renews node 6's lease");
my $t8 = time;
is($registry->safe_psql('reg2', sprintf($claim2, 7, 'm_v', 'vic7'), extra_params => [ '-U', 'm_v' ]),
	'ok', "... the holder's claim of its node: ok");
cmp_ok(time - $t8, '<', 1, '... at once');
$t8 = time;
is($registry->safe_psql('reg',
		"SELECT result FROM snowid_pool_grant('orders', 6, 1, 'vic6', repeat('s', 32), 'v8', 1000, '{}', '{}')",
		extra_params => [ '-U', 'm_v' ]),
	'granted', "... another member's grant: granted");
cmp_ok(time - $t8, '<', 1, '... at once');
for my $gid (split /\n/, $registry->safe_psql('postgres', 'SELECT gid || \' \' || database FROM pg_prepared_xacts'))
{
	my ($g, $db) = split / /, $gid;
	$registry->safe_psql($db, "ROLLBACK PREPARED '$g'");
}

# ==== 9. sessions that claim the node in quick succession ====

# Three attacker sessions claim m_v's node 7 again and again, each
# sleeping in its transaction after an answer: the holder's claim answers
# 'ok' at its first call, three rounds.
my $loop = 'DO $$ DECLARE r text; BEGIN LOOP BEGIN '
  . 'SELECT c.result INTO r FROM snowid_registry_claim(7, false, 1023, $L$' . $layout . '$L$, '
  . q{'x', 'm_x', 1, 1, 'evil7' || pg_backend_pid(), repeat('s', 32), NULL, false, 60000, 0, 0, NULL) c; }
  . q{PERFORM pg_sleep(0.3); }
  . 'EXCEPTION WHEN OTHERS THEN NULL; END; PERFORM pg_sleep(0.005); END LOOP; END $$';
for my $round (1 .. 3)
{
	my @att = map { attack('reg2', $loop) } 1 .. 3;
	$registry->poll_query_until('reg2', q{
SELECT count(*) = 3 FROM pg_stat_activity WHERE usename = 'm_x' AND wait_event = 'PgSleep'})
	  or die 'the attackers never claimed';
	my $t0 = time;
	(undef, $out2, $err2) = $registry->psql('reg2', sprintf($claim2, 7, 'm_v', 'vic7'),
		extra_params => [ '-U', 'm_v' ]);
	$took = time - $t0;
	is($out2, 'ok', "9. round $round: the holder's claim while three sessions claim its node: ok at the first call")
	  or diag($err2);
	cmp_ok($took, '<', 1, "... within 1 s (took ${\ sprintf('%.1f', $took)} s)");
	is($registry->safe_psql('reg2', 'SELECT holder_role || \' \' || start_id FROM snowid_registry_node WHERE node_id = 7'),
		'm_v vic7', '... node 7 stays the holder\'s');
	$registry->safe_psql('reg2',
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'm_x'");
	$_->{handle}->finish for @att;
}

$b->stop;
$registry->stop;
done_testing();
