/*-------------------------------------------------------------------------
 *
 * snowid.c
 *	  Entry point of the snowid extension: the module magic, the
 *	  shared-memory hooks calling each subsystem that owns a part of it,
 *	  and _PG_init as a flat list of subsystem inits.
 *
 * snowid needs shared memory, so it does its real set-up only when loaded
 * through shared_preload_libraries.  Loaded later (CREATE EXTENSION in a
 * server that does not preload it) it defines only the read-only
 * snowid.library_version: defining
 * PGC_POSTMASTER parameters after start-up is fatal to the session, and
 * reserving the prefix would throw away the configured values the decoders
 * still read.  The functions that need the shared state then fail with a
 * hint (see snowid_require_shared).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "alter_system.h"
#include "fmgr.h"
#include "generator_floor.h"
#include "guc.h"
#include "lease.h"
#include "lease_file.h"
#include "miscadmin.h"
#include "pool_store.h"
#include "registry_server.h"
#include "registry_worker.h"
#include "rmgr.h"
#include "state.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "counter_cache.h"
#include "ticket_hooks.h"
#include "ticket_slot.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
snowid_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	snowid_state_shmem_request();
	RequestAddinShmemSpace(snowid_registry_shmem_size());
	RequestAddinShmemSpace(snowid_server_shmem_size());
	snowid_ticket_shmem_request();
	snowid_pool_shmem_request();
	snowid_counter_shmem_request();
}

/*
 * Each owner sets up its part, under AddinShmemInitLock: a new segment
 * (start, or re-initialisation after a backend crash) or, in a backend
 * that attaches, a lookup.  The lease state comes before the high-water
 * mark: with an assigned node, loading the mark needs it; the generator
 * starts from the mark.
 */
static void
snowid_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	found = snowid_state_shmem_startup();
	snowid_registry_shmem_startup();
	snowid_server_shmem_startup();
	if (!found)
		snowid_generator_start();
	snowid_ticket_shmem_startup();
	snowid_pool_shmem_startup();
	snowid_counter_shmem_startup();
	LWLockRelease(AddinShmemInitLock);
}

void
_PG_init(void)
{
	snowid_guc_define_version();
	if (!process_shared_preload_libraries_in_progress)
		return;

	snowid_guc_init();
	snowid_alter_system_init();

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = snowid_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = snowid_shmem_startup;

	snowid_rmgr_init();
	snowid_ticket_init();
	snowid_registry_worker_register();
}
