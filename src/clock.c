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
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sched.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "miscadmin.h"
#include "snowid.h"
#include "utils/wait_event.h"

/* Longest single sleep: bounds how late a cancel or a clock fix is seen. */
#define SNOWID_SLEEP_SLICE_US 10000
/* Wake this much early; a wait shorter than it yields instead of sleeping. */
#define SNOWID_WAKE_EARLY_US 50

/* CLOCK_REALTIME as a timestamptz (microseconds since 2000-01-01). */
TimestampTz
snowid_clock_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (TimestampTz) ts.tv_sec * USECS_PER_SEC + ts.tv_nsec / 1000 -
		((POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY);
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
