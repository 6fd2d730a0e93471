/*-------------------------------------------------------------------------
 *
 * counter_cache.h
 *	  Counters per key, mode fast: the keys cached in shared memory and the
 *	  blocks of values they hand out (counter_cache.c).  Calls nothing of
 *	  the other counter files: what a block is and where it comes from is
 *	  counter_fast.c's.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_COUNTER_CACHE_H
#define SNOWID_COUNTER_CACHE_H

#include "counter.h"

/* A key of a counter, as the cache knows it: zeroed, then filled. */
typedef struct SnowidCounterTag
{
	Oid			dbid;
	Oid			relid;
	int64		stamp;
	int32		len;
	char		key[SNOWID_COUNTER_KEY_MAX];
} SnowidCounterTag;

typedef enum
{
	COUNTER_TAKEN,				/* *value is the key's next value */
	COUNTER_WAIT,				/* wait for *xid, which moves the key's row */
	COUNTER_BUSY,				/* another backend reserves: sleep, again */
	COUNTER_MOVED,				/* this transaction moved the key's row */
	COUNTER_RESERVE				/* reserve *n values (none cached or left) */
} SnowidCounterTake;

extern void snowid_counter_shmem_request(void);
extern void snowid_counter_shmem_startup(void);
extern void snowid_counter_require_shared(void);
extern SnowidCounterTake snowid_counter_cache_take(const SnowidCounterTag *tag,
												   int64 block, int64 *value,
												   TransactionId *xid,
												   int64 *n);
extern void snowid_counter_cache_sleep(void);
extern void snowid_counter_cache_awake(void);
extern int64 snowid_counter_cache_install(const SnowidCounterTag *tag,
										  int64 first, int64 last, int64 n);
extern void snowid_counter_cache_unreserve(const SnowidCounterTag *tag);
extern void snowid_counter_cache_forget(const SnowidCounterTag *tag,
										int64 floor);
extern bool snowid_counter_cache_last(const SnowidCounterTag *tag,
									  int64 *last);
extern void snowid_counter_cache_counts(int64 *keys, int64 *capacity,
										int64 *evictions);

#endif							/* SNOWID_COUNTER_CACHE_H */
