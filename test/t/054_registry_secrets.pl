# Copyright (c) snowid contributors
#
# No password is ever shown, and other members' identity only to superusers
# and pg_monitor (issue 22, item 7), on the member side.
#
# The registry asks the members' login roles for a password (scram-sha-256),
# and each member's snowid.registry carries it: A in key/value form, quoted;
# B as a URI (user:password@); C as a URI libpq cannot parse, whose error
# quotes it whole.  On each member, as a superuser, a pg_monitor member, a
# pg_read_all_settings member and a plain role:
#
#  1. SHOW, current_setting(), pg_settings (every column, reset_val too)
#     and snowid_registry_status() never contain the password; those who
#     may read the setting see it with the password as ********;
#     pg_file_settings is for superusers only.
#  2. A and B have the same node ID: B's conflict, read as a plain role or
#     a pg_read_all_settings member (snowid_registry_status(), snowid_next(),
#     snowid_ticket_next() of a pooled ticket), is "node 1 is held by
#     another server", without A's port, system identifier or cluster name;
#     a pg_monitor member and a superuser read who holds it.
#  3. C cannot reach the registry: libpq's error quotes the URI, the status
#     detail and C's server log have it with ******** for the password.
#     Other spellings (unquoted, spaced, ?password=, percent-encoded,
#     postgres://, sslpassword, a key without =), by reload, and one by
#     ALTER SYSTEM: SHOW and pg_settings mask each.
#  4. A's password changed to a wrong one by reload: the reload and the
#     failed authentication put the password in no status, no setting and
#     not in A's server log.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

my %password = (
	member_a => 'Sekret-A-7Q2x',
	member_b => 'Sekret-B-9Kp4',
	member_c => 'Sekret-C-5Zr8',);
my $wrong_a = 'WrongPw-A-3Vn6';
my @secrets = (values %password, $wrong_a);

# ---- the registry: each member's role logs in with a password ----

# From 1.8 the registry names other members only to its superusers and
# pg_monitor: B's login is in pg_monitor there, so that B's own superusers
# and pg_monitor members can read who holds its node (2. below).
my $registry = registry(
	logins => [ sort keys %password ],
	password => \%password,
	monitor => ['member_b'],
	hba => join('', map { "local all $_ scram-sha-256\n" } sort keys %password),
	sql => "SELECT snowid_pool_create('p1');");
my $sock = $registry->host;
my $port = $registry->port;

# The registry really asks for the password.
{
	my ($ret, $out, $err) = $registry->psql('postgres', 'SELECT 1',
		extra_params => [ '-U', 'member_a', '-w' ]);
	isnt($ret, 0, 'the registry refuses member_a without its password');
}

my %conninfo = (
	member_a =>
	  "host=$sock port=$port dbname=postgres user=member_a password='$password{member_a}' application_name=member_a",
	member_b =>
	  "postgresql://member_b:$password{member_b}\@/postgres?host=$sock&port=$port&application_name=member_b",
	member_c => "postgresql://member_c:$password{member_c}\@/postgres?host=/nonexistent-c",);
my %masked = (
	member_a =>
	  "host=$sock port=$port dbname=postgres user=member_a password=******** application_name=member_a",
	member_b =>
	  "postgresql://member_b:********\@/postgres?host=$sock&port=$port&application_name=member_b",
	member_c => 'postgresql://member_c:********@/postgres?host=/nonexistent-c',);
# a URI libpq cannot parse, whose error would quote it whole
my $bad_uri = "postgresql://member_c:$password{member_c}\@[::1/postgres";

sub conf_quote
{
	my ($text) = @_;
	$text =~ s/'/''/g;
	return "'$text'";
}

# The roles on each member that read its settings and status.
my $member_roles = q{
CREATE ROLE mon LOGIN; GRANT pg_monitor TO mon;
CREATE ROLE rset LOGIN; GRANT pg_read_all_settings TO rset;
CREATE ROLE plain LOGIN;
};

# stdout and stderr of $sql run on $node as $role (undef: the superuser).
sub as_role
{
	my ($node, $role, $sql) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', $sql,
		defined $role ? (extra_params => [ '-U', $role ]) : ());
	return ($out // '') . ($err // '');
}

sub no_secret
{
	my ($text, $what) = @_;
	my @found = grep { index($text, $_) >= 0 } @secrets;
	ok(!@found, "$what: no password") or diag "found @found in: $text";
	return;
}

my @roles = ([ undef, 'superuser' ], [ 'mon', 'pg_monitor' ],
	[ 'rset', 'pg_read_all_settings' ], [ 'plain', 'plain role' ]);

