/*-------------------------------------------------------------------------
 *
 * registry_conn.c
 *	  The one connection to the registry, over libpq, for the registry
 *	  worker and the pool worker.
 *
 * libpq is used without ever blocking: a non-blocking connect and queries
 * whose every wait is on the latch and the socket, with a timeout, so that
 * the worker honours a reload, a shutdown and postmaster death at once, and
 * shuts the gate on time even while the network hangs.  Keepalives are on
 * unless the connection string says otherwise.  Every query runs with
 * search_path pinned to pg_catalog and names the functions by the
 * extension's schema.
 *
 * Every error text this file hands out (libpq's, and the registry's) is
 * scrubbed of the connection string's secrets first (conninfo.c): libpq
 * quotes a whole URI it cannot parse, password included.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "conninfo.h"
#include "guc.h"
#include "lease.h"
#include "lib/stringinfo.h"
#include "libpq-fe.h"
#include "registry_conn.h"
#include "storage/latch.h"
#include "storage/spin.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

static PGconn *conn = NULL;
static char *conn_schema = NULL;	/* quoted schema of the registry's snowid */
static Oid	conn_extension = InvalidOid;	/* the registry's snowid extension */
static uint64 conn_sysid = 0;	/* the registry's system identifier */
static char conn_version[16];	/* the registry's snowid version */
static SnowidRegistryWait conn_wait = NULL;	/* the worker's wait */
static char *conn_info = NULL;	/* the string of the last connect, for scrubbing */
static bool conn_positional = false;	/* the registry takes no typed requests */
static char conn_sqlstate[6];	/* SQLSTATE of the last query's error, "" if none */

static bool snowid_registry_version_ok(const char *version, const char *need);

void
snowid_registry_disconnect(void)
{
	if (conn != NULL)
		PQfinish(conn);
	conn = NULL;
	if (conn_schema != NULL)
		pfree(conn_schema);
	conn_schema = NULL;
	conn_extension = InvalidOid;
	conn_sysid = 0;
	conn_version[0] = '\0';
	conn_positional = false;
}

/* The worker's wait, which every wait on the connection goes through. */
void
snowid_registry_set_wait(SnowidRegistryWait wait)
{
	conn_wait = wait;
}

/* Is there a connection, and does it work? */
bool
snowid_registry_connected(void)
{
	return conn != NULL && PQstatus(conn) == CONNECTION_OK;
}

/* The connection string without secrets, for status and messages. */
void
snowid_registry_describe(const char *conninfo)
{
	PQconninfoOption *opts = PQconninfoParse(conninfo, NULL);
	StringInfoData buf;

	initStringInfo(&buf);
	if (opts == NULL)
		appendStringInfoString(&buf, "(malformed connection string)");
	else
	{
		for (PQconninfoOption *o = opts; o->keyword != NULL; o++)
		{
			if (o->val == NULL || o->val[0] == '\0' ||
				strchr(o->dispchar, '*') != NULL ||
				(strcmp(o->keyword, "host") != 0 &&
				 strcmp(o->keyword, "hostaddr") != 0 &&
				 strcmp(o->keyword, "port") != 0 &&
				 strcmp(o->keyword, "dbname") != 0 &&
				 strcmp(o->keyword, "user") != 0))
				continue;
			appendStringInfo(&buf, "%s%s=%s", buf.len > 0 ? " " : "",
							 o->keyword, o->val);
		}
		PQconninfoFree(opts);
	}
	SpinLockAcquire(&snowid_registry->mutex);
	strlcpy(snowid_registry->registry, buf.data, SNOWID_REGISTRY_TEXT);
	SpinLockRelease(&snowid_registry->mutex);
	pfree(buf.data);
}

/* msg (palloc'd, freed) without the secrets of the connection string. */
static char *
snowid_conn_scrub(char *msg)
{
	char	   *clean = snowid_conninfo_scrub(conn_info, msg);

	pfree(msg);
	return clean;
}

