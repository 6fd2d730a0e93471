# Copyright (c) snowid contributors
#
# Counters per key on Citus (issue 41): a coordinator and two workers, a
# table inv distributed by tenant (bigint) and a gapless counter inv_no
# co-located with it (its keys' rows in a state table distributed like
# inv: each tenant's row in the shard of that tenant's invoices).
# - refused: a counter without colocate_with, co-located with a reference
#   or a local table, a striped counter, on a worker before the coordinator,
#   over a table of the state table's name that another role owns;
# - created on the coordinator, then on the workers (run_command_on_workers);
# - clients on the coordinator and on each worker at once insert invoices
#   for 12 tenants, one in five rolled back: every (tenant, no) once, and
#   each tenant's numbers run 1 .. n with no hole; snowid_counter_current
#   agrees on every node;
# - each tenant's row lies in the state table's shard on the worker that
#   holds the tenant's invoices;
# - a shard of inv moved to the other worker takes the state shard with
#   it; inserts go on from every node without a repeat or a hole;
# - a fast counter (blocks of 5) co-located with inv: two clients on each
#   node, one in five rolled back, then a shard move (force_logical) in the
#   middle of a load, then more: no (tenant, no) twice, every number at or
#   below its tenant's state row (each block reserved there by a node's
#   server process), every 5-block taken on one node; a taker with USAGE
#   alone; restart and drop_key refused (0A000: other nodes' blocks);
# - privileges: USAGE on the counter and SELECT, INSERT, UPDATE on its
#   state table (the statements run as the caller: Citus lets one user
#   write a transaction's shards of a group), a key never moved back by a
#   direct UPDATE (the trigger on the moved shard), no DELETE;
#   snowid_counter_restart and snowid_counter_drop_key from a worker;
# - multi-row VALUES for several tenants through the coordinator; INSERT
#   ... SELECT from a distributed table refused by Citus (a distributed
#   query from a shard), nothing taken;
# - a worker added later creates its handle and takes numbers;
# - DROP SEQUENCE of a counter on the coordinator drops its state table;
# - pg_dump of the coordinator carries the state table and its link;
# - DROP EXTENSION refuses while a state table exists;
# - snowid_counter_drop on every node removes the handles and the state
#   table.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;
use SnowidCitus;

citus_skip_unless_available();

my $c = citus_cluster(workers => 2, snowid => 1);
my $coord = $c->{coordinator};
my ($w1, $w2) = @{ $c->{workers} };
my @nodes = ($coord, $w1, $w2);
my ($rc, $out);
my %name_of = ($coord->port => 'coord', $w1->port => 'w1', $w2->port => 'w2');

$coord->safe_psql(
	'postgres', q{
CREATE TABLE inv (tenant bigint, no bigint, origin text, PRIMARY KEY (tenant, no));
SELECT create_distributed_table('inv', 'tenant');
CREATE TABLE rates (code text PRIMARY KEY, rate numeric);
SELECT create_reference_table('rates');
CREATE TABLE notes (id bigint);
});

# ---- refusals
sub refused
{
	my ($node, $sql, $code, $what) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	like($err, qr/ERROR:  $code/, "$what: refused with $code");
	return $err;
}

my $err = refused($coord, q{SELECT snowid_counter_create('public.bad_no')},
	'0A000', 'a counter without colocate_with');
like($err, qr/HINT:  .*colocate_with => 'public\.inv'/, '... with a hint how');
refused($coord,
	q{SELECT snowid_counter_create('public.bad_no', colocate_with => 'public.rates')},
	'0A000', 'a counter co-located with a reference table');
refused($coord,
	q{SELECT snowid_counter_create('public.bad_no', colocate_with => 'public.notes')},
	'0A000', 'a counter co-located with a local table');
refused($coord,
	q{SELECT snowid_counter_create('public.bad_no', stripe => 0, stripes => 1, colocate_with => 'public.inv')},
	'0A000', 'a striped counter');
refused($coord,
	q{SELECT snowid_counter_create('public.bad_no', mode => 'fast', stripe => 0, stripes => 2, colocate_with => 'public.inv')},
	'0A000', 'a striped fast counter');
refused($w1,
	q{SELECT snowid_counter_create('public.bad_no', colocate_with => 'public.inv')},
	'55000', 'a counter on a worker before the coordinator');
