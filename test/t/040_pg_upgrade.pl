
# Copyright (c) snowid contributors
#
# pg_upgrade from an older major (the one named by SNOWID_OLD_PG_BINDIR, its
# bin directory, with snowid installed) to the major this suite runs on.
#
# pg_upgrade carries the database (snowid_ticket, the ticket sequences, the
# tables) but not $PGDATA/snowid.highwater and $PGDATA/snowid.issued: the
# README's steps copy them from the old data directory into the new one
# before its first start.  Here the old server's stream runs far ahead of the
# clock before its clean shutdown, so that a new cluster starting from the
# clock would issue IDs below the old ones; with the files copied, every new
# ID lies above every old one.  The new cluster with only the marker copied
# refuses to start.  The ticket sequences go on above every value issued
# before (into the same table, whose primary key would refuse a repeat), one
# of them from the position its sequence was moved forward to, and a rewind
# of a ticket sequence is still refused after the upgrade.  Counters per key
# (gapless, fast, and fast striped) go on per key above every value given
# before, the gapless ones with no hole, with nothing to do after
# pg_upgrade: their keys' rows are table rows, and a fast counter's cache
# starts empty, reserving above them.

use strict;
use warnings;

use File::Basename qw(dirname);
use File::Copy qw(copy);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

my ($ret, $out, $err);

my $old_bindir = $ENV{SNOWID_OLD_PG_BINDIR};
plan skip_all =>
  'SNOWID_OLD_PG_BINDIR is not set (the bin directory of an older PostgreSQL major with snowid installed; test/run-tests.sh sets it on majors above 15)'
  unless defined $old_bindir && $old_bindir ne '';

# The major of a pg_config's installation.
sub major_of
{
	my ($pg_config) = @_;
	my $line = `"$pg_config" --version`;
	die "could not run $pg_config --version" if $? != 0;
	$line =~ /^PostgreSQL (\d+)/ or die "unexpected version line: $line";
	return $1;
}

my $new_pg_config = $ENV{PG_CONFIG} // 'pg_config';
my $new_major = major_of($new_pg_config);
my $old_major = major_of("$old_bindir/pg_config");
plan skip_all =>
  "this suite runs on PostgreSQL $new_major, not above the old major $old_major of SNOWID_OLD_PG_BINDIR ($old_bindir): nothing to upgrade to"
  unless $new_major > $old_major;
my $new_bindir = `"$new_pg_config" --bindir`;
chomp $new_bindir;
note "pg_upgrade from $old_major ($old_bindir) to $new_major ($new_bindir)";

# The same settings on both sides, as a DBA carries postgresql.conf over:
# one ID per tick and node (sequence_bits 0), so that the stream can be put
# half an hour ahead of the clock with two batches, and a max_lead that
# lets it go there.
my $conf = "snowid.sequence_bits = 0\nsnowid.max_lead = '1h'\nsnowid.max_wait = '1s'\n";
# pg_upgrade needs the same data checksum setting on both sides, and the
# default differs between majors (on from 18).
my $old = snowid_node('old', 7, $conf,
	install_path => dirname($old_bindir), extra => ['--data-checksums']);
$old->start;
$old->safe_psql(
	'postgres', q{
CREATE EXTENSION snowid;
CREATE TABLE ids (id bigint PRIMARY KEY, era text NOT NULL);
INSERT INTO ids SELECT snowid_next(), 'old' FROM generate_series(1, 1000);
-- shards 0 and 1 of one ticket, so that their values never meet
SELECT snowid_ticket_create('t_plain', 0, 2, 10);
SELECT snowid_ticket_create('t_moved', 1, 2, 10);
CREATE TABLE taken (v bigint PRIMARY KEY, ticket text NOT NULL, era text NOT NULL);
INSERT INTO taken SELECT snowid_ticket_next('t_plain'), 't_plain', 'old' FROM generate_series(1, 25);
INSERT INTO taken SELECT snowid_ticket_next('t_moved'), 't_moved', 'old' FROM generate_series(1, 25);
SELECT snowid_counter_create('c_gap');
SELECT snowid_counter_create('c_fast', mode => 'fast', block => 10);
SELECT snowid_counter_create('c_stripe', mode => 'fast', block => 4, stripe => 1, stripes => 3);
CREATE TABLE counted (counter text, key text, v bigint, era text NOT NULL,
                      PRIMARY KEY (counter, key, v));
INSERT INTO counted SELECT c, k, snowid_counter_next(c, k), 'old'
  FROM generate_series(1, 13), unnest(ARRAY['c_gap', 'c_fast', 'c_stripe']) c,
       unnest(ARRAY['acme', 'globex']) k;
});

