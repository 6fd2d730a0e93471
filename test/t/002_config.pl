
# Copyright (c) snowid contributors
#
# Configuration: layouts and values the server must refuse at start, the
# warning for a layout that ends soon, parameters no session can change on
# a running server, and what works when snowid is not preloaded.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

# ---------------------------------------------------------------------------
# Refusals at start.  One node preloads snowid and includes a file that each
# case rewrites.
# ---------------------------------------------------------------------------
my $bad = PostgreSQL::Test::Cluster->new('bad_config');
$bad->init;
$bad->append_conf(
	'postgresql.conf', qq{
shared_preload_libraries = 'snowid'
timezone = 'UTC'
include_if_exists = 'snowid_case.conf'
});

sub write_case
{
	my ($node, $lines) = @_;
	my $file = $node->data_dir . '/snowid_case.conf';
	unlink $file;
	append_to_file($file, $lines);
	return;
}

# Start $node with the case's settings; it must not come up, and the log
# written by the attempt must match every pattern.
sub refuses_to_start
{
	my ($node, $name, $lines, @patterns) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;

	write_case($node, $lines);
	my $offset = -s $node->logfile // 0;
	my $started = $node->start(fail_ok => 1);
	ok(!$started, "$name: server does not start");
	# Should it have started anyway, do not leave it running.
	$node->stop if $started;
	my $log = slurp_file($node->logfile, $offset);
	like($log, $_, "$name: log matches $_") foreach @patterns;
	return;
}

refuses_to_start(
	$bad,
	'node_bits 30 + sequence_bits 30',
	"snowid.node_bits = 30\nsnowid.sequence_bits = 30\n",
	qr/FATAL:\s+snowid layout leaves too few timestamp bits/,
	qr/snowid\.node_bits = 30 and snowid\.sequence_bits = 30, 3 bits remain/);

# A layout that ended in the past: 39 timestamp bits of 1 ms from 2000 end
# at 2000-01-01 + 2^39 ms = 2017-06-02 21:56:53.888+00.  The log must say
# when, not repeat the epoch.
refuses_to_start(
	$bad,
	'layout ended in 2017',
	"snowid.epoch = '2000-01-01 00:00:00+00'\nsnowid.node_bits = 12\nsnowid.sequence_bits = 12\n",
	qr/FATAL:\s+snowid layout leaves too few timestamp bits/,
	qr/2017-06-02 21:56:53\.888\+00/);

refuses_to_start(
	$bad,
	'node_id 1024 with 10 node bits',
	"snowid.node_id = 1024\n",
	qr/FATAL:\s+1024 is outside the valid range for parameter "snowid\.node_id" \(0 \.\. 1023\)/
);

refuses_to_start(
	$bad,
	'node_id 256 with 8 node bits',
	"snowid.node_bits = 8\nsnowid.node_id = 256\n",
	qr/outside the valid range for parameter "snowid\.node_id" \(0 \.\. 255\)/);

refuses_to_start(
	$bad,
	'epoch in the future',
	"snowid.epoch = '2999-01-01'\n",
	qr/snowid\.epoch/,
	qr/must not be in the future/);

refuses_to_start(
	$bad,
	'node_id not an integer',
	"snowid.node_id = 'abc'\n",
	qr/invalid value for parameter "snowid\.node_id"/);

refuses_to_start(
	$bad,
	'node_bits 40',
	"snowid.node_bits = 40\n",
	qr/40 is outside the valid range for parameter "snowid\.node_bits"/);

# snowid.id_bits: 32 .. 63, and the timestamp gets what node and sequence
# bits leave of it.
refuses_to_start(
	$bad,
	'id_bits 31',
	"snowid.id_bits = 31\n",
	qr/FATAL:\s+31 is outside the valid range for parameter "snowid\.id_bits" \(32 \.\. 63\)/
);

refuses_to_start(
	$bad,
	'id_bits 64',
	"snowid.id_bits = 64\n",
	qr/FATAL:\s+64 is outside the valid range for parameter "snowid\.id_bits" \(32 \.\. 63\)/
);

refuses_to_start(
	$bad,
	'id_bits not an integer',
	"snowid.id_bits = 'js'\n",
	qr/FATAL:\s+invalid value for parameter "snowid\.id_bits": "js"/);

