/*-------------------------------------------------------------------------
 *
 * counter_row.h
 *	  Counters per key: the row per key of snowid_counter_key, read and
 *	  written in the caller's transaction, and the settings row
 *	  (counter_row.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_COUNTER_ROW_H
#define SNOWID_COUNTER_ROW_H

#include "counter.h"

extern int64 snowid_counter_row_take(Oid extnsp, Oid relid, text *key,
									 int64 step, int64 first);
extern int64 snowid_counter_row_check(const SnowidCounter *c, text *key,
									  int64 first, int64 last);
extern int64 snowid_counter_row_next(const SnowidCounter *c, text *key);
extern bool snowid_counter_row_last(const SnowidCounter *c, text *key,
									int64 *last);
extern void snowid_counter_row_move(const SnowidCounter *c, text *key,
									int64 next);
extern bool snowid_counter_row_forget(const SnowidCounter *c, text *key);
extern void snowid_counter_rows_forget(Oid extnsp, Oid relid);
extern void snowid_counter_row_create(Oid extnsp, Oid relid, Oid type,
									  int64 start, int64 stamp,
									  const char *mode, int32 block,
									  int32 stripe, int32 stripes,
									  Oid state);

#endif							/* SNOWID_COUNTER_ROW_H */
