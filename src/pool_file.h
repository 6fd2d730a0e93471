/*-------------------------------------------------------------------------
 *
 * pool_file.h
 *	  The pool file, $PGDATA/snowid.pools, as text (pool_file.c): the rule
 *	  for a pool's name, the line of one pool and the reading of the whole
 *	  file, for pool_store.c (which reads and writes it) and pool_take.c
 *	  (which checks a name).  No shared memory and no lock: when the file
 *	  is read and written, and under which lock, is pool_store.c's.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_POOL_FILE_H
#define SNOWID_POOL_FILE_H

#include "lib/stringinfo.h"
#include "pool.h"

/*
 * name_ok: is this a valid pool name; format_line: append the line of the
 * file for st (of 1.4's format if v1); read_file: the states in the file,
 * -1 if there is none, FATAL if it is corrupt (*hwm: the change count on
 * its end line; *file_v1: the file is of 1.4).
 */
extern bool snowid_pool_name_ok(const char *name);
extern void snowid_pool_format_line(StringInfo buf, const SnowidPoolState *st,
									bool v1);
extern int	snowid_pool_read_file(SnowidPoolState *states, uint64 *hwm,
								  bool *file_v1);

#endif							/* SNOWID_POOL_FILE_H */
