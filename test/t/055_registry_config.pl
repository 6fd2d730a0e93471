# Copyright (c) snowid contributors
#
# Configuration changes keep a working member working.  The registry is
# known by what it is (its system identifier and database), not by the
# text of snowid.registry.  Members log in over TCP with a password.
#
#  1. Edits of snowid.registry by reload that reach the same registry (a
#     rotated password with connect_timeout added, a passfile instead of
#     the password, the host alias localhost instead of 127.0.0.1) keep the
#     lease: the member reconnects with each, stays 'ok' at every look, is
#     granted nothing anew (claims unchanged) and warns of no other
#     registry.  Its lease file names the registry's system identifier and
#     database.
#  2. During an outage, an edit keeps the lease: the member issues on (and
#     no message says its lease "ran out").  Restarted, still during the
#     outage, from a lease file in the format before 1.5 (without the
#     registry's identity): the file is accepted and the member issues on
#     its lease; once the registry is back it is 'ok' with no warning of
#     another registry, and the file names the registry again.
#  3. A connection string libpq cannot parse: ALTER SYSTEM fails at once;
#     in postgresql.auto.conf, a reload refuses it and keeps the old one
#     (SHOW, state 'ok', issuing); neither the error nor the log quotes the
#     password in it.  In postgresql.conf, it stops the server's start
#     (rather than the start going on without a registry).
#  4. An edit that reaches another registry (another database) drops the
#     lease: warned of, and snowid_next() fails saying there is no lease
#     (not that one "ran out at" a time to come) while the new registry
#     refuses the member's calls; granted there, it issues again.
#  5. A server issuing under snowid.node_id without a registry, to which
#     snowid.registry is added by reload: with a wrong password, a database
#     without the extension, a database whose functions it may not call, it
#     goes on issuing, with a WARNING and the state 'unreachable' saying it
#     is unchecked; the right one makes it 'ok'.  A second such server with
#     the same node ID is stopped by the conflict.
#
# No assertion depends on elapsed time: every state is waited for by
# polling (up to the TAP timeout).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;
use Time::HiRes qw(time usleep);

my $tmp = PostgreSQL::Test::Utils::tempdir;

# ---- helpers (local to this file) ----

sub stat_of
{
	my ($node, $col) = @_;
	return $node->safe_psql('postgres', "SELECT $col FROM snowid_registry_stats()");
}

# Wait until $cond->() is true, up to the TAP timeout; true if it was.
sub wait_for
{
	my ($cond) = @_;
	my $until = time + $PostgreSQL::Test::Utils::timeout_default;
	while (time < $until)
	{
		return 1 if $cond->();
		usleep(100_000);
	}
	return $cond->();
}

sub set_registry
{
	my ($node, $conninfo) = @_;
	$node->safe_psql('postgres',
		"ALTER SYSTEM SET snowid.registry = '$conninfo'; SELECT pg_reload_conf()");
	return;
}

# Fields of $PGDATA/snowid.lease; () if none.
sub lease_file
{
	my ($node) = @_;
	my $path = $node->data_dir . '/snowid.lease';
	return () unless -e $path;
	my $line = slurp_file($path);
	return ()
	  unless $line =~
	  /^snowid-lease-1 (-?\d+) (\d) ([0-9a-f]+) (-?\d+) (\d+) (\S+)(?: (\d+) (\S+)(?: \S+)*)?\n/;
	return (
		node => $1,
		auto => $2,
		start_id => $3,
		deadline => $4,
		port => $5,
		host => $6,
		registry => $7,
		database => $8);
}

sub log_since
{
	my ($node, $pos) = @_;
	return slurp_file($node->logfile, $pos);
}

# ---- the registry: members log in as snowid_m with a password, over TCP ----

my $reg = registry(
	conf => "listen_addresses = '127.0.0.1'\n",
	hba => "local all snowid_m scram-sha-256\n"
	  . "host all snowid_m 127.0.0.1/32 scram-sha-256\n"
	  . "host all snowid_m ::1/128 scram-sha-256\n",
	logins => ['snowid_m'],
	password => { snowid_m => 'pw-one' },
	grant => 'all',
	sql => q{
CREATE DATABASE reg2;
CREATE DATABASE noext;
});
my $rport = $reg->port;
# another registry: the extension, but snowid_m may not call it yet
$reg->safe_psql('reg2', 'CREATE EXTENSION snowid');
my $reg_sysid = $reg->safe_psql('postgres',
	'SELECT system_identifier FROM pg_control_system()');

my $passfile = "$tmp/pgpass";
{
	open my $fh, '>', $passfile or die "could not write $passfile: $!";
	print $fh "*:$rport:*:snowid_m:pw-two\n";
	close $fh or die "could not close $passfile: $!";
	chmod 0600, $passfile or die "could not chmod $passfile: $!";
}

