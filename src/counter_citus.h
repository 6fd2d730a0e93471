/*-------------------------------------------------------------------------
 *
 * counter_citus.h
 *	  Counters per key on Citus: the counter's state table, distributed
 *	  co-located with the table whose rows it numbers (counter_citus.c).
 *	  Calls counter_exec.c and ticket_catalog.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_COUNTER_CITUS_H
#define SNOWID_COUNTER_CITUS_H

#include "counter.h"
#include "nodes/parsenodes.h"

extern bool snowid_counter_citus(void);
extern Oid	snowid_counter_citus_create(Oid extnsp, const char *qualified,
										Oid colocate_with, bool fast);
extern void snowid_counter_citus_drop(Oid extnsp, Oid state);
extern const char *snowid_counter_citus_table(const SnowidCounter *c,
											  AclMode need);
extern Datum snowid_counter_citus_key(const SnowidCounter *c, text *key);

#endif							/* SNOWID_COUNTER_CITUS_H */
