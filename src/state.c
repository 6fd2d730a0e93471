/*-------------------------------------------------------------------------
 *
 * state.c
 *	  The generator's instance-wide state in shared memory, SnowidShared:
 *	  set up here, read through the functions here.
 *
 * One SnowidShared per server, requested from snowid.c's shmem_request_hook
 * and set up from its shmem_startup_hook (under AddinShmemInitLock, only
 * when the segment is new, which includes the re-initialisation after a
 * backend crash); the generator then starts at the persisted high-water
 * mark (highwater.c).  The generator advances next_position with fetch-add
 * (compare-and-swap for jumps and batches) and the rare statistics with
 * fetch-add, lock-free; only the rare renewal of the persisted reservation
 * takes renew_lock.  IDs issued are counted per backend: each process owns
 * the slot of its PGPROC number and writes it with a plain store;
 * snowid_stats() sums them.  state.h says who writes which field.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/twophase.h"
#include "miscadmin.h"
#include "state.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"

SnowidShared *snowid_shared = NULL;

/* One count per PGPROC: backends, auxiliary processes, prepared xacts. */
static int
snowid_backend_count_slots(void)
{
	return MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts;
}

static Size
snowid_shared_size(void)
{
	return add_size(offsetof(SnowidShared, backend_counts),
					mul_size(snowid_backend_count_slots(),
							 sizeof(SnowidBackendCount)));
}

/* Space and the renewal lock of the generator's state. */
void
snowid_state_shmem_request(void)
{
	RequestAddinShmemSpace(snowid_shared_size());
	RequestNamedLWLockTranche("snowid", 1);
}

/*
 * Set up SnowidShared, under AddinShmemInitLock; true if it existed
 * already (a backend attaching, not a new segment).
 */
bool
snowid_state_shmem_startup(void)
{
	bool		found;

	snowid_shared = ShmemInitStruct("snowid", snowid_shared_size(), &found);
	if (!found)
	{
		pg_atomic_init_u64(&snowid_shared->next_position, 0);
		pg_atomic_init_u64(&snowid_shared->reserved_position, 0);
		pg_atomic_init_u64(&snowid_shared->clock_seen, 0);
		pg_atomic_init_u32(&snowid_shared->check_first, 0);
		pg_atomic_init_u64(&snowid_shared->reserved_until, 0);
		snowid_shared->renew_lock = &(GetNamedLWLockTranche("snowid"))->lock;
		pg_atomic_init_u64(&snowid_shared->ids_issued_other, 0);
		pg_atomic_init_u64(&snowid_shared->last_position_other, 0);
		snowid_shared->nbackend_counts = snowid_backend_count_slots();
		for (int i = 0; i < snowid_shared->nbackend_counts; i++)
		{
			pg_atomic_init_u64(&snowid_shared->backend_counts[i].c.ids_issued, 0);
			pg_atomic_init_u64(&snowid_shared->backend_counts[i].c.last_position, 0);
		}
		pg_atomic_init_u64(&snowid_shared->ticks_borrowed, 0);
		pg_atomic_init_u64(&snowid_shared->waits, 0);
		pg_atomic_init_u64(&snowid_shared->wait_us, 0);
		pg_atomic_init_u64(&snowid_shared->clock_errors, 0);
		pg_atomic_init_u64(&snowid_shared->regressions, 0);
		pg_atomic_init_u64(&snowid_shared->largest_regression_us, 0);
		pg_atomic_init_u64(&snowid_shared->renewals, 0);
		pg_atomic_init_u64(&snowid_shared->gate, 0);
	}
	return found;
}

/* The error of snowid_require_shared() (state.h). */
void
snowid_shared_missing(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("snowid must be loaded via shared_preload_libraries"),
			 errdetail("Generating IDs needs snowid's shared memory; the decoding functions work without it."),
			 errhint("Add snowid to shared_preload_libraries in postgresql.conf and restart the server.")));
	pg_unreachable();
}

/* IDs issued since the shared memory was set up: the sum of the counts. */
uint64
snowid_ids_issued(SnowidShared *shared)
{
	uint64		sum = pg_atomic_read_u64(&shared->ids_issued_other);

	for (int i = 0; i < shared->nbackend_counts; i++)
		sum += pg_atomic_read_u64(&shared->backend_counts[i].c.ids_issued);
	return sum;
}

/*
 * The position of the highest ID issued since the shared memory was set
 * up, the largest of the backends' last ones (positions only grow).  False
 * if none was issued.  Positions claimed and dropped (gaps) are not in it.
 */
bool
snowid_last_issued(SnowidShared *shared, uint64 *position)
{
	bool		any = pg_atomic_read_u64(&shared->ids_issued_other) > 0;

	*position = any ? pg_atomic_read_u64(&shared->last_position_other) : 0;
	for (int i = 0; i < shared->nbackend_counts; i++)
	{
		SnowidBackendCount *b = &shared->backend_counts[i];

		if (pg_atomic_read_u64(&b->c.ids_issued) > 0)
		{
			*position = Max(*position, pg_atomic_read_u64(&b->c.last_position));
			any = true;
		}
	}
	return any;
}