# 1. what every role reads of the setting and the status
sub check_settings
{
	my ($node, $name) = @_;
	for my $r (@roles)
	{
		my ($role, $who) = @$r;
		my $show = as_role($node, $role, 'SHOW snowid.registry');
		my $current =
		  as_role($node, $role, "SELECT current_setting('snowid.registry')");
		my $settings = as_role($node, $role,
			"SELECT row_to_json(s) FROM pg_settings s WHERE name = 'snowid.registry'");
		my $all = as_role($node, $role, 'SHOW ALL');
		my $status = as_role($node, $role,
			'SELECT row_to_json(s) FROM snowid_registry_status() s');
		no_secret($show, "$name, $who: SHOW");
		no_secret($current, "$name, $who: current_setting()");
		no_secret($settings, "$name, $who: pg_settings");
		no_secret($all, "$name, $who: SHOW ALL");
		no_secret($status, "$name, $who: snowid_registry_status()");
		if ($who eq 'plain role')
		{
			like($show, qr/permission denied|must be superuser or have privileges of pg_read_all_settings/,
				"$name, $who: SHOW snowid.registry is refused");
		}
		else
		{
			is( $node->safe_psql('postgres', 'SHOW snowid.registry',
					defined $role ? (extra_params => [ '-U', $role ]) : ()),
				$masked{$name},
				"$name, $who: SHOW shows the setting with the password masked");
			like($settings, qr/"reset_val":"\Q$masked{$name}\E"/,
				"$name, $who: pg_settings.reset_val is masked too");
		}
	}
	like(as_role($node, 'mon', 'SELECT count(*) FROM pg_file_settings'),
		qr/permission denied/,
		"$name: pg_file_settings is refused to a pg_monitor member");
	return;
}

# ==== members A and B hold and want node 1 ====

# B holds node 1 first, long enough to create a ticket sequence fed by
# pool p1 (USAGE for every role), and gives it back at a clean stop; A
# takes node 1; B, started again, is refused.
my $b = member('member_b', 1, registry => $conninfo{member_b}, sql => $member_roles);
ok(wait_registry_state($b, 'ok'), 'B holds node 1 (its password was accepted)');
$b->safe_psql('postgres',
	"SELECT snowid_ticket_create('pt', pool => 'p1'); GRANT USAGE ON SEQUENCE pt TO PUBLIC");
$b->stop;
my $a = member('member_a', 1, registry => $conninfo{member_a}, sql => $member_roles);
ok(wait_registry_state($a, 'ok'), 'A holds node 1 (its password was accepted)');
$b->start;
ok(wait_registry_state($b, 'conflict'), 'B, second with node 1, is refused');

check_settings($a, 'member_a');
check_settings($b, 'member_b');

# ==== 2. B's conflict, as each role reads it ====

my $a_port = $a->port;
my $a_sysid = $a->safe_psql('postgres',
	'SELECT system_identifier FROM pg_control_system()');
my $holder_re = qr/member_a|:$a_port\b|$a_sysid/;

for my $r (@roles)
{
	my ($role, $who) = @$r;
	my $sees = !defined $role || $role eq 'mon';
	my $detail = as_role($b, $role,
		"SELECT coalesce(detail, '<null>') FROM snowid_registry_status()");
	my $next = as_role($b, $role, "\\set VERBOSITY verbose\nSELECT snowid_next()");
	my $pool = as_role($b, $role, "\\set VERBOSITY verbose\nSELECT snowid_ticket_next('pt')");
	no_secret("$detail $next $pool", "B, $who: conflict texts");
	if ($sees)
	{
		like($detail, qr/^node 1 is held by cluster "member_a" on \S+:$a_port, system identifier $a_sysid/,
			"B, $who: the status detail names the holder");
		like($next, qr/snowid node 1 is held by cluster "member_a" on \S+:$a_port, system identifier $a_sysid/,
			"B, $who: snowid_next() names the holder");
		like($pool, qr/DETAIL:  The registry is conflict: Node 1 is held by cluster "member_a" on \S+:$a_port, system identifier $a_sysid/,
			"B, $who: a pooled ticket's error names the holder");
	}
	else
	{
		is($detail, 'node 1 is held by another server',
			"B, $who: the status detail says only that another server holds node 1");
		like($next, qr/ERROR:  55000: snowid node 1 is held by another server\n/,
			"B, $who: snowid_next() fails with 55000, another server holding node 1");
		unlike($next, $holder_re,
			"B, $who: snowid_next() names no port, system identifier or cluster of A");
		like($pool, qr/ERROR:  55000: snowid hands out no values of pool "p1" .*\nDETAIL:  The registry is conflict: Node 1 is held by another server\.\n/,
			"B, $who: a pooled ticket's error says another server holds node 1");
		unlike($pool, $holder_re,
			"B, $who: a pooled ticket's error names no port, system identifier or cluster of A");
	}
}
like(slurp_file($b->logfile),
	qr/WARNING:  snowid node 1 is held by cluster "member_a" on \S+:$a_port, system identifier $a_sysid/,
	'B\'s server log names the holder');

# ==== 3. C: a URI libpq cannot parse, then a registry it cannot reach ====

