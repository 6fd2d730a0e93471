# Small helpers shared by snowid's TAP tests (test/t/*.pl).
package SnowidTest;

use strict;
use warnings;
use Exporter 'import';
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;

our @EXPORT = qw(snowid_node take_setup_sql max_of min_of strictly_increasing set_policy
  write_clock_offset highwater_slots highwater_file highwater_fields reserved_until_us
  wait_registry_state start_pgbench pgbench_processed drop_attver_options
  run_pg_upgrade);

# A new node, initialised but not started, that preloads snowid with the
# given node ID (undef: none) and any extra postgresql.conf lines; the
# remaining arguments go to init (allows_streaming => 1, say), except
# install_path, which goes to PostgreSQL::Test::Cluster->new: the directory
# (holding bin/ and lib/) of another PostgreSQL installation to run the node
# on, for pg_upgrade.
sub snowid_node
{
	my ($name, $node_id, $extra, %init) = @_;
	my $install_path = delete $init{install_path};
	my $node = PostgreSQL::Test::Cluster->new($name,
		defined $install_path ? (install_path => $install_path) : ());
	$node->init(%init);
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'snowid'\n"
		  . (defined $node_id ? "snowid.node_id = $node_id\n" : '')
		  . ($extra // ''));
	return $node;
}

# Largest and smallest of a list of IDs (64-bit integers; Perl compares
# them exactly as integers on 64-bit builds).
sub max_of
{
	my $max;
	for (@_) { $max = $_ if !defined $max || $_ > $max; }
	return $max;
}

sub min_of
{
	my $min;
	for (@_) { $min = $_ if !defined $min || $_ < $min; }
	return $min;
}

# True if every ID is greater than the one before it.
sub strictly_increasing
{
	my @ids = @_;
	for my $i (1 .. $#ids)
	{
		return 0 unless $ids[$i] > $ids[ $i - 1 ];
	}
	return 1;
}

# Set snowid.max_lead and snowid.max_wait with ALTER SYSTEM, reload, and
# wait until the node's sessions see the new values.  Call it with any fake
# clock offset at +0: a clock behind stretches the poll's sleeps.
sub set_policy
{
	my ($node, $lead, $wait) = @_;
	$node->safe_psql('postgres',
		"ALTER SYSTEM SET snowid.max_lead = '$lead'; ALTER SYSTEM SET snowid.max_wait = '$wait'; SELECT pg_reload_conf();"
	);
	$node->poll_query_until('postgres',
		"SELECT current_setting('snowid.max_lead') = '$lead' AND current_setting('snowid.max_wait') = '$wait'"
	) or die "reload of snowid.max_lead/max_wait not seen";
	return;
}

# Write a libfaketime offset (seconds relative to the real clock, e.g. "-30"
# or "+0") into the file named by FAKETIME_TIMESTAMP_FILE.  Written aside and
# renamed, so that a backend never reads a half-written file.
sub write_clock_offset
{
	my ($file, $offset) = @_;
	my $tmp = "$file.tmp";
	open my $fh, '>', $tmp or die "could not write $tmp: $!";
	print $fh "$offset\n";
	close $fh or die "could not close $tmp: $!";
	rename $tmp, $file or die "could not rename $tmp: $!";
	return;
}

# The slots of $PGDATA/snowid.highwater: a list of [generation, bound in
# microseconds since 2000-01-01 UTC, slot hash] for each slot that parses
# (the CRC is the server's business), or (undef) if there is no file.  The
# bound of a slot of version 1.2 ("snowid-highwater-3", an ID with its
# layout) is the start of the first tick with no ID below the bound, which
# is what snowid_stats().reserved_until shows; the hash holds its fields
# (bound, node_id, epoch, tick_us, node_bits, sequence_bits,
# timestamp_bits).  A slot of version 1.1 gives [generation, bound, {}], a
# file in the one-line format of the first release one slot of generation 0.
sub highwater_slots
{
	my ($datadir) = @_;
	my $file = "$datadir/snowid.highwater";
	return (undef) unless -e $file;
	open my $fh, '<:raw', $file or die "could not read $file: $!";
	local $/;
	my $data = <$fh>;
	close $fh;
	return ([ 0, $1, {} ]) if $data =~ /^snowid-highwater-1 (-?\d+)\s*$/;
	my @slots;
	for my $i (0, 1)
	{
		my $slot = substr($data, $i * 512, 512);
		next unless defined $slot;
		if ($slot =~ /^snowid-highwater-2 (\d+) (-?\d+) [0-9a-f]{8}\n/)
		{
			push @slots, [ $1, $2, {} ];
		}
		elsif ($slot =~
			/^snowid-highwater-3 (\d+) (\d+) (-?\d+) (-?\d+) (\d+) (\d+) (\d+) (\d+) [0-9a-f]{8}\n/)
		{
			my %f;
			@f{qw(bound node_id epoch tick_us node_bits sequence_bits timestamp_bits)} =
			  ($2, $3, $4, $5, $6, $7, $8);
			my $tick = $f{bound} >> ($f{node_bits} + $f{sequence_bits});
			my $seq = $f{bound} & ((1 << $f{sequence_bits}) - 1);
			$tick++ if $seq > 0;
			push @slots, [ $1, $f{epoch} + $tick * $f{tick_us}, \%f ];
		}
	}
	return @slots;
}

# The fields of the newest slot (see highwater_slots), or undef.
sub highwater_fields
{
	my ($datadir) = @_;
	my ($newest) = sort { $b->[0] <=> $a->[0] } grep { defined } highwater_slots($datadir);
	return defined $newest ? $newest->[2] : undef;
}

# The bound of the newest slot, or undef if there is no file.
sub highwater_file
{
	my ($datadir) = @_;
	my ($newest) = sort { $b->[0] <=> $a->[0] } grep { defined } highwater_slots($datadir);
	return defined $newest ? $newest->[1] : undef;
}

# snowid_stats().reserved_until of a node, in the file's unit.
sub reserved_until_us
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		q{SELECT ((extract(epoch FROM reserved_until) - 946684800) * 1000000)::bigint FROM snowid_stats()});
}

