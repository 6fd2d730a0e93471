# Small helpers shared by snowid's TAP tests (test/t/*.pl).
package SnowidTest;

use strict;
use warnings;
use Exporter 'import';

our @EXPORT = qw(max_of min_of strictly_increasing);

# Largest and smallest of a list of IDs (64-bit integers; Perl compares
# them exactly as integers on 64-bit builds).
sub max_of
{
	my $max;
	for (@_) { $max = $_ if !defined $max || $_ > $max; }
	return $max;
}

sub min_of
{
	my $min;
	for (@_) { $min = $_ if !defined $min || $_ < $min; }
	return $min;
}

# True if every ID is greater than the one before it.
sub strictly_increasing
{
	my @ids = @_;
	for my $i (1 .. $#ids)
	{
		return 0 unless $ids[$i] > $ids[ $i - 1 ];
	}
	return 1;
}

1;
