
# Copyright (c) snowid contributors
#
# README.md's "With logical replication (active-active)" section, run as
# written on the mesh it describes: three servers that take their node IDs
# from a registry (a fourth, small server, with the pool the section names)
# and replicate to each other.  The ```sql blocks marked
#
#   <!-- readme-examples: mesh -->
#
# run in order on every server, in a database shop, with psql and
# ON_ERROR_STOP; the subscription block runs on each server once per other
# server, with only the names changed: a_from_b becomes <server>_from_<other>
# and host=b.example.com the other's socket and port.  Then the section's
# promises: every server holds the three rows, each made on its own node
# with a ticket value of its own pool range, no key twice; and the guards
# it describes: a publication that carries snowid's tables (FOR ALL
# TABLES, or one added by name) gets a WARNING naming them, the section's
# FOR TABLE publication none; on a FOR ALL TABLES publication, a ticket
# created on two servers reaches the other as a row of snowid_ticket,
# which is skipped with a WARNING naming the table, while the
# application's row of the same transaction arrives.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

my $pg_config = $ENV{PG_CONFIG} // 'pg_config';
my ($major) = `"$pg_config" --version` =~ /PostgreSQL (\d+)/;
plan skip_all => "could not run $pg_config --version" unless defined $major;
plan skip_all =>
  "bidirectional logical replication needs CREATE SUBSCRIPTION ... WITH (origin = none), new in PostgreSQL 16; this is PostgreSQL $major"
  if $major < 16;

# ---- the README's blocks ----

