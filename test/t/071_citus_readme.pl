
# Copyright (c) snowid contributors
#
# README.md's "With Citus" section, run as written on the cluster it
# describes: a coordinator that hosts the registry and issues under
# snowid.node_id = 0, and workers with automatic node IDs, one registry
# login each.  The ```sql blocks marked
#
#   <!-- readme-examples: citus -->
#
# run on the coordinator, in order, with psql and ON_ERROR_STOP.  Then the
# promises of the section: every node holds a node ID of its own (the
# coordinator's is never granted to a worker), integer tickets and
# snowid_next() taken at once through the coordinator and both workers
# collide nowhere and carry the node that made them, and a worker added
# later gets a free node ID and, after the section's statement is run
# again, a ticket stripe of its own.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;
use SnowidCitus;

citus_skip_unless_available();

# ---- the README's blocks ----

my @lines = split /\n/, slurp_file("$FindBin::RealBin/../../README.md");
my @blocks;
for (my $i = 0; $i <= $#lines; $i++)
{
	next unless $lines[$i] =~ /^<!--\s*readme-examples:\s*citus\s*-->/;
	die "README.md line " . ($i + 2) . ": a citus marker must precede ```sql"
	  unless ($lines[ $i + 1 ] // '') =~ /^```sql\s*$/;
	my ($start, @body) = ($i + 3);
	for ($i += 2; $i <= $#lines && $lines[$i] !~ /^```\s*$/; $i++)
	{
		push @body, $lines[$i];
	}
	push @blocks, [ $start, join("\n", @body) . "\n" ];
}
cmp_ok(scalar(@blocks), '>=', 3,
	'README.md has Citus examples (' . scalar(@blocks) . ')');

# ---- the cluster ----

my $c = citus_cluster(workers => 0, node_ids => [0], name => 'readme');
my $coord = $c->{coordinator};
my $registry = sub {
	my ($login) = @_;
	return "snowid.registry = 'host=127.0.0.1 port="
	  . $coord->port
	  . " dbname=ids user=$login connect_timeout=5'\n";
};
my @workers = map {
	citus_add_worker($c, node_id => undef, name => "worker$_",
		extra => $registry->("member_worker$_"))
} 1 .. 2;

# ---- the section, as written ----

for my $block (@blocks)
{
	my ($line, $sql) = @$block;
	my ($ret, $out, $err) = $coord->psql('postgres', $sql,
		extra_params => [ '-v', 'ON_ERROR_STOP=1' ]);
	is($ret, 0, "README.md line $line runs on the coordinator")
	  or diag("psql said:\n$err\nthe block:\n$sql");
	note($out);
	# once the extension is there (the registry is by then), the workers
	# hold their leases
	if ($sql =~ /CREATE EXTENSION IF NOT EXISTS snowid;/)
	{
		ok(wait_registry_state($_, 'ok'), $_->name . ' holds a node lease')
		  for @workers;
	}
}

# ---- node IDs ----

my %node_of;
$node_of{ $_->name } =
  $_->safe_psql('postgres', 'SELECT node_id FROM snowid_layout()')
  for $coord, @workers;
note(join(', ', map { "$_: node $node_of{$_}" } sort keys %node_of));
is($node_of{ $coord->name }, 0, 'the coordinator issues as its configured node 0');
is(scalar(keys %{ { reverse %node_of } }), 3, 'three nodes, three node IDs');
is( $coord->safe_psql('ids',
		"SELECT count(*) FROM snowid.snowid_registry_nodes WHERE node_id = 0 AND state = 'held' AND holder_role::text LIKE 'member_worker%'"
	),
	0,
	'the registry grants no worker the coordinator\'s node');

# ---- all nodes at once ----

# Through each node: single rows of both tables, many times, concurrently.
$coord->safe_psql('postgres', 'TRUNCATE events, invoices');
my $sql = q{
\set tenant random(1, 1000)
INSERT INTO events (device, body) VALUES (:tenant, 'x');
INSERT INTO invoices (tenant, note) VALUES (:tenant, 'x');
};
my @runs = map { start_pgbench($_, 'through_' . $_->name, 2, 8, $sql) } $coord, @workers;
for my $i (0 .. $#runs)
{
	$runs[$i]{handle}->finish;
	my $done = pgbench_processed($runs[$i]);
	ok(defined $done && $done > 0,
		'inserts through ' . (($coord, @workers)[$i])->name . ': ' . ($done // 'none'))
	  or diag($runs[$i]{err});
	like($runs[$i]{err}, qr/^\s*$/, 'none failed through ' . (($coord, @workers)[$i])->name)
	  or diag($runs[$i]{err});
}

my ($rows, $distinct) = split /\|/, $coord->safe_psql('postgres',
	'SELECT count(*), count(DISTINCT id) FROM events');
note("events: $rows rows");
cmp_ok($rows, '>', 100, 'snowid_next(): rows inserted through every node');
is($distinct, $rows, 'snowid_next(): no duplicate');
is( $coord->safe_psql('postgres',
		'SELECT string_agg(DISTINCT snowid_node(id)::text, \',\' ORDER BY snowid_node(id)::text) FROM events'),
	join(',', sort map { $node_of{$_} } keys %node_of),
	'snowid_next(): each node\'s rows carry its own node ID');

($rows, $distinct) = split /\|/, $coord->safe_psql('postgres',
	'SELECT count(*), count(DISTINCT no) FROM invoices');
note("invoices: $rows rows");
is($distinct, $rows, 'tickets: no duplicate integer key');
is( $coord->safe_psql('postgres',
		"SELECT string_agg(DISTINCT snowid_ticket_shard('invoice_no', no)::text, ',') FROM invoices"),
	'0,1,2',
	'tickets: snowid_ticket_shard names the Citus group of each node');

# ---- a worker added later ----

$coord->safe_psql('ids',
	'CREATE ROLE member_worker3 LOGIN IN ROLE snowid_members');
my $w3 = citus_add_worker($c, node_id => undef, name => 'worker3',
	extra => $registry->('member_worker3'));
ok(wait_registry_state($w3, 'ok'), 'the added worker holds a node lease');
my $w3_node = $w3->safe_psql('postgres', 'SELECT node_id FROM snowid_layout()');
ok(!grep({ $_ == $w3_node } values %node_of),
	"the added worker got a free node ID ($w3_node)");

# Without its ticket, a row made there fails, and says why.
my ($ret, $out, $err) = $w3->psql('postgres',
	"INSERT INTO invoices (tenant, note) VALUES (1, 'too early')");
isnt($ret, 0, 'a ticket default on a node without the ticket fails');
like($err, qr/ticket sequence "public.invoice_no" does not exist/, 'and says which');

# The section's ticket statement again: the new node only.
my ($ticket_block) = grep { $_->[1] =~ /run_command_on_all_nodes\(\$\$\s*SELECT snowid_ticket_create/ } @blocks;
ok($ticket_block, 'the README creates tickets on all nodes with one statement');
($ret, $out, $err) = $coord->psql('postgres',
	(split /;\n/, $ticket_block->[1])[0] . ";\n",
	extra_params => [ '-v', 'ON_ERROR_STOP=1' ]);
is($ret, 0, 'run again after citus_add_node, it succeeds') or diag($err);
is($w3->safe_psql('postgres', "SELECT shard FROM snowid_tickets WHERE ticket = 'invoice_no'::regclass"),
	'3', 'the new node\'s stripe is its Citus group');
is($coord->safe_psql('postgres', "SELECT shard FROM snowid_tickets WHERE ticket = 'invoice_no'::regclass"),
	'0', 'the coordinator\'s is unchanged');

my $run = start_pgbench($w3, 'through_worker3', 2, 3, $sql);
$run->{handle}->finish;
ok(pgbench_processed($run), 'inserts through the added worker')
  or diag($run->{err});
is( $coord->safe_psql('postgres',
		'SELECT count(*) = count(DISTINCT id) FROM events'),
	't', 'snowid_next(): still no duplicate');
is( $coord->safe_psql('postgres',
		"SELECT count(*) = count(DISTINCT no) AND bool_or(snowid_ticket_shard('invoice_no', no) = 3) FROM invoices"),
	't', 'tickets: still no duplicate, and the added worker\'s stripe is used');

done_testing();
