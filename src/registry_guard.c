/*-------------------------------------------------------------------------
 *
 * registry_guard.c
 *	  snowid_drop_guard(): the event trigger that keeps a role that is not
 *	  a superuser from dropping the snowid extension or its schema.
 *
 * A registry's leases live in the extension's tables: dropped, the
 * registry forgets which server holds which node.  The owner of the
 * extension's schema (in a registry installed in public, the database's
 * owner, not a superuser) could drop the schema with everything in it,
 * the extension included (DROP SCHEMA ... CASCADE asks no owner of what
 * it drops along).  This trigger fires at ddl_command_start of DROP
 * SCHEMA, DROP EXTENSION and DROP OWNED, reads the statement and refuses
 * one that names snowid or its schema (or, for DROP OWNED, the role that
 * owns its schema) unless the current user is a superuser.  A superuser's
 * drop is recorded in $PGDATA/snowid.dropped.<database OID> (its time is
 * the file's): snowid_registry_dropped_at() tells a registry created again
 * from a new one, so that only the former waits for its old holders.
 * Nothing here touches shared memory or GUCs; it needs no preload.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_namespace.h"
#include "commands/event_trigger.h"
#include "commands/extension.h"
#include "durable.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/acl.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include <sys/stat.h>

PG_FUNCTION_INFO_V1(snowid_drop_guard);
PG_FUNCTION_INFO_V1(snowid_registry_dropped_at);

#define SNOWID_DROPPED_FILE "snowid.dropped.%u"

/* The schema of extension ext (PostgreSQL 15 does not export its own). */
static Oid
snowid_guard_extension_schema(Oid ext)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			nsp = InvalidOid;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(ext));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		nsp = ((Form_pg_extension) GETSTRUCT(tup))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return nsp;
}

/*
 * snowid or its schema is being dropped: refused for a role that is not a
 * superuser; for a superuser, recorded (the leases go with it).
 */
static void
snowid_guard_refuse(const char *what, const char *schema)
{
	if (superuser())
	{
		char		path[MAXPGPATH];
		char		tmp[MAXPGPATH];

		snprintf(path, sizeof(path), SNOWID_DROPPED_FILE, MyDatabaseId);
		snprintf(tmp, sizeof(tmp), SNOWID_DROPPED_FILE ".tmp", MyDatabaseId);
		(void) snowid_write_durably(path, tmp, "dropped\n", 8, WARNING);
		return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("only a superuser may drop %s", what),
			 errdetail("The tables of snowid in schema \"%s\" hold the registry's leases and pools: dropped, the registry forgets which server holds which node and range.",
					   schema),
			 errhint("Ask a superuser to drop it; once snowid is created again, the registry grants nothing new until its holders have had time to re-assert their leases (snowid_registry_settings.reassert_grace).")));
}

Datum
snowid_drop_guard(PG_FUNCTION_ARGS)
{
	EventTriggerData *trigdata;
	Node	   *parsetree;
	Oid			ext;
	Oid			nsp;
	char	   *nspname;
	ListCell   *lc;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		elog(ERROR, "snowid_drop_guard() was not called by the event trigger manager");
	trigdata = (EventTriggerData *) fcinfo->context;
	parsetree = trigdata->parsetree;

	ext = get_extension_oid("snowid", true);
	if (!OidIsValid(ext))
		PG_RETURN_VOID();
	nsp = snowid_guard_extension_schema(ext);
	nspname = get_namespace_name(nsp);
	if (nspname == NULL)
		PG_RETURN_VOID();

	if (IsA(parsetree, DropStmt))
	{
		DropStmt   *stmt = (DropStmt *) parsetree;

		if (stmt->removeType != OBJECT_EXTENSION &&
			stmt->removeType != OBJECT_SCHEMA)
			PG_RETURN_VOID();
		foreach(lc, stmt->objects)
		{
			Node	   *obj = (Node *) lfirst(lc);

			if (!IsA(obj, String))
				continue;
			if (stmt->removeType == OBJECT_EXTENSION &&
				strcmp(strVal(obj), "snowid") == 0)
				snowid_guard_refuse("the snowid extension", nspname);
			if (stmt->removeType == OBJECT_SCHEMA &&
				strcmp(strVal(obj), nspname) == 0)
				snowid_guard_refuse(psprintf("schema \"%s\", which holds the snowid extension",
											 nspname), nspname);
		}
	}
	else if (IsA(parsetree, DropOwnedStmt))
	{
		DropOwnedStmt *stmt = (DropOwnedStmt *) parsetree;
		HeapTuple	tup;
		Oid			owner;

		tup = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(nsp));
		if (!HeapTupleIsValid(tup))
			PG_RETURN_VOID();
		owner = ((Form_pg_namespace) GETSTRUCT(tup))->nspowner;
		ReleaseSysCache(tup);
		foreach(lc, stmt->roles)
		{
			RoleSpec   *role = (RoleSpec *) lfirst(lc);

			if (get_rolespec_oid(role, true) == owner)
				snowid_guard_refuse(psprintf("schema \"%s\", which holds the snowid extension",
											 nspname), nspname);
		}
	}
	PG_RETURN_VOID();
}

/* When snowid was last dropped in this database by a superuser, or NULL. */
Datum
snowid_registry_dropped_at(PG_FUNCTION_ARGS)
{
	char		path[MAXPGPATH];
	struct stat st;

	snprintf(path, sizeof(path), SNOWID_DROPPED_FILE, MyDatabaseId);
	if (stat(path, &st) != 0)
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(time_t_to_timestamptz(st.st_mtime));
}
