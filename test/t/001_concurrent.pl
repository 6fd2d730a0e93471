
# Copyright (c) snowid contributors
#
# Concurrent generation on one node: several pgbench clients call
# snowid_next() (and then snowid_next_batch()) at the same time and insert
# what they get into one table.  Every ID must be unique, carry this node's
# ID and a timestamp from the run, and the IDs each client received must
# strictly increase in the order it received them.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

my $clients = 4;
my $txns_per_client = 750;
my $rows_per_txn = 100;
my $rows = $clients * $txns_per_client * $rows_per_txn;    # 300,000

my $batch_clients = 2;
my $batch_txns_per_client = 10;
my $batch_size = 5000;
my $batch_rows = $batch_clients * $batch_txns_per_client * $batch_size;  # 100,000

my $node = snowid_node('concurrent', 1);
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION snowid;
CREATE TABLE ids(seq bigserial, client int, id bigint NOT NULL UNIQUE);
});

# Wall-clock bounds of the run, read from the server's clock.
my $t_start = $node->safe_psql('postgres', 'SELECT clock_timestamp()');

# Single IDs: $clients clients, each transaction takes $rows_per_txn IDs.
$node->pgbench(
	"-n -c $clients -j 2 -t $txns_per_client",
	0,
	[
		qr{number of transactions actually processed: \d+/\d+},
		qr{processed: @{[ $clients * $txns_per_client ]}/@{[ $clients * $txns_per_client ]}}
	],
	[qr{^$}],
	'pgbench: concurrent snowid_next()',
	{
		'001_snowid_next.sql' =>
		  "INSERT INTO ids(client, id) SELECT :client_id, snowid_next() FROM generate_series(1, $rows_per_txn);\n"
	});

my $t_end = $node->safe_psql('postgres', 'SELECT clock_timestamp()');

is($node->safe_psql('postgres', 'SELECT count(*) FROM ids'),
	$rows, "all $rows rows inserted");

is($node->safe_psql('postgres', 'SELECT count(DISTINCT id) FROM ids'),
	$rows, 'every ID is distinct');

is( $node->safe_psql(
		'postgres',
		q{SELECT string_agg(client || ':' || n, ',' ORDER BY client)
		  FROM (SELECT client, count(*) AS n FROM ids GROUP BY client) s}),
	join(',',
		map { "$_:" . ($txns_per_client * $rows_per_txn) }
		  0 .. $clients - 1),
	'each client inserted its share');

# Per client, in the order it received them (seq), IDs strictly increase.
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) FROM (
			SELECT id, lag(id) OVER (PARTITION BY client ORDER BY seq) AS prev
			FROM ids) s
		  WHERE id <= prev}),
	'0',
	'IDs strictly increase per client in issue order');

is($node->safe_psql('postgres', 'SELECT count(*) FROM ids WHERE snowid_node(id) <> 1'),
	'0', 'every ID carries node 1');

is( $node->safe_psql(
		'postgres',
		qq{SELECT count(*) FROM ids
		   WHERE snowid_timestamp(id) < '$t_start'::timestamptz - interval '1 second'
		      OR snowid_timestamp(id) > '$t_end'::timestamptz + interval '1 second'}
	),
	'0',
	'every ID carries a timestamp from the run (within 1 s)');

is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) FROM ids
		  WHERE snowid_timestamp(id) > clock_timestamp()
		     OR snowid_timestamp(id) < clock_timestamp() - interval '5 minutes'}),
	'0',
	'no ID timestamp is in the future or long past');

# Nothing but pgbench issued IDs so far: the statistics must account for
# all of them, and the last ID issued is the largest one stored.
is( $node->safe_psql(
		'postgres',
		qq{SELECT s.ids_issued >= $rows, s.last_id = (SELECT max(id) FROM ids)
		   FROM snowid_stats() s}),
	't|t',
	'snowid_stats(): ids_issued covers every row and last_id is the largest ID');

# Batches: $batch_clients clients each take $batch_size IDs at once, into the
# same table (clients 100, 101).
$node->pgbench(
	"-n -c $batch_clients -j 2 -t $batch_txns_per_client",
	0,
	[
		qr{processed: @{[ $batch_clients * $batch_txns_per_client ]}/@{[ $batch_clients * $batch_txns_per_client ]}}
	],
	[qr{^$}],
	'pgbench: concurrent snowid_next_batch()',
	{
		'001_snowid_next_batch.sql' =>
		  "INSERT INTO ids(client, id) SELECT 100 + :client_id, b FROM snowid_next_batch($batch_size) AS b;\n"
	});

is($node->safe_psql('postgres', 'SELECT count(*) FROM ids WHERE client >= 100'),
	$batch_rows, "all $batch_rows batch rows inserted");

is( $node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM ids'),
	($rows + $batch_rows) . '|' . ($rows + $batch_rows),
	'batch IDs are distinct, also from the single IDs');

is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) FROM (
			SELECT id, lag(id) OVER (PARTITION BY client ORDER BY seq) AS prev
			FROM ids WHERE client >= 100) s
		  WHERE id <= prev}),
	'0',
	'batch IDs strictly increase per client in issue order');

is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) FROM ids WHERE client >= 100
		  AND id <= (SELECT max(id) FROM ids WHERE client < 100)}),
	'0',
	'batch IDs are all above the IDs issued before them');

is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) FROM ids WHERE client >= 100 AND snowid_node(id) <> 1}),
	'0',
	'every batch ID carries node 1');

is( $node->safe_psql(
		'postgres',
		qq{SELECT s.ids_issued >= @{[ $rows + $batch_rows ]},
		          s.last_id = (SELECT max(id) FROM ids)
		   FROM snowid_stats() s}),
	't|t',
	'snowid_stats() after batches');

$node->stop;

done_testing();
