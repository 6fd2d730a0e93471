
# Copyright (c) snowid contributors
#
# A crash of one backend (restart_after_crash, the default) reinitialises
# shared memory without restarting the postmaster: the start identity stays,
# so pool request keys must not start over, or the registry answers a
# repeated key with the range it granted under it the first time (a range
# this server has used up), and its values come out again.  Here: the first
# range used up, a backend killed, then enough values taken for the worker
# to ask for ranges twice more; no value may repeat.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

my ($reg, $regconn) = registry(sql => "SELECT snowid_pool_create('orders', 'integer')");

my $m = member('m', 1,
	registry => $regconn,
	lease => '10s',
	extra => "restart_after_crash = on\n");
wait_state($m, 'ok', die => 1);
$m->safe_psql('postgres', q{
SELECT snowid_ticket_create('t', pool => 'orders', block => 10);
CREATE TABLE v(v bigint NOT NULL);
});

# Use up the first range (10,000 values) and move into the second.
$m->safe_psql('postgres',
	"INSERT INTO v SELECT snowid_ticket_next('t') FROM generate_series(1, 6000)");
$m->poll_query_until('postgres',
	"SELECT ranges = 2 FROM snowid_pool_holdings() WHERE pool = 'orders'")
  or die 'the second range never came';
$m->safe_psql('postgres',
	"INSERT INTO v SELECT snowid_ticket_next('t') FROM generate_series(1, 6000)");
my $first_range_end = $reg->safe_psql('postgres',
	"SELECT min(last_value) FROM snowid_pool_ranges WHERE pool = 'orders'");
cmp_ok($m->safe_psql('postgres', 'SELECT max(v) FROM v'), '>', $first_range_end,
	'the first range is used up');

# Kill a server process (the registry worker): every backend goes and
# shared memory is set up again, under the same postmaster.
my $postmaster = (split /\n/, slurp_file($m->data_dir . '/postmaster.pid'))[0];
my $pid = `pgrep -P $postmaster -f 'snowid registry worker'`;
chomp $pid;
my $log_offset = -s $m->logfile;
ok($pid =~ /^\d+$/ && kill('KILL', $pid), "kill -9 of the registry worker ($pid)");
# Wait for the postmaster to start over before asking the server anything:
# a query answered before it noticed the crash would read the old memory.
ok( $m->wait_for_log(qr/all server processes terminated; reinitializing/, $log_offset),
	'the postmaster reinitialised after the backend crash');
$m->poll_query_until('postgres', 'SELECT 1', '1')
  or die 'the server never came back';
wait_state($m, 'ok', die => 1);

# Take values until the worker has asked for two more ranges.
my $ranges_before = $reg->safe_psql('postgres',
	"SELECT count(*) FROM snowid_pool_ranges WHERE pool = 'orders'");
for my $round (1 .. 40)
{
	$m->safe_psql('postgres',
		"INSERT INTO v SELECT snowid_ticket_next('t') FROM generate_series(1, 20000)");
	last
	  if $reg->safe_psql('postgres',
		"SELECT count(*) FROM snowid_pool_ranges WHERE pool = 'orders'") >= $ranges_before + 2
	  && $m->safe_psql('postgres', 'SELECT max(v) FROM v') >
	  $reg->safe_psql('postgres',
		"SELECT max(last_value) FROM snowid_pool_ranges WHERE pool = 'orders' AND first_value < (SELECT max(first_value) FROM snowid_pool_ranges)");
}
my ($n, $d) = split /\|/, $m->safe_psql('postgres', 'SELECT count(*), count(DISTINCT v) FROM v');
is($d, $n, "all $n values are distinct across the backend crash");
unlike(slurp_file($m->logfile), qr/snowid ignores range/,
	'the registry never answered with a range this server had held');
# A SIGTERM to the worker alone (not a shutdown): it closes the pools and
# gives back what it can, the postmaster starts it again, and the pools
# serve again.
$postmaster = (split /\n/, slurp_file($m->data_dir . '/postmaster.pid'))[0];
$pid = `pgrep -P $postmaster -f 'snowid registry worker'`;
chomp $pid;
ok($pid =~ /^\d+$/ && kill('TERM', $pid), "SIGTERM to the registry worker ($pid)");
$m->poll_query_until('postgres',
	"SELECT count(*) = 1000 FROM (SELECT snowid_ticket_next('t') FROM generate_series(1, 1000)) s")
  or die 'pool values never came back after the worker restarted';
pass('pool values are issued again after the worker restarted');
isnt($m->safe_psql('postgres', "SELECT state FROM snowid_pool_holdings() WHERE pool = 'orders'"),
	'closed', 'the pool is no longer closed');

note "values: $n; ranges: "
  . $reg->safe_psql('postgres',
	"SELECT string_agg(first_value || '-' || last_value, ' ' ORDER BY first_value) FROM snowid_pool_ranges");

done_testing();
