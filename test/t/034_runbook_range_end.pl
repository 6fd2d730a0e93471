# Copyright (c) snowid contributors
#
# The runbook "The end of the range" of test/runbooks/README.md, run as
# written, on a layout that ends within a few years: snowid.id_bits = 33
# with 10 node and 12 sequence bits leaves 11 bits of one-day ticks, 2,048
# days from 2025-01-01.  The server runs on the fake clock of
# test/clockshim.c, moved to the layout's last tick and past it:
#
#  - every start within ten years of the end warns, and the runbook's query
#    says to plan now;
#  - in the last tick the server issues its last IDs, all below 2^33;
#  - then, and past the end, snowid_next() and snowid_next_batch() fail
#    with 2200H, naming the last tick, and issue nothing (no wrap, no
#    negative ID);
#  - the runbook's move (ALTER SYSTEM SET snowid.id_bits = 63, restart)
#    brings IDs back, above every ID issued before.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowidTest;
use Test::More;

my $clock = PostgreSQL::Test::Utils::tempdir . '/clock';
write_clock_offset($clock, '+0');
my $node = snowid_node('ender', 3, "snowid.id_bits = 33\nsnowid.tick = '1d'\n");
with_fake_clock($node, $clock, 'start');
like(slurp_file($node->logfile),
	qr/WARNING:  snowid layout runs out of timestamp bits at 2030-08-/,
	'the start warns: the layout ends within ten years');

$node->safe_psql('postgres', 'CREATE EXTENSION snowid; ' . take_setup_sql());
my ($check, $move) = runbook_blocks('range-end');
my ($restart) = runbook_blocks('range-end-restart');
my $plan = $node->safe_psql('postgres', $check);
like($plan, qr/^2030-08-\d\d 00:00:00\+00\|33\|t$/,
	"the runbook's query: the last tick starts in August 2030, plan now ($plan)");

$node->safe_psql('postgres', 'SELECT take(1000)');
my $before = max_of(ids_of($node));

# Into the last tick (an hour into it, on the server's clock only).
my $last_tick = $node->safe_psql('postgres',
	q{SELECT extract(epoch FROM last_timestamp) FROM snowid_layout()});
write_clock_offset($clock, sprintf('%+.3f', $last_tick + 3600 - time));
is($node->safe_psql('postgres', 'SELECT count(*) FROM snowid_next_batch(4096)'),
	4096, "in the last tick: a tick's worth of IDs");
my ($ret, $out, $err) = try_next($node);
like($err, qr/ERROR:  2200H: snowid layout has run out of timestamp bits\n.*DETAIL:  The layout's last tick starts at 2030-08-/s,
	'then snowid_next() fails with 2200H, naming the last tick');
($ret, $out, $err) = $node->psql('postgres', 'SELECT snowid_next_batch(1)');
like($err, qr/run out of timestamp bits/, 'and so does snowid_next_batch()');

# Past the end.
write_clock_offset($clock, sprintf('%+.3f', $last_tick + 86400 * 3 - time));
($ret, $out, $err) = try_next($node);
like($err, qr/2200H: snowid layout has run out of timestamp bits/,
	'past the end: the same error, no ID');
my ($max, $n) = split /\|/, $node->safe_psql('postgres',
	q{SELECT max(last_id), count(*) FROM snowid_stats()});
cmp_ok($max, '<', 2**33, "every ID issued lies below 2^33 ($max): no wrap");
cmp_ok($max, '>', $before, 'and above those of before');

# The runbook's move, with the clock still past the old end.
$node->safe_psql('postgres', $move);
($ret, $out, $err) = run_runbook_sh($node, $restart, fake_clock_env($clock));
is($ret, 0, "the runbook's restart") or diag($err);
is($node->safe_psql('postgres', 'SELECT id_bits FROM snowid_layout()'), 63,
	'the server runs with 63 ID bits');
$node->safe_psql('postgres', 'SELECT take(1000)');
my @after = ids_of($node, "id > $before");
is(scalar(@after), 1000, 'it issues IDs again');
cmp_ok(min_of(@after), '>', $max, 'above every ID issued before the move');
ok(strictly_increasing(ids_of($node)), 'the IDs of the table increase throughout');
like($node->safe_psql('postgres', $check), qr/\|63\|f$/,
	"the runbook's query: nothing to plan now");

write_clock_offset($clock, '+0');
$node->stop('immediate');
done_testing();
