/*-------------------------------------------------------------------------
 *
 * generator.c
 *	  snowid_next() and snowid_next_batch(): the Snowflake generator.
 *
 * The whole generator is one 64-bit atomic in shared memory,
 * SnowidShared.next_position: the first position (tick << sequence_bits |
 * sequence) not yet claimed on this server.  snowid_next() claims one
 * position with one fetch-add, whatever the clock says, and only then reads
 * the clock and decides whether it may issue what it got (snowid_take):
 *
 *	 - its tick is before the wall tick (the stream fell behind the clock,
 *	   as after any idle moment): the position is dropped, and the caller
 *	   moves the stream to the first position of the wall tick with one
 *	   compare-and-swap, claiming that position (snowid_jump; if another
 *	   caller moved it first, it takes the next position with fetch-add),
 *	   and checks the new position against a fresh reading;
 *	 - its tick starts more than snowid.max_lead after the reading (the
 *	   sequences ran out and carried into ticks ahead of the clock, or the
 *	   clock stepped back): the caller keeps the position and waits for the
 *	   clock, within snowid.max_wait in all, or fails;
 *	 - it lies at or beyond reserved_position: the caller keeps it, renews
 *	   the reservation (highwater.c) and checks again;
 *	 - it lies beyond the layout's last tick: the caller fails.
 *
 * Batches (snowid_next_batch) claim n positions with compare-and-swap as
 * before: snowid_reserve checks first and claims only what passes.  The
 * lead a batch may take is a parameter: a role that is not a superuser
 * gets half of max_lead, so that no loop of its batches can take the rest,
 * which single calls keep (their claims are never refused, only waited
 * for), and at most snowid.max_batch IDs per call (snowid_check_batch).
 *
 * Why this is sound.  (1) next_position only grows: fetch-add adds at least
 * one, and every compare-and-swap (jump, batch, the registry's floor,
 * replay of a reservation) replaces a value with a larger one.  Each claim
 * is one atomic modification from a value v to a value w > v and takes
 * positions in [v, w) only; the modifications of one atomic are totally
 * ordered, so the ranges of two claims never overlap and the later claim's
 * range lies wholly above the earlier one's.  (2) No duplicate: a position
 * is issued only by the caller whose claim took it, at most once, and a
 * position dropped by its claimer is taken by nobody else, so it is a gap,
 * never an ID issued twice; the node is the one of the gate read before
 * and after the claim (snowid_reserve_gated), and positions map to IDs of
 * one node one to one.  Across restarts, every issued position was below
 * reserved_position when its claimer read it after the claim, and that
 * bound was durable before it was published, so a restart, crash or
 * promotion continues above it.  (3) Order: a caller issues the position
 * of its last claim and returns after it; if one call returns before
 * another starts, the first call's last claim precedes every claim of the
 * second in the order of (1), so its ID is smaller.  IDs of one server
 * therefore strictly increase in issue order, across backends, and within
 * each backend.  (4) Timestamps: every issued position has passed the
 * checks against a clock reading taken after its claim: its tick is at or
 * after that reading's tick (so at or after the tick in which it was
 * claimed, and at most one tick behind the clock then), and its tick
 * starts no more than max_lead after that reading (so never more than
 * max_lead ahead when the ID is returned, later still).  A caller that
 * waited checks again after the wait; if the clock has meanwhile passed its
 * tick, the position is dropped and the caller jumps.
 *
 * The coarse clock.  Far ahead of the clock (a bulk statement drawing IDs
 * faster than the layout's ticks hold them) the fine reading costs as much
 * as the rest of the call, and the exact time cannot change the verdict:
 * CLOCK_REALTIME_COARSE is never later than the exact clock, so the lead it
 * shows is never smaller than the real one (checking max_lead against it is
 * sound), and if the position's tick starts at least the coarse margin
 * after a coarse reading it normally starts after the exact time too (the
 * coarse clock trails by a few ms).  A coarse clock that stalls longer (a
 * descheduled virtual machine) could let a claim continue a tick the exact
 * clock has passed, so the caller that takes a tick's first position
 * confirms on the exact clock that the tick still lies ahead: the stream
 * never enters a tick the clock has passed.  Anything else goes to the
 * exact path, with the same position.
 *
 * Off the contended line.  The claim's cache line holds next_position and
 * reserved_position only; reserved_position is read from it right after
 * the fetch-add took it, at no extra cost.  The clock checks use the
 * caller's own reading and the wall tick it remembers; IDs issued are
 * counted per backend (snowid_count_issued), ticks borrowed once per tick,
 * by the caller that takes the tick's first position.
 *
 * Across restarts, crashes and promotions the stream continues above the
 * persisted high-water mark: a caller may only issue positions below
 * reserved_position.  The caller that finds less than half of the
 * reserved window left renews it (highwater.c) after claiming its own IDs;
 * a caller whose position lies beyond it renews it, or waits for the
 * renewal, first.
 *
 * Clock regressions are detected without a write on the hot path:
 * clock_seen is raised only by callers that start a fresh tick (a jump),
 * and compared only by callers that issue a tick ahead of the clock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "clock.h"
#include "compat.h"
#include "fmgr.h"
#include "funcapi.h"
#include "generator.h"
#include "guc.h"
#include "highwater.h"
#include "layout.h"
#include "lease.h"
#include "miscadmin.h"
#include "state.h"
#include "storage/proc.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(snowid_next);
PG_FUNCTION_INFO_V1(snowid_next_batch);

/* A step back of the clock smaller than this is not counted. */
#define SNOWID_REGRESSION_THRESHOLD_US 10000

