/*-------------------------------------------------------------------------
 *
 * registry_worker.h
 *	  The registry worker: the background worker that holds this server's
 *	  node lease at the registry and publishes the answers in shared memory
 *	  (lease.h), and serves the pools (pool_worker.h) on its connection.
 *
 * registry_worker.c is the process (signals, waiting, the main loop, the
 * release at shutdown); registry_claim.h/registry_claim.c, below it, makes
 * one claim and publishes its answer, watches the lease's deadline and
 * says which registry answers.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_REGISTRY_WORKER_H
#define SNOWID_REGISTRY_WORKER_H

#include "fmgr.h"

/* registry_worker.c */
extern void snowid_registry_worker_register(void);
extern PGDLLEXPORT void snowid_registry_main(Datum main_arg);

#endif							/* SNOWID_REGISTRY_WORKER_H */
