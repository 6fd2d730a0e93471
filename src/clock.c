/*-------------------------------------------------------------------------
 *
 * clock.c
 *	  The wall clock snowid reads, and how a caller waits for it.
 *
 * The wall clock is CLOCK_REALTIME, read once per generated ID (a vDSO
 * call, no system call).  Waits are measured on CLOCK_MONOTONIC, which
 * clock steps do not move, and are spent in short interruptible sleeps
 * that show up in pg_stat_activity as wait event Extension.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <time.h>

#include "miscadmin.h"
#include "snowid.h"
#include "utils/wait_event.h"

/* Longest single sleep: bounds how late a cancel or a clock fix is seen. */
#define SNOWID_SLEEP_SLICE_US 10000

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
 * Sleep for at most us microseconds (one slice at most), then serve any
 * pending interrupt: a cancel or statement_timeout ends the wait with the
 * usual error.
 */
void
snowid_clock_sleep(int64 us)
{
	if (us > SNOWID_SLEEP_SLICE_US)
		us = SNOWID_SLEEP_SLICE_US;
	if (us < 1)
		us = 1;
	pgstat_report_wait_start(PG_WAIT_EXTENSION);
	pg_usleep((long) us);
	pgstat_report_wait_end();
	CHECK_FOR_INTERRUPTS();
}