static uint64 snowid_reserve(SnowidShared *shared, const SnowidLayout *layout,
							 uint32 n, int64 max_lead_us);
static inline uint64 snowid_take(SnowidShared *shared,
								 const SnowidLayout *layout);

/*
 * The gate this server issues under, or an error: during recovery, or
 * while the gate is shut (no node ID, or the registry has not granted it).
 */
static inline uint64
snowid_require_gate(SnowidShared *shared, const SnowidLayout *layout)
{
	uint64		gate;

	static bool recovery_over = false;

	/* recovery never comes back in a running backend: ask until it is over */
	if (unlikely(!recovery_over) && !(recovery_over = !RecoveryInProgress()))
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot generate snowids during recovery"),
				 errdetail("A standby shares its primary's node ID; IDs it issued could collide with the primary's."),
				 errhint("Generate IDs on the primary; after promotion this server continues above every ID its primary reserved.")));
	gate = pg_atomic_read_u64(&shared->gate);
	if (unlikely(SNOWID_GATE_NODE(gate) < 0))
		gate = snowid_gate_closed(shared, layout);
	return gate;
}

/*
 * Claim n positions under an open gate, and return the first and the
 * node: one by snowid_take(), more by snowid_reserve() within
 * batch_lead_us of the clock.  If the gate changed while claiming (the
 * lease ended, the node moved, a floor was raised), the positions are
 * dropped (a gap) and the claim starts over.
 */
static inline uint64
snowid_reserve_gated(SnowidShared *shared, const SnowidLayout *layout,
					 uint32 n, int64 batch_lead_us, int32 *node)
{
	for (;;)
	{
		uint64		gate = snowid_require_gate(shared, layout);
		uint64		position = n == 1 ? snowid_take(shared, layout) :
			snowid_reserve(shared, layout, n, batch_lead_us);

		if (likely(pg_atomic_read_u64(&shared->gate) == gate))
		{
			*node = SNOWID_GATE_NODE(gate);
			return position;
		}
	}
}

/*
 * Fail because the next position lies too far ahead of the wall clock;
 * max_lead_us is the lead the caller was allowed: snowid.max_lead, or half
 * of it for the batch of a role that is not a superuser, which has a
 * message of its own (its clock need not be wrong).
 */
static void
snowid_clock_behind(SnowidShared *shared, const SnowidLayout *layout,
					int64 tick, TimestampTz now, int64 lead_us,
					int64 max_lead_us)
{
	TimestampTz tick_start;
	char	   *tick_text;

	pg_atomic_fetch_add_u64(&shared->clock_errors, 1);
	tick_text = snowid_tick_start(layout, tick, &tick_start) ?
		pstrdup(timestamptz_to_str(tick_start)) : pstrdup("(out of range)");
	if (max_lead_us != (int64) snowid_max_lead_ms * 1000)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowid batch would lead the system clock by %.3f ms, more than the %.3f ms a role that is not a superuser may",
						(double) lead_us / 1000.0, (double) max_lead_us / 1000.0),
				 errdetail("The batch's last ID belongs to the tick starting at %s and the clock reads %s; batches of a role that is not a superuser may lead by half of snowid.max_lead, the other half being kept for single calls, and snowid.max_wait allows %d ms of waiting.",
						   tick_text, timestamptz_to_str(now), snowid_max_wait_ms),
				 errhint("Take smaller batches or spread them over time.")));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("system clock is %.3f ms behind the IDs snowid has issued",
					(double) lead_us / 1000.0),
			 errdetail("The next ID belongs to the tick starting at %s and the clock reads %s; snowid.max_lead allows %d ms of lead and snowid.max_wait %d ms of waiting.",
					   tick_text, timestamptz_to_str(now),
					   snowid_max_lead_ms, snowid_max_wait_ms),
			 errhint("Wait for the clock to catch up or correct it; raising snowid.max_wait lets callers wait longer instead of failing.")));
}

/* Note the clock reading of a caller that starts a fresh tick. */
static inline void
snowid_note_clock(SnowidShared *shared, TimestampTz now)
{
	uint64		seen = pg_atomic_read_u64(&shared->clock_seen);

	if ((uint64) now > seen)
		pg_atomic_compare_exchange_u64(&shared->clock_seen, &seen, (uint64) now);
}

