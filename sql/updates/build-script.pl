#!/usr/bin/perl
# Builds the update scripts that ALTER EXTENSION snowid UPDATE runs (the
# Makefile calls it; src/README.md, "Update scripts", says why):
#
#   perl sql/updates/build-script.pl hop HOP PART... >OUT
#       HOP (sql/updates/snowid--<old>--<new>.sql, hand-written) with each
#       directive line replaced by the statements of the install parts
#       PART... (sql/install/NN_*.sql, in the Makefile's order) that make
#       the object it names:
#         -- @function NAME       every CREATE FUNCTION (or PROCEDURE) NAME,
#                                 made CREATE OR REPLACE, and the COMMENT ON,
#                                 GRANT, REVOKE and ALTER statements of NAME
#         -- @view NAME           CREATE VIEW NAME made CREATE OR REPLACE, and
#                                 its COMMENT ON, GRANT, REVOKE, ALTER
#         -- @table NAME          a table new in the hop: CREATE TABLE NAME as
#                                 written, and its comments, grants, ALTER
#                                 TABLE, indexes, triggers, the
#                                 pg_extension_config_dump and the INSERTs
#         -- @type NAME           a type new in the hop, likewise
#         -- @event_trigger NAME  an event trigger new in the hop, likewise
#       A name no part defines, a directive it does not know, a HOP that
#       writes out a CREATE of a view, table, type or event trigger that a
#       part defines, or any CREATE FUNCTION (a body written twice, or one
#       that belongs in a part) stop the build.
#
#   perl sql/updates/build-script.pl released LIST NAME >OUT
#       the script NAME as it was released: sql/updates/NAME at the commit
#       LIST (sql/updates/released.txt) names for it, taken from git; a hop
#       with directives is expanded with the install parts of that commit.
#
# Perl 5 core only: the build needs nothing python3 or other modules give.
use strict;
use warnings;

my $prog = 'sql/updates/build-script.pl';

sub fail { print STDERR "$prog: $_[0]\n"; exit 1; }

