/*-------------------------------------------------------------------------
 *
 * registry_worker.h
 *	  The registry worker: the background worker that holds this server's
 *	  node lease at the registry and publishes the answers in shared memory
 *	  (lease.h), and serves the pools (pool_worker.h) on its connection.
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