is($coord->safe_psql('postgres', q{SELECT to_regclass('public.bad_no')}),
	'', 'no handle is left by the refusals');

# A table of the state table's name that another role made (in public,
# snowid's schema here) is not taken for it, on the coordinator or a worker.
my $fake = $coord->safe_psql('postgres',
	q{SELECT 'snowid_counter_state_' || left(md5('public.fake_no'), 16)});
$coord->safe_psql(
	'postgres', qq{
CREATE ROLE mallory;
CREATE TABLE $fake (key bigint PRIMARY KEY, last bigint NOT NULL);
SELECT create_distributed_table('$fake', 'key', colocate_with => 'inv');
ALTER TABLE $fake OWNER TO mallory;
});
refused($coord,
	q{SELECT snowid_counter_create('public.fake_no', colocate_with => 'public.inv')},
	'42P07', "the coordinator, with a table of the state table's name");
$err = refused($w2,
	q{SELECT snowid_counter_create('public.fake_no', colocate_with => 'public.inv')},
	'55000', "a worker, with another role's table of the state table's name");
like($err, qr/is not the state table of counter/, '... saying it is not the state table');
$coord->safe_psql('postgres', qq{DROP TABLE $fake; DROP ROLE mallory});

# ---- creation: the coordinator, then the workers
# run create on the coordinator, then on the workers: counter's state table
sub create_everywhere
{
	my ($create, $counter, $what) = @_;
	$coord->safe_psql('postgres', $create);
	is( $coord->safe_psql(
			'postgres',
			qq{SELECT string_agg(success::text, ',') FROM run_command_on_workers(\$\$$create\$\$)}),
		'true,true',
		$what);
	return $coord->safe_psql('postgres',
		qq{SELECT state FROM snowid_counter WHERE counter = '$counter'::regclass});
}
my $state = create_everywhere(
	q{SELECT snowid_counter_create('public.inv_no', colocate_with => 'public.inv')},
	'inv_no', 'the workers create their handles');
like($state, qr/^snowid_counter_state_[0-9a-f]{16}$/, "the counter's state table: $state");
is( $coord->safe_psql(
		'postgres',
		qq{SELECT citus_table_type, distribution_column, colocation_id = (SELECT colocation_id FROM citus_tables WHERE table_name = 'inv'::regclass)
		     FROM citus_tables WHERE table_name = '$state'::regclass}),
	'distributed|key|t',
	'it is distributed by key, co-located with inv');
for my $n ($w1, $w2)
{
	is($n->safe_psql('postgres', q{SELECT state FROM snowid_counter WHERE counter = 'inv_no'::regclass}),
		$state, $name_of{ $n->port } . ' links its handle to the same state table');
}

# ---- clients on every node at once
my $tenants = 12;
my $per_client = 150;
my $scripts = PostgreSQL::Test::Utils::tempdir();

sub client_script
{
	my ($origin, $seed, $table, $counter, $count, $until_stopped) = @_;
	my $sql = '';
	srand($seed);
	for my $i (1 .. $count)
	{
		my $t = 1 + int(rand($tenants));
		my $end = rand() < 0.2 ? 'ROLLBACK' : 'COMMIT';
		$sql .= "BEGIN;\nINSERT INTO $table VALUES ($t, snowid_counter_next('$counter', $t), '$origin');\n$end;\n";
		# every 10 statements: leave once a row is in load_stop
		$sql .= "SELECT EXISTS (SELECT FROM load_stop) AS stop \\gset\n\\if :stop\n\\q\n\\endif\n"
		  if $until_stopped && $i % 10 == 0;
	}
	return $sql;
}

# two clients on each node, each inserting count rows (default
# $per_client) into table (default inv) numbered by counter (default
# inv_no), or fewer if until_stopped and a row is put into load_stop;
# finish_clients waits for them
sub start_clients
{
	my ($round, $table, $counter, $count, $until_stopped) = @_;
	my @h;
	my $k = 0;
	for my $n (@nodes, @nodes)
	{
		$k++;
		my ($out, $err) = ('', '');
		# from a file: IPC::Run feeds a scalar only while it is pumped
		my $file = "$scripts/client_${round}_$k.sql";
		PostgreSQL::Test::Utils::append_to_file($file,
			client_script($name_of{ $n->port }, $round * 100 + $k,
				$table // 'inv', $counter // 'inv_no', $count // $per_client,
				$until_stopped));
		push @h, [
			IPC::Run::start(
				[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $n->connstr('postgres'), '-f', $file ],
				'>', \$out, '2>', \$err),
			\$err
		];
	}
	return \@h;
}

