
# Copyright (c) snowid contributors
#
# ALTER SYSTEM on a layout parameter refuses a value with which the next
# start would be refused, judging the layout that start would read
# (postgresql.conf and the files it includes, postgresql.auto.conf, and the
# statement), so that a change in two steps works and the server always
# comes back up.  On a server that has issued IDs, that includes the rule
# for a start under a changed layout: going on above the IDs issued.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

my $node = snowid_node('alter_system', 1,
	"timezone = 'UTC'\ninclude_if_exists = 'snowid_hand.conf'\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowid');

my $auto_conf = $node->data_dir . '/postgresql.auto.conf';

# ALTER SYSTEM $setting must fail with an error matching every pattern.
sub refused
{
	my ($setting, @patterns) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;

	my ($ret, $stdout, $stderr) = $node->psql('postgres',
		"\\set VERBOSITY verbose\nALTER SYSTEM $setting");
	isnt($ret, 0, "ALTER SYSTEM $setting is refused");
	like($stderr, $_, "ALTER SYSTEM $setting: error matches $_")
	  foreach @patterns;
	return;
}

# The issue's case: 1024 does not fit in the running 10 node bits.
refused(
	'SET snowid.node_id = 1024',
	qr/ERROR:\s+22023: 1024 is outside the valid range for parameter "snowid\.node_id" \(0 \.\. 1023\)/,
	qr/DETAIL:\s+snowid\.node_bits = 10 allows node IDs from 0 to 1023/,
	qr/CONTEXT:\s+snowid layout the next server start would read/);
unlike(slurp_file($auto_conf), qr/snowid/,
	'the refused value was not written to postgresql.auto.conf');

# 31 sequence bits leave 22 bits of 1 ms ticks: dead since 2025.
refused(
	'SET snowid.sequence_bits = 31',
	qr/ERROR:\s+22023: snowid layout leaves too few timestamp bits/,
	qr/snowid\.node_bits = 10 and snowid\.sequence_bits = 31, 22 bits remain/);

# postgresql.conf and its includes count too, hand edits since the start
# included: with 31 sequence bits there, 40 id bits leave no timestamp bit.
append_to_file($node->data_dir . '/snowid_hand.conf',
	"snowid.sequence_bits = 31\n");
refused(
	'SET snowid.id_bits = 40',
	qr/ERROR:\s+22023: snowid\.node_bits and snowid\.sequence_bits together must be less than snowid\.id_bits/,
	qr/DETAIL:\s+snowid\.id_bits is 40, snowid\.node_bits is 10 and snowid\.sequence_bits is 31/
);
unlink $node->data_dir . '/snowid_hand.conf';

# In two steps: first the width, then the node ID that needs it.
$node->safe_psql('postgres', 'ALTER SYSTEM SET snowid.node_bits = 11');
$node->safe_psql('postgres', 'ALTER SYSTEM SET snowid.node_id = 1024');
like(
	slurp_file($auto_conf),
	qr/snowid\.node_bits = '11'.*snowid\.node_id = '1024'/s,
	'two steps: both values are in postgresql.auto.conf');

# Undoing the first step alone would strand the node ID.
refused(
	'RESET snowid.node_bits',
	qr/1024 is outside the valid range for parameter "snowid\.node_id" \(0 \.\. 1023\)/
);
refused('SET snowid.node_bits TO DEFAULT',
	qr/1024 is outside the valid range for parameter "snowid\.node_id"/);
refused('SET snowid.node_bits = 10',
	qr/1024 is outside the valid range for parameter "snowid\.node_id"/);

# 20 sequence bits in postgresql.conf and 31 node bits here leave 12.
append_to_file($node->data_dir . '/snowid_hand.conf',
	"snowid.sequence_bits = 20\n");
refused(
	'SET snowid.node_bits = 31',
	qr/snowid\.node_bits = 31 and snowid\.sequence_bits = 20, 12 bits remain/);
unlink $node->data_dir . '/snowid_hand.conf';

# A layout setting the next start would accept is accepted.
$node->safe_psql('postgres', 'ALTER SYSTEM SET snowid.id_bits = 63');

# The restart comes up with the new layout.  (No ID is issued under it:
# going back to 10 node bits below would then be refused, by ALTER SYSTEM
# and at start, since the server could not continue above the IDs of node
# 1024; the end of this file and TAP 015 test that rule.)
$node->restart;
is( $node->safe_psql(
		'postgres',
		q{SELECT node_id, node_bits, id_bits FROM snowid_layout()}),
	"1024|11|63",
	'restart after the two-step change: node 1024 with 11 node bits');

# RESET ALL goes back to postgresql.conf (node 1, 10 bits): accepted, and
# the server starts.
$node->safe_psql('postgres', 'ALTER SYSTEM RESET ALL');
$node->restart;
is( $node->safe_psql(
		'postgres', q{SELECT node_id, node_bits FROM snowid_layout()}),
	'1|10', 'RESET ALL: back to node 1 with 10 node bits after a restart');

# With postgresql.conf holding a node ID that needs 11 bits, RESET ALL
# would strand it and is refused.
$node->safe_psql('postgres', 'ALTER SYSTEM SET snowid.node_bits = 11');
append_to_file($node->data_dir . '/snowid_hand.conf',
	"snowid.node_id = 2000\n");
refused('RESET ALL',
	qr/2000 is outside the valid range for parameter "snowid\.node_id" \(0 \.\. 1023\)/
);
$node->restart;
is( $node->safe_psql(
		'postgres',
		q{SELECT node_id, node_bits FROM snowid_layout();
		  SELECT snowid_node(snowid_next())}),
	"2000|11\n2000",
	'and the server starts with that layout and issues IDs of node 2000');

$node->stop;

# ---- a server that has issued IDs: the rule for a changed layout ----

# The next start continues above the IDs already issued only if the new
# layout reaches above them within max_lead + max_wait of the clock, else
# it refuses (TAP 015).  ALTER SYSTEM judges the same, for the IDs issued
# so far and the clock now.
$node = snowid_node('alter_system_issued', 1, "timezone = 'UTC'\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowid');
$auto_conf = $node->data_dir . '/postgresql.auto.conf';

# Nothing issued yet: any valid layout is accepted, as before.
$node->safe_psql('postgres', "ALTER SYSTEM SET snowid.tick = '1h'");
like(slurp_file($auto_conf), qr/snowid\.tick = '1h'/,
	'a server that issued nothing takes snowid.tick = 1h');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET snowid.tick');

my $last = $node->safe_psql('postgres',
	'SELECT max(snowid_next()) FROM generate_series(1, 1000)');

# Hours instead of milliseconds: the IDs of today would be far smaller.
refused(
	"SET snowid.tick = '1h'",
	qr/ERROR:\s+55000: snowid layout change \(snowid\.tick 1ms -> 3600000ms\) would be refused at the next server start/,
	qr/DETAIL:\s+The last ID this server issued is $last; every ID it issued or reserved is below \d+\. The new layout would issue \d+ now; (its first ID above them|it has no ID above them)/,
	qr/HINT:\s+Keep the settings in force \(snowid\.tick = '1ms'\), or choose a layout under which the IDs of today lie above \d+/,
	qr/CONTEXT:\s+snowid layout the next server start would read/);

# One node bit fewer halves the IDs of a given time: the clock would have to
# run on for as long again since the epoch.  Only time stands in the way, so
# the hint says when it would be possible.
refused(
	'SET snowid.node_bits = 9',
	qr/ERROR:\s+55000: snowid layout change \(snowid\.node_bits 10 -> 9\) would be refused at the next server start/,
	qr/its first ID above them, \d+, belongs to the tick starting at [^,]+, [0-9.]+ s ahead of the clock, more than snowid\.max_lead \(1000 ms\) and snowid\.max_wait \(1000 ms\) allow/,
	qr/HINT:\s+Keep the settings in force \(snowid\.node_bits = '10'\).*Only time stands between the new layout and those IDs: if this server issues no more IDs, the change is possible once the clock has passed \d{4}-/s
);

# A later epoch (still in the past): the same.
refused(
	"SET snowid.epoch = '2025-06-01 00:00:00+00'",
	qr/ERROR:\s+55000: snowid layout change \(snowid\.epoch '2025-01-01 00:00:00\+00' -> '2025-06-01 00:00:00\+00'\) would be refused/,
	qr/Only time stands between the new layout and those IDs/);

unlike(slurp_file($auto_conf), qr/snowid/,
	'nothing refused was written to postgresql.auto.conf');

# More sequence bits make the IDs of a given time larger: accepted, and the
# restart goes on above the last ID.
$node->safe_psql('postgres', 'ALTER SYSTEM SET snowid.sequence_bits = 13');
like(slurp_file($auto_conf), qr/snowid\.sequence_bits = '13'/,
	'ALTER SYSTEM SET snowid.sequence_bits = 13 is accepted');
my $log_offset = -s $node->logfile;
$node->restart;
like(slurp_file($node->logfile, $log_offset),
	qr/LOG:  snowid continues under a changed layout \(snowid\.sequence_bits 12 -> 13\)/,
	'the restart continues under the new layout');
my $next = $node->safe_psql('postgres',
	'SELECT min(snowid_next()) FROM generate_series(1, 1000)');
cmp_ok($next, '>', $last, 'its IDs lie above the last one of the old layout');

# Going back to 12 sequence bits is now the change that cannot continue,
# also after a restart that issued nothing yet: the bound comes from the
# high-water file.
$node->restart;
refused(
	'RESET snowid.sequence_bits',
	qr/ERROR:\s+55000: snowid layout change \(snowid\.sequence_bits 13 -> 12\) would be refused at the next server start/,
	qr/DETAIL:\s+Every ID this server issued or reserved is below \d+\. The new layout would issue/);
like(slurp_file($auto_conf), qr/snowid\.sequence_bits = '13'/,
	'the refused RESET left postgresql.auto.conf as it was');
$node->restart;
cmp_ok($node->safe_psql('postgres', 'SELECT snowid_next()'), '>', $next,
	'and the server still starts');

$node->stop;

done_testing();
