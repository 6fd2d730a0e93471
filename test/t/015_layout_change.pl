
# Copyright (c) snowid contributors
#
# A restart under a changed layout (epoch, widths, node ID) must never issue
# an ID at or below one issued before (issue 10, item 1).  The server keeps
# the bound as an ID with the layout it was issued under; a start under
# another layout continues above it when the clock can reach that within
# snowid.max_lead + snowid.max_wait, and refuses to start otherwise, naming
# the changed setting.
#
#   - the issue's scenario: epoch 60 s ago, generate for a few seconds, move
#     the epoch 5 s later: a refusal (or, on a machine slow enough that the
#     clock has caught up, IDs above all before);
#   - changes that make the IDs of a given time larger (more sequence or
#     node bits, another node ID, an epoch later by less than max_lead): the
#     server starts, logs the change and continues above;
#   - changes that make them smaller by far (fewer sequence or node bits):
#     the server does not start, and says why;
#   - a high-water file in the formats of 1.1 still starts the server under
#     the same layout, and gets the marker snowid.issued;
#   - streaming standbys configured with another layout than their primary
#     convert what they replay: once promoted, one whose layout can reach the
#     primary's bound continues above it, one whose cannot fails in
#     snowid_next() and issues nothing.
#
# Whether the first scenario refuses depends on how long the restart takes;
# both outcomes are checked for what they must guarantee.  No other
# assertion depends on time.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;
use POSIX qw(strftime);
use Time::HiRes qw(time usleep);

sub utc { return strftime('%Y-%m-%d %H:%M:%S+00', gmtime($_[0])); }