/* The text of the connection's last error, one line, without secrets. */
static char *
snowid_conn_error(const char *what)
{
	char	   *msg = pchomp(conn != NULL ? PQerrorMessage(conn) : "out of memory");

	for (char *p = msg; *p; p++)
		if (*p == '\n' || *p == '\t')
			*p = ' ';
	return snowid_conn_scrub(psprintf("%s: %s", what, msg));
}

/*
 * Run one query (text parameters) and return its result, or NULL with
 * *error; *failed (unless failed is NULL) tells whether the registry
 * answered with an error, the connection being fine.
 */
PGresult *
snowid_registry_exec(const char *sql, int nparams, const char *const *values,
					 int timeout_ms, char **error, bool *failed)
{
	TimestampTz until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													timeout_ms);
	PGresult   *last = NULL;
	PGresult   *res;
	int			rc;

	if (failed != NULL)
		*failed = false;
	conn_sqlstate[0] = '\0';
	if (!PQsendQueryParams(conn, sql, nparams, NULL, values, NULL, NULL, 0))
	{
		*error = snowid_conn_error("could not send a query to the registry");
		return NULL;
	}
	while ((rc = PQflush(conn)) == 1)
	{
		if (!conn_wait(WL_SOCKET_READABLE | WL_SOCKET_WRITEABLE,
					   PQsocket(conn), until))
		{
			*error = pstrdup("the registry did not take the query in time");
			return NULL;
		}
		if (!PQconsumeInput(conn))
		{
			*error = snowid_conn_error("lost the connection to the registry");
			return NULL;
		}
	}
	if (rc < 0)
	{
		*error = snowid_conn_error("could not send a query to the registry");
		return NULL;
	}
	for (;;)
	{
		while (PQisBusy(conn))
		{
			if (!conn_wait(WL_SOCKET_READABLE, PQsocket(conn), until))
			{
				if (last != NULL)
					PQclear(last);
				*error = pstrdup("the registry did not answer in time");
				return NULL;
			}
			if (!PQconsumeInput(conn))
			{
				if (last != NULL)
					PQclear(last);
				*error = snowid_conn_error("lost the connection to the registry");
				return NULL;
			}
		}
		res = PQgetResult(conn);
		if (res == NULL)
			break;
		if (last != NULL)
			PQclear(last);
		last = res;
	}
	if (failed != NULL && last != NULL && PQresultStatus(last) != PGRES_TUPLES_OK)
		*failed = true;
	if (last == NULL || PQresultStatus(last) != PGRES_TUPLES_OK)
	{
		char	   *msg = last != NULL ?
			pchomp(PQresultErrorMessage(last)) : pstrdup("no result");
		const char *state = last != NULL ?
			PQresultErrorField(last, PG_DIAG_SQLSTATE) : NULL;

		if (state != NULL)
			strlcpy(conn_sqlstate, state, sizeof(conn_sqlstate));

		*error = snowid_conn_scrub(psprintf("the registry failed a query: %s",
											msg));
		if (last != NULL)
			PQclear(last);
		return NULL;
	}
	return last;
}

/* The quoted schema of snowid in the registry (valid while connected). */
const char *
snowid_registry_schema(void)
{
	return conn_schema;
}

/*
 * Connect, pin search_path and find the registry's schema; false with *error.
 * Unless the string names one, the application_name is "snowid <library
 * version> registry worker", so that the registry's pg_stat_activity shows
 * which version each member runs.
 */
