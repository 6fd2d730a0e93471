/*-------------------------------------------------------------------------
 *
 * clock.c
 *	  The wall clock snowid reads, and how a caller waits for it.
 *
 * The wall clock is CLOCK_REALTIME, read once per generated ID (a vDSO
 * call, no system call).  Waits are measured on CLOCK_MONOTONIC, which
 * clock steps do not move, and are spent in short interruptible sleeps
 * that show up in pg_stat_activity as wait event Extension.  Most waits
 * are for the rest of the current tick (a fraction of a millisecond), so on
 * Linux a waiting backend lowers its timer slack from the default 50 us to
 * 1 us, and it wakes SNOWID_WAKE_EARLY_US before the boundary and yields
 * the processor for the rest: waking costs tens of microseconds on a busy or
 * virtual machine, and oversleeping every tick would waste a fifth of the
 * layout's capacity.  A caller thus never spins for more than that sliver.
 *
 * Reading CLOCK_REALTIME costs about 24 ns on a virtual machine (the TSC
 * read dominates), as much as all the rest of snowid_next().  The kernel
 * also keeps CLOCK_REALTIME_COARSE: the time of its last timer interrupt,
 * read from the vDSO page in a few ns.  It never runs ahead of the fine
 * clock and trails it by about one timer period (a few ms, seen up to 7 ms
 * with 4 ms periods on a busy virtual machine).  generator.c uses it only
 * when the stream runs so far ahead of the clock that the exact time cannot
 * change which ID comes next (snowid_clock_coarse_margin_us).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sched.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "clock.h"
#include "miscadmin.h"
#include "utils/wait_event.h"

/* Longest single sleep: bounds how late a cancel or a clock fix is seen. */
#define SNOWID_SLEEP_SLICE_US 10000
/* Wake this much early; a wait shorter than it yields instead of sleeping. */
#define SNOWID_WAKE_EARLY_US 50

/* Trust the coarse clock only this many timer periods (and ms) behind. */
#define SNOWID_COARSE_PERIODS 5
#define SNOWID_COARSE_MARGIN_MIN_US 20000
/* A coarser clock (HZ below 100) is not worth it. */
#define SNOWID_COARSE_PERIOD_MAX_US 10000

/* A reading of a realtime clock as a timestamptz (us since 2000-01-01). */
static inline TimestampTz
snowid_clock_read(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (TimestampTz) ts.tv_sec * USECS_PER_SEC + ts.tv_nsec / 1000 -
		((POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY);
}

/* CLOCK_REALTIME as a timestamptz. */
TimestampTz
snowid_clock_now(void)
{
	return snowid_clock_read(CLOCK_REALTIME);
}

/*
 * CLOCK_REALTIME_COARSE as a timestamptz; never ahead of snowid_clock_now.
 * Only called when snowid_clock_coarse_margin_us() is above 0.
 */
TimestampTz
snowid_clock_now_coarse(void)
{
#ifdef CLOCK_REALTIME_COARSE
	return snowid_clock_read(CLOCK_REALTIME_COARSE);
#else
	return snowid_clock_read(CLOCK_REALTIME);
#endif
}

/*
 * How far ahead of a coarse reading a tick must start before the coarse
 * reading may stand in for the fine one: several timer periods, and at
 * least SNOWID_COARSE_MARGIN_MIN_US.  0 (never) when the coarse clock is
 * missing or its period is too long to be useful.  The caller keeps it.
 */
int64
snowid_clock_coarse_margin_us(void)
{
#ifdef CLOCK_REALTIME_COARSE
	struct timespec res;
	int64		res_us;

	if (clock_getres(CLOCK_REALTIME_COARSE, &res) != 0 || res.tv_sec != 0)
		return 0;
	res_us = (res.tv_nsec + 999) / 1000;
	if (res_us <= 0 || res_us > SNOWID_COARSE_PERIOD_MAX_US)
		return 0;
	return Max(SNOWID_COARSE_PERIODS * res_us, SNOWID_COARSE_MARGIN_MIN_US);
#else
	return 0;
#endif
}

int64
snowid_clock_monotonic_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64) ts.tv_sec * USECS_PER_SEC + ts.tv_nsec / 1000;
}

/*
 * Wait for about us microseconds (one slice at most; the caller re-reads the
 * clock and calls again), then serve any pending interrupt: a cancel or
 * statement_timeout ends the wait with the usual error.
 */
void
snowid_clock_sleep(int64 us)
{
	if (us <= SNOWID_WAKE_EARLY_US)
	{
		sched_yield();
		CHECK_FOR_INTERRUPTS();
		return;
	}
	if (us > SNOWID_SLEEP_SLICE_US)
		us = SNOWID_SLEEP_SLICE_US;
#ifdef PR_SET_TIMERSLACK
	{
		static bool slack_set = false;

		if (!slack_set)
		{
			(void) prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
			slack_set = true;
		}
	}
#endif
	pgstat_report_wait_start(PG_WAIT_EXTENSION);
	pg_usleep((long) (us - SNOWID_WAKE_EARLY_US));
	pgstat_report_wait_end();
	CHECK_FOR_INTERRUPTS();
}