# Move t_moved's sequence forward: its next block is 101 or above, whose
# values (1 + 1 + 2 * k, k >= 10 * 100) are all above 2000.
$old->safe_psql('postgres', "SELECT setval('t_moved', 100)");

# Run the stream about 2000 s ahead of the clock, and issue a last ID there.
$old->safe_psql('postgres', 'SELECT count(*) FROM snowid_next_batch(1000000)')
  for 1 .. 2;
$old->safe_psql('postgres', "INSERT INTO ids SELECT snowid_next(), 'old'");
my $old_last = $old->safe_psql('postgres', 'SELECT max(id) FROM ids');
my $lead_s = $old->safe_psql('postgres',
	"SELECT round(extract(epoch FROM snowid_timestamp($old_last) - clock_timestamp()))");
cmp_ok($lead_s, '>', 1800, 'the old stream runs more than 30 minutes ahead of the clock');
note "old cluster: last ID $old_last, ${lead_s} s ahead of the clock";
my %old_max = map { split /\|/ } split /\n/, $old->safe_psql('postgres',
	"SELECT ticket, max(v) FROM taken GROUP BY ticket");
note "old cluster: ticket values up to $old_max{t_plain} (t_plain), $old_max{t_moved} (t_moved)";
my $old_served = $old->safe_psql('postgres',
	'SELECT seqrelid::text, served FROM snowid_ticket ORDER BY 1');

# The old server's attribute versions (15.20 here), which the new major's
# pg_upgrade cannot restore: see SnowidTest.pm.
drop_attver_options($old);
$old->stop;    # clean: the file holds the bound just above the last ID

# ---- pg_upgrade ----

my $new = snowid_node('new', 7, $conf, extra => ['--data-checksums']);
run_pg_upgrade($old, $new, $old_bindir, $new_bindir,
	"pg_upgrade from $old_major to $new_major");
ok(!-e $new->data_dir . '/snowid.highwater',
	'pg_upgrade does not carry snowid.highwater into the new data directory');

# ---- only the marker copied: no start ----

copy($old->data_dir . '/snowid.issued', $new->data_dir . '/snowid.issued')
  or die "could not copy snowid.issued: $!";
my $log_offset = -s $new->logfile // 0;
ok(!$new->start(fail_ok => 1),
	'with snowid.issued copied but not snowid.highwater, the new cluster does not start');
like(slurp_file($new->logfile, $log_offset),
	qr/FATAL:  snowid high-water file "snowid.highwater" is missing/,
	'and says that the high-water file is missing');

# ---- both files copied ----

copy($old->data_dir . '/snowid.highwater', $new->data_dir . '/snowid.highwater')
  or die "could not copy snowid.highwater: $!";
$new->start;
my $clock_id = $new->safe_psql('postgres', 'SELECT snowid_from_timestamp(now())');
cmp_ok($clock_id, '<', $old_last,
	'the IDs of the clock now lie below the old cluster\'s last ID (a start from the clock would reissue)'
);
$new->safe_psql('postgres',
	"INSERT INTO ids SELECT snowid_next(), 'new' FROM generate_series(1, 1000)");
my ($new_first, $new_count, $old_max_id) = split /\|/, $new->safe_psql('postgres',
	q{SELECT min(id) FILTER (WHERE era = 'new'), count(*) FILTER (WHERE era = 'new'),
	         max(id) FILTER (WHERE era = 'old') FROM ids});
is($new_count, 1000, 'the new cluster issued 1000 IDs into the table with the old ones');
is($old_max_id, $old_last, 'the old IDs came through pg_upgrade');
cmp_ok($new_first, '>', $old_last, 'every new ID lies above every old one');
note "new cluster: first ID $new_first (clock now at $clock_id)";
is($new->safe_psql('postgres', 'SELECT node_id FROM snowid_layout()'),
	'7', 'the new cluster runs with the same snowid.node_id');

# ---- ticket sequences ----

# pg_upgrade carries the rows of snowid_ticket (the table's files) but not
# the dependency of each ticket sequence on the extension: the trigger that
# records it fires on INSERT, and pg_upgrade inserts nothing.  Without it a
# sequence is not taken for a ticket, so nothing is issued...
my $deps = q{
SELECT count(*) FROM snowid_ticket t JOIN pg_depend d
  ON d.classid = 'pg_class'::regclass AND d.objid = t.seqrelid::oid
     AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'n'};
