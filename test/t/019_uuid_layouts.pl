
# Copyright (c) snowid contributors
#
# Snowids as version 7 UUIDs under layouts other than the default (the
# default's: sql/uuid.sql).  Without the preload the converters read the
# layout from the session's settings, so one server takes each layout in
# turn: ticks of 10 ms, 1 s and 1 day, id_bits 53 and 32, node_bits 4 and
# 0, an epoch before 1970 with a fraction of a millisecond.  For each:
# round trip, order, version and variant, the time field, and on 18+
# uuid_extract_timestamp() against snowid_timestamp().  Then what
# snowid_from_uuid() does with a UUID of another layout, and, on a
# preloaded server with 10 ms ticks, a uuid column defaulting to
# snowid_next_uuid() filled by concurrent clients.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

my $plain = PostgreSQL::Test::Cluster->new('uuid_layouts');
$plain->init;
$plain->append_conf('postgresql.conf', "timezone = 'UTC'\n");
$plain->start;
$plain->safe_psql('postgres', 'CREATE EXTENSION snowid');
my $version = $plain->safe_psql('postgres',
	q{SELECT current_setting('server_version_num')::int / 10000});

# The settings of a layout as SET commands.
sub set_layout
{
	my (%s) = @_;
	return join '', map { "SET snowid.$_ = '$s{$_}';\n" } sort keys %s;
}

# One line of counts for the layout in force: IDs, round trips, UUIDs with
# version 7, variant 10 and bits 52..62 zero, time fields equal to epoch +
# tick x tick length in Unix ms (clamped to the field), IDs ranked alike by
# ID and by UUID; then uuid_extract_version() = 7 (17+) and
# uuid_extract_timestamp() equal to snowid_timestamp() to the millisecond
# wherever the field holds the time (18+).
my $checks = q{
SELECT setseed(0.5);
CREATE TEMP TABLE l AS
SELECT id_bits, node_bits + sequence_bits AS shift,
       floor(extract(epoch FROM epoch) * 1000) AS epoch_ms,
       extract(epoch FROM tick) * 1000 AS tick_ms
  FROM snowid_layout();
CREATE TEMP TABLE ids AS
SELECT DISTINCT id FROM (
  SELECT (floor(random() * 2 ^ (id_bits - 31))::bigint << 31) | floor(random() * 2 ^ 31)::bigint AS id
    FROM l, generate_series(1, 3000)
  UNION ALL
  SELECT floor(random() * 2 ^ (shift + 36))::bigint
    FROM l, generate_series(1, 1000) WHERE shift + 36 < id_bits
  UNION ALL
  SELECT unnest(ARRAY[0, 1, (1::bigint << shift) - 1, 1::bigint << shift,
                      ((1::bigint << (id_bits - 1)) - 1) * 2 + 1 - 1,
                      ((1::bigint << (id_bits - 1)) - 1) * 2 + 1,
                      ((((1::bigint << (id_bits - 1)) - 1) * 2 + 1) >> shift) << shift])
    FROM l) AS s;
CREATE TEMP TABLE u AS
SELECT id, snowid_to_uuid(id) AS u,
       epoch_ms + (id >> shift) * tick_ms AS raw_ms
  FROM ids, l;
SELECT count(*),
       count(*) FILTER (WHERE snowid_from_uuid(u) = id),
       count(*) FILTER (WHERE u::text ~ '^.{14}700[01]-[89ab]'),
       count(*) FILTER (WHERE ('x' || substr(replace(u::text, '-', ''), 1, 12))::bit(48)::bigint
                              = least(greatest(raw_ms, 0), 2 ^ 48 - 1)),
       (SELECT count(*) FILTER (WHERE a = b)
          FROM (SELECT row_number() OVER (ORDER BY id) AS a,
                       row_number() OVER (ORDER BY u) AS b FROM u) AS r)
  FROM u;
};
# 17's uuid_extract_timestamp() reads only version 1 (NULL for 7).
$checks .=
  $version >= 18
  ? q{SELECT coalesce(bool_and(uuid_extract_version(u) = 7 AND
              uuid_extract_timestamp(u) = date_trunc('milliseconds', snowid_timestamp(id))), false)
        FROM u WHERE raw_ms BETWEEN 0 AND 2 ^ 48 - 1;}
  : $version >= 17
  ? q{SELECT coalesce(bool_and(uuid_extract_version(u) = 7), false) FROM u;}
  : q{SELECT true;};

my @layouts = (
	[ 'tick 10 ms', tick => '10ms' ],
	[ 'tick 1 s, node_bits 4', tick => '1s', node_bits => 4, sequence_bits => 10 ],
	[ 'id_bits 53', id_bits => 53, node_bits => 5, sequence_bits => 7 ],
	[ 'id_bits 32, node_bits 4, tick 1 day', id_bits => 32, node_bits => 4,
	  sequence_bits => 8, tick => '1d' ],
	# ticks before 1970 (time field 0) and after 10889 (time field 2^48 - 1)
	[ 'epoch 1960 plus 0.5 ms, tick 1 s, no node or sequence bits',
	  epoch => '1960-01-01 00:00:00.0005+00', tick => '1s',
	  node_bits => 0, sequence_bits => 0 ],
);
for my $layout (@layouts)
{
	my ($name, %s) = @$layout;
	my $out = $plain->safe_psql('postgres', set_layout(%s) . $checks);
	my ($counts, $extract) = (split /\n/, $out)[-2, -1];
	my ($n) = split /\|/, $counts;
	cmp_ok($n, '>=', 1000, "$name: enough IDs");
	is($counts, join('|', ($n) x 5),
		"$name: round trip, version and variant, time field, order for all $n IDs");
	is($extract, 't',
		"$name: uuid_extract_version() is 7 (17+), uuid_extract_timestamp() is snowid_timestamp() to the ms (18+)");
}

