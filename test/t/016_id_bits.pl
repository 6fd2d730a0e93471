
# Copyright (c) snowid contributors
#
# snowid.id_bits: a server with id_bits = 53 issues only IDs below 2^53
# (exact as JavaScript/JSON numbers), reports the width in snowid_layout(),
# and its decoders refuse what is not an ID of the layout; the bounds 32
# and 63 start; without the preload the decoders honour the configured
# width.  (Widths the server refuses at start: 002_config.pl.)

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

my $two53 = 9007199254740992;

# A fresh node per layout: what a restart with a changed layout does is
# another test's subject.
sub layout_node
{
	my ($name, $lines) = @_;
	return snowid_node($name, undef, "timezone = 'UTC'\n$lines");
}

# ---------------------------------------------------------------------------
# id_bits = 53: 41 timestamp bits of 1 ms, 5 node bits, 7 sequence bits; the
# largest node, so that the IDs are as large as this layout makes them.
# ---------------------------------------------------------------------------
my $node = layout_node('id_bits_53',
	"snowid.id_bits = 53\nsnowid.node_bits = 5\nsnowid.sequence_bits = 7\nsnowid.node_id = 31\n"
);
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowid');

is( $node->safe_psql(
		'postgres',
		q{SHOW snowid.id_bits;
		  SELECT id_bits, timestamp_bits, node_bits, sequence_bits, node_id,
		         ids_per_second, last_timestamp
		  FROM snowid_layout()}),
	"53\n53|41|5|7|31|128000|2094-09-07 15:47:35.551+00",
	'id_bits 53: SHOW and snowid_layout() report the layout');

# Many IDs, one by one and in batches: every one below 2^53, exact as a
# double (what a JavaScript Number holds), of node 31, all distinct.
$node->safe_psql(
	'postgres', q{
CREATE TABLE ids AS SELECT snowid_next() AS id FROM generate_series(1, 20000);
INSERT INTO ids SELECT snowid_next_batch(50000);
INSERT INTO ids SELECT snowid_next_batch(1000) FROM generate_series(1, 20);
});
is( $node->safe_psql(
		'postgres',
		qq{SELECT count(*), count(DISTINCT id),
		          count(*) FILTER (WHERE id > 0 AND id < $two53),
		          count(*) FILTER (WHERE id::float8::bigint = id),
		          count(*) FILTER (WHERE snowid_node(id) = 31),
		          max(id) < $two53
		   FROM ids}),
	'90000|90000|90000|90000|90000|t',
	'id_bits 53: 90,000 IDs, distinct, all below 2^53, exact as doubles, of node 31'
);
is( $node->safe_psql(
		'postgres',
		qq{SELECT last_id < $two53, last_id = (SELECT max(id) FROM ids)
		   FROM snowid_stats()}),
	't|t',
	'id_bits 53: snowid_stats().last_id is the largest ID and below 2^53');

# The largest ID of the layout decodes; 2^53 and negative values are not IDs.
is( $node->safe_psql(
		'postgres',
		qq{SELECT d.node, d.sequence, d.ts = l.last_timestamp,
		          snowid_from_timestamp(l.last_timestamp) = (($two53 - 1) >> 12) << 12
		   FROM snowid_decode($two53 - 1) AS d, snowid_layout() AS l}),
	'31|127|t|t',
	'id_bits 53: 2^53 - 1 is the last ID of the last tick');

foreach my $call ("snowid_timestamp($two53)", "snowid_node($two53)",
	"snowid_sequence(9223372036854775807)", "snowid_decode($two53)")
{
	my ($ret, $stdout, $stderr) =
	  $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT $call");
	like(
		$stderr,
		qr/ERROR:\s+22023: invalid snowid: \d+\nDETAIL:\s+With snowid\.id_bits = 53, every snowid is below 9007199254740992\./,
		"id_bits 53: $call is refused with 22023");
}
{
	my ($ret, $stdout, $stderr) =
	  $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT snowid_node(-1)");
	like(
		$stderr,
		qr/ERROR:\s+22023: invalid snowid: -1\nDETAIL:\s+A snowid is never negative/,
		'id_bits 53: a negative value is refused with 22023 too');
}
$node->stop;

# ---------------------------------------------------------------------------
# The bounds.  id_bits = 32: 1 node bit, 4 sequence bits, 27 bits of 10 s
# ticks (about 42 years).
# ---------------------------------------------------------------------------
$node = layout_node('id_bits_32',
	"snowid.id_bits = 32\nsnowid.node_bits = 1\nsnowid.sequence_bits = 4\nsnowid.tick = '10s'\nsnowid.node_id = 1\n"
);
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowid');
is( $node->safe_psql(
		'postgres',
		q{SELECT id_bits, timestamp_bits FROM snowid_layout();
		  SELECT count(*), count(*) FILTER (WHERE id > 0 AND id < 4294967296)
		  FROM (SELECT snowid_next() AS id FROM generate_series(1, 5)) AS s}),
	"32|27\n5|5",
	'id_bits 32: the server starts and issues IDs below 2^32');
$node->stop;

$node = layout_node('id_bits_63', "snowid.id_bits = 63\nsnowid.node_id = 1\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowid');
is( $node->safe_psql(
		'postgres',
		q{SELECT id_bits, timestamp_bits, snowid_next() > 9007199254740992
		  FROM snowid_layout()}),
	'63|41|t',
	'id_bits 63: the default layout, IDs beyond 2^53');
$node->stop;

# ---------------------------------------------------------------------------
# Not preloaded: the decoders read snowid.id_bits from the configuration.
# ---------------------------------------------------------------------------
my $plain = PostgreSQL::Test::Cluster->new('id_bits_not_preloaded');
$plain->init;
$plain->append_conf(
	'postgresql.conf', qq{
timezone = 'UTC'
snowid.id_bits = 53
snowid.node_bits = 5
snowid.sequence_bits = 7
});
$plain->start;
$plain->safe_psql('postgres', 'CREATE EXTENSION snowid');
is( $plain->safe_psql(
		'postgres',
		qq{SELECT id_bits, timestamp_bits FROM snowid_layout();
		   SELECT snowid_node($two53 - 1), snowid_sequence($two53 - 1)}),
	"53|41\n31|127",
	'not preloaded: snowid_layout() and the decoders use snowid.id_bits');
{
	my ($ret, $stdout, $stderr) =
	  $plain->psql('postgres', "SELECT snowid_node($two53)");
	like(
		$stderr,
		qr/invalid snowid: 9007199254740992\nDETAIL:\s+With snowid\.id_bits = 53/,
		'not preloaded: 2^53 is not an ID of the configured layout');
}
$plain->stop;

done_testing();
