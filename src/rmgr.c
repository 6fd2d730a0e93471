/*-------------------------------------------------------------------------
 *
 * rmgr.c
 *	  snowid's custom WAL resource manager: the RmgrData, and the dispatch
 *	  of each kind of record to the subsystem that writes it.
 *
 * Kinds (wal.h): XLOG_SNOWID_RESERVE and XLOG_SNOWID_BOUND, the persisted
 * high-water mark (highwater.c), whose replay also raises the generator's
 * next position (generator.c, the one writer of it); XLOG_SNOWID_POOL, a
 * pool's holdings (the pool store).  Redo of an unknown kind is a PANIC:
 * WAL this library cannot read must not be skipped.  Descriptions read the
 * record alone.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog_internal.h"
#include "access/xlogreader.h"
#include "generator_floor.h"
#include "highwater.h"
#include "lib/stringinfo.h"
#include "pool_store.h"
#include "rmgr.h"
#include "wal.h"

static void
snowid_redo(XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
	uint64		position;

	switch (info)
	{
		case XLOG_SNOWID_POOL:
			snowid_pool_redo(record);
			break;
		case XLOG_SNOWID_RESERVE:
		case XLOG_SNOWID_BOUND:
			position = snowid_highwater_redo(record);
			if (position > 0)
				snowid_generator_raise(position);
			break;
		default:
			elog(PANIC, "snowid_redo: unknown op code %u", info);
	}
}

static void
snowid_desc(StringInfo buf, XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;

	if (info == XLOG_SNOWID_POOL)
		snowid_pool_desc(buf, record);
	else
		snowid_highwater_desc(buf, record);
}

static const char *
snowid_identify(uint8 info)
{
	switch (info & ~XLR_INFO_MASK)
	{
		case XLOG_SNOWID_RESERVE:
			return "RESERVE";
		case XLOG_SNOWID_BOUND:
			return "BOUND";
		case XLOG_SNOWID_POOL:
			return "POOL";
	}
	return NULL;
}

static RmgrData snowid_rmgr = {
	.rm_name = SNOWID_RMGR_NAME,
	.rm_redo = snowid_redo,
	.rm_desc = snowid_desc,
	.rm_identify = snowid_identify,
};

void
snowid_rmgr_init(void)
{
	RegisterCustomRmgr(SNOWID_RMGR_ID, &snowid_rmgr);
}