is($new->safe_psql('postgres', $deps), '0',
	'pg_upgrade does not carry the dependency of the ticket sequences on the extension');
is($new->safe_psql('postgres', 'SELECT seqrelid::text, served FROM snowid_ticket ORDER BY 1'),
	$old_served, 'but it carries the tickets and their served marks');
($ret, $out, $err) = $new->psql('postgres', "SELECT snowid_ticket_next('t_plain')");
like($err, qr/"public.t_plain" is not a ticket sequence/,
	'without the dependency, the ticket refuses to issue values');
# ... until the README's step (the statement of the 1.1 -> 1.2 update script)
# records it again.
$new->safe_psql('postgres', 'UPDATE snowid_ticket SET seqrelid = seqrelid');
is($new->safe_psql('postgres', $deps), '2',
	'UPDATE snowid_ticket SET seqrelid = seqrelid records the dependencies again');
is($new->safe_psql('postgres', 'SELECT seqrelid::text, served FROM snowid_ticket ORDER BY 1'),
	$old_served, 'and keeps the served marks');
$new->safe_psql(
	'postgres', q{
INSERT INTO taken SELECT snowid_ticket_next('t_plain'), 't_plain', 'new' FROM generate_series(1, 25);
INSERT INTO taken SELECT snowid_ticket_next('t_moved'), 't_moved', 'new' FROM generate_series(1, 25);
});
my %new_min = map { split /\|/ } split /\n/, $new->safe_psql('postgres',
	"SELECT ticket, min(v) FROM taken WHERE era = 'new' GROUP BY ticket");
is($new->safe_psql('postgres', "SELECT count(*) FROM taken WHERE era = 'new'"),
	'50', 'the tickets issued 50 values after the upgrade, none refused by the primary key');
cmp_ok($new_min{t_plain}, '>', $old_max{t_plain}, 't_plain continues above its old values');
cmp_ok($new_min{t_moved}, '>', 2000,
	't_moved continues from the position its sequence was moved forward to');
note "new cluster: ticket values from $new_min{t_plain} (t_plain), $new_min{t_moved} (t_moved)";

# ---- counters per key ----

$new->safe_psql(
	'postgres', q{
INSERT INTO counted SELECT c, k, snowid_counter_next(c, k), 'new'
  FROM generate_series(1, 5), unnest(ARRAY['c_gap', 'c_fast', 'c_stripe']) c,
       unnest(ARRAY['acme', 'globex']) k;
});
is( $new->safe_psql(
		'postgres', q{
SELECT string_agg(counter || '/' || key || ':' || n_old || '+' || n_new, ' ' ORDER BY counter, key)
FROM (SELECT counter, key, count(*) FILTER (WHERE era = 'old') n_old,
             count(*) FILTER (WHERE era = 'new') n_new
      FROM counted GROUP BY 1, 2) s}),
	'c_fast/acme:13+5 c_fast/globex:13+5 c_gap/acme:13+5 c_gap/globex:13+5 c_stripe/acme:13+5 c_stripe/globex:13+5',
	'every counter gave each key 5 values after the upgrade, none refused by the primary key');
is( $new->safe_psql(
		'postgres', q{
SELECT count(*) FROM (SELECT counter, key FROM counted GROUP BY 1, 2
  HAVING min(v) FILTER (WHERE era = 'new') <= max(v) FILTER (WHERE era = 'old')) s}),
	'0', 'each key goes on above every value it was given before the upgrade');
is( $new->safe_psql(
		'postgres', q{
SELECT string_agg(key || ':' || array_to_string(vs, ','), ' ' ORDER BY key)
FROM (SELECT key, array_agg(v ORDER BY v) vs FROM counted
      WHERE counter = 'c_gap' AND era = 'new' GROUP BY key) s}),
	'acme:14,15,16,17,18 globex:14,15,16,17,18',
	'a gapless key goes on with no hole');
is( $new->safe_psql('postgres',
		"SELECT count(*) FROM counted WHERE counter = 'c_stripe' AND (v - 1) % 3 <> 1"),
	'0', 'a striped counter stays in its stripe');

# A rewind is still refused.
$new->safe_psql('postgres', "SELECT setval('t_plain', 0, false)");
$new->restart;
($ret, $out, $err) = $new->psql('postgres', "SELECT snowid_ticket_next('t_plain')");
like($err, qr/ticket sequence "public.t_plain" has been moved back/,
	'after the upgrade, a ticket sequence moved back with setval is refused');

$new->stop;
done_testing();