refuses_to_start(
	$bad,
	'id_bits 40 with node_bits 20 + sequence_bits 20',
	"snowid.id_bits = 40\nsnowid.node_bits = 20\nsnowid.sequence_bits = 20\n",
	qr/FATAL:\s+snowid\.node_bits and snowid\.sequence_bits together must be less than snowid\.id_bits/,
	qr/snowid\.id_bits is 40, snowid\.node_bits is 20 and snowid\.sequence_bits is 20, which leaves no bit for the timestamp/
);

# 53 - 10 - 12 = 31 bits of 1 ms ticks last 2^31 ms (24.9 days) from 2025.
refuses_to_start(
	$bad,
	'id_bits 53 with the default widths',
	"snowid.id_bits = 53\n",
	qr/FATAL:\s+snowid layout leaves too few timestamp bits/,
	qr/With snowid\.id_bits = 53, snowid\.node_bits = 10 and snowid\.sequence_bits = 12, 31 bits remain/,
	qr/2025-01-25 20:31:23\.648\+00/,
	qr/HINT:\s+.*Raising snowid\.id_bits keeps new IDs above those already issued/);

refuses_to_start(
	$bad,
	'tick 0',
	"snowid.tick = 0\n",
	qr/outside the valid range for parameter "snowid\.tick"/);

# A layout that ends within 10 years (but more than one year away) starts,
# with a warning.  38 timestamp bits of 1 ms last 2^38 ms (about 8.7 years);
# an epoch one year ago makes that about 7.7 years from now.
my ($sec, $min, $hour, $mday, $mon, $year) = gmtime(time);
my $epoch = sprintf('%04d-%02d-%02d 00:00:00+00', $year + 1900 - 1, $mon + 1,
	$mday == 29 && $mon == 1 ? 28 : $mday);
write_case($bad,
	"snowid.epoch = '$epoch'\nsnowid.node_bits = 13\nsnowid.sequence_bits = 12\nsnowid.node_id = 7\n"
);
my $offset = -s $bad->logfile // 0;
my $started = $bad->start(fail_ok => 1);
ok($started, 'layout ending within 10 years: server starts');
like(
	slurp_file($bad->logfile, $offset),
	qr/WARNING:\s+snowid layout runs out of timestamp bits at \d{4}-/,
	'layout ending within 10 years: warning in the log');
if ($started)
{
	is( $bad->safe_psql(
			'postgres',
			q{CREATE EXTENSION snowid;
			  SELECT timestamp_bits, node_bits, sequence_bits, node_id,
			         last_timestamp > now() + interval '7 years',
			         last_timestamp < now() + interval '9 years',
			         snowid_node(snowid_next())
			  FROM snowid_layout()}),
		'38|13|12|7|t|t|7',
		'layout ending within 10 years: layout in force and IDs issued');
	$bad->stop;
}

# ---------------------------------------------------------------------------
# A running node: nothing a session does changes the node ID.
# ---------------------------------------------------------------------------
my $node = snowid_node('running', 1);
$node->start;
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION snowid;
CREATE ROLE plain LOGIN;
GRANT EXECUTE ON FUNCTION snowid_next() TO plain;
});

unlike(slurp_file($node->logfile), qr/runs out of timestamp bits/,
	'default layout: no end-of-life warning');

is($node->safe_psql('postgres', 'SELECT snowid_node(snowid_next())'),
	'1', 'node 1 issues IDs of node 1');

my %postmaster_values = (
	'snowid.node_id' => '2',
	'snowid.node_bits' => '11',
	'snowid.sequence_bits' => '11',
	'snowid.epoch' => "'2024-01-01 00:00:00+00'",
	'snowid.tick' => "'2ms'",
	'snowid.id_bits' => '53');
foreach my $guc (sort keys %postmaster_values)
{
	my ($ret, $stdout, $stderr) =
	  $node->psql('postgres', "SET $guc = $postmaster_values{$guc}");
	isnt($ret, 0, "superuser SET $guc fails");
	like(
		$stderr,
		qr/parameter "\Q$guc\E" cannot be changed without restarting the server/,
		"superuser SET $guc: error message");
}

