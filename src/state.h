/*-------------------------------------------------------------------------
 *
 * state.h
 *	  The generator's state in shared memory, SnowidShared (state.c): the
 *	  stream's next position, the persisted bound, the gate, statistics.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_STATE_H
#define SNOWID_STATE_H

#include "compat.h"
#include "port/atomics.h"
#include "storage/lwlock.h"

/*
 * What one backend (its PGPROC number) issued, summed on read: only its
 * owner writes it, with plain stores, so counting costs no locked
 * instruction and no cache line shared with other backends.
 */
typedef union SnowidBackendCount
{
	struct
	{
		pg_atomic_uint64 ids_issued;
		pg_atomic_uint64 last_position; /* of the last ID, if ids_issued > 0 */
	}			c;
	char		pad[PG_CACHE_LINE_SIZE];
} SnowidBackendCount;

/*
 * Who writes what (every other file only reads):
 *	next_position, clock_seen, check_first, the statistics but renewals,
 *		and the per-backend counts: generator.c (next_position's start and
 *		floors: generator_floor.c)
 *	reserved_position, reserved_until, renewals (under renew_lock):
 *		highwater.c
 *	gate: lease.c (snowid_gate_open/close/off, called by the registry
 *		worker and at start)
 *	renew_lock, nbackend_counts: state.c, once, at set-up
 */
typedef struct SnowidShared
{
	/*
	 * The generator: the first position not yet claimed (fetch-add by every
	 * caller of snowid_next(), compare-and-swap for a jump to a fresh tick
	 * and for batches), and the bound below which positions may be issued.
	 * reserved_position is read right after the claim, from the line the
	 * claim just took; nothing else lives on this line.
	 */
	pg_atomic_uint64 next_position;
	pg_atomic_uint64 reserved_position;
	char		pad[PG_CACHE_LINE_SIZE - 2 * sizeof(pg_atomic_uint64)];

	/* latest clock reading that started a fresh tick (for regressions) */
	pg_atomic_uint64 clock_seen;
	char		pad2[PG_CACHE_LINE_SIZE - sizeof(pg_atomic_uint64)];

	/*
	 * Nonzero from a refusal of snowid_next() until the stream is back at
	 * the clock: meanwhile single calls check before they claim, as batches
	 * do.  Read by every caller before it claims; on a line of its own,
	 * written only when that changes.
	 */
	pg_atomic_uint32 check_first;
	char		pad3[PG_CACHE_LINE_SIZE - sizeof(pg_atomic_uint32)];

	/*
	 * The gate (lease.c): low half 0 while this server may not issue,
	 * else its node ID + 1; high half a count of changes.  Read by every
	 * caller, before and after it claims; written only when the lease
	 * state changes.
	 */
	pg_atomic_uint64 gate;
	/* the persisted bound as a timestamptz, 0 if none; under renew_lock */
	pg_atomic_uint64 reserved_until;
	LWLock	   *renew_lock;		/* serialises renewals of the reservation */

	/* statistics (rare events; IDs issued are counted per backend below) */
	pg_atomic_uint64 ids_issued_other;	/* by a process without a slot */
	pg_atomic_uint64 last_position_other;	/* its highest, if any issued */
	pg_atomic_uint64 ticks_borrowed;
	pg_atomic_uint64 waits;
	pg_atomic_uint64 wait_us;
	pg_atomic_uint64 clock_errors;
	pg_atomic_uint64 regressions;
	pg_atomic_uint64 largest_regression_us;
	pg_atomic_uint64 renewals;

	/* IDs issued, one count per PGPROC number, each on its own line */
	int			nbackend_counts;
	SnowidBackendCount backend_counts[FLEXIBLE_ARRAY_MEMBER];
} SnowidShared;

extern SnowidShared *snowid_shared;

extern void snowid_state_shmem_request(void);
extern bool snowid_state_shmem_startup(void);
snowid_noreturn extern void snowid_shared_missing(void);

/* The shared state, or an error saying how to get it. */
static inline SnowidShared *
snowid_require_shared(void)
{
	if (unlikely(snowid_shared == NULL))
		snowid_shared_missing();
	return snowid_shared;
}
extern uint64 snowid_ids_issued(SnowidShared *shared);
extern bool snowid_last_issued(SnowidShared *shared, uint64 *position);

/* the node ID a gate word lets callers issue under, -1 if it is shut */
#define SNOWID_GATE_NODE(gate) ((int32) ((gate) & UINT64CONST(0xFFFFFFFF)) - 1)

#endif							/* SNOWID_STATE_H */
