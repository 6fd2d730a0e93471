
# Copyright (c) snowid contributors
#
# The SQL examples of README.md run as pasted, in order, on one fresh
# database of a server configured as test/demo.sh configures the quick-start
# server (snowid preloaded, snowid.node_id = 1).  Every ```sql block of the
# README is one subtest, run with psql and ON_ERROR_STOP, so an example that
# collides with an earlier one (a table created twice, a role that does not
# exist) fails here.  A block that runs elsewhere says so in the README's
# text and carries, on the line right before its opening fence, one of
#
#   <!-- readme-examples: registry -->   on a registry this test starts (a
#                                        server with snowid installed, not
#                                        preloaded), in its database postgres
#                                        (the block says \c ids where it needs
#                                        the registry database)
#   <!-- readme-examples: member -->     on a member of that registry (snowid
#                                        preloaded, no snowid.node_id,
#                                        snowid.registry naming the database
#                                        ids as the login member_db1, as the
#                                        README's setup makes them), in its
#                                        database postgres, once it holds a
#                                        node lease
#   <!-- readme-examples: citus -->      on a Citus cluster, in
#                                        test/t/071_citus_readme.pl
#   <!-- readme-examples: partman -->    where pg_partman 4 is installed, in
#                                        test/t/080_partman.pl
#   <!-- readme-examples: mesh -->       on every server of a mesh under
#                                        logical replication, in
#                                        test/t/101_mesh_readme.pl
#   <!-- readme-examples: skip -->       nowhere (say, a block that shows an
#                                        error on purpose)
#
# and the configuration the README shows is the configuration the registry
# and its member run with, as written (the test adds no setting of its
# own), from the plain ``` blocks marked
#
#   <!-- readme-examples: registry-conf -->    the registry's postgresql.conf
#   <!-- readme-examples: registry-hba -->     its pg_hba.conf (the only line
#                                              for TCP: the member's login
#                                              must pass it, with its password)
#   <!-- readme-examples: member-conf -->      the member's postgresql.conf
#   <!-- readme-examples: member-passfile -->  the member's passfile
#
# where only the names of this machine replace the README's: the registry's
# host registry.example.com and port 5432, the members' network 10.0.0.0/8,
# listen_addresses '*' and the passfile's path.
#
# All blocks run in the README's order, wherever each runs.
#
# Also: the README's reference names every function of the install script
# (the parts in sql/install/ that the Makefile concatenates) and has a
# settings row for every snowid.* parameter of src/guc.c.

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