# libpq's error for a URI it cannot parse quotes the URI whole: such a
# string stops the start, with a message that quotes none of it.
my $c = member('member_c', undef, registry => $bad_uri, start => 0);
ok(!$c->start(fail_ok => 1), 'C does not start with a URI libpq cannot parse');
like(slurp_file($c->logfile),
	qr/FATAL:  invalid connection string for parameter "snowid.registry"/,
	'C\'s log says why');
no_secret(slurp_file($c->logfile), 'C\'s server log, refused at start');
$c->append_conf('postgresql.conf',
	'snowid.registry = ' . conf_quote($conninfo{member_c}) . "\n");
$c->start;
$c->safe_psql('postgres', "CREATE EXTENSION snowid;\n$member_roles");
ok( $c->poll_query_until('postgres',
		"SELECT detail IS NOT NULL FROM snowid_registry_status()"),
	'C has a reason why the registry cannot be reached');
check_settings($c, 'member_c');
is(as_role($c, 'plain', "SELECT coalesce(detail, '<null>') FROM snowid_registry_status()"),
	'<null>', 'C, plain role: no detail');
no_secret(slurp_file($c->logfile), 'C\'s server log');

# Other spellings of a secret, by reload on C (which never connects): SHOW
# masks each, pg_settings.reset_val too.  (PostgreSQL logs each of these
# reloads with the line as written: C's log was checked above.)
my @forms = (
	[ 'host=/nonexistent-1 password=pw-one dbname=d',
	  'host=/nonexistent-1 password=******** dbname=d', 'pw-one' ],
	[ "host=/nonexistent-2 password = 'pw two' dbname=d",
	  'host=/nonexistent-2 password = ******** dbname=d', 'pw two' ],
	[ 'postgresql://u@%2Fnonexistent-3/d?sslmode=disable&password=pw-three',
	  'postgresql://u@%2Fnonexistent-3/d?sslmode=disable&password=********', 'pw-three' ],
	[ 'postgresql://u:pw%40four@%2Fnonexistent-4/d',
	  'postgresql://u:********@%2Fnonexistent-4/d', 'pw%40four' ],
	[ 'postgres://u:pw-five@%2Fnonexistent-5/d',
	  'postgres://u:********@%2Fnonexistent-5/d', 'pw-five' ],
	[ 'host=/nonexistent-6 sslpassword=pw-six',
	  'host=/nonexistent-6 sslpassword=********', 'pw-six' ],
	# libpq cannot parse this one: refused, the string before kept
	[ 'host=/nonexistent-7 password pw-seven',
	  'host=/nonexistent-6 sslpassword=********', 'pw-seven' ],);
for my $f (@forms)
{
	my ($written, $shown, $secret) = @$f;
	$c->append_conf('postgresql.conf', 'snowid.registry = ' . conf_quote($written) . "\n");
	$c->reload;
	ok($c->poll_query_until('postgres', 'SHOW snowid.registry', $shown),
		"SHOW masks: $written");
	my $row = $c->safe_psql('postgres',
		"SELECT row_to_json(s) FROM pg_settings s WHERE name = 'snowid.registry'");
	ok(index($row, $secret) < 0, "pg_settings has no secret: $written")
	  or diag $row;
}

# ALTER SYSTEM writes the string as written (the server needs the
# password), and SHOW masks it.
$c->safe_psql('postgres',
	"ALTER SYSTEM SET snowid.registry = 'host=/nonexistent-8 password=pw-eight'; SELECT pg_reload_conf()");
ok( $c->poll_query_until('postgres', 'SHOW snowid.registry',
		'host=/nonexistent-8 password=********'),
	'ALTER SYSTEM: SHOW masks the password');
like(slurp_file($c->data_dir . '/postgresql.auto.conf'),
	qr/^snowid.registry = 'host=\/nonexistent-8 password=pw-eight'$/m,
	'ALTER SYSTEM wrote the string as written');

# ==== 4. A's password changed to a wrong one by reload ====

{
	my $pos = -s $a->logfile;
	my $failures = $a->safe_psql('postgres', 'SELECT failures FROM snowid_registry_stats()');
	$conninfo{member_a} =~ s/\Q$password{member_a}\E/$wrong_a/;
	$a->append_conf('postgresql.conf',
		'snowid.registry = ' . conf_quote($conninfo{member_a}) . "\n");
	$a->reload;
	ok( $a->poll_query_until('postgres',
			"SELECT failures > $failures FROM snowid_registry_stats()"),
		'A fails to connect with the wrong password');
	ok( $a->poll_query_until('postgres',
			"SELECT detail LIKE '%password authentication failed%' FROM snowid_registry_status()"),
		'A\'s status detail says why');
	check_settings($a, 'member_a');
	no_secret(slurp_file($a->logfile), 'A\'s server log');
	unlike(slurp_file($a->logfile, $pos), qr/parameter "snowid.registry" changed/,
		'A\'s reload that changed only the password logged no new value');
}

no_secret(slurp_file($b->logfile), 'B\'s server log');

$_->stop for ($c, $b, $a);
$registry->stop;
done_testing();