{
	my ($ret, $stdout, $stderr) = $node->psql('postgres',
		"SELECT set_config('snowid.node_id', '2', false)");
	isnt($ret, 0, 'set_config(snowid.node_id) fails');
	like(
		$stderr,
		qr/parameter "snowid\.node_id" cannot be changed without restarting the server/,
		'set_config(snowid.node_id): error message');

	($ret, $stdout, $stderr) = $node->psql('postgres',
		'SET snowid.node_id = 2',
		connstr => $node->connstr('postgres') . ' user=plain');
	isnt($ret, 0, 'non-superuser SET snowid.node_id fails');
	like(
		$stderr,
		qr/parameter "snowid\.node_id" cannot be changed without restarting the server/,
		'non-superuser SET snowid.node_id: error message');

	($ret, $stdout, $stderr) =
	  $node->psql('postgres', "SET snowid.max_lead = '5s'");
	isnt($ret, 0, 'SET snowid.max_lead fails in a session');
	like(
		$stderr,
		qr/parameter "snowid\.max_lead" cannot be changed now/,
		'SET snowid.max_lead: error message');

	($ret, $stdout, $stderr) =
	  $node->psql('postgres', 'SET snowid.no_such_setting = 1');
	isnt($ret, 0, 'SET of an unknown snowid.* parameter fails');
	like(
		$stderr,
		qr/invalid configuration parameter name "snowid\.no_such_setting"/,
		'snowid.* prefix is reserved');
}

$node->connect_fails(
	$node->connstr('postgres') . " options='-c snowid.node_id=2'",
	'connection option snowid.node_id=2 is refused',
	expected_stderr =>
	  qr/parameter "snowid\.node_id" cannot be changed without restarting the server/
);

# ALTER SYSTEM and a reload: the server logs that it ignores the new node
# ID, and keeps issuing IDs of node 1.
$offset = -s $node->logfile;
$node->safe_psql('postgres',
	'ALTER SYSTEM SET snowid.node_id = 2; SELECT pg_reload_conf();');
$node->wait_for_log(
	qr/parameter "snowid\.node_id" cannot be changed without restarting the server/,
	$offset);
is( $node->safe_psql(
		'postgres',
		q{SHOW snowid.node_id;
		  SELECT snowid_node(snowid_next());
		  SELECT pending_restart FROM pg_settings WHERE name = 'snowid.node_id'}),
	"1\n1\nt",
	'after ALTER SYSTEM + reload: node_id still 1, IDs of node 1, restart pending'
);
$node->safe_psql('postgres',
	'ALTER SYSTEM RESET snowid.node_id; SELECT pg_reload_conf();');

# max_lead, by contrast, is reloadable.
$node->safe_psql('postgres',
	"ALTER SYSTEM SET snowid.max_lead = '5s'; SELECT pg_reload_conf();");
ok($node->poll_query_until('postgres', 'SHOW snowid.max_lead', '5s'),
	'snowid.max_lead changes on reload');
$node->safe_psql('postgres',
	'ALTER SYSTEM RESET snowid.max_lead; SELECT pg_reload_conf();');
ok($node->poll_query_until('postgres', 'SHOW snowid.max_lead', '1s'),
	'snowid.max_lead back to its default after RESET');
is( $node->safe_psql(
		'postgres',
		q{SHOW snowid.node_id;
		  SELECT pending_restart FROM pg_settings WHERE name = 'snowid.node_id'}),
	"1\nf",
	'after ALTER SYSTEM RESET + reload: node_id 1, no restart pending');

is( $node->safe_psql(
		'postgres',
		q{SELECT string_agg(name || ':' || context || ':' || (coalesce(short_desc, '') <> '')::text, ','
		                    ORDER BY name)
		  FROM pg_settings WHERE name LIKE 'snowid.%'}),
	join(',',
		'snowid.counter_keys:postmaster:true',
		'snowid.epoch:postmaster:true',
		'snowid.id_bits:postmaster:true',
		'snowid.lease:sighup:true',
		'snowid.library_version:internal:true',
		'snowid.max_batch:superuser:true',
		'snowid.max_lead:sighup:true',
		'snowid.max_wait:sighup:true',
		'snowid.node_bits:postmaster:true',
		'snowid.node_id:postmaster:true',
		'snowid.registry:sighup:true',
		'snowid.registry_processes:sighup:true',
		'snowid.sequence_bits:postmaster:true',
		'snowid.tick:postmaster:true',
		'snowid.ticket_prefetch:sighup:true',
		'snowid.ticket_slots:postmaster:true'),
	'pg_settings: sixteen snowid.* parameters, described, with the right context'
);

