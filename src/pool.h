/*-------------------------------------------------------------------------
 *
 * pool.h
 *	  Pools on the member side: the ranges of registry pools this server
 *	  holds, shared by every database, persisted before any value of them
 *	  is handed out.
 *
 * The subsystem's files, by phase, each calling only those above it here:
 * pool_file.c holds the rule for pool names and the text of the pools'
 * file ($PGDATA/snowid.pools: the line of a pool, its checks, the reading
 * of the file), touching no shared memory; pool_store.c owns the shared
 * holdings (set up at start), the load and writes of their file and their
 * WAL record (redo, desc); pool_users.c keeps which databases use each
 * pool and frees the slots no one uses; pool_take.c hands values out to
 * takers (ticket_slot.c, snowid_pool_take); pool_grant.c is the worker's
 * side (pool_worker.c asks the registry for ranges, reports what is held
 * and gives unused tails back at shutdown); pool_sql.c holds the SQL
 * functions that show and take them.  Each file that others call declares
 * its functions in a header of its own name (pool_file.h, pool_store.h,
 * pool_users.h, pool_take.h, pool_grant.h, pool_worker.h); this one holds
 * what they share: the constants, the structs of a pool's state, its slot
 * and the shared holdings, and the pure helpers.
 *
 * Each pool this server draws from has a slot (SNOWID_POOL_MAX of them;
 * pool_users.c frees the slots no one uses).  A slot holds up to
 * SNOWID_POOL_RANGES ranges as the registry granted them; values are handed
 * out from the first, in order, from the offset next_off.  What the slot
 * would persist is its SnowidPoolState: the pool's facts (type, start,
 * maximum), the ranges, a floor (no value below it is ever handed out:
 * snowid_pool_skip), and durable_off, the offset in the first range below
 * which values may have been handed out (pool_store.c says how it is made
 * durable).
 *
 * Locks: table_lock (exclusive) allocates and frees slots; each slot's
 * lock protects everything in it; file_lock serialises persists (the
 * change count gen_hwm, the WAL record and the write of the file) and
 * protects file_state (the last persisted state of every slot, which a
 * write of the file needs).  Order: table_lock, slot lock, file_lock.  The
 * WAL flush and the file write happen under the slot lock, so takers of
 * one pool wait for a persist while it runs (once per chunk).
 *
 * A slot's index is reused once pool_users.c has freed it: holders of an
 * index (ticket slots, backend caches) check that it still names their
 * pool (snowid_pool_resolve) before they take.
 *
 * Writers.  SnowidPoolShared: pool_store.c alone (at start, and nused as
 * it fills a slot: snowid_pool_slot_from_state), but worker_latch
 * (pool_grant.c) and wake (set by pool_take.c and pool_sql.c, cleared by
 * pool_grant.c).  A slot's st is replaced, under its lock, only by a state
 * snowid_pool_persist (pool_store.c) made durable first, or by a load or
 * replay (pool_store.c).  next_off, status and demand move under the lock
 * in pool_take.c (taking), pool_grant.c (grants, answers, close) and
 * pool_sql.c (skip, untake); request, nrequests, detail, failures and the
 * rate fields are pool_grant.c's; taken is pool_take.c's; touched is set
 * by pool_take.c (attach); the users (st.ndbs, st.dbs, st.flags) and
 * users_changed are pool_users.c's.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_POOL_H
#define SNOWID_POOL_H

#include <math.h>

#include "datatype/timestamp.h"
#include "port/atomics.h"
#include "storage/latch.h"
#include "storage/lwlock.h"

#define SNOWID_POOL_MAX 16		/* pools one server can draw from */
#define SNOWID_POOL_RANGES 4	/* ranges in hand per pool */
#define SNOWID_POOL_NAME_LEN 64
#define SNOWID_POOL_MIN_RANGE 10000	/* smallest range asked for */
#define SNOWID_POOL_REQUEST_LEN 96
#define SNOWID_POOL_DETAIL_LEN 256
#define SNOWID_POOL_DBS 16		/* databases listed as users of a pool */
#define SNOWID_POOL_IDLE_S 15	/* an unused slot is freed after this long */
#define SNOWID_POOL_RATE_HALF_LIFE_S 60.0	/* of the smoothed rate */
/* the pool file (pool_file.c says its format) and its magic lines */
#define SNOWID_POOLS_FILE "snowid.pools"
#define SNOWID_POOLS_TMP "snowid.pools.tmp"
#define SNOWID_POOLS_MAGIC "snowid-pools-2"
#define SNOWID_POOLS_MAGIC_1_4 "snowid-pools-1"
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
	SNOWID_POOL_CLOSED,			/* shutting down: nothing more is handed out */
	SNOWID_POOL_UNUSABLE		/* its facts or a grant cannot serve: not asked */
} SnowidPoolStatus;

