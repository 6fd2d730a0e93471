/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  The instance-wide snowid state in shared memory.
 *
 * One SnowidShared per server, requested in shmem_request_hook and set up
 * in shmem_startup_hook (under AddinShmemInitLock, only when the segment is
 * new, which includes the re-initialisation after a backend crash): the
 * generator starts at the persisted high-water mark (highwater.c).  The
 * generator advances next_position with fetch-add (compare-and-swap for
 * jumps and batches) and the rare statistics with fetch-add, lock-free;
 * only the rare renewal of the persisted reservation takes renew_lock.
 * IDs issued are counted per backend: each process owns the slot of its
 * PGPROC number and writes it with a plain store; snowid_stats() sums them.
 *
 * The ticket slots (ticket.c) are requested and set up from the same hooks.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/twophase.h"
#include "miscadmin.h"
#include "pool.h"
#include "registry.h"
#include "snowid.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"

SnowidShared *snowid_shared = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

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

static void
snowid_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(snowid_shared_size());
	RequestAddinShmemSpace(snowid_registry_shmem_size());
	RequestNamedLWLockTranche("snowid", 1);
	snowid_ticket_shmem_request();
	snowid_pool_shmem_request();
}

static void
snowid_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	snowid_shared = ShmemInitStruct("snowid", snowid_shared_size(), &found);
	if (!found)
	{
		pg_atomic_init_u64(&snowid_shared->next_position, 0);
		pg_atomic_init_u64(&snowid_shared->reserved_position, 0);
		pg_atomic_init_u64(&snowid_shared->clock_seen, 0);
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
	/* the registry state first: with an assigned node, the load needs it */
	snowid_registry_shmem_startup();
	if (!found)
	{
		snowid_highwater_load(snowid_shared);
	}
	snowid_ticket_shmem_startup();
	snowid_pool_shmem_startup();
	LWLockRelease(AddinShmemInitLock);
}

void
snowid_shmem_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = snowid_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = snowid_shmem_startup;
}

/* The error of snowid_require_shared() (snowid.h). */
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