# The time field at the edges of the epoch-1960 layout: 0 until 1970,
# 2^48 - 1 from 10889-08-02 05:31:50.655 UTC (the ID is kept whole).
is( $plain->safe_psql(
		'postgres', set_layout(
			epoch => '1960-01-01 00:00:00.0005+00', tick => '1s',
			node_bits => 0, sequence_bits => 0) . q{
SELECT snowid_to_uuid(315619199), snowid_to_uuid(315619200),
       snowid_to_uuid(9223372036854775807),
       snowid_from_uuid(snowid_to_uuid(9223372036854775807));}),
	join('|', '00000000-0000-7000-8000-000012cff77f',
		'00000000-0000-7000-8000-000012cff780',
		'ffffffff-ffff-7001-bfff-ffffffffffff',
		'9223372036854775807'),
	'epoch 1960: the time field holds 0 before 1970 and its maximum after 10889');

# A UUID of another layout: refused when the ID's time under the layout in
# force differs from the time field, or the ID is beyond id_bits ...
sub from_other
{
	my ($made_under, $id_sql, $read_under) = @_;
	my ($ret, $stdout, $stderr) = $plain->psql('postgres',
		"\\set VERBOSITY verbose\n"
		  . set_layout(%$made_under)
		  . "CREATE TEMP TABLE x AS SELECT snowid_to_uuid($id_sql) AS u;\n"
		  . set_layout(%$read_under)
		  . "SELECT snowid_from_uuid(u) FROM x;\n");
	return $stderr;
}
like(
	from_other({ tick => '10ms' }, q{snowid_from_timestamp('2026-06-01') + 77},
		{ tick => '1ms' }),
	qr/ERROR:\s+22023: uuid \S+ does not hold a snowid of the layout in force\nDETAIL:\s+Its time field says 2026-06-01 00:00:00\+00, but under the layout in force the snowid it holds, \d+, has the time 2025-02-21 14:24:00\+00\./,
	'made with 10 ms ticks, read with 1 ms ticks: refused, both times named');
like(
	from_other({ epoch => '2025-01-01' }, q{snowid_from_timestamp('2026-06-01')},
		{ epoch => '2024-01-01' }),
	qr/ERROR:\s+22023: uuid \S+ does not hold a snowid of the layout in force/,
	'made under another epoch: refused');
like(
	from_other(
		{ id_bits => 63, node_bits => 5, sequence_bits => 7 },
		q{(1::bigint << 53) + 5},
		{ id_bits => 53, node_bits => 5, sequence_bits => 7 }),
	qr/ERROR:\s+22023: uuid \S+ does not hold a snowid of the layout in force\nDETAIL:\s+It holds 9007199254740997, but with snowid.id_bits = 53 every snowid is below 9007199254740992\./,
	'made with id_bits 63, read with id_bits 53: an ID beyond the width is refused');
# ... but a split of the same width between node and sequence bits cannot
# be told from the UUID: it reads back as the same bigint (documented).
is( $plain->safe_psql(
		'postgres', q{
SET snowid.node_bits = 10; SET snowid.sequence_bits = 12;
CREATE TEMP TABLE x AS SELECT snowid_to_uuid(1234567890123) AS u;
SET snowid.node_bits = 11; SET snowid.sequence_bits = 11;
SELECT snowid_from_uuid(u) FROM x;}),
	'1234567890123',
	'another split of the same width: the same bigint comes back');
$plain->stop;

# ---------------------------------------------------------------------------
# Preloaded, 10 ms ticks, node 3: a uuid column defaulting to
# snowid_next_uuid(), filled by 4 concurrent clients.
# ---------------------------------------------------------------------------
my $node = snowid_node('uuid_clients', 3, "snowid.tick = 10ms\ntimezone = 'UTC'\n");
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION snowid;
CREATE TABLE t (n bigserial, id uuid PRIMARY KEY DEFAULT snowid_next_uuid(), client int);});
$node->pgbench(
	'-n -c 4 -j 2 -t 250',
	0,
	[qr{processed: 1000/1000}],
	[qr{^$}],
	'pgbench: 4 clients insert rows with snowid_next_uuid() defaults',
	{ '019_insert.sql' => "INSERT INTO t (client) SELECT :client_id FROM generate_series(1, 4);\n" });
is( $node->safe_psql(
		'postgres', q{
SELECT count(*), count(DISTINCT id),
       count(*) FILTER (WHERE snowid_node(snowid_from_uuid(id)) = 3),
       count(*) FILTER (WHERE of_now)
  FROM (SELECT id, snowid_timestamp(snowid_from_uuid(id))
                   BETWEEN now() - interval '10 minutes' AND clock_timestamp() + interval '2 seconds'
                   AS of_now
          FROM t) AS s;
SELECT count(*) FILTER (WHERE a <> b) FROM
  (SELECT row_number() OVER (ORDER BY id) AS a,
          row_number() OVER (ORDER BY snowid_from_uuid(id)) AS b FROM t) AS r;}),
	"4000|4000|4000|4000\n0",
	'4,000 UUIDs from concurrent clients: distinct, of node 3, of now, in ID order');
$node->stop;

done_testing();
