# Copyright (c) snowid contributors
#
# snowid on Citus: a coordinator (node ID 1) and two workers (2 and 3).
# CREATE, ALTER and DROP EXTENSION snowid on the coordinator reach the
# workers.  A table distributed by its ID column, one distributed by another
# column and a reference table, all with `id bigint DEFAULT snowid_next()`,
# take rows by every insert path from the coordinator and from each worker;
# the node ID in each row's ID says where Citus evaluated the default:
#
#   single-row INSERT, multi-row VALUES, COPY, INSERT ... SELECT from a
#   function: on the node the statement was sent to (coordinator or worker);
#   INSERT ... SELECT from a distributed table: on the worker holding the
#   source row's shard, whichever node the statement was sent to;
#   ALTER TABLE ... ADD COLUMN ... DEFAULT (coordinator only: workers refuse
#   DDL): on each placement's own node -- a distributed table's rows carry
#   their shard's worker, and a reference table's replicas get DIFFERENT
#   IDs for the same row (one per node), which the README must warn about.
#
# Then inserts through all three nodes at once, a shard move between the
# workers and a worker added later (node ID 4): never a duplicate, and each
# row carries the node ID of the node that evaluated its default.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;
use SnowidCitus;

citus_skip_unless_available();
skip_without_released(q{2.0});

my $started = time;
my $c = citus_cluster(workers => 2);
my $coord = $c->{coordinator};
my %node = (coord => $coord, w1 => $c->{workers}[0], w2 => $c->{workers}[1]);
my %node_id = (coord => 1, w1 => 2, w2 => 3);
my @origins = qw(coord w1 w2);
note sprintf 'cluster up in %.1f s', time - $started;

# The extension's version on each node ('none' where it is not installed).
sub versions
{
	return join ' ', map {
		my $v = $node{$_}->safe_psql('postgres',
			q{SELECT coalesce((SELECT extversion FROM pg_extension WHERE extname = 'snowid'), 'none')});
		"$_=$v"
	} @_;
}

# ---- CREATE, ALTER ... UPDATE and DROP EXTENSION on the coordinator reach
# the workers.
# The version before the current one is created, then updated to the
# current one (snowid.control's default_version), the newest upgrade script.
my $current = $coord->safe_psql('postgres',
	q{SELECT default_version FROM pg_available_extensions WHERE name = 'snowid'});
my $previous = $coord->safe_psql('postgres',
	qq{SELECT max(source) FROM pg_extension_update_paths('snowid')
	    WHERE target = '$current' AND path = source || '--' || target});
$coord->safe_psql('postgres', qq{CREATE EXTENSION snowid VERSION '$previous'});
is(versions(@origins), "coord=$previous w1=$previous w2=$previous",
	"CREATE EXTENSION snowid VERSION $previous on the coordinator reaches the workers");
$coord->safe_psql('postgres', qq{ALTER EXTENSION snowid UPDATE TO '$current'});
is(versions(@origins), "coord=$current w1=$current w2=$current",
	"ALTER EXTENSION snowid UPDATE TO $current on the coordinator reaches the workers");
$coord->safe_psql('postgres', q{DROP EXTENSION snowid});
is(versions(@origins), 'coord=none w1=none w2=none',
	'DROP EXTENSION snowid on the coordinator reaches the workers');
$coord->safe_psql('postgres', q{CREATE EXTENSION snowid});
is(versions(@origins), "coord=$current w1=$current w2=$current",
	'CREATE EXTENSION snowid (default version) reaches the workers');
is( join(' ', map { $node{$_}->safe_psql('postgres', 'SELECT snowid_node(snowid_next())') } @origins),
	'1 2 3', 'each node generates with its own node ID');

# ---- The tables: by_id distributed by its ID, by_k by another column (k),
# ref a reference table, src (by k, colocated with by_k) a source for
# INSERT ... SELECT from a distributed table.  Every row says how it came
# (path) and through which node (origin).
$coord->safe_psql(
	'postgres', q{
CREATE TABLE by_id(id bigint PRIMARY KEY DEFAULT snowid_next(), k int, path text, origin text);
SELECT create_distributed_table('by_id', 'id');
CREATE TABLE by_k(id bigint DEFAULT snowid_next(), k int, path text, origin text, PRIMARY KEY (k, id));
SELECT create_distributed_table('by_k', 'k');
CREATE TABLE ref(id bigint PRIMARY KEY DEFAULT snowid_next(), k int, path text, origin text);
SELECT create_reference_table('ref');
CREATE TABLE src(k int, n int);
SELECT create_distributed_table('src', 'k', colocate_with => 'by_k');
INSERT INTO src SELECT g % 40, g FROM generate_series(1, 200) g;
});
my @tables = qw(by_id by_k ref);
my $rows = 500;    # per path, table and origin (src gives 200)

