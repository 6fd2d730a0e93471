
# Copyright (c) snowid contributors
#
# snowid installed into a directory of its own, as a Kubernetes image
# volume mounts it (CloudNativePG's extensions on PostgreSQL 18): the
# control and script files under <dir>/share/extension, the library under
# <dir>/lib, found through extension_control_path (18) and
# dynamic_library_path, preloaded from there (issue 40).
#
# The volume is a copy of what `make install` put into this PostgreSQL.
# extension_control_path names the volume alone (not $system), so that
# CREATE EXTENSION can only find snowid there; dynamic_library_path names
# the volume first, then $libdir (PostgreSQL's own modules, plpgsql among
# them, live there), and the test reads from /proc which snowid.so the
# postmaster and a backend mapped: the volume's.  A database created this
# way names the library '$libdir/snowid' (the control file's
# module_pathname), which PostgreSQL 18 also looks for along
# dynamic_library_path.

use strict;
use warnings;

use File::Copy qw(copy);
use File::Path qw(make_path);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

my $pg_config = $ENV{PG_CONFIG} // 'pg_config';
my ($major) = `"$pg_config" --version` =~ /^PostgreSQL (\d+)/;
plan skip_all =>
  "extension_control_path is new in PostgreSQL 18 (this is $major): snowid installs into PostgreSQL's own directories there"
  unless defined $major && $major >= 18;

my $sharedir = `"$pg_config" --sharedir`;
my $pkglibdir = `"$pg_config" --pkglibdir`;
chomp($sharedir, $pkglibdir);

# the volume: what make install put here, in a directory of its own
my $vol = PostgreSQL::Test::Utils::tempdir() . '/snowid-volume';
make_path("$vol/share/extension", "$vol/lib");
my @files = glob("$sharedir/extension/snowid.control $sharedir/extension/snowid--*.sql");
cmp_ok(scalar(@files), '>=', 2, 'snowid is installed in this PostgreSQL (' . scalar(@files) . ' files)');
for my $f (@files)
{
	copy($f, "$vol/share/extension/") or die "could not copy $f: $!";
}
copy("$pkglibdir/snowid.so", "$vol/lib/") or die "could not copy snowid.so: $!";

my $node = snowid_node('volume', 3,
	"extension_control_path = '$vol/share'\n"
	  . "dynamic_library_path = '$vol/lib:\$libdir'\n");
$node->start;

sub mapped
{
	my ($pid) = @_;
	open my $fh, '<', "/proc/$pid/maps" or return undef;
	my %seen = map { (split ' ', $_)[5] => 1 } grep { m{/snowid\.so$} } <$fh>;
	close $fh;
	return join(' ', sort keys %seen);
}

SKIP:
{
	skip 'no /proc here to read which library a process mapped', 1 unless -r '/proc/self/maps';
	my ($pmpid) = split /\n/, slurp_file($node->data_dir . '/postmaster.pid');
	is(mapped($pmpid), "$vol/lib/snowid.so", 'the postmaster preloaded the volume\'s snowid.so');
}

is($node->safe_psql('postgres',
	q{SELECT count(*) FROM pg_available_extensions WHERE name = 'snowid'}),
	'1', 'pg_available_extensions lists snowid from the volume');
$node->safe_psql('postgres', 'CREATE EXTENSION snowid');
is($node->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'snowid'}),
	$node->safe_psql('postgres', q{SELECT default_version FROM pg_available_extensions WHERE name = 'snowid'}),
	'CREATE EXTENSION snowid installs the volume\'s default version');
is($node->safe_psql('postgres', 'SELECT snowid_node(snowid_next())'), '3',
	'snowid_next() issues under node 3');

SKIP:
{
	skip 'no /proc here to read which library a process mapped', 1 unless -r '/proc/self/maps';
	# a backend that called snowid_next(), still connected
	my $bg = $node->background_psql('postgres');
	my $pid = $bg->query_safe('SELECT pg_backend_pid() FROM (SELECT snowid_next()) s');
	chomp $pid;
	is(mapped($pid), "$vol/lib/snowid.so", 'a backend calling snowid_next() maps the volume\'s snowid.so alone');
	$bg->quit;
}

# a restart (a pod rescheduled with the same volume) goes on above
my $before = $node->safe_psql('postgres', 'SELECT snowid_next()');
$node->restart;
cmp_ok($node->safe_psql('postgres', 'SELECT snowid_next()'), '>', $before,
	'after a restart snowid goes on above its last ID');

$node->stop;
done_testing();
