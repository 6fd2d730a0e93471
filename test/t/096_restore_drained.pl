
# Copyright (c) snowid contributors
#
# A registry restored from a base backup while no member holds the ranges
# granted since the backup (found by the fault soak, 095, seed 61129).
#
# Member A draws a pooled ticket from pool 'orders' (ranges of 1,024).  A
# base backup of the registry is taken; A is granted more ranges; the
# registry goes down and A hands out every value it holds (its takes are
# then refused).  The registry is restored from the backup in its place:
# no member holds a range granted after the backup, so nobody reports one
# during the grace.  Member B then draws from the restored registry.
#
# Expected: no value of A's is handed out by B.  Seen on 1.11 (before a
# fix): the restored registry grants from where the backup left the pool,
# and B hands out again values A handed out (1,024 per lost range).  A
# itself ignores those ranges ("lies below values this server has handed
# out"), but tells the registry nothing.
#
# Skipped unless SNOWID_KNOWN_BUGS=1 (it fails until this is fixed).

use strict;
use warnings;

use Time::HiRes qw(sleep);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

plan skip_all =>
  'known bug: a restored registry hands out again the ranges members used up since the backup (set SNOWID_KNOWN_BUGS=1)'
  unless $ENV{SNOWID_KNOWN_BUGS};

my ($reg, $conninfo) = registry(
	conf => "wal_level = replica\nmax_wal_senders = 4\n",
	group => 'members',
	logins => [qw(ma mb)],
	sql => q{
INSERT INTO snowid_registry_settings
	(only_row, reassert_grace, max_grant_share, max_grants_per_hour)
VALUES (true, '3s', 0.0000001, 20000);
SELECT snowid_pool_create('orders', 'integer');
});

my $sql = q{
SELECT snowid_ticket_create('t', pool => 'orders', block => 64);
CREATE TABLE vals(v bigint NOT NULL);
CREATE FUNCTION take(n integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE k integer := 0;
BEGIN
	FOR i IN 1 .. n LOOP
		BEGIN
			INSERT INTO vals VALUES (snowid_ticket_next('t'));
			k := k + 1;
		EXCEPTION WHEN OTHERS THEN
			RETURN k;
		END;
	END LOOP;
	RETURN k;
END
$$;
};

my $a = member('ma', undef, registry => $conninfo, user => 'ma', lease => '60s', sql => $sql,
	wait => 'A holds a node');

# A's first values, then the backup
$a->poll_query_until('postgres', 'SELECT take(100) = 100') or die 'A takes no value';
$reg->backup('early');
my $backup_next = $reg->safe_psql('postgres',
	q{SELECT next_value FROM snowid_pools WHERE name = 'orders'});

# A goes through several more ranges
my $took = 0;
for (1 .. 600)
{
	$took += $a->safe_psql('postgres', 'SELECT take(500)');
	last if $took >= 5000;
	sleep 0.1;
}
cmp_ok($took, '>=', 5000, 'A hands out 5,000 more values');
my $granted = $reg->safe_psql('postgres',
	q{SELECT next_value FROM snowid_pools WHERE name = 'orders'});
note "pool next_value: $backup_next at the backup, $granted now";

# the registry goes down; A hands out all it holds
$reg->stop;
ok(wait_registry_state($a, 'unreachable'), 'registry down');
my $drained = 0;
for (1 .. 100)
{
	my $k = $a->safe_psql('postgres', 'SELECT take(1000)');
	$drained += $k;
	last if $k < 1000;
}
note "A handed out $drained more values, then was refused";
is($a->safe_psql('postgres', q{SELECT coalesce(sum(values_in_hand), 0) FROM snowid_pool_holdings()}),
	'0', 'A holds no value of the pool');

# the registry restored from the early backup, in its place
my $restored = PostgreSQL::Test::Cluster->new('restored', port => $reg->port);
$restored->init_from_backup($reg, 'early');
$restored->start;
ok($restored->poll_query_until('postgres', 'SELECT snowid_registry_recovering() IS NULL'),
	'the restored registry ends its grace');

my $b = member('mb', undef, registry => $conninfo, user => 'mb', lease => '60s', sql => $sql,
	wait => 'B holds a node');
my $btook = 0;
for (1 .. 600)
{
	$btook += $b->safe_psql('postgres', 'SELECT take(500)');
	last if $btook >= 3000;
	sleep 0.1;
}
cmp_ok($btook, '>=', 3000, 'B hands out values of the restored registry');

my %mine = map { $_ => 1 } split /\n/, $a->safe_psql('postgres', 'SELECT v FROM vals');
my @twice = grep { $mine{$_} } split /\n/, $b->safe_psql('postgres', 'SELECT v FROM vals');
is(scalar(@twice), 0, 'B hands out none of the values A handed out')
  or diag sprintf('%d values twice, from %d to %d', scalar(@twice), min_of(@twice), max_of(@twice));

$b->stop;
$a->stop;
$restored->stop;
done_testing();