# Every insert path but ADD COLUMN, into $table through $origin, each row
# marked with $tag (the path's name, suffixed).
sub insert_paths
{
	my ($origin, $table, $suffix) = @_;
	my $n = $node{$origin};
	$suffix //= '';
	$n->safe_psql('postgres',
		join '',
		map { "INSERT INTO $table(k, path, origin) VALUES ($_, 'single$suffix', '$origin');\n" }
		  1 .. 20);
	$n->safe_psql('postgres',
		"INSERT INTO $table(k, path, origin) VALUES "
		  . join(', ', map { "($_, 'multi$suffix', '$origin')" } 1 .. $rows));
	$n->safe_psql('postgres',
		"COPY $table(k, path, origin) FROM STDIN;\n"
		  . join('', map { "$_\tcopy$suffix\t$origin\n" } 1 .. $rows)
		  . "\\.\n");
	$n->safe_psql('postgres',
		"INSERT INTO $table(k, path, origin) SELECT g, 'function$suffix', '$origin' FROM generate_series(1, $rows) g"
	);
	$n->safe_psql('postgres',
		"INSERT INTO $table(k, path, origin) SELECT k, 'distributed$suffix', '$origin' FROM src");
	return;
}

# path|origin -> the node IDs its rows carry, as "1" or "2,3".
sub node_ids_by_path
{
	my ($table, $where) = @_;
	my %seen;
	for (
		split /\n/,
		$coord->safe_psql(
			'postgres',
			"SELECT path, origin, string_agg(DISTINCT snowid_node(id)::text, ',' ORDER BY snowid_node(id)::text), count(*) FROM $table "
			  . ($where // '')
			  . ' GROUP BY 1, 2 ORDER BY 1, 2'))
	{
		my ($path, $origin, $ids, $count) = split /\|/;
		$seen{"$path|$origin"} = $ids;
		note "  $table: $path through $origin: $count rows, node IDs $ids";
	}
	return \%seen;
}

# The number of duplicate IDs in a table (or a UNION ALL of tables).
sub duplicates
{
	my ($from) = @_;
	return $coord->safe_psql('postgres',
		"SELECT count(*) - count(DISTINCT id) FROM $from");
}

# For rows of a table colocated with src, inserted by INSERT ... SELECT
# from src: the rows whose node ID is not that of the worker holding their
# shard (the source row's shard, as the tables are colocated).
sub not_from_shard_worker
{
	my ($table, $path) = @_;
	my %id_of_port = map { $node{$_}->port => $node_id{$_} } keys %node;
	my %port_of_k = split /[|\n]/, $coord->safe_psql(
		'postgres', qq{
SELECT k, nodeport FROM generate_series(0, 39) k
	JOIN citus_shards s ON s.shardid = get_shard_id_for_distribution_column('$table', k)
		AND s.table_name = '$table'::regclass});
	my $bad = 0;
	for (split /\n/,
		$coord->safe_psql('postgres', "SELECT k, snowid_node(id) FROM $table WHERE path = '$path'"))
	{
		my ($k, $id) = split /\|/;
		$bad++ unless defined $port_of_k{$k} && $id == $id_of_port{ $port_of_k{$k} };
	}
	return $bad;
}

# The ordered contents of a reference table as read on one node (a node
# reads its own replica), as a digest.
sub replica_digest
{
	my ($n, $table, $cols) = @_;
	return $n->safe_psql('postgres',
		"SELECT count(*) || ':' || md5(coalesce(string_agg($cols, ',' ORDER BY $cols), '')) FROM $table");
}

# ---- Every path, from every node.
foreach my $origin (@origins)
{
	insert_paths($origin, $_) foreach @tables;
}

my %want_origin = map { $_ => 1 } qw(single multi copy function);
foreach my $table (@tables)
{
	my $seen = node_ids_by_path($table);
	foreach my $path (qw(single multi copy function distributed))
	{
		foreach my $origin (@origins)
		{
			my $want = $want_origin{$path} ? $node_id{$origin} : '2,3';
			is($seen->{"$path|$origin"}, $want,
				"$table, $path through $origin: node IDs $want ("
				  . ($want_origin{$path} ? 'the node it was sent to' : 'the workers') . ')');
		}
	}
	is(duplicates($table), '0', "$table: no duplicate ID");
}
is(not_from_shard_worker('by_k', 'distributed'), 0,
	'by_k, INSERT ... SELECT from src: each row carries the node ID of the worker holding its shard');
is(join(' ', map { replica_digest($node{$_}, 'ref', 'id::text') } qw(w1 w2)),
	join(' ', (replica_digest($coord, 'ref', 'id::text')) x 2),
	'ref: every replica holds the same IDs');

# ---- ALTER TABLE ... ADD COLUMN ... DEFAULT snowid_next() on tables with
# rows: refused on the workers (Citus takes DDL on the coordinator only),
# evaluated on each placement's node when sent to the coordinator.
$coord->safe_psql(
	'postgres', qq{
CREATE TABLE addcol(k int);
SELECT create_distributed_table('addcol', 'k', colocate_with => 'by_k');
INSERT INTO addcol SELECT g % 40 FROM generate_series(1, $rows) g;
CREATE TABLE addcol_ref(k int);
SELECT create_reference_table('addcol_ref');
INSERT INTO addcol_ref SELECT g FROM generate_series(1, $rows) g;
});
foreach my $origin (qw(w1 w2))
{
	my ($ret, $out, $err) = $node{$origin}->psql('postgres',
		'ALTER TABLE addcol ADD COLUMN id bigint DEFAULT snowid_next()');
	like($err, qr/operation is not allowed on this node/,
		"ADD COLUMN ... DEFAULT snowid_next() through $origin: refused (DDL goes through the coordinator)");
}
$coord->safe_psql('postgres',
	'ALTER TABLE addcol ADD COLUMN id bigint DEFAULT snowid_next(), ADD COLUMN path text DEFAULT $$addcol$$');
is( $coord->safe_psql('postgres', q{SELECT string_agg(DISTINCT snowid_node(id)::text, ',' ORDER BY snowid_node(id)::text) FROM addcol}),
	'2,3', 'distributed table, ADD COLUMN through the coordinator: node IDs 2,3 (the workers)');
is(not_from_shard_worker('addcol', 'addcol'), 0,
	'distributed table, ADD COLUMN: each row carries the node ID of the worker holding its shard');
is(duplicates('addcol'), '0', 'distributed table, ADD COLUMN: no duplicate ID');
$coord->safe_psql('postgres',
	'ALTER TABLE addcol_ref ADD COLUMN id bigint DEFAULT snowid_next()');
my %ref_nodes = map {
	$_ => $node{$_}->safe_psql('postgres',
		q{SELECT string_agg(DISTINCT snowid_node(id)::text, ',') FROM addcol_ref})
} @origins;
note "reference table, ADD COLUMN: node IDs read on each node: "
  . join(' ', map { "$_=$ref_nodes{$_}" } @origins);
is(join(' ', map { $ref_nodes{$_} } @origins), '1 2 3',
	'reference table, ADD COLUMN through the coordinator: each replica evaluates the default itself (its own node ID)');
isnt(replica_digest($node{w1}, 'addcol_ref', 'k || $$=$$ || id'),
	replica_digest($coord, 'addcol_ref', 'k || $$=$$ || id'),
	'reference table, ADD COLUMN: so the replicas hold different IDs for the same row (the hazard the README names)');

# ---- Concurrently through the coordinator and both workers.
my $bench_secs = 3;
my %runs;
foreach my $origin (@origins)
{
	$runs{$origin} = start_pgbench(
		$node{$origin}, "bench_$origin", 2, $bench_secs, qq{
\\set k random(0, 999)
INSERT INTO by_k(k, path, origin) VALUES (:k, 'bench', '$origin');
INSERT INTO by_id(k, path, origin) VALUES (:k, 'bench', '$origin');
INSERT INTO by_k(k, path, origin) VALUES (:k, 'bench', '$origin'), (:k + 1, 'bench', '$origin');
INSERT INTO ref(k, path, origin) VALUES (:k, 'bench', '$origin');});
}
my $processed = 0;
foreach my $origin (@origins)
{
	my $run = $runs{$origin};
	my $ok = $run->{handle}->finish;
	ok($ok, "pgbench through $origin finished without an error")
	  or diag("pgbench through $origin: exit $?, stderr: $run->{err}");
	my $n = pgbench_processed($run);
	ok(defined $n && $n > 0, "pgbench through $origin: transactions done")
	  or diag($run->{out});
	note "pgbench through $origin: " . ($n // 'no') . ' transactions';
	is( $coord->safe_psql('postgres', "SELECT count(*) FROM by_id WHERE path = 'bench' AND origin = '$origin'"),
		$n // -1, "by_id: one row per transaction through $origin");
	$processed += $n // 0;
}
foreach my $table (@tables)
{
	my $seen = node_ids_by_path($table, q{WHERE path = 'bench'});
	is( join(' ', map { $seen->{"bench|$_"} // 'none' } @origins),
		'1 2 3', "$table, concurrent inserts: each node's rows carry its own node ID");
}
my $all = 'by_id UNION ALL SELECT id FROM by_k UNION ALL SELECT id FROM ref UNION ALL SELECT id FROM addcol';
my $total = $coord->safe_psql('postgres', "SELECT count(*) FROM (SELECT id FROM $all) a");
note "after the concurrent inserts ($processed transactions, 5 rows each): $total rows in all tables";
is(duplicates("(SELECT id FROM $all) a"), '0', 'no duplicate ID over all tables after the concurrent inserts');

# ---- A shard of by_k (with src and addcol, colocated) moves from worker 1
# to worker 2; inserts keep working.
my ($p1, $p2) = ($node{w1}->port, $node{w2}->port);
my $shard = $coord->safe_psql('postgres',
	"SELECT min(shardid) FROM citus_shards WHERE table_name = 'by_k'::regclass AND nodeport = $p1");
my $before = $coord->safe_psql('postgres', 'SELECT count(*) FROM by_k');
$coord->safe_psql('postgres',
	"SELECT citus_move_shard_placement($shard, '127.0.0.1', $p1, '127.0.0.1', $p2, shard_transfer_mode => 'block_writes')"
);
is( $coord->safe_psql('postgres', "SELECT nodeport FROM citus_shards WHERE shardid = $shard"),
	$p2, "shard $shard of by_k moved from worker 1 to worker 2");
is($coord->safe_psql('postgres', 'SELECT count(*) FROM by_k'),
	$before, 'by_k: no row lost or added by the move');
insert_paths($_, 'by_k', '_moved') foreach @origins;
my $seen = node_ids_by_path('by_k', q{WHERE path LIKE '%\_moved'});
is( join(' ', map { my $o = $_; map { $seen->{"${_}_moved|$o"} // 'none' } qw(single multi copy function) } @origins),
	join(' ', map { ($node_id{$_}) x 4 } @origins),
	'by_k after the move: single, multi, COPY and INSERT ... SELECT from a function carry the node they were sent to');
is(not_from_shard_worker('by_k', 'distributed_moved'), 0,
	'by_k after the move: INSERT ... SELECT from src carries the node ID of the worker now holding each shard');
is(duplicates('by_k'), '0', 'by_k after the move: no duplicate ID');

# ---- A third worker (node ID 4) added later: snowid is there, and inserts
# through it work.
my $w3 = citus_add_worker($c);
$node{w3} = $w3;
$node_id{w3} = 4;
is(versions('w3'), "w3=$current", 'a worker added later has snowid (propagated by citus_add_node)');
is(replica_digest($w3, 'ref', 'id::text'), replica_digest($coord, 'ref', 'id::text'),
	'ref: the new worker\'s replica holds the same IDs');
insert_paths('w3', $_, '_w3') foreach @tables;
foreach my $table (@tables)
{
	my $seen = node_ids_by_path($table, q{WHERE origin = 'w3'});
	is( join(' ', map { $seen->{"${_}_w3|w3"} // 'none' } qw(single multi copy function distributed)),
		'4 4 4 4 2,3',
		"$table through the new worker: its own node ID 4, INSERT ... SELECT from src the shards' workers");
}
# A shard moved onto it: INSERT ... SELECT from src evaluates there too.
my $p3 = $w3->port;
$shard = $coord->safe_psql('postgres',
	"SELECT min(shardid) FROM citus_shards WHERE table_name = 'by_k'::regclass AND nodeport = $p2");
$coord->safe_psql('postgres',
	"SELECT citus_move_shard_placement($shard, '127.0.0.1', $p2, '127.0.0.1', $p3, shard_transfer_mode => 'block_writes')"
);
$coord->safe_psql('postgres',
	q{INSERT INTO by_k(k, path, origin) SELECT k, 'distributed_new', 'coord' FROM src});
is( $coord->safe_psql('postgres', q{SELECT string_agg(DISTINCT snowid_node(id)::text, ',' ORDER BY snowid_node(id)::text) FROM by_k WHERE path = 'distributed_new'}),
	'2,3,4', 'INSERT ... SELECT from src with a shard on the new worker: node IDs 2,3,4');
is(not_from_shard_worker('by_k', 'distributed_new'), 0,
	'... each row carrying the node ID of the worker holding its shard');
$total = $coord->safe_psql('postgres', "SELECT count(*) FROM (SELECT id FROM $all) a");
note "at the end: $total rows in by_id, by_k, ref and addcol";
is(duplicates("(SELECT id FROM $all) a"), '0', 'no duplicate ID over all tables at the end');

note sprintf 'done in %.1f s', time - $started;
done_testing();
