
# Copyright (c) snowid contributors
#
# The file $PGDATA/snowid.highwater: two sector-sized slots, each renewal
# rewriting the older one in place.  The server must read the newest valid
# slot, fall back to the other when the newest is damaged (what a write torn
# by a crash leaves behind), refuse to start when neither is valid, and
# still read the one-line format of the first release (also the format to
# write by hand), replacing it at its first renewal.
#
# A data directory that has issued IDs (the marker $PGDATA/snowid.issued
# says so) must not start without the file: deleting it used to let the next
# start begin from the clock, below the last ID.  The line
# "snowid-last-id <ID>" written by hand, or the file restored, lets it start
# again, above that ID.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;
use Time::HiRes qw(time usleep);

my $node = snowid_node('highwater', 3);
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowid');
my $file = $node->data_dir . '/snowid.highwater';

# microseconds since 2000-01-01 UTC, as the file counts them
sub now_us { return int((time - 946684800) * 1_000_000); }

# Overwrite part of the file in place.
sub poke
{
	my ($offset, $bytes) = @_;
	open my $fh, '+<:raw', $file or die "could not open $file: $!";
	seek $fh, $offset, 0 or die;
	print $fh $bytes;
	close $fh or die;
	return;
}

# ---- renewals rewrite the slots in place ----

# Generate for about a second: a renewal every 125 ms or so.
for (1 .. 8)
{
	$node->safe_psql('postgres', 'SELECT count(snowid_next()) FROM generate_series(1, 1000)');
	usleep(150_000);
}
is(-s $file, 1024, 'the file is two 512-byte slots');
my @slots = highwater_slots($node->data_dir);
is(scalar(@slots), 2, 'both slots hold a bound after several renewals');
my ($older, $newer) = sort { $a->[0] <=> $b->[0] } @slots;
is($newer->[0], $older->[0] + 1, 'their generations are consecutive');
cmp_ok($newer->[1], '>', $older->[1], 'the newer slot holds the higher bound');
is(highwater_file($node->data_dir), reserved_until_us($node),
	'the newest slot is the reservation in force');
cmp_ok($node->safe_psql('postgres', 'SELECT reservations FROM snowid_stats()'),
	'>=', 4, 'the reservation was renewed several times');

# ---- a damaged newest slot: the server starts from the other ----

$node->stop('immediate');
@slots = highwater_slots($node->data_dir);
($older, $newer) = sort { $a->[0] <=> $b->[0] } @slots;
# Change one digit of the newest bound: the CRC no longer matches.
my $newest_offset = ($newer->[0] % 2) * 512;
my $digit_at = $newest_offset + length("snowid-highwater-3 $newer->[0] ") + 3;
open my $rfh, '<:raw', $file or die;
seek $rfh, $digit_at, 0;
read $rfh, my $digit, 1;
close $rfh;
poke($digit_at, $digit eq '7' ? '8' : '7');
$node->start;
is(reserved_until_us($node), $older->[1],
	'with the newest slot damaged, the server starts from the other slot');
cmp_ok($node->safe_psql('postgres', 'SELECT snowid_next()'), '>', 0,
	'and generates');
is(highwater_file($node->data_dir), reserved_until_us($node),
	'its first renewal is again the newest valid slot');

# ---- both slots damaged: no start ----

$node->stop('immediate');
poke(0, 'X');
poke(512, 'X');
my $log_offset = -s $node->logfile;
my $started = $node->start(fail_ok => 1);
ok(!$started, 'with both slots damaged the server does not start');
my $log = slurp_file($node->logfile, $log_offset);
like($log, qr/FATAL:  snowid high-water file "snowid.highwater" is corrupt/,
	'the log says the high-water file is corrupt');
like($log, qr/HINT:  If you know the highest ID this server issued, replace the file with the line "snowid-last-id <that ID>"/,
	'and how to repair it by hand');

# ---- the one-line format, written by hand ----

my $bound = now_us() + 500_000;
open my $wfh, '>', $file or die;
print $wfh "snowid-highwater-1 $bound\n";
close $wfh or die;
$node->start;
is(reserved_until_us($node), $bound, 'a one-line file is read as the bound');
my $first = $node->safe_psql('postgres',
	q{SELECT ((extract(epoch FROM snowid_timestamp(snowid_next())) - 946684800) * 1000000)::bigint});
cmp_ok($first, '>=', $bound, 'the first ID lies at or above the hand-written bound');
is(-s $file, 1024, 'the first renewal replaced it with the two-slot file');
is(highwater_file($node->data_dir), reserved_until_us($node), 'holding the reservation in force');

# ---- a deleted file ----

ok(-e $node->data_dir . '/snowid.issued', 'the marker snowid.issued exists');
# Run the stream ahead of the clock, so that a start from the clock would
# issue IDs below the last one.
set_policy($node, '3s', '1s');
$node->safe_psql('postgres', 'SELECT count(*) FROM snowid_next_batch(1000000)')
  for 1 .. 6;
my $last = $node->safe_psql('postgres', 'SELECT snowid_next()');
$node->stop;
my $saved = slurp_file($file);
unlink $file or die "could not remove $file: $!";
# In the same boot of the host, the boot record (1.11) still holds the
# bound: the server starts above it.
$log_offset = -s $node->logfile;
$node->start;
like(slurp_file($node->logfile, $log_offset),
	qr/snowid continues above the bound of its boot record/,
	'without snowid.highwater, the start goes on from the boot record');
