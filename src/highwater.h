/*-------------------------------------------------------------------------
 *
 * highwater.h
 *	  The persisted high-water mark (highwater.c): a bound below which this
 *	  server never issues a snowid again, kept in WAL and in
 *	  $PGDATA/snowid.highwater.
 *
 * highwater.c is the one writer of SnowidShared.reserved_position,
 * reserved_until and renewals (state.h).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_HIGHWATER_H
#define SNOWID_HIGHWATER_H

#include "access/xlogreader.h"
#include "layout.h"
#include "lib/stringinfo.h"
#include "state.h"

/* start: the bound's position, where the generator starts */
extern uint64 snowid_highwater_load(SnowidShared *shared);

/* renewal, by the generator */
extern void snowid_highwater_renew(SnowidShared *shared,
								   const SnowidLayout *layout,
								   int64 last_tick, int64 wall_tick, bool wait);
extern int64 snowid_highwater_window_ticks(const SnowidLayout *layout);

/* the bound of what this server issued, for ALTER SYSTEM and the registry */
extern uint64 snowid_highwater_issued_bound(SnowidShared *shared, int64 *last);

/* the records XLOG_SNOWID_RESERVE and XLOG_SNOWID_BOUND (rmgr.c) */
extern uint64 snowid_highwater_redo(XLogReaderState *record);
extern void snowid_highwater_desc(StringInfo buf, XLogReaderState *record);

#endif							/* SNOWID_HIGHWATER_H */
