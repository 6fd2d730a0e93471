/*-------------------------------------------------------------------------
 *
 * pool_worker.c
 *	  The registry worker's part in pools: asking the registry for ranges of
 *	  the pools this server draws from, reporting the ranges it holds, and
 *	  giving unused tails back at shutdown.
 *
 * Called by the registry worker (registry_worker.c) on its connection,
 * only while this server holds its node lease: the registry grants ranges
 * to a node, and checks that lease on every grant.
 *
 * Asking.  pool_grant.c says which pool needs what (snowid_pool_need): the
 * facts of a pool a taker just attached, a first range, or the next range once
 * the last one in hand is half used, so that takers never wait on the
 * network while a range is left.  A range is sized by time, not by count:
 * the values taken per second lately times snowid.lease, so that a member
 * keeps issuing through a registry outage as long as it keeps its node;
 * at least SNOWID_POOL_MIN_RANGE.  The registry caps it by what is left
 * and shrinks it near exhaustion.  A request carries a key that
 * pool_grant.c keeps until an answer for it arrives: a request whose reply
 * was lost is sent again with the same key and gets the same range back,
 * not a second one.  A range is persisted by the pool store (WAL, then its
 * file) before any value of it is handed out.
 *
 * Reporting.  Every grant request, and once a heartbeat a report of all
 * pools, tells the registry which ranges this server holds: a registry
 * that lost a grant (asynchronous failover, restore from a backup) records
 * them again and never hands them out a second time.  With them go the
 * floor's mark of each pool and the boot marks of pools no slot holds
 * (pool_store.c): the last value this server may have handed out in this
 * boot of its host, which a data directory restored into itself no longer
 * shows in its ranges.
 *
 * Giving back.  At shutdown pool_grant.c closes every pool (nothing more is
 * handed out) and persists the truncation of every range at what was
 * handed out; the unused tails go back to the registry, highest first, and
 * the registry takes each back only if no grant went past it.  One it
 * keeps is held again (persisted), for the next start; one whose answer is
 * lost stays given up: never used twice, at worst wasted.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "catalog/pg_type_d.h"
#include "guc.h"
#include "lease.h"
#include "lib/stringinfo.h"
#include "libpq-fe.h"
#include "pool.h"
#include "pool_grant.h"
#include "pool_store.h"
#include "registry_call.h"
#include "pool_users.h"
#include "pool_worker.h"
#include "registry_conn.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#define SNOWID_POOL_TIMEOUT_MS 10000

/* the last error a report got, logged once (until another one comes) */
static char *last_report_error = NULL;
static char *last_failure = NULL;	/* last pool failure logged */

/*
 * The registry answered a pool's request with an error: log it once (until
 * another one comes) and put it on the pool, for snowid_pool_holdings()
 * and the error its takers get.
 */
static void
snowid_pool_failed(int idx, const char *name, const char *error)
{
	char	   *msg = psprintf("pool \"%s\": %s", name, error);

	if (last_failure == NULL || strcmp(last_failure, msg) != 0)
	{
		ereport(LOG,
				(errmsg("snowid registry refused a request for %s", msg),
				 errhint("Members need EXECUTE on snowid_pool_grant, snowid_pool_report and snowid_pool_return at the registry, and the registry snowid 1.4 or later.")));
		if (last_failure != NULL)
			pfree(last_failure);
		last_failure = MemoryContextStrdup(TopMemoryContext, msg);
	}
	snowid_pool_note(idx, error);
	pfree(msg);
}
#define SNOWID_POOL_RETURN_TIMEOUT_MS 3000	/* at shutdown, per tail */

/* One pool name as an element of a text[] literal. */
static void
snowid_append_array_text(StringInfo buf, const char *s)
{
	appendStringInfoChar(buf, '"');
	for (; *s; s++)
	{
		if (*s == '"' || *s == '\\')
			appendStringInfoChar(buf, '\\');
		appendStringInfoChar(buf, *s);
	}
	appendStringInfoChar(buf, '"');
}