bool
snowid_registry_connect(const char *conninfo, char **error)
{
	const char *keys[] = {"keepalives", "keepalives_idle",
		"keepalives_interval", "keepalives_count",
	"fallback_application_name", "dbname", NULL};
	char	   *appname = psprintf("snowid %s registry worker",
									 snowid_library_version);
	const char *vals[] = {"1", "30", "10", "3", appname, conninfo, NULL};
	TimestampTz until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													SNOWID_REGISTRY_TIMEOUT_MS);
	PostgresPollingStatusType st = PGRES_POLLING_WRITING;
	PGresult   *res;
	char		sysid[32];

	snowid_registry_disconnect();
	if (conn_info != NULL)
		pfree(conn_info);
	conn_info = MemoryContextStrdup(TopMemoryContext, conninfo);
	conn = PQconnectStartParams(keys, vals, 1);
	pfree(appname);
	if (conn == NULL || PQstatus(conn) == CONNECTION_BAD)
	{
		*error = snowid_conn_error("could not connect to the registry");
		snowid_registry_disconnect();
		return false;
	}
	while (st != PGRES_POLLING_OK)
	{
		if (st == PGRES_POLLING_FAILED)
		{
			*error = snowid_conn_error("could not connect to the registry");
			snowid_registry_disconnect();
			return false;
		}
		if (!conn_wait(st == PGRES_POLLING_READING ?
					   WL_SOCKET_READABLE : WL_SOCKET_WRITEABLE,
					   PQsocket(conn), until))
		{
			*error = pstrdup("could not connect to the registry in time");
			snowid_registry_disconnect();
			return false;
		}
		st = PQconnectPoll(conn);
	}
	if (PQsetnonblocking(conn, 1) != 0)
	{
		*error = snowid_conn_error("could not set up the connection to the registry");
		snowid_registry_disconnect();
		return false;
	}

	/*
	 * No wait of the registry's for a lock lasts long: a session that keeps
	 * a transaction open must not hold this worker (its own timeout ends
	 * the query on this side, these end it on the registry's).
	 */
	res = snowid_registry_exec("SELECT pg_catalog.set_config('search_path', 'pg_catalog', false), "
							   "pg_catalog.quote_ident(n.nspname), "
							   "(SELECT s.system_identifier FROM pg_catalog.pg_control_system() s), "
							   "e.extversion, e.oid, "
							   "pg_catalog.set_config('lock_timeout', '5s', false), "
							   "pg_catalog.set_config('statement_timeout', '9s', false), "
							   "pg_catalog.set_config('idle_in_transaction_session_timeout', '10s', false), "
							   "pg_catalog.set_config('default_transaction_isolation', 'read committed', false) "
							   "FROM pg_catalog.pg_extension e "
							   "JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace "
							   "WHERE e.extname OPERATOR(pg_catalog.=) 'snowid'",
							   0, NULL, SNOWID_REGISTRY_TIMEOUT_MS, error, NULL);
	if (res == NULL)
	{
		snowid_registry_disconnect();
		return false;
	}
	if (PQntuples(res) != 1)
	{
		PQclear(res);
		*error = pstrdup("the registry database has no snowid extension (run CREATE EXTENSION snowid there)");
		snowid_registry_disconnect();
		return false;
	}
	snprintf(sysid, sizeof(sysid), UINT64_FORMAT, GetSystemIdentifier());
	if (strcmp(PQgetvalue(res, 0, 2), sysid) == 0)
	{
		/* a database of this very server (or of a copy of it) */
		PQclear(res);
		*error = pstrdup("the registry is a database of this server itself (same system identifier), which cannot tell this server from another");
		snowid_registry_disconnect();
		return false;
	}
	if (!snowid_registry_version_ok(PQgetvalue(res, 0, 3),
									SNOWID_REGISTRY_MIN_VERSION))
	{
		*error = psprintf("the registry runs snowid %s, and this server needs %s or later there (run ALTER EXTENSION snowid UPDATE in the registry database)",
						  PQgetvalue(res, 0, 3), SNOWID_REGISTRY_MIN_VERSION);
		PQclear(res);
		snowid_registry_disconnect();
		return false;
	}
	conn_schema = pstrdup(PQgetvalue(res, 0, 1));
	conn_extension = (Oid) strtoul(PQgetvalue(res, 0, 4), NULL, 10);
	conn_sysid = strtou64(PQgetvalue(res, 0, 2), NULL, 10);
	strlcpy(conn_version, PQgetvalue(res, 0, 3), sizeof(conn_version));
	PQclear(res);
	return true;
}

