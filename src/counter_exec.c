/*-------------------------------------------------------------------------
 *
 * counter_exec.c
 *	  Counters per key: the statements on snowid_counter and
 *	  snowid_counter_key.  Users may not write those tables (no row may
 *	  go back), so each statement runs as the tables' owner, in a
 *	  restricted security context, in the caller's transaction.  On
 *	  Citus, the statements on a counter's state table run as the caller.  The plan
 *	  of each statement is prepared once per backend and schema.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "counter_exec.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "ticket_catalog.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"

typedef struct SnowidCounterPlan
{
	const SnowidCounterStmt *stmt;	/* hash key */
	Oid			extnsp;
	SPIPlanPtr	plan;
} SnowidCounterPlan;

static HTAB *counter_plans = NULL;

static SPIPlanPtr
snowid_counter_plan(Oid extnsp, const SnowidCounterStmt *stmt)
{
	SnowidCounterPlan *entry;
	bool		found;

	if (unlikely(counter_plans == NULL))
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(const SnowidCounterStmt *);
		ctl.entrysize = sizeof(SnowidCounterPlan);
		counter_plans = hash_create("snowid counter plans", 8, &ctl,
									HASH_ELEM | HASH_BLOBS);
	}
	entry = hash_search(counter_plans, &stmt, HASH_ENTER, &found);
	if (!found || entry->extnsp != extnsp || entry->plan == NULL)
	{
		char	   *sql = psprintf(stmt->sql,
								   quote_identifier(get_namespace_name(extnsp)));
		SPIPlanPtr	plan;

		if (found && entry->plan != NULL)
			SPI_freeplan(entry->plan);
		entry->plan = NULL;
		plan = SPI_prepare(sql, stmt->nargs, (Oid *) stmt->argtypes);
		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed for \"%s\": %s", sql,
				 SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "SPI_keepplan failed");
		entry->plan = plan;
		entry->extnsp = extnsp;
	}
	return entry->plan;
}

/*
 * Run plan (or, if it is NULL, sql with argtypes, as the current user)
 * with args as the owner of snowid's tables (schema extnsp).  Returns
 * whether it gave a row; out gets that row's columns.  SPI is connected.
 */
static bool
snowid_counter_run(Oid extnsp, SPIPlanPtr plan, const char *sql, int nargs,
				   Oid *argtypes, Datum *args, int64 *out)
{
	Oid			save_userid;
	int			save_sec_context;
	int			rc;
	bool		found = false;

	if (plan != NULL)
	{
		GetUserIdAndSecContext(&save_userid, &save_sec_context);
		SetUserIdAndSecContext(snowid_ticket_catalog_owner(extnsp),
							   save_sec_context |
							   SECURITY_LOCAL_USERID_CHANGE |
							   SECURITY_RESTRICTED_OPERATION);
		rc = SPI_execute_plan(plan, args, NULL, false, 1);
		SetUserIdAndSecContext(save_userid, save_sec_context);
	}
	else
		rc = SPI_execute_with_args(sql, nargs, argtypes, args, NULL, false, 1);
	if (rc < 0)
		elog(ERROR, "counter statement failed: %s", SPI_result_code_string(rc));
	if (SPI_processed > 0 && SPI_tuptable != NULL)
	{
		TupleDesc	desc = SPI_tuptable->tupdesc;
		HeapTuple	tup = SPI_tuptable->vals[0];

		for (int i = 0; i < desc->natts && i < COUNTER_STMT_OUTS; i++)
		{
			bool		isnull;
			Datum		d = SPI_getbinval(tup, desc, i + 1, &isnull);

			out[i] = isnull ? 0 : DatumGetInt64(d);
		}
		found = true;
	}
	SPI_finish();
	return found;
}

/*
 * Run stmt with args as the owner of snowid's tables (schema extnsp).
 * Returns whether it gave a row; out gets that row's columns.
 */
bool
snowid_counter_exec(Oid extnsp, const SnowidCounterStmt *stmt, Datum *args,
					int64 *out)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	return snowid_counter_run(extnsp, snowid_counter_plan(extnsp, stmt), NULL,
							  0, NULL, args, out);
}

/*
 * Run stmt on table (a Citus counter's state table, qualified), its
 * argument 1 of type keytype, as the current user: Citus gives a
 * transaction one connection per user to a shard group, and refuses a
 * write of another user to the shards of the caller's rows (the key's
 * shard and theirs are co-located).  Not prepared: Citus plans each
 * statement for the key's shard.
 */
bool
snowid_counter_exec_on(Oid extnsp, const SnowidCounterStmt *stmt,
					   const char *table, Oid keytype, Datum *args,
					   int64 *out)
{
	Oid			argtypes[COUNTER_STMT_ARGS];

	memcpy(argtypes, stmt->argtypes, sizeof(argtypes));
	argtypes[0] = keytype;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	return snowid_counter_run(extnsp, NULL, psprintf(stmt->sql, table),
							  stmt->nargs, argtypes, args, out);
}
