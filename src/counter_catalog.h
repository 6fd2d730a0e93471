/*-------------------------------------------------------------------------
 *
 * counter_catalog.h
 *	  Counters per key: a counter found by name, its settings and the
 *	  privileges checked on it (counter_catalog.c).  Calls
 *	  ticket_catalog.c for the extension's schema and owner.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_COUNTER_CATALOG_H
#define SNOWID_COUNTER_CATALOG_H

#include "counter.h"

/* What a caller means to do with a counter: the privilege it needs. */
typedef enum
{
	COUNTER_TAKE,				/* USAGE or UPDATE, as nextval */
	COUNTER_READ,				/* SELECT or USAGE, as currval */
	COUNTER_MOVE,				/* UPDATE, as setval */
	COUNTER_OWN					/* ownership, as DROP */
} SnowidCounterRight;

extern const SnowidCounter *snowid_counter_find(FunctionCallInfo fcinfo,
												SnowidCounterRight right);
extern text *snowid_counter_key_arg(FunctionCallInfo fcinfo, int argno);

#endif							/* SNOWID_COUNTER_CATALOG_H */