/*
 * A caller continues a tick ahead of its clock reading: borrowing, or the
 * clock went back.  A reading well below clock_seen is confirmed with a
 * fresh one (the first may be stale if the caller was descheduled), then
 * the step is counted once, by lowering clock_seen to the new reading.
 */
static void
snowid_check_regression(SnowidShared *shared, TimestampTz now)
{
	uint64		seen = pg_atomic_read_u64(&shared->clock_seen);
	uint64		step;
	uint64		largest;

	if (now < 0 || seen <= (uint64) now + SNOWID_REGRESSION_THRESHOLD_US)
		return;
	now = snowid_clock_now();
	if (now < 0 || seen <= (uint64) now + SNOWID_REGRESSION_THRESHOLD_US)
		return;
	step = seen - (uint64) now;
	if (!pg_atomic_compare_exchange_u64(&shared->clock_seen, &seen, (uint64) now))
		return;					/* someone else counted it */
	pg_atomic_fetch_add_u64(&shared->regressions, 1);
	largest = pg_atomic_read_u64(&shared->largest_regression_us);
	while (step > largest &&
		   !pg_atomic_compare_exchange_u64(&shared->largest_regression_us,
										   &largest, step))
		;
}

/*
 * The wall tick of a clock reading.  Successive readings mostly fall in the
 * same tick, so this backend remembers the last one and skips the division.
 */
static int64 cached_tick = -1;
static TimestampTz cached_start = 0;

static inline int64
snowid_wall_tick(const SnowidLayout *layout, TimestampTz now)
{
	int64		tick;

	if (likely(cached_tick >= 0 && now >= cached_start &&
			   now - cached_start < layout->tick_us))
		return cached_tick;
	tick = snowid_tick_of(layout, now);
	if (tick >= 0 && tick <= snowid_max_tick(layout) &&
		snowid_tick_start(layout, tick, &cached_start))
		cached_tick = tick;
	else
		cached_tick = -1;
	return tick;
}

/*
 * Count n IDs issued by this process, the last at position last: plain
 * stores into the slot of its PGPROC number, which no other process writes
 * (so no increment is lost and no cache line is shared), or atomics on
 * shared counts for a process without a slot.  snowid_stats() sums them
 * (state.c).
 */
static inline void
snowid_count_issued(SnowidShared *shared, uint64 n, uint64 last)
{
	int			procno = snowid_my_proc_number();

	if (likely(procno >= 0 && procno < shared->nbackend_counts))
	{
		SnowidBackendCount *b = &shared->backend_counts[procno];

		pg_atomic_write_u64(&b->c.last_position, last);
		pg_atomic_write_u64(&b->c.ids_issued,
							pg_atomic_read_u64(&b->c.ids_issued) + n);
	}
	else
	{
		uint64		old = pg_atomic_read_u64(&shared->last_position_other);

		while (old < last &&
			   !pg_atomic_compare_exchange_u64(&shared->last_position_other,
											   &old, last))
			;
		pg_atomic_fetch_add_u64(&shared->ids_issued_other, n);
	}
}

/* Ticks after the remembered wall tick whose start is computed inline. */
#define SNOWID_NEAR_TICKS (INT64CONST(1) << 20)

/*
 * The start of a tick; near (at or after) the wall tick this backend
 * remembers, without a call or an overflow check: the product stays far
 * below the range of int64 for any tick length a layout may have.
 */
static inline bool
snowid_tick_start_near(const SnowidLayout *layout, int64 tick,
					   TimestampTz *start)
{
	if (likely(cached_tick >= 0 && tick >= cached_tick &&
			   tick - cached_tick < SNOWID_NEAR_TICKS))
	{
		*start = cached_start + (tick - cached_tick) * layout->tick_us;
		return IS_VALID_TIMESTAMP(*start);
	}
	return snowid_tick_start(layout, tick, start);
}

/*
 * The stream lies behind the clock (a claim found its position's tick
 * before wall_tick): move next_position to the first position of the wall
 * tick and claim that position, with one compare-and-swap from a value it
 * had (expected).  If another caller moved it first, take the next
 * position with fetch-add instead.  Either way the caller checks what it
 * got against a fresh clock reading.
 */
static uint64
snowid_jump(SnowidShared *shared, const SnowidLayout *layout,
			uint64 expected, int64 wall_tick, TimestampTz now)
{
	uint64		target;

	if (wall_tick > snowid_max_tick(layout))
		target = snowid_position_end(layout);
	else
		target = wall_tick < 0 ? 0 : (uint64) wall_tick << layout->sequence_bits;
	while (expected < target)
	{
		if (pg_atomic_compare_exchange_u64(&shared->next_position,
										   &expected, target + 1))
		{
			snowid_note_clock(shared, now);
			return target;
		}
		/* expected now holds the current value */
	}
	return pg_atomic_fetch_add_u64(&shared->next_position, 1);
}

