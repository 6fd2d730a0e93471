# Copyright (c) snowid contributors
#
# Counters per key, attacked where a test needs a process stopped at the
# right moment (the others are in sql/counter.sql):
# - a fast key dropped while a block is being reserved for it: the
#   reserving backend is stopped (SIGSTOP) once its block is committed,
#   the key is dropped and taken again, then the backend goes on.  The
#   block it reserved before the drop must not be handed out after it
#   (the key's values after the drop run from its start, and would reach
#   that block's values again): no value twice after the drop;
# - a fast counter created and used in a transaction that rolls back
#   leaves its key's row behind (the block was committed by the server
#   process); pg_dump must not carry such a row: restored, its counter's
#   OID (a number, its relation gone) may be a live counter's there, and
#   the conflict would make the restore of every key's row fail.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep);
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

my $node = snowid_node('counter_attacks', 1);
$node->start;
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION snowid;
SELECT snowid_counter_create('c', mode => 'fast', block => 10);
-- the key's first block, used up: the next value needs a reservation
SELECT snowid_counter_next('c', 'k') FROM generate_series(1, 10);
});

# S holds the key's row, so that B's reservation waits in the server
# process (its lock_timeout is 1 s) while B is stopped.
my $s = $node->background_psql('postgres');
my ($b_in, $b_out, $b_err) = ('', '', '');
my $b = IPC::Run::start(
	[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-f', '-' ],
	'<', \$b_in, '>', \$b_out, '2>', \$b_err);
$b_in .= "SELECT pg_backend_pid();\n";
my $timer = IPC::Run::timer($PostgreSQL::Test::Utils::timeout_default);
$timer->start;
$b->pump until $b_out =~ /^(\d+)\n/ || $timer->is_expired;
my ($b_pid) = $b_out =~ /^(\d+)\n/;
ok($b_pid, "B's backend is $b_pid");
$b_out = '';

$s->query_safe(
	q{BEGIN; SELECT last FROM snowid_counter_key WHERE key = 'k' FOR UPDATE});
$b_in .= "SELECT snowid_counter_next('c', 'k');\n";
$b->pump_nb while length $b_in;
# B waits for its server process, which waits for S's lock (at most 1 s:
# its lock_timeout); stop B there
my $waiting = '';
for (my $tries = 0; $tries < 40 && $waiting ne 'Extension'; $tries++)
{
	usleep(10_000);
	$waiting = $s->query_safe(
		qq{SELECT pg_stat_clear_snapshot();
		   SELECT wait_event_type FROM pg_stat_activity WHERE pid = $b_pid});
	$waiting =~ s/^\s+|\s+$//g;
}
kill 'STOP', $b_pid;
is($waiting, 'Extension', 'B was stopped waiting for its reservation');
$s->query_safe('COMMIT');
# the server process commits B's block; B, stopped, does not install it
$node->poll_query_until('postgres',
	q{SELECT last > 10 FROM snowid_counter_key WHERE key = 'k'})
  or die "B's block was not reserved";
my $reserved =
  $node->safe_psql('postgres', q{SELECT last FROM snowid_counter_key WHERE key = 'k'});
note "B's block ends at $reserved";

is($node->safe_psql('postgres', q{SELECT snowid_counter_drop_key('c', 'k')}),
	't', 'the key is dropped while B holds its block');
# after B's reservation has aged past a second, C reserves anew
sleep 2;
my @after = ($node->safe_psql('postgres', q{SELECT snowid_counter_next('c', 'k')}));
is($after[0], 1, 'after the drop the key starts over');

kill 'CONT', $b_pid;
$timer->start;
$b->pump until $b_out =~ /^(\d+)\n/ || $b_err ne '' || $timer->is_expired;
my ($b_value) = $b_out =~ /^(\d+)\n/;
ok(defined $b_value, 'B got a value' . ($b_err ne '' ? ": $b_err" : ''));
push @after, $b_value if defined $b_value;
$b_in .= "\\q\n";
$b->finish;
$s->quit;

push @after, split /\n/,
  $node->safe_psql('postgres',
	q{SELECT snowid_counter_next('c', 'k') FROM generate_series(1, 3 * } . $reserved . ')');
my %seen;
my @twice = grep { $seen{$_}++ } @after;
is(scalar(@twice), 0,
	'no value given twice after the drop'
	  . (@twice ? " (twice: @twice[0 .. ($#twice < 4 ? $#twice : 4)])" : ''));

# ---------------------------------------------------------------------
# A fast counter's rows left by a rolled-back creation stay out of a dump.

$node->safe_psql(
	'postgres', q{
BEGIN;
SELECT snowid_counter_create('gone', mode => 'fast');
SELECT snowid_counter_next('gone', 'k');
ROLLBACK;
SELECT snowid_counter_next('c', 'kept');
});
is( $node->safe_psql(
		'postgres', q{SELECT count(*) FROM snowid_counter_key k
		   WHERE NOT EXISTS (SELECT FROM pg_class WHERE oid = k.counter)}),
	'1',
	'a rolled-back fast counter left its key row behind');
my ($stdout, $stderr);
IPC::Run::run([ 'pg_dump', '-d', $node->connstr('postgres') ],
	'>', \$stdout, '2>', \$stderr)
  or die "pg_dump failed: $stderr";
my ($rows) = $stdout =~ /^COPY public\.snowid_counter_key [^\n]*\n(.*?)^\\\.$/ms;
ok(defined $rows && $rows =~ /^public\.c\tkept\t/m,
	'the dump carries the live key');
unlike($rows // '', qr/^\d+\t/m,
	'the dump carries no key row of a counter that does not exist');

$node->stop;
done_testing();
