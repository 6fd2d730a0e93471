
# Copyright (c) snowid contributors
#
# ALTER SYSTEM on a layout parameter refuses a value with which the next
# start would be refused, judging the layout that start would read
# (postgresql.conf and the files it includes, postgresql.auto.conf, and the
# statement), so that a change in two steps works and the server always
# comes back up.

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
# going back to 10 node bits below would then be refused at start, since
# the server could not continue above the IDs of node 1024; TAP 015 tests
# that rule.)
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

done_testing();
