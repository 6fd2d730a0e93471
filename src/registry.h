/*-------------------------------------------------------------------------
 *
 * registry.h
 *	  The member side of the registry: node leases held by a background
 *	  worker, published in shared memory for the generator.
 *
 * lease.h has the shared lease state and the gate; registry_worker.c owns
 * the background worker and its libpq connection.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_REGISTRY_H
#define SNOWID_REGISTRY_H

#include "datatype/timestamp.h"
#include "generator.h"
#include "lease.h"


/* registry_worker.c */
struct pg_result;
extern void snowid_registry_worker_register(void);
extern PGDLLEXPORT void snowid_registry_main(Datum main_arg);
extern struct pg_result *snowid_registry_exec(const char *sql, int nparams,
											  const char *const *values,
											  int timeout_ms, char **error);
extern const char *snowid_registry_schema(void);
extern bool snowid_registry_query_failed;

/* pool_worker.c: the worker's part in pools (ranges held by this server) */
extern bool snowid_pools_serve(int node, const char *start, char **error);
extern void snowid_pools_give_back(int node, const char *start,
								   bool connected);

#endif							/* SNOWID_REGISTRY_H */
