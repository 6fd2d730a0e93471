/*-------------------------------------------------------------------------
 *
 * pool.h
 *	  Pools on the member side: the ranges of registry pools this server
 *	  holds, shared by every database, persisted before any value of them
 *	  is handed out.
 *
 * pool.c owns the shared holdings, their file ($PGDATA/snowid.pools), their
 * WAL record and the SQL functions that show and take them; the registry
 * worker (registry_worker.c) asks the registry for ranges, reports what is
 * held and gives unused tails back at shutdown; ticket_slot.c takes blocks
 * of pooled tickets from here.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_POOL_H
#define SNOWID_POOL_H

#include "access/xlogreader.h"
#include "compat.h"
#include "datatype/timestamp.h"
#include "lib/stringinfo.h"
#include "port/atomics.h"
#include "storage/latch.h"

#define SNOWID_POOL_MAX 16		/* pools one server can draw from */
#define SNOWID_POOL_RANGES 4	/* ranges in hand per pool */
#define SNOWID_POOL_NAME_LEN 64
#define SNOWID_POOL_MIN_RANGE 10000	/* smallest range asked for */
#define SNOWID_POOL_REQUEST_LEN 96

typedef struct SnowidPoolRange
{
	int64		first;
	int64		last;
} SnowidPoolRange;

typedef enum SnowidPoolStatus
{
	SNOWID_POOL_WAITING,		/* the registry has not answered yet */
	SNOWID_POOL_OK,				/* facts known; ranges may be in hand */
	SNOWID_POOL_EMPTY,			/* the registry has no values left */
	SNOWID_POOL_UNKNOWN,		/* the registry has no such pool */
	SNOWID_POOL_CLOSED			/* shutting down: nothing more is handed out */
} SnowidPoolStatus;

/* What the worker should ask the registry for, copied under the lock. */
typedef struct SnowidPoolNeed
{
	char		name[SNOWID_POOL_NAME_LEN];
	bool		need;			/* ask for a range (or, want = 0, the facts) */
	int64		want;			/* values to ask for */
	char		request[SNOWID_POOL_REQUEST_LEN];	/* idempotency key */
	int			nheld;
	SnowidPoolRange held[SNOWID_POOL_RANGES];	/* as granted, for the report */
} SnowidPoolNeed;

/* pool.c: setup */
extern Size snowid_pool_shmem_size(void);
extern void snowid_pool_shmem_request(void);
extern void snowid_pool_shmem_startup(void);	/* loads snowid.pools */

/*
 * pool.c: for takers (tickets, snowid_pool_take).
 *
 * attach: the slot of pool `name` (created if new, wakes the worker);
 * wait_facts: wait (interruptibly, up to 10 s) until the registry told
 * type/start (errors 42704 for a pool the registry does not have, 55000 if
 * no answer came).  take: up to `want` consecutive values of the current
 * range (fewer at its end), persisted as used before returning; false if
 * none is in hand (then error_none raises 2200H for an empty pool, 55000
 * otherwise).  Taking past half of the last range in hand wakes the worker.
 * wait: none in hand, wait (interruptibly, up to 10 s, not at all without a
 * registry) until one is, or the pool is empty, unknown or closed; true if
 * that happened.  Taking on a standby is an error (25006).
 */
extern int	snowid_pool_attach(const char *name, bool wait_facts);
extern bool snowid_pool_take(int idx, int64 want, int64 *first, int64 *count);
snowid_noreturn extern void snowid_pool_error_none(int idx);
extern bool snowid_pool_wait(int idx);
extern void snowid_pool_facts(int idx, Oid *typid, int64 *maxvalue,
							  int64 *start);
extern int64 snowid_pool_in_hand(int idx);

/*
 * pool.c: for the worker.
 *
 * need: what to ask for pool idx (false: nothing to ask); rate_want is the
 * runway-sized amount the worker computed; the request key stays the same
 * until granted/answered is called with it (a retry after a lost reply
 * repeats it).  granted: a range (or the same one again: then nothing
 * changes), persisted (WAL + file) before it is usable.  answered: a reply
 * without a range (facts only, empty, unknown).  update_rate: once a
 * heartbeat, the values taken per second of every pool.  close: at
 * shutdown, no more takes; persists the truncation of every range at what
 * was handed out and returns the unused tails (highest first) to give
 * back; kept: the registry refused one back, it is held again.
 */
extern void snowid_pool_set_worker_latch(Latch *latch);
extern bool snowid_pool_wake_pending(void);	/* and clears it */
extern void snowid_pool_note(int idx, const char *detail);
extern void snowid_pool_worker_start(void);
extern int	snowid_pool_slots(void);	/* highest slot index in use + 1 */
extern bool snowid_pool_need(int idx, int64 rate_want, SnowidPoolNeed *need);
extern void snowid_pool_granted(int idx, const char *request, Oid typid,
								int64 maxvalue, int64 start,
								int64 first, int64 last);
extern void snowid_pool_answered(int idx, const char *request,
								 SnowidPoolStatus status, Oid typid,
								 int64 maxvalue, int64 start,
								 const char *detail);
extern void snowid_pool_update_rate(TimestampTz now);
extern double snowid_pool_rate(int idx);
extern int	snowid_pool_close(int idx, SnowidPoolRange *tails);
extern void snowid_pool_kept(int idx, SnowidPoolRange tail);

/* pool.c: the WAL record XLOG_SNOWID_POOL of snowid's rmgr (highwater.c) */
extern void snowid_pool_redo(XLogReaderState *record);
extern void snowid_pool_desc(StringInfo buf, XLogReaderState *record);

#endif							/* SNOWID_POOL_H */
