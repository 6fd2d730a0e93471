/*-------------------------------------------------------------------------
 *
 * pool_grant.h
 *	  The pool worker's side of the pools (pool_grant.c): what each pool
 *	  needs from the registry, the ranges it grants and its other answers,
 *	  the rate values are taken at, and closing the pools at shutdown; for
 *	  pool_worker.c and registry_worker.c (and the rate for pool_sql.c).
 *	  Locks: the caller holds none, but rate_locked's, which holds the
 *	  slot's lock; the others take a slot's lock themselves.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_POOL_GRANT_H
#define SNOWID_POOL_GRANT_H

#include "datatype/timestamp.h"
#include "pool.h"
#include "storage/latch.h"

/*
 * For the worker.
 *
 * need: what to ask for pool idx (false: nothing to ask); rate_want is the
 * runway-sized amount the worker computed; the request key stays the same
 * until granted/answered is called with it (a retry after a lost reply
 * repeats it).  granted: a range (or the same one again: then nothing
 * changes), persisted (WAL + file) before it is usable.  answered: a reply
 * without a range (facts only, empty, unknown).  update_rate: once a
 * heartbeat, the values taken per second of every pool.  close: at
 * shutdown, no more takes; persists the truncation of every range at what
 * was handed out and returns the unused tails (highest first) to give
 * back; kept: the registry refused one back, it is held again.
 */
extern void snowid_pool_set_worker_latch(Latch *latch);
extern bool snowid_pool_wake_pending(void);	/* and clears it */
extern void snowid_pool_note(int idx, const char *detail);
extern void snowid_pool_worker_start(void);
extern bool snowid_pool_need(int idx, int64 rate_want, SnowidPoolNeed *need);
extern void snowid_pool_granted(int idx, const char *request, Oid typid,
								int64 maxvalue, int64 start,
								int64 first, int64 last);
extern void snowid_pool_answered(int idx, const char *request,
								 SnowidPoolStatus status, Oid typid,
								 int64 maxvalue, int64 start,
								 const char *detail);
extern void snowid_pool_refused(int idx, const char *detail);
extern void snowid_pool_update_rate(TimestampTz now);
extern double snowid_pool_rate(int idx);
extern double snowid_pool_rate_locked(SnowidPoolSlot *slot, TimestampTz now);
extern int	snowid_pool_close(int idx, SnowidPoolRange *tails);
extern void snowid_pool_kept(int idx, SnowidPoolRange tail);

#endif							/* SNOWID_POOL_GRANT_H */
