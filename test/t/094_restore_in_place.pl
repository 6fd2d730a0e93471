
# Copyright (c) snowid contributors
#
# A data directory restored into itself brings nothing back (issue 38,
# finding 1).
#
# A restore of an older copy into the same directory (rm -rf, then cp -a)
# keeps the directory's device and inode, and the host's boot ID does not
# change: to 1.10 such a start was the server in place.  It resumed on the
# restored lease, the restored (older) high-water mark and the restored pool
# file, and handed out again what had been issued since the copy.  From
# 1.11 the boot record (src/boot_record.c, in /dev/shm) remembers what the
# server last wrote in this boot:
#  1. A member (node 1, a pooled ticket) is copied while the registry is
#     down, goes on issuing, and is restored from the copy: its pool file is
#     behind the record, so its ranges are given up (no value twice); the
#     restored server's clock is set back to just after the copy was taken
#     (as a restored virtual machine's may be), and it continues above the
#     record's bound, not the file's (no ID at or below one issued).
#  2. The member meets the registry again (its lease file rewritten), then
#     is restored from the same copy while the registry is down: its lease
#     file is older than the record's, so it issues nothing until the
#     registry confirms the lease; then it continues above everything.
#  3. A server without a registry, its directory removed and copied anew
#     (another inode, the same path): the record's bound alone keeps it, on
#     a clock set back the same way, from going back.
#  4. A boot record that cannot be written fails the renewal that would
#     have published a bound it does not hold.

use strict;
use warnings;

use Time::HiRes qw(time sleep);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

sub try_sql
{
	my ($node, $sql) = @_;
	my ($ret, $out, $err) =
	  $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	return ($ret, $out, $err);
}

# Up to $n values of $sql's rows, as many as came before an error.
sub take
{
	my ($node, $sql, $n) = @_;
	my ($ret, $out, $err) =
	  try_sql($node, "SELECT ($sql) FROM generate_series(1, $n)");
	return $ret == 0 ? (split /\n/, $out) : ();
}

# The fake clock offset that puts the server's clock half a second after
# $t (the time the copy was taken, by the real clock).
sub back_to
{
	my ($t) = @_;
	return sprintf('%.3f', $t + 0.5 - time);
}

my $tmp = PostgreSQL::Test::Utils::tempdir;
my $clock = "$tmp/clock";
write_clock_offset($clock, '+0');

my ($reg, $conninfo) = registry(sql => "SELECT snowid_pool_create('orders')");
my $m = member('m', 1,
	registry => $conninfo,
	extra => "snowid.max_wait = '200ms'\n",
	start => 0);
with_fake_clock($m, $clock, 'start');
$m->safe_psql('postgres',
	"CREATE EXTENSION snowid; SELECT snowid_ticket_create('t', pool => 'orders')");
ok(wait_registry_state($m, 'ok'), 'the member holds node 1');
my $next = 'snowid_next()';
my $ticket = q{snowid_ticket_next('t')};
my @ids = take($m, $next, 1000);
my @pool = take($m, $ticket, 100);
is(scalar(@pool), 100, 'the member hands out pool values');

# ---- 1. copied with the registry down, restored after more was issued ----

$reg->stop;
ok(wait_registry_state($m, 'unreachable'), 'registry stopped: unreachable');
$m->stop;
my $saved = "$tmp/copy";
save_copy($m, $saved);
my $t_copy = time;

with_fake_clock($m, $clock, 'start');
sleep 2;	# the IDs below lie at least 2 s after the copy's bound
my @after_copy = take($m, $next, 1000);
is(scalar(@after_copy), 1000, 'restarted in place, the member issues during the outage');
my @pool_after_copy = take($m, $ticket, 100);
is(scalar(@pool_after_copy), 100, 'and hands out pool values');
push @ids, @after_copy;
push @pool, @pool_after_copy;
my $last = max_of(@ids);
$m->stop;

restore_in_place($m, $saved);
write_clock_offset($clock, back_to($t_copy));
my $log_offset = -s $m->logfile;
with_fake_clock($m, $clock, 'start');
my $log = slurp_file($m->logfile, $log_offset);
like($log, qr/snowid continues above the bound of its boot record, not of its high-water file/,
	'the start continues above the boot record\'s bound');
like($log, qr/snowid gave up the pool ranges this data directory was copied with/,
	'the start gives up the restored pool ranges');
like($log, qr/restored into itself/, 'and says the directory was restored into itself');

my ($ret, $out, $err) = try_sql($m, "SELECT $next");
ok($ret != 0 || $out > $last,
	'with the clock set back to the copy, the next ID is refused or above every ID issued')
  or diag "got $out, last before $last";
