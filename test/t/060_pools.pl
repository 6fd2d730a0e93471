
# Copyright (c) snowid contributors
#
# Pooled tickets: a registry pool 'orders' (bigint) and three members
# (nodes 1, 2, 3; snowid.lease = 60 s), each with the ticket sequence 't'
# fed by ranges of the pool.
#
# 0. The first snowid_ticket_next() of a new ticket succeeds (no 55000 for
#    want of a range), then the member holds a range (members 1 and 2).
# 1. Under pgbench on the three members at once (2 clients each, a few
#    seconds, one value per transaction; member 3 cold: its two clients
#    make the first calls of its ticket): every transaction succeeds, the
#    union of all values has no duplicate, and each client's values
#    increase.  While the load runs, snowid_pool_holdings() shows a rate and
#    the time left at that rate.
# 2. The registry's ranges (snowid_pool_ranges) do not overlap, each value
#    lies in a range of the member that issued it, and snowid_pool_owner
#    names that member for a sample of every member's values (NULL for a
#    value never granted); snowid_pools counts what was granted.
# 3. The registry stopped: each member (state 'unreachable') keeps issuing
#    20,000 values from the ranges in hand (checked to hold that many
#    before the stop: the load of 1. made the ranges, sized by rate x lease,
#    big enough; short bursts top them up if not); then the registry
#    starts again, the members return to 'ok' by themselves and go on.
#    Still no duplicate anywhere, each member's values increase, and the
#    owner of every sampled value is still the member that issued it.
#
# No assertion depends on elapsed time.

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;
use Time::HiRes qw(usleep);

my $outage_values = 20000;

# ---- helpers (local to this file) ----

# One column of snowid_pool_holdings() for pool 'orders' on $node.
sub holding
{
	my ($node, $columns) = @_;
	return $node->safe_psql('postgres',
		"SELECT $columns FROM snowid_pool_holdings() WHERE pool = 'orders'");
}

# $n values from one statement; returns them in issue order.
sub take_values
{
	my ($node, $phase, $n) = @_;
	return split /\n/,
	  $node->safe_psql('postgres',
		"INSERT INTO vals(phase, client, v) SELECT '$phase', 0, snowid_ticket_next('t') FROM generate_series(1, $n) RETURNING v"
	  );
}

# [client, value] of every value of $node, in issue order per client
# (seq), optionally only of $where.
sub rows_of
{
	my ($node, $where) = @_;
	return map { [ split /\|/ ] } split /\n/,
	  $node->safe_psql('postgres',
		'SELECT client, v FROM vals' . ($where ? " WHERE $where" : '') . ' ORDER BY seq');
}

# ---- the registry and the members ----

my ($reg, $conninfo) = registry(sql => "SELECT snowid_pool_create('orders');");
is( $reg->safe_psql('postgres',
		q{SELECT type, start, maxvalue, next_value, upstream FROM snowid_pools WHERE name = 'orders'}),
	'bigint|1|9223372036854775807|1|f',
	'registry: pool orders created (bigint, from 1, nothing granted)');

# The members: started, naming the registry, with the pooled ticket 't' on
# pool 'orders' and a table for the values they issue.
my %m;
$m{$_->[0]} = member(
	"member_$_->[0]", $_->[1],
	registry => $conninfo,
	cluster_name => 1,
	application_name => 1,
	lease => '60s',
	sql => q{
SELECT snowid_ticket_create('t', pool => 'orders');
CREATE TABLE vals(seq bigserial, phase text NOT NULL, client integer NOT NULL, v bigint NOT NULL);
}) for ([ 1, 1 ], [ 2, 2 ], [ 3, 3 ]);
my @names = sort keys %m;

for my $n (@names)
{
	ok(wait_registry_state($m{$n}, 'ok'), "member $n holds its node");
	is(holding($m{$n}, 'type, state'), 'bigint|ok',
		"member $n: holdings show the pool's type, state ok");

	# Member 3 starts its load cold: two pgbench clients make the first
	# calls of its new ticket at once.
	next if $n == 3;

	# The ticket works at once: its first call does not fail for want of
	# a range (the worker fetches one as soon as the ticket exists, or the
	# call waits for it).
	my ($ret, $out, $err) = $m{$n}->psql('postgres',
		"\\set VERBOSITY verbose\nINSERT INTO vals(phase, client, v) VALUES ('first', 0, snowid_ticket_next('t')) RETURNING v");
	is($ret, 0, "member $n: the first snowid_ticket_next() after snowid_ticket_create() succeeds")
	  or diag $err;
	ok( $m{$n}->poll_query_until('postgres',
			q{SELECT state = 'ok' AND values_in_hand > 0 AND ranges >= 1 FROM snowid_pool_holdings() WHERE pool = 'orders'}),
		"member $n holds a range of orders")
	  or diag 'holdings: ' . holding($m{$n}, '*');
}

# ==== 1. pgbench on the three members at once ====

my %run;
$run{$_} = start_pgbench($m{$_}, "load$_", 2, 4,
	q{INSERT INTO vals(phase, client, v) VALUES ('load', :client_id, snowid_ticket_next('t'));})
  for @names;

