/*-------------------------------------------------------------------------
 *
 * partition_guard.h
 *	  The warning for tables partitioned by ID ranges whose bounds a layout
 *	  change would move (partition_guard.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_PARTITION_GUARD_H
#define SNOWID_PARTITION_GUARD_H

#include "layout.h"

/*
 * Warn if the change from layout was to layout now maps times onto other
 * IDs while the current database has tables partitioned by range on a
 * column that snowid fills.
 */
extern void snowid_warn_partition_bounds(const SnowidLayout *was, int was_node,
										 const SnowidLayout *now, int now_node);

#endif							/* SNOWID_PARTITION_GUARD_H */
