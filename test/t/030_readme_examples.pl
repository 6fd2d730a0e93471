
# Copyright (c) snowid contributors
#
# The SQL examples of README.md run as pasted, in order, on one fresh
# database of a server configured as test/demo.sh configures the quick-start
# server (snowid preloaded, snowid.node_id = 1).  Every ```sql block of the
# README is one subtest, run with psql and ON_ERROR_STOP, so an example that
# collides with an earlier one (a table created twice, a role that does not
# exist) fails here.  A block that must not run (say, one that shows an
# error on purpose) carries the line
#
#   <!-- readme-examples: skip -->
#
# right before its opening fence.  Blocks marked
#
#   <!-- readme-examples: citus -->
#
# run on a Citus cluster instead, in test/t/071_citus_readme.pl.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

my $readme = "$FindBin::RealBin/../../README.md";
my @lines = split /\n/, slurp_file($readme);

# The blocks: [first line number, text], in order.  A fence is ``` at the
# start of a line; ```sql opens a block that runs.
my @blocks;
my ($in, $runs, $skip_next, $start, @body) = (0, 0, 0, 0);
for my $i (0 .. $#lines)
{
	my $line = $lines[$i];
	if (!$in)
	{
		if ($line =~ /^<!--\s*readme-examples:\s*(?:skip|citus)\s*-->/)
		{
			$skip_next = 1;
		}
		elsif ($line =~ /^```\s*(\S*)/)
		{
			($in, $runs, $start, @body) = (1, lc($1) eq 'sql' && !$skip_next, $i + 1);
			$skip_next = 0;
		}
		elsif ($line =~ /\S/)
		{
			$skip_next = 0;
		}
		next;
	}
	if ($line =~ /^```\s*$/)
	{
		push @blocks, [ $start, join("\n", @body) . "\n" ] if $runs;
		$in = 0;
		next;
	}
	push @body, $line;
}
ok(!$in, 'every code block of README.md is closed');
cmp_ok(scalar(@blocks), '>=', 4, 'README.md has SQL examples (' . scalar(@blocks) . ')');

my $node = snowid_node('readme', 1);
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE examples');

for my $block (@blocks)
{
	my ($line, $sql) = @$block;
	my ($first) = grep { /\S/ && !/^\s*--/ } split /\n/, $sql;
	$first //= '';
	$first =~ s/\s+/ /g;
	$first = substr($first, 0, 60);
	my ($ret, $out, $err) = $node->psql('examples', $sql,
		extra_params => [ '-v', 'ON_ERROR_STOP=1' ]);
	is($ret, 0, "README.md line $line ($first) runs as pasted")
	  or diag("psql said:\n$err\nthe block:\n$sql");
}

$node->stop;
done_testing();
