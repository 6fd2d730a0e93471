/*-------------------------------------------------------------------------
 *
 * registry_conn.h
 *	  The one connection to the registry: libpq, used by the registry
 *	  worker (registry_worker.c) and the pool worker (pool_worker.c).
 *
 * registry_conn.c alone holds the PGconn: connect (non-blocking, keepalives,
 * search_path pinned to pg_catalog, the registry's snowid schema found),
 * queries with text parameters and a timeout, draining a query a shutdown
 * interrupted, disconnect, the registry's identity (system identifier and
 * database, whatever the connection string), and the description shown by
 * snowid_registry_status() (lease.h's shared state, field registry).
 * Every wait goes through the worker's own (snowid_registry_set_wait),
 * which watches the latch, the lease's deadline and the signals.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_REGISTRY_CONN_H
#define SNOWID_REGISTRY_CONN_H

#include "datatype/timestamp.h"

#define SNOWID_REGISTRY_TIMEOUT_MS 10000	/* one connect or one query */

/* the oldest snowid a registry may run: the calls take the start's secret */
#define SNOWID_REGISTRY_MIN_VERSION "1.5"

/*
 * Wait for events on the socket (PGINVALID_SOCKET: none) until "until";
 * true when the socket is ready, false on timeout or when the worker has
 * something else to do.
 */
typedef bool (*SnowidRegistryWait) (int events, pgsocket sock,
									TimestampTz until);

struct pg_result;

extern void snowid_registry_set_wait(SnowidRegistryWait wait);
extern void snowid_registry_describe(const char *conninfo);
extern bool snowid_registry_connect(const char *conninfo, char **error);
extern bool snowid_registry_connected(void);
extern bool snowid_registry_identity(uint64 *sysid, const char **dbname);
extern void snowid_registry_disconnect(void);

/* The quoted schema of snowid in the registry; NULL while not connected. */
extern const char *snowid_registry_schema(void);
extern char *snowid_registry_genuine(const char *signature);
extern bool snowid_registry_has_version(const char *need);
extern bool snowid_registry_takes_requests(void);
extern void snowid_registry_positional(void);
extern const char *snowid_registry_sqlstate(void);

/*
 * One query: its rows (PGRES_TUPLES_OK), or NULL with *error; *failed
 * (unless failed is NULL) tells whether the registry answered with an
 * error, the connection being fine.
 */
extern struct pg_result *snowid_registry_exec(const char *sql, int nparams,
											  const char *const *values,
											  int timeout_ms, char **error,
											  bool *failed);
extern bool snowid_registry_drain(TimestampTz until, char **error);

#endif							/* SNOWID_REGISTRY_CONN_H */
