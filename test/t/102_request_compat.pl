
# Copyright (c) snowid contributors
#
# Typed registry requests (2.1) and rolling upgrades in either order.
#
#  1. A 2.1 member against a 2.1 registry sends typed requests
#     (snowid_registry_request): it claims its node, renews it and takes a
#     pool range, and the registry counts calls of the request function.
#  2. A 2.1 member against registries whose snowid is still at 2.0 and at
#     1.10 (the library of 2.1 installed, ALTER EXTENSION UPDATE not yet
#     run: the state of a rolling upgrade) calls them positionally: it
#     claims, renews and takes a range all the same.
#  3. A registry that says 2.1 but answers 42883 for the request function
#     (dropped from it here): the member falls back to the positional call
#     for the connection, saying so once in its log, and works.
#  4. A member of snowid 1.10 (a real build of that release, from
#     test/old-build.sh; SNOWID_OLD_INSTALL names its installation) against
#     a 2.1 registry: the positional functions stay, it claims, renews and
#     takes a range.  Skipped, with the reason, where no such build exists.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

my $n = 0;

# A registry (snowid at $version, undef: the current one) and a member of
# it ($init: options for the member's init, such as install_path): the
# member holds its node, renews it and takes a range of pool p.
sub works
{
	my ($what, $version, %o) = @_;
	$n++;
	my ($reg, $conninfo) = registry(
		name => "registry_$n",
		group => 'snowid_members',
		logins => ['member_login'],
		conf => "track_functions = 'all'\n",
		(defined $version ? (version => $version) : ()),
		sql => "SELECT snowid_pool_create('p');\n" . ($o{registry_sql} // ''));
	my $m = member(
		"member_$n", undef,
		registry => $conninfo,
		user => 'member_login',
		lease => '60s',
		(defined $o{init} ? (init => $o{init}) : ()),
		sql => "SELECT snowid_ticket_create('t', pool => 'p');");
	ok(wait_registry_state($m, 'ok'), "$what: the member holds a node");
	my $node = $m->safe_psql('postgres', 'SELECT node_id FROM snowid_registry_status()');
	my $seen = $reg->safe_psql('postgres',
		"SELECT last_seen FROM snowid_registry_nodes WHERE node_id = $node");
	ok( $reg->poll_query_until('postgres',
			"SELECT last_seen > '$seen' FROM snowid_registry_nodes WHERE node_id = $node"),
		"$what: the member renews its lease");
	my ($ret, $out, $err) = $m->psql('postgres', 'SELECT snowid_ticket_next(\'t\')');
	is($ret, 0, "$what: the member takes a value of pool p") or diag $err;
	is( $reg->safe_psql('postgres',
			"SELECT count(*) > 0 FROM snowid_pool_ranges WHERE pool = 'p' AND node_id = $node"),
		't', "$what: the registry granted it a range");
	return ($reg, $m);
}

# the calls of snowid_registry_request the registry has counted
sub request_calls
{
	my ($reg) = @_;
	return $reg->safe_psql('postgres',
		"SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions WHERE funcname = 'snowid_registry_request'");
}

# 1.
my ($reg, $m) = works('2.1 member, 2.1 registry');
ok( $reg->poll_query_until('postgres',
		"SELECT coalesce(sum(calls), 0) > 0 FROM pg_stat_user_functions WHERE funcname = 'snowid_registry_request'"),
	'2.1 member, 2.1 registry: its calls are typed requests');
unlike(slurp_file($m->logfile), qr/takes no typed requests/,
	'... and it never fell back to positional calls');
$m->stop;
$reg->stop;

# 2. (creating snowid at an old version needs the released update
# scripts, which come from git history: see skip_without_released)
SKIP:
{
	my $share = `pg_config --sharedir`;
	chomp $share;
	skip 'snowid 2.0 and 1.10 cannot be installed here: the released update scripts are missing (a tree without git history)', 12
	  unless -e "$share/extension/snowid--1.0.sql";
	for my $version ('2.0', '1.10')
	{
		($reg, $m) = works("2.1 member, registry at $version", $version);
		is( $reg->safe_psql('postgres',
				"SELECT to_regprocedure('snowid_registry_request(jsonb)') IS NULL"),
			't', "registry at $version: it has no request function");
		unlike(slurp_file($m->logfile), qr/takes no typed requests/,
			"registry at $version: the member called it positionally from the start");
		$m->stop;
		$reg->stop;
	}
}

# 3.
($reg, $m) = works('2.1 registry without its request function', undef,
	registry_sql => "ALTER EXTENSION snowid DROP FUNCTION snowid_registry_request(jsonb);\n"
	  . "DROP FUNCTION snowid_registry_request(jsonb);\n");
my $log = slurp_file($m->logfile);
like($log, qr/takes no typed requests: calling it as snowid 2.0 did for this connection/,
	'the member fell back to positional calls');
my @fell = $log =~ /takes no typed requests/g;
ok(@fell >= 1 && @fell <= 2,
	'... once per connection (its registry worker and its pool worker): ' . scalar(@fell));
$m->stop;
$reg->stop;

# 4.
SKIP:
{
	my $old = $ENV{SNOWID_OLD_INSTALL};
	skip 'no build of snowid 1.10: '
	  . ($ENV{SNOWID_OLD_SKIP}
		  // 'run test/old-build.sh and set SNOWID_OLD_INSTALL to the installation it prints'), 5
	  if !defined $old || $old eq '' || !-x "$old/bin/postgres";
	($reg, $m) = works('1.10 member, 2.1 registry', undef, init => { install_path => $old });
	is($m->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'snowid'"),
		'1.10', '... the member runs snowid 1.10');
	$m->stop;
	$reg->stop;
}

done_testing();
