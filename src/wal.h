/*-------------------------------------------------------------------------
 *
 * wal.h
 *	  snowid's custom WAL resource manager: its ID, its name, the kinds of
 *	  record and their formats.
 *
 * The ID is not (yet) registered on the PostgreSQL wiki's list; change it
 * here if it collides with another extension.  rmgr.c owns the RmgrData
 * and dispatches each kind to the subsystem that writes it: the high-water
 * mark (highwater.c) and the pools (the pool store).
 *
 * Nothing here touches shared memory, GUCs or the clock.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_WAL_H
#define SNOWID_WAL_H

#include "datatype/timestamp.h"

#define SNOWID_RMGR_ID 151
#define SNOWID_RMGR_NAME "snowid"

/* version 1.1: the bound as a timestamp (still replayed) */
#define XLOG_SNOWID_RESERVE 0x00
/* version 1.2: the bound as an ID, with its layout */
#define XLOG_SNOWID_BOUND 0x10
/* version 1.4: a pool's holdings */
#define XLOG_SNOWID_POOL 0x20

/* The record of XLOG_SNOWID_RESERVE (version 1.1), still replayed. */
typedef struct xl_snowid_reserve
{
	TimestampTz reserved_until; /* no ID of a tick starting at or after it */
	int32		node_id;		/* for pg_waldump-style descriptions */
} xl_snowid_reserve;

/* The record of XLOG_SNOWID_BOUND (version 1.2). */
typedef struct xl_snowid_bound
{
	uint64		bound;			/* every ID issued lies below it */
	TimestampTz epoch;			/* the layout it was issued under */
	int64		tick_us;
	int32		node_id;
	int32		node_bits;
	int32		sequence_bits;
	int32		timestamp_bits;
} xl_snowid_bound;

#endif							/* SNOWID_WAL_H */
