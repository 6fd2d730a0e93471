/*-------------------------------------------------------------------------
 *
 * counter_fast.h
 *	  Counters per key, mode fast: values from blocks cached in shared
 *	  memory, each block reserved in the key's row by a server process
 *	  (counter_fast.c).
 *	  Calls counter_cache.c and counter_row.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_COUNTER_FAST_H
#define SNOWID_COUNTER_FAST_H

#include "counter.h"

extern int64 snowid_counter_fast_next(const SnowidCounter *c, text *key);
extern int64 snowid_counter_fast_align(const SnowidCounter *c, int64 next);
extern bool snowid_counter_fast_last(const SnowidCounter *c, text *key,
									 int64 *last);
extern void snowid_counter_fast_forget(const SnowidCounter *c, text *key,
									   int64 floor);

#endif							/* SNOWID_COUNTER_FAST_H */