/* The ranges held as two bigint[] literals. */
static void
snowid_held_arrays(const SnowidPoolRange *held, int nheld,
				   StringInfo firsts, StringInfo lasts)
{
	appendStringInfoChar(firsts, '{');
	appendStringInfoChar(lasts, '{');
	for (int i = 0; i < nheld; i++)
	{
		if (i > 0)
		{
			appendStringInfoChar(firsts, ',');
			appendStringInfoChar(lasts, ',');
		}
		appendStringInfo(firsts, INT64_FORMAT, held[i].first);
		appendStringInfo(lasts, INT64_FORMAT, held[i].last);
	}
	appendStringInfoChar(firsts, '}');
	appendStringInfoChar(lasts, '}');
}

/* The runway-sized amount to ask for: the recent rate times the lease. */
static int64
snowid_pool_want(int idx)
{
	double		rate = snowid_pool_rate(idx);
	double		want = rate * (double) snowid_lease_s;

	if (!(want >= (double) SNOWID_POOL_MIN_RANGE))
		return SNOWID_POOL_MIN_RANGE;
	if (want >= (double) PG_INT64_MAX / 2)
		return PG_INT64_MAX / 2;
	return (int64) want;
}

static Oid
snowid_pool_type_oid(const char *text)
{
	Oid			typid = (Oid) strtoul(text, NULL, 10);

	return typid == INT4OID || typid == INT8OID ? typid : InvalidOid;
}

/*
 * The pool calls as the registry takes them (registry_call.c): a grant's
 * answer with whether the function is the extension's own; a report's and
 * a return's one value.
 */
static const char *const grant_fields[] = {
	"pool", "node_id", "system_identifier", "start_id", "secret", "request",
	"want", "held_first", "held_last"
};
static const char *const grant_exprs[] = {
	"$1::pg_catalog.text", "$2::pg_catalog.int4", "$3::pg_catalog.numeric",
	"$4::pg_catalog.text", "$5::pg_catalog.text", "$6::pg_catalog.text",
	"$7::pg_catalog.int8", "$8::pg_catalog.int8[]", "$9::pg_catalog.int8[]"
};
static const SnowidRegistryCall grant_call = {
	"pool_grant", "snowid_pool_grant",
	"snowid_pool_grant(text, integer, numeric, text, text, text, bigint, bigint[], bigint[])",
	9, grant_fields, grant_exprs,
	"result pg_catalog.text, first_value pg_catalog.int8, last_value pg_catalog.int8, "
	"type pg_catalog.regtype, maxvalue pg_catalog.int8, start pg_catalog.int8, "
	"values_left pg_catalog.int8, detail pg_catalog.text",
	false,
	"c.result, c.first_value, c.last_value, c.type::pg_catalog.oid, c.maxvalue, c.start, c.detail"
};
static const char *const report_fields[] = {
	"node_id", "system_identifier", "start_id", "secret", "pool", "first", "last"
};
static const char *const report_exprs[] = {
	"$1::pg_catalog.int4", "$2::pg_catalog.numeric", "$3::pg_catalog.text",
	"$4::pg_catalog.text", "$5::pg_catalog.text[]", "$6::pg_catalog.int8[]",
	"$7::pg_catalog.int8[]"
};
static const SnowidRegistryCall report_call = {
	"pool_report", "snowid_pool_report", NULL, 7, report_fields, report_exprs,
	"value pg_catalog.int4", true, "c.value"
};
static const char *const return_fields[] = {
	"pool", "node_id", "system_identifier", "start_id", "secret", "first_value",
	"unused_from"
};
static const char *const return_exprs[] = {
	"$1::pg_catalog.text", "$2::pg_catalog.int4", "$3::pg_catalog.numeric",
	"$4::pg_catalog.text", "$5::pg_catalog.text", "$6::pg_catalog.int8",
	"$7::pg_catalog.int8"
};
static const SnowidRegistryCall return_call = {
	"pool_return", "snowid_pool_return", NULL, 7, return_fields, return_exprs,
	"value pg_catalog.text", true, "c.value"
};

/*
 * Ask for what one pool needs; false with *error if no answer came, and
 * *failed if the registry answered the query with an error.
 */
