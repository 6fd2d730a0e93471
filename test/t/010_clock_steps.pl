
# Copyright (c) snowid contributors
#
# Backward steps of the system clock, on one node whose server runs on the
# fake clock of test/clockshim.c (the clock offset is read from a file on
# every clock read, so running backends see a step at once; CLOCK_MONOTONIC
# stays real).
#
#  - a step back within snowid.max_lead is absorbed: no error, IDs keep
#    increasing, the regression is counted and measured;
#  - a step back beyond max_lead + max_wait fails at once with a clear
#    error (55000), issues nothing, and keeps failing across a restart;
#    snowid_health() shows the generator critical meanwhile;
#  - once the clock is right again, generation resumes above every ID
#    issued before;
#  - a wait for the clock is interruptible (statement_timeout) and shows up
#    in pg_stat_activity as wait event type Extension.
#
# Only the server and its pg_ctl get the preload: pg_ctl compares the
# postmaster's start time (from postmaster.pid) with its own clock, so it
# must see the same fake clock as the server.  psql and this script read the
# real clock.  The offset is set back to +0 before anything waits on a
# PostgreSQL timeout (poll_query_until, reloads), as a backward jump
# stretches PostgreSQL's own sleeps.

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;
use Time::HiRes qw(time usleep);

my $node = snowid_node('clock_steps', 1);

my $clock_file = $node->basedir . '/fake_clock';

sub set_clock { write_clock_offset($clock_file, @_); return; }


# Start (or restart) the node with the server and pg_ctl under the fake clock.
sub under_fake_clock
{
	my ($method) = @_;
	with_fake_clock($node, $clock_file, $method);
	return;
}

# The server's clock minus the real clock, in seconds.
sub server_clock_offset
{
	my $before = time;
	my $server = $node->safe_psql('postgres',
		'SELECT extract(epoch FROM clock_timestamp())');
	my $after = time;
	return $server - ($before + $after) / 2;
}

sub snowstat
{
	my ($col) = @_;
	return $node->safe_psql('postgres', "SELECT $col FROM snowid_stats()");
}


# Is every element of the list strictly greater than the one before?



# Run a query in a background session; returns (stdout, stderr).  The
# session keeps what psql printed on stderr until it is cleared here.
sub run_query
{
	my ($session, $sql) = @_;
	$session->{stderr} = '';
	my ($out) = $session->query($sql);
	my $err = $session->{stderr};
	$session->{stderr} = '';
	return ($out, $err);
}

# Every ID this test has received, in order.
my @all_ids;

sub take_ids
{
	my ($session, $n) = @_;
	my @ids = split /,/,
	  $session->query_safe(
		"SELECT string_agg(snowid_next()::text, ',') FROM generate_series(1, $n)");
	return @ids;
}

set_clock('+0');
under_fake_clock('start');
$node->safe_psql('postgres', 'CREATE EXTENSION snowid');

# ---- the fake clock reaches the server, and only the server ----

my %fake_env = fake_clock_env($clock_file);
my $environ = slurp_file('/proc/' . $node->{_pid} . '/environ');
like($environ, qr/(^|\0)LD_PRELOAD=\Q$fake_env{LD_PRELOAD}\E(\0|$)/,
	'the postmaster runs with the fake clock preloaded');
unlike($ENV{LD_PRELOAD} // '', qr/clockshim/,
	'the test script and psql do not');

set_clock('-60');
my $offset = server_clock_offset();
note sprintf('server clock offset with the fake clock at -60: %.3f s', $offset);
ok($offset > -62 && $offset < -58,
	'a running server sees the fake clock step back 60 s at once');
set_clock('+0');
$offset = server_clock_offset();
note sprintf('server clock offset with the fake clock at +0: %.3f s', $offset);
ok(abs($offset) < 2, 'and back to the real clock at once');

# ---- 1. a step back within max_lead is absorbed ----

# The step is 5 s, within max_lead 10s.  How large a regression snowid sees
# depends on how much real time passes between the last clock reading
# before the step and the first one after it: the statistics are read first
# and the IDs on both sides come from one session, and that time ($span, at
# most the time from the start of the first query to the end of the last)
# is measured and allowed for, so a descheduled test cannot fail it.
set_policy($node, '10s', '1s');
my $s = $node->background_psql('postgres', on_error_stop => 0);
my $regressions_before = snowstat('clock_regressions');
my $errors_before = snowstat('clock_errors');

my $t_span = time;
my @before = take_ids($s, 2000);
set_clock('-5');
my @after = take_ids($s, 2000);
my $lead_after = $s->query_safe('SELECT lead_ms FROM snowid_stats()');
my $span = (time - $t_span) * 1000;
set_clock('+0');

is(scalar(@after), 2000, 'step back 5 s < max_lead 10 s: every call returned an ID');
ok(strictly_increasing(@before, @after),
	'IDs taken before and after the step strictly increase');
cmp_ok(min_of(@after), '>', max_of(@before),
	'the first ID after the step is above the last one before');
