# Copyright (c) snowid contributors
#
# A rewound ticket sequence never reissues values, across restarts and
# crashes (the served mark is durable), and what would rewind it is refused:
# - setval back by the owner, then a restart: the next block is refused;
# - the same with a crash (immediate shutdown) in between;
# - ALTER SEQUENCE ... SET UNLOGGED is refused, so a crash cannot reset it;
# - a ticket that ran out of values says so after a restart, in its own
#   words (2200H), not nextval's;
# - DROP SEQUENCE in single-user mode removes the ticket's row;
# - pg_dump carries the served mark into the restored database;
# - a transaction left open after UPDATE snowid_ticket SET seqrelid =
#   seqrelid (how tickets are registered again) holds no reservation up,
#   and a row changed anyway (trigger disabled) makes reservations fail,
#   not hang under the slot lock;
# - a reservation waiting for a catalog lock (behind VACUUM FULL) holds no
#   slot lock, so a session holding that catalog lock takes values;
# - pg_dump by the database owner (not a superuser) reads snowid_ticket,
#   served mark included, and the dump restores.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

my $node = snowid_node('rewind', 1, "restart_after_crash = on\n");
$node->start;
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION snowid;
SELECT snowid_ticket_create('rw', 0, 1, 10);
CREATE TABLE taken (v bigint PRIMARY KEY);
INSERT INTO taken SELECT snowid_ticket_next('rw') FROM generate_series(1, 25);
});

# Take values until the first refusal; returns (values, stderr).
sub take
{
	my ($n, $ticket, $count) = @_;
	my ($ret, $out, $err) = $n->psql('postgres',
		"\\set VERBOSITY verbose\nINSERT INTO taken SELECT snowid_ticket_next('$ticket') FROM generate_series(1, $count) RETURNING v"
	);
	return ($out, $err);
}

# --- setval back, restart ---
$node->safe_psql('postgres', "SELECT setval('rw', 0, false)");
$node->restart;
my ($out, $err) = take($node, 'rw', 5);
like(
	$err,
	qr/ERROR:\s+55000: ticket sequence "public.rw" has been moved back.*DETAIL:\s+Its sequence returned block \d+ .*HINT:\s+Move the sequence back above the last block served: SELECT setval\('public.rw', 2\)/s,
	'after setval back and a restart, the next block is refused (55000, with the setval to repair it)');
is($node->safe_psql('postgres', 'SELECT count(*), max(v) FROM taken'),
	'25|25', 'no value was issued twice');

# --- the hint repairs it; setval back again, crash ---
$node->safe_psql('postgres', "SELECT setval('rw', 2)");
($out, $err) = take($node, 'rw', 20);
is($err, '', 'after the setval of the hint, values come again');
my $max = $node->safe_psql('postgres', 'SELECT max(v) FROM taken');
$node->safe_psql('postgres', "SELECT setval('rw', 1)");
$node->stop('immediate');
$node->start;
($out, $err) = take($node, 'rw', 5);
like(
	$err,
	qr/ERROR:\s+55000: ticket sequence "public.rw" has been moved back/,
	'after setval back and a crash, the next block is refused');
is($node->safe_psql('postgres', 'SELECT max(v) FROM taken'),
	$max, 'no value was issued twice after the crash');

# --- SET UNLOGGED is refused, and a crash keeps the sequence ---
my ($b_ret, $b_out, $b_err) = $node->psql('postgres', 'ALTER SEQUENCE rw SET UNLOGGED');
like($b_err, qr/ticket sequence "public.rw" cannot be altered with SET UNLOGGED/,
	'ALTER SEQUENCE ... SET UNLOGGED on a ticket sequence is refused');
$node->safe_psql('postgres', "SELECT setval('rw', (SELECT served FROM snowid_ticket))");
($out, $err) = take($node, 'rw', 15);
is($err, '', 'values after the repair');
$max = $node->safe_psql('postgres', 'SELECT max(v) FROM taken');
$node->stop('immediate');
$node->start;
($out, $err) = take($node, 'rw', 15);
is($err, '', 'values after a crash');
cmp_ok((split /\n/, $out)[0], '>', $max,
	'after the crash the ticket continues above every value issued');

# --- the mark of every committed value survives a crash ---
# Blocks are reserved without an fsync of their mark unless nextval logged;
# the commit of the rows that hold the values flushes it.  Ten blocks of
# committed values, a crash right after, then a rewind: refused.
$node->safe_psql('postgres', "SELECT snowid_ticket_create('mk', 0, 1, 2)");
$node->safe_psql('postgres',
	"INSERT INTO taken SELECT snowid_ticket_next('mk') + 1000000 FROM generate_series(1, 20)");