static bool
snowid_pool_ask(int idx, const SnowidPoolNeed *need, int node,
				const char *start, char **error, bool *failed)
{
	char		node_text[16];
	char		sysid_text[32];
	char		want_text[32];
	StringInfoData firsts;
	StringInfoData lasts;
	const char *values[9];
	PGresult   *res;
	const char *result;
	Oid			typid = InvalidOid;
	int64		maxvalue = 0;
	int64		pool_start = 0;
	const char *detail;

	snprintf(node_text, sizeof(node_text), "%d", node);
	snprintf(sysid_text, sizeof(sysid_text), UINT64_FORMAT, GetSystemIdentifier());
	snprintf(want_text, sizeof(want_text), INT64_FORMAT, need->want);
	initStringInfo(&firsts);
	initStringInfo(&lasts);
	snowid_held_arrays(need->held, need->nheld, &firsts, &lasts);
	values[0] = need->name;
	values[1] = node_text;
	values[2] = sysid_text;
	values[3] = start;
	values[4] = snowid_registry->secret;	/* fixed since the postmaster started */
	values[5] = need->request;
	values[6] = want_text;
	values[7] = firsts.data;
	values[8] = lasts.data;
	res = snowid_registry_call(&grant_call, 9, values, SNOWID_POOL_TIMEOUT_MS,
							   error, failed);
	pfree(firsts.data);
	pfree(lasts.data);
	if (res == NULL)
		return false;
	if (PQntuples(res) != 1 || PQnfields(res) != 8)
	{
		PQclear(res);
		*error = pstrdup("the registry's snowid_pool_grant() answered in an unknown form");
		return false;
	}
	if (strcmp(PQgetvalue(res, 0, 7), "t") != 0)
	{
		PQclear(res);
		*error = pstrdup("the registry's snowid_pool_grant() is not the function of its snowid extension (a function of that name was put in the extension's schema): nothing is taken from its answer");
		*failed = true;
		return false;
	}
	result = PQgetvalue(res, 0, 0);
	if (!PQgetisnull(res, 0, 3))
		typid = snowid_pool_type_oid(PQgetvalue(res, 0, 3));
	if (!PQgetisnull(res, 0, 4))
		maxvalue = strtoi64(PQgetvalue(res, 0, 4), NULL, 10);
	if (!PQgetisnull(res, 0, 5))
		pool_start = strtoi64(PQgetvalue(res, 0, 5), NULL, 10);
	detail = PQgetisnull(res, 0, 6) ? "" : PQgetvalue(res, 0, 6);

	if ((strcmp(result, "granted") == 0 || strcmp(result, "again") == 0) &&
		!PQgetisnull(res, 0, 1) && !PQgetisnull(res, 0, 2) && typid != InvalidOid)
	{
		int64		first = strtoi64(PQgetvalue(res, 0, 1), NULL, 10);
		int64		last = strtoi64(PQgetvalue(res, 0, 2), NULL, 10);

		/*
		 * checked where it is taken (snowid_pool_granted: the pool's type,
		 * start and maximum, the range inside them, above what was handed
		 * out and overlapping nothing held; ignored otherwise)
		 */
		snowid_pool_granted(idx, need->request, typid, maxvalue, pool_start,
							first, last);
	}
	else if (strcmp(result, "info") == 0 && typid != InvalidOid)
		snowid_pool_answered(idx, need->request, SNOWID_POOL_OK, typid,
							 maxvalue, pool_start, detail);
	else if (strcmp(result, "empty") == 0)
		snowid_pool_answered(idx, need->request, SNOWID_POOL_EMPTY, typid,
							 maxvalue, pool_start, detail);
	else if (strcmp(result, "unknown") == 0)
		snowid_pool_answered(idx, need->request, SNOWID_POOL_UNKNOWN, typid,
							 maxvalue, pool_start, detail);
	else if (strcmp(result, "busy") == 0 || strcmp(result, "limited") == 0)
	{
		PQclear(res);
		*error = psprintf("the registry could not grant a range of pool \"%s\" now: %s",
						  need->name, detail);
		*failed = true;
		return false;
	}
	else if (strcmp(result, "wait") != 0)
	{
		/* refused (the lease ended meanwhile) or an answer we do not know */
		snowid_pool_refused(idx, detail);
		ereport(LOG,
				(errmsg("snowid registry did not grant a range of pool \"%s\": %s",
						need->name, result),
				 detail[0] ? errdetail("%s", snowid_sentence(detail)) : 0));
	}
	PQclear(res);
	return true;
}

