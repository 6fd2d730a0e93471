# Copyright (c) snowid contributors
#
# Ticket slots never fill with dead entries, and privileges are not kept
# past a change (issue 10, items 5 and 6).  One server with
# snowid.ticket_slots = 4, shared by two databases:
# - ticket creations rolled back (whole, to a savepoint, prepared and
#   rolled back) after taking values leave no slot behind, so the other
#   database's tickets keep working;
# - a session whose settings were read before a DROP committed does not
#   bind a slot for the dropped ticket;
# - clients taking values while another session drops and re-creates the
#   ticket many times: afterwards every slot belongs to a live ticket;
# - a full table recycles the slot of a ticket whose catalog row is gone;
# - a superuser session that took values is refused after ALTER ROLE ...
#   NOSUPERUSER in another session, as nextval is.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;
use IPC::Run;

my $node = snowid_node('slots', 1,
	"snowid.ticket_slots = 4\nmax_prepared_transactions = 2\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowid; CREATE DATABASE other');
$node->safe_psql('other',
	q{CREATE EXTENSION snowid; SELECT snowid_ticket_create('o1'), snowid_ticket_create('o2')});

# Slots of database db in use, and those whose ticket no longer exists.
sub slots
{
	my ($db) = @_;
	return $node->safe_psql($db, 'SELECT count(*) FROM snowid_ticket_cache()');
}

sub dead_slots
{
	my ($db) = @_;
	return $node->safe_psql(
		$db, q{SELECT count(*) FROM snowid_ticket_cache() c
		WHERE NOT EXISTS (SELECT 1 FROM snowid_ticket t
						  WHERE t.seqrelid::oid = c.ticket::oid)});
}

# The result of a query, or its error (so that a failure is one failed
# test, not the end of the script).
sub result
{
	my ($db, $sql) = @_;
	my ($ret, $out, $err) = $node->psql($db, $sql);
	return $ret == 0 ? $out : "error: $err";
}

# Drop and re-create the extension in postgres: frees its slots (also on
# a build that leaks them, so that each part below starts from the same
# state).
sub reset_postgres
{
	$node->safe_psql('postgres', 'DROP EXTENSION snowid CASCADE; CREATE EXTENSION snowid');
	return;
}

# ---------------------------------------------------------------------
# Rolled-back creations.

for my $i (1 .. 4)
{
	$node->safe_psql('postgres',
		"BEGIN; SELECT snowid_ticket_create('rb$i'); SELECT snowid_ticket_next('rb$i'); ROLLBACK;"
	);
}
is(slots('postgres'), '0', 'four rolled-back creations leave no slot');
is(result('other', "SELECT snowid_ticket_next('o1')"),
	'1', "after them, another database's ticket gets a slot");
reset_postgres();

for my $i (1 .. 4)
{
	$node->safe_psql('postgres',
		"BEGIN; SAVEPOINT s; SELECT snowid_ticket_create('sp$i'); SELECT snowid_ticket_next('sp$i'); ROLLBACK TO SAVEPOINT s; COMMIT;"
	);
}
is(slots('postgres'), '0', 'four creations rolled back to a savepoint leave no slot');
reset_postgres();

for my $i (1 .. 4)
{
	$node->safe_psql('postgres',
		"BEGIN; SELECT snowid_ticket_create('pr$i'); SELECT snowid_ticket_next('pr$i'); PREPARE TRANSACTION 'pr$i'; ROLLBACK PREPARED 'pr$i';"
	);
}
is(slots('postgres'), '0', 'four prepared and rolled-back creations leave no slot');
is(result('other', "SELECT snowid_ticket_next('o2')"),
	'1', "another database's second ticket gets a slot");
reset_postgres();

# A committed creation keeps its slot; the values go on without a gap.
is( $node->safe_psql(
		'postgres',
		q{BEGIN; SELECT snowid_ticket_create('kept', 0, 1, 10); SELECT snowid_ticket_next('kept'); COMMIT;
		  SELECT snowid_ticket_next('kept')}),
	"kept\n1\n2", 'a committed creation keeps its slot');
$node->safe_psql('postgres', 'DROP SEQUENCE kept');
is(slots('postgres'), '0', 'DROP frees it');

# ---------------------------------------------------------------------
# A session that read the settings before a DROP committed.

# A session uses raced; another drops it in a transaction (which frees its
# slot at once); the first takes a value again, reads the settings (still
# there until the DROP commits) and waits for the sequence's lock; the DROP
# commits.
my $oid = $node->safe_psql('postgres', q{SELECT snowid_ticket_create('raced')::oid});
my $late = $node->background_psql('postgres', on_error_stop => 0);
$late->query_safe("SELECT snowid_ticket_next($oid)");
my $dropper = $node->background_psql('postgres');
$dropper->query_safe('BEGIN; DROP SEQUENCE raced;');
$late->{stderr} = '';
$late->{stdin} .= "SELECT snowid_ticket_next($oid);\n\\echo raced_done\n";
$late->{run}->pump_nb;
$node->poll_query_until('postgres',
	"SELECT count(*) > 0 FROM pg_locks WHERE relation = $oid AND NOT granted")
  or die 'the session did not wait for the DROP';
$dropper->query_safe('COMMIT');
$dropper->quit;
pump_until($late->{run}, $late->{timeout}, \$late->{stdout}, qr/raced_done/)
  or die 'the session that took a value of the dropped ticket never finished';
like($late->{stderr}, qr/ERROR/, 'taking a value of the dropped ticket fails');
$late->quit;
is(slots('postgres'), '0', 'and binds no slot for it');
reset_postgres();

# ---------------------------------------------------------------------
# Clients taking values while the ticket is dropped and re-created.

$node->safe_psql('postgres',
	q{CREATE TABLE churn_done (done boolean); INSERT INTO churn_done VALUES (false);
	  SELECT snowid_ticket_create('churn', 0, 1, 5)});
my $client_sql = q{
DO $$
DECLARE
	n integer := 0;
BEGIN
	LOOP
		EXIT WHEN (SELECT done FROM churn_done);
		BEGIN
			PERFORM snowid_ticket_next(pg_catalog.to_regclass('churn'));
			n := n + 1;
		EXCEPTION WHEN others THEN
			NULL;
		END;
		COMMIT;
	END LOOP;
	RAISE NOTICE 'client took % values', n;
END
$$;};
my @clients;
for my $c (1 .. 4)
{
	my ($out, $err) = ('', '');
	push @clients,
	  {
		err => \$err,
		h => IPC::Run::start(
			[ 'psql', '-X', '-q', '-d', $node->connstr('postgres'), '-c', $client_sql ],
			'>', \$out, '2>', \$err,
			IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default))
	  };
}
$node->safe_psql(
	'postgres', q{
DO $$
BEGIN
	FOR i IN 1 .. 50 LOOP
		PERFORM pg_catalog.pg_sleep(0.01);
		DROP SEQUENCE churn;
		COMMIT;
		PERFORM snowid_ticket_create('churn', 0, 1, 5);
		COMMIT;
	END LOOP;
END
$$;
UPDATE churn_done SET done = true;});
for my $c (@clients)
{
	$c->{h}->finish;
	like(${ $c->{err} }, qr/client took \d+ values/, 'client finished');
	note(${ $c->{err} });
}
is(dead_slots('postgres'), '0',
	'after 50 drops and re-creations under load, no slot of a dropped ticket');