sub finish_clients
{
	my ($h) = @_;
	my $failed = 0;
	for (@$h)
	{
		$_->[0]->finish;
		if ($_->[0]->result != 0)
		{
			$failed++;
			diag ${ $_->[1] };
		}
	}
	return $failed;
}

sub run_clients
{
	return finish_clients(start_clients(@_));
}

sub check_numbers
{
	my ($what) = @_;
	is( $coord->safe_psql(
			'postgres',
			q{SELECT count(*) FROM (SELECT tenant FROM inv GROUP BY tenant
			    HAVING min(no) <> 1 OR max(no) <> count(*) OR count(DISTINCT no) <> count(*)) bad}),
		'0', "$what: each tenant's numbers run 1 .. n, no hole, no repeat");
	my $want = $coord->safe_psql('postgres',
		q{SELECT string_agg(tenant || ':' || n, ',' ORDER BY tenant) FROM (SELECT tenant, count(*) n FROM inv GROUP BY tenant) s});
	for my $n (@nodes)
	{
		is( $n->safe_psql(
				'postgres',
				qq{SELECT string_agg(t || ':' || snowid_counter_current('inv_no', t), ',' ORDER BY t)
				     FROM generate_series(1, $tenants) t WHERE snowid_counter_current('inv_no', t) IS NOT NULL}),
			$want,
			"$what: snowid_counter_current on " . $name_of{ $n->port } . ' gives each tenant its last number');
	}
	# each tenant's row: in the state shard on the node of its invoices
	my $misplaced = $coord->safe_psql(
		'postgres', qq{
SELECT count(*) FROM generate_series(1, $tenants) t,
	citus_shards i, citus_shards s
WHERE i.shardid = get_shard_id_for_distribution_column('inv', t)
  AND s.shardid = get_shard_id_for_distribution_column('$state', t)
  AND (i.nodename, i.nodeport) IS DISTINCT FROM (s.nodename, s.nodeport)});
	is($misplaced, '0', "$what: every tenant's state shard is on the worker of its invoices");
	my %rows_on;
	for (split /\n/,
		$coord->safe_psql(
			'postgres', qq{
SELECT s.nodeport, r.result FROM run_command_on_shards('$state', 'SELECT count(*) FROM %s') r
	JOIN citus_shards s ON s.shardid = r.shardid WHERE r.success})
	  )
	{
		my ($port, $count) = split /\|/;
		$rows_on{$port} += $count;
	}
	my %tenants_on;
	for (split /\n/,
		$coord->safe_psql(
			'postgres', q{
SELECT s.nodeport, count(DISTINCT tenant) FROM inv
	JOIN citus_shards s ON s.shardid = get_shard_id_for_distribution_column('inv', tenant)
GROUP BY 1})
	  )
	{
		my ($port, $count) = split /\|/;
		$tenants_on{$port} = $count;
	}
	is_deeply(\%rows_on, \%tenants_on,
		"$what: each worker holds the state rows of its tenants, no more");
	return;
}

is(run_clients(1), 0, 'clients on the coordinator and both workers ran');
check_numbers('concurrent inserts');
my $committed = $coord->safe_psql('postgres', q{SELECT count(*) FROM inv});
note "committed invoices: $committed";
is( $coord->safe_psql('postgres',
		q{SELECT count(DISTINCT origin) FROM inv}),
	'3', 'invoices were numbered through all three nodes');

# ---- a shard move
# the shard of table holding tenant, its worker's port and the other's
sub shard_of
{
	my ($table, $tenant) = @_;
	my ($shard, $from) = split /\|/, $coord->safe_psql('postgres',
		qq{SELECT shardid, nodeport FROM citus_shards WHERE shardid = get_shard_id_for_distribution_column('$table', $tenant)});
	return ($shard, $from, $from == $w1->port ? $w2->port : $w1->port);
}
my ($shard, $from, $to) = shard_of('inv', 1);
$coord->safe_psql('postgres',
	qq{SELECT citus_move_shard_placement($shard, '127.0.0.1', $from, '127.0.0.1', $to, shard_transfer_mode => 'block_writes')});
