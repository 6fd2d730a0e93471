# snowid.max_lead and snowid.max_wait on a live server, and the unset node ID
# (snowid_health() then shows the generator critical).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

my $node = snowid_node('policy', 7);
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowid');


# Count IDs whose timestamp lies more than $lead_ms ahead of the clock read
# right after they were issued (clock_timestamp() is evaluated after
# snowid_next() in the same target list).
sub burst
{
	my ($n, $lead_ms, $on) = @_;
	return ($on // $node)->safe_psql('postgres', qq{
		SELECT count(*), count(DISTINCT id),
		       count(*) FILTER (WHERE snowid_timestamp(id) > t + interval '$lead_ms ms')
		FROM (SELECT snowid_next() AS id, clock_timestamp() AS t
		      FROM generate_series(1, $n)) AS s});
}

sub snowstat
{
	my ($col, $on) = @_;
	return ($on // $node)->safe_psql('postgres', "SELECT $col FROM snowid_stats()");
}

# Whether a burst of snowid_next() calls outruns the default layout's 4,096
# IDs per ms depends on how fast the machine is, so what must wait, borrow
# or fail is checked with batches here, and with single calls on a node
# whose ticks hold 16 IDs per 100 ms (below).

# max_lead = 0: bursts faster than 4,096 IDs per ms must wait, never lead.
set_policy($node, '0', '1s');
my $waits_before = snowstat('waits');
is(burst(300000, 0), '300000|300000|0', 'max_lead = 0: 300k IDs, none ahead of the clock');
# A batch that spans 25 ticks waits until its last tick is due.
is( $node->safe_psql('postgres',
		'SELECT count(*), count(DISTINCT x), max(snowid_timestamp(x)) <= clock_timestamp() FROM snowid_next_batch(100000) AS x'),
	'100000|100000|t',
	'max_lead = 0: a batch of 25 ticks waits for the clock instead of failing');
cmp_ok(snowstat('waits'), '>', $waits_before, 'max_lead = 0: callers waited for the clock');
cmp_ok(snowstat('wait_time_ms'), '>', 0, 'wait time is accounted');

# max_lead = 20ms: borrowing happens, but never beyond 20 ms.
set_policy($node, '20ms', '1s');
my $borrowed_before = snowstat('ticks_borrowed');
is(burst(300000, 20), '300000|300000|0', 'max_lead = 20ms: no ID more than 20 ms ahead');
is( $node->safe_psql('postgres',
		'SELECT count(*), max(snowid_timestamp(x)) <= clock_timestamp() + interval \'20 ms\' FROM (SELECT snowid_next_batch(40960) AS x) s'),
	'40960|t',
	'max_lead = 20ms: a batch of 10 ticks is served ahead of the clock, within 20 ms');
cmp_ok(snowstat('ticks_borrowed'), '>', $borrowed_before, 'max_lead = 20ms: ticks were borrowed');

# max_lead = 100ms: far enough ahead of the clock, the generator checks the
# lead against the coarse clock.  A batch of 100 ticks puts the stream ahead
# first, and generate_series in the target list streams its rows (in FROM
# it would be materialised first), so the stream runs ahead on this machine.
# Still no ID may be more than 100 ms ahead of the clock read after it, or
# more than 100 ms behind the clock read before it (t0): the coarse clock
# trails by a few ms, and reading the clock on both sides of the call keeps
# a descheduled backend from failing the test, while a stream that ignored
# the clock would be a second behind after the pause.  One session throughout,
# so the backend's remembered tick is used too.  Each row is decoded once
# and the aggregates are cheap: with count(DISTINCT) the burst would not
# outrun the clock.
set_policy($node, '100ms', '1s');
my @ahead = split /\n/, $node->safe_psql('postgres', q{
		SELECT count(*) FROM snowid_next_batch(409600);
		SELECT count(*),
		       count(*) FILTER (WHERE lead > interval '100 ms'),
		       count(*) FILTER (WHERE behind > interval '100 ms'),
		       round(extract(epoch FROM max(lead)) * 1000)
		FROM (SELECT t0 - snowid_timestamp(id) AS behind,
		             snowid_timestamp(id) - clock_timestamp() AS lead
		      FROM (SELECT clock_timestamp() AS t0, snowid_next() AS id,
		                   generate_series(1, 6000000) AS g
		            OFFSET 0) AS r) AS s;
		SELECT 'slept' FROM pg_sleep(1);
		SELECT snowid_timestamp(id) >= t0 - interval '1 ms'
		FROM (SELECT clock_timestamp() AS t0, snowid_next() AS id) AS s;});
my ($burst_n, $burst_over, $burst_behind, $burst_lead) = split /\|/, $ahead[1];
is("$burst_n|$burst_over|$burst_behind", '6000000|0|0',
	'max_lead = 100ms: 6M IDs, none beyond 100 ms ahead of the clock and none behind it');
note("largest lead in that burst: $burst_lead ms"
	  . ($burst_lead > 20 ? '' : ' (this machine did not run ahead: coarse path not exercised)'));
is($ahead[3], 't', 'after a pause the next ID follows the clock again');

# max_lead = 0 and max_wait = 0 (the single calls that fail are checked on
# the coarse node below).
set_policy($node, '0', '0');
my ($ret, $out, $err);

# ... and a batch that cannot fit in the allowed ticks is refused up front.
($ret, $out, $err) = $node->psql('postgres', 'SELECT count(*) FROM snowid_next_batch(5000)');
like($err, qr/snowid batch of 5000 IDs is larger than the layout can issue in time/,
	'a batch larger than max_lead + max_wait allow is refused');
is($node->safe_psql('postgres', 'SELECT count(*) FROM snowid_next_batch(4096)'),
	'4096', 'a batch of one full tick still works');

# After all of that, the stream is still strictly increasing.
set_policy($node, '1s', '1s');
my $last = snowstat('last_id');
cmp_ok($node->safe_psql('postgres', 'SELECT snowid_next()'), '>', $last,
	'the next ID is above every ID issued before');
$node->stop;

# Single calls on a node whose ticks hold 16 IDs per 100 ms: any machine
# draws 16 IDs in less than 100 ms, so here bursts of snowid_next() wait,
# borrow and fail as the policy says whatever the machine's speed.
my $coarse = snowid_node('coarse', 8,
	"snowid.tick = '100ms'\nsnowid.sequence_bits = 4\n");
$coarse->start;
$coarse->safe_psql('postgres', 'CREATE EXTENSION snowid');

set_policy($coarse, '0', '1s');
$waits_before = snowstat('waits', $coarse);
is(burst(49, 0, $coarse), '49|49|0', 'coarse ticks, max_lead = 0: 49 IDs, none ahead of the clock');
cmp_ok(snowstat('waits', $coarse), '>', $waits_before,
	'coarse ticks, max_lead = 0: single calls waited for the clock');
cmp_ok(snowstat('wait_time_ms', $coarse), '>', 0, 'their wait time is accounted');

set_policy($coarse, '300ms', '1s');
$borrowed_before = snowstat('ticks_borrowed', $coarse);
is(burst(49, 300, $coarse), '49|49|0', 'coarse ticks, max_lead = 300ms: no ID more than 300 ms ahead');
cmp_ok(snowstat('ticks_borrowed', $coarse), '>', $borrowed_before,
	'coarse ticks, max_lead = 300ms: single calls borrowed ticks');

# max_lead = 0 and max_wait = 0: a burst that outruns the clock fails, clearly.
set_policy($coarse, '0', '0');
my $errors_before = snowstat('clock_errors', $coarse);
($ret, $out, $err) = $coarse->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT count(snowid_next()) FROM generate_series(1, 1000)");
isnt($ret, 0, 'max_wait = 0: a burst beyond the clock fails');
like($err, qr/ERROR:  55000: system clock is [0-9.]+ ms behind the IDs snowid has issued/,
	'the error says how far the clock is behind');
like($err, qr/DETAIL:  The next ID belongs to the tick starting at .* snowid.max_lead allows 0 ms of lead and snowid.max_wait 0 ms of waiting/,
	'the detail names the tick and the policy');
like($err, qr/HINT:  .*snowid.max_wait/, 'the hint says what to do');
cmp_ok(snowstat('clock_errors', $coarse), '>', $errors_before, 'clock_errors counts it');
$coarse->stop;

# A preloaded server without snowid.node_id: generating fails, decoding works.
my $unset = snowid_node('unset', undef);
$unset->start;
$unset->safe_psql('postgres', 'CREATE EXTENSION snowid');
($ret, $out, $err) = $unset->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT snowid_next()");
like($err, qr/ERROR:  55000: snowid.node_id is not set/, 'unset node ID: snowid_next() fails with 55000');
like($err, qr/HINT:  Set snowid.node_id in postgresql.conf and restart the server./, 'with a hint');
($ret, $out, $err) = $unset->psql('postgres', 'SELECT count(*) FROM snowid_next_batch(10)');
like($err, qr/snowid.node_id is not set/, 'unset node ID: snowid_next_batch() fails too');
is($unset->safe_psql('postgres', 'SELECT node_id IS NULL, node_bits FROM snowid_layout()'),
	't|10', 'snowid_layout() shows the node ID as NULL');
is($unset->safe_psql('postgres', 'SELECT snowid_node((3::bigint << 12) | 5), snowid_sequence(5)'),
	'3|5', 'decoders work without a node ID');
is($unset->safe_psql('postgres', 'SELECT ids_issued, last_id IS NULL FROM snowid_stats()'),
	'0|t', 'nothing was issued');
like(
	$unset->safe_psql('postgres',
		q{SELECT status || '|' || issues_for || '|' || reason FROM snowid_health() WHERE component = 'generator'}),
	qr/^critical\|00:00:00\|snowid\.node_id is not set and no registry is named: this server issues no ids; /,
	'snowid_health(): the generator is critical, issuing nothing, because no node ID is set');
$unset->stop;

done_testing();
