
# Copyright (c) snowid contributors
#
# The update scripts write no function body twice (issue 39; src/README.md,
# "Update scripts").  The hops in sql/updates/ are hand-written text with
# directives that sql/updates/build-script.pl expands from the install
# parts; released scripts come from git at the commit
# sql/updates/released.txt names.  Here, without a server:
#   1. every hop of this tree carries no CREATE FUNCTION and builds (the
#      rule keeps holding for what is committed);
#   2. the tool refuses what would write a body twice or name nothing;
#   3. a directive brings the install parts' statements, in their order;
#   4. a released hop with directives is expanded with the parts of its
#      own commit, not today's (needs git; skipped without it).
# pg_regress `upgrade` runs the real hops against a fresh install.

use strict;
use warnings;

use File::Path qw(make_path);
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;

my $src = "$FindBin::RealBin/../..";
my $tool = "$src/sql/updates/build-script.pl";
my @parts = map { "$src/$_" }
  (slurp_file("$src/Makefile") =~ m{^\s*(sql/install/[0-9]\S+\.sql)}mg);
cmp_ok(scalar(@parts), '>=', 2, 'the Makefile lists the install parts (' . scalar(@parts) . ')');

# Runs the tool; returns (ok, stdout, stderr).
sub tool
{
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run([ 'perl', $tool, @_ ], '>', \$out, '2>', \$err);
	return ($ok, $out, $err);
}

my $tmp = PostgreSQL::Test::Utils::tempdir();
my $n = 0;

# Expands HOP TEXT (written to a file of its own) with this tree's parts.
sub expand
{
	my ($text) = @_;
	my $file = "$tmp/snowid--9.0--9.1-" . ++$n . ".sql";
	open(my $fh, '>', $file) or die "$file: $!";
	print $fh $text;
	close($fh);
	return tool('hop', $file, @parts);
}

my $head = qq{/* hop */\n\\echo Use "ALTER EXTENSION snowid UPDATE TO '9.1'" to load this file. \\quit\n};

# ---- 1. the hops of this tree ----
my @hops = glob("$src/sql/updates/*.sql");
if (-e "$src/.git" && system("git -C '$src' rev-parse -q --verify HEAD >/dev/null 2>&1") == 0)
{
	# in a clone: what git tracks, as the rule is about git
	@hops = map { "$src/$_" } grep { /\.sql$/ } split /\n/,
	  `git -C '$src' ls-files sql/updates`;
}
cmp_ok(scalar(@hops), '>=', 1, 'sql/updates/ holds the hop of the version in progress (' . scalar(@hops) . ')');
for my $hop (@hops)
{
	my $name = $hop =~ s{.*/}{}r;
	like($name, qr/^snowid--[0-9.]+--[0-9.]+\.sql$/, "1. $name is a hop (snowid--<old>--<new>.sql)");
	my @creates = grep { !/^\s*--/ && /\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:FUNCTION|PROCEDURE)\b/i }
	  split /\n/, slurp_file($hop);
	is("@creates", '', "1. $name carries no CREATE FUNCTION (a directive names it)");
	my ($ok, undef, $err) = tool('hop', $hop, @parts);
	ok($ok, "1. $name builds with the install parts") or diag($err);
}

# ---- 2. refused ----
my ($ok, $out, $err) = expand($head . <<'EOF');
-- ---- t1 a body copied ----
CREATE OR REPLACE FUNCTION snowid_next()
RETURNS bigint AS 'MODULE_PATHNAME', 'snowid_next' LANGUAGE C VOLATILE;
EOF
ok(!$ok, '2. a hop that writes out a function of the install parts does not build');
like($err, qr/:4: this CREATE of function snowid_next repeats the one in .*10_generator\.sql:\d+: write the line "-- \@function snowid_next" instead/,
	'2. ... and the message names the line and the directive to write');

($ok, $out, $err) = expand($head . <<'EOF');
CREATE FUNCTION pg_temp.migrate() RETURNS void LANGUAGE sql AS 'SELECT';
EOF
ok(!$ok, '2. a hop that creates a function of its own does not build');
like($err, qr/a hop creates no function of its own \(migrate\): write a migration's steps in a DO block/,
	'2. ... and the message says where its steps go');

($ok, $out, $err) = expand($head . "CREATE VIEW snowid_tickets AS SELECT 1;\n");
ok(!$ok && $err =~ /"-- \@view snowid_tickets"/, '2. a view of the install parts written out does not build')
  or diag($err);

($ok, $out, $err) = expand($head . "-- \@function snowid_no_such\n");
ok(!$ok, '2. a directive naming no function of the install parts does not build');
like($err, qr/:3: \@function snowid_no_such: no install part \(sql\/install\/NN_\*\.sql\) creates function snowid_no_such/,
	'2. ... and the message names the line and the name');

($ok, $out, $err) = expand($head . "-- \@sequence snowid_ticket\n");
ok(!$ok && $err =~ /unknown directive \@sequence/, '2. an unknown directive does not build') or diag($err);

# ---- 3. expanded ----
($ok, $out, $err) = expand($head . <<'EOF');
-- ---- t1 tickets ----
ALTER TABLE snowid_ticket ADD COLUMN hand_written integer;
-- @function snowid_ticket_create
-- @view snowid_tickets
EOF
ok($ok, '3. directives expand') or diag($err);
like($out, qr/^-- Built from .* edit those, not this\.\n\/\* hop \*\/\n\\echo .*\n-- ---- t1 tickets ----\nALTER TABLE snowid_ticket ADD COLUMN hand_written integer;\n-- \@function snowid_ticket_create\n/,
	'3. the hand-written lines stay, in their place');
