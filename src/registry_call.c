/*-------------------------------------------------------------------------
 *
 * registry_call.c
 *	  One call of a member on the registry, as a typed request where the
 *	  registry takes them, else as the positional call.
 *
 * From 2.1 a member sends each call (claim, reassert, release, pool
 * grant, report, return) as one request of snowid_registry_request(jsonb):
 * {"version": 1, "op": ..., and the operation's fields by name}, built in
 * the query from the same text parameters a positional call sends, so
 * that each field has its JSON type; the answer's rows come back as the
 * positional function's would (jsonb_to_recordset with the columns the
 * member expects), so the callers read them as before.  A registry of 2.0
 * or before (its snowid below 2.1, or one that answers 42883: no such
 * function) is called as 2.0 called it, and remembered for the rest of the
 * connection (registry_conn.c): a member may be updated before or after
 * its registry.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "libpq-fe.h"
#include "registry_call.h"
#include "registry_conn.h"
#include "utils/elog.h"

static char *
call_sql(const SnowidRegistryCall *call, bool typed)
{
	StringInfoData q;
	const char *schema = snowid_registry_schema();
	int			i;

	initStringInfo(&q);
	appendStringInfo(&q, "SELECT %s", call->select);
	if (call->signature != NULL)
	{
		char	   *genuine = snowid_registry_genuine(typed ?
													  "snowid_registry_request(jsonb)" :
													  call->signature);

		appendStringInfo(&q, ", %s", genuine);
		pfree(genuine);
	}
	if (typed)
	{
		appendStringInfo(&q, " FROM pg_catalog.jsonb_to_recordset(%s.snowid_registry_request("
						 "pg_catalog.jsonb_build_object('version', %d, 'op', '%s'",
						 schema, SNOWID_REQUEST_VERSION, call->op);
		for (i = 0; i < call->nfields; i++)
			appendStringInfo(&q, ", '%s', %s", call->fields[i], call->exprs[i]);
		appendStringInfo(&q, ")) OPERATOR(pg_catalog.->) 'rows') AS c(%s)",
						 call->columns);
	}
	else
	{
		appendStringInfo(&q, " FROM %s.%s(", schema, call->function);
		for (i = 0; i < call->nfields; i++)
			appendStringInfo(&q, "%s%s", i ? ", " : "", call->exprs[i]);
		appendStringInfo(&q, ") AS c%s", call->scalar ? "(value)" : "");
	}
	return q.data;
}

/*
 * Make the call: its rows (PGRES_TUPLES_OK) or NULL with *error, as
 * snowid_registry_exec.
 */
PGresult *
snowid_registry_call(const SnowidRegistryCall *call, int nparams,
					 const char *const *values, int timeout_ms, char **error,
					 bool *failed)
{
	for (;;)
	{
		bool		typed = snowid_registry_takes_requests();
		bool		refused;
		char	   *sql = call_sql(call, typed);
		PGresult   *res;

		res = snowid_registry_exec(sql, nparams, values, timeout_ms, error,
								   &refused);
		pfree(sql);
		if (failed != NULL)
			*failed = refused;
		if (res != NULL || !typed || !refused ||
			strcmp(snowid_registry_sqlstate(), "42883") != 0)
			return res;
		/* a registry without requests: as 2.0, for this connection */
		ereport(LOG,
				(errmsg("snowid's registry takes no typed requests: calling it as snowid 2.0 did for this connection"),
				 errdetail("%s", *error)));
		pfree(*error);
		*error = NULL;
		snowid_registry_positional();
	}
}