/* What snowid_take's inline checks need, set once per backend. */
static int64 take_margin_us = -1;	/* the coarse margin, 0: none */
static int64 take_margin_ticks;	/* it in ticks; PG_INT64_MAX: never */
static int64 take_renew_ticks;	/* renew early when no more ticks are left */

static pg_noinline void
snowid_take_init(const SnowidLayout *layout)
{
	take_margin_us = snowid_clock_coarse_margin_us();
	take_margin_ticks = take_margin_us > 0 ?
		take_margin_us / layout->tick_us : PG_INT64_MAX;
	take_renew_ticks = snowid_highwater_window_ticks(layout) / 2;
}

/*
 * The whole check of a position claimed by snowid_take(), for what its
 * inline checks leave: a fresh tick, a stream behind the clock or too far
 * ahead of it, the reservation running low, a possible clock step.  A
 * position that fails a check for good (its tick is behind the clock, a
 * wait would exceed max_wait, the layout is used up, an error) is a gap;
 * one that is only early (beyond max_lead within max_wait, or beyond the
 * persisted reservation) is kept while the caller waits for the clock or
 * for the renewal, then checked again.  fine_after is an exact reading
 * taken after the claim, or 0.  Returns the position to issue.
 */
static pg_noinline uint64
snowid_take_slow(SnowidShared *shared, const SnowidLayout *layout,
				 uint64 position, uint64 reserved, TimestampTz fine_after)
{
	const int	shift = layout->sequence_bits;
	const uint64 mask = snowid_sequence_mask(layout);
	const int64 max_lead_us = (int64) snowid_max_lead_ms * 1000;
	const int64 margin_us = take_margin_us;
	int64		tick = (int64) (position >> shift);
	int64		wall_tick;
	int64		wait_start = 0;
	TimestampTz start;
	TimestampTz now;

	/*
	 * Far ahead of the clock (a bulk statement drawing IDs faster than the
	 * layout's ticks hold them): the coarse clock decides, as the header
	 * comment explains, confirmed by the exact clock once per tick, by the
	 * one caller that takes the tick's first position.  Skipped at once when
	 * the position lies within the margin of the wall tick this backend saw
	 * last (normally no later than now).  Reserved bounds every position
	 * below the layout's end.
	 */
	if (fine_after == 0 && margin_us != 0 && max_lead_us >= margin_us &&
		(cached_tick < 0 || tick - cached_tick >= take_margin_ticks) &&
		likely(position < reserved) &&
		snowid_tick_start_near(layout, tick, &start))
	{
		TimestampTz coarse = snowid_clock_now_coarse();
		TimestampTz fine = 0;

		if (start - coarse >= margin_us && start - coarse <= max_lead_us)
		{
			if ((position & mask) == 0)
			{
				fine = snowid_clock_now();
				(void) snowid_wall_tick(layout, fine);
			}
			if (fine == 0 || start > fine)
			{
				snowid_check_regression(shared, fine != 0 ? fine : coarse);
				if ((position & mask) == 0)
					pg_atomic_fetch_add_u64(&shared->ticks_borrowed, 1);
				if (unlikely((int64) (reserved >> shift) - tick <=
							 take_renew_ticks))
					snowid_highwater_renew(shared, layout, tick, tick, false);
				snowid_count_issued(shared, 1, position);
				return position;
			}
		}
	}

	/* The exact path: a fine reading after the claim decides. */
	for (;;)
	{
		now = fine_after != 0 ? fine_after : snowid_clock_now();
		fine_after = 0;
		wall_tick = snowid_wall_tick(layout, now);

		if (unlikely(position >= snowid_position_end(layout)))
			ereport(ERROR,
					(errcode(ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED),
					 errmsg("snowid layout has run out of timestamp bits"),
					 errdetail("The layout's last tick starts at %s; no more IDs can be issued with it.",
							   timestamptz_to_str(snowid_layout_end(layout) - layout->tick_us)),
					 errhint("Configure a new layout and restart the server: raise snowid.id_bits if it is below 63; make any other change only as the README section \"What may change between restarts\" says.")));

		if (unlikely(tick < wall_tick))
		{
			/* behind the clock: a gap; jump to the wall tick, check again */
			position = snowid_jump(shared, layout, position + 1, wall_tick, now);
			reserved = pg_atomic_read_u64(&shared->reserved_position);
			tick = (int64) (position >> shift);
			continue;
		}

		if (tick > wall_tick)
		{
			int64		lead_us;

			lead_us = likely(snowid_tick_start_near(layout, tick, &start)) ?
				start - now : PG_INT64_MAX;
			if (unlikely(lead_us > max_lead_us))
			{
				/* too far ahead: keep the position and wait, within max_wait */
				int64		max_wait_us = (int64) snowid_max_wait_ms * 1000;

				if (wait_start == 0)
					wait_start = snowid_clock_monotonic_us();
				if (lead_us - max_lead_us >
					max_wait_us - (snowid_clock_monotonic_us() - wait_start))
					snowid_clock_behind(shared, layout, tick, now, lead_us,
										max_lead_us);
				snowid_clock_sleep(lead_us - max_lead_us);
				continue;
			}
			/* the clock is behind this stream: did it step back? */
			snowid_check_regression(shared, now);
		}

		if (unlikely(position >= reserved))
		{
			/* beyond the persisted reservation: renew it, then check again */
			snowid_highwater_renew(shared, layout, tick, wall_tick, true);
			reserved = pg_atomic_read_u64(&shared->reserved_position);
			continue;
		}
		break;
	}

	if (unlikely(tick > wall_tick && (position & mask) == 0))
		pg_atomic_fetch_add_u64(&shared->ticks_borrowed, 1);
	if (unlikely((int64) (reserved >> shift) - tick <= take_renew_ticks))
		snowid_highwater_renew(shared, layout, tick, wall_tick, false);
	snowid_count_issued(shared, 1, position);
	if (unlikely(wait_start != 0))
	{
		pg_atomic_fetch_add_u64(&shared->waits, 1);
		pg_atomic_fetch_add_u64(&shared->wait_us,
								snowid_clock_monotonic_us() - wait_start);
	}
	return position;
}

