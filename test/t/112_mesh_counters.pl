
# Copyright (c) snowid contributors
#
# Counters per key on several primaries (logical replication with
# origin = none, PostgreSQL 16+).  Each server keeps its own counters'
# rows (snowid's tables are not replicated), so only two kinds of counter
# are safe there: one striped per server (mode fast, stripe k of n: this
# server gives a key start + k + i * n only), or one that lives on its
# home server alone (stripe 0 of 1, the declaration).
#
# 1. Three servers A, B, C, each with the striped counter doc_no (stripe
#    0, 1, 2 of 3, small blocks) and the table docs (tenant, no) keyed by
#    it, publishing docs and subscribing to the two others with
#    origin = none.  A had an unstriped counter before the mesh: its
#    CREATE SUBSCRIPTION ... origin = none warns naming it.
# 2. pgbench on all three at once, 20 tenants: after catch-up every server
#    holds every row (as many as the three runs made), no apply error and
#    no conflict counted (a (tenant, no) made twice would stop a
#    subscription: insert_exists), every number made on a server lies in
#    its stripe, and one session's numbers for a key strictly increase.
# 3. The refusals, on B inside the mesh: an unstriped counter (fast or
#    gapless) is refused with 0A000 and a hint to stripe it or declare its
#    home; a gapless one cannot be striped; stripe 0 of 1 (the home) is
#    created, and gives 1, 2, 3 there.

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
  "several primaries need CREATE SUBSCRIPTION ... WITH (origin = none), new in PostgreSQL 16; this is PostgreSQL $major"
  if $major < 16;

my $db = 'postgres';
my @names = qw(a b c);
my %stripe = (a => 0, b => 1, c => 2);
my %server;

for my $name (@names)
{
	my $node = snowid_node(
		"cmesh_$name", $stripe{$name}, q{
wal_level = logical
max_wal_senders = 10
max_replication_slots = 10
max_worker_processes = 16
max_logical_replication_workers = 8
});
	$node->start;
	$node->safe_psql(
		$db, qq{
CREATE EXTENSION snowid;
SELECT snowid_counter_create('doc_no', mode => 'fast', block => 3,
                             stripe => $stripe{$name}, stripes => 3);
CREATE TABLE docs (tenant integer, no bigint, origin text NOT NULL,
                   PRIMARY KEY (tenant, no));
CREATE PUBLICATION mesh FOR TABLE docs;
});
	$server{$name} = $node;
}

# A counter of A's from before the mesh: neither striped nor declared.
$server{a}->safe_psql($db, "SELECT snowid_counter_create('legacy_no')");

my %warned;
for my $sub (@names)
{
	for my $pub (grep { $_ ne $sub } @names)
	{
		my ($ret, $out, $err) = $server{$sub}->psql($db,
			    "CREATE SUBSCRIPTION ${sub}_from_$pub CONNECTION '"
			  . 'host=' . $server{$pub}->host . ' port=' . $server{$pub}->port
			  . " dbname=$db' PUBLICATION mesh WITH (origin = none, copy_data = false)");
		is($ret, 0, "$sub subscribes to $pub with origin = none") or diag $err;
		$warned{$sub} .= $err;
	}
}
like(
	$warned{a},
	qr/WARNING:  counters legacy_no are neither striped nor declared this server's alone/,
	"A's subscription with origin = none names its unstriped counter");
unlike($warned{b} . $warned{c}, qr/counters .* neither striped/,
	'B and C, whose counter is striped, get no such warning');

for my $sub (@names)
{
	$server{$sub}->poll_query_until($db,
		"SELECT count(DISTINCT subid) = 2 FROM pg_stat_subscription WHERE pid IS NOT NULL AND relid IS NULL"
	) or die "the apply workers of $sub are not all running";
}

# ---- 2. the striped counter used on every server at once ----

