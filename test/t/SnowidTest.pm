# Small helpers shared by snowid's TAP tests (test/t/*.pl).
package SnowidTest;

use strict;
use warnings;
use Exporter 'import';
use Cwd ();
use File::Basename ();
use File::Spec;
use File::Path ();
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More ();
use Time::HiRes ();

our @EXPORT = qw(snowid_node take_setup_sql max_of min_of strictly_increasing set_policy
  write_clock_offset fake_clock_env with_fake_clock highwater_slots highwater_file highwater_fields reserved_until_us
  forget_boot_record boot_record_dirs save_copy restore_in_place dups
  wait_registry_state start_pgbench pgbench_processed drop_attver_options
  run_pg_upgrade registry registry_conninfo registry_signature member wait_state
  status_of ids_of next_error try_next runbook_blocks run_runbook_sh
  skip_without_released);

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

# Write a fake clock offset (seconds relative to the real clock, e.g. "-30",
# "+0" or "-0.5") into the file that a server started by with_fake_clock
# reads on every clock read (test/clockshim.c).  Written aside and renamed,
# so that a backend never reads a half-written file.
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

# The fake clock: test/clockshim.c, built with gcc once per test script into
# a directory of its tmp_check (the runner, who runs the servers, owns it)
# and preloaded into a server and its pg_ctl.  It moves CLOCK_REALTIME,
# CLOCK_REALTIME_COARSE, gettimeofday and time by the offset in a file read
# on every clock read (so that running backends see a step at once), leaves
# CLOCK_MONOTONIC and every other clock alone, and does only
# async-signal-safe work, as PostgreSQL reads the clock in its SIGALRM
# handler.  A missing or unparsable file is an offset of 0.
my $clock_shim;

sub clock_shim
{
	return $clock_shim if defined $clock_shim;
	my $src = File::Spec->rel2abs(
		File::Spec->catfile(File::Basename::dirname(__FILE__), '..', 'clockshim.c'));
	die "the fake clock's source $src is missing" unless -f $src;
	my $so = PostgreSQL::Test::Utils::tempdir('clockshim') . '/clockshim.so';
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'gcc', '-shared', '-fPIC', '-O2', '-Wall', '-o', $so, $src, '-ldl' ],
		'>', \$out, '2>', \$err)
	  or die "could not build the fake clock ($src): $out$err";
	$clock_shim = $so;
	return $clock_shim;
}

# The environment, as pairs, that puts a server started with it (and its
# pg_ctl) on a fake clock whose offset is in $clock_file (write it with
# write_clock_offset; a file that does not exist yet is an offset of 0).
sub fake_clock_env
{
	my ($clock_file) = @_;
	return (LD_PRELOAD => clock_shim(), SNOWID_FAKE_CLOCK_FILE => $clock_file);
}

