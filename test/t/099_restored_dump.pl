
# Copyright (c) snowid contributors
#
# A registry restored from a dump taken before any member claimed a node:
# the dump holds its pools, settings and no node row (found by the fault
# soak, TAP 095, seed 90417, where two restores of the dump taken at the
# run's start came 6.5 s apart).
#
# Before the fix the restored registry counted as new (its snowid created
# after the server started, never dropped, no node row older than it) and
# took no grace: it granted ranges at once, from where its pool stood as
# the members' first reports moved it, before the reports of the ranges
# above had arrived; the soak saw one range of 1,024 values handed to two
# members.  Now pool rows older than the registry's copy of snowid also
# make it a restored registry: it grants nothing new for reassert_grace,
# while the members report.
#
# Here: a registry with pool 'orders' is dumped before any member; member
# A draws values; the registry database is replaced by the dump restored
# (as fault_restore_registry_dump does); the restored registry is in its
# grace, and A's report moves the pool above its ranges in it.

use strict;
use warnings;

use Time::HiRes qw(sleep);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

my ($reg, $conninfo) = registry(
	dbname => 'reg',
	group => 'members',
	logins => [qw(ma mb)],
	sql => q{
INSERT INTO snowid_registry_settings (only_row, reassert_grace) VALUES (true, '30s');
SELECT snowid_pool_create('orders', 'integer');
});

# the dump, before any member
my $dump = PostgreSQL::Test::Utils::tempdir() . '/reg.dump';
$reg->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $reg->connstr('reg') ],
	'the registry is dumped before any member claimed a node');

my $a = member('ma', undef, registry => $conninfo, user => 'ma', lease => '60s',
	sql => q{SELECT snowid_ticket_create('t', pool => 'orders', block => 64);},
	wait => 'A holds a node');
ok($a->poll_query_until('postgres', q{SELECT snowid_ticket_next('t') > 0}),
	'A hands out a value of the pool');
is($reg->safe_psql('reg', 'SELECT snowid_registry_recovering() IS NULL'), 't',
	'the registry, made after its server started, took no grace');

# the registry database replaced by the dump restored
$reg->safe_psql('postgres', 'CREATE DATABASE reg_restored');
$reg->command_ok([ 'pg_restore', '-d', $reg->connstr('reg_restored'), $dump ],
	'the dump is restored into a new database');
$reg->safe_psql('postgres',
	'DROP DATABASE reg WITH (FORCE); ALTER DATABASE reg_restored RENAME TO reg;');

like($reg->safe_psql('reg', 'SELECT snowid_registry_recovering()'),
	qr/had its snowid created \(or restored\)/,
	'the restored registry, with pools but no node row from before, is in its grace');
# and A, whose values came from ranges the dump does not know, reports
# them in it: the pool moves above them before anything is granted
ok($reg->poll_query_until('reg',
	q{SELECT next_value > 1 FROM snowid_pools WHERE name = 'orders'}),
	'A reports its ranges to the restored registry during the grace');
is($reg->safe_psql('reg', 'SELECT snowid_registry_recovering() IS NOT NULL'), 't',
	'(still in the grace then)');

# In the grace the registry records a report from any member role, holding
# a node or not (a member whose start is newer than the dump holds none it
# knows), but bounded as any report: nothing beyond where the grants it
# may have lost could have reached, and nothing at all after the grace.
my $report = q{SELECT snowid_pool_report(9, 1, 'no-start', 'no-secret', '{orders}',
	'{%d}', '{%d}')};
my ($rc, $out, $err) = $reg->psql('reg', sprintf($report, 2147482624, 2147483647),
	extra_params => [ '-U', 'ma' ]);
like($err, qr/are not where a grant to this member could have been/,
	'in the grace, a report by a role holding no node, at the top of the pool: refused');
is($reg->safe_psql('reg', q{SELECT count(*) FROM snowid_pool_range WHERE node_id = 9}), '0',
	'(nothing of it recorded)');
is($reg->safe_psql('reg', sprintf($report, 1000000, 1000999), extra_params => [ '-U', 'ma' ]),
	'1', 'in the grace, a report by a role holding no node, within the lost bound: recorded');
$reg->safe_psql('reg', q{UPDATE snowid_registry_settings SET reassert_grace = '0'});
is($reg->safe_psql('reg', 'SELECT snowid_registry_recovering() IS NULL'), 't', 'the grace is over');
is($reg->safe_psql('reg', sprintf($report, 2000000, 2000999), extra_params => [ '-U', 'ma' ]),
	'0', 'after the grace, a report by a role holding no node records nothing');