/*
 * snowid_next()'s claim: one position taken with one fetch-add, then
 * checked against a clock reading taken after it (see the header comment
 * for why this is sound).  Inline, the two common cases with nothing to
 * do but count: the position lies in the wall tick this backend remembers
 * and the exact clock still reads that tick; or the position continues a
 * tick far ahead of the coarse clock and within max_lead of it.  Both need
 * the reservation to hold more than half a window beyond the position (so
 * it lies below the reservation and the layout's end), and no sign of a
 * clock step.  Anything else goes to snowid_take_slow() with the position.
 */
static inline uint64
snowid_take(SnowidShared *shared, const SnowidLayout *layout)
{
	const int	shift = layout->sequence_bits;
	uint64		position;
	uint64		reserved;
	int64		tick;

	if (unlikely(take_margin_us < 0))
		snowid_take_init(layout);

	position = pg_atomic_fetch_add_u64(&shared->next_position, 1);
	/* the line the fetch-add just took: no further memory traffic */
	reserved = pg_atomic_read_u64(&shared->reserved_position);
	tick = (int64) (position >> shift);

	if (likely((int64) (reserved >> shift) - tick > take_renew_ticks &&
			   cached_tick >= 0))
	{
		if (tick == cached_tick)
		{
			TimestampTz now = snowid_clock_now();

			if (likely(now >= cached_start &&
					   now - cached_start < layout->tick_us))
			{
				snowid_count_issued(shared, 1, position);
				return position;
			}
			return snowid_take_slow(shared, layout, position, reserved, now);
		}
		else if (tick - cached_tick >= take_margin_ticks &&
				 tick - cached_tick < SNOWID_NEAR_TICKS &&
				 (position & snowid_sequence_mask(layout)) != 0)
		{
			TimestampTz start = cached_start +
			(tick - cached_tick) * layout->tick_us;
			TimestampTz coarse = snowid_clock_now_coarse();

			if (likely(start - coarse >= take_margin_us &&
					   start - coarse <= (int64) snowid_max_lead_ms * 1000 &&
					   pg_atomic_read_u64(&shared->clock_seen) <=
					   (uint64) coarse + SNOWID_REGRESSION_THRESHOLD_US))
			{
				snowid_count_issued(shared, 1, position);
				return position;
			}
		}
	}
	return snowid_take_slow(shared, layout, position, reserved, 0);
}

/*
 * Bookkeeping after positions first .. last were claimed: renew the
 * reservation early when less than half of it is left, and count.  lower
 * is the latest tick the claim did not borrow: the wall tick, or the tick
 * of the position before first if the claim continued the stream.  The
 * renewal starts from the later of last's tick and wall_tick.
 */
static inline void
snowid_after_claim(SnowidShared *shared, const SnowidLayout *layout,
				   uint64 reserved, uint64 last, int64 lower,
				   int64 wall_tick, uint32 n)
{
	int64		last_tick = (int64) (last >> layout->sequence_bits);

	if (unlikely((int64) (reserved >> layout->sequence_bits) - last_tick <=
				 snowid_highwater_window_ticks(layout) / 2))
		snowid_highwater_renew(shared, layout, last_tick, wall_tick, false);

	snowid_count_issued(shared, n, last);
	if (unlikely(last_tick > lower))
		pg_atomic_fetch_add_u64(&shared->ticks_borrowed, last_tick - lower);
}