is( $coord->safe_psql(
		'postgres',
		qq{SELECT nodeport FROM citus_shards WHERE shardid = get_shard_id_for_distribution_column('$state', 1)}),
	$to, "moving tenant 1's shard of inv moved its state shard too");
is(run_clients(2), 0, 'clients ran again after the move');
check_numbers('after the shard move');

# ---- a fast counter: every node caches blocks of its own, each reserved
# by that node's server process from the key's row in its shard (blocks of
# 5, so that reservations are many and race between nodes)
$coord->safe_psql(
	'postgres', q{
CREATE TABLE tick (tenant bigint, no bigint, origin text, PRIMARY KEY (tenant, no));
SELECT create_distributed_table('tick', 'tenant', colocate_with => 'inv');
});
my $fast_state = create_everywhere(
	q{SELECT snowid_counter_create('public.tick_no', mode => 'fast', block => 5, colocate_with => 'public.tick')},
	'tick_no', 'a fast counter: created on the coordinator, then on the workers');
is( $coord->safe_psql('postgres',
		q{SELECT string_agg(success::text || ':' || result, ',') FROM run_command_on_all_nodes($$SELECT mode || ',' || state FROM snowid_counter WHERE counter = 'tick_no'::regclass$$)}),
	join(',', ("true:fast,$fast_state") x 3),
	'every node has it fast, on the same state table');

sub check_fast
{
	my ($what) = @_;
	is( $coord->safe_psql(
			'postgres',
			q{SELECT count(*) - count(DISTINCT (tenant, no)) FROM tick}),
		'0', "$what: no (tenant, no) twice");
	is( $coord->safe_psql(
			'postgres',
			qq{SELECT count(*) FROM tick t LEFT JOIN $fast_state s ON s.key = t.tenant
			    WHERE s.last IS NULL OR t.no > s.last}),
		'0', "$what: every number lies at or below its tenant's state row");
	is( $coord->safe_psql(
			'postgres',
			qq{SELECT count(*) FROM $fast_state WHERE last % 5 <> 0}),
		'0', "$what: each state row's last ends a block of 5");
	is( $coord->safe_psql(
			'postgres',
			q{SELECT count(*) FROM (SELECT FROM tick GROUP BY tenant, (no - 1) / 5
			    HAVING count(DISTINCT origin) > 1) b}),
		'0', "$what: each block's numbers were taken on one node");
	cmp_ok(
		$coord->safe_psql(
			'postgres',
			q{SELECT count(*) FROM (SELECT FROM tick GROUP BY tenant HAVING count(DISTINCT origin) = 3) t}),
		'>', 0, "$what: the nodes' blocks of a tenant interleave");
	return;
}

is(run_clients(3, 'tick', 'tick_no'), 0, 'fast: clients on the coordinator and both workers ran');
check_fast('fast, concurrent inserts');
is( $coord->safe_psql('postgres', q{SELECT count(DISTINCT origin) FROM tick}),
	'3', 'fast: numbers were taken on all three nodes');

# a shard move while every node takes numbers: the blocks reserved on the
# old placement come with the state shard, none is reserved twice
my ($fshard, $ffrom, $fto) = shard_of('tick', 2);
$coord->safe_psql('postgres',
	q{CREATE TABLE load_stop (stop boolean); SELECT create_reference_table('load_stop')});
my $rows = $coord->safe_psql('postgres', q{SELECT count(*) FROM tick});
my $busy = start_clients(4, 'tick', 'tick_no', 40 * $per_client, 1);
$coord->poll_query_until('postgres', qq{SELECT count(*) > $rows + 100 FROM tick})
  or die 'the clients took no numbers';
$coord->safe_psql('postgres',
	qq{SELECT citus_move_shard_placement($fshard, '127.0.0.1', $ffrom, '127.0.0.1', $fto, shard_transfer_mode => 'force_logical')});
