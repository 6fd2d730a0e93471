# A Citus cluster of snowid servers for snowid's TAP tests: a coordinator
# and workers on 127.0.0.1, each its own PostgreSQL::Test::Cluster node.
#
#   use SnowidCitus;
#   citus_skip_unless_available();         # plan skip_all, with the reason, where Citus cannot run
#   my $c = citus_cluster(workers => 2);   # started, Citus set up, nodes added
#   $c->{coordinator}                      # the coordinator's node
#   @{ $c->{workers} }                     # the workers' nodes, in the order added
#   citus_nodes($c)                        # the coordinator, then the workers
#   $c->{node_id}{ $node->name }           # the snowid.node_id configured there (undef: none)
#   my $w = citus_add_worker($c, %opts);   # one more worker, started and added
#
# citus_skip_unless_available() skips the file when test/run-tests.sh set
# SNOWID_CITUS_SKIP (its value is the reason: no Citus tarball, or a major
# Citus does not support) or when citus.so is not in `pg_config --pkglibdir`
# (test/citus-build.sh installs it).
#
# citus_cluster(%opts) options:
#   workers => N           workers besides the coordinator (default 2)
#   node_ids => [c, w1, ...]  snowid.node_id of the coordinator and of each
#                          worker; an undef entry configures none (for a
#                          registry to assign).  Default: 1 for the
#                          coordinator, 2, 3, ... for the workers.
#   name => 'citus'        prefix of the node names (coordinator: <name>_coord,
#                          workers: <name>_w1, <name>_w2, ...)
#   extra => '...'         postgresql.conf lines for every node (also for
#                          workers added later)
#   coordinator_extra => '...'  postgresql.conf lines for the coordinator only
#   shard_count => 4       citus.shard_count (few shards: fast to create)
#   snowid => 1            CREATE EXTENSION snowid on the coordinator once the
#                          workers are added (Citus propagates it); default 0
#
# citus_add_worker($c, %opts) options: node_id => N (undef: none; default
# one more than the largest configured so far), name => (default
# <name>_w<k>), extra => '...' (for this worker, after the cluster's).  It
# starts the server, creates the citus extension there and adds it from the
# coordinator with citus_add_node, which copies Citus's metadata and the
# propagated extensions (snowid included, if created) to it, then copies the
# reference tables there (replicate_reference_tables, writes blocked while
# it copies; without it, a shard move to the new worker is refused).
#
# Every node preloads 'citus,snowid' (Citus refuses to start unless it comes
# first), listens on 127.0.0.1 (Citus's nodes connect to each other over
# TCP; the tests' own connections use the Unix socket), runs with
# fsync = off and wal_level = logical (citus_move_shard_placement may copy
# shards by logical replication).
package SnowidCitus;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

our @EXPORT = qw(citus_skip_unless_available citus_cluster citus_add_worker
  citus_nodes);

# Why Citus cannot run here, or undef if it can.
sub citus_unavailable
{
	return $ENV{SNOWID_CITUS_SKIP}
	  if defined $ENV{SNOWID_CITUS_SKIP} && $ENV{SNOWID_CITUS_SKIP} ne '';
	my $pg_config = $ENV{PG_CONFIG} // 'pg_config';
	my $pkglibdir = `"$pg_config" --pkglibdir`;
	return "could not run $pg_config --pkglibdir" if $? != 0;
	chomp $pkglibdir;
	return
	  "citus.so is not in $pkglibdir (Citus is not installed into this PostgreSQL; test/citus-build.sh installs it)"
	  unless -f "$pkglibdir/citus.so";
	return undef;
}

sub citus_skip_unless_available
{
	my $why = citus_unavailable();
	plan skip_all => $why if defined $why;
	return;
}

# A node of the cluster, initialised and started, with the citus extension.
sub start_node
{
	my ($c, $name, $node_id, $extra) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf(
		'postgresql.conf', qq{
shared_preload_libraries = 'citus,snowid'
@{[ defined $node_id ? "snowid.node_id = $node_id" : '' ]}
listen_addresses = '127.0.0.1'
max_connections = 100
fsync = off
wal_level = logical
max_wal_senders = 10
max_replication_slots = 10
citus.shard_count = $c->{shard_count}
$c->{extra}
@{[ $extra // '' ]}
});
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION citus');
	$c->{node_id}{$name} = $node_id;
	return $node;
}

sub citus_cluster
{
	my (%opts) = @_;
	my $workers = $opts{workers} // 2;
	my $c = {
		name => $opts{name} // 'citus',
		extra => $opts{extra} // '',
		shard_count => $opts{shard_count} // 4,
		workers => [],
		node_id => {},
	};
	my @ids = $opts{node_ids} ? @{ $opts{node_ids} } : (1 .. $workers + 1);
	$c->{coordinator} = start_node($c, "$c->{name}_coord", $ids[0],
		$opts{coordinator_extra});
	$c->{coordinator}->safe_psql('postgres',
		"SELECT citus_set_coordinator_host('127.0.0.1', "
		  . $c->{coordinator}->port . ')');
	for my $k (1 .. $workers)
	{
		citus_add_worker($c, node_id => $ids[$k]);
	}
	$c->{coordinator}->safe_psql('postgres', 'CREATE EXTENSION snowid')
	  if $opts{snowid};
	return $c;
}

sub citus_add_worker
{
	my ($c, %opts) = @_;
	my $k = @{ $c->{workers} } + 1;
	my $node_id;
	if (exists $opts{node_id})
	{
		$node_id = $opts{node_id};
	}
	else
	{
		$node_id = 0;
		for (values %{ $c->{node_id} })
		{
			$node_id = $_ if defined $_ && $_ > $node_id;
		}
		$node_id++;
	}
	my $node = start_node($c, $opts{name} // "$c->{name}_w$k",
		$node_id, $opts{extra});
	$c->{coordinator}->safe_psql('postgres',
		"SELECT citus_add_node('127.0.0.1', " . $node->port . ')');
	$c->{coordinator}->safe_psql('postgres',
		q{SELECT replicate_reference_tables('block_writes')});
	push @{ $c->{workers} }, $node;
	return $node;
}

sub citus_nodes
{
	my ($c) = @_;
	return ($c->{coordinator}, @{ $c->{workers} });
}

1;