$node->stop('immediate');
$node->start;
$node->safe_psql('postgres', "SELECT setval('mk', 0, false)");
($out, $err) = take($node, 'mk', 1);
like($err, qr/ERROR:\s+55000: ticket sequence "public.mk" has been moved back/,
	'after a crash right after committing values, a rewind below them is refused');

# --- exhausted before a restart: the documented error after it ---
$node->safe_psql(
	'postgres', q{
SELECT snowid_ticket_create('full_t', 0, 1, 100, 2147483600, 'integer');
});
($out, $err) = take($node, 'full_t', 100);
like($err, qr/ERROR:\s+2200H: ticket sequence "public.full_t" has no values left for shard 0/,
	'a ticket runs out of values with its own error');
$node->restart;
($out, $err) = take($node, 'full_t', 1);
like(
	$err,
	qr/ERROR:\s+2200H: ticket sequence "public.full_t" has no values left for shard 0.*HINT:\s+Move to a new ticket sequence/s,
	'after a restart, the exhausted ticket gives the same error, not nextval\'s');

# --- DROP in single-user mode (no event triggers) leaves no row behind ---
$node->safe_psql('postgres', "SELECT snowid_ticket_create('single_t')");
$node->stop;
my ($s_out, $s_err) = ('', '');
IPC::Run::run(
	[ 'postgres', '--single', '-D', $node->data_dir, '-c', 'exit_on_error=true', 'postgres' ],
	'<', \"DROP SEQUENCE single_t;\n", '>', \$s_out, '2>', \$s_err);
is($?, 0, 'DROP SEQUENCE in single-user mode');
$node->start;
is( $node->safe_psql(
		'postgres',
		'SELECT count(*) FROM snowid_ticket WHERE seqrelid::oid NOT IN (SELECT oid FROM pg_class)'),
	'0',
	'no stale row of snowid_ticket after a DROP in single-user mode');

# --- pg_dump keeps the served mark ---
my $dump = $node->basedir . '/rw.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('postgres') ],
	'pg_dump');
my $served = $node->safe_psql('postgres', "SELECT served FROM snowid_ticket WHERE seqrelid = 'rw'::regclass");
my $fresh = snowid_node('rewind_restored', 1);
$fresh->start;
$fresh->safe_psql('postgres', 'CREATE DATABASE restored');
$fresh->command_ok([ 'pg_restore', '-d', $fresh->connstr('restored'), $dump ],
	'pg_restore into a fresh server');
is( $fresh->safe_psql(
		'restored', q{
SELECT served FROM snowid_ticket WHERE seqrelid = 'rw'::regclass;
SELECT count(*) FROM pg_depend WHERE objid = 'rw'::regclass AND refclassid = 'pg_extension'::regclass}),
	"$served\n1", 'the restored ticket keeps its served mark and its dependency on the extension');
$fresh->safe_psql('restored', "SELECT setval('rw', 0, false)");
($b_ret, $b_out, $b_err) = $fresh->psql('restored', "SELECT snowid_ticket_next('rw')");
like($b_err, qr/ticket sequence "public.rw" has been moved back/,
	'a rewind in the restored database is refused too');
$fresh->stop;

# --- an open transaction on the rows of snowid_ticket holds nothing up ---
# Each query of the other session has a client timeout: before 1.2's fix it
# hung under the slot lock (no cancel, no terminate), and the test must fail
# rather than hang with it.
my $timeout = $PostgreSQL::Test::Utils::timeout_default;
$node->safe_psql('postgres',
	q{SELECT snowid_ticket_create('held', 0, 1, 2); SELECT snowid_ticket_next('held')});
my $holder = $node->background_psql('postgres', on_error_stop => 0);
$holder->query_safe('BEGIN; UPDATE snowid_ticket SET seqrelid = seqrelid;');
my ($h_ret, $h_out, $h_err, $h_timed) = (0, '', '', 0);
$h_ret = $node->psql('postgres',
	"SELECT count(snowid_ticket_next('held')) FROM generate_series(1, 9)",
	stdout => \$h_out, stderr => \$h_err,
	timeout => $timeout, timed_out => \$h_timed);
is($h_timed, 0, 'reservations do not wait for the open re-registering transaction');
is($h_out, '9', 'and hand out values meanwhile');
$holder->query_safe('COMMIT');
is( $node->safe_psql('postgres',
		"SELECT t.served >= s.last_value FROM snowid_ticket t, held s WHERE t.seqrelid = 'held'::regclass"),
	't', 'the served mark covers every block handed out');

# A row changed anyway (trigger disabled by a superuser), not yet committed:
# the reservation fails at once with 55P03 instead of waiting.
$node->safe_psql('postgres', 'ALTER TABLE snowid_ticket DISABLE TRIGGER snowid_ticket_fixed');
$holder->query_safe(
	"BEGIN; UPDATE snowid_ticket SET seqrelid = seqrelid WHERE seqrelid = 'held'::regclass;");
