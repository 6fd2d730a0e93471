/*-------------------------------------------------------------------------
 *
 * snowid.c
 *	  Entry point of the snowid extension.
 *
 * snowid needs shared memory, so it does its real set-up only when loaded
 * through shared_preload_libraries.  Loaded later (CREATE EXTENSION in a
 * server that does not preload it) it defines nothing: defining
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
#include "miscadmin.h"
#include "registry.h"
#include "snowid.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;

	snowid_guc_init();
	snowid_alter_system_init();
	snowid_shmem_init();
	snowid_highwater_init();
	snowid_ticket_init();
	snowid_registry_worker_register();
}
