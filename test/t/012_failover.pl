
# Copyright (c) snowid contributors
#
# Failover: a streaming standby replays the primary's snowid reservations
# (WAL records of snowid's resource manager) and, once promoted, continues
# above every ID the primary issued, returned or not, although its own clock
# runs 30 seconds behind (test/clockshim.c; snowid.max_lead = 60s on the standby
# lets it continue ahead of that clock).  Before promotion the hot standby
# refuses to generate.  Finally the promoted standby is restarted cleanly,
# still 30 s behind, and must go on at once, above everything before (its
# IDs were within max_lead of its clock; at the time of writing this fails,
# as the restart resumes from the persisted bound, max_lead beyond the last
# ID, and the test then raises max_wait to check what follows).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;
use Time::HiRes qw(time);

my $node_id = 5;
my $primary = snowid_node('primary', $node_id, undef, allows_streaming => 1);
$primary->start;
$primary->safe_psql(
	'postgres', q{
CREATE EXTENSION snowid;
CREATE TABLE ids(seq bigserial, src text, id bigint NOT NULL UNIQUE);
});

my @returned;    # every ID returned to this script, by any node




# Insert $n IDs from $node into the table; returns them in issue order.
sub insert_ids
{
	my ($node, $src, $n) = @_;
	my @ids = split /\n/,
	  $node->safe_psql('postgres',
		"INSERT INTO ids(src, id) SELECT '$src', snowid_next() FROM generate_series(1, $n) RETURNING id"
	  );
	push @returned, @ids;
	return @ids;
}

# $n IDs returned only.
sub select_ids
{
	my ($node, $n) = @_;
	my @ids = split /,/,
	  $node->safe_psql('postgres',
		"SELECT string_agg(snowid_next()::text, ',') FROM generate_series(1, $n)");
	push @returned, @ids;
	return @ids;
}

my @primary_ids = insert_ids($primary, 'primary, before the backup', 10000);

$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->append_conf('postgresql.conf', "snowid.max_lead = '60s'\n");

my $clock_file = $standby->basedir . '/fake_clock';
open my $fh, '>', $clock_file or die "could not write $clock_file: $!";
print $fh "-30\n";
close $fh;

# The standby's server (and its pg_ctl, which compares the postmaster's
# start time with its own clock) run 30 s behind: far more than a loaded
# machine can take between the primary's reservation and the promoted
# standby's first ID, so that this ID can only come from the reservation.
sub standby_under_fake_clock
{
	my ($method) = @_;
	with_fake_clock($standby, $clock_file, $method);
	return;
}
standby_under_fake_clock('start');

my $t0 = time;
my $offset =
  $standby->safe_psql('postgres', 'SELECT extract(epoch FROM clock_timestamp())') - $t0;
note sprintf('standby clock offset: %.3f s', $offset);
ok($offset > -31.5 && $offset < -29, 'the standby\'s clock runs about 30 s behind');
my $hw_from_backup = highwater_file($standby->data_dir);
note 'standby high-water file from the base backup: ' . ($hw_from_backup // 'none');

# ---- a hot standby refuses to generate ----

my ($ret, $out, $err) = $standby->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT snowid_next()");
like($err, qr/ERROR:  25006: cannot generate snowids during recovery/,
	'on the standby, snowid_next() fails: cannot generate snowids during recovery');
like($err, qr/HINT:  Generate IDs on the primary/, 'with a hint');
($ret, $out, $err) = $standby->psql('postgres', 'SELECT count(*) FROM snowid_next_batch(10)');
like($err, qr/cannot generate snowids during recovery/, 'so does snowid_next_batch()');
is($standby->safe_psql('postgres', 'SELECT ids_issued FROM snowid_stats()'),
	'0', 'the standby issued nothing');

# ---- the primary generates, borrowing ahead ----

# Each call reserves 1,000,000 positions (244 ticks) and reads one: four put
# the primary's stream about 1 s (its max_lead) ahead of its clock.  They
# run in one session, which then reads the lead, so that no process start
# between them eats into it on a loaded machine.
my @batch_out = split /\n/,
  $primary->safe_psql('postgres',
	join('', map { "SELECT snowid_next_batch(1000000) LIMIT 1;\n" } 1 .. 4)
	  . 'SELECT lead_ms FROM snowid_stats();');
my $primary_lead = pop @batch_out;
my @batch_firsts = @batch_out;
push @returned, @batch_firsts;
push @primary_ids, @batch_firsts;
push @primary_ids, insert_ids($primary, 'primary', 10000);
push @primary_ids, select_ids($primary, 2000);
my ($primary_last, $primary_reservations) = split /\|/,
  $primary->safe_psql('postgres', 'SELECT last_id, reservations FROM snowid_stats()');
my $primary_reserved = reserved_until_us($primary);
note "primary: last_id $primary_last, lead $primary_lead ms, $primary_reservations reservations, reserved until $primary_reserved";
ok(strictly_increasing(@primary_ids), 'the primary\'s IDs strictly increase');
is(scalar(@batch_firsts), 4, 'four batches reserved');
cmp_ok($primary_lead, '>', 500, 'the primary borrowed more than 500 ms ahead of its clock');

$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));

# ---- what the standby learned by replay ----

