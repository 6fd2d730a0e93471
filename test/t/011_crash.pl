
# Copyright (c) snowid contributors
#
# Restarts and crashes while IDs are being generated.  In each round, three
# psql sessions generate IDs (two insert them into a table, one only selects
# them or inserts and rolls back), then the server goes through one of:
#
#   - a clean restart;
#   - an immediate shutdown (no shutdown checkpoint) and a start;
#   - kill -9 of the postmaster, then a start once its children are gone;
#   - kill -9 of one backend while the others generate (crash restart);
#   - kill -9 of a backend right after it borrowed ticks ahead of the clock:
#     a burst of snowid_next() calls, and reservations by
#     snowid_next_batch() that leave the stream seconds ahead of the clock.
#
# After each, every new ID must be above every ID committed before and every
# ID returned to a client before (read from psql's output, so rolled-back
# and merely selected IDs count too).  The borrowing rounds can fail: a
# server that restarted from its wall clock alone would issue again the
# ticks the crashed server had borrowed, since it is back well before the
# clock reaches them (the test checks that it is).
#
# The last round restarts cleanly right after borrowing 2.7-3 s ahead with
# max_lead 3s and max_wait 1s, and expects snowid_next() to work at once: an
# ID just above the last one issued is within max_lead of the clock.  (At
# the time of writing this fails: the server resumes from its persisted
# bound, which lies up to max_lead beyond the last issued tick, and reports
# the clock as that far behind "the IDs snowid has issued".)

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

my $node_id = 2;
my $node = snowid_node('crash', $node_id, "restart_after_crash = on\n");
$node->start;
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION snowid;
CREATE TABLE ids(seq bigserial, round int, client int, id bigint NOT NULL UNIQUE);
});

my $tmp = PostgreSQL::Test::Utils::tempdir;

# Everything returned to a client, by round, and the highest ID known to be
# issued (returned, committed, or reported by snowid_stats().last_id).
my @returned_all;
my $high = 0;
my $crashes = 0;




sub raise_high
{
	for (@_) { $high = $_ if $_ > $high; }
	return;
}


# ---- generators ----

# A psql script of $n statements, each taking 50 IDs and printing them.
sub write_script
{
	my ($kind, $n) = @_;
	my $file = "$tmp/$kind.sql";
	open my $fh, '>', $file or die "could not write $file: $!";
	for my $i (1 .. $n)
	{
		if ($kind eq 'insert')
		{
			print $fh
			  "INSERT INTO ids(round, client, id) SELECT :round, :client, snowid_next() FROM generate_series(1, 50) RETURNING id;\n";
		}
		elsif ($i % 2)
		{
			print $fh "SELECT snowid_next() FROM generate_series(1, 50);\n";
		}
		else
		{
			print $fh
			  "BEGIN;\nINSERT INTO ids(round, client, id) SELECT :round, :client, snowid_next() FROM generate_series(1, 50) RETURNING id;\nROLLBACK;\n";
		}
	}
	close $fh or die;
	return $file;
}

# The scripts are long enough to outlast every event (which ends the
# clients) on any machine: 4,000 statements ran out about 1 s after the
# progress mark on a fast one.
my %script = (
	insert => write_script('insert', 40000),
	select => write_script('select', 40000));

# Start three generators for round $round: clients 1 and 2 insert, client 3
# selects and rolls back.
sub start_generators
{
	my ($round) = @_;
	my @gens;
	for my $client (1 .. 3)
	{
		my $kind = $client == 3 ? 'select' : 'insert';
		# Output goes to files: nothing needs to drain a pipe meanwhile.
		my $g = {
			client => $client,
			kind => $kind,
			out => "$tmp/round$round.client$client.out",
			err => "$tmp/round$round.client$client.err"
		};
		$g->{h} = IPC::Run::start(
			[
				'psql', '-XAtq',
				'-d', $node->connstr('postgres') . " application_name=gen$client",
				'-v', 'ON_ERROR_STOP=1',
				'-v', "round=$round",
				'-v', "client=$client",
				'-f', $script{$kind}
			],
			'>', $g->{out}, '2>', $g->{err});
		push @gens, $g;
	}
	return @gens;
}