# The blocks: [first line number, text, where], in order.  A fence is ```
# at the start of a line; ```sql opens a block that runs, on the demo
# server unless a marker right before it says where.
my @blocks;
my %conf;
my ($in, $runs, $where, $marker, $start, @body) = (0, 0, 'demo', undef, 0);
for my $i (0 .. $#lines)
{
	my $line = $lines[$i];
	if (!$in)
	{
		if ($line =~ /^<!--\s*readme-examples:\s*(\S+)\s*-->/)
		{
			$marker = $1;
			die "README.md line " . ($i + 1) . ": unknown readme-examples marker '$marker'"
			  unless $marker =~
			  /^(?:skip|citus|partman|mesh|registry|member|registry-conf|registry-hba|member-conf|member-passfile)$/;
		}
		elsif ($line =~ /^```\s*(\S*)/)
		{
			$where = $marker // 'demo';
			($in, $runs, $start, @body) =
			  (1, lc($1) eq 'sql' && $where !~ /^(?:skip|citus|partman|mesh)$/, $i + 1);
			$marker = undef;
		}
		elsif ($line =~ /\S/)
		{
			$marker = undef;
		}
		next;
	}
	if ($line =~ /^```\s*$/)
	{
		push @blocks, [ $start, join("\n", @body) . "\n", $where ] if $runs;
		$conf{$where} = join("\n", @body) . "\n" if $where =~ /-(?:conf|hba|passfile)$/;
		$in = 0;
		next;
	}
	push @body, $line;
}
ok(!$in, 'every code block of README.md is closed');
cmp_ok(scalar(@blocks), '>=', 4, 'README.md has SQL examples (' . scalar(@blocks) . ')');
for my $what ('registry-conf', 'registry-hba', 'member-conf', 'member-passfile')
{
	ok(defined $conf{$what}, "README.md shows the $what block");
}
for my $where ('registry', 'member')
{
	my $n = grep { $_->[2] eq $where } @blocks;
	cmp_ok($n, '>=', 1, "README.md has SQL examples that run on the $where server ($n)");
}

# The reference stays complete: every function of the install script and
# every snowid.* parameter (a row of the settings table, with its default)
# is in the README.
my $readme_text = join("\n", @lines);
# The install script is built from the parts the Makefile lists in
# INSTALL_PARTS; a part left out of that list would not be installed.
my $src = "$FindBin::RealBin/../..";
my @parts = slurp_file("$src/Makefile") =~ m{^\s*(sql/install/\S+\.sql)}mg;
cmp_ok(scalar(@parts), '>=', 2, 'the Makefile lists the parts of the install script (' . scalar(@parts) . ')');
my @unlisted_parts = grep { my $f = $_; !grep { "$src/$_" eq $f } @parts } sort glob("$src/sql/install/*.sql");
is("@unlisted_parts", '', 'the Makefile lists every part in sql/install/');
my $script = join('', map { slurp_file("$src/$_") } @parts);
my %functions = map { $_ => 1 } $script =~ /^CREATE (?:OR REPLACE )?FUNCTION (\w+)/mg;
cmp_ok(scalar(keys %functions), '>=', 30, 'the install script has functions (' . scalar(keys %functions) . ')');
my @unnamed = grep { index($readme_text, "`$_(") < 0 } sort keys %functions;
is("@unnamed", '', 'README.md names every function of the install script');
my $guc_c = slurp_file("$src/src/guc.c");
my @gucs = $guc_c =~ /DefineCustom\w+Variable\("(snowid\.\w+)"/g;
cmp_ok(scalar(@gucs), '>=', 12, 'src/guc.c defines parameters (' . scalar(@gucs) . ')');
my @unlisted = grep { $readme_text !~ /^\| `\Q$_\E` \| \S/m } @gucs;
is("@unlisted", '', 'README.md has a settings row, with a default, for every snowid.* parameter');

my $node = snowid_node('readme', 1);
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE examples');

# The registry and its member start when the README first needs them.
my ($registry, $member);

# A configuration block of the README with this machine's names in place
# of the README's (and nothing else changed).
sub here
{
	my ($text) = @_;
	die "README.md lacks a configuration block the test needs" unless defined $text;
	my $port = $registry->port;
	$text =~ s/registry\.example\.com/127.0.0.1/g;
	$text =~ s/\b5432\b/$port/g;
	$text =~ s{10\.0\.0\.0/8}{127.0.0.1/32}g;
	$text =~ s/^(listen_addresses\s*=\s*)'\*'/$1'127.0.0.1'/m;
	my $pf = $member ? $member->basedir . '/snowid.pgpass' : '/nonexistent';
	$text =~ s{/var/lib/postgresql/snowid\.pgpass}{$pf}g;
	return $text;
}

my %server = (
	demo => sub { return ($node, 'examples'); },
	registry => sub {
		if (!$registry)
		{
			$registry = PostgreSQL::Test::Cluster->new('registry');
			$registry->init;
			$registry->append_conf('postgresql.conf', here($conf{'registry-conf'}));
			# the test's own way in is the socket; for TCP, the README's line alone
			open(my $hba, '>', $registry->data_dir . '/pg_hba.conf') or die $!;
			print $hba "local all all trust\n", here($conf{'registry-hba'});
			close $hba;
			$registry->start;
		}
		return ($registry, 'postgres');
	},
	member => sub {
		if (!$member)
		{
			die "README.md: a member block comes before any registry block"
			  unless $registry;
			$member = PostgreSQL::Test::Cluster->new('member');
			$member->init;
			$member->append_conf('postgresql.conf', here($conf{'member-conf'}));
			my $passfile = $member->basedir . '/snowid.pgpass';
			open(my $pf, '>', $passfile) or die $!;
			print $pf here($conf{'member-passfile'});
			close $pf;
			chmod 0600, $passfile;
			$member->start;
			# a lease before the first block (in a database of the test's
			# own, so that the README's blocks find the member as set up)
			$member->safe_psql('postgres',
				'CREATE DATABASE lease_wait');
			$member->safe_psql('lease_wait', 'CREATE EXTENSION snowid');
			ok( $member->poll_query_until('lease_wait',
					"SELECT state = 'ok' FROM snowid_registry_status()"),
				'the member holds a node lease from the registry the README set up'
			) or diag($member->safe_psql('lease_wait',
				'SELECT * FROM snowid_registry_status()'));
		}
		return ($member, 'postgres');
	});

for my $block (@blocks)
{
	my ($line, $sql, $where) = @$block;
	my ($first) = grep { /\S/ && !/^\s*--/ && !/^\\c/ } split /\n/, $sql;
	$first //= '';
	$first =~ s/\s+/ /g;
	$first = substr($first, 0, 60);
	my ($on, $db) = $server{$where}->();
	my ($ret, $out, $err) = $on->psql($db, $sql,
		extra_params => [ '-v', 'ON_ERROR_STOP=1' ]);
	is($ret, 0, "README.md line $line ($first) runs as pasted on the $where server")
	  or diag("psql said:\n$err\nthe block:\n$sql");
}

$_->stop for grep { defined } $member, $registry, $node;
done_testing();
