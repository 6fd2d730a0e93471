# A role that is not a superuser cannot make other callers wait or fail by
# running its batches ahead of the clock: two of its sessions take maximal
# batches (snowid.max_batch IDs) in a loop while a third session times
# single snowid_next() calls.  (Run on a build without the bound, the same
# loop of 65,536-ID batches makes single calls fail: it keeps the stream at
# the edge of max_lead.  Loops of the 1,000,000-ID batches allowed then hurt
# less: each leaves the rest of its last tick to the next callers.)
#
# snowid.max_wait = 0, so a caller that would have to wait for the clock
# fails at once: any wait the loop forced on the timed session shows as an
# error.  snowid.sequence_bits = 11: ticks of 2,048 IDs, so that the timed
# session alone never runs ahead of the clock (about 300 IDs per ms here).
# Each hostile batch reserves its 65,536 IDs (32 ticks, 32 ms of the clock)
# at once and reads only the first (LIMIT 1): the loop runs the stream ahead
# whatever the load on the machine (it needs microseconds per 32 ms, where
# reading every ID took about 9 ms, and a loaded machine once kept the
# stream only 56 ms ahead, refusing nothing).  Should it still not get
# ahead, the checks that need it are skipped, saying so.  Without the bound
# the loop keeps the stream at the full snowid.max_lead, and the next single
# call lands a tick beyond it and fails; with it, batches of such a role
# lead by at most half of max_lead and single calls keep the other half.
use strict;
use warnings;
use IPC::Run;
use Time::HiRes qw(usleep);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

my $secs = 4;
my $margin_ms = 1000;	# scheduling on a loaded machine (a VM's pause), not waiting:
						# with max_wait = 0 a wait would be an error

my $node = snowid_node('batch_bound', 1,
	"snowid.sequence_bits = 11\nsnowid.max_lead = '1s'\nsnowid.max_wait = 0\n");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION snowid;
	CREATE ROLE hostile LOGIN;
	CREATE ROLE app LOGIN;
	-- Maximal batches for $1 seconds, each reserved whole and read no
	-- further than its first ID; returns batches taken, batches refused
	-- and the first refusal (SQLSTATE: message).
	CREATE FUNCTION hostile_loop(secs float8, OUT taken int, OUT refused int,
		OUT first_error text)
	LANGUAGE plpgsql AS $$
	DECLARE
		n int := coalesce(current_setting('snowid.max_batch', true)::int, 65536);
		t_end timestamptz := clock_timestamp() + secs * interval '1 s';
	BEGIN
		taken := 0; refused := 0;
		WHILE clock_timestamp() < t_end LOOP
			BEGIN
				PERFORM snowid_next_batch(n) LIMIT 1;
				taken := taken + 1;
			EXCEPTION WHEN others THEN
				refused := refused + 1;
				first_error := coalesce(first_error, SQLSTATE || ': ' || SQLERRM);
			END;
		END LOOP;
	END $$;
	-- Single calls for $1 seconds, each timed: calls, errors, the first
	-- error, the longest call (ms), the largest lead seen (ms).
	CREATE FUNCTION timed_loop(secs float8, OUT calls int, OUT errors int,
		OUT first_error text, OUT max_ms float8, OUT max_lead_ms float8)
	LANGUAGE plpgsql AS $$
	DECLARE
		t_end timestamptz := clock_timestamp() + secs * interval '1 s';
		t0 timestamptz;
		id bigint;
	BEGIN
		calls := 0; errors := 0; max_ms := 0; max_lead_ms := 0;
		WHILE clock_timestamp() < t_end LOOP
			t0 := clock_timestamp();
			BEGIN
				id := snowid_next();
				max_lead_ms := greatest(max_lead_ms, 1000 *
					extract(epoch FROM snowid_timestamp(id) - clock_timestamp()));
			EXCEPTION WHEN others THEN
				errors := errors + 1;
				first_error := coalesce(first_error, SQLSTATE || ': ' || SQLERRM);
			END;
			max_ms := greatest(max_ms,
				1000 * extract(epoch FROM clock_timestamp() - t0));
			calls := calls + 1;
		END LOOP;
	END $$;
});

my @hostile;
for my $i (1 .. 2)
{
	my %h = (out => '', err => '');
	$h{handle} = IPC::Run::start(
		[
			'psql', '-XAtq', '-d', $node->connstr('postgres') . ' user=hostile',
			'-c', "SELECT taken, refused, first_error FROM hostile_loop($secs)"
		],
		'>', \$h{out}, '2>', \$h{err},
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	push @hostile, \%h;
}

# Let the loop run the stream ahead, then time single calls meanwhile.
usleep(500_000);
my ($calls, $errors, $first_error, $max_ms, $max_lead_ms) = split /\|/,
  $node->safe_psql('postgres',
	'SELECT calls, errors, first_error, round(max_ms::numeric, 1), round(max_lead_ms::numeric) FROM timed_loop('
	  . ($secs - 1) . ')',
	extra_params => [ '-U', 'app' ]);

my ($taken, $refused, $refusal) = (0, 0, '');
for my $h (@hostile)
{
	$h->{handle}->finish;
	is($h->{err}, '', 'the hostile session ran to its end');
	chomp(my $out = $h->{out});
	my ($t, $r, $e) = split /\|/, $out, 3;
	$taken += $t // 0;
	$refused += $r // 0;
	$refusal ||= $e // '';
}
note "hostile batches: $taken taken, $refused refused ($refusal); timed calls: $calls, "
  . "longest $max_ms ms, largest lead $max_lead_ms ms";

cmp_ok($taken, '>', 10, 'the hostile role took batches throughout');
SKIP:
{
	skip "the hostile loop never ran the stream more than 100 ms ahead of the clock "
	  . "(largest lead $max_lead_ms ms, $refused batches refused): the machine was too "
	  . "loaded to reach the bound", 2
	  if $max_lead_ms <= 100;
	cmp_ok($refused, '>', 0, 'and was refused batches beyond its half of max_lead');
	# The refusal names the bound, not a clock fault (the clock did not move).
	like($refusal,
		qr/^55000: snowid batch would lead the system clock by [0-9.]+ ms, more than the 500\.000 ms a role that is not a superuser may$/,
		'a refused batch says it would lead the clock beyond the half of max_lead a role that is not a superuser has');
}
cmp_ok($calls, '>', 1000, 'the timed session made many calls meanwhile');
is($errors, '0',
	'no single call failed (with max_wait = 0 any forced wait would be an error)'
	  . ($first_error ? ": $first_error" : ''));
cmp_ok($max_ms, '<=', $margin_ms,
	"no single call took longer than max_wait (0) + $margin_ms ms of scheduling");

done_testing();
