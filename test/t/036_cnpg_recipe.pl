# Copyright (c) snowid contributors
#
# The CloudNativePG recipe of test/runbooks/README.md, applied as written
# to servers of this machine, and CloudNativePG's events played on them.
#
# From the manifests (parsed as YAML): the registry Cluster's database and
# pg_hba line; the member Cluster's shared_preload_libraries and
# postgresql parameters (snowid.registry), and the passfile its projected
# volume mounts from the Secret, with the Secret's text and the item's
# mode.  Only the names of this machine replace the manifests': the
# service ids-rw and its port, and the mount point /projected.  Nothing
# else is set for snowid.
#
#  - the member's first instance gets its node from the registry;
#  - failover: a streaming replica of it (CloudNativePG's replicas are
#    pg_basebackup copies streaming from the primary) is promoted after
#    the primary dies (stop -m immediate): same node, IDs above;
#  - switchover: a new replica of the new primary; the primary shuts down
#    cleanly, the replica is promoted and holds the node, the old primary
#    rejoins as its replica and refuses to issue;
#  - restore: a new cluster from the first base backup, with its own login
#    (the manifest with member_shop renamed, as the runbook says): a copy,
#    granted a node of its own;
#
# and no ID repeats across all of them.
use strict;
use warnings;
use CPAN::Meta::YAML;
use File::Path ();
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowidTest;
use Test::More;

# The one document of a runbook's YAML block.
sub manifest
{
	my ($tag) = @_;
	my ($text) = runbook_blocks($tag);
	my $doc = CPAN::Meta::YAML->read_string($text)
	  or die "the block '$tag' is not YAML: " . CPAN::Meta::YAML->errstr;
	return $doc->[0];
}

my $registry_m = manifest('cnpg-registry');
my $secret_m = manifest('cnpg-secret');
my $member_m = manifest('cnpg-member');