cmp_ok(snowstat('clock_errors'), '==', $errors_before, 'no clock error');
cmp_ok(snowstat('clock_regressions'), '>', $regressions_before,
	'clock_regressions counts the step');
my $largest = snowstat('largest_regression_ms');
note sprintf('largest_regression_ms after a 5 s step: %s; lead_ms right after: %s; %.0f ms from the first of those IDs to the lead',
	$largest, $lead_after, $span);
ok($largest >= 5000 - $span - 10 && $largest <= 5010,
	"largest_regression_ms is 5000 less the time between the readings ($largest)");
ok($lead_after >= 5000 - $span - 10 && $lead_after <= 10000,
	"right after the step, the IDs ran ahead of the clock by about 5 s, within max_lead ($lead_after ms)");
push @all_ids, @before, @after;

# ---- 2. a step back beyond max_lead + max_wait fails at once ----

set_policy($node, '1s', '1s');
my $issued_before = snowstat('ids_issued');
my $last_before = snowstat('last_id');
$errors_before = snowstat('clock_errors');
$s->query_safe('\set VERBOSITY verbose');

# The clock is 30 s behind the last ID taken here, less the real time that
# passes until the failing call reads it ($span, measured).
$t_span = time;
my @last_taken = take_ids($s, 100);
push @all_ids, @last_taken;
$issued_before += @last_taken;
$last_before = $last_taken[-1];
set_clock('-30');
my $t0 = time;
my ($out, $err) = run_query($s, 'SELECT snowid_next()');
my $elapsed = time - $t0;
$span = (time - $t_span) * 1000;
note sprintf('step back 30 s, max_lead 1s, max_wait 1s: failed after %.3f s', $elapsed);
note "error: $err";
ok($err ne '' && $out eq '', 'step back 30 s: snowid_next() fails and returns nothing');
like(
	$err,
	qr/ERROR:  55000: system clock is (\d+\.\d{3}) ms behind the IDs snowid has issued/,
	'SQLSTATE 55000 and a message saying how far the clock is behind');