($h_out, $h_err, $h_timed) = ('', '', 0);
$node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT count(snowid_ticket_next('held')) FROM generate_series(1, 9)",
	stdout => \$h_out, stderr => \$h_err,
	timeout => $timeout, timed_out => \$h_timed);
is($h_timed, 0, 'a reservation does not wait for an uncommitted new version of the row');
like($h_err, qr/ERROR:\s+55P03: ticket sequence "public.held" cannot reserve a block now/,
	'it fails with 55P03');
$holder->query_safe('ROLLBACK');
$holder->quit;
$node->safe_psql('postgres', 'ALTER TABLE snowid_ticket ENABLE ALWAYS TRIGGER snowid_ticket_fixed');
$node->safe_psql('postgres', "SELECT snowid_ticket_next('held') FROM generate_series(1, 9)");

# --- pg_dump by the owner of the database, not a superuser ---
$node->safe_psql('postgres', 'CREATE ROLE regress_dbowner LOGIN; CREATE DATABASE owned OWNER regress_dbowner');
$node->safe_psql(
	'owned', q{
CREATE EXTENSION snowid;
SELECT snowid_ticket_create('od', 0, 1, 5);
SELECT snowid_ticket_next('od') FROM generate_series(1, 7);
ALTER SEQUENCE od OWNER TO regress_dbowner;
});
my $odump = $node->basedir . '/owned.dump';
$node->command_ok(
	[ 'pg_dump', '-Fc', '-f', $odump, '-d', $node->connstr('owned') . ' user=regress_dbowner' ],
	'pg_dump by the database owner');
$node->safe_psql('postgres', 'CREATE DATABASE owned_copy');
$node->command_ok([ 'pg_restore', '-d', $node->connstr('owned_copy'), $odump ],
	'the dump of the database owner restores');
is( $node->safe_psql('owned_copy', "SELECT served FROM snowid_ticket WHERE seqrelid = 'od'::regclass"),
	$node->safe_psql('owned', "SELECT served FROM snowid_ticket WHERE seqrelid = 'od'::regclass"),
	'with the served mark');

# --- nothing under the slot lock waits for a catalog lock ---
# R holds a lock on pg_depend, VACUUM FULL pg_depend queues behind it, and
# S reaches a block boundary: the reservation's check reads pg_depend, so S
# waits behind the VACUUM.  Before the fix S waited there holding the slot
# lock, and R, reaching a block boundary in its turn, waited for S: a
# deadlock the detector cannot see, that no cancel ends.  Now S waits
# before taking the slot lock and R goes through.
$node->safe_psql('postgres', q{SELECT snowid_ticket_create('cl', 0, 1, 3); SELECT snowid_ticket_next('cl')});
my $r = $node->background_psql('postgres', timeout => 60);
$r->query_safe('BEGIN; SELECT count(*) FROM pg_depend;');
my ($v_out, $v_err, $s_out, $s_err) = ('', '', '', '');
my $v = IPC::Run::start(
	[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c', 'VACUUM FULL pg_depend' ],
	'>', \$v_out, '2>', \$v_err);
$node->poll_query_until('postgres',
	"SELECT count(*) > 0 FROM pg_stat_activity WHERE query = 'VACUUM FULL pg_depend' AND wait_event_type = 'Lock'")
  or die 'VACUUM FULL did not queue';
my $s = IPC::Run::start(
	[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c',
	  "SELECT string_agg(snowid_ticket_next('cl')::text, ',') FROM generate_series(1, 10)" ],
	'>', \$s_out, '2>', \$s_err);
$node->poll_query_until('postgres',
	"SELECT count(*) > 0 FROM pg_stat_activity WHERE query LIKE 'SELECT string_agg(snowid_ticket_next(''cl'')%' AND wait_event_type IS NOT NULL AND state = 'active'")
  or die 'the other session did not start';
my $r_out = eval {
	$r->query("SELECT string_agg(snowid_ticket_next('cl')::text, ',') FROM generate_series(1, 10)");
};
ok(defined $r_out && $r_out =~ /^\d+(,\d+){9}$/,
	'a session holding a catalog lock takes values while another waits for that catalog behind VACUUM FULL');
if (defined $r_out)
{
	$r->query_safe('COMMIT');
	$r->quit;
	$v->finish;
	$s->finish;
	my %seen;
	my @all = (split(/,/, $r_out), split(/,/, $s_out =~ s/\s+//gr));
	$seen{$_}++ for @all;
	is(scalar(@all), 20, 'then the waiting session gets its values too');
	is(scalar(grep { $seen{$_} > 1 } keys %seen), 0, 'none of them twice');
	$node->stop;
}
else
{
	# the old deadlock: only an immediate shutdown ends it
	$node->stop('immediate');
	$v->kill_kill;
	$s->kill_kill;
}
done_testing();
