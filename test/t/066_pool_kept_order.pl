
# Copyright (c) snowid contributors
#
# Tails kept at a clean shutdown are used in order of value after the
# restart.  Member 1 uses part of its first range and has fetched its
# second (the first was half used); member 2 then gets a range above both,
# so member 1's clean shutdown cannot give its tails back: it keeps both.
# After its restart its values must go on increasing (they came back
# highest first, and were once used in that order: values went down).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

my ($reg, $regconn) = registry(sql => "SELECT snowid_pool_create('orders', 'integer')");

my @m;
for my $id (1, 2)
{
	my $n = member("m$id", $id, registry => $regconn);
	wait_state($n, 'ok', die => 1);
	$n->safe_psql('postgres',
		"SELECT snowid_ticket_create('t', pool => 'orders', block => 10)");
	push @m, $n;
}
my ($m1, $m2) = @m;

$m1->safe_psql('postgres', q{
CREATE TABLE v(n serial, v bigint NOT NULL);
INSERT INTO v(v) SELECT snowid_ticket_next('t') FROM generate_series(1, 6000);
});
$m1->poll_query_until('postgres',
	'SELECT ranges = 2 FROM snowid_pool_holdings() WHERE pool = \'orders\'')
  or die 'm1 never fetched its second range';
$m2->safe_psql('postgres', "SELECT snowid_ticket_next('t')");

$m1->stop;
like(slurp_file($m1->logfile),
	qr/snowid gave 0 unused pool values back to the registry and keeps \d+ for the next start/,
	'm1 kept its tails at its clean shutdown (a grant came after them)');
$m1->start;
wait_state($m1, 'ok', die => 1);
is( $m1->safe_psql('postgres',
		'SELECT ranges FROM snowid_pool_holdings() WHERE pool = \'orders\''),
	'2', 'm1 holds both tails after its restart');
$m1->safe_psql('postgres',
	"INSERT INTO v(v) SELECT snowid_ticket_next('t') FROM generate_series(1, 20000)");
my $down = $m1->safe_psql('postgres',
	'SELECT count(*) FROM v a JOIN v b ON b.n = a.n + 1 WHERE b.v <= a.v');
is($down, '0', "m1's values increase across the restart, through both kept tails");
is( $m1->safe_psql('postgres', 'SELECT count(*) = count(DISTINCT v) FROM v'),
	't', 'and none repeats');

done_testing();
