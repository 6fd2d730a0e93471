# Copyright (c) snowid contributors
#
# snowid_convert_column on a table that takes inserts while it converts:
# - four pgbench clients insert into a bigserial table and an integer
#   serial table (one transaction, both tables) while one session converts
#   the first to snowid_next() and the second to a ticket sequence, and
#   holds its lock a moment: the inserts wait for it (seen in
#   pg_stat_activity), none fails, every one that pgbench counts is a row
#   (none lost) and no key is there twice (none duplicated);
# - pg_dump of the converted database, restored into another database: the
#   defaults come back as they were, a second conversion there changes
#   nothing, and new rows take keys above the restored ones;
# - with SNOWID_OLD_PG_BINDIR (an older major with snowid installed, as for
#   040_pg_upgrade.pl): a table converted on the old major goes through
#   pg_upgrade and goes on above its keys;
# - with Citus (a coordinator alone): a distributed or reference table is
#   refused, and the README's order (convert, then distribute) works.

use strict;
use warnings;

use File::Basename qw(dirname);
use File::Copy qw(copy);
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;
use SnowidCitus;

my $node = snowid_node('convert', 1);
$node->start;
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION snowid;
CREATE TABLE orders (id bigserial PRIMARY KEY, client int NOT NULL);
CREATE TABLE lines (order_id bigint NOT NULL REFERENCES orders (id), n int);
CREATE TABLE slips (no serial PRIMARY KEY, client int NOT NULL);
INSERT INTO orders (client) SELECT 0 FROM generate_series(1, 1000);
INSERT INTO lines SELECT id, 1 FROM orders;
INSERT INTO slips (client) SELECT 0 FROM generate_series(1, 1000);
});

# ---- conversion under concurrent inserts ----

my $bench = start_pgbench(
	$node, '082_insert', 4, 10, q{BEGIN;
INSERT INTO orders (client) VALUES (:client_id + 1);
INSERT INTO slips (client) VALUES (:client_id + 1);
COMMIT;});
$node->poll_query_until('postgres', 'SELECT count(*) > 1200 FROM orders')
  or die 'pgbench inserted nothing';