my $t0 = int(time);
my $epoch = utc($t0 - 60);
my $node = snowid_node('layout', 3,
	"snowid.epoch = '$epoch'\nsnowid.max_lead = '1s'\nsnowid.max_wait = '1s'\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowid');

my @all;    # every ID returned, in issue order

sub take
{
	my ($n) = @_;
	my @ids = split /\n/,
	  $node->safe_psql('postgres', "SELECT snowid_next() FROM generate_series(1, $n)");
	push @all, @ids;
	return @ids;
}

# Restart with extra postgresql.conf lines; returns (started, log of the
# start).
sub restart_with
{
	my ($conf) = @_;
	$node->stop if $node->{_pid};
	$node->append_conf('postgresql.conf', $conf);
	my $offset = -s $node->logfile;
	my $started = $node->start(fail_ok => 1);
	return ($started, slurp_file($node->logfile, $offset));
}

# After a start under a changed layout: n new IDs, all above every ID
# before, strictly increasing.
sub continues_above
{
	my ($what, $n, $node_id) = @_;
	my $before = max_of(@all);
	my @new = take($n);
	cmp_ok(min_of(@new), '>', $before, "$what: every new ID is above every ID before");
	ok(strictly_increasing(@new), "$what: and they strictly increase");
	is($node->safe_psql('postgres',
			'SELECT count(*) FROM unnest(\'{' . join(',', @new) . "}'::bigint[]) x WHERE snowid_node(x) <> $node_id"),
		'0', "$what: all of node $node_id");
	return;
}

# ---- the issue's scenario: the epoch moves 5 s later ----

# Generate until the IDs span 2 s of the layout's time (the server's clock).
my @old = take(1000);
for (1 .. 100)
{
	usleep(100_000);
	push @old, take(5000);
	last
	  if $node->safe_psql('postgres',
		"SELECT snowid_timestamp($old[-1]) - snowid_timestamp($old[0]) >= interval '2 s'") eq 't';
}
my $old_max = max_of(@old);
my $later = utc($t0 - 55);
my ($started, $log) = restart_with("snowid.epoch = '$later'\nsnowid.max_lead = '0'\nsnowid.max_wait = '0'\n");
if (!$started)
{
	pass('epoch moved 5 s later: the server does not start');
	like($log,
		qr/FATAL:  snowid layout changed \(snowid\.epoch '[^']+' -> '[^']+'\) and cannot continue above the IDs already issued/,
		'the log names the changed setting, old -> new');
	ok($log =~ /DETAIL:  Every ID this server issued is below (\d+) /,
		'the detail gives the bound of the IDs issued');
	my $bound = $1 // 0;
	cmp_ok($bound, '>', $old_max, 'which lies above the last ID');
	like($log, qr/The new layout would issue \d+ now; its first ID above them, \d+, belongs to the tick starting at/,
		'and says what the new layout would issue');
	like($log, qr/HINT:  Restore the previous settings \(snowid\.epoch = '[^']+'\)/,
		'the hint says what to restore');
	($started, $log) = restart_with("snowid.epoch = '$epoch'\nsnowid.max_lead = '1s'\nsnowid.max_wait = '1s'\n");
	ok($started, 'with the epoch restored, the server starts');
	unlike($log, qr/changed layout/, 'and logs no layout change');
	continues_above('epoch restored', 5000, 3);
}
else
{
	# Nothing was issued under the new epoch yet, so this start checks again.
	note 'the restart took long enough for the clock to catch up: the server started';
	($started, $log) = restart_with("snowid.max_lead = '1s'\nsnowid.max_wait = '1s'\n");
	ok($started, 'restarted with max_lead and max_wait 1s');
	continues_above('epoch moved 5 s later', 5000, 3);
}

# ---- changes that continue above ----

# An epoch later by less than max_lead: the stream continues ahead of the
# clock, within max_lead.
my $t1 = int(time);
$later = utc($t0 - 58);    # 2 s later than the epoch in force
($started, $log) = restart_with("snowid.epoch = '$later'\nsnowid.max_lead = '20s'\n");
ok($started, 'epoch moved 2 s later with max_lead 20s: the server starts');
like($log, qr/LOG:  snowid continues under a changed layout \(snowid\.epoch '[^']+' -> '[^']+'\)/,
	'and logs the change');
like($log, qr/DETAIL:  Every ID issued before is below \d+; the next ID will be \d+ or above/,
	'with the bound and the next ID');
continues_above('epoch moved 2 s later', 5000, 3);

($started, $log) = restart_with("snowid.sequence_bits = 14\n");
ok($started, 'sequence_bits 12 -> 14: the server starts');
like($log, qr/snowid continues under a changed layout \(snowid\.sequence_bits 12 -> 14\)/,
	'and logs the change');
continues_above('sequence_bits 12 -> 14', 5000, 3);

($started, $log) = restart_with("snowid.node_bits = 12\n");
ok($started, 'node_bits 10 -> 12: the server starts');
like($log, qr/snowid continues under a changed layout \(snowid\.node_bits 10 -> 12\)/,
	'and logs the change');
continues_above('node_bits 10 -> 12', 5000, 3);

($started, $log) = restart_with("snowid.node_id = 2\n");
ok($started, 'node_id 3 -> 2: the server starts');
like($log, qr/snowid continues under a changed layout \(snowid\.node_id 3 -> 2\)/,
	'and logs the change');
continues_above('node_id 3 -> 2', 5000, 2);

($started, $log) = restart_with("snowid.node_id = 3\n");
ok($started, 'node_id 2 -> 3: the server starts');
continues_above('node_id 2 -> 3', 5000, 3);

($started, $log) = restart_with('');
ok($started, 'the same layout again: the server starts');
unlike($log, qr/changed layout/, 'and logs no layout change');
continues_above('a restart under the same layout', 5000, 3);

# ---- changes that cannot ----

# Two bits fewer make the IDs of a given time four times smaller: the next
# ID above the last one lies minutes ahead of the clock.
my $max_before = max_of(@all);
($started, $log) = restart_with("snowid.sequence_bits = 12\n");
ok(!$started, 'sequence_bits 14 -> 12: the server does not start');
like($log,
	qr/FATAL:  snowid layout changed \(snowid\.sequence_bits 14 -> 12\) and cannot continue above the IDs already issued/,
	'the log names the changed setting');
like($log, qr/HINT:  Restore the previous settings \(snowid\.sequence_bits = '14'\)/,
	'the hint says what to restore');

($started, $log) = restart_with("snowid.sequence_bits = 14\nsnowid.node_bits = 8\n");
ok(!$started, 'node_bits 12 -> 8: the server does not start');
like($log, qr/FATAL:  snowid layout changed \(snowid\.node_bits 12 -> 8\)/,
	'the log names the changed setting');

($started, $log) = restart_with("snowid.node_bits = 10\nsnowid.sequence_bits = 12\nsnowid.epoch = '$epoch'\n");
ok(!$started, 'all three back to the first layout: the server does not start');
like($log,
	qr/FATAL:  snowid layout changed \(snowid\.epoch '[^']+' -> '[^']+', snowid\.node_bits 12 -> 10, snowid\.sequence_bits 14 -> 12\)/,
	'the log names every changed setting');

($started, $log) = restart_with("snowid.node_bits = 12\nsnowid.sequence_bits = 14\nsnowid.epoch = '$later'\n");
ok($started, 'the last layout restored: the server starts');
unlike($log, qr/changed layout/, 'a refused start left the bound as it was');
cmp_ok(min_of(take(1000)), '>', $max_before, 'and goes on above');

# ---- the formats of 1.1 ----

# A two-slot file of 1.1 (a timestamp bound, CRC-32C) and no marker, as a
# data directory of 1.1 has them: read as a bound under the layout in force.
sub crc32c
{
	my ($data) = @_;
	my $crc = 0xFFFFFFFF;
	for my $byte (unpack 'C*', $data)
	{
		$crc ^= $byte;
		$crc = ($crc & 1) ? (($crc >> 1) ^ 0x82F63B78) : ($crc >> 1) for 1 .. 8;
	}
	return $crc ^ 0xFFFFFFFF;
}
$node->stop;
my $file = $node->data_dir . '/snowid.highwater';
my $marker = $node->data_dir . '/snowid.issued';
my $bound_us = int((time + 2 - 946684800) * 1_000_000);
my $text = "snowid-highwater-2 7 $bound_us";
my $slot = sprintf("%s %08x\n", $text, crc32c($text));
$slot .= "\0" x (512 - length($slot));
open my $fh, '>:raw', $file or die;
print $fh $slot, "\0" x 512;
close $fh or die;
unlink $marker or die;
($started, $log) = restart_with('');
ok($started, 'a high-water file of 1.1 starts the server');
unlike($log, qr/changed layout/, 'as a bound under the layout in force');
is(reserved_until_us($node), $bound_us, 'whose bound is the file\'s');
my ($first) = take(1);
cmp_ok($node->safe_psql('postgres',
		"SELECT ((extract(epoch FROM snowid_timestamp($first)) - 946684800) * 1000000)::bigint"),
	'>=', $bound_us, 'the first ID lies at or above it');
ok(-e $marker, 'the start created the marker snowid.issued');
my $fields = highwater_fields($node->data_dir);
is(join(' ', map { $fields->{$_} } qw(node_id node_bits sequence_bits timestamp_bits)),
	'3 12 14 37', 'the first renewal wrote the bound with its layout');
$node->stop;

# ---- standbys with another layout ----

# A primary whose epoch is two hours ago; standbys made before it issued
# anything (so they start without its bound): one whose epoch is an hour
# later, which would put the primary's IDs an hour ahead of its clock, and
# one with two more node bits, whose IDs of a given time are larger.
my $epoch2 = utc($t0 - 7200);
my $primary = snowid_node('primary', 4, "snowid.epoch = '$epoch2'\n", allows_streaming => 1);
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION snowid');
$primary->backup('base');
my %standby;
for my $kind ('far', 'wide')
{
	my $s = PostgreSQL::Test::Cluster->new("standby_$kind");
	$s->init_from_backup($primary, 'base', has_streaming => 1);
	$s->append_conf('postgresql.conf',
		$kind eq 'far' ? "snowid.epoch = '" . utc($t0 - 3600) . "'\n" : "snowid.node_bits = 12\n");
	$s->start;
	$standby{$kind} = $s;
}
my @primary_ids = split /\n/,
  $primary->safe_psql('postgres', 'SELECT snowid_next() FROM generate_series(1, 10000)');
my $primary_last = $primary->safe_psql('postgres', 'SELECT last_id FROM snowid_stats()');
my $primary_max = max_of(@primary_ids, $primary_last);
$primary->wait_for_catchup($_, 'replay', $primary->lsn('insert')) for values %standby;
$primary->stop('immediate');

like(slurp_file($standby{far}->logfile),
	qr/LOG:  snowid replays reservations made under another layout \(snowid\.epoch '[^']+' -> '[^']+'\)/,
	'a standby with another epoch logs that it converts what it replays');
like(slurp_file($standby{wide}->logfile),
	qr/LOG:  snowid replays reservations made under another layout \(snowid\.node_bits 10 -> 12\)/,
	'so does one with other widths');

$standby{far}->promote;
my ($ret, $out, $err) = $standby{far}->psql('postgres', 'SELECT snowid_next()');
isnt($ret, 0, 'promoted, the standby whose layout cannot reach the primary\'s bound does not issue');
like($err, qr/ERROR:  system clock is [0-9.]+ ms behind the IDs snowid has issued/,
	'snowid_next() fails with the clock error');
is($standby{far}->safe_psql('postgres', 'SELECT ids_issued FROM snowid_stats()'), '0',
	'and nothing was issued');

$standby{wide}->promote;
my @wide_ids = split /\n/,
  $standby{wide}->safe_psql('postgres', 'SELECT snowid_next() FROM generate_series(1, 5000)');
cmp_ok(min_of(@wide_ids), '>', $primary_max,
	'promoted, the standby with two more node bits continues above every ID of its primary');
ok(strictly_increasing(@wide_ids), 'and its IDs strictly increase');

$_->stop for values %standby;
done_testing();
