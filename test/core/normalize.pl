#!/usr/bin/perl
# Normalize pg_regress's regression.diffs (diff -U3 of each failing test)
# into what test/core/run.sh compares with test/core/expected-<major>.diffs:
#
#   === TEST                 one section per test that differs, by name
#   -LINE / +LINE            the lines removed from / added to its output
#
# - File names, timestamps, hunk headers (line numbers) and context lines
#   are dropped.
# - psql's alignment is ignored: runs of blanks count as one and a table's
#   rule (----+----) as "-+-", so that a row that widens a column does not
#   make every other row of the table differ.  A row count "(N rows)" counts
#   as any count (the rows themselves are compared).  Within each hunk, the
#   removed and added lines that are then equal, in the same order (their
#   longest common subsequence), cancel: a row moved still differs.
# - In the lines left, a name snowid_... becomes snowid_* and, on such a
#   line, a number of 5 digits or more (an OID) becomes <oid>; a list of such
#   names ("public.snowid_*, public.snowid_*") becomes one name and ", ...";
#   and equal lines that name snowid_* count once.  So a row listing one of
#   snowid's own objects stands for any number of them: a function or event
#   trigger added to snowid does not change the result.  Any other line
#   keeps its text and its count, and a test not listed before is a section
#   of its own.
use strict;
use warnings;

my (%sec, $cur, @minus, @plus, @order, $header);

sub norm {
	my ($s) = @_;
	$s =~ s/\s+$//;
	$s =~ s/^\s+/ /;
	if ($s =~ /^-+(\+-+)*$/) {
		$s =~ s/-+/-/g;
		return $s;
	}
	$s =~ s/\s+/ /g;
	$s =~ s/^\(\d+ rows?\)$/(N rows)/;
	return $s;
}

# End of a hunk: cancel the LCS of its removed and added lines (normalized),
# keep the others in their order.
sub flush_hunk {
	return unless defined $cur;
	my @a = map { norm($_) } @minus;
	my @b = map { norm($_) } @plus;
	my ($n, $m) = (scalar @a, scalar @b);
	my @L;
	for (my $i = $n; $i >= 0; $i--) {
		for (my $j = $m; $j >= 0; $j--) {
			if ($i == $n || $j == $m) { $L[$i][$j] = 0; }
			elsif ($a[$i] eq $b[$j]) { $L[$i][$j] = $L[$i + 1][$j + 1] + 1; }
			else {
				$L[$i][$j] = $L[$i + 1][$j] >= $L[$i][$j + 1] ? $L[$i + 1][$j] : $L[$i][$j + 1];
			}
		}
	}
	my (%ma, %mb);
	my ($i, $j) = (0, 0);
	while ($i < $n && $j < $m) {
		if ($a[$i] eq $b[$j]) { $ma{$i++} = 1; $mb{$j++} = 1; }
		elsif ($L[$i + 1][$j] >= $L[$i][$j + 1]) { $i++; }
		else { $j++; }
	}
	my ($ia, $ib) = (0, 0);
	for my $o (@order) {
		if ($o eq '-') { push @{ $sec{$cur} }, "-" . $a[$ia] unless $ma{$ia}; $ia++; }
		else { push @{ $sec{$cur} }, "+" . $b[$ib] unless $mb{$ib}; $ib++; }
	}
	@minus = @plus = @order = ();
}

while (my $line = <>) {
	chomp $line;
	if ($line =~ m{^diff .*/([^/\s]+)\.out$}) {
		flush_hunk();
		$cur = $1;
		$sec{$cur} ||= [];
		$header = 2;    # "--- expected" and "+++ results" follow
		next;
	}
	next unless defined $cur;
	if ($header && $line =~ /^(---|\+\+\+) /) { $header--; next; }
	$header = 0;
	if ($line =~ /^@@ /) { flush_hunk(); next; }
	next if $line =~ /^\\/;                           # "\ No newline at end of file"
	if ($line =~ /^-(.*)$/s) { push @minus, $1; push @order, '-'; }
	elsif ($line =~ /^\+(.*)$/s) { push @plus, $1; push @order, '+'; }
	# context lines: nothing
}
flush_hunk();

for my $t (sort keys %sec) {
	my (%seen, @out);
	for my $l (@{ $sec{$t} }) {
		if ($l =~ /snowid_[A-Za-z0-9_]/) {
			$l =~ s/snowid_[A-Za-z0-9_]+/snowid_*/g;
			$l =~ s/\b\d{5,}\b/<oid>/g;
			$l =~ s/((?:\w+\.)?snowid_\*)(?:, (?:\w+\.)?snowid_\*)+/$1, .../g;
			next if $seen{$l}++;
		}
		push @out, $l;
	}
	print "=== $t\n", map { "$_\n" } @out;
}
