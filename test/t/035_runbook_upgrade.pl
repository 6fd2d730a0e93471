# Copyright (c) snowid contributors
#
# The runbook "A rolling upgrade across a registry and its members" of
# test/runbooks/README.md, run as written: a registry (no preload: 1.10
# needs none; the runbook adds it for 2.0) and two
# members with automatic node IDs, member a with a streaming standby, all
# with the extension at 1.10 (the library is this build's: a server
# running 1.10's library is simulated by the extension's version), then
# upgraded in the runbook's order: the registry's ALTER EXTENSION, then
# each member (a's standby restarted first) restarted and updated.
#
# At each step the runbook's queries show what each server runs: the
# library (snowid.library_version, from snowid.control at build time) and
# extversion, on the registry, the members and the standby (which shows
# its primary's update once replayed); and on the registry the members'
# workers by node, each application_name naming the library's version.
# Both members hold their nodes throughout (a restart reclaims it), and
# their IDs never repeat.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowidTest;
use Test::More;

my ($control) = slurp_file("$FindBin::RealBin/../../snowid.control")
  =~ /^default_version = '([^']+)'/m;
my $old = '1.10';
skip_without_released($old);
isnt($control, $old, "this build ($control) is newer than the version upgraded from");

my ($versions) = runbook_blocks('upgrade versions');
my ($members_query) = runbook_blocks('upgrade members');
my ($update) = runbook_blocks('upgrade update');
my ($registry_conf) = runbook_blocks('upgrade registry-conf');
(my $members_rows = $members_query) =~ s/;\s*\z//;

# The registry, with the extension at the old version.
my $registry = PostgreSQL::Test::Cluster->new('registry');
$registry->init;
$registry->start;
$registry->safe_psql('postgres',
	"CREATE ROLE snowid_members;\n"
	  . "CREATE ROLE member_a LOGIN IN ROLE snowid_members;\n"
	  . "CREATE ROLE member_b LOGIN IN ROLE snowid_members;\n"
	  . "CREATE EXTENSION snowid VERSION '$old';\n"
	  . 'GRANT EXECUTE ON FUNCTION '
	  . join(', ', map { registry_signature($_) } qw(claim release pool_grant pool_report pool_return))
	  . " TO snowid_members;");
my $conninfo = registry_conninfo($registry);

# The members and a's standby, the extension at the old version too.
my $a = member('a', undef, registry => $conninfo, user => 'member_a',
	init => { allows_streaming => 1 }, start => 0);
my $b = member('b', undef, registry => $conninfo, user => 'member_b', start => 0);
for my $m ($a, $b)
{
	$m->start;
	$m->safe_psql('postgres', "CREATE EXTENSION snowid VERSION '$old';\n" . take_setup_sql());
	wait_state($m, 'ok', $m->name . ' at the old version', die => 1);
}
$a->backup('a_base');
my $standby = PostgreSQL::Test::Cluster->new('a_standby');
$standby->init_from_backup($a, 'a_base', has_streaming => 1);
$standby->start;
$a->wait_for_catchup($standby);

# The runbook's version query on one server: "library|extension".
sub versions_of
{
	my ($node) = @_;
	return $node->safe_psql('postgres', $versions);
}

# The runbook's query of the members' workers on the registry, as
# "node_id:usename:application_name" lines.
sub members_seen
{
	my $out = $registry->safe_psql('postgres', $members_query);
	$out =~ s/\|/:/g;
	return $out;
}

my $node_a = status_of($a, 'node_id');
my $node_b = status_of($b, 'node_id');
isnt($node_a, $node_b, "the members hold nodes $node_a and $node_b");
my ($lo, $hi) = $node_a < $node_b ? ([ $node_a, 'a' ], [ $node_b, 'b' ]) : ([ $node_b, 'b' ], [ $node_a, 'a' ]);
my $expect_members = join("\n",
	map { "$_->[0]:member_$_->[1]:snowid $control registry worker" } $lo, $hi);

# 0. Before: every server at the old extension.
is(versions_of($_), "$control|$old", $_->name . ": library $control, extension $old")
  for $registry, $a, $b, $standby;
$registry->poll_query_until('postgres',
	"SELECT count(*) = 2 FROM ($members_rows) q")
  or diag('members seen: ' . members_seen());
is(members_seen(), $expect_members,
	"on the registry: each member's worker, by node, names its library ($control)");

$_->safe_psql('postgres', 'SELECT take(100)') for $a, $b;

# 1. (installed: this build) 2. The registry first: its preload, a restart,
# the update.
$registry->append_conf('postgresql.conf', $registry_conf);
$registry->restart;
$registry->safe_psql('postgres', $update);
is(versions_of($registry), "$control|$control", "registry updated: extension $control");
is(versions_of($_), "$control|$old", $_->name . ": still extension $old") for $a, $b;
$_->safe_psql('postgres', 'SELECT take(100)') for $a, $b;
wait_state($_, 'ok', $_->name . ': holds its node under the updated registry')
  for $a, $b;

# 3. Each member in turn: standbys first, then the member, then its update.
$standby->restart;
$a->restart;
wait_state($a, 'ok', 'a after its restart');
$a->safe_psql('postgres', $update);
$a->wait_for_catchup($standby);
is(versions_of($a), "$control|$control", "a updated: extension $control");
is(versions_of($standby), "$control|$control",
	"a's standby shows the update replayed from its primary");
is(versions_of($b), "$control|$old", "b, not yet updated: extension $old");
$_->safe_psql('postgres', 'SELECT take(100)') for $a, $b;

$b->restart;
wait_state($b, 'ok', 'b after its restart');
$b->safe_psql('postgres', $update);
is(versions_of($_), "$control|$control", $_->name . ": library and extension $control")
  for $registry, $a, $b, $standby;
$registry->poll_query_until('postgres',
	"SELECT count(*) = 2 FROM ($members_rows) q")
  or diag('members seen: ' . members_seen());
is(members_seen(), $expect_members, 'on the registry: both members, on their nodes again');
is(status_of($a, 'node_id') . ',' . status_of($b, 'node_id'), "$node_a,$node_b",
	'each member kept its node across the upgrade');

$_->safe_psql('postgres', 'SELECT take(100)') for $a, $b;
my @all = (ids_of($a), ids_of($b));
is(scalar(@all), 800, 'each member issued 400 IDs through the upgrade');
is(dups(@all), 0, 'no ID repeats');
ok(strictly_increasing(ids_of($a)) && strictly_increasing(ids_of($b)),
	"each member's IDs increase across its restart");

# The parameter is read-only and reports the build's version.
my ($ret, $out, $err) = $a->psql('postgres', "SET snowid.library_version = '0'");
like($err, qr/parameter "snowid.library_version" cannot be changed/,
	'snowid.library_version cannot be set');

$standby->stop;
$_->stop for $a, $b;
$registry->stop;
done_testing();
