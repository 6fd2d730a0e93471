# A refused call moves nothing: a role that is not a superuser, looping
# snowid_next() in two sessions and catching the errors, cannot push the
# stream ahead of the clock beyond what a call may take (snowid.max_lead),
# and so cannot make the calls of another role fail after it stops; while
# the stream runs ahead, snowid_stats().lead_ms says how far.
#
# A small layout (100 ms ticks of 1,024 IDs: the loops draw IDs faster than
# the clock makes them on any machine) and snowid.max_wait = 0, so that a
# call beyond max_lead is refused at once.  Before 1.8 each refused call
# had claimed its position first: the loops pushed the stream seconds ahead
# of the clock per second, every later call of any role failed until the
# clock caught up, and lead_ms, computed from IDs issued, said 0.
use strict;
use warnings;
use IPC::Run;
use Time::HiRes qw(usleep);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SnowidTest;

my $secs = 4;
my $max_lead_ms = 1000;
my $tick_ms = 100;
# the stream may end a tick beyond max_lead (the next position lies in the
# following tick), plus scheduling on a loaded machine
my $bound_ms = $max_lead_ms + $tick_ms + 400;

my $node = snowid_node('refused_calls', 1,
	"snowid.tick = '${tick_ms}ms'\nsnowid.sequence_bits = 10\n"
	  . "snowid.max_lead = '${max_lead_ms}ms'\nsnowid.max_wait = 0\n");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION snowid;
	CREATE ROLE hostile LOGIN;
	CREATE ROLE app LOGIN;
	-- snowid_next() for $1 seconds, errors caught: calls that returned an
	-- ID, calls refused, the first refusal (SQLSTATE: message).
	CREATE FUNCTION hostile_loop(secs float8, OUT taken int, OUT refused int,
		OUT first_error text)
	LANGUAGE plpgsql AS $$
	DECLARE
		t_end timestamptz := clock_timestamp() + secs * interval '1 s';
	BEGIN
		taken := 0; refused := 0;
		WHILE clock_timestamp() < t_end LOOP
			BEGIN
				PERFORM snowid_next();
				taken := taken + 1;
			EXCEPTION WHEN others THEN
				refused := refused + 1;
				first_error := coalesce(first_error, SQLSTATE || ': ' || SQLERRM);
			END;
		END LOOP;
	END $$;
});

my @hostile;
for my $i (1 .. 2)
{
	my %h = (out => '', err => '');
	$h{handle} = IPC::Run::start(
		[
			'psql', '-XAtq', '-d', $node->connstr('postgres') . ' user=hostile',
			'-c', "SELECT taken, refused, first_error FROM hostile_loop($secs)"
		],
		'>', \$h{out}, '2>', \$h{err},
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	push @hostile, \%h;
}

# Meanwhile, what snowid_stats() says, and how far the stream really runs
# ahead: the position after the last claimed one is not visible, but
# lead_ms must cover every position claimed.
my $bg = $node->background_psql('postgres');
my @leads;
my $t_end = time + $secs - 1;
while (time < $t_end)
{
	push @leads,
	  $bg->query_safe('SELECT round(lead_ms::numeric) FROM snowid_stats()');
	usleep(100_000);
}
$bg->quit;

my ($taken, $refused, $refusal) = (0, 0, '');
for my $h (@hostile)
{
	$h->{handle}->finish;
	is($h->{err}, '', 'the hostile session ran to its end');
	chomp(my $out = $h->{out});
	my ($t, $r, $e) = split /\|/, $out, 3;
	$taken += $t // 0;
	$refused += $r // 0;
	$refusal ||= $e // '';
}
my $lead_max = max_of(@leads);
note "hostile calls: $taken taken, $refused refused ($refusal); "
  . "lead_ms seen: " . join(' ', @leads);

cmp_ok($taken, '>', 1000, 'the hostile role took IDs');
cmp_ok($refused, '>', 0,
	'and its loop ran the stream to max_lead, where calls were refused');
like($refusal, qr/^55000: system clock is [0-9.]+ ms behind the IDs snowid has issued$/,
	'a refused call says the IDs lead the clock');
# Past its first second the loop is refused more than it takes: the IDs
# it took early lie behind the clock by then, the stream does not.
my @late = @leads[ int(@leads / 2) .. $#leads ];
cmp_ok(max_of(@late), '>', $max_lead_ms / 2,
	'snowid_stats().lead_ms shows the stream running ahead of the clock late in the attack');
cmp_ok($lead_max, '<=', $bound_ms,
	"and never more than max_lead + a tick + scheduling ($bound_ms ms)");

# Right after the attack: the stream is at most a tick beyond max_lead, so
# once a tick (and some scheduling) has passed another role's call works.
usleep(2 * $tick_ms * 1000);
my $lead_after =
  $node->safe_psql('postgres', 'SELECT round(lead_ms::numeric) FROM snowid_stats()');
cmp_ok($lead_after, '<=', $bound_ms,
	"after the attack the stream leads the clock by at most $bound_ms ms");
my ($ret, $id, $err) = $node->psql('postgres', 'SELECT snowid_next()',
	extra_params => [ '-U', 'app' ]);
is($ret, 0, 'another role\'s snowid_next() works right after the attack')
  or diag $err;
cmp_ok(1000 * $node->safe_psql('postgres',
		"SELECT extract(epoch FROM snowid_timestamp($id) - clock_timestamp())"),
	'<=', $max_lead_ms, 'and its ID leads the clock by at most max_lead')
  if $ret == 0;

$node->stop;
done_testing();
