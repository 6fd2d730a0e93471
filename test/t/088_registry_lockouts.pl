
# Copyright (c) snowid contributors
#
# The four ways a member's login role kept an honest member from its pool
# and its own node on 1.10 and 1.11 (issue 39), none of which works once
# the registry's server process applies members' calls (2.0): the
# attacker's transaction holds no lock of the registry's, whatever it does.
# A registry database "reg" with the integer pool 'orders' (prepared
# transactions allowed, as on a Citus coordinator); the attacker (login
# role m_x, node 5) and the victim (m_v, node 6) call the registry's
# functions directly.  While each attack runs, the victim's grant of a
# range and its claim of its own node each answer within 1 s, granted and
# ok:
#
# 1. a prepared transaction that only read the registry (a grant asking
#    for nothing), and one that claimed the victim's node;
# 2. a transaction busy in one long expression after its grant of a
#    range (on 1.10 it held the pool's row until it ended);
# 3. a relay of short transactions, each granted a range (each held the
#    pool's row for 0.7 s);
# 4. all of that with track_activities = off on the registry.
#
# And the registry ends no session: each attacker's session is still there
# when the attack ends.  Then what no call may do to the registry's server
# processes (issue 39's review): a caller ended while it waits keeps no
# slot, an error that fills the answer does not stop the process, a
# member's DateStyle does not garble its times, two processes do not make
# a pool busy, and processes that cannot start do not fail the calls.
# Then no answer before its commit is durable: a synchronous standby
# named while the processes run is waited for (2.1).
# Last (2.1, unblock and wait_row gone) a node's row held by a
# superuser's transaction or by the other server process: the claim waits
# at most lock_timeout, and no session is ended.

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

my $layout = 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 10, sequence_bits 12, id_bits 63';
my $registry = registry(
	conf => "max_prepared_transactions = 4\nwal_level = replica\nmax_wal_senders = 2",
	dbname => 'reg',
	group => 'snowid_members',
	logins => [qw(m_v m_x)],
	sql => "SELECT snowid_pool_create('orders', 'integer');");

# A claim of $node by $role as the start $start (its own secret).
sub claim_sql
{
	my ($node, $start) = @_;
	return "SELECT result FROM snowid_registry_claim($node, false, 1023, \$\$$layout\$\$, "
	  . "'x', 'h', 1, 1, '$start', rpad('$start', 32, '#'), NULL, false, 600000, 0, 0, NULL)";
}

# A grant of 100 values of orders to node $node ($start), request $req.
sub grant_sql
{
	my ($node, $start, $req, $want) = @_;
	$want //= 100;
	return "SELECT result FROM snowid_pool_grant('orders', $node, 1, '$start', "
	  . "rpad('$start', 32, '#'), '$req', $want, NULL, NULL)";
}

is($registry->safe_psql('reg', claim_sql(5, 'evil5'), extra_params => [ '-U', 'm_x' ]),
	'ok', 'the attacker holds node 5');
is($registry->safe_psql('reg', claim_sql(6, 'vic6'), extra_params => [ '-U', 'm_v' ]),
	'ok', 'the victim holds node 6');

# The victim's grant and its claim of its own node, each timed.
my $round = 0;
sub victim_answers
{
	my ($what) = @_;
	$round++;
	my $t0 = time;
	my ($rc, $out, $err) = $registry->psql('reg', grant_sql(6, 'vic6', "v$round"),
		extra_params => [ '-U', 'm_v' ]);
	my $t1 = time;
	is($out, 'granted', "$what: the victim's grant is granted")
	  or diag("rc $rc, error: $err");
	cmp_ok($t1 - $t0, '<', 1, "$what: the victim's grant answers within 1 s");
	$t0 = time;
	($rc, $out, $err) = $registry->psql('reg', claim_sql(6, 'vic6'),
		extra_params => [ '-U', 'm_v' ]);
	$t1 = time;
	is($out, 'ok', "$what: the victim's claim of its own node is ok")
	  or diag("rc $rc, error: $err");
	cmp_ok($t1 - $t0, '<', 1, "$what: the victim's claim answers within 1 s");
}

