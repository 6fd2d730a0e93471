
# Copyright (c) snowid contributors
#
# A pool used up: an integer pool 'tiny_pool' from 2147400000 (83,648
# values up to 2147483647) drained by three members at once, each through
# its pooled ticket 't' until it fails.
#
# - each member ends with SQLSTATE 2200H naming the pool (and stays there:
#   a later call fails the same way), never with a wrap or a value above
#   2147483647;
# - all values are distinct across the members, none below the start;
# - each member's values increase in issue order;
# - the registry granted the whole space (snowid_pools.values_left = 0,
#   next_value NULL, the ranges add up to 83,648 values without
#   overlap), shared among the three members;
# - the values lost (granted or not, never issued) are counted and reported,
#   and bounded by a few ticket blocks.
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

my $start = 2147400000;
my $maxvalue = 2147483647;
my $capacity = $maxvalue - $start + 1;
my $block = 1000;    # the ticket's block (snowid_ticket_create's default)

# ---- the members' setup ----

# The pooled ticket 't' and a table for its values; drain().
my $member_sql = qq{
SELECT snowid_ticket_create('t', pool => 'tiny_pool', block => $block);
CREATE TABLE vals(seq bigint NOT NULL, v bigint NOT NULL);
} . q{
-- Take values until an error other than 55000 (no range in hand yet: wait
-- for the worker, up to 60 s in all); the values go into vals in issue
-- order, the error is returned as 'SQLSTATE: message'.  The values live in
-- a variable, which the error does not roll back.
CREATE FUNCTION drain() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	got bigint[] := '{}';
	st text;
	msg text;
	waits integer := 0;
BEGIN
	LOOP
		BEGIN
			LOOP
				got := got || snowid_ticket_next('t');
			END LOOP;
		EXCEPTION WHEN OTHERS THEN
			GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
		END;
		EXIT WHEN st <> '55000' OR waits >= 600;
		waits := waits + 1;
		PERFORM pg_sleep(0.1);
	END LOOP;
	INSERT INTO vals SELECT o, v FROM unnest(got) WITH ORDINALITY AS u(v, o);
	RETURN st || ': ' || msg;
END
$$;
};

# ---- the registry and the members ----

my ($reg, $conninfo) =
  registry(sql => "SELECT snowid_pool_create('tiny_pool', 'integer', $start);");
is( $reg->safe_psql('postgres',
		q{SELECT type, start, maxvalue, next_value, values_left FROM snowid_pools WHERE name = 'tiny_pool'}),
	"integer|$start|$maxvalue|$start|$capacity",
	"registry: integer pool tiny_pool from $start, $capacity values left");

my %m;
$m{$_} = member(
	"member_$_", $_,
	registry => $conninfo,
	cluster_name => 1,
	application_name => 1,
	lease => '60s',
	sql => $member_sql) for (1, 2, 3);
my @names = sort keys %m;
for my $n (@names)
{
	ok(wait_registry_state($m{$n}, 'ok'), "member $n holds its node");
	is( $m{$n}->safe_psql('postgres',
			q{SELECT type FROM snowid_pool_holdings() WHERE pool = 'tiny_pool'}),
		'integer', "member $n: the ticket learnt the pool's type");
}

# ==== drain the pool from the three members at once ====

my %run;
for my $n (@names)
{
	my %r = (out => '', err => '');
	$r{handle} = IPC::Run::start(
		[
			'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d',
			$m{$n}->connstr('postgres'), '-c', 'SELECT drain()'
		],
		'>', \$r{out}, '2>', \$r{err},
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	$run{$n} = \%r;
}

my (%vals, %all);
my $dups = 0;
my $issued = 0;
for my $n (@names)
{
	ok($run{$n}->{handle}->finish, "member $n: drain() ran") or diag $run{$n}->{err};
	chomp(my $end = $run{$n}->{out});
	like($end, qr/^2200H: .*tiny_pool/,
		"member $n ends with SQLSTATE 2200H naming the pool");
	note "member $n ended with: $end";
	$vals{$n} = [ split /\n/,
		  $m{$n}->safe_psql('postgres', 'SELECT v FROM vals ORDER BY seq') ];
	my $count = scalar @{ $vals{$n} };
	$issued += $count;
	cmp_ok($count, '>', 0, "member $n issued values ($count)");
	cmp_ok(max_of(@{ $vals{$n} }) // 0, '<=', $maxvalue, "member $n: no value above $maxvalue");
	cmp_ok(min_of(@{ $vals{$n} }) // 0, '>=', $start, "member $n: no value below the start $start");
	ok(strictly_increasing(@{ $vals{$n} }), "member $n: its values increase");
	$dups += grep { $all{$_}++ } @{ $vals{$n} };

	# It stays empty: the next call fails the same way.
	my ($ret, $out, $err) = $m{$n}->psql('postgres',
		"\\set VERBOSITY verbose\nSELECT snowid_ticket_next('t')");
	like($err, qr/ERROR:  2200H: .*tiny_pool/,
		"member $n: a later snowid_ticket_next() fails with 2200H naming the pool");
	is( $m{$n}->safe_psql('postgres',
			q{SELECT state, values_in_hand FROM snowid_pool_holdings() WHERE pool = 'tiny_pool'}),
		'empty|0', "member $n: holdings show the pool empty, nothing in hand");
}
is($dups, 0, 'no value issued twice across the three members');

# ==== the registry ====

is( $reg->safe_psql('postgres',
		q{SELECT next_value IS NULL, values_left FROM snowid_pools WHERE name = 'tiny_pool'}),
	't|0', 'registry: the whole pool was granted, nothing left (next_value NULL)');
my @ranges = map { [ split /\|/ ] } split /\n/,
  $reg->safe_psql('postgres',
	q{SELECT node_id, first_value, CASE WHEN returned THEN returned_from - 1 ELSE last_value END
	  FROM snowid_pool_ranges WHERE pool = 'tiny_pool' ORDER BY first_value});
my ($overlaps, $granted) = (0, 0);
for my $i (0 .. $#ranges)
{
	$overlaps++ if $i > 0 && $ranges[$i][1] <= $ranges[ $i - 1 ][2];
	$granted += $ranges[$i][2] - $ranges[$i][1] + 1;
}
is($overlaps, 0, 'registry: no two ranges overlap');
is($granted, $capacity, "registry: the ranges add up to the pool ($capacity values)");
cmp_ok($ranges[-1][2], '<=', $maxvalue, 'registry: the last range ends at or below the maximum');
is( $reg->safe_psql('postgres',
		q{SELECT count(DISTINCT node_id) FROM snowid_pool_ranges WHERE pool = 'tiny_pool'}),
	'3', 'registry: the three members shared the pool');

my $lost = $capacity - $issued;
cmp_ok($lost, '>=', 0, 'no more values issued than the pool holds');
cmp_ok($lost, '<=', 3 * $block, "values lost ($lost) at most a ticket block per member");
note sprintf('exhaustion: pool of %d values; issued %d (member 1 %d, member 2 %d, member 3 %d); lost %d; ranges %d (sizes %s)',
	$capacity, $issued, map({ scalar @{ $vals{$_} } } @names), $lost, scalar(@ranges),
	join(' ', map { "$_->[0]:" . ($_->[2] - $_->[1] + 1) } @ranges));

$m{$_}->stop for @names;
$reg->stop;
done_testing();