# Call $node->$method ('start', 'restart', ...) with the server and its
# pg_ctl on the fake clock of $clock_file; psql and the test script keep the
# real clock.
sub with_fake_clock
{
	my ($node, $clock_file, $method, @args) = @_;
	my %env = fake_clock_env($clock_file);
	local @ENV{ keys %env } = values %env;
	return $node->$method(@args);
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

# Remove the boot record of $node's data directory (src/boot_record.c:
# /dev/shm/snowid.<system identifier>.<the directory's path, every character
# but letters, digits, '.' and '-' as '_'>), as a reboot of the host would;
# returns how many were removed.
sub forget_boot_record
{
	my ($node) = @_;
	my @dirs = boot_record_dirs($node);
	File::Path::rmtree($_) for @dirs;
	return scalar @dirs;
}

# The boot record directories of $node's data directory (one while it
# runs; more only if its cluster was made anew at the same path).
sub boot_record_dirs
{
	my ($node) = @_;
	(my $tail = Cwd::abs_path($node->data_dir)) =~ s/[^A-Za-z0-9.-]/_/g;
	return grep { substr($_, -length($tail)) eq $tail } glob('/dev/shm/snowid.*');
}

# Copy the stopped server's data directory aside.
sub save_copy
{
	my ($node, $to) = @_;
	File::Path::rmtree($to);
	system('cp', '-a', $node->data_dir, $to) == 0 or die "cp -a failed: $?";
	return;
}

# Restore the copy into the server's own data directory, as rm -rf
# $PGDATA/* && cp -a copy/. $PGDATA/ does: same directory, same inode; or,
# with $anew, as a copy made beside it and moved into its place does: a
# new directory (another inode) at the same path.
sub restore_in_place
{
	my ($node, $from, $anew) = @_;
	my $dir = $node->data_dir;
	my @ino = (stat $dir)[ 0, 1 ];
	if ($anew)
	{
		# copied beside it first, so that the inode cannot be reused
		system('cp', '-a', $from, "$dir.new") == 0 or die "cp -a failed: $?";
		File::Path::rmtree($dir);
		rename("$dir.new", $dir) or die "could not rename $dir.new: $!";
		my @after = (stat $dir)[ 0, 1 ];
		die "the data directory kept its inode" if "@ino" eq "@after";
		return;
	}
	opendir my $dh, $dir or die "could not read $dir: $!";
	File::Path::rmtree("$dir/$_") for grep { $_ ne '.' && $_ ne '..' } readdir $dh;
	closedir $dh;
	system('cp', '-a', "$from/.", "$dir/") == 0 or die "cp -a failed: $?";
	my @after = (stat $dir)[ 0, 1 ];
	die "the data directory moved" unless "@ino" eq "@after";
	return;
}

# How many values of the list stand in it more than once (each repeat
# counted).
sub dups
{
	my %seen;
	return scalar grep { $seen{$_}++ } @_;
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

# ---- registries and their members (tests 05x, 06x, 09x) ----

# Dies if %$opts has a key not in @known (a misspelt option).
sub check_options
{
	my ($what, $opts, @known) = @_;
	my %known = map { $_ => 1 } @known;
	my @bad = grep { !$known{$_} } sort keys %$opts;
	die "$what: unknown option(s) @bad" if @bad;
	return;
}

# The signatures of the registry's functions a member calls (and of
# snowid_registry_reassert, which registry() grants none), by short name.
my %registry_signature = (
	claim => 'snowid_registry_claim(integer, boolean, integer, text, text, text, integer, '
	  . 'numeric, text, text, text, boolean, bigint, bigint, bigint, bigint)',
	reassert => 'snowid_registry_reassert(integer, boolean, integer, text, text, text, integer, '
	  . 'numeric, text, text, text, boolean, bigint, bigint, bigint, bigint, timestamptz)',
	release => 'snowid_registry_release(integer, text, text, bigint)',
	pool_grant =>
	  'snowid_pool_grant(text, integer, numeric, text, text, text, bigint, bigint[], bigint[])',
	pool_report => 'snowid_pool_report(integer, numeric, text, text, text[], bigint[], bigint[])',
	pool_return => 'snowid_pool_return(text, integer, numeric, text, text, bigint, bigint)',);

# registry_signature('claim'): 'snowid_registry_claim(integer, ...)', the
# function with its argument types (claim, reassert, release, pool_grant,
# pool_report, pool_return).
sub registry_signature
{
	my ($name) = @_;
	return $registry_signature{$name} // die "no registry function '$name'";
}

# The connection string of database $dbname (default postgres) on $node,
# as a member's snowid.registry names it: 'host=... port=... dbname=...'.
sub registry_conninfo
{
	my ($node, $dbname) = @_;
	return 'host=' . $node->host . ' port=' . $node->port . ' dbname=' . ($dbname // 'postgres');
}

# A registry: a server, initialised and started, with snowid created in its
# registry database.  In list context (node, the connection string of the
# registry database, see registry_conninfo), else the node.  Options:
#   name => 'registry'   the node's name
#   node_id => N         preload snowid with snowid.node_id N (see
#                        snowid_node): a registry on a server that issues
#                        IDs itself.  Left out: no preload.
#   conf => '...'        postgresql.conf lines, before the start
#   hba => '...'         pg_hba.conf lines put before the others, before
#                        the start
#   dbname => 'postgres' the registry database; another name is created
#   owner => ROLE        a login role created to own that database
#   group => ROLE        a role without login created to hold the grants,
#                        with every login role in it
#   logins => [ROLE...]  login roles created (in the group, if any)
#   password => {ROLE => 'pw'}  a password for some of the login roles
#   monitor => [ROLE...] login roles also put in pg_monitor
#   grant => [NAME...]   EXECUTE on these registry functions (names as in
#                        registry_signature) to the group, or else to each
#                        login role; 'all': on all functions in schema
#                        public.  Default, where there is a group or a login
#                        role: claim, release, pool_grant, pool_report and
#                        pool_return.
#   sql => '...'         SQL run in the registry database in the call that
#                        creates snowid, after it and the grants (pools,
#                        settings, other roles and databases)
#   version => '2.0'     snowid created at that version (from the update
#                        chain): a registry not yet updated
# The roles and the database are created in database postgres first.
sub registry
{
	my (%o) = @_;
	check_options('registry', \%o,
		qw(name node_id conf hba dbname owner group logins password monitor grant sql version));
	my $name = $o{name} // 'registry';
	my $db = $o{dbname} // 'postgres';
	my $node;
	if (exists $o{node_id})
	{
		$node = snowid_node($name, $o{node_id}, $o{conf});
	}
	else
	{
		# a registry issues nothing, but from 2.0 its server preloads
		# snowid: its background worker applies the members' calls
		$node = snowid_node($name, undef, $o{conf});
	}
	if (defined $o{hba})
	{
		my $hba = $node->data_dir . '/pg_hba.conf';
		my $rest = slurp_file($hba);
		open my $fh, '>', $hba or die "could not write $hba: $!";
		print $fh $o{hba} . $rest;
		close $fh or die "could not close $hba: $!";
	}
	$node->start;

	my @logins = @{ $o{logins} // [] };
	my %monitor = map { $_ => 1 } @{ $o{monitor} // [] };
	my $roles = '';
	$roles .= "CREATE ROLE $o{owner} LOGIN;\n" if defined $o{owner};
	$roles .= "CREATE DATABASE $db"
	  . (defined $o{owner} ? " OWNER $o{owner}" : '') . ";\n"
	  if $db ne 'postgres';
	$roles .= "CREATE ROLE $o{group};\n" if defined $o{group};
	for my $role (@logins)
	{
		my @in = ((defined $o{group} ? $o{group} : ()), ($monitor{$role} ? 'pg_monitor' : ()));
		$roles .= "CREATE ROLE $role LOGIN"
		  . (defined $o{password}{$role} ? " PASSWORD '$o{password}{$role}'" : '')
		  . (@in ? ' IN ROLE ' . join(', ', @in) : '') . ";\n";
	}
	$node->safe_psql('postgres', $roles) if $roles ne '';

	my $sql = 'CREATE EXTENSION snowid'
	  . (defined $o{version} ? " VERSION '$o{version}'" : '') . ";\n";
	my @grantees = defined $o{group} ? ($o{group}) : @logins;
	my $grant = $o{grant} // [qw(claim release pool_grant pool_report pool_return)];
	if (@grantees)
	{
		my $on =
		  !ref $grant && $grant eq 'all'
		  ? 'ALL FUNCTIONS IN SCHEMA public'
		  : 'FUNCTION ' . join(",\n\t", map { registry_signature($_) } @$grant);
		$sql .= "GRANT EXECUTE ON $on\n\tTO " . join(', ', @grantees) . ";\n";
	}
	$sql .= $o{sql} if defined $o{sql};
	$node->safe_psql($db, $sql);
	return wantarray ? ($node, registry_conninfo($node, $db)) : $node;
}

# member($name, $node_id, %opts): a member of a registry, a node (see
# snowid_node) preloading snowid with snowid.node_id $node_id (undef: none,
# the registry assigns one), started, with snowid created in database
# postgres.  Options:
#   registry => CONNINFO  snowid.registry (quoted for postgresql.conf);
#                         left out: none (a server given one later)
#   user => ROLE          ' user=ROLE' added to the connection string
#   application_name => 1 ' application_name=<name>' added after it
#   cluster_name => 1     cluster_name = '<name>'
#   lease => '60s'        snowid.lease
#   extra => '...'        more postgresql.conf lines (after those above)
#   init => {...}         options for init (allows_streaming => 1, say)
#   start => 0            leave it initialised, not started (no extension)
#   sql => '...'          SQL run after CREATE EXTENSION snowid, in the
#                         same call (tables, tickets, roles)
#   wait => 'test name'   then a test that it holds its node: state 'ok'
#                         (wait_registry_state), named so
sub member
{
	my ($name, $node_id, %o) = @_;
	check_options('member', \%o,
		qw(registry user application_name cluster_name lease extra init start sql wait));
	my $conf = '';
	$conf .= "cluster_name = '$name'\n" if $o{cluster_name};
	if (defined $o{registry})
	{
		my $conninfo = $o{registry}
		  . (defined $o{user} ? " user=$o{user}" : '')
		  . ($o{application_name} ? " application_name=$name" : '');
		$conninfo =~ s/'/''/g;
		$conf .= "snowid.registry = '$conninfo'\n";
	}
	$conf .= "snowid.lease = '$o{lease}'\n" if defined $o{lease};
	$conf .= $o{extra} if defined $o{extra};
	my $node = snowid_node($name, $node_id, $conf, %{ $o{init} // {} });
	return $node if defined $o{start} && !$o{start};
	$node->start;
	$node->safe_psql('postgres',
		'CREATE EXTENSION snowid;' . (defined $o{sql} ? "\n$o{sql}" : ''));
	if (defined $o{wait})
	{
		local $Test::Builder::Level = $Test::Builder::Level + 1;
		Test::More::ok(wait_registry_state($node, 'ok'), $o{wait});
	}
	return $node;
}

# wait_state($node, $state [, $what] [, die => 1]): wait (up to the TAP
# timeout) until snowid_registry_status() on $node says $state; returns the
# seconds that took, or undef if it never came.  With $what, that is a
# test, "$what: state '$state'" (the status shown if it fails); with
# die => 1, never coming dies, naming the state it is in.
sub wait_state
{
	my ($node, $state, @rest) = @_;
	my $what = @rest % 2 ? shift @rest : undef;
	my %o = @rest;
	check_options('wait_state', \%o, qw(die));
	my $t0 = Time::HiRes::time();
	my $ok = wait_registry_state($node, $state);
	my $took = Time::HiRes::time() - $t0;
	if (defined $what)
	{
		local $Test::Builder::Level = $Test::Builder::Level + 1;
		Test::More::ok($ok, "$what: state '$state'")
		  or Test::More::diag('status: '
			  . $node->safe_psql('postgres', 'SELECT * FROM snowid_registry_status()'));
	}
	die $node->name . " never reached registry state '$state' (it is '"
	  . status_of($node, 'state') . "')"
	  if !$ok && $o{die};
	return $ok ? $took : undef;
}

# status_of($node, $columns, %opts): $columns of snowid_registry_status()
# on $node, as psql prints them ('state', 'node_id, detail', '*').
# Options: null => '<null>': $columns is one column, shown as text, and a
# NULL as that text; user => ROLE: asked as that role.
sub status_of
{
	my ($node, $columns, %o) = @_;
	check_options('status_of', \%o, qw(null user));
	my $what = defined $o{null}
	  ? "coalesce(${columns}::text, '$o{null}')"
	  : $columns;
	return $node->safe_psql('postgres', "SELECT $what FROM snowid_registry_status()",
		defined $o{user} ? (extra_params => [ '-U', $o{user} ]) : ());
}

# ids_of($node [, $where] [, order => 'id']): the IDs in the table ids of
# $node (column id), those of $where if given, in the order of column seq
# (issue order), or of the column named by order.
sub ids_of
{
	my ($node, $where, %o) = @_;
	check_options('ids_of', \%o, qw(order));
	return split /\n/,
	  $node->safe_psql('postgres',
		'SELECT id FROM ids'
		  . ($where ? " WHERE $where" : '')
		  . ' ORDER BY ' . ($o{order} // 'seq'));
}

# try_next($node [, user => ROLE]): one snowid_next() on $node (as ROLE),
# errors verbose (the SQLSTATE shows): (exit code, ID, stderr).
sub try_next
{
	my ($node, %o) = @_;
	check_options('try_next', \%o, qw(user));
	my ($ret, $out, $err) =
	  $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT snowid_next()",
		defined $o{user} ? (extra_params => [ '-U', $o{user} ]) : ());
	return ($ret, $out, $err);
}

# The error text of one snowid_next() call on $node, with its SQLSTATE
# ("(no error: <ID>)" if it succeeded).
sub next_error
{
	my ($node) = @_;
	my ($ret, $out, $err) = try_next($node);
	return $ret == 0 ? "(no error: $out)" : $err;
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

# skip_without_released($version): skips the whole test (call it before
# any test) where the installation cannot create snowid at the released
# version $version: the update scripts of released versions come from git
# history (sql/updates/released.txt), which a shallow clone lacks, and the
# build then warns and leaves them out.
sub skip_without_released
{
	my ($version) = @_;
	my $share = `pg_config --sharedir`;
	chomp $share;
	Test::More::plan(skip_all => "snowid $version cannot be installed here: "
		  . "the released update scripts are missing (a tree without git history; see the build's warning)")
	  unless -e "$share/extension/snowid--1.0.sql";
	return;
}

# ---- the runbooks of test/runbooks/README.md (tests 033-035) ----

# runbook_blocks($tag): the fenced blocks of test/runbooks/README.md whose
# opening fence follows the line '<!-- runbook: $tag -->', in order, as
# written.  Dies if there is none (a renamed marker must fail the test).
sub runbook_blocks
{
	my ($tag) = @_;
	my $file = File::Spec->rel2abs(
		File::Spec->catfile(File::Basename::dirname(__FILE__), '..', 'runbooks', 'README.md'));
	my $text = PostgreSQL::Test::Utils::slurp_file($file);
	my @blocks = $text =~ /^<!-- runbook: \Q$tag\E -->\n```\w*\n(.*?)^```$/msg;
	die "no block marked 'runbook: $tag' in $file" unless @blocks;
	return @blocks;
}

# run_runbook_sh($node, $script, %env): run the shell text $script as
# bash -eu with PGDATA, PGHOST, PGPORT and PGDATABASE (postgres) of $node
# and the pairs of %env in its environment (fake_clock_env(...), say);
# returns (exit code, stdout, stderr).  Its output goes through files, not
# pipes, as a server it starts would hold a pipe open.  Afterwards the node
# knows whether its postmaster runs, so that stop and the end of the test
# find it.
my $runbook_dir;

sub run_runbook_sh
{
	my ($node, $script, %env) = @_;
	$runbook_dir //= PostgreSQL::Test::Utils::tempdir('runbook');
	local %ENV = (%ENV,
		PGDATA => $node->data_dir,
		PGHOST => $node->host,
		PGPORT => $node->port,
		PGDATABASE => 'postgres',
		%env);
	delete $ENV{PGSERVICE};
	IPC::Run::run([ 'bash', '-eu', '-c', $script ],
		'<', \'', '>', "$runbook_dir/out", '2>', "$runbook_dir/err",
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	my $rc = $? >> 8;
	$node->_update_pid(-1);
	return ($rc, PostgreSQL::Test::Utils::slurp_file("$runbook_dir/out"),
		PostgreSQL::Test::Utils::slurp_file("$runbook_dir/err"));
}

1;