/*
 * The fast path of a stream far ahead of the clock, as when one statement
 * asks for IDs faster than the layout's ticks hold them.  The coarse clock
 * is never later than the exact one, so the lead it shows is never smaller
 * than the real one: checking max_lead against it is sound.  If the next
 * position's tick starts at least the coarse margin after a coarse reading,
 * it normally starts after the exact time too (the coarse clock trails by a
 * few ms), so the stream continues from it whatever the exact time is.  A
 * coarse clock that stalls longer (a descheduled virtual machine) could
 * let the stream continue a tick the exact clock has passed, so a claim
 * that enters a new tick, once per tick's worth of IDs, confirms on the
 * exact clock that the stream's tick still lies ahead: the stream never
 * enters a tick the clock has passed.  Anything else (not that far ahead, a lead beyond
 * max_lead, the reservation or the layout running out) is left to the exact
 * path.  Returns whether it claimed.
 */
static inline bool
snowid_reserve_ahead(SnowidShared *shared, const SnowidLayout *layout,
					 uint32 n, int64 max_lead_us, uint64 *result)
{
	static int64 margin_us = -1;
	static int64 margin_ticks;
	const int	shift = layout->sequence_bits;
	uint64		old = pg_atomic_read_u64(&shared->next_position);
	TimestampTz coarse;
	TimestampTz fine = 0;
	TimestampTz old_start;
	TimestampTz last_start;
	uint64		last;
	uint64		reserved;
	int64		old_tick;
	int64		last_tick;
	int64		prev_tick;

	if (unlikely(margin_us < 0))
	{
		margin_us = snowid_clock_coarse_margin_us();
		margin_ticks = margin_us / layout->tick_us;
	}

	/*
	 * Cheap exits first: no coarse clock, a max_lead that leaves no room,
	 * or a stream within the margin of this backend's last exact reading
	 * (normally no later than now; after a backward clock step this only
	 * sends the caller to the exact path).
	 */
	if (margin_us == 0 || max_lead_us < margin_us ||
		(cached_tick >= 0 && (int64) (old >> shift) - cached_tick < margin_ticks))
		return false;
	coarse = snowid_clock_now_coarse();
	for (;;)
	{
		old_tick = (int64) (old >> shift);
		if (!snowid_tick_start(layout, old_tick, &old_start) ||
			old_start - coarse < margin_us)
			return false;
		last = old + n - 1;
		if (last < old || last >= snowid_position_end(layout))
			return false;
		last_tick = (int64) (last >> shift);
		last_start = old_start;
		if ((last_tick != old_tick &&
			 !snowid_tick_start(layout, last_tick, &last_start)) ||
			last_start - coarse > max_lead_us)
			return false;
		reserved = pg_atomic_read_u64(&shared->reserved_position);
		if (last >= reserved)
			return false;
		/* entering a new tick: does the stream still lie ahead of the clock? */
		prev_tick = old > 0 ? (int64) ((old - 1) >> shift) : -1;
		if (last_tick > prev_tick)
		{
			if (fine == 0)
				fine = snowid_clock_now();
			if (old_start <= fine)
				return false;
		}
		if (pg_atomic_compare_exchange_u64(&shared->next_position,
										   &old, last + 1))
			break;
		/* old now holds the current value: check again */
	}

	/* the clock is behind this stream by definition: did it step back? */
	snowid_check_regression(shared, fine != 0 ? fine : coarse);
	/* prev_tick is before last_tick, so a renewal starts from last_tick */
	snowid_after_claim(shared, layout, reserved, last,
					   Max(prev_tick, 0), prev_tick, n);
	*result = old;
	return true;
}

/*
 * Claim n consecutive positions, none more than max_lead_us ahead of the
 * clock, and return the first.  Only the compare-and-swap publishes
 * anything; every check happens before it.
 */
