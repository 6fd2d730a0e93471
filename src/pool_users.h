/*-------------------------------------------------------------------------
 *
 * pool_users.h
 *	  Which databases use each pool, and freeing the slots no one uses
 *	  (pool_users.c), for ticket_hooks.c and ticket_sql.c, pool_take.c,
 *	  pool_sql.c and the pool worker.  Locks: the users change under the
 *	  slot's lock; freeing a slot takes table_lock (exclusive), then the
 *	  slot's lock; a caller holds neither.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_POOL_USERS_H
#define SNOWID_POOL_USERS_H

#include "datatype/timestamp.h"

/*
 * use: database dbid's ticket names pool idx (persisted; with undo_on_abort,
 * forgotten again if the transaction aborts); unuse: at commit, dbid no
 * longer names `name` (NULL: any pool); upstream: the registry's upstream
 * pool draws on it, never freed; tidy: the worker's round, persisting users
 * and freeing unused slots; reclaim: the table is full, free a slot of a
 * pool that does not exist at once (true if one).
 */
extern void snowid_pool_use(int idx, const char *name, Oid dbid,
							bool undo_on_abort);
extern void snowid_pool_unuse_at_commit(const char *name, Oid dbid);
extern void snowid_pool_upstream(int idx);
extern void snowid_pools_tidy(TimestampTz now);
extern bool snowid_pool_reclaim(void);

#endif							/* SNOWID_POOL_USERS_H */