# The attacker's psql running $sql (one query string), started and not
# waited for; returned once the attacker's session is in a transaction.
sub attack
{
	my ($sql) = @_;
	my %h = (out => '', err => '');
	$h{handle} = IPC::Run::start(
		[ 'psql', '-XAtq', '-U', 'm_x', '-d', $registry->connstr('reg'), '-c', $sql ],
		'>', \$h{out}, '2>', \$h{err});
	$registry->poll_query_until('postgres', q{
SELECT count(*) > 0 FROM pg_locks l JOIN pg_stat_activity a USING (pid)
 WHERE a.usename = 'm_x' AND l.locktype = 'virtualxid'})
	  or die 'the attacker never began its transaction';
	return \%h;
}

# $sql as $role, started and not waited for.
sub attack_as
{
	my ($role, $sql) = @_;
	my %h = (out => '', err => '');
	$h{handle} = IPC::Run::start(
		[ 'psql', '-XAtq', '-U', $role, '-d', $registry->connstr('reg'), '-c', $sql ],
		'>', \$h{out}, '2>', \$h{err});
	return \%h;
}

# The attacker's sessions, and those of them in a transaction.
sub attacker_pids
{
	return $registry->safe_psql('postgres',
		q{SELECT count(*) FROM pg_stat_activity WHERE usename = 'm_x'});
}
sub attacker_in_transaction
{
	return $registry->safe_psql('postgres', q{
SELECT count(DISTINCT a.pid) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
 WHERE a.usename = 'm_x' AND l.locktype = 'virtualxid'});
}

# ---- 1. prepared transactions: one that read, one that claimed ----
$registry->psql('reg',
	"BEGIN;\n" . grant_sql(5, 'evil5', 'x0', 0) . ";\nPREPARE TRANSACTION 'read';",
	extra_params => [ '-U', 'm_x' ]);
$registry->psql('reg',
	"BEGIN;\n" . claim_sql(6, 'evil6') . ";\nPREPARE TRANSACTION 'claimed';",
	extra_params => [ '-U', 'm_x' ]);
is($registry->safe_psql('postgres', 'SELECT count(*) FROM pg_prepared_xacts'),
	'2', 'the attacker has prepared two transactions');
victim_answers('prepared transactions');
$registry->safe_psql('reg', "SELECT count(*) FROM (SELECT gid FROM pg_prepared_xacts) g, LATERAL (SELECT 1) x");
$registry->psql('reg', "ROLLBACK PREPARED '$_'") for qw(read claimed);

# ---- 2. one long expression after a grant ----
my $long = attack("BEGIN;\n" . grant_sql(5, 'evil5', 'x1') . ";\n"
	  . "SELECT sum(length(sha256(repeat(g::text, 8000000)::bytea))) "
	  . "FROM generate_series(1, 60) g;\nCOMMIT;\n");
sleep(1);
is($registry->safe_psql('postgres',
	q{SELECT count(*) FROM pg_stat_activity WHERE usename = 'm_x' AND query LIKE '%sha256%'}),
	'1', 'the attacker is busy in its long expression');
victim_answers('a long expression');
is($registry->safe_psql('postgres',
	q{SELECT count(*) FROM pg_stat_activity WHERE usename = 'm_x' AND query LIKE '%sha256%'}),
	'1', 'the attacker\'s session was not ended');
$registry->safe_psql('postgres',
	q{SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE usename = 'm_x'});
$long->{handle}->finish;

# ---- 3. a relay of short transactions ----
my $relay_sql = "DO \$\$\nBEGIN\n  FOR i IN 1 .. 12 LOOP\n    PERFORM "
  . "r.result FROM snowid_pool_grant('orders', 5, 1, 'evil5', rpad('evil5', 32, '#'), 'y' || i, 100, NULL, NULL) r;\n"
  . "    PERFORM pg_sleep(0.7);\n    COMMIT;\n  END LOOP;\nEND\n\$\$;\n";