sub conninfo
{
	my (%o) = @_;
	return join ' ', "host=$o{host}", "port=$rport",
	  'dbname=' . ($o{dbname} // 'postgres'), 'user=snowid_m', @{ $o{extra} // [] };
}

# Wait until the member's worker is connected to the registry with
# application_name $app, looking at the member's state at every turn:
# returns (connected, every state seen was 'ok').
sub reconnected
{
	my ($node, $app) = @_;
	my $all_ok = 1;
	my $found = wait_for(
		sub {
			$all_ok = 0 if status_of($node, 'state', null => '<null>') ne 'ok';
			return $reg->safe_psql('postgres',
				"SELECT count(*) FROM pg_stat_activity WHERE application_name = '$app'")
			  == 1;
		});
	$all_ok = 0 if status_of($node, 'state', null => '<null>') ne 'ok';
	return ($found, $all_ok);
}

# ==== 1. edits that reach the same registry keep the lease ====

my $a = member('member_a', 5,
	registry => conninfo(host => '127.0.0.1', extra => ['password=pw-one', 'application_name=e0']),
	cluster_name => 1,
	extra => "snowid.max_wait = '100ms'\n");
ok(wait_registry_state($a, 'ok'), 'member_a holds node 5');
my $claims = stat_of($a, 'claims');
is($claims, '1', 'granted once');
my $a_log = -s $a->logfile;

my @edits = (
	[
		'a rotated password, connect_timeout added',
		conninfo(host => '127.0.0.1',
			extra => [ 'password=pw-two', 'connect_timeout=5', 'application_name=e1' ]),
		"ALTER ROLE snowid_m PASSWORD 'pw-two'"
	],
	[
		'a passfile instead of the password',
		conninfo(host => '127.0.0.1',
			extra => [ "passfile=$passfile", 'connect_timeout=5', 'application_name=e2' ])
	],
	[
		'the host alias localhost',
		conninfo(host => 'localhost',
			extra => [ "passfile=$passfile", 'connect_timeout=5', 'application_name=e3' ])
	]);
my $app = 0;
for my $edit (@edits)
{
	my ($what, $conninfo, $on_registry) = @$edit;
	$app++;
	$reg->safe_psql('postgres', $on_registry) if defined $on_registry;
	set_registry($a, $conninfo);
	my ($found, $all_ok) = reconnected($a, "e$app");
	ok($found, "$what: the worker reconnected with it");
	ok($all_ok, "$what: state 'ok' at every look");
	is(stat_of($a, 'claims'), $claims, "$what: the lease is kept (no new grant)");
	my ($ret) = $a->psql('postgres', 'SELECT snowid_next()');
	is($ret, 0, "$what: member_a issues");
}
is(stat_of($a, 'conflicts'), '0', 'no conflict on the way');
unlike(log_since($a, $a_log), qr/now names another registry/,
	'no edit was taken for another registry');
like(status_of($a, 'registry', null => '<null>'), qr/host=localhost/, 'the status shows the new host');
my %lease = lease_file($a);
is($lease{registry}, $reg_sysid,
	'the lease file names the registry\'s system identifier');
is($lease{database}, unpack('H*', 'postgres'), 'and its database (hex)');

# ==== 2. an edit during an outage, a restart from an old lease file ====

$reg->stop;
ok(wait_registry_state($a, 'unreachable'), 'registry stopped: member_a unreachable');
my $failures = stat_of($a, 'failures');
$a_log = -s $a->logfile;
set_registry($a,
	conninfo(host => '127.0.0.1',
		extra => [ "passfile=$passfile", 'connect_timeout=2', 'application_name=e4' ]));
ok( wait_for(
		sub {
			status_of($a, 'registry', null => '<null>') =~ /host=127\.0\.0\.1/
			  && stat_of($a, 'failures') > $failures + 1;
		}),
	'outage: the worker tried the edited string');
my ($ret, $out, $err) = try_next($a);
is($ret, 0, 'outage: after the edit member_a still issues on its lease')
  or diag $err;
unlike($err, qr/ran out/, 'and nothing says its lease ran out');
isnt(status_of($a, 'lease_until', null => '<null>'), '<null>', 'its lease end is still shown');

$a->stop;
%lease = lease_file($a);
cmp_ok($lease{deadline}, '>', 0, 'stopped during the outage: the lease file keeps its lease');
{
	# the format before 1.5: no registry identity
	my $path = $a->data_dir . '/snowid.lease';
	my $line = slurp_file($path);
	$line =~ s/^((?:\S+ ){6}\S+) \d+ \S+(?: \S+ \S+ \S+(?: \S+)?)?\n\z/$1\n/
	  or die "unexpected lease file: $line";
	open my $fh, '>', $path or die "could not write $path: $!";
	print $fh $line;
	close $fh or die "could not close $path: $!";
	%lease = lease_file($a);
	ok(!defined $lease{registry}, 'the lease file is rewritten in the old format');
}
$a_log = -s $a->logfile;
$a->start;
ok(wait_registry_state($a, 'unreachable'), 'restarted during the outage: unreachable');
($ret, $out, $err) = try_next($a);
# (1.8: a file without the facts of its start cannot prove this is the
# same server in place, so the lease waits for the registry)
isnt($ret, 0, 'it issues nothing on the lease of the old-format file until the registry answers');
like($err, qr/until the registry confirms it/, 'saying it waits for the registry');
unlike(log_since($a, $a_log), qr/malformed lease file/, 'the old format is not taken for malformed');

$reg->start;
ok(wait_registry_state($a, 'ok'), 'registry back: member_a ok');
is(status_of($a, 'node_id', null => '<null>'), '5', 'with node 5');
($ret, $out, $err) = try_next($a);
is($ret, 0, 'and issues again') or diag $err;
unlike(log_since($a, $a_log), qr/now names another registry/,
	'the registry is not taken for another one');
ok(wait_for(sub { my %l = lease_file($a); ($l{registry} // '') eq $reg_sysid }),
	'the lease file names the registry again');

# ==== 3. a connection string libpq cannot parse ====

my $good = $a->safe_psql('postgres', 'SHOW snowid.registry');
$claims = stat_of($a, 'claims');
($ret, $out, $err) = $a->psql('postgres',
	"ALTER SYSTEM SET snowid.registry = 'host=127.0.0.1 nosuchoption=1'");
isnt($ret, 0, 'ALTER SYSTEM with an unknown keyword fails');
like($err, qr/invalid connection string for parameter "snowid\.registry"/,
	'saying the connection string is invalid');
like($err, qr/invalid connection option "nosuchoption"/, 'in libpq\'s words');
($ret, $out, $err) = $a->psql('postgres',
	"ALTER SYSTEM SET snowid.registry = 'host=127.0.0.1 password=hunter2 fish2'");
isnt($ret, 0, 'ALTER SYSTEM with a password split by a space fails');
like($err, qr/DETAIL:  libpq cannot parse it: missing "=" after "\.\.\."/,
	'libpq\'s words, with the word it stumbled on hidden');
unlike($err, qr/hunter2|fish2/, 'the error quotes nothing of the password');

my $auto = $a->data_dir . '/postgresql.auto.conf';
my $auto_text = slurp_file($auto);
$a_log = -s $a->logfile;
$a->append_conf('postgresql.auto.conf',
	"snowid.registry = 'host=127.0.0.1 password=hunter2 fish2'\n");
$a->safe_psql('postgres', 'SELECT pg_reload_conf()');
ok( wait_for(
		sub {
			log_since($a, $a_log) =~ /invalid connection string for parameter "snowid\.registry"/;
		}),
	'a reload refuses the malformed string');
$ret = $a->safe_psql('postgres', 'SHOW snowid.registry');
is($ret, $good, 'the old string is kept');
is(status_of($a, 'state', null => '<null>'), 'ok', 'state still ok');
is(stat_of($a, 'claims'), $claims, 'the lease is kept');
($ret) = $a->psql('postgres', 'SELECT snowid_next()');
is($ret, 0, 'member_a issues');
unlike(log_since($a, $a_log), qr/hunter2|fish2/, 'the log quotes nothing of the password');
{
	open my $fh, '>', $auto or die "could not write $auto: $!";
	print $fh $auto_text;
	close $fh or die "could not close $auto: $!";
}
$a->safe_psql('postgres', 'SELECT pg_reload_conf()');

# ==== 5. a registry added by reload to a server issuing under snowid.node_id ====

# member_b and member_c: no registry to start with (one is added by reload).
my @unregistered = (cluster_name => 1, extra => "snowid.max_wait = '100ms'\n");
my $b = member('member_b', 7, @unregistered);
($ret) = $b->psql('postgres', 'SELECT snowid_next()');
is($ret, 0, 'member_b issues under node 7 without a registry');
is(status_of($b, 'state', null => '<null>'), 'off', 'state off');

for my $case (
	[ 'a wrong password', 'postgres', 'password=wrong-pw', qr/password authentication failed/ ],
	[ 'a database without the extension', 'noext', "passfile=$passfile", qr/no snowid extension/ ],
	[ 'a registry it may not call', 'reg2', "passfile=$passfile", qr/permission denied/ ])
{
	my ($what, $db, $auth, $detail) = @$case;
	my $b_log = -s $b->logfile;
	set_registry($b, conninfo(host => '127.0.0.1', dbname => $db, extra => [$auth]));
	ok( wait_for(
			sub {
				status_of($b, 'state', null => '<null>') eq 'unreachable'
				  && status_of($b, 'detail', null => '<null>') =~ $detail
				  && status_of($b, 'registry', null => '<null>') =~ /dbname=$db/;
			}),
		"$what: state unreachable, the detail says why");
	like(status_of($b, 'detail', null => '<null>'), qr/^unchecked: this server issues IDs as node 7/,
		"$what: and that member_b issues unchecked");
	unlike(status_of($b, 'detail', null => '<null>'), qr/wrong-pw/, "$what: no password in the status");
	($ret, $out, $err) = try_next($b);
	is($ret, 0, "$what: member_b goes on issuing") or diag $err;
	ok( wait_for(
			sub {
				log_since($b, $b_log) =~
				  /WARNING:  snowid registry unreachable: this server goes on issuing IDs as node 7/;
			}),
		"$what: a WARNING says so");
}
# (PostgreSQL itself logs the statements and the new value of a parameter)
unlike(
	join('', grep { !/statement: |parameter "snowid\.registry" changed to/ }
		  split /^/, slurp_file($b->logfile)),
	qr/wrong-pw/,
	'the wrong password is in no message of snowid\'s');

set_registry($b, conninfo(host => '127.0.0.1', extra => ["passfile=$passfile"]));
ok(wait_registry_state($b, 'ok'), 'the right registry: member_b ok');
($ret) = $b->psql('postgres', 'SELECT snowid_next()');
is($ret, 0, 'and issues');
is( $reg->safe_psql('postgres',
		"SELECT cluster_name FROM snowid_registry_nodes WHERE node_id = 7 AND state = 'held'"),
	'member_b',
	'the registry holds node 7 for member_b');

my $c = member('member_c', 7, @unregistered);
($ret) = $c->psql('postgres', 'SELECT snowid_next()');
is($ret, 0, 'member_c issues under node 7 without a registry');
set_registry($c, conninfo(host => '127.0.0.1', extra => ["passfile=$passfile"]));
ok(wait_registry_state($c, 'conflict'), 'registry added to member_c: conflict over node 7');
($ret, $out, $err) = try_next($c);
isnt($ret, 0, 'member_c stops issuing');
like($err, qr/ERROR:  55000: snowid node 7 is held by/, 'naming the holder');
($ret) = $b->psql('postgres', 'SELECT snowid_next()');
is($ret, 0, 'member_b still issues');
$c->stop;
$b->stop;

# ==== 4. an edit that reaches another registry drops the lease ====

$a_log = -s $a->logfile;
set_registry($a,
	conninfo(host => '127.0.0.1', dbname => 'reg2', extra => ["passfile=$passfile"]));
ok(wait_for(sub { log_since($a, $a_log) =~ /WARNING:  snowid\.registry now names another registry/ }),
	'another registry: warned of');
ok( wait_for(
		sub {
			status_of($a, 'state', null => '<null>') eq 'unreachable'
			  && status_of($a, 'detail', null => '<null>') =~ /permission denied/;
		}),
	'the new registry refuses the member\'s calls: unreachable');
is(status_of($a, 'lease_until', null => '<null>'), '<null>', 'the lease is dropped');
($ret, $out, $err) = try_next($a);
isnt($ret, 0, 'member_a issues nothing');
like($err, qr/ERROR:  55000: snowid has no node lease from the registry/,
	'snowid_next() says there is no lease');
unlike($err, qr/ran out/, 'not that a lease ran out');
$reg->safe_psql('reg2', 'GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO snowid_m');
ok(wait_registry_state($a, 'ok'), 'granted by the new registry: ok');
is( $reg->safe_psql('reg2',
		"SELECT node_id || ' ' || cluster_name FROM snowid_registry_nodes WHERE state = 'held'"),
	'5 member_a',
	'reg2 holds node 5 for member_a');
%lease = lease_file($a);
is($lease{database}, unpack('H*', 'reg2'), 'the lease file names reg2');
($ret) = $a->psql('postgres', 'SELECT snowid_next()');
is($ret, 0, 'member_a issues again');

$a->stop;

# ==== 3, at start: a connection string libpq cannot parse stops the start ====

my $d = member('member_d', 8,
	registry => 'host=127.0.0.1 password=hunter2 fish2', start => 0);
ok(!$d->start(fail_ok => 1), 'a start with a malformed snowid.registry fails');
like(slurp_file($d->logfile),
	qr/FATAL:  invalid connection string for parameter "snowid\.registry"/,
	'saying the connection string is invalid (not starting without a registry)');
unlike(slurp_file($d->logfile), qr/hunter2|fish2/, 'quoting nothing of the password');

$reg->stop;
done_testing();
