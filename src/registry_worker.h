/*-------------------------------------------------------------------------
 *
 * registry_worker.h
 *	  The registry worker: the background worker that holds this server's
 *	  node lease at the registry and publishes the answers in shared memory
 *	  (registry.h), and serves the pools (pool_worker.h) on its connection.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_REGISTRY_WORKER_H
#define SNOWID_REGISTRY_WORKER_H

#include "fmgr.h"

/* registry_worker.c */
struct pg_result;
extern void snowid_registry_worker_register(void);
extern PGDLLEXPORT void snowid_registry_main(Datum main_arg);
extern struct pg_result *snowid_registry_exec(const char *sql, int nparams,
											  const char *const *values,
											  int timeout_ms, char **error,
											  bool *failed);
extern const char *snowid_registry_schema(void);

#endif							/* SNOWID_REGISTRY_WORKER_H */
