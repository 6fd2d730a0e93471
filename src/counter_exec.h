/*-------------------------------------------------------------------------
 *
 * counter_exec.h
 *	  Counters per key: one statement on snowid's counter tables, run
 *	  through SPI with the rights of the tables' owner, its plan kept per
 *	  backend (counter_exec.c).  The bottom of the counter files; calls
 *	  ticket_catalog.c for the owner.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_COUNTER_EXEC_H
#define SNOWID_COUNTER_EXEC_H

#include "postgres.h"

#define COUNTER_STMT_ARGS 9
#define COUNTER_STMT_OUTS 8

/*
 * A statement: sql has one %s, the schema of snowid's tables (or, run by
 * snowid_counter_exec_on, a Citus counter's state table, its argument 1
 * of the key's type, argtypes[0] then unset); it returns
 * at most one row of at most COUNTER_STMT_OUTS bigint columns.  Every operator and
 * function in it is schema-qualified: it runs with the caller's
 * search_path.
 */
typedef struct SnowidCounterStmt
{
	const char *sql;
	int			nargs;
	Oid			argtypes[COUNTER_STMT_ARGS];
} SnowidCounterStmt;

extern bool snowid_counter_exec(Oid extnsp, const SnowidCounterStmt *stmt,
								Datum *args, int64 *out);
extern bool snowid_counter_exec_on(Oid extnsp, const SnowidCounterStmt *stmt,
								   const char *table, Oid keytype,
								   Datum *args, int64 *out);

#endif							/* SNOWID_COUNTER_EXEC_H */
