
# Copyright (c) snowid contributors
#
# Pools on the member side, without a registry (the worker that fetches
# ranges is tested with one elsewhere):
#
#  1. A server that draws from no pool holds nothing: snowid_pool_holdings()
#     is empty.
#  2. snowid_ticket_create(pool => ...) without snowid.registry fails with
#     SQLSTATE 55000 saying that no registry is named, and takes no pool
#     slot; shard or shards with a pool fail with 22023.
#  3. snowid_pool_take, snowid_pool_skip and snowid_pool_untake are not
#     for PUBLIC.
#  4. On a streaming standby snowid_pool_take is refused (25006).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

my $primary = snowid_node('primary', 1, '', allows_streaming => 1);
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION snowid');

# 1.
is($primary->safe_psql('postgres', 'SELECT count(*) FROM snowid_pool_holdings()'),
	'0', 'no pool held by a server that draws from none');

# 2.
my ($rc, $out, $err) = $primary->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT snowid_ticket_create('pt', pool => 'p1')");
isnt($rc, 0, 'a pooled ticket without a registry fails');
like($err, qr/55000/, '... with SQLSTATE 55000');
like($err, qr/the registry has not told this server about pool "p1"/,
	'... naming the pool');
like($err, qr/No registry is named/, '... saying why');
is($primary->safe_psql('postgres', 'SELECT count(*) FROM snowid_pool_holdings()'),
	'0', '... and holds no slot for the pool');
is($primary->safe_psql('postgres', "SELECT to_regclass('pt') IS NULL"),
	't', '... and creates no sequence');

($rc, $out, $err) = $primary->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT snowid_ticket_create('pt', shards => 2, pool => 'p1')");
like($err, qr/22023.*a pooled ticket sequence has no shards/s,
	'shards with a pool: 22023');

# 3.
$primary->safe_psql('postgres', 'CREATE ROLE joe LOGIN');
for my $call ("snowid_pool_take('p1', 1)", "snowid_pool_skip('p1', 10)",
	"snowid_pool_untake('p1', 1, 2)")
{
	($rc, $out, $err) = $primary->psql('postgres', "SELECT $call",
		extra_params => [ '-U', 'joe' ]);
	like($err, qr/permission denied for function/, "$call is not for PUBLIC");
}
is($primary->safe_psql('postgres', 'SELECT count(*) FROM snowid_pool_holdings()',
		extra_params => [ '-U', 'joe' ]),
	'0', 'snowid_pool_holdings() is for everyone');
# A role that may create sequences but does not own the database may not
# draw on a pool (shared with the other members); a striped ticket it may.
$primary->safe_psql('postgres', 'CREATE SCHEMA joes AUTHORIZATION joe');
($rc, $out, $err) = $primary->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT snowid_ticket_create('joes.pt', pool => 'p1')",
	extra_params => [ '-U', 'joe' ]);
like($err,
	qr/42501: permission denied to create a ticket sequence fed by pool "p1"/,
	'a pooled ticket by a role that does not own the database: 42501');
is($primary->safe_psql('postgres', "SELECT snowid_ticket_create('joes.st')",
		extra_params => [ '-U', 'joe' ]),
	'joes.st', 'the same role creates a striped ticket');

# 4.
$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;
$primary->wait_for_catchup($standby);
($rc, $out, $err) = $standby->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT * FROM snowid_pool_take('p1', 5)");
like($err, qr/25006.*cannot take values of pool "p1" during recovery/s,
	'taking on a standby is refused');

$standby->stop;
$primary->stop;
done_testing();
