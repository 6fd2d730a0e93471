/*-------------------------------------------------------------------------
 *
 * pool_take.h
 *	  Taking values of a pool (pool_take.c): attaching to a pool, waiting
 *	  for its facts or a range, taking consecutive values of the range in
 *	  hand, and the errors when none is; for ticket_slot.c, ticket_lookup.c,
 *	  ticket_sql.c and pool_sql.c.  Locks: a caller holds none; attaching
 *	  takes table_lock, then the slot's lock, and a take persists under the
 *	  slot's lock.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_POOL_TAKE_H
#define SNOWID_POOL_TAKE_H

#include "compat.h"

/*
 * For takers (tickets, snowid_pool_take).
 *
 * attach: the slot of pool `name` (created if new, wakes the worker);
 * wait_facts: wait (interruptibly, up to 10 s) until the registry told
 * type/start (errors 42704 for a pool the registry does not have, 55000 if
 * no answer came).  take: up to `want` consecutive values of the current
 * range (fewer at its end), persisted as used before returning; false if
 * none is in hand (then error_none raises 2200H for an empty pool, 55000
 * otherwise).  Taking past half of the last range in hand wakes the worker.
 * wait: none in hand, wait (interruptibly, up to 10 s, not at all without a
 * registry) until one is, or the pool is empty, unknown or closed; true if
 * that happened.  Taking on a standby is an error (25006).  resolve: the
 * slot of pool `name`, idx if it still is (a slot freed meanwhile is
 * attached again, with this database as its user); take refuses a slot
 * that no longer holds `name` (55000).
 */
extern int	snowid_pool_attach(const char *name, bool wait_facts);
extern int	snowid_pool_resolve(int idx, const char *name);
extern bool snowid_pool_take(int idx, const char *name, int64 want,
							 int64 *first, int64 *count);
snowid_noreturn extern void snowid_pool_error_none(int idx);
extern bool snowid_pool_wait(int idx);
extern void snowid_pool_facts(int idx, Oid *typid, int64 *maxvalue,
							  int64 *start);
extern int64 snowid_pool_in_hand(int idx);
/* for pool_sql.c */
extern void snowid_pool_refuse_standby(const char *name);

#endif							/* SNOWID_POOL_TAKE_H */