# While the load runs: the members' holdings show a rate and the time left
# at that rate (the rate is measured once a heartbeat: look until the load
# ends).
my %seen_rate;
for my $look (1 .. 40)    # up to about 8 s: the 4 s of load and a little more
{
	for my $n (@names)
	{
		next if $seen_rate{$n};
		my $h = $m{$n}->safe_psql('postgres',
			q{SELECT rate || '|' || time_left || '|' || values_in_hand FROM snowid_pool_holdings()
			  WHERE pool = 'orders' AND rate > 0 AND time_left > interval '0'});
		$seen_rate{$n} = $h if $h ne '';
	}
	last if scalar(keys %seen_rate) == scalar(@names);
	usleep(200_000);
}
my %txns;
for my $n (@names)
{
	ok($run{$n}->{handle}->finish, "pgbench on member $n ran")
	  or diag "pgbench on member $n: exit $?\n$run{$n}->{out}\n$run{$n}->{err}";
	$txns{$n} = pgbench_processed($run{$n}) // 0;
	cmp_ok($txns{$n}, '>', 0, "pgbench on member $n processed transactions ($txns{$n})");
	unlike($run{$n}->{out}, qr/number of failed transactions: [1-9]/,
		"pgbench on member $n: no failed transaction");
	is($m{$n}->safe_psql('postgres', q{SELECT count(*) FROM vals WHERE phase = 'load'}),
		$txns{$n}, "member $n stored a value for every transaction");
	ok(defined $seen_rate{$n},
		"member $n: snowid_pool_holdings() showed a rate and the time left at it during the load")
	  and note "member $n during the load: rate|time_left|values_in_hand = $seen_rate{$n}";
}

