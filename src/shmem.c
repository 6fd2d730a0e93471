/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  The instance-wide snowid state in shared memory.
 *
 * One SnowidShared per server, requested in shmem_request_hook and set up
 * in shmem_startup_hook (under AddinShmemInitLock, only when the segment is
 * new, which includes the re-initialisation after a backend crash): the
 * generator starts at the persisted high-water mark (highwater.c).  The
 * generator advances next_position with compare-and-swap and the statistics
 * with fetch-add, lock-free; only the rare renewal of the persisted
 * reservation takes renew_lock.
 *
 * The ticket slots (ticket.c) are requested and set up from the same hooks.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pool.h"
#include "registry.h"
#include "snowid.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

SnowidShared *snowid_shared = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
snowid_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(sizeof(SnowidShared));
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
	snowid_shared = ShmemInitStruct("snowid", sizeof(SnowidShared), &found);
	if (!found)
	{
		pg_atomic_init_u64(&snowid_shared->next_position, 0);
		pg_atomic_init_u64(&snowid_shared->reserved_position, 0);
		pg_atomic_init_u64(&snowid_shared->clock_seen, 0);
		pg_atomic_init_u64(&snowid_shared->reserved_until, 0);
		snowid_shared->renew_lock = &(GetNamedLWLockTranche("snowid"))->lock;
		pg_atomic_init_u64(&snowid_shared->ids_issued, 0);
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

/* The shared state, or an error saying how to get it. */
SnowidShared *
snowid_require_shared(void)
{
	if (unlikely(snowid_shared == NULL))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowid must be loaded via shared_preload_libraries"),
				 errdetail("Generating IDs needs snowid's shared memory; the decoding functions work without it."),
				 errhint("Add snowid to shared_preload_libraries in postgresql.conf and restart the server.")));
	return snowid_shared;
}