cmp_ok(slots('postgres'), '<=', 1, 'at most one slot in use: the live ticket');
$node->safe_psql('other', q{SELECT snowid_ticket_create('o3')});
is(result('other', "SELECT snowid_ticket_next('o3')"),
	'1', "another database's third ticket gets a slot");

# ---------------------------------------------------------------------
# A full table recycles the slot of a ticket whose catalog row is gone
# (here deleted by hand, with the trigger that refuses that disabled).

reset_postgres();
$node->safe_psql('postgres',
	q{SELECT snowid_ticket_create('orphan');
	  SELECT snowid_ticket_next('orphan');
	  ALTER TABLE snowid_ticket DISABLE TRIGGER snowid_ticket_fixed;
	  DELETE FROM snowid_ticket WHERE seqrelid::oid = 'orphan'::regclass::oid;
	  ALTER TABLE snowid_ticket ENABLE ALWAYS TRIGGER snowid_ticket_fixed;
	  SELECT snowid_ticket_create('fresh')});
is(slots('postgres') . '/' . slots('other'),
	'1/3', 'the table is full: the orphan here, o1, o2 and o3 there');
is(result('postgres', "SELECT snowid_ticket_next('fresh')"),
	'1', 'a new ticket recycles the orphaned slot');
is(dead_slots('postgres'), '0', 'no dead slot left');

# ---------------------------------------------------------------------
# Privileges changed in another session.

$node->safe_psql('postgres',
	q{CREATE ROLE regress_su SUPERUSER LOGIN; DROP SEQUENCE fresh, orphan;
	  SELECT snowid_ticket_create('priv_t')});
my $su = $node->background_psql('postgres', on_error_stop => 0);
$su->query_safe('SET SESSION AUTHORIZATION regress_su');
is($su->query_safe("SELECT snowid_ticket_next('priv_t')"),
	'1', 'a superuser session takes a value');
$node->safe_psql('postgres', 'ALTER ROLE regress_su NOSUPERUSER');
$su->{stderr} = '';
$su->query("SELECT nextval('priv_t')");
like($su->{stderr}, qr/permission denied for sequence priv_t/,
	'after ALTER ROLE NOSUPERUSER elsewhere, nextval is refused');
$su->{stderr} = '';
$su->query("SELECT snowid_ticket_next('priv_t')");
like($su->{stderr}, qr/permission denied for sequence priv_t/,
	'and so is snowid_ticket_next');
$su->quit;

$node->stop;
done_testing();