my $db = $registry_m->{spec}{bootstrap}{initdb}{database};
my @hba = @{ $registry_m->{spec}{postgresql}{pg_hba} };
my @preload = @{ $member_m->{spec}{postgresql}{shared_preload_libraries} };
# (from 2.0 the registry's server preloads snowid too: registry() does)
is(join(',', @{ $registry_m->{spec}{postgresql}{shared_preload_libraries} // [] }), 'snowid',
	'the registry Cluster preloads snowid');
my %params = %{ $member_m->{spec}{postgresql}{parameters} };
my $source = $member_m->{spec}{projectedVolumeTemplate}{sources}[0]{secret};
my ($item) = @{ $source->{items} };
is($source->{name}, $secret_m->{metadata}{name}, 'the member mounts the Secret of the recipe');
my $pgpass = $secret_m->{stringData}{ $item->{key} };
ok(defined $pgpass, "the Secret holds the item's key ($item->{key})");
like($params{'snowid.registry'}, qr/(?:^| )passfile=\/projected\/\Q$item->{path}\E(?: |$)/,
	'snowid.registry names the passfile where the projected volume mounts it');
like($params{'snowid.registry'}, qr/(?:^| )host=ids-rw(?: |$)/,
	"snowid.registry names the registry's read-write service");
ok(!grep({ /^snowid\.node_id$/ } keys %params), 'the member leaves snowid.node_id unset');
my ($pg_host, $pg_port, $pg_db, $login, $password) = split /:/, $pgpass, 5;
is("$pg_host:$pg_db", "ids-rw:$db", "the passfile's line is for the registry's database ($db)");

# The registry, its pg_hba line as written (over TCP), one login per
# member cluster: the recipe's and the restored cluster's.
my $restored_login = "${login}2";
my $registry = registry(
	name => 'ids',
	dbname => $db,
	conf => "listen_addresses = '127.0.0.1'\n",
	hba => join('', map { "$_\n" } @hba),
	group => 'snowid_members',
	logins => [ $login, $restored_login ],
	password => { $login => $password, $restored_login => $password });

# The member's configuration from the manifests, with this machine's
# names: the registry at 127.0.0.1 and its port, the mount point a
# directory of the test.  $rename: the login of a restored cluster.
my $projected = PostgreSQL::Test::Utils::tempdir('projected');

sub member_conf
{
	my ($rename) = @_;
	my $mount = "$projected/" . ($rename // $login);
	my $file = "$mount/$item->{path}";
	(my $dir = $file) =~ s{/[^/]+$}{};
	File::Path::make_path($dir);
	my $line = $pgpass;
	$line =~ s/^\Qids-rw:$pg_port:\E/127.0.0.1:@{[ $registry->port ]}:/ or die "unexpected passfile line";
	$line =~ s/:\Q$login\E:/:$rename:/ if defined $rename;
	open my $fh, '>', $file or die "could not write $file: $!";
	print $fh "$line\n";
	close $fh;
	chmod oct($item->{mode}), $file or die "chmod $file: $!";
	my $conf = "shared_preload_libraries = '" . join(',', @preload) . "'\n";
	for my $name (sort keys %params)
	{
		my $value = $params{$name};
		$value =~ s/(?:^| )\Khost=ids-rw(?= |$)/host=127.0.0.1/ or die 'no host=ids-rw' if $name eq 'snowid.registry';
		$value =~ s/(?:^| )\Kport=\Q$pg_port\E(?= |$)/'port=' . $registry->port/e if $name eq 'snowid.registry';
		$value =~ s{passfile=/projected/}{passfile=$mount/} if $name eq 'snowid.registry';
		$value =~ s/user=\Q$login\E(?= |$)/user=$rename/ if defined $rename && $name eq 'snowid.registry';
		$value =~ s/'/''/g;
		$conf .= "$name = '$value'\n";
	}
	return $conf;
}

my @all;    # every ID any instance issued

# $n IDs from $node, kept in its table ids and in @all.
sub take_ids
{
	my ($node, $n) = @_;
	my @ids = split /\n/, $node->safe_psql('postgres',
		"INSERT INTO ids (id) SELECT snowid_next() FROM generate_series(1, $n) RETURNING id");
	push @all, @ids;
	return @ids;
}

# The first instance.
my $shop1 = PostgreSQL::Test::Cluster->new('shop1');
$shop1->init(allows_streaming => 1);
$shop1->append_conf('postgresql.conf', member_conf());
$shop1->start;
$shop1->safe_psql('postgres', 'CREATE EXTENSION snowid;' . take_setup_sql());
wait_state($shop1, 'ok', 'the first instance, configured as the recipe says', die => 1);
my $node = status_of($shop1, 'node_id');
like($node, qr/^\d+$/, "the registry granted it node $node");
my @before = take_ids($shop1, 1000);
$shop1->backup('b1');

# A replica (scale-out), then failover.
my $shop2 = PostgreSQL::Test::Cluster->new('shop2');
$shop2->init_from_backup($shop1, 'b1', has_streaming => 1);
$shop2->start;
my ($ret, $out, $err) = try_next($shop2);
like($err, qr/recovery|standby/i, 'a replica issues nothing');
@before = (@before, take_ids($shop1, 1000));
$shop1->wait_for_catchup($shop2);
$shop1->stop('immediate');
$shop2->promote;
wait_state($shop2, 'ok', 'failover: the promoted replica', die => 1);
is(status_of($shop2, 'node_id'), $node, 'failover: it holds the same node');
my @after = take_ids($shop2, 1000);
cmp_ok(min_of(@after), '>', max_of(@before), 'failover: its IDs go on above the old primary\'s');

# Switchover: a new replica of shop2, then shop2 shut down cleanly.
$shop2->backup('b2');
my $shop3 = PostgreSQL::Test::Cluster->new('shop3');
$shop3->init_from_backup($shop2, 'b2', has_streaming => 1);
$shop3->start;
@before = (@after, take_ids($shop2, 1000));
$shop2->wait_for_catchup($shop3);
$shop2->stop('fast');
$shop3->promote;
my $took = wait_state($shop3, 'ok', 'switchover: the promoted replica', die => 1);
note(sprintf('switchover: node held again after %.1f s', $took));
is(status_of($shop3, 'node_id'), $node, 'switchover: it holds the same node');
@after = take_ids($shop3, 1000);
cmp_ok(min_of(@after), '>', max_of(@before), 'switchover: its IDs go on above');
$shop2->enable_streaming($shop3);
$shop2->start;
is($shop2->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 't',
	'switchover: the old primary rejoins as a replica');
($ret, $out, $err) = try_next($shop2);
isnt($ret, 0, 'switchover: the old primary, a replica now, issues nothing');
take_ids($shop3, 1000);
$shop3->wait_for_catchup($shop2);

# Restore: a new cluster from the first base backup, its own login.
my $restored = PostgreSQL::Test::Cluster->new('shop_restored');
$restored->init_from_backup($shop1, 'b1');
$restored->append_conf('postgresql.conf', member_conf($restored_login));
$restored->start;
wait_state($restored, 'ok', 'restore: the restored cluster', die => 1);
my $restored_node = status_of($restored, 'node_id');
isnt($restored_node, $node, "restore: the registry granted it a node of its own ($restored_node)");
take_ids($restored, 1000);
take_ids($shop3, 1000);

is(scalar(@all), 8000, '8,000 IDs issued in all');
is(dups(@all), 0, 'no ID repeats across the instances and the restored cluster');
is($registry->safe_psql($db,
		"SELECT string_agg(node_id || ':' || holder_role, ',' ORDER BY node_id) FROM snowid_registry_nodes WHERE state = 'held'"),
	join(',', sort { (split /:/, $a)[0] <=> (split /:/, $b)[0] } ("$node:$login", "$restored_node:$restored_login")),
	'the registry: the two clusters hold one node each, by their logins');

$_->stop for $restored, $shop2, $shop3;
$registry->stop;
done_testing();
