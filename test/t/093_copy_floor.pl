
# Copyright (c) snowid contributors
#
# A copy that takes over its original's lease goes on above what the
# original issued while the registry was away (issue 29, finding 3).
#
# A member holding node 1 is stopped during a registry outage and copied
# with cp -a.  The original starts again in place, issues IDs that run
# ahead of the clock (a layout of 40 IDs a second, snowid.max_lead of a
# minute), and stops before the registry returns: the registry never
# hears of those IDs.  The copy, started then, cannot prove it is the
# server in place; once the registry answers, it takes over the lease of
# the start it was copied from.  What that start reported lies below the
# original's outage IDs, so the copy must go on above the answer's time
# plus max_lead (every ID the original may have issued): all its IDs lie
# above the original's.  (Before the fix: the copy went on from its own
# high-water mark and the clock, below the IDs the original had issued
# ahead of the clock.)

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

my ($reg, $conninfo) = registry();

my $m = member('original', 1,
	registry => $conninfo,
	cluster_name => 1,
	extra => "snowid.tick = 100\nsnowid.sequence_bits = 2\n"
	  . "snowid.max_lead = '60s'\nsnowid.max_wait = '5s'\nsnowid.lease = '5min'\n",
	wait => 'the member holds node 1');
$m->safe_psql('postgres', 'SELECT snowid_next() FROM generate_series(1, 10)');

# Registry away; the member stops and is copied.
$reg->stop;
ok(wait_registry_state($m, 'unreachable'), 'registry stopped: unreachable');
$m->stop;
my $copy = PostgreSQL::Test::Cluster->new('copy', port => $m->port, own_host => 1);
mkdir $copy->basedir;
system('cp', '-a', $m->data_dir, $copy->data_dir) == 0
  or die "cp -a failed: $?";
$copy->append_conf('postgresql.conf',
	"unix_socket_directories = '" . $copy->host . "'\ncluster_name = 'copy'\n");

# The original resumes in place and issues 1,200 IDs, 30 s ahead of the
# clock, then stops while the registry is still away.
$m->start;
my @late = split /\n/, $m->safe_psql('postgres',
	'SELECT snowid_next() FROM generate_series(1, 1200)');
is(scalar(@late), 1200, 'the original issued 1,200 IDs during the outage');
my $lead = $m->safe_psql('postgres',
	"SELECT extract(epoch FROM snowid_timestamp($late[-1]) - clock_timestamp()) > 20");
is($lead, 't', 'its last ID leads the clock by more than 20 s');
$m->stop;

# The copy starts, the registry returns: the copy takes the lease over.
$copy->start;
$reg->start;
ok(wait_registry_state($copy, 'ok'), 'the copy takes over node 1 from the registry');
my @copy_ids = split /\n/, $copy->safe_psql('postgres',
	'SELECT snowid_next() FROM generate_series(1, 20)');
my $max_late = max_of(@late);
is(scalar(grep { $_ <= $max_late } @copy_ids), 0,
	'every ID of the copy lies above every ID the original issued in the outage')
  or diag "copy's first $copy_ids[0], original's last $max_late";

$copy->stop;
$reg->stop;
done_testing();