my $relay = attack($relay_sql);
sleep(1);
is(attacker_in_transaction(), '1', 'the attacker relays its transactions');
victim_answers('a relay of short transactions');
victim_answers('a relay of short transactions, later');
is(attacker_pids(), '1', 'the relaying session was not ended');
$registry->safe_psql('postgres',
	q{SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE usename = 'm_x'});
$relay->{handle}->finish;

# ---- 4. with track_activities = off ----
$registry->safe_psql('postgres', 'ALTER SYSTEM SET track_activities = off');
$registry->reload;
my $open = attack("BEGIN;\n" . grant_sql(5, 'evil5', 'x2') . ";\nSELECT pg_sleep(8);\nCOMMIT;\n");
sleep(1);
is(attacker_in_transaction(), '1', 'the attacker holds its transaction open, unseen');
victim_answers('track_activities = off, a transaction left open');
is(attacker_pids(), '1', 'the open transaction\'s session was not ended');
$registry->safe_psql('postgres',
	q{SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE usename = 'm_x'});
$open->{handle}->finish;

$registry->safe_psql('postgres', 'ALTER SYSTEM RESET track_activities');
$registry->reload;

# ---- what no call may do to the registry's server processes ----

sub server_pids
{
	return $registry->safe_psql('postgres',
		q{SELECT string_agg(pid::text, ',' ORDER BY pid) FROM pg_stat_activity
		   WHERE backend_type = 'snowid registry server'});
}

# 5. A caller that ends (FATAL) while it waits: its slot is freed all the
# same (once, about half of such calls kept one of the 128 for good, and
# after about 300 every call answered "the registry is busy").
# (the server processes stopped meanwhile, so that each caller surely
# ends while its call waits in the queue)
$registry->safe_psql('reg',
	"SELECT result FROM snowid_pool_grant('orders', 5, 1, 'evil5', rpad('evil5', 32, '#'), 'w0', 0, NULL, NULL)");
my @stopped = split /,/, server_pids();
kill 'STOP', @stopped;
for my $k (1 .. 140)
{
	$registry->psql('reg',
		"SELECT pg_terminate_backend(pg_backend_pid()), "
		  . "snowid_pool_return('orders', 5, 1, 'evil5', rpad('evil5', 32, '#'), 1, 1)",
		extra_params => [ '-U', 'm_x' ]);
}
kill 'CONT', @stopped;
victim_answers('after 140 callers ended while waiting');

# 6. An answer whose error detail fills the slot (a claim of a free node
# with a system identifier of 32,501 digits, which the refusal's detail
# quotes): an error for that
# call; the server process goes on (once, it exited, failing every call
# of its batch).
my $before = server_pids();
my ($rc6, $out6, $err6) = $registry->psql('reg',
	"SELECT result FROM snowid_registry_claim(7, false, 1023, \$\$$layout\$\$, 'x', 'h', 1, "
	  . "('1' || repeat('0', 32500))::numeric, 'evil7', rpad('evil7', 32, '#'), NULL, false, 600000, 0, 0, NULL)",
	extra_params => [ '-U', 'm_x' ]);
