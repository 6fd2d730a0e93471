/*-------------------------------------------------------------------------
 *
 * pool.h
 *	  Pools on the member side: the ranges of registry pools this server
 *	  holds, shared by every database, persisted before any value of them
 *	  is handed out.
 *
 * The subsystem's files, by phase, each calling only those above it here:
 * pool_store.c owns the shared holdings (set up at start), their file
 * ($PGDATA/snowid.pools) and their WAL record (redo, desc); pool_take.c
 * hands values out to takers (ticket_slot.c, snowid_pool_take);
 * pool_grant.c is the worker's side (pool_worker.c asks the registry for
 * ranges, reports what is held and gives unused tails back at shutdown);
 * pool_sql.c holds the SQL functions that show and take them.
 *
 * Each pool this server draws from has a slot (SNOWID_POOL_MAX of them,
 * never freed while the server runs).  A slot holds up to
 * SNOWID_POOL_RANGES ranges as the registry granted them; values are handed
 * out from the first, in order, from the offset next_off.  What the slot
 * would persist is its SnowidPoolState: the pool's facts (type, start,
 * maximum), the ranges, a floor (no value below it is ever handed out:
 * snowid_pool_skip), and durable_off, the offset in the first range below
 * which values may have been handed out (pool_store.c says how it is made
 * durable).
 *
 * Locks: table_lock (exclusive) allocates slots, which are never freed;
 * each slot's lock protects everything in it; file_lock serialises writes
 * of the file and protects file_state (the last persisted state of every
 * slot, which a write of the file needs).  Order: slot lock, then
 * file_lock.  The WAL flush and the file write happen under the slot lock,
 * so takers of one pool wait for a persist while it runs (once per chunk).
 *
 * Writers.  SnowidPoolShared: pool_store.c alone (at start, and nused as
 * it fills a slot: snowid_pool_slot_from_state), but worker_latch
 * (pool_grant.c) and wake (set by pool_take.c and pool_sql.c, cleared by
 * pool_grant.c).  A slot's st is replaced, under its lock, only by a state
 * snowid_pool_persist (pool_store.c) made durable first, or by a load or
 * replay (pool_store.c).  next_off, status and demand move under the lock
 * in pool_take.c (taking), pool_grant.c (grants, answers, close) and
 * pool_sql.c (skip, untake); request, nrequests, detail and the rate
 * fields are pool_grant.c's; taken is pool_take.c's.
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
#include "storage/lwlock.h"

#define SNOWID_POOL_MAX 16		/* pools one server can draw from */
#define SNOWID_POOL_RANGES 4	/* ranges in hand per pool */
#define SNOWID_POOL_NAME_LEN 64
#define SNOWID_POOL_MIN_RANGE 10000	/* smallest range asked for */
#define SNOWID_POOL_REQUEST_LEN 96
#define SNOWID_POOL_DETAIL_LEN 256
/* marks a start that replays a copied server's WAL: see snowid_pool_load */
#define SNOWID_POOLS_COPIED "snowid.pools.copied"

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


/* What is persisted of one pool: the WAL record and a line of the file. */
typedef struct SnowidPoolState
{
	char		name[SNOWID_POOL_NAME_LEN];
	uint64		gen;			/* change count, raised by every persist */
	Oid			typid;			/* INT4OID, INT8OID; InvalidOid: no facts */
	int32		nranges;
	int64		start;
	int64		maxvalue;
	int64		floor;			/* nothing below it is handed out */
	uint64		durable_off;	/* offsets of ranges[0] below may be used */
	SnowidPoolRange ranges[SNOWID_POOL_RANGES];
} SnowidPoolState;

typedef struct SnowidPoolSlot
{
	LWLock	   *lock;
	bool		in_use;			/* also under table_lock */
	SnowidPoolState st;			/* as persisted, but for dropped ranges */
	uint64		next_off;		/* next offset of ranges[0] to hand out */
	SnowidPoolStatus status;
	bool		demand;			/* someone wants values: ask for ranges */
	char		request[SNOWID_POOL_REQUEST_LEN];	/* outstanding, "" if none */
	uint64		nrequests;
	char		detail[SNOWID_POOL_DETAIL_LEN];
	uint64		taken;			/* values handed out since start */
	uint64		rate_taken;		/* taken at rate_at */
	TimestampTz rate_at;
	double		rate;			/* values per second, smoothed */
} SnowidPoolSlot;

typedef struct SnowidPoolShared
{
	LWLock	   *table_lock;
	LWLock	   *file_lock;
	int			nused;			/* slots 0 .. nused - 1 are in use */
	Latch	   *worker_latch;
	pg_atomic_uint32 wake;		/* a taker woke the worker: serve the pools */
	bool		from_backup;	/* this start replays a base backup's WAL */
	TimestampTz key_epoch;		/* when this shared memory was set up */
	SnowidPoolState file_state[SNOWID_POOL_MAX];	/* under file_lock */
	bool		file_used[SNOWID_POOL_MAX];
	SnowidPoolSlot slots[SNOWID_POOL_MAX];
} SnowidPoolShared;

extern SnowidPoolShared *snowid_pool_shared;

/* Number of values of a range; ranges of 2^64 values are refused at grant. */
static inline uint64
snowid_range_size(const SnowidPoolRange *r)
{
	return (uint64) r->last - (uint64) r->first + 1;
}

static inline int64
snowid_range_value(const SnowidPoolRange *r, uint64 off)
{
	return (int64) ((uint64) r->first + off);
}

/* pool_store.c: setup (the shmem hooks call these) */
extern Size snowid_pool_shmem_size(void);
extern void snowid_pool_shmem_request(void);
extern void snowid_pool_shmem_startup(void);	/* loads snowid.pools */

/*
 * pool_store.c: for the other pool files.  settle: drop used-up ranges and
 * what lies below the floor; wants: the slot wants the worker to fetch a
 * range (slot lock held); persist: WAL, flushed (and acknowledged by
 * synchronous standbys), then the file, for slot idx whose lock the caller
 * holds -- the _releasing form releases that lock on an error, for the
 * worker; slot_from_state: a free slot for a state, table_lock held.
 */
extern bool snowid_pool_name_ok(const char *name);
extern void snowid_state_settle(SnowidPoolState *st, uint64 *next_off);
extern bool snowid_pool_wants(SnowidPoolSlot *slot);
extern int	snowid_pool_slots(void);	/* highest slot index in use + 1 */
extern SnowidPoolShared *snowid_pool_require_shared(void);
extern int	snowid_pool_slot_from_state(const SnowidPoolState *st);
extern void snowid_pool_persist(int idx, SnowidPoolState *st);
extern void snowid_pool_persist_releasing(int idx, SnowidPoolState *st);

/*
 * pool_take.c: for takers (tickets, snowid_pool_take).
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
/* for pool_sql.c */
extern void snowid_pool_wake_worker(void);
extern void snowid_pool_refuse_standby(const char *name);
extern int64 snowid_pool_in_hand_locked(SnowidPoolSlot *slot);	/* lock held */

/*
 * pool_grant.c: for the worker.
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

/* pool_store.c: the WAL record XLOG_SNOWID_POOL of snowid's rmgr */
extern void snowid_pool_redo(XLogReaderState *record);
extern void snowid_pool_desc(StringInfo buf, XLogReaderState *record);

#endif							/* SNOWID_POOL_H */