# One transaction converts both tables and stays open until inserts are
# seen queued behind its lock; then it commits and they go on.
my $conv = $node->background_psql('postgres');
$conv->query_safe('BEGIN');
my $conv_out = $conv->query(q{SELECT snowid_convert_column('orders', 'id');
SELECT snowid_convert_column('slips', 'no', ticket => 'slips_no')});
unlike($conv->{stderr}, qr/ERROR/, 'the conversion ran (its transaction still open)');
ok( $node->poll_query_until(
		'postgres', q{SELECT count(*) > 0 FROM pg_stat_activity
		 WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT%'}),
	'inserts wait for the conversion');
ok($bench->{handle}->pumpable, 'pgbench was still running when the conversion committed');
$conv->query_safe('COMMIT');
$conv->quit;
pass('the conversion committed');
like($conv_out, qr/^public\.snowid_next\(\)\npublic\.snowid_ticket_next\('public\.slips_no'::regclass\)$/m,
	'it returned both new defaults');

IPC::Run::finish($bench->{handle});
is($?, 0, 'pgbench ran without an error') or diag $bench->{err};
my $done = pgbench_processed($bench);
ok(defined $done && $done > 0, 'pgbench inserted rows') or diag $bench->{out};
note "pgbench: $done transactions";
is( $node->safe_psql(
		'postgres', q{SELECT count(*) - 1000, count(DISTINCT id) = count(*),
		                     count(*) FILTER (WHERE id > 1000 AND id < 1000000) > 0,
		                     count(*) FILTER (WHERE id >= 1000000) > 0
		                FROM orders}),
	"$done|t|t|t",
	'orders: a row for every insert, no key twice, keys from the sequence before and from snowid after');
is( $node->safe_psql(
		'postgres', q{SELECT count(*) - 1000, count(DISTINCT no) = count(*) FROM slips}),
	"$done|t",
	'slips: a row for every insert, no key twice');
is( $node->safe_psql(
		'postgres', q{SELECT count(*) > 0 FROM slips
		 WHERE no >= (SELECT start FROM snowid_tickets WHERE ticket = 'slips_no'::regclass)}),
	't', 'slips took values of the ticket after the conversion');
$node->safe_psql('postgres', 'INSERT INTO lines SELECT max(id), 2 FROM orders');
is( $node->safe_psql(
		'postgres', q{SELECT count(*) FROM lines l JOIN orders o ON o.id = l.order_id}),
	'1001', 'the foreign key holds the old keys and takes a new one');

# ---- pg_dump, restored into another database ----

my $defaults = q{SELECT a.attrelid::regclass || '.' || a.attname || ' ' || pg_get_expr(d.adbin, d.adrelid)
  FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
 WHERE a.attrelid IN ('orders'::regclass, 'slips'::regclass) ORDER BY 1};
my $dump = $node->basedir . '/convert.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('postgres') ],
	'pg_dump of the converted database');
my $before = $node->safe_psql('postgres', $defaults);
my ($max_order, $max_slip) = split /\|/,
  $node->safe_psql('postgres', 'SELECT (SELECT max(id) FROM orders), (SELECT max(no) FROM slips)');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok([ 'pg_restore', '-d', $node->connstr('restored'), $dump ],
	'pg_restore into another database');
is($node->safe_psql('restored', $defaults), $before, 'the defaults come back as they were');
my ($ret, $out, $err) = $node->psql('restored',
	q{SELECT snowid_convert_column('orders', 'id'), snowid_convert_column('slips', 'no', ticket => 'slips_no')});
is($ret, 0, 'converting the restored tables again succeeds');
is(scalar(() = $err =~ /already takes its values/g), 2, 'and changes nothing, saying so for each');
$node->safe_psql('restored', q{
INSERT INTO orders (client) SELECT 9 FROM generate_series(1, 100);
INSERT INTO slips (client) SELECT 9 FROM generate_series(1, 100);
});
is( $node->safe_psql(
		'restored', qq{SELECT (SELECT count(*) FROM orders WHERE client = 9 AND id > $max_order),
		                      (SELECT count(*) FROM slips WHERE client = 9 AND no > $max_slip)}),
	'100|100', 'new rows in the restored database take keys above every restored one');

$node->stop;

# ---- pg_upgrade of a table converted on an older major ----

SKIP:
{
	my $old_bindir = $ENV{SNOWID_OLD_PG_BINDIR};
	skip 'SNOWID_OLD_PG_BINDIR is not set (the bin directory of an older PostgreSQL major with snowid installed; test/run-tests.sh sets it on majors above 15)', 4
	  unless defined $old_bindir && $old_bindir ne '';
	my $new_bindir = `"@{[ $ENV{PG_CONFIG} // 'pg_config' ]}" --bindir`;
	chomp $new_bindir;
	skip "SNOWID_OLD_PG_BINDIR ($old_bindir) is this suite's own major: nothing to upgrade to", 4
	  if `"$old_bindir/pg_config" --version` eq `"$new_bindir/pg_config" --version`;

	# pg_upgrade needs the same data checksum setting on both sides, and the
	# default differs between majors (on from 18).
	my $old = snowid_node('old', 7, '',
		install_path => dirname($old_bindir), extra => ['--data-checksums']);
	$old->start;
	$old->safe_psql(
		'postgres', q{
CREATE EXTENSION snowid;
CREATE TABLE up (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, era text NOT NULL);
CREATE TABLE upt (no serial PRIMARY KEY, era text NOT NULL);
INSERT INTO up (era) SELECT 'before' FROM generate_series(1, 100);
INSERT INTO upt (era) SELECT 'before' FROM generate_series(1, 100);
SELECT snowid_convert_column('up', 'id');
SELECT snowid_convert_column('upt', 'no', ticket => 'upt_no', drop_sequence => true);
INSERT INTO up (era) SELECT 'old' FROM generate_series(1, 100);
INSERT INTO upt (era) SELECT 'old' FROM generate_series(1, 100);
});
	my $old_defaults = $old->safe_psql('postgres', $defaults =~ s/'orders'/'up'/r =~ s/'slips'/'upt'/r);
	my ($old_up, $old_upt) = split /\|/,
	  $old->safe_psql('postgres', 'SELECT (SELECT max(id) FROM up), (SELECT max(no) FROM upt)');
	drop_attver_options($old);
	$old->stop;

	my $new = snowid_node('new', 7, '', extra => ['--data-checksums']);
	run_pg_upgrade($old, $new, $old_bindir, $new_bindir,
		'pg_upgrade of the converted tables');
	# The README's steps after pg_upgrade: carry the high-water files, and
	# record the tickets' dependencies again.
	for my $f ('snowid.highwater', 'snowid.issued')
	{
		copy($old->data_dir . "/$f", $new->data_dir . "/$f")
		  or die "could not copy $f: $!";
	}
	$new->start;
	$new->safe_psql('postgres', 'UPDATE snowid_ticket SET seqrelid = seqrelid');
	is($new->safe_psql('postgres', $defaults =~ s/'orders'/'up'/r =~ s/'slips'/'upt'/r),
		$old_defaults, 'the converted defaults come through pg_upgrade');
	$new->safe_psql('postgres', q{
INSERT INTO up (era) SELECT 'new' FROM generate_series(1, 100);
INSERT INTO upt (era) SELECT 'new' FROM generate_series(1, 100);
});
	is( $new->safe_psql(
			'postgres', qq{SELECT (SELECT count(*) FROM up WHERE era = 'new' AND id > $old_up),
			                      (SELECT count(*) FROM upt WHERE era = 'new' AND no > $old_upt)}),
		'100|100', 'after pg_upgrade, new rows take keys above every old one');
	is($new->safe_psql('postgres', q{SELECT count(*) FROM up WHERE id <= 100}),
		'100', 'the keys from before the conversion are there');
	$new->stop;
}

# ---- Citus: refused once distributed, fine before ----

SKIP:
{
	my $why = SnowidCitus::citus_unavailable();
	skip $why, 4 if defined $why;
	my $c = citus_cluster(workers => 0, name => 'convert', snowid => 1);
	my $coord = $c->{coordinator};
	# the coordinator alone holds the shards
	$coord->safe_psql('postgres',
		"SELECT citus_set_node_property('127.0.0.1', @{[ $coord->port ]}, 'shouldhaveshards', true)");
	$coord->safe_psql(
		'postgres', q{
CREATE TABLE dist (id bigserial PRIMARY KEY);
CREATE TABLE ref (id bigserial PRIMARY KEY);
SELECT create_distributed_table('dist', 'id');
SELECT create_reference_table('ref');
CREATE TABLE later (id bigserial PRIMARY KEY, v int);
INSERT INTO later (v) SELECT generate_series(1, 10);
});
	for my $t ('dist', 'ref')
	{
		my ($ret, $out, $err) = $coord->psql('postgres',
			"\\set VERBOSITY verbose\nSELECT snowid_convert_column('$t', 'id')");
		like($err, qr/ERROR:  0A000: table public\.$t is a Citus table/,
			"a Citus table ($t) is refused with SQLSTATE 0A000");
	}
	$coord->safe_psql('postgres', q{
SELECT snowid_convert_column('later', 'id', drop_sequence => true);
SELECT create_distributed_table('later', 'id');
INSERT INTO later (v) SELECT generate_series(11, 20);
});
	is( $coord->safe_psql(
			'postgres', q{SELECT count(*), count(DISTINCT id), count(*) FILTER (WHERE id > 10) FROM later}),
		'20|20|10', 'converted first, then distributed: new rows take snowid keys');
	is( $coord->safe_psql(
			'postgres', q{SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d
			 WHERE d.adrelid = 'later'::regclass}),
		'snowid_next()', 'and the distributed table keeps the default');
	$coord->stop;
}

done_testing();
