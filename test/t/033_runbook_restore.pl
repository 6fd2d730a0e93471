# Copyright (c) snowid contributors
#
# The runbook "Restore: a base backup without its WAL, PITR, a primary
# rebuilt" of test/runbooks/README.md, run as written.
#
# A server with a fixed node ID (5) takes a base backup, then issues IDs
# the backup does not hold: a bulk load of 400,000 IDs that runs ahead of
# the clock (16 IDs per tick, snowid.max_lead = 10min, as a bulk-loading
# server may be set).  The backup is restored three times:
#
#  - as it is, with no runbook, on a host whose clock is two minutes
#    behind (the fake clock of test/clockshim.c): its IDs repeat IDs issued
#    after the backup (what the runbook is for; were it not so, the checks
#    below could not fail);
#  - with the runbook's first way, on that host: the last ID read from the
#    old server while it still answers (the blocks marked "restore old",
#    then "restore start");
#  - with its second way, on a host whose clock is right: the old server
#    gone, a bound by the time it stopped (blocks "restore time", then
#    "restore start").
#
# After each runbook, every ID the restored server issues is above every ID
# issued before, so none repeats.  Only the assignment lines OLD= and
# STOPPED_AT= of the blocks are changed, to this machine's server and time.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use POSIX ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowidTest;
use Test::More;

# The last line of a runbook's output (pg_ctl says what it does before).
sub last_line
{
	my ($out) = @_;
	my @lines = split /\n/, $out;
	return $lines[-1] // '';
}

# The block with the assignment line "$var='...'" given $value; dies if the
# block has no such line (the runbook changed: the test must follow).
sub set_line
{
	my ($block, $var, $value) = @_;
	$block =~ s/^\Q$var\E='[^']*'/$var='$value'/m
	  or die "the runbook block has no line $var='...'";
	return $block;
}

my $conf = "snowid.sequence_bits = 4\nsnowid.max_lead = '10min'\n";
my $old = snowid_node('old', 5, $conf, allows_streaming => 1);
$old->start;
$old->safe_psql('postgres', q{
CREATE EXTENSION snowid;
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowid_next(), item text);
CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowid_next(), kind text);
INSERT INTO orders (item) SELECT 'before' FROM generate_series(1, 100);
INSERT INTO events (kind) VALUES ('before');
});
$old->backup('base');

# After the backup: a bulk load running ahead of the clock, then a row.
$old->safe_psql('postgres', q{
INSERT INTO orders (id, item) SELECT id, 'after' FROM snowid_next_batch(400000) AS id;
INSERT INTO events (kind) VALUES ('after');
});
my ($lost_min, $lost_max, $lost_n) = split /\|/, $old->safe_psql('postgres', q{
SELECT min(id), max(id), count(*) FROM (
  SELECT id FROM orders WHERE item = 'after' UNION ALL SELECT id FROM events WHERE kind = 'after') t});
is($lost_n, 400001, 'the old server issued 400,001 IDs after the backup');
my $lead = $old->safe_psql('postgres', 'SELECT lead_ms FROM snowid_stats()');
cmp_ok($lead, '>', 10000, "they ran ahead of its clock ($lead ms)");

# The restored hosts' clock: two minutes behind.
my $clock = PostgreSQL::Test::Utils::tempdir . '/clock';
write_clock_offset($clock, '-120');
my %behind = fake_clock_env($clock);

# How many of $n new IDs of $node (400,000 if not given) fall in the range
# issued after the backup, how many at or below its top, and how many in
# all.
sub issue_and_compare
{
	my ($node, $n) = @_;
	$n //= 400000;
	return $node->safe_psql('postgres', qq{
SELECT count(*) FILTER (WHERE id BETWEEN $lost_min AND $lost_max),
       count(*) FILTER (WHERE id <= $lost_max), count(*)
  FROM snowid_next_batch($n) AS id});
}

# 1. Restored with no runbook: it goes on from the backup's mark.
my $careless = PostgreSQL::Test::Cluster->new('careless');
$careless->init_from_backup($old, 'base');
with_fake_clock($careless, $clock, 'start');
my ($repeats) = split /\|/, issue_and_compare($careless);
cmp_ok($repeats, '>', 0,
	"without the runbook, a copy restored from the backup repeats IDs issued after it ($repeats of 400,000)");
$careless->stop;

# 2. The old server still answers: the last ID from it.
my $by_old = PostgreSQL::Test::Cluster->new('restored_from_old');
$by_old->init_from_backup($old, 'base');
my $old_conninfo = 'host=' . $old->host . ' port=' . $old->port . ' dbname=postgres';
my ($find) = runbook_blocks('restore old');
my ($start) = runbook_blocks('restore start');
my ($rc, $out, $err) =
  run_runbook_sh($by_old, set_line($find, 'OLD', $old_conninfo) . "\nprintf '\\n%s\\n' \"\$LAST_ID\"\n", %behind);
is($rc, 0, 'runbook, the old server answering: step 2 runs') or diag($err);
$out = last_line($out);
is($out, $lost_max, 'step 2 finds the last ID the old server issued');
$old->stop;    # for good, before the restored server starts
($rc, $out, $err) = run_runbook_sh($by_old, $start, %behind, LAST_ID => $out);
is($rc, 0, 'step 3 writes the mark and starts the server') or diag($err);
is(last_line($out), 't', "step 3's check: the first ID is above the last one issued");
my ($in_range, $not_above, $all) = split /\|/, issue_and_compare($by_old);
is("$in_range|$not_above|$all", '0|0|400000',
	'after the runbook (the last ID from the old server), no ID repeats: all are above the old server\'s');
like(slurp_file($by_old->data_dir . '/restore.log'),
	qr/database system is ready/, 'the runbook\'s log is where it says');
$by_old->stop;

# 3. The old server gone: a bound by the time it stopped, by a clock that
# is right (this machine's), turned into an ID by the restored server, on
# a host whose clock was put right (as the runbook says: on the clock two
# minutes behind, the bound would lead it by more than snowid.max_lead).
# The bound leads the clock by almost snowid.max_lead: the check takes
# 1,000 IDs, not a bulk load.
my $stopped_at = POSIX::strftime('%Y-%m-%d %H:%M:%S+00', gmtime(time));
my $by_time = PostgreSQL::Test::Cluster->new('restored_by_time');
$by_time->init_from_backup($old, 'base');
my ($by_clock) = runbook_blocks('restore time');
($rc, $out, $err) = run_runbook_sh($by_time,
	set_line($by_clock, 'STOPPED_AT', $stopped_at) . "\nprintf '\\n%s\\n' \"\$LAST_ID\"\n");
is($rc, 0, 'runbook, the old server gone: step 2 runs') or diag($err);
$out = last_line($out);
cmp_ok($out, '>', $lost_max, 'the bound by time lies above every ID the old server issued');
ok(!-e $by_time->data_dir . '/postmaster.pid', 'step 2 leaves the server stopped');
($rc, $out, $err) = run_runbook_sh($by_time, $start, LAST_ID => $out);
is($rc, 0, 'step 3 starts the server') or diag($err);
is(last_line($out), 't', "step 3's check: the first ID is above the bound");
($in_range, $not_above, $all) = split /\|/, issue_and_compare($by_time, 1000);
is("$in_range|$not_above|$all", '0|0|1000',
	'after the runbook (a bound by time), no ID repeats: all are above the old server\'s');
$by_time->stop;

done_testing();