my @lines = split /\n/, slurp_file("$FindBin::RealBin/../../README.md");
my @blocks;
for (my $i = 0; $i <= $#lines; $i++)
{
	next unless $lines[$i] =~ /^<!--\s*readme-examples:\s*mesh\s*-->/;
	die "README.md line " . ($i + 2) . ": a mesh marker must precede ```sql"
	  unless ($lines[ $i + 1 ] // '') =~ /^```sql\s*$/;
	my ($start, @body) = ($i + 3);
	for ($i += 2; $i <= $#lines && $lines[$i] !~ /^```\s*$/; $i++)
	{
		push @body, $lines[$i];
	}
	push @blocks, [ $start, join("\n", @body) . "\n" ];
}
is(scalar(@blocks), 3, 'README.md has the mesh section\'s three blocks');
my @subscription = grep { $_->[1] =~ /CREATE SUBSCRIPTION/ } @blocks;
is(scalar(@subscription), 1, 'one of them creates the subscription');
like($subscription[0][1], qr/\ba_from_b\b.*host=b\.example\.com/s,
	'the subscription block is written on a, to b (the names this test replaces)');

# ---- the registry, and the servers ----

my $registry = PostgreSQL::Test::Cluster->new('registry');
$registry->init;
# (from 2.0 a registry's server preloads snowid: its processes apply calls)
$registry->append_conf('postgresql.conf', "shared_preload_libraries = 'snowid'\n");
$registry->start;
$registry->safe_psql('postgres', 'CREATE DATABASE ids');
$registry->safe_psql(
	'ids', q{
CREATE SCHEMA snowid;
CREATE EXTENSION snowid SCHEMA snowid;
CREATE ROLE snowid_members;
GRANT USAGE ON SCHEMA snowid TO snowid_members;
GRANT EXECUTE ON FUNCTION snowid.snowid_registry_claim, snowid.snowid_registry_release,
  snowid.snowid_pool_grant, snowid.snowid_pool_report, snowid.snowid_pool_return
  TO snowid_members;
CREATE ROLE member_a LOGIN IN ROLE snowid_members;
CREATE ROLE member_b LOGIN IN ROLE snowid_members;
CREATE ROLE member_c LOGIN IN ROLE snowid_members;
SELECT snowid.snowid_pool_create('orders', 'integer');
});

my @names = qw(a b c);
my %server;
for my $name (@names)
{
	my $conninfo =
		'host=' . $registry->host
	  . ' port=' . $registry->port
	  . " dbname=ids user=member_$name";
	$server{$name} = snowid_node(
		"mesh_$name", undef, qq{
snowid.registry = '$conninfo'
wal_level = logical
max_wal_senders = 10
max_replication_slots = 10
max_logical_replication_workers = 6
max_worker_processes = 16
});
	$server{$name}->start;
	$server{$name}->safe_psql('postgres', 'CREATE DATABASE shop');
}

# Run a block on a server; dies with psql's message if it fails.
sub run_block
{
	my ($name, $block, $sql) = @_;
	my ($ret, $out, $err) = $server{$name}->psql('shop', $sql,
		extra_params => [ '-v', 'ON_ERROR_STOP=1' ]);
	is($ret, 0, "README.md line $block->[0] runs on server " . uc($name))
	  or diag("psql said:\n$err\nthe block:\n$sql");
	unlike($err, qr/publishes snowid's own tables/,
		"README.md line $block->[0] on server " . uc($name) . ': no publication of snowid\'s tables to warn about')
	  if $sql =~ /CREATE PUBLICATION/;
	return $out;
}

# ---- the section, as written ----

my @made;
for my $block (@blocks)
{
	for my $name (@names)
	{
		if ($block->[1] =~ /CREATE SUBSCRIPTION/)
		{
			for my $other (grep { $_ ne $name } @names)
			{
				my $sql = $block->[1];
				my $o = $server{$other};
				$sql =~ s/\ba_from_b\b/${name}_from_$other/g;
				$sql =~ s/host=b\.example\.com/'host=' . $o->host . ' port=' . $o->port/ge;
				run_block($name, $block, $sql);
			}
			next;
		}
		if ($block->[1] =~ /INSERT INTO orders/)
		{
			ok(wait_registry_state($server{$name}, 'ok', 'shop'),
				'server ' . uc($name) . ' holds a node granted by the registry');
		}
		run_block($name, $block, $block->[1]);
	}
	if ($block->[1] =~ /CREATE SUBSCRIPTION/)
	{
		for my $name (@names)
		{
			$server{$name}->poll_query_until('shop',
				"SELECT count(DISTINCT subid) = 2 FROM pg_stat_subscription WHERE pid IS NOT NULL AND relid IS NULL"
			) or die "the apply workers of server $name are not all running";
		}
	}
}

# ---- what the section promises ----

for my $pub (@names)
{
	$server{$pub}->wait_for_catchup("${_}_from_$pub") for grep { $_ ne $pub } @names;
}
my %node = map {
	$_ => $server{$_}->safe_psql('shop', 'SELECT node_id FROM snowid_registry_status()')
} @names;
my $want = join ',', sort { $a <=> $b } values %node;
for my $name (@names)
{
	is( $server{$name}->safe_psql('shop',
			q{SELECT count(*) || ' rows, ' || count(DISTINCT id) || ' ids, ' || count(DISTINCT no) || ' numbers, nodes ' || string_agg(snowid_node(id)::text, ',' ORDER BY snowid_node(id)) FROM orders}),
		"3 rows, 3 ids, 3 numbers, nodes $want",
		'server ' . uc($name) . ' holds the row made on each server, each under the node of the server that made it, no key twice');
}
my $ranges = $registry->safe_psql('ids',
	q{SELECT string_agg(node_id || ':' || first_value || '-' || last_value, ' ') FROM snowid.snowid_pool_ranges WHERE pool = 'orders'});
my @outside;
for my $name (@names)
{
	my ($no) = $server{$name}->safe_psql('shop',
		"SELECT no FROM orders WHERE snowid_node(id) = $node{$name}");
	push @outside, "$name:$no"
	  unless grep { /^(\d+):(\d+)-(\d+)$/ && $1 == $node{$name} && $no >= $2 && $no <= $3 }
	  split / /, $ranges;
}
is("@outside", '', "each row's ticket value lies in a pool range of the server that made it ($ranges)");

# The guard: FOR ALL TABLES in a database of its own, B subscribing to A.
my $warned = qr/WARNING:  publication "(\w+)" publishes snowid's own tables\nDETAIL:  Tables ([^\n]*?) hold the state of this server/;
for my $name (qw(a b))
{
	$server{$name}->safe_psql('postgres', 'CREATE DATABASE allpub');
	$server{$name}->safe_psql(
		'allpub', q{
CREATE EXTENSION snowid;
CREATE TABLE notes (id bigint PRIMARY KEY DEFAULT snowid_next(), note text);
});
	my ($ret, $out, $err) = $server{$name}->psql('allpub',
		'CREATE PUBLICATION everything FOR ALL TABLES');
	my @w = $err =~ $warned;
	is( "$ret @w",
		'0 everything public.snowid_counter, public.snowid_counter_key, public.snowid_pool, public.snowid_pool_range, public.snowid_registry_installed, public.snowid_registry_node, public.snowid_registry_role, public.snowid_registry_settings, public.snowid_ticket',
		'CREATE PUBLICATION ... FOR ALL TABLES on ' . uc($name) . ' warns that it publishes snowid\'s tables, naming them')
	  or diag $err;
}
my ($ret, $out, $err) = $server{a}->psql('allpub',
	'CREATE PUBLICATION app_notes FOR TABLE notes');
is("$ret $err", '0 ', 'CREATE PUBLICATION ... FOR TABLE of an application\'s table: no warning');
($ret, $out, $err) = $server{a}->psql('allpub',
	'ALTER PUBLICATION app_notes ADD TABLE snowid_ticket');
is(join(' ', $ret, $err =~ $warned), '0 app_notes public.snowid_ticket',
	'ALTER PUBLICATION ... ADD TABLE snowid_ticket warns');
$server{b}->safe_psql('allpub',
	q{SELECT snowid_ticket_create('public.invoice_no', shard => 1, shards => 8)});
$server{b}->safe_psql('allpub',
	    q{CREATE SUBSCRIPTION b_all CONNECTION '}
	  . 'host=' . $server{a}->host . ' port=' . $server{a}->port . ' dbname=allpub'
	  . q{' PUBLICATION everything WITH (origin = none, copy_data = false)});
$server{b}->poll_query_until('allpub',
	"SELECT count(*) = 1 FROM pg_stat_subscription WHERE subname = 'b_all' AND pid IS NOT NULL AND relid IS NULL")
  or die "the apply worker of b_all is not running";
my $pos = -s $server{b}->logfile;
$server{a}->safe_psql('allpub',
	q{BEGIN;
SELECT snowid_ticket_create('public.invoice_no', shard => 0, shards => 8);
INSERT INTO notes (note) VALUES ('with the ticket');
COMMIT;});
ok( $server{b}->poll_query_until('allpub',
		q{SELECT count(*) = 1 FROM notes WHERE note = 'with the ticket'}),
	'FOR ALL TABLES: the application\'s row of the transaction that created a ticket on A reaches B');
like(
	slurp_file($server{b}->logfile, $pos),
	qr/WARNING:  skipping a change to snowid table "public\.snowid_ticket" that arrived by logical replication/,
	'B skips the row of snowid_ticket with a WARNING naming the table (snowid_local_only)');
is( $server{b}->safe_psql('allpub',
		q{SELECT shard || ' of ' || shards FROM snowid_ticket WHERE seqrelid = 'public.invoice_no'::regclass}),
	'1 of 8', 'B\'s ticket keeps its own stripe');

done_testing();