my $moved_at = $coord->safe_psql('postgres', q{SELECT count(*) FROM tick WHERE tenant = 2});
ok( $coord->poll_query_until('postgres',
		qq{SELECT count(*) > $moved_at + 20 FROM tick WHERE tenant = 2}),
	'fast: the clients go on with tenant 2 after the move (the move was mid-load)');
$coord->safe_psql('postgres', q{INSERT INTO load_stop VALUES (true)});
is(finish_clients($busy), 0, 'fast: clients ran through a shard move');
is( $coord->safe_psql(
		'postgres',
		qq{SELECT nodeport FROM citus_shards WHERE shardid = get_shard_id_for_distribution_column('$fast_state', 2)}),
	$fto, "fast: tenant 2's state shard moved with its shard of tick");
is(run_clients(5, 'tick', 'tick_no'), 0, 'fast: clients ran after the move');
check_fast('fast, through and after a shard move');

# takers need USAGE on the counter only: the server process writes the
# state table as its owner
$coord->safe_psql('postgres', q{CREATE ROLE teller LOGIN; GRANT ALL ON tick TO teller});
$w2->safe_psql('postgres', q{GRANT USAGE ON SEQUENCE tick_no TO teller});
is( $w2->safe_psql('postgres',
		q{SET ROLE teller; INSERT INTO tick VALUES (7, snowid_counter_next('tick_no', 7), 'w2') RETURNING no > 0}),
	't', 'fast: a role with USAGE on the counter alone takes numbers');
($rc, $out, $err) = $w2->psql('postgres',
	qq{SET ROLE teller; UPDATE $fast_state SET last = last + 1 WHERE key = 7});
like($err, qr/permission denied/, '... but cannot write the state table');
check_fast('fast, a taker without rights on the state table');
note 'fast: numbers committed ' . $coord->safe_psql('postgres', q{SELECT count(*) FROM tick})
  . ', reserved ' . $coord->safe_psql('postgres', qq{SELECT sum(last) FROM $fast_state});

# a creator who is not snowid's owner gets the state table's rights with
# grant option, but no DELETE (a deleted key would start over below the
# other nodes' blocks); a gapless counter's creator gets DELETE too
$coord->safe_psql(
	'postgres', q{
CREATE ROLE keeper LOGIN;
GRANT CREATE ON SCHEMA public TO keeper;
SET ROLE keeper;
CREATE TABLE tock (tenant bigint, no bigint);
SELECT create_distributed_table('tock', 'tenant', colocate_with => 'none');
SELECT snowid_counter_create('public.tock_fast', mode => 'fast', colocate_with => 'public.tock');
SELECT snowid_counter_create('public.tock_gapless', colocate_with => 'public.tock');
});
is( $coord->safe_psql(
		'postgres', q{
SELECT string_agg(mode || ':' || has_table_privilege('keeper', state, 'UPDATE WITH GRANT OPTION')
                  || ',' || has_table_privilege('keeper', state, 'DELETE'), ' ' ORDER BY mode)
  FROM snowid_counter WHERE counter IN ('tock_fast'::regclass, 'tock_gapless'::regclass)}),
	'fast:true,false gapless:true,true',
	"fast: its creator may not DELETE from the state table (gapless: may)");
$coord->safe_psql(
	'postgres', q{
SET ROLE keeper;
SELECT snowid_counter_drop('public.tock_fast');
SELECT snowid_counter_drop('public.tock_gapless');
DROP TABLE tock;
RESET ROLE;
REVOKE CREATE ON SCHEMA public FROM keeper;
DROP ROLE keeper;
});

# restart and drop_key would leave the other nodes' blocks in use
$err = refused($w1, q{SELECT snowid_counter_restart('tick_no', 3, 100000)},
	'0A000', 'fast: snowid_counter_restart');
like($err, qr/HINT:  Use a gapless counter on Citus where keys must restart/, '... with a hint');
refused($coord, q{SELECT snowid_counter_drop_key('tick_no', 3)},
	'0A000', 'fast: snowid_counter_drop_key');
is( $coord->safe_psql('postgres',
		q{SELECT string_agg(success::text, ',') FROM run_command_on_all_nodes($$SELECT snowid_counter_drop('public.tick_no')$$)}),
	'true,true,true', 'fast: snowid_counter_drop on every node');
is($coord->safe_psql('postgres', qq{SELECT to_regclass('public.$fast_state') IS NULL}),
	't', "fast: its state table is gone");