my %run;
for my $name (@names)
{
	$run{$name} = start_pgbench(
		$server{$name}, "docs_$name", 4, 5, qq{
\\set t random(1, 20)
INSERT INTO docs VALUES (:t, snowid_counter_next('doc_no', :t), '$name');
});
}
my $made = 0;
for my $name (@names)
{
	$run{$name}{handle}->finish;
	my $n = pgbench_processed($run{$name});
	ok(defined $n && $n > 0, "pgbench on $name made rows")
	  or diag $run{$name}{err};
	$made += $n // 0;
}
note "rows made on the three servers: $made";

# One session's numbers of a key, on each server: strictly increasing.
for my $name (@names)
{
	my @seq = split /,/, $server{$name}->safe_psql($db,
		"SELECT string_agg(snowid_counter_next('doc_no', 99)::text, ',') FROM generate_series(1, 50)"
	);
	ok(strictly_increasing(@seq) && @seq == 50,
		"one session on $name: a key's numbers strictly increase");
}

for my $name (@names)
{
	for my $pub (grep { $_ ne $name } @names)
	{
		$server{$pub}->wait_for_catchup("${name}_from_$pub");
	}
}

for my $name (@names)
{
	my $node = $server{$name};
	is( $node->safe_psql($db, 'SELECT count(*), count(DISTINCT (tenant, no)) FROM docs'),
		"$made|$made", "$name holds every row of the three servers, each (tenant, no) once");
	is( $node->safe_psql($db,
			"SELECT count(*) FROM docs WHERE (no - 1) % 3 <> CASE origin WHEN 'a' THEN 0 WHEN 'b' THEN 1 ELSE 2 END"
		),
		'0',
		"on $name, every number made on a server lies in that server's stripe");
	is( $node->safe_psql($db,
			'SELECT coalesce(sum(apply_error_count), 0) FROM pg_stat_subscription_stats'),
		'0', "$name: no apply error");
  SKIP:
	{
		skip "pg_stat_subscription_stats counts conflicts from 18", 1
		  if $major < 18;
		is( $node->safe_psql($db,
				'SELECT coalesce(sum(confl_insert_exists), 0) FROM pg_stat_subscription_stats'),
			'0', "$name: no insert conflict");
	}
	unlike(slurp_file($node->logfile), qr/duplicate key value/,
		"$name: no duplicate key in the log");
}

# ---- 3. the refusals inside the mesh ----

my ($ret, $out, $err) = $server{b}->psql($db,
	"\\set VERBOSITY verbose\nSELECT snowid_counter_create('loose_no', mode => 'fast')");
like(
	$err,
	qr/ERROR:  0A000: counter public.loose_no must be striped or declared this server's alone.*HINT:  Stripe it/s,
	'an unstriped fast counter is refused (0A000) where the database subscribes with origin = none');
($ret, $out, $err) = $server{b}->psql($db, "SELECT snowid_counter_create('loose_no')");
like($err, qr/must be striped or declared this server's alone/,
	'so is an unstriped gapless one');
($ret, $out, $err) = $server{b}->psql($db,
	"SELECT snowid_counter_create('loose_no', stripe => 1, stripes => 3)");
like(
	$err,
	qr/ERROR:  a gapless counter cannot be striped.*HINT:  Take a key's numbers on its home server/s,
	'a gapless counter cannot be striped: take a key\'s numbers on its home server');
is( $server{b}->safe_psql(
		$db, q{
SELECT snowid_counter_create('home_no', stripe => 0, stripes => 1);
SELECT string_agg(snowid_counter_next('home_no', 'k')::text, ',') FROM generate_series(1, 3);
}),
	"home_no\n1,2,3",
	'a gapless counter declared its home server\'s alone (stripe 0 of 1) is created there');
is($server{b}->safe_psql($db, "SELECT count(*) FROM pg_class WHERE relname = 'loose_no'"),
	'0', 'the refused counters left nothing behind');

$server{$_}->stop for @names;
done_testing();