my $hw = highwater_file($standby->data_dir);
ok(defined $hw, 'the standby has $PGDATA/snowid.highwater after replay');
is($hw, $primary_reserved,
	'it holds the primary\'s latest reservation');
isnt($hw, $hw_from_backup, 'which replay wrote, after the base backup');
is(reserved_until_us($standby), $primary_reserved,
	'snowid_stats().reserved_until on the standby is the primary\'s');
is($standby->safe_psql('postgres', 'SELECT count(*) FROM ids'),
	scalar(@primary_ids) - 4 - 2000, 'the committed IDs were replicated');

# ---- failover ----

$primary->stop('immediate');
$standby->promote;
is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'),
	'f', 'the standby was promoted');

my $old_max = max_of(@primary_ids, $primary_last);
my ($first, $ahead_ms) = split /\|/,
  $standby->safe_psql('postgres',
	q{SELECT id, round(extract(epoch FROM snowid_timestamp(id) - clock_timestamp()) * 1000)
	  FROM (SELECT snowid_next() AS id) s});
push @returned, $first;
note "first ID of the promoted standby: $first, $ahead_ms ms ahead of its clock";
cmp_ok($first, '>', $old_max,
	'the first ID of the promoted standby is above every ID the primary issued (returned or not)');
cmp_ok($ahead_ms, '>', 1000,
	'it is ahead of the standby\'s own (slow) clock: it came from the replayed reservation');

my @standby_ids = ($first);
push @standby_ids, insert_ids($standby, 'promoted standby', 10000);
push @standby_ids, select_ids($standby, 2000);
ok(strictly_increasing(@standby_ids), 'the promoted standby\'s IDs strictly increase');
cmp_ok(min_of(@standby_ids), '>', $old_max, 'all of them are above the old primary\'s');

# ---- a restart of the promoted standby, still 30 s behind ----

# Its stream is ~31 s ahead of its clock, within its max_lead of 60 s: after a
# clean restart it can go on at once, just above its last ID.
my $before_restart = max_of(@standby_ids);
my ($lead_before, $bound_before) = split /\|/,
  $standby->safe_psql('postgres',
	q{SELECT lead_ms, round(extract(epoch FROM reserved_until - clock_timestamp()) * 1000) FROM snowid_stats()});
note "promoted standby before its restart: $lead_before ms ahead of its clock, persisted bound $bound_before ms ahead";
standby_under_fake_clock('restart');
($ret, $out, $err) = $standby->psql('postgres',
	"\\set VERBOSITY verbose\nINSERT INTO ids(src, id) SELECT 'promoted standby, restarted', snowid_next() FROM generate_series(1, 5000) RETURNING id"
);
is($ret, 0,
	'after a clean restart of the promoted standby (its IDs were within max_lead of its clock), snowid_next() works at once'
) or diag "BUG: the restarted server continues from its persisted bound ($bound_before ms ahead of its clock, "
  . "max_lead 60 s beyond its last ID) and fails: $err";
if ($ret != 0)
{
	like($err, qr/ERROR:  55000: system clock is [0-9.]+ ms behind/,
		'what fails is the clock check (55000)');
	# Let callers wait for the clock instead, to check what comes next.
	$standby->append_conf('postgresql.conf', "snowid.max_wait = '10s'\n");
	$standby->reload;
	$standby->poll_query_until('postgres', "SELECT current_setting('snowid.max_wait') = '10s'")
	  or die 'reload not seen';
	$t0 = time;
	$out = $standby->safe_psql('postgres',
		"INSERT INTO ids(src, id) SELECT 'promoted standby, restarted', snowid_next() FROM generate_series(1, 5000) RETURNING id"
	);
	note sprintf('with max_wait 10s the first call after the restart took %.3f s', time - $t0);
}
my @after_restart = split /\n/, $out;
push @returned, @after_restart;
is(scalar(@after_restart), 5000, 'the restarted promoted standby issues IDs');
cmp_ok(min_of(@after_restart), '>', $before_restart,
	'after a restart of the promoted standby, its IDs stay above all before');
ok(strictly_increasing(@after_restart), 'and strictly increase');
push @standby_ids, @after_restart;

# ---- over the whole test ----

my %seen;
my $dups = 0;
for (@returned) { $dups++ if $seen{$_}++; }
is($dups, 0, 'no duplicates across the IDs of both nodes');
is( $standby->safe_psql('postgres',
		"SELECT count(*) = count(DISTINCT id), bool_and(snowid_node(id) = $node_id) FROM ids"),
	't|t',
	"the committed IDs of both nodes are distinct, and snowid_node() = $node_id for all");
my $returned_list = join(',', @returned);
is( $standby->safe_psql('postgres',
		"SELECT count(*) FILTER (WHERE snowid_node(x) <> $node_id) FROM unnest('{$returned_list}'::bigint[]) x"),
	'0',
	"snowid_node() = $node_id for every returned ID");
note sprintf('IDs checked: %d (primary %d, promoted standby %d); failovers: 1; duplicates: %d',
	scalar(@returned), scalar(@primary_ids), scalar(@standby_ids), $dups);
note 'standby stats: ' . $standby->safe_psql('postgres', 'SELECT * FROM snowid_stats()');

$standby->stop;
done_testing();