/* What the worker should ask the registry for, copied under the lock. */
typedef struct SnowidPoolNeed
{
	char		name[SNOWID_POOL_NAME_LEN];
	bool		need;			/* ask for a range (or, want = 0, the facts) */
	int64		want;			/* values to ask for */
	char		request[SNOWID_POOL_REQUEST_LEN];	/* idempotency key */
	int			nheld;
	SnowidPoolRange held[SNOWID_POOL_RANGES + 1];	/* as granted, for the report,
													 * and the floor's mark */
} SnowidPoolNeed;

/* SnowidPoolState.flags */
#define SNOWID_POOL_FREED 0x01	/* this record frees the pool's slot */
#define SNOWID_POOL_UPSTREAM 0x02	/* the registry's upstream pool draws on it */
#define SNOWID_POOL_DBS_UNKNOWN 0x04	/* written by 1.4: users not known */
#define SNOWID_POOL_DBS_MANY 0x08	/* used by more databases than listed */

/*
 * What is persisted of one pool: the WAL record and a line of the file.
 * gen is the change count of all pools, raised by every persist: a record
 * whose gen the file had reached when it was loaded is in the file.
 * Records written by 1.4 end before flags (SNOWID_POOL_STATE_LEN_1_4).
 */
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
	uint32		flags;			/* SNOWID_POOL_FREED, ... */
	int32		ndbs;
	Oid			dbs[SNOWID_POOL_DBS];	/* databases whose tickets name it */
} SnowidPoolState;

#define SNOWID_POOL_STATE_LEN_1_4 offsetof(SnowidPoolState, flags)

/*
 * A pool's boot mark: the last value this server may have handed out of it
 * in this boot of its host (below a range's durable_off, or below its
 * floor), kept in the boot record (pool_store.c), never lowered.
 */
#define SNOWID_POOL_MARKS (SNOWID_POOL_MAX * 4)

typedef struct SnowidPoolMark
{
	char		name[SNOWID_POOL_NAME_LEN];
	int64		last;
} SnowidPoolMark;

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
	uint64		failures;		/* answers that granted nothing usable */
	TimestampTz touched;		/* last attach */
	TimestampTz unknown_since;	/* the registry said "unknown" from then on */
	bool		users_changed;	/* users differ from what was persisted */
} SnowidPoolSlot;

typedef struct SnowidPoolShared
{
	LWLock	   *table_lock;
	LWLock	   *file_lock;
	int			nused;			/* slots nused and above are free */
	Latch	   *worker_latch;
	pg_atomic_uint32 wake;		/* a taker woke the worker: serve the pools */
	bool		from_backup;	/* this start replays a base backup's WAL */
	TimestampTz key_epoch;		/* when this shared memory was set up */
	pg_atomic_uint64 request_count;	/* request keys of every slot */
	uint64		gen_hwm;		/* highest change count; under file_lock */
	uint64		loaded_hwm;		/* records up to it are in the file */
	int			nmarks;			/* boot marks; under file_lock */
	bool		marks_full;		/* a mark found no room (said once) */
	SnowidPoolMark marks[SNOWID_POOL_MARKS];
	SnowidPoolState file_state[SNOWID_POOL_MAX];	/* under file_lock */
	bool		file_used[SNOWID_POOL_MAX];
	SnowidPoolSlot slots[SNOWID_POOL_MAX];
} SnowidPoolShared;

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

/* Can a pool starting at `start` serve?  No value below 0 is handed out. */
static inline bool
snowid_pool_start_usable(int64 start)
{
	return start >= 0;
}

/*
 * An exponentially smoothed rate: `rate` moved towards `seen` (values per
 * second over the last `secs` seconds) by the weight of `secs` at a
 * half-life of SNOWID_POOL_RATE_HALF_LIFE_S.  Pure.
 */
static inline double
snowid_rate_smooth(double rate, double seen, double secs)
{
	double		keep = exp2(-secs / SNOWID_POOL_RATE_HALF_LIFE_S);

	return seen + (rate - seen) * keep;
}

#endif							/* SNOWID_POOL_H */