my $above = $node->safe_psql('postgres', 'SELECT snowid_next()');
cmp_ok($above, '>', $last, 'above the last ID');
$last = $above;
$node->stop;
unlink $file or die "could not remove $file: $!";
# After a reboot (no boot record), nothing says which IDs were issued.
ok(forget_boot_record($node), 'the boot record is removed, as by a reboot');
$log_offset = -s $node->logfile;
$started = $node->start(fail_ok => 1);
ok(!$started, 'without snowid.highwater, a data directory that issued IDs does not start');
$log = slurp_file($node->logfile, $log_offset);
like($log, qr/FATAL:  snowid high-water file "snowid.highwater" is missing/,
	'the log says the high-water file is missing');
like($log, qr/DETAIL:  The file "snowid.issued" shows that this data directory \(system identifier \d+\) has issued snowids/,
	'and why that matters');
like($log, qr/HINT:  If you know the highest ID this server issued, replace the file with the line "snowid-last-id <that ID>"/,
	'and how to write it by hand');

# Written by hand from the last ID known.
open $wfh, '>', $file or die;
print $wfh "snowid-last-id $last\n";
close $wfh or die;
$node->start;
my @after = split /\n/, $node->safe_psql('postgres',
	'SELECT snowid_next() FROM generate_series(1, 1000)');
cmp_ok(min_of(@after), '>', $last, 'with "snowid-last-id" written by hand, the IDs go on above the last one');
ok(strictly_increasing(@after), 'and strictly increase');
$last = max_of(@after);
is(-s $file, 1024, 'the hand-written line was replaced by the two-slot file');

# Restored from a copy.
$node->stop;
$saved = slurp_file($file);
unlink $file or die;
forget_boot_record($node);
ok(!$node->start(fail_ok => 1), 'deleted again (and no boot record): no start');
open $wfh, '>:raw', $file or die;
print $wfh $saved;
close $wfh or die;
$node->start;
cmp_ok($node->safe_psql('postgres', 'SELECT snowid_next()'), '>', $last,
	'with the file restored, the IDs go on above the last one');

$node->stop;

# ---- a hand-written line that holds no ID of the layout in force ----

# sscanf's %lld used to saturate an overflowing number to 2^63 - 1 and
# accept it, and an ID at or above 2^snowid.id_bits was accepted as well:
# the server started and every snowid_next() failed.  Each must stop the
# start, saying what is wrong with the line.
sub hand_line_refused
{
	my ($line, $detail, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;

	open my $fh, '>', $file or die;
	print $fh "$line\n";
	close $fh or die;
	my $offset = -s $node->logfile;
	ok(!$node->start(fail_ok => 1), "$name: the server does not start");
	my $log = slurp_file($node->logfile, $offset);
	like($log,
		qr/FATAL:  snowid high-water file "snowid.highwater" is corrupt/,
		"$name: the log says the file is corrupt");
	like($log, $detail, "$name: and why");
	like($log, qr/HINT:  If you know the highest ID this server issued, replace the file with the line "snowid-last-id <that ID>"/,
		"$name: and how to repair it");
	return;
}

hand_line_refused('snowid-last-id 99999999999999999999',
	qr/DETAIL:  The line "snowid-last-id <ID>" holds a number too large for a bigint, so it is no ID\./,
	'a number beyond bigint');
hand_line_refused('snowid-last-id -5',
	qr/DETAIL:  The line "snowid-last-id <ID>" gives -5, which is not an ID of the layout in force: its IDs lie from 0 to 9223372036854775807 \(snowid\.id_bits = 63\)\./,
	'a negative ID');
hand_line_refused('snowid-last-id 12abc',
	qr/DETAIL:  The line "snowid-last-id <ID>" must hold one ID as a decimal number, and nothing after it\./,
	'a number followed by letters');
hand_line_refused('snowid-last-id 1e9',
	qr/must hold one ID as a decimal number/,
	'a number in another notation');

# With 53 ID bits (4 of them for the sequence), 2^53 and 2^63 - 1 are bigints but no IDs of the layout.
$node->append_conf('postgresql.conf', "snowid.id_bits = 53\nsnowid.sequence_bits = 4\n");
hand_line_refused('snowid-last-id 9007199254740992',
	qr/DETAIL:  The line "snowid-last-id <ID>" gives 9007199254740992, which is not an ID of the layout in force: its IDs lie from 0 to 9007199254740991 \(snowid\.id_bits = 53\)\./,
	'2^53 under 53 ID bits');
hand_line_refused('snowid-last-id 9223372036854775807',
	qr/gives 9223372036854775807, which is not an ID of the layout in force/,
	'2^63 - 1 under 53 ID bits');

# The largest ID of a small one is still read (and the stream goes on
# above it), once no boot record of this boot holds a higher bound (the
# 63-bit IDs issued above, which the 53-bit layout cannot go above).
open $wfh, '>', $file or die;
print $wfh "snowid-last-id 4000000000\n";
close $wfh or die;
forget_boot_record($node);
$node->start;
cmp_ok($node->safe_psql('postgres', 'SELECT snowid_next()'), '>', 4000000000,
	'a valid hand-written ID under 53 ID bits: the server starts and goes on above it');
$node->stop;

done_testing();
