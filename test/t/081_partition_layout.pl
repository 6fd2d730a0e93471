# Copyright (c) snowid contributors
#
# Partition bounds computed under one layout stand for other times under
# another.  ALTER SYSTEM on a layout parameter that maps times onto other
# IDs (epoch, tick, or the bits below the tick) warns, naming the tables of
# the current database partitioned by range on a column whose default calls
# snowid_next(); the change itself goes through.  A change that leaves the
# IDs of every time as they are (id_bits, node_id), and tables partitioned
# otherwise (by list, on a ticket column, on a column without a default),
# raise nothing.  Also, on 17 and later, snowid_interval refuses the
# infinite intervals those majors have.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

my $node = snowid_node('partition_layout', 1, "timezone = 'UTC'\nfsync = off\n");
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION snowid;
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowid_next(), item text)
    PARTITION BY RANGE (id);
CREATE TABLE orders_now PARTITION OF orders
    FOR VALUES FROM (snowid_from_timestamp(now() - interval '1 day'))
                 TO (snowid_from_timestamp(now() + interval '1 day'));
INSERT INTO orders (item) VALUES ('a'), ('b');
-- Not moved by a layout change: partitioned by list, on a ticket column,
-- on a column the application fills.
CREATE TABLE by_list (id bigint NOT NULL DEFAULT snowid_next()) PARTITION BY LIST (id);
SELECT snowid_ticket_create('invoice_no');
CREATE TABLE invoices (no bigint NOT NULL DEFAULT snowid_ticket_next('invoice_no'))
    PARTITION BY RANGE (no);
CREATE TABLE imported (id bigint NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE api_calls (id uuid NOT NULL DEFAULT snowid_next_uuid()) PARTITION BY RANGE (id);
CREATE DATABASE other;
});

my $auto_conf = $node->data_dir . '/postgresql.auto.conf';

# ALTER SYSTEM $setting in $db: it succeeds; returns its stderr.
sub alter_system
{
	my ($setting, $db) = @_;
	my ($ret, $stdout, $stderr) = $node->psql($db // 'postgres',
		"\\set VERBOSITY verbose\nALTER SYSTEM $setting");
	is($ret, 0, "ALTER SYSTEM $setting succeeds");
	return $stderr;
}

my $err = alter_system(q{SET snowid.epoch = '2024-01-01 00:00:00+00'});
like(
	$err,
	qr/WARNING:\s+01000: snowid layout change \(snowid\.epoch '2025-01-01 00:00:00\+00' -> '2024-01-01 00:00:00\+00'\) moves the times the partition bounds of table orders stand for/,
	'an earlier epoch: warned, naming the table');
like(
	$err,
	qr/DETAIL:\s+The table is partitioned by range on a column filled by snowid, with bounds that are IDs computed under the layout in force \(snowid\.epoch = '2025-01-01 00:00:00\+00'\)\./,
	'the detail says why, with the settings in force');
like($err, qr/HINT:\s+Keep the layout in force, or after the restart create the partitions anew/,
	'the hint says what to do');
unlike($err, qr/by_list|invoices|imported|api_calls/,
	'tables partitioned by list, on tickets, without a default, or on snowid_next_uuid() (its UUIDs order by Unix time) are not named');
like(slurp_file($auto_conf), qr/snowid\.epoch = '2024-01-01 00:00:00\+00'/,
	'the change was written all the same');

# Back to the layout in force: nothing moves.
$err = alter_system('RESET snowid.epoch');
unlike($err, qr/WARNING/, 'RESET to the layout in force: no warning');

# id_bits and node_id leave the ID of every time where it was.
$err = alter_system('SET snowid.id_bits = 62');
unlike($err, qr/WARNING/, 'snowid.id_bits: no warning');
$err = alter_system('SET snowid.node_id = 2');
unlike($err, qr/WARNING/, 'snowid.node_id: no warning');
alter_system('RESET ALL');

# Several tables: all named; another database's tables are out of sight.
$node->safe_psql('postgres', q{
CREATE SCHEMA s;
CREATE TABLE s."Events" (id bigint NOT NULL DEFAULT snowid_next()) PARTITION BY RANGE (id);
});
$err = alter_system('SET snowid.node_bits = 11');
like(
	$err,
	qr/WARNING:\s+01000: snowid layout change \(snowid\.node_bits 10 -> 11\) moves the times the partition bounds of tables orders, s\."Events" stand for/,
	'one more node bit: both tables named');
like($err, qr/DETAIL:\s+The tables are partitioned by range/, 'plural detail');
# One node bit more and one sequence bit less: the bits below the tick are
# as many as before, and so are the IDs of every time.
$err = alter_system('SET snowid.sequence_bits = 11');
unlike($err, qr/WARNING/,
	'snowid.sequence_bits one less after node_bits one more: no warning');
$err = alter_system('SET snowid.node_bits = 11', 'other');
unlike($err, qr/WARNING/, 'in a database without such tables: no warning');
alter_system('RESET ALL');

# Infinite intervals (17 and later) have no span.
SKIP:
{
	skip 'infinite intervals exist from PostgreSQL 17 on', 2
	  if $node->safe_psql('postgres', 'SHOW server_version_num') < 170000;
	my ($ret, $stdout, $stderr) = $node->psql('postgres',
		"\\set VERBOSITY verbose\nSELECT snowid_interval('infinity')");
	like(
		$stderr,
		qr/ERROR:\s+22008: interval out of range for a snowid span: "infinity"/,
		'snowid_interval(infinity) is refused');
	($ret, $stdout, $stderr) = $node->psql('postgres',
		"\\set VERBOSITY verbose\nSELECT snowid_interval('-infinity')");
	like($stderr, qr/ERROR:\s+22008: interval out of range for a snowid span: "-infinity"/,
		'snowid_interval(-infinity) is refused');
}

$node->stop;
done_testing();