my @steps = $out =~ /^((?:CREATE OR REPLACE FUNCTION|CREATE FUNCTION|COMMENT ON FUNCTION|DROP FUNCTION|CREATE OR REPLACE VIEW|CREATE VIEW|COMMENT ON VIEW|GRANT SELECT ON) snowid_ticket\w*\([^)]*\)?)/mg;
s/\(.*//s for @steps;
is( join(' / ', @steps),
	join(' / ',
		'CREATE OR REPLACE FUNCTION snowid_ticket_create', 'COMMENT ON FUNCTION snowid_ticket_create',
		'DROP FUNCTION snowid_ticket_create', 'CREATE OR REPLACE FUNCTION snowid_ticket_create',
		'COMMENT ON FUNCTION snowid_ticket_create'),
	'3. @function: each CREATE of the parts made CREATE OR REPLACE, with the COMMENT ON and DROP between, in the parts\' order'
);
my @views = $out =~ /^(CREATE OR REPLACE VIEW snowid_tickets|CREATE VIEW snowid_tickets|COMMENT ON VIEW snowid_tickets|GRANT SELECT ON snowid_tickets)/mg;
is( join(' / ', @views),
	'CREATE OR REPLACE VIEW snowid_tickets / COMMENT ON VIEW snowid_tickets / GRANT SELECT ON snowid_tickets / COMMENT ON VIEW snowid_tickets',
	'3. @view: a view the parts define twice is made once, before its comment and grant');
like($out, qr/CREATE OR REPLACE VIEW snowid_tickets AS\n(?:(?!;).)*\bpool\b/s,
	'3. ... as the last definition says (with the pool column of 50_pool_member.sql)');

($ok, $out, $err) = expand($head . "-- \@table snowid_ticket\n");
ok($ok && $out =~ /^CREATE TABLE snowid_ticket \(/m
	  && $out =~ /pg_extension_config_dump\('snowid_ticket'/
	  && $out =~ /^CREATE TRIGGER snowid_ticket_registered/m
	  && $out =~ /^ALTER TABLE snowid_ticket ADD COLUMN pool/m,
	'3. @table: the table as the parts create it, with its dump mark, triggers and ALTER TABLE')
  or diag($err);

# ---- 4. a released hop expanded with its own commit's parts ----
SKIP:
{
	skip 'no git on this machine: released scripts are taken from git', 3
	  unless system('git --version >/dev/null 2>&1') == 0;
	my $repo = "$tmp/repo";
	make_path("$repo/sql/install", "$repo/sql/updates");
	my $git = sub {
		system('git', '-C', $repo, '-c', 'user.name=t', '-c', 'user.email=t@localhost', @_) == 0
		  or die "git @_ failed";
	};
	my $write = sub {
		my ($file, $text) = @_;
		open(my $fh, '>', "$repo/$file") or die "$file: $!";
		print $fh $text;
		close($fh);
	};
	$write->('sql/install/10_a.sql',
		"CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 1';\nCOMMENT ON FUNCTION f() IS 'one';\n");
	$write->('sql/updates/snowid--1.sql', "-- the first version, as released\nCREATE TABLE t (a int);\n");
	$write->('sql/updates/snowid--1--2.sql', "ALTER TABLE t ADD b int;\n-- \@function f\n");
	$git->('init', '-q');
	$git->('add', '-A');
	$git->('commit', '-q', '-m', 'release 2');
	my $commit = `git -C '$repo' rev-parse HEAD`;
	chomp $commit;
	$write->('sql/install/10_a.sql',
		"CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 2';\nCOMMENT ON FUNCTION f() IS 'two';\n");
	$git->('rm', '-q', 'sql/updates/snowid--1.sql', 'sql/updates/snowid--1--2.sql');
	$git->('commit', '-q', '-a', '-m', 'after the release');
	$write->('released.txt', "# list\n$commit snowid--1.sql\n$commit snowid--1--2.sql\n");

	my $released = sub {
		my ($out, $err) = ('', '');
		my $ok = IPC::Run::run([ 'sh', '-c', "cd '$repo' && perl '$tool' released released.txt $_[0]" ],
			'>', \$out, '2>', \$err);
		return ($ok, $out, $err);
	};
	($ok, $out, $err) = $released->('snowid--1.sql');
	is($out, "-- the first version, as released\nCREATE TABLE t (a int);\n",
		'4. a released script is taken from its commit as it was');
	($ok, $out, $err) = $released->('snowid--1--2.sql');
	like($out, qr/^ALTER TABLE t ADD b int;\n-- \@function f\n-- .*10_a\.sql:1\nCREATE OR REPLACE FUNCTION f\(\) RETURNS int LANGUAGE sql AS 'SELECT 1';\n\n-- .*\nCOMMENT ON FUNCTION f\(\) IS 'one';\n/,
		'4. a released hop with a directive is expanded with the parts of its commit, not of today');
	($ok, $out, $err) = $released->('snowid--3.sql');
	ok(!$ok && $err =~ /released\.txt names no commit for snowid--3\.sql/,
		'4. a script the list does not name is refused') or diag($err);
}

done_testing();
