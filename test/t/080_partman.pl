# Copyright (c) snowid contributors
#
# The pg_partman recipe (README, "Partitioning by the time inside the ID"):
# pg_partman 4.7 (Debian's postgresql-15-partman) manages a table keyed by
# `id bigint DEFAULT snowid_next()` in ID ranges of one day each, the span
# that snowid_interval('1 day') gives.  create_parent starts the set at a
# day boundary; run_maintenance() creates the partitions ahead; every row
# lands in the partition of its day; retention (part_config.retention, a
# span of N days) drops the partitions that lie wholly more than N days
# below the newest ID, and no other.
#
# Skipped, with the reason, where pg_partman 4 is not installed into the
# PostgreSQL under test (test/run-tests.sh installs it for 15 where the
# package can be had; 17 and 18 are source builds without it).  The native
# recipe runs on every major in pg_regress (sql/partition.sql).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

# Why pg_partman 4 cannot run here, or undef if it can.
sub partman_unavailable
{
	my $pg_config = $ENV{PG_CONFIG} // 'pg_config';
	my ($version) = `"$pg_config" --version` =~ /PostgreSQL (\d+)/;
	return "could not run $pg_config --version" unless defined $version;
	my $sharedir = `"$pg_config" --sharedir`;
	chomp $sharedir;
	my $control = "$sharedir/extension/pg_partman.control";
	return "pg_partman is not installed for PostgreSQL $version"
	  unless -f $control;
	my ($default) = slurp_file($control) =~ /^default_version\s*=\s*'([^']*)'/m;
	return "pg_partman "
	  . ($default // '(no default_version)')
	  . " is installed for PostgreSQL $version; this recipe is for pg_partman 4"
	  unless defined $default && $default =~ /^4\./;
	return undef;
}

my $why = partman_unavailable();
plan skip_all => $why if defined $why;

my $node = snowid_node('partman', 1, "timezone = 'UTC'\nfsync = off\n");
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION snowid;
CREATE SCHEMA partman;
CREATE EXTENSION pg_partman SCHEMA partman;
CREATE TABLE events (
    id   bigint NOT NULL DEFAULT snowid_next(),
    what text
) PARTITION BY RANGE (id);
-- The partitions of events with their bounds (the default partition has none).
CREATE VIEW parts AS
SELECT c.relname AS part, b[1]::bigint AS lo, b[2]::bigint AS hi
  FROM pg_inherits i
  JOIN pg_class c ON c.oid = i.inhrelid,
       regexp_matches(pg_get_expr(c.relpartbound, c.oid), 'FROM \D*(\d+)\D+(\d+)') b
 WHERE i.inhparent = 'events'::regclass;
});

sub sql { return $node->safe_psql('postgres', $_[0]); }

# create_parent: days from three days back, four premade; pg_partman puts
# the start on a multiple of the interval, the ID of a day's midnight
# (UTC, since the default epoch is a UTC midnight).
sql(q{SELECT partman.create_parent('public.events', 'id', 'native',
        snowid_interval('1 day')::text, p_premake := 4,
        p_start_partition := snowid_from_timestamp(now() - interval '3 days')::text)});
is( sql(q{SELECT count(*),
        count(*) FILTER (WHERE hi - lo = snowid_interval('1 day')
                           AND snowid_timestamp(lo) = date_trunc('day', snowid_timestamp(lo))),
        bool_and(lo % snowid_interval('1 day') = 0),
        min(snowid_timestamp(lo)) = date_trunc('day', now() - interval '3 days'),
        (max(lo) - min(lo)) / snowid_interval('1 day') + 1 = count(*)
        FROM parts}),
	'5|5|t|t|t',
	'create_parent: 5 contiguous partitions of one UTC day each, the first three days back');
is(sql(q{SELECT count(*) FROM pg_inherits
       WHERE inhparent = 'events'::regclass AND inhrelid = 'events_default'::regclass}),
	'1', 'pg_partman made a default partition too');

# Rows of now (the default), of the three days before and of two days ahead.
sql(q{INSERT INTO events (what) SELECT 'now' FROM generate_series(1, 3);
    INSERT INTO events (id, what)
    SELECT snowid_from_timestamp(now() + d * interval '1 day') + 5, 'day ' || d
      FROM generate_series(-3, -1) d;});

# run_maintenance() keeps 4 partitions ahead of the one holding the newest
# row: with rows of today, it makes the days up to today + 4.
sql(q{SELECT partman.run_maintenance('public.events')});
is( sql(q{SELECT (SELECT max(lo) FROM parts)
             = (SELECT lo FROM parts WHERE (SELECT max(id) FROM events) >= lo
                                       AND (SELECT max(id) FROM events) < hi)
               + 4 * snowid_interval('1 day'),
        (SELECT (max(lo) - min(lo)) / snowid_interval('1 day') + 1 = count(*) FROM parts)}),
	't|t',
	'run_maintenance: partitions up to 4 days ahead of the newest row, no gap');