static uint64
snowid_reserve(SnowidShared *shared, const SnowidLayout *layout, uint32 n,
			   int64 max_lead_us)
{
	const int	shift = layout->sequence_bits;
	const uint64 end = snowid_position_end(layout);
	const int64 max_wait_us = (int64) snowid_max_wait_ms * 1000;
	uint64		old;
	int64		wait_start = 0;
	uint64		anchor = 0;
	bool		anchored = false;
	uint64		first;
	uint64		last;
	uint64		reserved;
	TimestampTz now;
	int64		wall_tick;
	int64		last_tick;
	int64		lower;

	if (snowid_reserve_ahead(shared, layout, n, max_lead_us, &first))
		return first;

	old = pg_atomic_read_u64(&shared->next_position);
	for (;;)
	{
		TimestampTz last_start;
		int64		lead_us;
		uint64		wall_position;

		now = snowid_clock_now();
		wall_tick = snowid_wall_tick(layout, now);
		if (unlikely(wall_tick > snowid_max_tick(layout)))
			wall_position = end;
		else
			wall_position = wall_tick < 0 ? 0 : (uint64) wall_tick << shift;

		/*
		 * A caller that waits keeps the start it waits for.  Starting again
		 * from each new wall tick, a batch that spans more ticks than
		 * max_lead allows would move on with the clock and never come due.
		 */
		if (anchored && wall_position > anchor)
			wall_position = anchor;
		if (old >= wall_position)
		{
			first = old;
			if (unlikely(wall_tick < (int64) (old >> shift)))
				snowid_check_regression(shared, now);
		}
		else
		{
			first = wall_position;
			snowid_note_clock(shared, now);
		}

		if (unlikely(first >= end || end - first < n))
			ereport(ERROR,
					(errcode(ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED),
					 errmsg("snowid layout has run out of timestamp bits"),
					 errdetail("The layout's last tick starts at %s; no more IDs can be issued with it.",
							   timestamptz_to_str(snowid_layout_end(layout) - layout->tick_us)),
					 errhint("Configure a new layout and restart the server: raise snowid.id_bits if it is below 63; make any other change only as the README section \"What may change between restarts\" says.")));

		last = first + n - 1;
		last_tick = (int64) (last >> shift);
		if (likely(snowid_tick_start(layout, last_tick, &last_start)))
			lead_us = last_start - now;
		else
			lead_us = PG_INT64_MAX;

		if (likely(lead_us <= max_lead_us))
		{
			reserved = pg_atomic_read_u64(&shared->reserved_position);
			if (unlikely(last >= reserved))
			{
				/* the persisted reservation is used up: renew it first */
				snowid_highwater_renew(shared, layout, last_tick, wall_tick, true);
				old = pg_atomic_read_u64(&shared->next_position);
				continue;
			}
			if (pg_atomic_compare_exchange_u64(&shared->next_position,
											   &old, last + 1))
				break;
			continue;			/* old now holds the current value */
		}

		/* Too far ahead of the clock: wait for it, within max_wait. */
		if (wait_start == 0)
		{
			wait_start = snowid_clock_monotonic_us();
			anchor = first;
			anchored = true;
		}
		if (lead_us - max_lead_us >
			max_wait_us - (snowid_clock_monotonic_us() - wait_start))
			snowid_clock_behind(shared, layout, last_tick, now, lead_us,
								max_lead_us);
		snowid_clock_sleep(lead_us - max_lead_us);
		old = pg_atomic_read_u64(&shared->next_position);
	}

	/*
	 * Count the ticks this call entered ahead of the wall clock: those after
	 * both the wall tick and the tick of the position before "first" (when
	 * "first" continued the stream rather than starting a fresh tick).
	 */
	lower = wall_tick;
	if (first == old && first > 0)
		lower = Max(lower, (int64) ((first - 1) >> shift));
	snowid_after_claim(shared, layout, reserved, last, lower, wall_tick, n);

	if (unlikely(wait_start != 0))
	{
		pg_atomic_fetch_add_u64(&shared->waits, 1);
		pg_atomic_fetch_add_u64(&shared->wait_us,
								snowid_clock_monotonic_us() - wait_start);
	}
	return first;
}

/*
 * Refuse a batch that could never be served: more positions than the ticks
 * within max_lead_us + max_wait of the current one hold; and, for a role
 * that is not a superuser (bounded), more than snowid.max_batch IDs.
 */
static void
snowid_check_batch(const SnowidLayout *layout, int32 n, bool bounded,
				   int64 max_lead_us)
{
	int64		reachable_ticks = (max_lead_us +
								   (int64) snowid_max_wait_ms * 1000) /
		layout->tick_us + 1;
	int64		reachable = reachable_ticks << layout->sequence_bits;

	if (n < 1 || n > SNOWID_MAX_BATCH)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("snowid batch size must be between 1 and %d", SNOWID_MAX_BATCH),
				 errdetail("The requested size was %d.", n)));
	if (bounded && n > snowid_max_batch)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("snowid batch of %d IDs exceeds snowid.max_batch (%d)",
						n, snowid_max_batch),
				 errdetail("snowid.max_batch bounds how far one call by a role that is not a superuser can move this server's IDs ahead of the clock, and so how long it can make other callers wait."),
				 errhint("Ask for at most %d IDs per call, or have a superuser raise snowid.max_batch for this role with ALTER ROLE ... SET snowid.max_batch.",
						 snowid_max_batch)));
	if (n > reachable)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("snowid batch of %d IDs is larger than the layout can issue in time", n),
				 bounded ?
				 errdetail("With %d ms ticks of " INT64_FORMAT " IDs, half of snowid.max_lead (the lead of a batch of a role that is not a superuser, %.3f ms) and snowid.max_wait = %d ms allow at most " INT64_FORMAT " IDs at once.",
						   (int) (layout->tick_us / 1000),
						   (int64) 1 << layout->sequence_bits,
						   (double) max_lead_us / 1000.0, snowid_max_wait_ms,
						   reachable) :
				 errdetail("With %d ms ticks of " INT64_FORMAT " IDs, snowid.max_lead = %d ms and snowid.max_wait = %d ms allow at most " INT64_FORMAT " IDs at once.",
						   (int) (layout->tick_us / 1000),
						   (int64) 1 << layout->sequence_bits,
						   snowid_max_lead_ms, snowid_max_wait_ms, reachable),
				 errhint("Ask for fewer IDs per call, or raise snowid.max_lead.")));
}

