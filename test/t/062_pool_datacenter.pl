
# Copyright (c) snowid contributors
#
# The datacenter tier: a global registry with pool 'orders' (bigint); a
# datacenter registry (a server WITH snowid preloaded, node 10 of the global
# registry, whose own registry database has the pool 'orders' created with
# upstream => true); member A of the datacenter registry (its node 1 there)
# and member B of the global registry directly (node 2), each with a pooled
# ticket on 'orders'.
#
# - both issue (several ranges each: the first ranges are small), their
#   values are disjoint, distinct and increasing per member;
# - the global registry shows the datacenter's node 10 holding ranges, and
#   names node 10 as the owner of A's values, node 2 of B's;
# - the datacenter registry shows its pool as upstream, its ranges to A
#   inside what it holds from the global registry, and names node 1 (A) as
#   the owner of A's values;
# - the ranges of each registry do not overlap;
# - (1.11) a member role of the datacenter registry that is not a superuser
#   (m_x, holding node 5 there) reports 1,024 values at the top of the
#   upstream pool: refused (22023), nothing recorded, the datacenter's
#   holdings as they were (1.10 emptied them: unusable, every grant wait);
#   a report a grant could have been (the next 10 values in hand) is
#   recorded and moves the holdings by 10 values only.
#
# No assertion depends on elapsed time.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

# ---- helpers (local to this file) ----

# How the members (the datacenter registry too) are configured:
# member($name, $node_id, @member, registry => ...).
my @member = (application_name => 1, cluster_name => 1, lease => '60s');

# A started member with node $node_id of the registry $reg, holding its
# node (a test), with the pooled ticket 't' on 'orders' and a table for its
# values.
sub start_member
{
	my ($name, $node_id, $reg) = @_;
	my $node = member($name, $node_id, @member,
		registry => registry_conninfo($reg),
		wait => "$name holds its node");
	$node->safe_psql(
		'postgres', q{
SELECT snowid_ticket_create('t', pool => 'orders');
CREATE TABLE vals(seq bigserial, v bigint NOT NULL);
});
	return $node;
}

sub take_values
{
	my ($node, $n) = @_;
	return split /\n/,
	  $node->safe_psql('postgres',
		"INSERT INTO vals(v) SELECT snowid_ticket_next('t') FROM generate_series(1, $n) RETURNING v");
}

# The ranges of pool orders on registry $reg: [node_id, first, effective
# last], ordered; and how many overlap their predecessor.
sub ranges_of
{
	my ($reg) = @_;
	my @r = map { [ split /\|/ ] } split /\n/,
	  $reg->safe_psql('postgres',
		q{SELECT node_id, first_value, CASE WHEN returned THEN returned_from - 1 ELSE last_value END
		  FROM snowid_pool_ranges WHERE pool = 'orders' ORDER BY first_value});
	my $overlaps = grep { $_ > 0 && $r[$_][1] <= $r[ $_ - 1 ][2] } 0 .. $#r;
	return (\@r, $overlaps);
}

