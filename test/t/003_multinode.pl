
# Copyright (c) snowid contributors
#
# Three servers with node IDs 1, 2 and 3 generate IDs at the same time.
# Brought together, no ID repeats, and each carries the node ID of the
# server that issued it.

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;
use Time::HiRes qw(time);

my $per_node = 20_000;
my @node_ids = (1, 2, 3);
my $tmp = PostgreSQL::Test::Utils::tempdir;

my %nodes;
foreach my $id (@node_ids)
{
	my $node = snowid_node("node$id", $id);
	$node->start;
	$node->safe_psql(
		'postgres', q{
CREATE EXTENSION snowid;
CREATE TABLE ids(seq bigserial, id bigint NOT NULL);
});
	$nodes{$id} = $node;
}

# Generate on all three at once: one psql per node, each waiting for the
# same moment (a little after all have connected) before it starts.  Each
# takes its IDs in bursts of 100 with a 1 ms pause between them, so that the
# runs span a few hundred milliseconds and overlap even if one of them
# starts late.
my $go = time() + 3;
my $bursts = $per_node / 100;
my %runs;
foreach my $id (@node_ids)
{
	my $node = $nodes{$id};
	my ($out, $err) = ('', '');
	my @cmd = (
		'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1',
		'-d', $node->connstr('postgres'),
		'-c', "SELECT pg_sleep_until(to_timestamp($go))",
		'-c', qq{DO \$\$
BEGIN
	FOR i IN 1 .. $bursts LOOP
		INSERT INTO ids(id) SELECT snowid_next() FROM generate_series(1, 100);
		PERFORM pg_sleep(0.001);
	END LOOP;
END
\$\$});
	$runs{$id} = {
		err => \$err,
		handle => IPC::Run::start(
			\@cmd, '>', \$out, '2>', \$err,
			IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default))
	};
}
foreach my $id (@node_ids)
{
	my $run = $runs{$id};
	my $ok = $run->{handle}->finish;
	ok($ok, "node $id: generated $per_node IDs")
	  or diag("psql on node $id: exit $?, stderr: ${ $run->{err} }");
}

# Each node on its own: the right count, increasing in issue order.
foreach my $id (@node_ids)
{
	is( $nodes{$id}->safe_psql(
			'postgres',
			q{SELECT count(*), count(*) FILTER (WHERE id <= prev) FROM (
				SELECT id, lag(id) OVER (ORDER BY seq) AS prev FROM ids) s}),
		"$per_node|0",
		"node $id: $per_node IDs, strictly increasing");
}

# Bring them together on node 1 through files the servers read and write
# (the servers run as the same OS user as this test).
$nodes{1}->safe_psql('postgres',
	'CREATE TABLE all_ids(source int NOT NULL, id bigint NOT NULL)');
foreach my $id (@node_ids)
{
	my $file = "$tmp/ids_node$id.copy";
	$nodes{$id}
	  ->safe_psql('postgres', "COPY (SELECT $id, id FROM ids) TO '$file'");
	$nodes{1}->safe_psql('postgres', "COPY all_ids FROM '$file'");
}

is( $nodes{1}->safe_psql(
		'postgres', 'SELECT count(*), count(DISTINCT id) FROM all_ids'),
	(3 * $per_node) . '|' . (3 * $per_node),
	'all IDs of the three nodes are distinct');

is( $nodes{1}->safe_psql(
		'postgres',
		q{SELECT string_agg(source || ':' || n || ':' || wrong, ',' ORDER BY source)
		  FROM (SELECT source, count(*) AS n,
		               count(*) FILTER (WHERE snowid_node(id) <> source) AS wrong
		        FROM all_ids GROUP BY source) s}),
	join(',', map { "$_:$per_node:0" } @node_ids),
	'each ID carries the node ID of the server that issued it');

# The runs overlapped in time, so different nodes issued IDs with the same
# tick and sequence: only the node bits keep those apart.  Make sure that
# case was actually exercised.
my $shared = $nodes{1}->safe_psql(
	'postgres',
	q{SELECT count(*) FROM (
		SELECT snowid_timestamp(id), snowid_sequence(id) FROM all_ids
		GROUP BY 1, 2 HAVING count(DISTINCT source) > 1) s});
note("(tick, sequence) pairs issued by more than one node: $shared");
cmp_ok($shared, '>', 0, 'different nodes issued the same tick and sequence');

$nodes{$_}->stop foreach @node_ids;

done_testing();