int64
snowid_next_id(void)
{
	SnowidShared *shared = snowid_require_shared();
	const SnowidLayout *layout = &snowid_active_layout;
	int32		node;
	uint64		position = snowid_reserve_gated(shared, layout, 1, 0, &node);

	return snowid_id_from_position(layout, position, node);
}

Datum
snowid_next(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(snowid_next_id());
}

typedef struct SnowidBatch
{
	uint64		next;			/* next position to return */
	int32		node;			/* the node they were reserved under */
} SnowidBatch;

Datum
snowid_next_batch(PG_FUNCTION_ARGS)
{
	FuncCallContext *funcctx;
	SnowidBatch *batch;

	if (SRF_IS_FIRSTCALL())
	{
		SnowidShared *shared = snowid_require_shared();
		const SnowidLayout *layout = &snowid_active_layout;
		int32		n = PG_GETARG_INT32(0);
		bool		bounded = !superuser();
		int64		max_lead_us = (int64) snowid_max_lead_ms * 1000;
		MemoryContext oldcontext;

		/* the other half of the lead stays for single calls */
		if (bounded)
			max_lead_us /= 2;
		(void) snowid_require_gate(shared, layout);
		snowid_check_batch(layout, n, bounded, max_lead_us);

		funcctx = SRF_FIRSTCALL_INIT();
		oldcontext = MemoryContextSwitchTo(funcctx->multi_call_memory_ctx);
		batch = (SnowidBatch *) palloc(sizeof(SnowidBatch));
		MemoryContextSwitchTo(oldcontext);

		batch->next = snowid_reserve_gated(shared, layout, (uint32) n,
										   max_lead_us, &batch->node);
		funcctx->max_calls = n;
		funcctx->user_fctx = batch;
	}

	funcctx = SRF_PERCALL_SETUP();
	batch = (SnowidBatch *) funcctx->user_fctx;
	if (funcctx->call_cntr < funcctx->max_calls)
	{
		int64		id = snowid_id_from_position(&snowid_active_layout,
												 batch->next++,
												 batch->node);

		SRF_RETURN_NEXT(funcctx, Int64GetDatum(id));
	}
	SRF_RETURN_DONE(funcctx);
}
/*
 * The node came from another start: never issue at or below what its
 * previous holder may have issued.  floor_id bounds every ID it issued;
 * floor_until is when its lease ended (it issued nothing of a tick
 * starting more than max_lead after that).
 */
void
snowid_generator_raise_floor(int node_id, int64 floor_id, bool has_floor_id,
							TimestampTz floor_until)
{
	const SnowidLayout *layout = &snowid_active_layout;
	uint64		position = 0;
	uint64		old;

	if (has_floor_id && floor_id > 0)
		position = snowid_position_at_or_above(layout, node_id, (uint64) floor_id);
	if (floor_until > 0)
	{
		TimestampTz ts = floor_until + (int64) snowid_max_lead_ms * 1000;
		int64		tick = snowid_tick_of(layout, ts - 1) + 1;
		uint64		p;

		if (tick > snowid_max_tick(layout))
			p = snowid_position_end(layout);
		else
			p = tick <= 0 ? 0 : (uint64) tick << layout->sequence_bits;
		position = Max(position, p);
	}
	old = pg_atomic_read_u64(&snowid_shared->next_position);
	while (old < position &&
		   !pg_atomic_compare_exchange_u64(&snowid_shared->next_position,
										   &old, position))
		;
	if (position > old)
		ereport(LOG,
				(errmsg("snowid continues above the IDs the previous holder of node %d may have issued",
						node_id),
				 position >= snowid_position_end(layout) ?
				 errdetail("The layout has no ID left above them.") :
				 errdetail("The next ID will be " INT64_FORMAT " or above.",
						   snowid_id_from_position(layout, position, node_id))));
}

/* ---- the stream's start and floors ---- */

/*
 * At a new shared-memory segment, in the postmaster: start the stream at
 * the persisted high-water mark.
 */
void
snowid_generator_start(void)
{
	uint64		position = snowid_highwater_load(snowid_shared);

	pg_atomic_write_u64(&snowid_shared->next_position, position);
}

/* Replay of a bound (rmgr.c): never issue below position. */
void
snowid_generator_raise(uint64 position)
{
	uint64		old = pg_atomic_read_u64(&snowid_shared->next_position);

	while (old < position &&
		   !pg_atomic_compare_exchange_u64(&snowid_shared->next_position,
										   &old, position))
		;
}