# How many of @values snowid_pool_owner on $reg does not attribute to node
# $node_id (a sample: every 20th, the first and the last).
sub wrong_owners
{
	my ($reg, $node_id, @values) = @_;
	my @sample = map { $values[$_] } grep { $_ % 20 == 0 || $_ == $#values } 0 .. $#values;
	return $reg->safe_psql('postgres',
		'SELECT count(*) FROM unnest(ARRAY[' . join(',', @sample) . ']::bigint[]) AS s(v)'
		  . " WHERE snowid_pool_owner('orders', v) IS DISTINCT FROM $node_id");
}

# ---- the global registry ----

my $global = registry(name => 'global', sql => "SELECT snowid_pool_create('orders');");

# ---- the datacenter registry: preloaded, a member of the global one ----

my $dc = member('datacenter', 10, @member,
	registry => registry_conninfo($global),
	wait => 'the datacenter registry holds node 10 of the global registry');
$dc->safe_psql('postgres',
	"SELECT snowid_pool_create('orders', upstream => true);");
is( $dc->safe_psql('postgres',
		q{SELECT upstream FROM snowid_pools WHERE name = 'orders'}),
	't', 'datacenter: pool orders is drawn from upstream');
ok( $dc->poll_query_until('postgres',
		q{SELECT state = 'ok' AND values_in_hand > 0 FROM snowid_pool_holdings() WHERE pool = 'orders'}),
	'datacenter: it holds a range of orders from the global registry')
  or diag 'holdings: ' . $dc->safe_psql('postgres', 'SELECT * FROM snowid_pool_holdings()');

# ---- the members ----

my $a = start_member('member_dc', 1, $dc);        # of the datacenter
my $b = start_member('member_global', 2, $global);    # of the global registry

# The first call of each ticket does not fail for want of a range (the
# worker fetches one for a ticket that exists, or the call waits for it).
my (@a_vals, @b_vals);
for my $r ([ 'A', $a, \@a_vals ], [ 'B', $b, \@b_vals ])
{
	my ($who, $node, $list) = @$r;
	my ($ret, $out, $err) = $node->psql('postgres',
		"\\set VERBOSITY verbose\nINSERT INTO vals(v) VALUES (snowid_ticket_next('t')) RETURNING v");
	is($ret, 0, "member $who: the first snowid_ticket_next() after snowid_ticket_create() succeeds")
	  or diag $err;
	push @$list, $out if $ret == 0;
	ok( $node->poll_query_until('postgres',
			q{SELECT state = 'ok' AND values_in_hand > 0 FROM snowid_pool_holdings() WHERE pool = 'orders'}),
		"member $who holds a range of orders")
	  or diag 'holdings: ' . $node->safe_psql('postgres', 'SELECT * FROM snowid_pool_holdings()');
}

# Rounds, alternating, so that both members and the datacenter come back
# for more ranges while the other draws from the same global pool.
for my $round (1 .. 4)
{
	push @a_vals, take_values($a, 5000);
	push @b_vals, take_values($b, 5000);
}
cmp_ok(scalar(@a_vals), '>=', 20000, 'member A (datacenter) issued its values (' . scalar(@a_vals) . ')');
cmp_ok(scalar(@b_vals), '>=', 20000, 'member B (global) issued its values (' . scalar(@b_vals) . ')');
ok(strictly_increasing(@a_vals), 'member A: its values increase');
ok(strictly_increasing(@b_vals), 'member B: its values increase');
my %a_set = map { $_ => 1 } @a_vals;
my $shared = grep { $a_set{$_} } @b_vals;
is($shared, 0, 'the values of A and B are disjoint');
is(scalar(keys %a_set), scalar(@a_vals), 'member A: no value twice');

# ---- what the registries show ----

my ($g_ranges, $g_overlaps) = ranges_of($global);
my ($d_ranges, $d_overlaps) = ranges_of($dc);
is($g_overlaps, 0, 'global registry: no two ranges overlap');
is($d_overlaps, 0, 'datacenter registry: no two ranges overlap');
my @g_dc = grep { $_->[0] == 10 } @$g_ranges;
cmp_ok(scalar(@g_dc), '>=', 1,
	'global registry: snowid_pool_ranges shows the datacenter\'s node 10 holding ranges (' . scalar(@g_dc) . ')');
is( $global->safe_psql('postgres',
		q{SELECT string_agg(DISTINCT node_id::text, ',' ORDER BY node_id::text) FROM snowid_pool_ranges WHERE pool = 'orders'}),
	'10,2', 'global registry: ranges only for node 10 (the datacenter) and node 2 (B)');
is(wrong_owners($global, 10, @a_vals), '0',
	'global registry: snowid_pool_owner names node 10 (the datacenter) for A\'s values');
is(wrong_owners($global, 2, @b_vals), '0',
	'global registry: snowid_pool_owner names node 2 for B\'s values');
is(wrong_owners($dc, 1, @a_vals), '0',
	'datacenter registry: snowid_pool_owner names node 1 (A) for A\'s values');
is($dc->safe_psql('postgres',
		'SELECT snowid_pool_owner(\'orders\', ' . $b_vals[0] . ') IS NULL'),
	't', 'datacenter registry: no owner for a value of B');
is( $dc->safe_psql('postgres',
		q{SELECT string_agg(DISTINCT node_id::text, ',') FROM snowid_pool_ranges WHERE pool = 'orders'}),
	'1', 'datacenter registry: its ranges are held by node 1 (A)');

# Each range the datacenter granted lies inside a range it holds upstream.
my $outside = grep {
	my $r = $_;
	!grep { $_->[1] <= $r->[1] && $r->[2] <= $_->[2] } @g_dc
} @$d_ranges;
is($outside, 0, 'every range the datacenter granted lies inside one it holds from the global registry');
cmp_ok(scalar(@$d_ranges), '>=', 2, 'the datacenter granted several ranges (' . scalar(@$d_ranges) . ')');

note sprintf('datacenter tier: A %d values, B %d values, shared %d; global ranges: %d to node 10, %d to node 2; datacenter ranges: %d to node 1',
	scalar(@a_vals), scalar(@b_vals), $shared, scalar(@g_dc),
	scalar(grep { $_->[0] == 2 } @$g_ranges), scalar(@$d_ranges));
note 'datacenter holdings: ' . $dc->safe_psql('postgres', 'SELECT * FROM snowid_pool_holdings()');
note 'global pools: ' . $global->safe_psql('postgres', 'SELECT * FROM snowid_pools');

# ---- a member's report on the upstream pool (1.11) ----

# A member role, not a superuser, holding node 5 of the datacenter registry.
my $dc_layout = $dc->safe_psql('postgres', 'SELECT layout FROM snowid_registry_settings');
$dc->safe_psql('postgres',
	"CREATE ROLE m_x LOGIN; GRANT EXECUTE ON FUNCTION "
	  . registry_signature('claim') . ', ' . registry_signature('pool_report') . ' TO m_x;');
is( $dc->safe_psql(
		'postgres',
		"SELECT result FROM snowid_registry_claim(5, false, 1023, \$\$$dc_layout\$\$, "
		  . "'x', 'm_x', 1, 1, 'evil5', repeat('s', 32), NULL, false, 60000, 0, 0, NULL)",
		extra_params => [ '-U', 'm_x' ]),
	'ok', 'datacenter: m_x holds node 5');

# m_x's report of the range lo .. hi of the upstream pool: (rc, out, err)
sub report_upstream
{
	my ($lo, $hi) = @_;
	return $dc->psql('postgres',
		"\\set VERBOSITY verbose\nSELECT snowid_pool_report(5, 1, 'evil5', repeat('s', 32), "
		  . "ARRAY['orders'], ARRAY[$lo]::bigint[], ARRAY[$hi]::bigint[])",
		extra_params => [ '-U', 'm_x' ]);
}
my $holdings_sql =
  q{SELECT state || ' ' || next_value || ' ' || values_in_hand FROM snowid_pool_holdings() WHERE pool = 'orders'};
# (no range being fetched meanwhile)
ok( $dc->poll_query_until('postgres',
		q{SELECT state = 'ok' AND values_in_hand > 0 FROM snowid_pool_holdings() WHERE pool = 'orders'}),
	'datacenter: its holdings of orders are settled');
my $before = $dc->safe_psql('postgres', $holdings_sql);
my ($rc, $out, $err) = report_upstream('9223372036854774784', '9223372036854775807');
isnt($rc, 0, "m_x's report of 1,024 values at the top of the upstream pool is refused");
like($err, qr/22023.*not where a grant to this member could have been/s,
	'... as values no grant to it could have been (22023)');
is($dc->safe_psql('postgres', $holdings_sql), $before,
	"... the datacenter's holdings as they were ($before)");
is($dc->safe_psql('postgres', 'SELECT count(*) FROM snowid_pool_ranges WHERE node_id = 5'),
	'0', '... and nothing recorded');
my ($next) = $before =~ /^ok (\d+) \d+$/;
($rc, $out, $err) = report_upstream($next, $next + 9);
is($out, '1', 'a report of the next 10 values in hand is recorded') or diag $err;
my ($state_after, $next_after) = split / /, $dc->safe_psql('postgres', $holdings_sql);
is("$state_after " . ($next_after - $next), 'ok 10',
	'... and moves the holdings by those 10 values only');

$a->stop;
$b->stop;
$dc->stop;
$global->stop;
done_testing();