$coord->safe_psql('postgres', q{DROP TABLE tick, load_stop});

# ---- privileges, restart and drop_key from a worker
$coord->safe_psql(
	'postgres', q{
CREATE ROLE clerk LOGIN;
GRANT ALL ON inv TO clerk;
});
($rc, $out, $err) = $w1->psql('postgres',
	q{SET ROLE clerk; SELECT snowid_counter_next('inv_no', 1)});
like($err, qr/permission denied for counter/, 'a role without USAGE on the counter is refused');
$w1->safe_psql('postgres', q{GRANT USAGE ON SEQUENCE inv_no TO clerk});
($rc, $out, $err) = $w1->psql('postgres',
	q{SET ROLE clerk; SELECT snowid_counter_next('inv_no', 1)});
like($err, qr/permission denied for the keys of counter.*\n.*\nHINT:  Grant them with the counter, on the coordinator: GRANT SELECT, INSERT, UPDATE ON TABLE public\.$state TO/,
	'with USAGE but no rights on the state table: refused, with the GRANT to run');
$coord->safe_psql('postgres', qq{GRANT SELECT, INSERT, UPDATE ON $state TO clerk});
my $before = $coord->safe_psql('postgres', q{SELECT max(no) FROM inv WHERE tenant = 1});
is( $w1->safe_psql('postgres',
		q{SET ROLE clerk; INSERT INTO inv VALUES (1, snowid_counter_next('inv_no', 1), 'clerk') RETURNING no}),
	$before + 1, 'with both granted, clerk takes the next number on a worker');
($rc, $out, $err) = $w1->psql('postgres',
	qq{SET ROLE clerk; UPDATE $state SET last = 0 WHERE key = 1});
like($err, qr/a counter's key cannot go back/,
	"clerk cannot move a key back in the state table (the moved shard's trigger)");
($rc, $out, $err) = $w2->psql('postgres',
	qq{SET ROLE clerk; DELETE FROM $state WHERE key = 1});
like($err, qr/permission denied/, 'nor delete a key');
($rc, $out, $err) = $w2->psql('postgres',
	q{SELECT snowid_counter_restart('inv_no', 1, 2)});
like($err, qr/cannot go back/, 'a restart below the numbers given is refused (from a worker)');
$w2->safe_psql('postgres', q{SELECT snowid_counter_restart('inv_no', 1, 1000)});
is( $coord->safe_psql('postgres',
		q{INSERT INTO inv VALUES (1, snowid_counter_next('inv_no', 1), 'coord') RETURNING no}),
	'1000', 'a restart from one worker is seen by the coordinator');
is($w1->safe_psql('postgres', q{SELECT snowid_counter_drop_key('inv_no', 99)}),
	'f', 'drop_key of an unused key');
$w1->safe_psql('postgres', q{INSERT INTO inv VALUES (99, snowid_counter_next('inv_no', 99), 'w1')});
is($w2->safe_psql('postgres', q{SELECT snowid_counter_drop_key('inv_no', 99)}),
	't', 'drop_key from another worker');
is($coord->safe_psql('postgres', q{SELECT snowid_counter_current('inv_no', 99)}),
	'', '... is seen by the coordinator');

# ---- one statement, many tenants: multi-row VALUES through the
# coordinator (each tenant's row on its own worker, one transaction)
my %next = map { $_ => $coord->safe_psql('postgres', "SELECT coalesce(max(no), 0) + 1 FROM inv WHERE tenant = $_") } 2 .. 5;
is( join("\n", sort split /\n/, $coord->safe_psql(
		'postgres',
		q{INSERT INTO inv VALUES (2, snowid_counter_next('inv_no', 2), 'multi'), (3, snowid_counter_next('inv_no', 3), 'multi'),
		                         (4, snowid_counter_next('inv_no', 4), 'multi'), (5, snowid_counter_next('inv_no', 5), 'multi'),
		                         (2, snowid_counter_next('inv_no', 2), 'multi')
		  RETURNING tenant, no}) =~ s/\|/:/gr),
	join("\n", sort "2:$next{2}", "3:$next{3}", "4:$next{4}", "5:$next{5}", '2:' . ($next{2} + 1)),
	'multi-row VALUES through the coordinator: each tenant its next numbers');