like($err6, qr/invalid identity of a member's start/, '6. a claim whose error detail fills the slot: that error');
victim_answers('after an answer that fills the slot');
is(server_pids(), $before, 'the server processes are the same ones');

# 7. Members' date settings: a re-assertion's time crosses in one style
# (once, a member whose DateStyle was 'SQL, DMY' sent 29/11/2026, read as
# out of range).
is($registry->safe_psql('reg',
		"SET DateStyle = 'SQL, DMY';\n"
		  . "SELECT result FROM snowid_registry_reassert(6, false, 1023, \$\$$layout\$\$, 'x', 'h', 1, 1, "
		  . "'vic6', rpad('vic6', 32, '#'), NULL, false, 600000, 0, 0, NULL, now() + interval '5 min')",
		extra_params => [ '-U', 'm_v' ]),
	'ok', "7. a re-assertion under the member's DateStyle 'SQL, DMY': ok");

# 8. Concurrent grants of one pool by two members: never busy (once, with
# two server processes, a grant found the pool's row locked by the other
# process's batch: 27 of 180 answered busy).
my @loops = map {
	my ($role, $node, $start) = @$_;
	attack_as($role,
		"DO \$\$\nDECLARE r text; busy int := 0;\nBEGIN\n  FOR i IN 1 .. 40 LOOP\n"
		  . "    SELECT g.result INTO r FROM snowid_pool_grant('orders', $node, 1, '$start', "
		  . "rpad('$start', 32, '#'), '$start-c' || i, 10, NULL, NULL) g;\n"
		  . "    IF r = 'busy' THEN busy := busy + 1; END IF;\n  END LOOP;\n"
		  . "  RAISE NOTICE 'busy: %', busy;\nEND\n\$\$;")
} ([ 'm_x', 5, 'evil5' ], [ 'm_v', 6, 'vic6' ]);
$_->{handle}->finish for @loops;
is(join(' ', map { ($_->{err} =~ /busy: (\d+)/)[0] // 'none' } @loops), '0 0',
	'8. two members granting from one pool at once: never busy');

# 9. More server processes asked for than worker slots exist: the calls
# are served by those that start (once, every call failed).
$registry->safe_psql('postgres', 'ALTER SYSTEM SET snowid.registry_processes = 16');
$registry->reload;
sleep(2.5);		# (the running ones leave when idle)
victim_answers('snowid.registry_processes beyond the worker slots');
$registry->safe_psql('postgres', 'ALTER SYSTEM RESET snowid.registry_processes');
$registry->reload;

# 10. Durable before answered: from 2.1, without a synchronous standby a
# batch commits without waiting for its WAL flush and each caller flushes
# before it reads its answer; with one, the commit waits for the standby
# in the server process, as any commit would.  A synchronous standby named
# while the server processes run, none connected: no call is answered
# (each waits until its caller gives up), and all are again once the name
# is gone.
$registry->safe_psql('postgres',
	"ALTER SYSTEM SET synchronous_standby_names = 'nobody'");
$registry->reload;
sleep(1);		# (read by the server processes and the checkpointer)
my ($rc10, $out10, $err10) = $registry->psql('reg',
	"SET statement_timeout = '1500ms';\n" . claim_sql(6, 'vic6'),
	extra_params => [ '-U', 'm_v' ]);
isnt($out10, 'ok', '10. a synchronous standby named, none connected: the claim is not answered');
like($err10, qr/statement timeout/, '10. it waits until its caller gives up');
$registry->safe_psql('postgres', 'ALTER SYSTEM RESET synchronous_standby_names');
$registry->reload;
sleep(0.5);
victim_answers('once no synchronous standby is named');

# 11. No session is ended for a node's row (2.1: snowid_registry_unblock
# and snowid_registry_wait_row are gone).  A superuser's own transaction
# holding the victim's node row: the victim's claim waits at most
# lock_timeout and answers 55P03 within 1 s; the superuser's session
# stays, and once it commits the claim is ok again.
my $su = attack_as($registry->safe_psql('postgres', 'SELECT current_user'),
	"BEGIN; SELECT 1 FROM snowid_registry_node WHERE node_id = 6 FOR UPDATE; "
	  . "SELECT pg_sleep(4); COMMIT;");
$registry->poll_query_until('postgres',
	"SELECT count(*) > 0 FROM pg_stat_activity WHERE datname = 'reg' AND wait_event = 'PgSleep'")
  or die 'the superuser never slept';
my $t11 = time;
my ($rc11, $out11, $err11) = $registry->psql('reg', claim_sql(6, 'vic6'),
	extra_params => [ '-U', 'm_v' ]);
my $took11 = time - $t11;
like($err11, qr/node 6 is being written by another transaction/,
	'11. a superuser holding the node row: the holder\'s claim says it is held');
cmp_ok($took11, '<', 1, '... within 1 s');
$su->{handle}->finish;
is($su->{err}, '', "... and the superuser's session was not ended");
victim_answers('after a superuser held the node row');

# 12. Two server processes on rows of the same nodes: an assigned claim
# (applied by the first process) takes the lowest free node while another
# role names those nodes (odd ones applied by the second process).  Each
# claim answers ok, conflict, or 55P03 (held by the other process beyond
# lock_timeout), none waits long, and no node is ok for two starts.
my $stats = "DO \$\$\nDECLARE c record; t timestamptz; slow int := 0; busy int := 0; got text := '';\nBEGIN\n";
my $tail = "  RAISE NOTICE 'slow: % busy: % got:%', slow, busy, got;\nEND\n\$\$;";
my @race = (
	attack_as('m_x', $stats
		  . "  FOR i IN 1 .. 30 LOOP\n    t := clock_timestamp();\n    BEGIN\n"
		  . "      SELECT * INTO c FROM snowid_registry_claim(NULL, true, 1023, \$l\$$layout\$l\$, 'x', 'h', 1, 1, "
		  . "'ax' || i, rpad('ax' || i, 32, '#'), NULL, false, 600000, 0, 0, NULL);\n"
		  . "      IF c.result = 'ok' THEN got := got || ' ' || c.node_id || '=ax' || i; END IF;\n"
		  . "    EXCEPTION WHEN lock_not_available THEN busy := busy + 1;\n    END;\n"
		  . "    IF clock_timestamp() - t > interval '1 s' THEN slow := slow + 1; END IF;\n"
		  . "  END LOOP;\n" . $tail),
	attack_as('m_v', $stats
		  . "  FOR i IN 7 .. 36 LOOP\n    t := clock_timestamp();\n    BEGIN\n"
		  . "      SELECT * INTO c FROM snowid_registry_claim(i, false, 1023, \$l\$$layout\$l\$, 'x', 'h', 1, 1, "
		  . "'nv' || i, rpad('nv' || i, 32, '#'), NULL, false, 600000, 0, 0, NULL);\n"
		  . "      IF c.result = 'ok' THEN got := got || ' ' || c.node_id || '=nv' || i; END IF;\n"
		  . "    EXCEPTION WHEN lock_not_available THEN busy := busy + 1;\n    END;\n"
		  . "    IF clock_timestamp() - t > interval '1 s' THEN slow := slow + 1; END IF;\n"
		  . "  END LOOP;\n" . $tail));
$_->{handle}->finish for @race;
my %holder;
my $twice = 0;
my @tally;
for my $r (@race)
{
	my ($slow, $busy, $got) = $r->{err} =~ /slow: (\d+) busy: (\d+) got:(.*)/;
	is($slow, '0', '12. claims racing across two server processes: none takes 1 s')
	  or diag($r->{err});
	push @tally, "busy $busy";
	for (split ' ', $got // '')
	{
		my ($node, $start) = split /=/;
		$twice++ if exists $holder{$node};
		$holder{$node} = $start;
	}
}
is($twice, 0, '... no node is ok for two starts');
is($registry->safe_psql('reg', q{
SELECT string_agg(node_id || '=' || start_id, ' ' ORDER BY node_id)
  FROM snowid_registry_node WHERE start_id ~ '^(ax|nv)[0-9]+$'}),
	join(' ', map { "$_=$holder{$_}" } sort { $a <=> $b } keys %holder),
	'... and each node\'s row names the start whose claim was ok');
diag('12: ' . join(', ', @tally) . ', ' . scalar(keys %holder) . ' nodes granted');

# No range granted twice.
is($registry->safe_psql('reg',
	q{SELECT count(*) FROM snowid_pool_ranges a JOIN snowid_pool_ranges b
	   ON a.pool = b.pool AND a.first_value < b.first_value
	  AND b.first_value <= a.last_value}),
	'0', 'no two ranges overlap');

done_testing();