my ($behind_ms) = $err =~ /system clock is (\d+\.\d+) ms behind/;
ok(defined $behind_ms && $behind_ms >= 30000 - $span - 10 && $behind_ms < 31500,
	'it is about 30 s behind (' . ($behind_ms // 'undef') . sprintf(' ms, %.0f ms after the last ID)', $span));
like(
	$err,
	qr/DETAIL:  The next ID belongs to the tick starting at \S+ \S+ and the clock reads \S+ \S+; snowid.max_lead allows 1000 ms of lead and snowid.max_wait 1000 ms of waiting\./,
	'DETAIL names the tick, the clock reading and the policy');
like($err, qr/HINT:  Wait for the clock to catch up or correct it; .*snowid\.max_wait/,
	'HINT says what to do');
# That it fails without spending max_wait first is checked below with
# max_wait 10s, where a machine that stalls for a second cannot fake it.

# snowid_next_batch fails the same way
($out, $err) = run_query($s, 'SELECT count(*) FROM snowid_next_batch(10)');
like($err, qr/ERROR:  55000: system clock is [0-9.]+ ms behind/,
	'snowid_next_batch() fails the same way');
# (asked in the session, as the failing calls were: nothing connects while
# the clock is behind)
($out, $err) = run_query($s,
	q{SELECT status || '|' || issues_for || '|' || reason FROM snowid_health() WHERE component = 'generator'});
like(
	$out,
	qr/^critical\|00:00:00\|the clock is \d+ ms behind the ids this server issued, more than snowid\.max_lead and snowid\.max_wait allow: snowid_next\(\) fails until the clock catches up$/,
	'snowid_health(): the generator is critical while the clock is 30 s behind');
set_clock('+0');
is($node->safe_psql('postgres',
		q{SELECT status FROM snowid_health() WHERE component = 'generator'}),
	'ok', 'snowid_health(): ok again once the clock is right');

# With max_wait = 10 s a 30 s step still cannot succeed: it must not wait.
set_policy($node, '1s', '10s');
set_clock('-30');
$t0 = time;
($out, $err) = run_query($s, 'SELECT snowid_next()');
$elapsed = time - $t0;
set_clock('+0');
note sprintf('step back 30 s, max_wait 10s: failed after %.3f s', $elapsed);
like($err, qr/ERROR:  55000: system clock is [0-9.]+ ms behind.*max_wait 10000 ms of waiting/s,
	'max_wait 10 s, 30 s behind: fails with 55000');
cmp_ok($elapsed, '<', 5, 'and at once: no hopeless wait of max_wait');

is(snowstat('ids_issued'), $issued_before, 'no ID was issued by the failing calls');
is(snowstat('last_id'), $last_before, 'last_id did not move');
cmp_ok(snowstat('clock_errors'), '>=', $errors_before + 3,
	'clock_errors counts the three failures');
set_policy($node, '1s', '1s');
$s->quit;

# ---- 3. restart while the clock is still 30 s behind ----

my $max_before_restart = max_of(@all_ids);
set_clock('-30');
under_fake_clock('restart');
$offset = server_clock_offset();
note sprintf('server clock offset after the restart: %.3f s', $offset);
ok($offset > -32 && $offset < -28, 'the restarted server still runs 30 s behind');
is( $node->safe_psql(
		'postgres',
		"SELECT reserved_until >= snowid_timestamp($max_before_restart) FROM snowid_stats()"
	),
	't',
	'after the restart the high-water mark covers the last ID issued before');

my ($ret, $stdout, $stderr) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT snowid_next()");
note "first call after the restart: ret $ret, out '$stdout', err '$stderr'";
if ($ret == 0)
{
	cmp_ok($stdout, '>', $max_before_restart,
		'after a restart 30 s behind, an ID that is returned is above every earlier one');
	push @all_ids, $stdout;
}
else
{
	like($stderr, qr/ERROR:  55000: system clock is [0-9.]+ ms behind the IDs snowid has issued/,
		'after a restart 30 s behind, snowid_next() still fails with 55000');
}
($ret, $stdout, $stderr) = $node->psql('postgres',
	'SELECT coalesce(min(id), 0) FROM (SELECT snowid_next() AS id FROM generate_series(1, 100)) s');
ok($ret != 0 || $stdout > $max_before_restart,
	'nothing below the earlier IDs is returned while the clock is behind');

# ---- 4. the clock is right again ----

set_clock('+0');
$s = $node->background_psql('postgres', on_error_stop => 0);
my @resumed = take_ids($s, 2000);
is(scalar(@resumed), 2000, 'clock restored: generation resumes');
cmp_ok(min_of(@resumed), '>', max_of(@all_ids),
	'the first ID after the clock is restored is above every ID issued before');
ok(strictly_increasing(@all_ids, @resumed), 'all IDs of the test so far strictly increase');
push @all_ids, @resumed;

# ---- 5. waiting for the clock is interruptible and visible ----

set_policy($node, '0', '10s');
push @all_ids, take_ids($s, 10);
my $waits_before = snowstat('waits');

set_clock('-8');
$s->query_safe('\set VERBOSITY verbose');
$s->query_safe("SET statement_timeout = '300ms'");
$t0 = time;
($out, $err) = run_query($s, 'SELECT snowid_next()');
$elapsed = time - $t0;
note sprintf('8 s behind, max_wait 10s, statement_timeout 300ms: ended after %.3f s', $elapsed);
like($err, qr/ERROR:  57014: canceling statement due to statement timeout/,
	'a wait for the clock ends with the statement timeout');
# A wait that ignored the timeout would end 8 s later; 6 s leaves a loaded
# machine room and still tells the two apart.
cmp_ok($elapsed, '<', 6, 'quickly, not when the clock catches up 8 s later');
$s->query_safe('RESET statement_timeout');

# A second session waits; it shows wait event type Extension.
my ($w_out, $w_err) = ('', '');
$t0 = time;
my $waiter = IPC::Run::start(
	[
		'psql', '-XAtq', '-h', $node->host, '-p', $node->port,
		'-d', 'postgres', '-c', 'SELECT snowid_next() /* waiter */'
	],
	'>', \$w_out, '2>', \$w_err);
my $seen = 0;
my $wait_event = '';
# Bounded by time, not by a count of queries a slow machine answers slowly.
while (time - $t0 < 5)
{
	$wait_event = $s->query_safe(
		q{SELECT coalesce(string_agg(wait_event_type || '/' || wait_event, ','), '')
		  FROM pg_stat_activity WHERE query = 'SELECT snowid_next() /* waiter */'});
	if ($wait_event =~ m{^Extension/})
	{
		$seen = 1;
		last;
	}
	usleep(10_000);
}
note "waiter's wait event: $wait_event";
ok($seen, 'while a session waits for the clock, pg_stat_activity shows wait_event_type Extension');

set_clock('+0');
$waiter->finish;
my $waited = time - $t0;
chomp $w_out;
note sprintf('waiter returned %s after %.3f s (the clock was reset once its wait was seen)',
	$w_out, $waited);
like($w_out, qr/^\d+$/, 'the waiter gets an ID once the clock is restored');
is($w_err, '', 'and no error');
cmp_ok($waited, '<', 6, 'as soon as the clock is restored, not 8 s later');
cmp_ok($w_out, '>', max_of(@all_ids), 'the waiter\'s ID is above every ID issued before');
push @all_ids, $w_out if $w_out =~ /^\d+$/;
cmp_ok(snowstat('waits'), '>', $waits_before, 'snowid_stats().waits counts the wait');

set_policy($node, '1s', '1s');
my @final = take_ids($s, 100);
ok(strictly_increasing(@all_ids, @final), 'every ID of the test strictly increases, in issue order');
push @all_ids, @final;
$s->quit;

my %distinct = map { $_ => 1 } @all_ids;
is(scalar(keys %distinct), scalar(@all_ids), 'no ID was returned twice');
note "IDs checked: " . scalar(@all_ids)
  . "; clock steps: -60, -1, -30 (x3 incl. a restart), -8 (x2)"
  . "; final stats: " . $node->safe_psql('postgres', 'SELECT * FROM snowid_stats()');

$node->stop;
done_testing();
