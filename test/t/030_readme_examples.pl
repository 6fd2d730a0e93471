
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
#                                        server with snowid installed and
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
#   <!-- readme-examples: pgedge -->     where pgEdge snowflake is installed,
#                                        in test/t/083_from_pgedge.pl (with the
#                                        postgresql.conf lines of the block
#                                        marked pgedge-conf)
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
# listen_addresses '*' and the paths of the passfile and of the registry's
# CA certificate.
#
# All blocks run in the README's order, wherever each runs.
#
# Then the same blocks with SSL, changed as the README's text says for a
# registry with SSL (`hostssl` for `host` in the pg_hba.conf line, and the
# `sslmode=...` it shows added to the member's string): a second registry
# with ssl = on (a self-signed certificate made here with openssl, the
# member's sslrootcert) runs the README's first registry block, and a
# member holds a lease over SSL.  The README's line alone lets members in
# over TCP, so a line that did not match SSL connections fails it (the test
# shows that with the line turned into hostnossl).  Skipped, saying why,
# without openssl or on a PostgreSQL built without SSL.
#
# Also: the README's reference names every function of the install script
# (the parts in sql/install/ that the Makefile concatenates) and has a
# settings row for every snowid.* parameter of src/guc.c; the README is at
# most 46,080 bytes and says what test/newcomer.sh checks it says.

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

# The README stays readable in one sitting: at most 45 KB.  A section that
# grows past it moves its details to a page it links (src/README.md,
# test/bench/README.md, test/orm/README.md).
my $readme_bytes = -s $readme;
cmp_ok($readme_bytes, '<=', 46080,
	"README.md is at most 45 KB, 46,080 bytes ($readme_bytes)");