# SQL that creates, in a database with snowid, the table ids, the table
# errs and take(n): n IDs into ids, or the error into errs (a pgbench
# transaction that records why it failed instead of aborting the run).
sub take_setup_sql
{
	return q{
CREATE TABLE ids(seq bigserial, id bigint NOT NULL);
CREATE TABLE errs(sqlstate text, message text);
CREATE FUNCTION take(n integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO ids(id) SELECT snowid_next() FROM generate_series(1, n);
EXCEPTION WHEN OTHERS THEN
	INSERT INTO errs VALUES (SQLSTATE, SQLERRM);
END
$$;
};
}

# Wait (up to the TAP timeout) until snowid_registry_status() on $node
# (in database $db, postgres if not given) says $state; true if it did.
sub wait_registry_state
{
	my ($node, $state, $db) = @_;
	return $node->poll_query_until($db // 'postgres',
		"SELECT state = '$state' FROM snowid_registry_status()");
}

# pgbench against $node in the background: $clients clients for $secs
# seconds, running the script $sql (written to a file named after $tag).
# Returns a hash: handle (IPC::Run), out, err.
my $pgbench_dir;

sub start_pgbench
{
	my ($node, $tag, $clients, $secs, $sql) = @_;
	$pgbench_dir //= PostgreSQL::Test::Utils::tempdir;
	my $file = "$pgbench_dir/$tag.sql";
	open my $fh, '>', $file or die "could not write $file: $!";
	print $fh "$sql\n";
	close $fh;
	my %run = (out => '', err => '');
	$run{handle} = IPC::Run::start(
		[
			'pgbench', '-n', '-c', $clients, '-j', $clients, '-T', $secs,
			'-f', $file, '-h', $node->host, '-p', $node->port, 'postgres'
		],
		'>', \$run{out}, '2>', \$run{err},
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	return \%run;
}

# The transactions a finished pgbench run reports, or undef.
sub pgbench_processed
{
	my ($run) = @_;
	return $run->{out} =~ /number of transactions actually processed: (\d+)/
	  ? $1
	  : undef;
}

# This machine's PostgreSQL 15.20 stamps every column with an attribute
# option pg_attver=<n> (its "attribute versions"), which its own pg_dump
# leaves out but the pg_dump of the 17.11 and 18.6 builds here copies into
# "ALTER TABLE ... ALTER COLUMN ... SET (pg_attver=...)", refused by the new
# server: pg_upgrade then fails at "Restoring database schemas" for any
# database with a table, snowid or not.  ALTER TABLE ... RESET cannot remove
# it (the server stamps it again), so where the old server $node has it,
# take it out of the catalog of the user's objects in the databases named
# (default: postgres and template1) before its shutdown.  Nothing of snowid
# is involved.
sub drop_attver_options
{
	my ($node, @dbs) = @_;
	@dbs = ('postgres', 'template1') unless @dbs;
	my $attver = q{FROM pg_catalog.pg_attribute
 WHERE attrelid >= 16384 AND attoptions::text[] && ARRAY(
   SELECT o FROM pg_catalog.unnest(attoptions) o WHERE o LIKE 'pg\_attver=%')};
	for my $db (@dbs)
	{
		my $stamped = $node->safe_psql($db, "SELECT count(*) $attver");
		next if $stamped == 0;
		Test::More::note(
			"removing the attribute option pg_attver of $stamped columns in database $db (old server's attribute versions, unknown to the new major)"
		);
		$node->safe_psql($db, qq{
UPDATE pg_catalog.pg_attribute SET attoptions = NULLIF(ARRAY(
   SELECT o FROM pg_catalog.unnest(attoptions) o WHERE o NOT LIKE 'pg\_attver=%'), '{}')
 WHERE (attrelid, attnum) IN (SELECT attrelid, attnum $attver)});
	}
	return;
}

# pg_upgrade of the stopped old node $old (binaries in $old_bindir) into
# the new, never started node $new (binaries in $new_bindir), as one
# subtest named $name.  pg_upgrade writes its sockets and reports into the
# current directory: tmp_check.
sub run_pg_upgrade
{
	my ($old, $new, $old_bindir, $new_bindir, $name) = @_;
	chdir $PostgreSQL::Test::Utils::tmp_check or die "could not chdir: $!";
	$new->command_ok(
		[
			"$new_bindir/pg_upgrade", '--no-sync',
			'--old-datadir', $old->data_dir,
			'--new-datadir', $new->data_dir,
			'--old-bindir', $old_bindir,
			'--new-bindir', $new_bindir,
			'--socketdir', $PostgreSQL::Test::Utils::tmp_check,
			'--old-port', $old->port,
			'--new-port', $new->port,
		],
		$name);
	return;
}

1;