# Each client's values increase; no value anywhere twice.
my %vals;    # member => [values in issue order]
my %owner_of;    # value => member
my $dups = 0;
for my $n (@names)
{
	my (%last, $bad);
	for my $r (rows_of($m{$n}, q{phase = 'load'}))
	{
		my ($client, $v) = @$r;
		$bad++ if defined $last{$client} && $v <= $last{$client};
		$last{$client} = $v;
		push @{ $vals{$n} }, $v;
		$dups++ if exists $owner_of{$v};
		$owner_of{$v} = $n;
	}
	is($bad // 0, 0, "member $n: each client's values increase");
	is(scalar(keys %last), 2, "member $n: both clients issued values");
	cmp_ok(min_of(@{ $vals{$n} }), '>=', 1, "member $n: no value below the pool's start");
}
is($dups, 0, 'no value issued twice across the three members under pgbench');
note sprintf('1. pgbench, 2 clients each: member 1 %d values, member 2 %d, member 3 %d; shared values: %d',
	map({ scalar @{ $vals{$_} } } @names), $dups);

# ==== 2. what the registry knows ====

# Ranges (effective: up to returned_from - 1) do not overlap.
my @ranges = map { [ split /\|/ ] } split /\n/,
  $reg->safe_psql('postgres',
	q{SELECT node_id, first_value, CASE WHEN returned THEN returned_from - 1 ELSE last_value END
	  FROM snowid_pool_ranges WHERE pool = 'orders' ORDER BY first_value});
cmp_ok(scalar(@ranges), '>=', 3, 'registry: at least one range per member ('
	  . scalar(@ranges) . ')');
my $overlaps = 0;
for my $i (1 .. $#ranges)
{
	$overlaps++ if $ranges[$i][1] <= $ranges[ $i - 1 ][2];
}
is($overlaps, 0, 'registry: no two ranges of orders overlap');
is( $reg->safe_psql('postgres',
		q{SELECT count(DISTINCT node_id) FROM snowid_pool_ranges WHERE pool = 'orders'}),
	'3', 'registry: ranges held by three nodes');

# Each value lies in a range of its member (checked in Perl against the
# ranges, all values).
my $misplaced = 0;
for my $n (@names)
{
	my @mine = grep { $_->[0] == $n } @ranges;
	for my $v (@{ $vals{$n} })
	{
		$misplaced++ unless grep { $_->[1] <= $v && $v <= $_->[2] } @mine;
	}
}
is($misplaced, 0, 'every value lies in a range the registry granted to the member that issued it');

# snowid_pool_owner on a sample: every 50th value of each member, its
# first and its last.
sub owner_check
{
	my ($what) = @_;
	my @sample;
	for my $n (@names)
	{
		my @v = @{ $vals{$n} };
		push @sample, map { "($v[$_], $n)" } grep { $_ % 50 == 0 || $_ == $#v } 0 .. $#v;
	}
	my $wrong = $reg->safe_psql('postgres',
		'SELECT count(*) FROM (VALUES ' . join(',', @sample) . ') s(v, n)'
		  . " WHERE snowid_pool_owner('orders', v) IS DISTINCT FROM n");
	is($wrong, '0',
		"$what: snowid_pool_owner names the issuing member for all " . scalar(@sample) . ' sampled values');
	return scalar(@sample);
}
owner_check('after the load');
is( $reg->safe_psql('postgres',
		q{SELECT snowid_pool_owner('orders', 9223372036854775000) IS NULL, snowid_pool_owner('nosuchpool', 1) IS NULL}),
	't|t', 'snowid_pool_owner: NULL for a value never granted and for an unknown pool');
my ($next_value, $granted) = split /\|/,
  $reg->safe_psql('postgres',
	q{SELECT next_value, granted_last_hour FROM snowid_pools WHERE name = 'orders'});
cmp_ok($next_value, '>', max_of(map { @{ $vals{$_} } } @names),
	"registry: next_value ($next_value) is above every value issued");
cmp_ok($granted, '>=', scalar(keys %owner_of),
	"registry: granted_last_hour ($granted) counts at least the values issued");

# ==== 3. the registry stopped ====

# The ranges in hand must hold the outage's values: the load above sized
# them (rate x lease).  If a member holds less, a few bursts raise its
# rate and the worker fetches a bigger range (bounded: 10 bursts).
my %in_hand;
for my $n (@names)
{
	for my $burst (1 .. 10)
	{
		$in_hand{$n} = holding($m{$n}, 'values_in_hand');
		last if $in_hand{$n} >= $outage_values;
		push @{ $vals{$n} }, take_values($m{$n}, 'burst', 5000);
		usleep(1_500_000);
	}
	cmp_ok($in_hand{$n}, '>=', $outage_values,
		"member $n holds at least $outage_values values before the registry stops");
	note "member $n before the outage: "
	  . holding($m{$n}, q{'in hand ' || values_in_hand || ' in ' || ranges || ' range(s), rate ' || coalesce(rate::text, '-') || '/s, time left ' || coalesce(time_left::text, '-')});
}
note 'registry ranges before the outage (node: count, smallest, largest): '
  . $reg->safe_psql('postgres',
	q{SELECT string_agg(format('%s: %s, %s, %s', node_id, n, lo, hi), '; ' ORDER BY node_id)
	  FROM (SELECT node_id, count(*) AS n, min(last_value - first_value + 1) AS lo, max(last_value - first_value + 1) AS hi
	        FROM snowid_pool_ranges WHERE pool = 'orders' GROUP BY node_id) s});

$reg->stop;
for my $n (@names)
{
	ok(wait_registry_state($m{$n}, 'unreachable'), "registry stopped: member $n is unreachable");
}
my %outage;
for my $n (@names)
{
	my ($ret, $out, $err) = $m{$n}->psql('postgres',
		"INSERT INTO vals(phase, client, v) SELECT 'outage', 0, snowid_ticket_next('t') FROM generate_series(1, $outage_values) RETURNING v"
	);
	is($ret, 0, "member $n issued $outage_values values with the registry stopped")
	  or diag $err;
	$outage{$n} = [ split /\n/, $out ];
	push @{ $vals{$n} }, @{ $outage{$n} };
	note "member $n after the outage's values: "
	  . holding($m{$n}, q{state || ', in hand ' || values_in_hand || ', ' || coalesce(detail, '')});
}

$reg->start;
for my $n (@names)
{
	ok(wait_registry_state($m{$n}, 'ok'), "registry back: member $n returns to ok by itself");
	ok( $m{$n}->poll_query_until('postgres',
			q{SELECT state = 'ok' FROM snowid_pool_holdings() WHERE pool = 'orders'}),
		"member $n: its holdings of orders are ok again");
	push @{ $vals{$n} }, take_values($m{$n}, 'after', 2000);
}

# ==== all values, once more ====

$dups = 0;
my %all;
for my $n (@names)
{
	$dups += grep { $all{$_}++ } @{ $vals{$n} };
	# values outside the load, in issue order (one session), increase and
	# are above every value of the load
	my @later = map { $_->[1] } rows_of($m{$n}, q{phase NOT IN ('first', 'load')});
	ok(strictly_increasing(@later),
		"member $n: its values increase through the bursts, the outage and after");
	cmp_ok(min_of(@later), '>', max_of(map { $_->[1] } rows_of($m{$n}, q{phase = 'load'})),
		"member $n: and they are above its values of the load");
	is( $m{$n}->safe_psql('postgres', 'SELECT count(*) = count(DISTINCT v) FROM vals'),
		't', "member $n: its table holds no value twice");
}
is($dups, 0, 'no value issued twice across the three members, outage included');
my $sampled = owner_check('at the end');
is($reg->safe_psql('postgres',
		q{SELECT count(*) FROM snowid_pool_ranges WHERE pool = 'orders' AND node_id NOT IN (1, 2, 3)}),
	'0', 'registry: no range for any other node');
note sprintf('figures: values per member (load + bursts + outage + after): %s; outage values per member: %d; '
	  . 'in hand before the outage: %s; sampled owners: %d; shared values: %d',
	join(', ', map { "$_: " . scalar(@{ $vals{$_} }) } @names),
	$outage_values, join(', ', map { "$_: $in_hand{$_}" } @names), $sampled, $dups);
note 'pools at the end: ' . $reg->safe_psql('postgres', 'SELECT * FROM snowid_pools');

$m{$_}->stop for @names;
$reg->stop;
done_testing();
