
# Copyright (c) snowid contributors
#
# Concurrent generation while the system clock steps back and forth within
# snowid.max_lead.  pgbench runs 4 clients that insert snowid_next() values
# into a table (UNIQUE id, bigserial order column) while the test moves the
# server's fake clock (test/clockshim.c) 0 -> -0.5 s -> 0 -> -0.3 s -> 0 -> -0.8 s
# -> 0.  Every transaction must succeed, no ID may repeat, each client's IDs
# must strictly increase in the order it received them, and the steps back
# must be counted as clock regressions.
#
# pgbench runs for a fixed time at a capped rate, not a fixed number of
# transactions: a fixed number ran out before the last step on a fast machine
# (CI, about 400,000 rows/s), and the steps must happen under load.

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

my $clients = 4;
my $run_s = 12;      # pgbench's duration: the six steps take about 3 s
my $rate = 1000;     # transactions a second, all clients together
my $rows_per_txn = 50;
my @steps = ('-0.5', '+0', '-0.3', '+0', '-0.8', '+0');
my $hold_s = 0.4;    # how long each clock offset is held

my $node = snowid_node('concurrent_steps', 3,
	"snowid.max_lead = '1s'\nsnowid.max_wait = '1s'\n");

my $clock_file = $node->basedir . '/fake_clock';

sub set_clock { write_clock_offset($clock_file, @_); return; }


set_clock('+0');
with_fake_clock($node, $clock_file, 'start');
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION snowid;
CREATE TABLE ids(seq bigserial, client int, id bigint NOT NULL UNIQUE);
});

my $script = PostgreSQL::Test::Utils::tempdir . '/steps.sql';
open my $fh, '>', $script or die;
print $fh
  "INSERT INTO ids(client, id) SELECT :client_id, snowid_next() FROM generate_series(1, $rows_per_txn);\n";
close $fh;

# A session for looking while pgbench runs (psql itself reads the real clock).
my $look = $node->background_psql('postgres');
sub rows_so_far
{
	return $look->query_safe(
		'SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM ids_seq_seq');
}

my ($pgb_out, $pgb_err) = ('', '');
my $pgbench = IPC::Run::start(
	[
		'pgbench', '-n', '-h', $node->host, '-p', $node->port,
		'-c', $clients, '-j', 2, '-T', $run_s, '-R', $rate,
		'-f', $script, 'postgres'
	],
	'>', \$pgb_out, '2>', \$pgb_err);

# Wait until pgbench inserts, then step the clock.
for (1 .. 3000)
{
	last if rows_so_far() >= 2000 || !$pgbench->pumpable;
	$pgbench->pump_nb;
	usleep(10_000);
}
my $rows_at_start = rows_so_far();
cmp_ok($rows_at_start, '>', 0, 'pgbench is inserting before the first clock step');

my @progress;
my @leads;
for my $offset (@steps)
{
	set_clock($offset);
	my $t0 = time;
	usleep(50_000);
	my ($lead) = $look->query_safe('SELECT lead_ms FROM snowid_stats()');
	push @leads, sprintf('%s:%s:%.0f', $offset, $lead, (time - $t0) * 1000);
	while (time - $t0 < $hold_s)
	{
		# A pgbench that has ended cannot be pumped (IPC::Run dies): the
		# checks below then say that the steps were not under load.
		$pgbench->pump_nb if $pgbench->pumpable;
		usleep(20_000);
	}
	push @progress, rows_so_far();
}
set_clock('+0');
my $rows_after_steps = rows_so_far();
note "rows inserted when each step ended: @progress; offset:lead_ms:ms since the step, read 50 ms or more into each step: @leads";

my $pgbench_ok = $pgbench->finish;
note "pgbench: $pgb_out";
ok($pgbench_ok, 'pgbench succeeded') or diag $pgb_err;
my $processed = pgbench_processed({ out => $pgb_out }) // 0;
like($pgb_out, qr{number of failed transactions: 0 }, 'no transaction failed');
cmp_ok($processed, '>', 0, "pgbench processed transactions ($processed)");

my $rows = $processed * $rows_per_txn;
my $final_rows = $node->safe_psql('postgres', 'SELECT count(*) FROM ids');
is($final_rows, $rows, "all $rows rows inserted");
cmp_ok($final_rows, '>', $rows_after_steps,
	'pgbench was still inserting after the last step (the steps happened under load)');
my $moved = 1;
for my $i (1 .. $#progress)
{
	$moved = 0 unless $progress[$i] > $progress[ $i - 1 ];
}
ok($moved && $progress[0] > $rows_at_start, 'rows were inserted during every clock offset');

is($node->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM ids'),
	'0', 'no duplicate IDs');
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) FROM (
			SELECT id, lag(id) OVER (PARTITION BY client ORDER BY seq) AS prev
			FROM ids) s
		  WHERE id <= prev}),
	'0',
	'each client\'s IDs strictly increase in the order it received them');
is($node->safe_psql('postgres', 'SELECT count(*) FILTER (WHERE snowid_node(id) <> 3) FROM ids'),
	'0', 'every ID carries node 3');

my ($regressions, $largest, $errors, $issued) = split /\|/,
  $node->safe_psql('postgres',
	'SELECT clock_regressions, largest_regression_ms, clock_errors, ids_issued FROM snowid_stats()');
my $back_steps = grep { /^-/ } @steps;
note "clock steps: "
  . scalar(@steps)
  . " ($back_steps back); IDs checked: $final_rows; clock_regressions: $regressions; largest_regression_ms: $largest; clock_errors: $errors";
cmp_ok($regressions, '>=', $back_steps, "clock_regressions counts each of the $back_steps steps back");
# The regression seen is the step less the time between the last clock
# reading before it and the first after it, which a loaded machine can
# stretch: above 510 ms it can only be the 0.8 s step.
ok($largest > 510 && $largest <= 820,
	"largest_regression_ms is about 800, the largest step ($largest)");
is($errors, '0', 'no clock errors: every step was within max_lead');
is($issued, $rows, 'ids_issued matches the rows');

my ($lead_ok) = grep { /^-0\.8:/ } @leads;
my (undef, $lead8, $since8) = split /:/, $lead_ok;
# The lead shrinks as the real time since the step ($since8) passes: on a
# machine that took 0.8 s to read it, 0 is right.
ok(($lead8 > 0 || $since8 >= 790) && $lead8 <= 1000,
	"right after the 0.8 s step back, the IDs ran ahead of the clock, within max_lead ($lead8 ms, $since8 ms after the step)");

$look->quit;
$node->stop;
done_testing();