# A README tightened to fit must keep what the newcomer's path
# (test/newcomer.sh, run last in CI, as root) checks it says: its list of
# phrases, read from that script, is checked here too, at once.
{
	my ($list) = slurp_file("$FindBin::RealBin/../newcomer.sh") =~
	  /^for phrase in (.*?); do$/ms;
	my @phrases = ($list // '') =~ /'([^']*)'|"([^"]*)"/g;
	@phrases = grep { defined } @phrases;
	cmp_ok(scalar @phrases, '>=', 10,
		'test/newcomer.sh lists the phrases the README must say (' . scalar(@phrases) . ')');
	my $text = slurp_file($readme);
	my @missing = grep { index($text, $_) < 0 } @phrases;
	is(join(', ', @missing), '', "README.md says every phrase test/newcomer.sh checks");
}

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
			  /^(?:skip|citus|partman|pgedge|pgedge-conf|mesh|registry|member|registry-conf|registry-hba|member-conf|member-passfile)$/;
		}
		elsif ($line =~ /^```\s*(\S*)/)
		{
			$where = $marker // 'demo';
			($in, $runs, $start, @body) =
			  (1, lc($1) eq 'sql' && $where !~ /^(?:skip|citus|partman|pgedge|mesh)$/, $i + 1);
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
my @parts = slurp_file("$src/Makefile") =~ m{^\s*(sql/install/[0-9]\S+\.sql)}mg;
cmp_ok(scalar(@parts), '>=', 2, 'the Makefile lists the parts of the install script (' . scalar(@parts) . ')');
my @unlisted_parts = grep { my $f = $_; !grep { "$src/$_" eq $f } @parts } sort glob("$src/sql/install/[0-9]*.sql");
is("@unlisted_parts", '', 'the Makefile lists every part in sql/install/');
my $script = join('', map { slurp_file("$src/$_") } @parts);
my %functions = map { $_ => 1 } $script =~ /^CREATE (?:OR REPLACE )?FUNCTION (\w+)/mg;
cmp_ok(scalar(keys %functions), '>=', 30, 'the install script has functions (' . scalar(keys %functions) . ')');
# (a function whose comment says it is the registry's or the counters'
# internal one may be named in src/README.md's "Internal functions" instead)
my %internal = map { $_ => 1 }
  $script =~ /^COMMENT ON FUNCTION (\w+)\([^)]*\) IS\s*'(?:registry|counter), internal: /mg;
my ($internals) = slurp_file("$src/src/README.md") =~ /^## Internal functions\n(.*?)^## /ms;
$internals //= '';
my @unnamed = grep {
	index($readme_text, "`$_(") < 0
	  && !($internal{$_} && index($internals, "`$_(") >= 0)
} sort keys %functions;
is("@unnamed", '', 'README.md names every function of the install script (internal ones: src/README.md)');
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
# of the README's (and nothing else changed), for a registry and (once it
# exists) its member.
sub here
{
	my ($text, $reg, $mem) = @_;
	die "README.md lacks a configuration block the test needs" unless defined $text;
	my $port = $reg->port;
	$text =~ s/registry\.example\.com/127.0.0.1/g;
	$text =~ s/\b5432\b/$port/g;
	$text =~ s{10\.0\.0\.0/8}{127.0.0.1/32}g;
	$text =~ s/^(listen_addresses\s*=\s*)'\*'/$1'127.0.0.1'/m;
	my $pf = $mem ? $mem->basedir . '/snowid.pgpass' : '/nonexistent';
	$text =~ s{/var/lib/postgresql/snowid\.pgpass}{$pf}g;
	my $ca = $reg->basedir . '/registry-ca.crt';
	$text =~ s{/var/lib/postgresql/registry-ca\.crt}{$ca}g;
	return $text;
}

# A registry as the README sets one up, not started: its postgresql.conf
# and pg_hba.conf blocks (the given hba text, the README's by default) and
# any lines of the test's own in $extra (for SSL).
sub readme_registry
{
	my ($name, $hba, $extra) = @_;
	my $reg = PostgreSQL::Test::Cluster->new($name);
	$reg->init;
	$reg->append_conf('postgresql.conf', here($conf{'registry-conf'}, $reg) . ($extra // ''));
	write_hba($reg, $hba // $conf{'registry-hba'});
	return $reg;
}

# The registry's pg_hba.conf: the test's own way in is the socket; for TCP,
# the README's line alone (with this machine's names).
sub write_hba
{
	my ($reg, $hba) = @_;
	open(my $fh, '>', $reg->data_dir . '/pg_hba.conf') or die $!;
	print $fh "local all all trust\n", here($hba, $reg);
	close $fh;
	return;
}

# A member of $reg as the README sets one up (its postgresql.conf block,
# with $conninfo_extra added to snowid.registry's string, and its
# passfile), started, holding a lease (checked in a database of the test's
# own, so that the README's blocks find the member as set up).
sub readme_member
{
	my ($name, $reg, $conninfo_extra) = @_;
	my $mem = PostgreSQL::Test::Cluster->new($name);
	$mem->init;
	my $conf = here($conf{'member-conf'}, $reg, $mem);
	if (defined $conninfo_extra)
	{
		my $extra = here($conninfo_extra, $reg, $mem);
		$conf =~ s/^(snowid\.registry\s*=\s*'[^']*)'/$1 $extra'/m
		  or die "README.md's member block sets no snowid.registry";
	}
	$mem->append_conf('postgresql.conf', $conf);
	my $passfile = $mem->basedir . '/snowid.pgpass';
	open(my $pf, '>', $passfile) or die $!;
	print $pf here($conf{'member-passfile'}, $reg, $mem);
	close $pf;
	chmod 0600, $passfile;
	$mem->start;
	$mem->safe_psql('postgres', 'CREATE DATABASE lease_wait');
	$mem->safe_psql('lease_wait', 'CREATE EXTENSION snowid');
	ok( $mem->poll_query_until('lease_wait',
			"SELECT state = 'ok' FROM snowid_registry_status()"),
		"the member $name holds a node lease from the registry the README set up"
	) or diag($mem->safe_psql('lease_wait',
		'SELECT * FROM snowid_registry_status()'));
	return $mem;
}

my %server = (
	demo => sub { return ($node, 'examples'); },
	registry => sub {
		if (!$registry)
		{
			$registry = readme_registry('registry');
			$registry->start;
		}
		return ($registry, 'postgres');
	},
	member => sub {
		if (!$member)
		{
			die "README.md: a member block comes before any registry block"
			  unless $registry;
			$member = readme_member('member', $registry);
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

# The runbook "Moving off snowid" (test/runbooks/README.md, linked from
# the README's section of that name), on the demo server as well.
for my $sql (runbook_blocks('moving off'))
{
	my ($ret, $out, $err) = $node->psql('examples', $sql,
		extra_params => [ '-v', 'ON_ERROR_STOP=1' ]);
	is($ret, 0, 'the runbook "Moving off snowid" runs as pasted on the demo server')
	  or diag("psql said:\n$err\nthe block:\n$sql");
	like($out, qr/^\d+\|2$/m, 'the row inserted after moving off gets keys above the old ones');
}

$_->stop for grep { defined } $member, $registry, $node;

# ---- the same with SSL, as the README's text says ----

# The change the README's text asks for a registry with SSL: `hostssl` for
# `host` in its line, and the `sslmode=...` it shows in the members' string.
my ($ssl_text) = $readme_text =~ /^1\. \*\*On the registry server\*\*(.*?)^<!--/ms;
$ssl_text //= '';
$ssl_text =~ s/\s+/ /g;
my ($ssl_kind) = $ssl_text =~ /`(host\w*)` for `host`/;
my ($ssl_conninfo) = $ssl_text =~ /`(sslmode=[^`]+)`/;
ok(defined $ssl_kind && defined $ssl_conninfo,
	'README.md says what changes where the registry has SSL: `'
	  . ($ssl_kind // '?') . '` for `host`, and `'
	  . ($ssl_conninfo // 'sslmode=...') . '` in the members\' string');
$ssl_kind //= 'hostssl';
$ssl_conninfo //= 'sslmode=verify-full';
(my $ssl_hba = $conf{'registry-hba'}) =~ s/^host(?=\s)/$ssl_kind/mg;

SKIP:
{
	skip 'SSL: openssl is not installed', 7
	  unless system('openssl version >/dev/null 2>&1') == 0;
	skip 'SSL: this PostgreSQL is built without SSL support', 7
	  unless check_pg_config('#define USE_OPENSSL 1');

	my $reg = readme_registry('registry_ssl', $ssl_hba,
		"ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n");
	# A self-signed certificate for 127.0.0.1: the server's, and the CA
	# certificate its members verify it with.
	my $dir = $reg->data_dir;
	run_log(
		[
			'openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes',
			'-days', '2', '-subj', '/CN=127.0.0.1',
			'-addext', 'subjectAltName=IP:127.0.0.1',
			'-keyout', "$dir/server.key", '-out', "$dir/server.crt"
		]) or die 'openssl could not make a certificate';
	chmod 0600, "$dir/server.key";
	run_log([ 'cp', "$dir/server.crt", $reg->basedir . '/registry-ca.crt' ])
	  or die 'could not copy the certificate';
	$reg->start;

	my ($sql) = map { $_->[1] } grep { $_->[2] eq 'registry' && $_->[1] =~ /CREATE DATABASE ids/ } @blocks;
	my ($ret, $out, $err) = $reg->psql('postgres', $sql // '',
		extra_params => [ '-v', 'ON_ERROR_STOP=1' ]);
	is($ret, 0, 'the README\'s registry block runs as pasted on a registry with ssl = on')
	  or diag($err);

	my $mem = readme_member('member_ssl', $reg, $ssl_conninfo);
	is($mem->safe_psql('lease_wait', 'SELECT snowid_node(snowid_next()) = node_id FROM snowid_registry_status()'),
		't', 'the SSL member issues under the node the registry leased it');
	is($reg->safe_psql('postgres',
			"SELECT count(*) > 0 AND bool_and(s.ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.usename = 'member_db1'"),
		't', 'the member\'s connections to the registry use SSL');

	# The member's string, as the README says for SSL, from a client: over
	# SSL, verified, it gets in; without SSL the README's hostssl line lets
	# nobody in; and a line that does not match SSL connections (hostnossl)
	# would have kept the member out.
	my ($string) = here($conf{'member-conf'}, $reg, $mem) =~ /^snowid\.registry\s*=\s*'([^']*)'/m;
	$string .= ' ' . here($ssl_conninfo, $reg, $mem);
	($ret, $out, $err) = $reg->psql('ids', 'SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()',
		connstr => $string, extra_params => ['-w']);
	is("$ret $out", '0 t', "the member's string connects over SSL, verified ($string)")
	  or diag($err);
	(my $plain = $string) =~ s/\bsslmode=\S+/sslmode=disable/;
	($ret, $out, $err) = $reg->psql('ids', 'SELECT 1', connstr => $plain, extra_params => ['-w']);
	like($err, qr/no pg_hba\.conf entry/, "without SSL the README's $ssl_kind line lets the member's login nowhere");
	(my $nossl = $conf{'registry-hba'}) =~ s/^host(?=\s)/hostnossl/mg;
	write_hba($reg, $nossl);
	$reg->reload;
	($ret, $out, $err) = $reg->psql('ids', 'SELECT 1', connstr => $string, extra_params => ['-w']);
	like($err, qr/no pg_hba\.conf entry/, 'a hostnossl line would have kept the SSL member out (the check above can fail)');
	write_hba($reg, $ssl_hba);
	$reg->reload;
	$_->stop for $mem, $reg;
}

done_testing();