# INSERT ... SELECT from a distributed table: Citus runs the call on the
# shards, where it refuses a distributed query; nothing is taken
($rc, $out, $err) = $coord->psql('postgres',
	q{INSERT INTO inv SELECT tenant, snowid_counter_next('inv_no', tenant), 'select' FROM inv WHERE origin = 'multi'});
like($err, qr/cannot execute a distributed query from a query on a shard/,
	'INSERT ... SELECT from a distributed table: refused by Citus');
is($coord->safe_psql('postgres', q{SELECT snowid_counter_current('inv_no', 3)}),
	$next{3}, '... and no number was taken');

# ---- a worker added later: its handle made there, then it takes numbers
my $w3 = citus_add_worker($c);
$name_of{ $w3->port } = 'w3';
is( $coord->safe_psql(
		'postgres',
		qq{SELECT string_agg(success::text, ',') FROM run_command_on_workers(\$\$SELECT snowid_counter_create('public.inv_no', colocate_with => 'public.inv') WHERE to_regclass('public.inv_no') IS NULL\$\$)}),
	'true,true,true', 'the new worker creates its handle (the others skip)');
my $n6 = $coord->safe_psql('postgres', q{SELECT max(no) + 1 FROM inv WHERE tenant = 6});
is($w3->safe_psql('postgres', q{INSERT INTO inv VALUES (6, snowid_counter_next('inv_no', 6), 'w3') RETURNING no}),
	$n6, 'the new worker takes the next number of a tenant');

# ---- DROP SEQUENCE of a counter on the coordinator drops its state table
$coord->safe_psql('postgres',
	q{SELECT snowid_counter_create('public.other_no', colocate_with => 'public.inv')});
my $other_state = $coord->safe_psql('postgres', q{SELECT state FROM snowid_counter WHERE counter = 'other_no'::regclass});
$coord->safe_psql('postgres', q{DROP SEQUENCE other_no});
is( $coord->safe_psql('postgres',
		qq{SELECT to_regclass('public.$other_state') IS NULL, count(*) FROM citus_shards WHERE table_name::text = '$other_state'}),
	't|0', 'DROP SEQUENCE of a counter on the coordinator drops its state table');

# ---- pg_dump of the coordinator
my $dump = $coord->safe_psql('postgres', 'SELECT 1') && `pg_dump -d "@{[ $coord->connstr('postgres') ]}" 2>&1`;
is($?, 0, 'pg_dump of the coordinator works');
like($dump, qr/CREATE TABLE public\.$state/, 'the dump creates the state table');
like($dump, qr/^public\.inv_no\tbigint\tgapless\t1\t1\t\d+\t.*\tpublic\.$state$/m,
	"the dump's snowid_counter row names the state table");
my ($state_rows) = $dump =~ /^COPY public\.$state \(key, last\) FROM stdin;\n(.*?)^\\\.$/ms;
is( join(",", sort { (split /:/, $a)[0] <=> (split /:/, $b)[0] } map { (split /\t/)[0] . ':' . (split /\t/)[1] } split /\n/, $state_rows // ''),
	$coord->safe_psql('postgres', qq{SELECT string_agg(key || ':' || last, ',' ORDER BY key) FROM $state}),
	"the dump carries every key's row (Citus copies them from the shards)");

# ---- DROP EXTENSION refuses while a state table exists
($rc, $out, $err) = $coord->psql('postgres', q{DROP EXTENSION snowid});
like($err, qr/cannot drop extension snowid because other objects depend on it/,
	'DROP EXTENSION snowid refuses while a counter has a state table');

# ---- drop on every node
is( $coord->safe_psql(
		'postgres',
		q{SELECT string_agg(success::text, ',') FROM run_command_on_all_nodes($$SELECT snowid_counter_drop('public.inv_no')$$)}),
	'true,true,true,true',
	'snowid_counter_drop on every node');
for my $n (@nodes, $w3)
{
	is( $n->safe_psql(
			'postgres',
			qq{SELECT to_regclass('public.inv_no') IS NULL, to_regclass('public.$state') IS NULL, count(*) FROM snowid_counter}),
		't|t|0',
		'no handle, state table or row is left on ' . $name_of{ $n->port });
}

done_testing();