push @ids, $out if $ret == 0;
my @restored_pool = take($m, $ticket, 100);
push @pool, @restored_pool;
is(dups(@pool), 0, 'no pool value handed out before is handed out again');
write_clock_offset($clock, '+0');
my @later = take($m, $next, 1000);
is(scalar(@later), 1000, 'with the clock back, the member issues');
cmp_ok(min_of(@later), '>', $last, 'above every ID issued before the restore');
push @ids, @later;

# ---- 2. the lease file rewritten since the copy, then restored ----

$reg->start;
ok(wait_registry_state($m, 'ok'), 'registry back: the member holds node 1');
$m->poll_query_until('postgres',
	"SELECT count(*) > 0 FROM snowid_pool_holdings() WHERE pool = 'orders' AND ranges > 0")
  or die 'no range of the pool';
push @ids, take($m, $next, 1000);
push @pool, take($m, $ticket, 100);
$reg->stop;
ok(wait_registry_state($m, 'unreachable'), 'registry stopped again');
$m->stop;
$last = max_of(@ids);

restore_in_place($m, $saved);
$log_offset = -s $m->logfile;
with_fake_clock($m, $clock, 'start');
($ret, $out, $err) = try_sql($m, "SELECT $next");
isnt($ret, 0, 'restored with an older lease file, the member issues nothing while the registry is down');
push @ids, $out if $ret == 0;
like($err, qr/55000.*until the registry confirms it/s,
	'SQLSTATE 55000: it waits for the registry');
like($err, qr/lease file is older than the one this server last wrote: the data directory was restored into itself/,
	'saying why');
push @pool, take($m, $ticket, 10);
is(dups(@pool), 0, 'no pool value twice while the registry is down');

$reg->start;
ok(wait_registry_state($m, 'ok'), 'registry back: the member holds node 1 again');
@later = take($m, $next, 1000);
is(scalar(@later), 1000, 'it issues');
cmp_ok(min_of(@later), '>', $last, 'above every ID issued before the restore');
push @ids, @later;
push @pool, take($m, $ticket, 100);
is(dups(@ids), 0, 'no ID was issued twice');
is(dups(@pool), 0, 'no pool value was handed out twice');
$m->stop;
$reg->stop;

# ---- 3. no registry: the record's bound alone ----

my $clock2 = "$tmp/clock2";
write_clock_offset($clock2, '+0');
my $s = snowid_node('alone', 7, "snowid.max_wait = '200ms'\n");
with_fake_clock($s, $clock2, 'start');
$s->safe_psql('postgres', 'CREATE EXTENSION snowid');
my @alone = take($s, $next, 1000);
$s->stop;
save_copy($s, "$tmp/copy2");
$t_copy = time;
with_fake_clock($s, $clock2, 'start');
sleep 2;
push @alone, take($s, $next, 1000);
$last = max_of(@alone);
$s->stop;
restore_in_place($s, "$tmp/copy2", 'anew');
write_clock_offset($clock2, back_to($t_copy));
with_fake_clock($s, $clock2, 'start');
($ret, $out, $err) = try_sql($s, "SELECT $next");
ok($ret != 0 || $out > $last,
	'without a registry, a restored directory on a clock set back to the copy issues no ID at or below the last')
  or diag "got $out, last before $last";
like($err, qr/clock|behind/, 'it is refused for the clock') if $ret != 0;
write_clock_offset($clock2, '+0');
@later = take($s, $next, 100);
cmp_ok(min_of(@later), '>', $last, 'with the clock back, it continues above');
$last = max_of(@later);

# ---- 4. a boot record that cannot be written fails the renewal ----

# (as a full /dev/shm would: a bound the record does not hold is never
# published, so a later restore cannot go below what was issued)
my ($record) = boot_record_dirs($s);
ok(defined $record && -d $record, 'the server has a boot record');
chmod 0500, $record or die "could not chmod $record: $!";
($ret, $out, $err) = try_sql($s,
	'SELECT count(*) FROM generate_series(1, 200) g, LATERAL snowid_next_batch(10000 + 0 * g)');
isnt($ret, 0, 'a renewal whose boot record cannot be written fails');
like($err, qr/could not write snowid's boot record/, 'saying so');
chmod 0700, $record or die "could not chmod $record: $!";
@later = take($s, $next, 100);
is(scalar(@later), 100, 'once it can be written again, the server issues');
cmp_ok(min_of(@later), '>', $last, 'above every ID before');
$s->stop;

done_testing();