# ---- SQL statements of a file, with the line each starts on ----
# Splits at top-level semicolons, past quoted strings, quoted names,
# dollar-quoted bodies and comments; a psql meta-command (\echo ... \quit)
# is a statement of its own, to the end of its line.
sub statements {
	my ($text, $file) = @_;
	my (@out, $start);
	my $line_of = sub { 1 + (substr($text, 0, $_[0]) =~ tr/\n//) };
	pos($text) = 0;
	while (pos($text) < length $text) {
		my $at = pos($text);
		if ($text =~ /\G\s+/gc || $text =~ /\G--[^\n]*/gc || $text =~ m{\G/\*.*?\*/}gcs) {
			next;
		}
		if (!defined $start && $text =~ /\G\\[^\n]*/gc) {
			push @out, { text => substr($text, $at, pos($text) - $at), line => $line_of->($at), file => $file };
			next;
		}
		$start = $at unless defined $start;
		if ($text =~ /\G;/gc) {
			push @out, { text => substr($text, $start, pos($text) - $start), line => $line_of->($start), file => $file };
			undef $start;
		} elsif ($text =~ /\G'(?:[^']|'')*'/gc || $text =~ /\G"(?:[^"]|"")*"/gc) {
		} elsif ($text =~ /\G(\$(?:[A-Za-z_]\w*)?\$)/gc) {
			my $end = index($text, $1, pos($text));
			fail("$file:" . $line_of->($at) . ": $1 is not closed") if $end < 0;
			pos($text) = $end + length $1;
		} elsif ($text =~ /\G[^\s;'"\$\\\/-]+/gc || $text =~ /\G./gcs) {
		}
	}
	fail("$file:" . $line_of->($start) . ": the last statement has no closing ;")
		if defined $start && substr($text, $start) =~ /\S/;
	return @out;
}

# An object's name as the parts write it: unquoted, without a schema.
my $NAME = qr/(?:(?:\@extschema\@|\w+)\.)?("?)(\w+)\g{-2}/;

sub name_of { my ($n) = @_; $n =~ s/^(?:\@extschema\@|\w+)\.//; $n =~ s/"//g; return lc $n; }

# What a statement of an install part does: the objects it belongs to
# (kind:name), and whether it is the one that creates the object.
sub classify {
	my ($text) = @_;
	my $s = $text;
	$s =~ s/--[^\n]*//g;
	$s =~ s/\s+/ /g;
	$s =~ s/^ //;
	my (%keys, $def);
	if ($s =~ /^CREATE (?:OR REPLACE )?(?:FUNCTION|PROCEDURE) $NAME ?\(/i) {
		$def = "function:" . lc $2;
	} elsif ($s =~ /^CREATE (?:OR REPLACE )?VIEW $NAME/i) {
		$def = "view:" . lc $2;
	} elsif ($s =~ /^CREATE (?:UNLOGGED )?TABLE (?:IF NOT EXISTS )?$NAME/i) {
		$def = "table:" . lc $2;
	} elsif ($s =~ /^CREATE TYPE $NAME/i) {
		$def = "type:" . lc $2;
	} elsif ($s =~ /^CREATE EVENT TRIGGER $NAME/i) {
		$def = "event_trigger:" . lc $2;
	} elsif ($s =~ /^CREATE (?:UNIQUE )?INDEX .*?\bON (?:ONLY )?$NAME/i
		|| $s =~ /^CREATE (?:CONSTRAINT )?TRIGGER \S+ .*?\bON $NAME/i
		|| $s =~ /^INSERT INTO $NAME/i
		|| $s =~ /^SELECT (?:pg_catalog\.)?pg_extension_config_dump ?\( ?'$NAME'/i) {
		$keys{"table:" . lc $2} = 1;
	} elsif ($s =~ /^DROP (?:FUNCTION|PROCEDURE|ROUTINE) (?:IF EXISTS )?$NAME ?\(/i) {
		$keys{"function:" . lc $2} = 1;
	} elsif ($s =~ /^DROP (VIEW|TABLE|TYPE|EVENT TRIGGER) (?:IF EXISTS )?$NAME/i) {
		my ($k, $n) = (lc $1, lc $3);	# (before s/// resets them)
		$k =~ s/ /_/;
		$keys{"$k:$n"} = 1;
	} elsif ($s =~ /^(?:COMMENT ON|ALTER) (?:FUNCTION|PROCEDURE|ROUTINE) $NAME ?\(/i) {
		$keys{"function:" . lc $2} = 1;
	} elsif ($s =~ /^(?:COMMENT ON|ALTER) (TABLE|VIEW|TYPE|EVENT TRIGGER) (?:ONLY )?$NAME/i) {
		my ($k, $n) = (lc $1, lc $3);	# (before s/// resets them)
		$k =~ s/ /_/;
		$keys{"$k:$n"} = 1;
	} elsif ($s =~ /^COMMENT ON COLUMN $NAME\.\w+/i) {
		$keys{"table:" . lc $2} = $keys{"view:" . lc $2} = 1;
	} elsif ($s =~ /^(?:GRANT|REVOKE) .*?\bON (FUNCTION|PROCEDURE|ROUTINE) (.*?) (?:TO|FROM) /i) {
		my $list = $2;
		1 while $list =~ s/\([^()]*\)//;	# the argument lists
		$keys{"function:" . name_of($_)} = 1 for grep { /\S/ } split / ?, ?/, $list;
	} elsif ($s =~ /^(?:GRANT|REVOKE) .*?\bON (TYPE )?((?!FUNCTION |PROCEDURE |ROUTINE |SEQUENCE |SCHEMA |ALL |DATABASE |LANGUAGE |FOREIGN |LARGE |TABLESPACE |DOMAIN |PARAMETER ).*?) (?:TO|FROM) /i) {
		my ($type, $list) = ($1, $2);
		$list =~ s/^TABLE //i;
		for (grep { /\S/ } split / ?, ?/, $list) {
			if ($type) { $keys{"type:" . name_of($_)} = 1 }
			else { $keys{"table:" . name_of($_)} = $keys{"view:" . name_of($_)} = 1 }
		}
	}
	$keys{$def} = 1 if $def;
	return ($def, [sort keys %keys]);
}

# ---- the install parts: each statement, and the objects they create ----
sub read_parts {
	my (@parts) = @_;	# [file name, text]
	my (@stmts, %defined);
	for my $p (@parts) {
		for my $st (statements($p->[1], $p->[0])) {
			my ($def, $keys) = classify($st->{text});
			$st->{def} = $def;
			$st->{keys} = $keys;
			push @stmts, $st;
			$defined{$def} //= "$st->{file}:$st->{line}" if $def;
		}
	}
	return (\@stmts, \%defined);
}

my %directive = map { $_ => 1 } qw(function view table type event_trigger);

# The hop with its directives expanded.
sub expand {
	my ($hop_file, $hop, $stmts, $defined) = @_;
	# A hop writes out no function, and nothing a part creates.
	for my $st (statements($hop, $hop_file)) {
		my ($def) = classify($st->{text});
		next unless $def;
		my ($kind, $name) = split /:/, $def;
		fail("$hop_file:$st->{line}: this CREATE of $kind $name repeats the one in "
			. "$defined->{$def}: write the line \"-- \@$kind $name\" instead, and the "
			. "build puts the install part's statements there (src/README.md, \"Update scripts\")")
			if $defined->{$def};
		fail("$hop_file:$st->{line}: a hop creates no function of its own ($name): "
			. "write a migration's steps in a DO block, and a function of the extension in "
			. "an install part, named here by \"-- \@function $name\" (src/README.md, \"Update scripts\")")
			if $kind eq 'function';
	}
	my (%done, $out);
	my $n = 0;
	for my $line (split /^/m, $hop) {
		$n++;
		if ($line !~ /^--\s*@/) {
			$out .= $line;
			next;
		}
		$line =~ /^--\s*@(\w+)\s+("?)(\w+)\2\s*$/
			or fail("$hop_file:$n: a directive is \"-- \@<kind> <name>\", <kind> one of "
				. join(', ', sort keys %directive) . ": not $line");
		my ($kind, $name) = ($1, lc $3);
		fail("$hop_file:$n: unknown directive \@$kind (known: " . join(', ', map { "\@$_" } sort keys %directive) . ")")
			unless $directive{$kind};
		fail("$hop_file:$n: \@$kind $name: no install part (sql/install/NN_*.sql) creates $kind $name")
			unless $defined->{"$kind:$name"};
		$out .= $line;
		# A view the parts define again (CREATE OR REPLACE VIEW, columns
		# added) is made once, as the last definition says, where the first
		# stood: the old version may hold the last one already.
		my @defs = grep { ($stmts->[$_]{def} // '') eq "$kind:$name" } 0 .. $#$stmts;
		my %as = $kind eq 'view' && @defs > 1 ? ($defs[0] => $defs[-1], map { $_ => -1 } @defs[1 .. $#defs]) : ();
		for my $i (0 .. $#$stmts) {
			next unless grep { $_ eq "$kind:$name" } @{ $stmts->[$i]{keys} };
			next if $done{$i}++;
			my $st = $stmts->[$as{$i} // $i];
			next if ($as{$i} // 0) < 0;
			my $text = $st->{text};
			# a function or view the old version may hold already
			$text =~ s/^CREATE(\s+)(FUNCTION|PROCEDURE|VIEW)\b/CREATE OR REPLACE$1$2/i
				if ($st->{def} // '') eq "$kind:$name" && $kind =~ /^(?:function|view)$/;
			$out .= "-- $st->{file}:$st->{line}\n$text\n\n";
		}
	}
	return $out;
}

sub slurp {
	my ($file) = @_;
	open(my $fh, '<', $file) or fail("$file: $!");
	local $/;
	my $text = <$fh>;
	return $text;
}

sub git_show {
	my ($spec) = @_;
	open(my $fh, '-|', 'git', 'show', $spec) or fail("git show $spec: $!");
	local $/;
	my $text = <$fh>;
	close($fh) or fail("git show $spec failed: the released scripts come from git (src/README.md, \"Update scripts\")");
	return $text;
}

my $mode = shift // '';
if ($mode eq 'hop' && @ARGV >= 2) {
	my ($hop_file, @part_files) = @ARGV;
	my ($stmts, $defined) = read_parts(map { [$_, slurp($_)] } @part_files);
	print "-- Built from $hop_file and the install parts by $prog: edit those, not this.\n";
	print expand($hop_file, slurp($hop_file), $stmts, $defined);
} elsif ($mode eq 'released' && @ARGV == 2) {
	my ($list, $name) = @ARGV;
	my ($commit) = map { /^([0-9a-f]{40})\s+\Q$name\E\s*$/ ? $1 : () } split /\n/, slurp($list);
	fail("$list names no commit for $name") unless $commit;
	my $text = git_show("$commit:sql/updates/$name");
	if ($text =~ /^--\s*@/m) {
		open(my $ls, '-|', 'git', 'ls-tree', '--name-only', $commit, 'sql/install/')
			or fail("git ls-tree: $!");
		my @parts = sort grep { m{^sql/install/[0-9][^/]*\.sql$} } map { chomp; $_ } <$ls>;
		close($ls) or fail("git ls-tree $commit sql/install/ failed");
		my ($stmts, $defined) = read_parts(map { ["$commit:$_", git_show("$commit:$_")] } @parts);
		$text = expand("$commit:sql/updates/$name", $text, $stmts, $defined);
	}
	print $text;
} else {
	fail("usage: $prog hop HOP PART... | $prog released LIST NAME");
}
