/*-------------------------------------------------------------------------
 *
 * clock.h
 *	  The wall clock snowid reads, and waiting for it (clock.c).
 *
 * Nothing here touches shared memory or GUCs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_CLOCK_H
#define SNOWID_CLOCK_H

#include "datatype/timestamp.h"

extern TimestampTz snowid_clock_now(void);
extern TimestampTz snowid_clock_now_coarse(void);
extern int64 snowid_clock_coarse_margin_us(void);
extern int64 snowid_clock_monotonic_us(void);
extern void snowid_clock_sleep(int64 us);

#endif							/* SNOWID_CLOCK_H */