# ---- 2. a range given back, granted again, then forgotten ----
#
# A gives back the unused tail of its range at a clean shutdown (the pool's
# next_value goes back to it); the registry is dumped; A starts again and
# is granted that tail anew (a range starting where the given-back part
# does) and hands out values of it; the registry database is replaced by
# the dump, which shows the tail given back, free.  A reports the range it
# holds in the grace.  Seen before the fix (fault soak, seed 38095): the
# report was skipped, the range given back counting as known, and member B
# was granted the values A had handed out.

# (a pool of its own: part 1 moved 'orders' far ahead of A's ranges, and
# a range is given back only where nothing was granted after it)
$reg->safe_psql('reg', q{UPDATE snowid_registry_settings SET reassert_grace = '0';
SELECT snowid_pool_create('items', 'integer');});
$a->safe_psql('postgres', q{SELECT snowid_ticket_create('t2', pool => 'items', block => 64)});
ok($a->poll_query_until('postgres', q{SELECT snowid_ticket_next('t2') > 0}),
	'A hands out a value of pool items');
$a->safe_psql('postgres', q{SELECT count(snowid_ticket_next('t2')) FROM generate_series(1, 100)});
$a->stop;
my $back = $reg->safe_psql('reg', q{SELECT count(*) FROM snowid_pool_range WHERE pool = 'items' AND returned_from IS NOT NULL});
cmp_ok($back, '>=', 1, 'A gave back the unused tail of its range at its shutdown');
my $from = $reg->safe_psql('reg', q{SELECT next_value FROM snowid_pools WHERE name = 'items'});
# (the dump restored takes a grace of 30 s; the registry now, none)
$reg->safe_psql('reg', q{UPDATE snowid_registry_settings SET reassert_grace = '30s'});
$reg->command_ok([ 'pg_dump', '-Fc', '-f', "$dump.2", '-d', $reg->connstr('reg') ],
	'the registry is dumped with the tail given back');
$reg->safe_psql('reg', q{UPDATE snowid_registry_settings SET reassert_grace = '0'});
$a->start;
ok(wait_registry_state($a, 'ok'), 'A holds its node again');
my %mine = map { $_ => 1 } split /\n/,
  $a->safe_psql('postgres', q{SELECT snowid_ticket_next('t2') FROM generate_series(1, 300)});
is(scalar(keys %mine), 300, 'A hands out 300 values');
# the tail given back is granted again, to A: its first values are there
# (A's reports, every second, name the last value it may have handed out,
# which a registry that forgot nothing finds among its ranges)
is(min_of(keys %mine), $from,
	'A is granted the tail it gave back, and hands out from its start');

$reg->safe_psql('postgres', 'DROP DATABASE IF EXISTS reg_restored');
$reg->safe_psql('postgres', 'CREATE DATABASE reg_restored');
$reg->command_ok([ 'pg_restore', '-d', $reg->connstr('reg_restored'), "$dump.2" ],
	'the second dump is restored into a new database');
# before the members reach it, a role holding no node reports one value
# in the middle of the range A holds: recorded (in the grace, within the
# lost bound), it must not make the registry skip A's report of the range
my $mid = min_of(keys %mine) + 100;
is($reg->safe_psql('reg_restored',
	sprintf(q{SELECT snowid_pool_report(9, 1, 'no-start', 'no-secret', '{items}', '{%d}', '{%d}')}, $mid, $mid),
	extra_params => [ '-U', 'mb' ]),
	'1', "in the grace, a report of value $mid alone, by a role holding no node: recorded");
$reg->safe_psql('postgres',
	'DROP DATABASE reg WITH (FORCE); ALTER DATABASE reg_restored RENAME TO reg;');
my $top = max_of(keys %mine);
ok($reg->poll_query_until('reg',
	qq{SELECT next_value > $top FROM snowid_pools WHERE name = 'items'}),
	'A\'s report in the grace moves the pool above the values it handed out (the one value reported before does not hide it)');
is($reg->safe_psql('reg', 'SELECT snowid_registry_recovering() IS NOT NULL'), 't',
	'(in the grace then)');

$reg->safe_psql('reg', q{UPDATE snowid_registry_settings SET reassert_grace = '0'});
my $b = member('mb', undef, registry => $conninfo, user => 'mb', lease => '60s',
	sql => q{SELECT snowid_ticket_create('t2', pool => 'items', block => 64);},
	wait => 'B holds a node');
my @theirs = split /\n/,
  $b->safe_psql('postgres', q{SELECT snowid_ticket_next('t2') FROM generate_series(1, 2000)});
my @twice = grep { $mine{$_} } @theirs;
is(scalar(@twice), 0, 'B hands out none of the values A handed out')
  or diag sprintf('%d values twice, from %d to %d', scalar(@twice), min_of(@twice), max_of(@twice));

$b->stop;
$a->stop;
$reg->stop;
done_testing();