/* Is a snowid version (major.minor) at least the one needed? */
static bool
snowid_registry_version_ok(const char *version, const char *need)
{
	int			major = 0;
	int			minor = 0;
	int			need_major = 0;
	int			need_minor = 0;

	if (sscanf(version, "%d.%d", &major, &minor) != 2 ||
		sscanf(need, "%d.%d", &need_major, &need_minor) != 2)
		return false;
	return major > need_major || (major == need_major && minor >= need_minor);
}

/* Does the connected registry run snowid `need` (major.minor) or later? */
bool
snowid_registry_has_version(const char *need)
{
	return conn_schema != NULL && snowid_registry_version_ok(conn_version, need);
}

/* The SQLSTATE of the last query's error ("" if it had none, or no query). */
const char *
snowid_registry_sqlstate(void)
{
	return conn_sqlstate;
}

/*
 * Does the connected registry take typed requests (snowid_registry_request,
 * 2.1 on)?  Until it is told otherwise for this connection
 * (snowid_registry_positional): then it is called as 2.0 was.
 */
bool
snowid_registry_takes_requests(void)
{
	return !conn_positional && snowid_registry_has_version("2.1");
}

void
snowid_registry_positional(void)
{
	conn_positional = true;
}

/*
 * An SQL expression, true when the function of this signature, looked up
 * by name in the registry's snowid schema in the same statement, is a
 * member of the registry's snowid extension: so that an answer comes from
 * the extension's own function and not from one planted by whoever may
 * create or rename schemas in the registry database (its owner).
 */
char *
snowid_registry_genuine(const char *signature)
{
	StringInfoData name;
	char	   *sql;

	/* the qualified signature as a string literal */
	initStringInfo(&name);
	for (const char *p = conn_schema; *p; p++)
	{
		if (*p == '\'')
			appendStringInfoChar(&name, '\'');
		appendStringInfoChar(&name, *p);
	}
	appendStringInfo(&name, ".%s", signature);
	sql = psprintf("EXISTS (SELECT FROM pg_catalog.pg_depend d "
				   "WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass "
				   "AND d.objid OPERATOR(pg_catalog.=) '%s'::pg_catalog.regprocedure "
				   "AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass "
				   "AND d.refobjid OPERATOR(pg_catalog.=) '%u'::pg_catalog.oid "
				   "AND d.deptype OPERATOR(pg_catalog.=) 'e')",
				   name.data, conn_extension);
	pfree(name.data);
	return sql;
}

/*
 * What the connected registry is, whatever the connection string that
 * reached it: its system identifier and database (false while not
 * connected).
 */
bool
snowid_registry_identity(uint64 *sysid, const char **dbname)
{
	if (conn_schema == NULL || conn_sysid == 0)
		return false;
	*sysid = conn_sysid;
	*dbname = PQdb(conn);
	return *dbname != NULL;
}

/*
 * Finish a query that a shutdown interrupted (its answer discarded), so
 * that the connection takes the next one; false with *error if it is not
 * done by until.
 */
bool
snowid_registry_drain(TimestampTz until, char **error)
{
	for (;;)
	{
		int			flush = PQflush(conn);
		PGresult   *res;

		if (flush < 0)
		{
			*error = snowid_conn_error("lost the connection to the registry");
			return false;
		}
		if (flush == 0 && !PQisBusy(conn))
		{
			res = PQgetResult(conn);
			if (res == NULL)
				return true;
			PQclear(res);
			continue;
		}
		if (!conn_wait(flush == 1 ?
					   WL_SOCKET_READABLE | WL_SOCKET_WRITEABLE :
					   WL_SOCKET_READABLE,
					   PQsocket(conn), until))
		{
			*error = pstrdup("the registry did not finish an earlier query in time");
			return false;
		}
		if (!PQconsumeInput(conn))
		{
			*error = snowid_conn_error("lost the connection to the registry");
			return false;
		}
	}
}