# Wait until the generators have issued IDs for a while.
sub wait_for_progress
{
	my ($round) = @_;
	my $start = $node->safe_psql('postgres', 'SELECT ids_issued FROM snowid_stats()');
	for (1 .. 600)
	{
		my ($issued, $rows) = split /\|/,
		  $node->safe_psql('postgres',
			"SELECT ids_issued, (SELECT count(*) FROM ids WHERE round = $round) FROM snowid_stats()"
		  );
		return 1 if $issued - $start >= 20000 && $rows >= 2000;
		usleep(50_000);
	}
	die "generators of round $round made no progress";
}

# Collect what the generators printed; they were stopped by the event.
sub finish_generators
{
	my ($label, @gens) = @_;
	my @returned;
	my ($increasing, $bad_errors, $finished_early) = (1, '', 0);
	for my $g (@gens)
	{
		my $ran_to_end = $g->{h}->finish;
		my @ids = grep { /^\d+$/ } split /\n/, slurp_file($g->{out});
		my $err = slurp_file($g->{err});
		$increasing &&= strictly_increasing(@ids);
		$finished_early++ if $ran_to_end;
		$bad_errors .= $err
		  if $err =~ /ERROR:[^\n]*(?:duplicate key|snowid|system clock)/;
		my ($first_err) = split /\n/, $err;
		note "$label: client $g->{client} ($g->{kind}) got "
		  . scalar(@ids) . ' IDs; stderr: ' . ($first_err // '');
		push @returned, @ids;
	}
	ok($increasing, "$label: each client's IDs strictly increase");
	is($bad_errors, '', "$label: no duplicate-key or snowid errors in the clients");
	is($finished_early, 0, "$label: every client was still generating when it happened");
	return @returned;
}

# ---- waiting for the server ----

sub can_connect
{
	my ($out, $err) = ('', '');
	return IPC::Run::run(
		[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c', 'SELECT 1' ],
		'>', \$out, '2>', \$err) && $out eq "1\n";
}

# After kill -9 of a backend: wait for the crash restart to be logged and
# the server to take connections again (polling fast, every 10 ms).
sub wait_crash_restart
{
	my ($log_offset) = @_;
	for (1 .. 3000)
	{
		if ($node->log_contains(qr/all server processes terminated; reinitializing/, $log_offset)
			&& can_connect())
		{
			return time;
		}
		usleep(10_000);
	}
	die 'server did not come back after the crash';
}

# PIDs of the children of a process.
sub children_of
{
	my ($ppid) = @_;
	my @kids;
	opendir my $dh, '/proc' or die;
	for my $pid (grep { /^\d+$/ } readdir $dh)
	{
		open my $fh, '<', "/proc/$pid/stat" or next;
		my $stat = <$fh>;
		close $fh;
		next unless defined $stat && $stat =~ /\)\s+\S+\s+(\d+)/;
		push @kids, $pid if $1 == $ppid;
	}
	closedir $dh;
	return @kids;
}

# kill -9 the postmaster, wait for it and all its children to go, start.
sub kill9_postmaster_and_start
{
	my $pm = $node->{_pid};
	my @procs = ($pm, children_of($pm));
	$node->kill9;
	for (1 .. 3000)
	{
		last unless grep { kill 0, $_ } @procs;
		usleep(10_000);
	}
	my @left = grep { kill 0, $_ } @procs;
	die "processes of the killed postmaster still running: @left" if @left;
	ok(-e $node->data_dir . '/postmaster.pid',
		'kill -9 of the postmaster left its postmaster.pid behind');
	$node->start;
	return;
}

# ---- one round ----

sub check_after
{
	my ($label, $before_returned, $before_committed) = @_;

	# New IDs, from a fresh session: some returned only, some committed.
	my @new = split /,/,
	  $node->safe_psql('postgres',
		"SELECT string_agg(snowid_next()::text, ',') FROM generate_series(1, 1000)");
	my @committed = split /\n/,
	  $node->safe_psql('postgres',
		"INSERT INTO ids(round, client, id) SELECT 0, 0, snowid_next() FROM generate_series(1, 1000) RETURNING id"
	  );
	cmp_ok(min_of(@new), '>', $before_returned,
		"$label: the first new ID is above every ID returned before");
	cmp_ok(min_of(@new), '>', $before_committed,
		"$label: the first new ID is above every ID committed before");
	ok(strictly_increasing(@new, @committed),
		"$label: new IDs strictly increase");
	push @returned_all, @new, @committed;
	raise_high(@new, @committed);
	return;
}

my $round = 0;

sub round_with_generators
{
	my ($label, $event) = @_;
	$round++;
	my @gens = start_generators($round);
	wait_for_progress($round);
	my $log_offset = -s $node->logfile;
	$event->($log_offset);
	my @returned = finish_generators($label, @gens);
	push @returned_all, @returned;

	my $committed = $node->safe_psql('postgres', 'SELECT max(id) FROM ids');
	my $max_returned = max_of(@returned);
	note "$label: " . scalar(@returned)
	  . " IDs returned in the round, max returned $max_returned, max committed $committed";
	ok(scalar(@returned) > 1000, "$label: the clients received IDs before it happened");
	raise_high($max_returned, $committed);
	check_after($label, max_of($max_returned, $high), $committed);
	return;
}

# 1. clean restart
round_with_generators('clean restart', sub { $node->restart; });

# 2. immediate shutdown
round_with_generators(
	'immediate shutdown',
	sub {
		$node->stop('immediate');
		$node->start;
	});

# 3. kill -9 of the postmaster
round_with_generators('kill -9 of the postmaster', sub { kill9_postmaster_and_start(); $crashes++; });

# 4. kill -9 of one backend while the others generate
round_with_generators(
	'kill -9 of one backend',
	sub {
		my ($log_offset) = @_;
		my $pid = $node->safe_psql('postgres',
			"SELECT pid FROM pg_stat_activity WHERE application_name = 'gen3'");
		like($pid, qr/^\d+$/, 'found the backend of the selecting client')
		  or BAIL_OUT('the selecting client had already ended');
		kill 'KILL', $pid;
		wait_crash_restart($log_offset);
		# ("server process (PID ...)" up to 17, "client backend (PID ...)" from 18)
		ok( $node->log_contains(
				qr/ \(PID $pid\) was terminated by signal 9/, $log_offset),
			'the backend was killed and the server went through crash recovery');
		$crashes++;
	});

# 5. A burst of snowid_next() calls far ahead of the clock (max_lead 1 s);
# its backend is killed right after it returns.  Three batch reservations
# first put the stream about 730 ms ahead, so that the burst that follows
# runs ahead of the clock on any machine (it loses its lead only if 100,000
# calls take longer than that), on the fast path for a stream far ahead,
# rather than only where one backend outruns 4,096 IDs per ms.
{
	my $label = 'burst, then kill -9 of its backend';
	set_policy($node, '1s', '1s');
	my $s = $node->background_psql('postgres');
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	push @returned_all, $s->query_safe('SELECT snowid_next_batch(1000000) LIMIT 1')
	  for 1 .. 3;
	my ($burst_max, $burst_n) = split /\|/,
	  $s->query_safe(
		'SELECT max(id), count(*) FROM (SELECT snowid_next() AS id FROM generate_series(1, 100000)) s');
	my ($lead, $last_id) = split /\|/,
	  $s->query_safe('SELECT lead_ms, last_id FROM snowid_stats()');
	my $burst_tick = $s->query_safe("SELECT extract(epoch FROM snowid_timestamp($burst_max))");
	my $log_offset = -s $node->logfile;
	kill 'KILL', $pid;
	my $t0 = time;
	$s->{run}->kill_kill;
	my $t_back = wait_crash_restart($log_offset);
	$crashes++;
	my $margin = sprintf('%.0f', ($burst_tick - $t_back) * 1000);
	note sprintf(
		"$label: %d IDs, returned max %s, last_id %s, %.1f ms ahead of the clock; server back after %.3f s, %s ms before the clock reached the burst's last tick",
		$burst_n, $burst_max, $last_id, $lead, $t_back - $t0, $margin);
	cmp_ok($lead, '>', 0, "$label: the burst had borrowed ticks ahead of the clock");
	is($last_id, $burst_max, "$label: the burst's last ID was the last one issued");
	push @returned_all, $burst_max;

	$t0 = time;
	my ($first, $waits, $wait_ms) = split /\|/,
	  $node->safe_psql('postgres',
		'SELECT id, waits, wait_time_ms FROM (SELECT snowid_next() AS id) s, snowid_stats()');
	note sprintf("$label: first ID after the crash %s, after %.3f s (%s waits, %s ms)",
		$first, time - $t0, $waits, $wait_ms);
	cmp_ok($first, '>', $burst_max,
		"$label: the first ID after the crash is above the burst's last ID");
	push @returned_all, $first;
	raise_high($burst_max, $first);
	check_after($label, $high,
		$node->safe_psql('postgres', 'SELECT max(id) FROM ids'));
}

# 6. snowid_next_batch() reservations put the stream ~3 s ahead of the
# clock at once (each reserves 244 ticks and only the first ID is read;
# max_lead 5s, so that what the last round left of its lead fits too); the backend is killed right after.  A server restarting
# from its clock would reissue those ticks: the check below makes sure it
# came back before the clock reached them, which a crash restart does with
# seconds to spare even on a loaded machine.  Afterwards the clock is let
# catch up before max_lead goes back to 1 s.
{
	my $label = 'batch reservations, then kill -9 of their backend';
	set_policy($node, '5s', '1s');
	my $s = $node->background_psql('postgres');
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	my @firsts;
	for (1 .. 12)
	{
		push @firsts,
		  $s->query_safe('SELECT snowid_next_batch(1000000) LIMIT 1');
	}
	my ($lead, $last_id, $last_tick) = split /\|/,
	  $s->query_safe(
		'SELECT lead_ms, last_id, extract(epoch FROM snowid_timestamp(last_id)) FROM snowid_stats()');
	my $log_offset = -s $node->logfile;
	kill 'KILL', $pid;
	my $t0 = time;
	$s->{run}->kill_kill;
	my $t_back = wait_crash_restart($log_offset);
	$crashes++;
	my $margin = sprintf('%.0f', ($last_tick - $t_back) * 1000);
	$t0 = time;
	my ($first, $waits, $wait_ms) = split /\|/,
	  $node->safe_psql('postgres',
		'SELECT id, waits, wait_time_ms FROM (SELECT snowid_next() AS id) s, snowid_stats()');
	note sprintf(
		"$label: last_id %s was %s ms ahead of the clock; the server took connections again %s ms before the clock reached it; first ID after it %s, after %.3f s (%s waits, %s ms)",
		$last_id, $lead, $margin, $first, time - $t0, $waits, $wait_ms);
	ok($lead > 2000, "$label: the stream was more than 2 s ahead of the clock ($lead ms)");
	cmp_ok($margin, '>', 0,
		"$label: the server was back before the clock reached the borrowed ticks (the case can fail)");
	cmp_ok($first, '>', $last_id,
		"$label: the first ID after the crash is above every ID issued before, returned or not");
	ok(strictly_increasing(@firsts, $first), "$label: and above the IDs returned before");
	push @returned_all, @firsts, $first;
	raise_high($last_id, $first);
	check_after($label, $high,
		$node->safe_psql('postgres', 'SELECT max(id) FROM ids'));
	$node->poll_query_until('postgres', 'SELECT lead_ms <= 0 FROM snowid_stats()')
	  or die 'the clock did not catch up with the borrowed ticks';
	set_policy($node, '1s', '1s');
}

# 7. The same once more, with kill -9 of the postmaster instead.
{
	my $label = 'batch reservations, then kill -9 of the postmaster';
	my $s = $node->background_psql('postgres');
	my @firsts;
	for (1 .. 4)
	{
		push @firsts,
		  $s->query_safe('SELECT snowid_next_batch(1000000) LIMIT 1');
	}
	my ($lead, $last_id, $last_tick) = split /\|/,
	  $s->query_safe('SELECT lead_ms, last_id, extract(epoch FROM snowid_timestamp(last_id)) FROM snowid_stats()');
	kill9_postmaster_and_start();
	my $margin = sprintf('%.0f', ($last_tick - time) * 1000);
	$s->{run}->kill_kill;
	$crashes++;
	my $first = $node->safe_psql('postgres', 'SELECT snowid_next()');
	note "$label: last_id $last_id was $lead ms ahead of the clock; the server was back "
	  . abs($margin) . ' ms ' . ($margin >= 0 ? 'before' : 'after')
	  . " the clock reached it; first ID after it $first";
	cmp_ok($first, '>', $last_id,
		"$label: the first ID after the restart is above every ID issued before");
	push @returned_all, @firsts, $first;
	raise_high($last_id, $first);
	check_after($label, $high,
		$node->safe_psql('postgres', 'SELECT max(id) FROM ids'));
}

# 8. A clean restart right after borrowing within a larger max_lead
# (3 s, max_wait 1 s): the last ID issued is 2.7-3 s ahead of the clock,
# within max_lead, so an ID just above it can be issued at once after the
# restart; invariant 3 allows an error only when keeping invariants 1 and 2
# needs more than max_wait of waiting.
{
	my $label = 'clean restart after borrowing 2.7-3 s (max_lead 3s, max_wait 1s)';
	set_policy($node, '3s', '1s');
	my $s = $node->background_psql('postgres');
	my @firsts;
	for (1 .. 11)
	{
		push @firsts,
		  $s->query_safe('SELECT snowid_next_batch(1000000) LIMIT 1');
	}
	my ($lead, $last_id, $bound_ahead) = split /\|/,
	  $s->query_safe(
		q{SELECT lead_ms, last_id, round(extract(epoch FROM reserved_until - clock_timestamp()) * 1000) FROM snowid_stats()});
	$s->quit;
	push @returned_all, @firsts;
	raise_high($last_id);
	note "$label: last_id $last_id is $lead ms ahead of the clock; the persisted bound $bound_ahead ms";
	ok($lead > 2000 && $lead <= 3000, "$label: the stream is 2-3 s ahead, within max_lead ($lead ms)");

	$node->restart;
	my ($ret, $out, $err) = $node->psql('postgres',
		qq{\\set VERBOSITY verbose
SELECT id, round(extract(epoch FROM snowid_timestamp($last_id) - clock_timestamp()) * 1000)
FROM (SELECT snowid_next() AS id) s});
	my ($first, $last_ahead) = split /\|/, $out;
	note "$label: first call after the restart: ret $ret, out '$out'; stderr: $err";
	is($ret, 0,
		"$label: snowid_next() works at once after the restart (the last issued ID is within max_lead of the clock)")
	  or diag "BUG: after a clean restart snowid continues from its persisted bound, "
	  . "which lay $bound_ahead ms ahead of the clock (max_lead + the lead it had), "
	  . "instead of just above the last issued ID; the error claims IDs were issued that far ahead:\n$err";
	if ($ret != 0)
	{
		like($err, qr/ERROR:  55000: system clock is [0-9.]+ ms behind/,
			"$label: what fails is the clock check (55000)");
		# Let the caller wait instead, to check what comes next.
		set_policy($node, '3s', '10s');
		$first = $node->safe_psql('postgres', 'SELECT snowid_next()');
	}
	cmp_ok($first, '>', $last_id, "$label: the first ID after the restart is above every ID issued before");
	push @returned_all, $first;
	raise_high($first);
	set_policy($node, '1s', '1s');
}

# ---- over the whole test ----

my %seen;
my $dups = 0;
for (@returned_all) { $dups++ if $seen{$_}++; }
is($dups, 0, 'no ID was returned twice over the whole test');
is( $node->safe_psql('postgres',
		"SELECT count(*) = count(DISTINCT id) AND bool_and(snowid_node(id) = $node_id) FROM ids"),
	't',
	'the committed IDs are distinct and carry the node ID');
my $rows = $node->safe_psql('postgres', 'SELECT count(*) FROM ids');
note sprintf('IDs returned to clients and checked: %d; committed rows: %d; crashes and kills: %d; rounds with generators: %d',
	scalar(@returned_all), $rows, $crashes, $round);
note 'stats: ' . $node->safe_psql('postgres', 'SELECT * FROM snowid_stats()');

$node->stop;
done_testing();