# A row of the day after tomorrow now has its partition.
sql(q{INSERT INTO events (id, what)
    VALUES (snowid_from_timestamp(now() + interval '2 days') + 5, 'day 2')});

# Every row in the partition of its day, none in the default partition.
my $placed = q{SELECT e.id, e.what, p.part, p.lo, p.hi
  FROM events e JOIN pg_class c ON c.oid = e.tableoid
  LEFT JOIN parts p ON p.part = c.relname};
is( sql(qq{SELECT count(*), count(part),
        count(*) FILTER (WHERE snowid_timestamp(lo) = date_trunc('day', snowid_timestamp(id))
                           AND id >= lo AND id < hi)
        FROM ($placed) x}),
	'7|7|7', 'every row lies in the partition of its UTC day');
is(sql(q{SELECT count(*) FROM ONLY events_default}),
	'0', 'nothing in the default partition');

# Retention: 2 days, partitions dropped.  pg_partman drops a partition when
# its upper bound lies at least the retention below the newest ID (its
# retention is relative to the data, not to now()).
sql(q{UPDATE partman.part_config
       SET retention = snowid_interval('2 days')::text, retention_keep_table = false
     WHERE parent_table = 'public.events'});
sql(q{CREATE TABLE before_retention AS
    SELECT part, hi > (SELECT max(id) FROM events) - snowid_interval('2 days') AS keep
      FROM parts});
my $rows_before = sql(q{SELECT string_agg(what, ',' ORDER BY id) FROM events});
sql(q{SELECT partman.run_maintenance('public.events')});
is( sql(q{SELECT count(*) FILTER (WHERE keep), count(*) FILTER (WHERE NOT keep),
        count(*) FILTER (WHERE keep <> EXISTS (SELECT FROM parts p WHERE p.part = b.part))
        FROM before_retention b}),
	'5|3|0',
	'retention: dropped the 3 partitions that end 2 days or more below the newest ID, kept the 5 others (today to today + 4)'
);
is( sql(q{SELECT min(snowid_timestamp(lo))
             = date_trunc('day', snowid_timestamp((SELECT max(id) FROM events))
                                 - interval '2 days')
        FROM parts}),
	't', 'the oldest day kept is the day 2 days before the newest row');
is( sql(q{SELECT string_agg(what, ',' ORDER BY id) FROM events}),
	join(',',
		grep { $_ ne 'day -3' && $_ ne 'day -2' && $_ ne 'day -1' }
		  split /,/, $rows_before),
	'the rows of the dropped days are gone, the others kept');

# The README's recipe ("Partitioning by the time inside the ID", the blocks
# marked partman), run as written, in order, in a database of its own: it
# makes its day partitions, four ahead, and keeps thirty days.
my @readme = split /\n/, slurp_file("$FindBin::RealBin/../../README.md");
my @recipe;
for my $i (0 .. $#readme - 1)
{
	next unless $readme[$i] =~ /^<!--\s*readme-examples:\s*partman\s*-->/;
	die "README.md line " . ($i + 2) . ": a partman marker must precede ```sql"
	  unless $readme[ $i + 1 ] =~ /^```sql\s*$/;
	my ($j, @body) = ($i + 2);
	push @body, $readme[ $j++ ] while $readme[$j] !~ /^```\s*$/;
	push @recipe, [ $i + 2, join("\n", @body) . "\n" ];
}
is(scalar(@recipe), 2, 'the README has the two blocks of the pg_partman recipe');
$node->safe_psql('postgres', 'CREATE DATABASE readme');
$node->safe_psql('readme', 'CREATE EXTENSION snowid');
for my $b (@recipe)
{
	my ($ret, $out, $err) = $node->psql('readme', $b->[1],
		extra_params => [ '-v', 'ON_ERROR_STOP=1' ]);
	is($ret, 0, "README.md line $b->[0] runs as written") or diag($err);
}
is( $node->safe_psql('readme', q{
	INSERT INTO page_views (path) VALUES ('/'), ('/about');
	SELECT (SELECT count(*) FROM partman.show_partitions('public.page_views')),
	       (SELECT count(*) FROM ONLY page_views_default),
	       (SELECT retention FROM partman.part_config
	         WHERE parent_table = 'public.page_views')::bigint = snowid_interval('30 days')}),
	'5|0|t',
	"the README's recipe: today's partition and four ahead, no row in the default, thirty days kept");

$node->stop;
done_testing();