/* One range of the report: its pool, first and last value, as array items. */
static void
snowid_report_append(StringInfo names, StringInfo firsts, StringInfo lasts,
					 int *reported, const char *pool, int64 first, int64 last)
{
	if (*reported > 0)
	{
		appendStringInfoChar(names, ',');
		appendStringInfoChar(firsts, ',');
		appendStringInfoChar(lasts, ',');
	}
	snowid_append_array_text(names, pool);
	appendStringInfo(firsts, INT64_FORMAT, first);
	appendStringInfo(lasts, INT64_FORMAT, last);
	(*reported)++;
}

/*
 * After a claim or renewal that left this server holding node `node`:
 * ask for what the pools need and report what they hold; after one that
 * refused it node `node` (!ask): only report.  False with *error if the
 * registry stopped answering.
 */
bool
snowid_pools_serve(int node, const char *start, bool ask, char **error)
{
	int			n = snowid_pool_slots();
	StringInfoData names;
	StringInfoData firsts;
	StringInfoData lasts;
	int			reported = 0;
	bool		ok = true;
	SnowidPoolMark marks[SNOWID_POOL_MARKS];
	int			nmarks = snowid_pool_marks_unheld(marks, SNOWID_POOL_MARKS);

	if (n == 0 && nmarks == 0)
		return true;
	snowid_pools_tidy(GetCurrentTimestamp());
	snowid_pool_update_rate(GetCurrentTimestamp());

	initStringInfo(&names);
	initStringInfo(&firsts);
	initStringInfo(&lasts);
	appendStringInfoChar(&names, '{');
	appendStringInfoChar(&firsts, '{');
	appendStringInfoChar(&lasts, '{');
	for (int idx = 0; idx < n && ok; idx++)
	{
		SnowidPoolNeed need;
		bool		asked = false;
		bool		failed = false;

		memset(&need, 0, sizeof(need));
		if (snowid_pool_need(idx, snowid_pool_want(idx), &need) && ask)
		{
			if (!snowid_pool_ask(idx, &need, node, start, error, &failed))
			{
				if (!failed)
					ok = false; /* no answer: the registry is unreachable */
				else
				{
					/*
					 * The registry answered with an error (no EXECUTE on
					 * the pool functions, a registry still at 1.3): this
					 * pool waits, the node lease and other pools go on.
					 */
					snowid_pool_failed(idx, need.name, *error);
					pfree(*error);
					*error = NULL;
				}
			}
			asked = true;
		}
		/* the grant request carried the held ranges already */
		if (asked || need.name[0] == '\0')
			continue;
		for (int i = 0; i < need.nheld; i++)
			snowid_report_append(&names, &firsts, &lasts, &reported, need.name,
								 need.held[i].first, need.held[i].last);
	}
	/*
	 * The boot marks of pools whose slots were freed (or not made again
	 * since a restore of this data directory into itself): the values
	 * handed out of them in this boot stay out of any grant of a registry
	 * that forgot them.
	 */
	for (int i = 0; i < nmarks && ok; i++)
		snowid_report_append(&names, &firsts, &lasts, &reported, marks[i].name,
							 marks[i].last, marks[i].last);
	appendStringInfoChar(&names, '}');
	appendStringInfoChar(&firsts, '}');
	appendStringInfoChar(&lasts, '}');

	if (ok && reported > 0)
	{
		char		node_text[16];
		char		sysid_text[32];
		const char *values[7];
		PGresult   *res;
		bool		failed = false;

		snprintf(node_text, sizeof(node_text), "%d", node);
		snprintf(sysid_text, sizeof(sysid_text), UINT64_FORMAT, GetSystemIdentifier());
		values[0] = node_text;
		values[1] = sysid_text;
		values[2] = start;
		values[3] = snowid_registry->secret;
		values[4] = names.data;
		values[5] = firsts.data;
		values[6] = lasts.data;
		res = snowid_registry_call(&report_call, 7, values, SNOWID_POOL_TIMEOUT_MS,
								   error, &failed);
		if (res != NULL)
		{
			PQclear(res);
			if (last_report_error != NULL)
			{
				pfree(last_report_error);
				last_report_error = NULL;
			}
		}
		else if (!failed)
			ok = false;
		else
		{
			/*
			 * Refused (not allowed to report, or a range the registry
			 * cannot place yet: one more than a grant above what it
			 * remembers of a pool, which other members' reports may
			 * move): say so once, send it again at the next heartbeat;
			 * the lease goes on.
			 */
			if (last_report_error == NULL || strcmp(last_report_error, *error) != 0)
			{
				ereport(LOG,
						(errmsg("snowid could not report its pool ranges to the registry: %s", *error),
						 errdetail("The report is sent again at every heartbeat."),
						 errhint("Where permission was denied, grant EXECUTE on snowid_pool_grant, snowid_pool_report and snowid_pool_return to the role members connect as.")));
				if (last_report_error != NULL)
					pfree(last_report_error);
				last_report_error = MemoryContextStrdup(TopMemoryContext, *error);
			}
			pfree(*error);
			*error = NULL;
		}
	}
	pfree(names.data);
	pfree(firsts.data);
	pfree(lasts.data);
	return ok;
}