$node->stop;

# ---------------------------------------------------------------------------
# Not preloaded: generators fail cleanly, decoders use the configured layout.
# ---------------------------------------------------------------------------
my $plain = PostgreSQL::Test::Cluster->new('not_preloaded');
$plain->init;
$plain->append_conf(
	'postgresql.conf', qq{
snowid.node_bits = 8
snowid.sequence_bits = 14
});
$plain->start;

$plain->safe_psql('postgres', 'CREATE EXTENSION snowid');

{
	my ($ret, $stdout, $stderr) = $plain->psql(
		'postgres', q{\set VERBOSITY verbose
SELECT snowid_next();
SELECT 'after next';
SELECT * FROM snowid_stats();
SELECT 'after stats';
SELECT count(*) FROM snowid_next_batch(3);
SELECT 'after batch';
},
		on_error_stop => 0);
	my @errors = ($stderr =~
		  /ERROR:\s+55000: snowid must be loaded via shared_preload_libraries/g
	);
	is(scalar @errors, 3,
		'not preloaded: snowid_next, snowid_stats and snowid_next_batch fail with 55000'
	);
	like(
		$stderr,
		qr/HINT:\s+.*shared_preload_libraries/,
		'not preloaded: the error has a hint');
	is($stdout, "after next\nafter stats\nafter batch",
		'not preloaded: the session survives each error');
}

# A registry's calls need the preload (2.0): its server process applies
# them.
{
	my ($ret, $stdout, $stderr) = $plain->psql(
		'postgres', q{\set VERBOSITY verbose
SELECT * FROM snowid_pool_grant('p', 1, 1, 's', repeat('s', 32), 'r', 0, NULL, NULL);
},
		on_error_stop => 0);
	like(
		$stderr,
		qr/ERROR:\s+55000: snowid must be loaded via shared_preload_libraries\nDETAIL:\s+On a registry's server, snowid's background worker applies the members' calls\./,
		'not preloaded: a registry call fails with 55000, saying why');
	like($stderr, qr/HINT:\s+Add snowid to shared_preload_libraries on the registry's server/,
		'... and what to do');
}

# Tickets: creating and decoding work, taking values needs the preload.
{
	$plain->safe_psql('postgres',
		q{SELECT snowid_ticket_create('plain_t', 1, 2, 10)});
	my ($ret, $stdout, $stderr) = $plain->psql(
		'postgres', q{\set VERBOSITY verbose
SELECT snowid_ticket_next('plain_t');
SELECT snowid_ticket_shard('plain_t', 4), count(*) FROM snowid_tickets;
},
		on_error_stop => 0);
	like(
		$stderr,
		qr/ERROR:\s+55000: snowid must be loaded via shared_preload_libraries/,
		'not preloaded: snowid_ticket_next fails with 55000');
	is($stdout, '1|1',
		'not preloaded: snowid_ticket_shard and snowid_tickets still work');
}

is( $plain->safe_psql(
		'postgres',
		q{SELECT timestamp_bits, node_bits, sequence_bits, node_id IS NULL,
		         ids_per_second
		  FROM snowid_layout()}),
	'41|8|14|t|16384000',
	'not preloaded: snowid_layout() shows the configured layout');

is( $plain->safe_psql(
		'postgres',
		q{SELECT snowid_node((5::bigint << 14) | 3),
		         snowid_sequence((5::bigint << 14) | 3),
		         snowid_timestamp((1000::bigint << 22) | (5 << 14) | 3)
		           = '2025-01-01 00:00:01+00'::timestamptz,
		         snowid_from_timestamp('2025-01-01 00:00:01.0005+00'),
		         (snowid_decode((1000::bigint << 22) | (5 << 14) | 3)).node}),
	'5|3|t|' . (1000 << 22) . '|5',
	'not preloaded: decoders use the configured layout');

$plain->stop;

done_testing();
