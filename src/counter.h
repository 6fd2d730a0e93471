/*-------------------------------------------------------------------------
 *
 * counter.h
 *	  Counters per key: a counter (its handle a sequence of its name, its
 *	  settings a row of snowid_counter) gives each key of its own the values
 *	  start, start + 1, ...  Nothing here touches shared memory or GUCs.
 *
 * The subsystem, its calls running one way (each file calls only those
 * listed before it):
 *	 counter_catalog.c	a counter by name: the lookup, its settings (cached
 *						per backend), the privilege checks, the key's text;
 *	 counter_citus.c	on Citus: the counter's state table, distributed
 *						co-located with the table whose rows it numbers;
 *	 counter_row.c	the row per key (snowid_counter_key, or the state
 *						table on Citus), read and written through SPI in
 *						the current transaction (the caller's, or a fast
 *						block's server process's);
 *	 counter_cache.c	fast mode's keys and blocks in shared memory;
 *	 counter_fast.c		fast mode: blocks reserved through
 *						snowid_counter_reserve (a server process);
 *	 counter_sql.c		the SQL functions.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_COUNTER_H
#define SNOWID_COUNTER_H

#include "fmgr.h"

/* The longest key, in bytes: a key is a name, not a document. */
#define SNOWID_COUNTER_KEY_MAX 200

/* A counter as a backend knows it. */
typedef struct SnowidCounter
{
	Oid			relid;			/* its sequence */
	Oid			extnsp;			/* schema of snowid's tables */
	int64		stamp;			/* its creation: tells a reused OID apart */
	int64		start;
	int64		block;			/* values reserved at a time (fast) */
	int64		stripe;			/* this server's values: start + stripe + */
	int64		stripes;		/* i * stripes (unstriped: 0 of 1) */
	bool		fast;			/* mode fast, else gapless */
	int64		maxvalue;		/* of its type */
	Oid			type;
	const char *name;			/* qualified, for messages */
	Oid			state;			/* Citus: its state table, else invalid */
	Oid			keytype;		/* Citus: type of the state table's key */
} SnowidCounter;

#endif							/* SNOWID_COUNTER_H */