/*
 * At shutdown: close every pool and give the unused tails back.  connected:
 * the registry can be asked (this server holds its node and has a
 * connection); otherwise every tail is held again for the next start.
 */
void
snowid_pools_give_back(int node, const char *start, bool connected)
{
	int			n = snowid_pool_slots();
	char		node_text[16];
	char		sysid_text[32];
	int64		returned = 0;
	int64		kept = 0;

	snprintf(node_text, sizeof(node_text), "%d", node);
	snprintf(sysid_text, sizeof(sysid_text), UINT64_FORMAT, GetSystemIdentifier());
	for (int idx = 0; idx < n; idx++)
	{
		SnowidPoolRange tails[SNOWID_POOL_RANGES];
		SnowidPoolNeed need;
		int			ntails;

		memset(&need, 0, sizeof(need));
		(void) snowid_pool_need(idx, 0, &need);	/* for its name */
		ntails = snowid_pool_close(idx, tails);
		for (int i = 0; i < ntails; i++)
		{
			char		first_text[32];
			const char *values[7];
			char	   *error = NULL;
			PGresult   *res;

			if (tails[i].first > tails[i].last)
				continue;		/* used up to its end */
			if (!connected || need.name[0] == '\0')
			{
				snowid_pool_kept(idx, tails[i]);
				kept += tails[i].last - tails[i].first + 1;
				continue;
			}
			snprintf(first_text, sizeof(first_text), INT64_FORMAT, tails[i].first);
			values[0] = need.name;
			values[1] = node_text;
			values[2] = sysid_text;
			values[3] = start;
			values[4] = snowid_registry->secret;
			values[5] = first_text;
			values[6] = first_text;
			res = snowid_registry_call(&return_call, 7, values,
									   SNOWID_POOL_RETURN_TIMEOUT_MS, &error, NULL);
			if (res == NULL)
			{
				/* sent, perhaps taken: never use it again */
				ereport(LOG,
						(errmsg("snowid could not give values " INT64_FORMAT " to " INT64_FORMAT " of pool \"%s\" back: %s",
								tails[i].first, tails[i].last, need.name, error),
						 errdetail("They are never issued by this server again.")));
				connected = false;
				continue;
			}
			if (PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "returned") == 0)
				returned += tails[i].last - tails[i].first + 1;
			else if (PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "kept") == 0)
			{
				snowid_pool_kept(idx, tails[i]);
				kept += tails[i].last - tails[i].first + 1;
			}
			else
			{
				/*
				 * The registry does not know the range (it lost the grant:
				 * a failover or a restore) and may have granted it again:
				 * never use it.
				 */
				ereport(LOG,
						(errmsg("snowid gives up values " INT64_FORMAT " to " INT64_FORMAT " of pool \"%s\": the registry does not know them",
								tails[i].first, tails[i].last, need.name),
						 errdetail("A registry that lost a grant may have granted the same values to another member.")));
			}
			PQclear(res);
		}
	}
	if (returned > 0 || kept > 0)
		ereport(LOG,
				(errmsg("snowid gave " INT64_FORMAT " unused pool values back to the registry and keeps " INT64_FORMAT " for the next start",
						returned, kept)));
}
