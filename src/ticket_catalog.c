/*-------------------------------------------------------------------------
 *
 * ticket_catalog.c
 *	  Ticket sequences: their settings in the catalog table snowid_ticket,
 *	  the per-backend cache of settings and privileges, and the hooks that
 *	  free slots when a ticket sequence, the extension or a database is
 *	  dropped.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "compat.h"
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "snowid.h"
#include "ticket.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

static HTAB *ticket_cache = NULL;
static object_access_hook_type prev_object_access_hook = NULL;

/* ---------- DROP hooks ---------- */

/*
 * DROP of a sequence, of the extension or of a database frees the slots it
 * leaves behind.  DROP of a ticket sequence also removes its row of
 * snowid_ticket here, in the dropping transaction: OAT_DROP runs in every
 * mode, while the event trigger of the SQL script (kept for servers that
 * do not preload snowid) is skipped under session_replication_role =
 * replica and in single-user mode.
 */
static void
snowid_ticket_object_access(ObjectAccessType access, Oid classId,
							Oid objectId, int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);

	if (access != OAT_DROP)
		return;
	if (classId == RelationRelationId && subId == 0)
		snowid_ticket_forget(objectId);
	if (ticket_shared == NULL)
		return;
	if (classId == RelationRelationId && subId == 0)
		snowid_ticket_free_slots(MyDatabaseId, objectId);
	else if (classId == DatabaseRelationId)
		snowid_ticket_free_slots(objectId, InvalidOid);
	else if (classId == ExtensionRelationId &&
			 objectId == get_extension_oid("snowid", true))
		snowid_ticket_free_slots(MyDatabaseId, InvalidOid);
}

void
snowid_ticket_init(void)
{
	prev_object_access_hook = object_access_hook;
	object_access_hook = snowid_ticket_object_access;
	snowid_ticket_guard_init();
}

/* ---------- per-backend cache of settings and privileges ---------- */

static void
snowid_ticket_relcache_cb(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	SnowidTicketEntry *entry;

	if (ticket_cache == NULL)
		return;
	if (OidIsValid(relid))
	{
		entry = hash_search(ticket_cache, &relid, HASH_FIND, NULL);
		if (entry)
			entry->valid = false;
		return;
	}
	hash_seq_init(&status, ticket_cache);
	while ((entry = hash_seq_search(&status)) != NULL)
		entry->valid = false;
}

/*
 * A role or a role membership changed (ALTER ROLE ... NOSUPERUSER or
 * NOINHERIT, GRANT/REVOKE of a role, DROP ROLE, or ALTER DATABASE ... OWNER,
 * which moves the membership in pg_database_owner, as acl.c's membership
 * cache knows): check privileges again.
 * GRANT/REVOKE on the sequence itself and ALTER ... OWNER invalidate its
 * relcache entry, which drops the whole cache entry; SET ROLE and SECURITY
 * DEFINER change the user, which the check compares.
 */
static void
snowid_ticket_roles_cb(Datum arg, int cacheid, uint32 hashvalue)
{
	HASH_SEQ_STATUS status;
	SnowidTicketEntry *entry;

	if (ticket_cache == NULL)
		return;
	hash_seq_init(&status, ticket_cache);
	while ((entry = hash_seq_search(&status)) != NULL)
		entry->acl_user = InvalidOid;
}

const char *
snowid_ticket_name(Oid relid)
{
	char	   *name = get_rel_name(relid);
	char	   *nsp = get_namespace_name(get_rel_namespace(relid));

	if (name == NULL)
		return psprintf("%u", relid);
	return quote_qualified_identifier(nsp, name);
}

/* Maximum of a ticket type, or 0 if the type is not allowed. */
int64
snowid_ticket_type_max(Oid type)
{
	if (type == INT4OID)
		return PG_INT32_MAX;
	if (type == INT8OID)
		return PG_INT64_MAX;
	return 0;
}

/*
 * Find the row of ticket relid in the catalog table of schema extnsp, read
 * in C (no SQL: nothing the caller's search_path holds can run here), with
 * the latest snapshot, so that a row a DROP has deleted is not found once
 * the DROP has committed.  False if there is none; else the settings, the
 * creation stamp and the inserting transaction go to entry.
 */
bool
snowid_ticket_find_row(Oid extnsp, Oid relid, SnowidTicketEntry *entry)
{
	Oid			catalog = get_relname_relid("snowid_ticket", extnsp);
	Relation	rel;
	Oid			pkey;
	ScanKeyData key;
	SysScanDesc scan;
	Snapshot	snapshot;
	HeapTuple	tup;
	bool		found = false;
	AttrNumber	pool_attnum;

	if (!OidIsValid(catalog))
		elog(ERROR, "table snowid_ticket of extension snowid not found");
	/* column pool: from version 1.4 on */
	pool_attnum = get_attnum(catalog, "pool");
	rel = table_open(catalog, AccessShareLock);
	if (RelationGetDescr(rel)->natts < 7)
		elog(ERROR, "table snowid_ticket of extension snowid has %d columns",
			 RelationGetDescr(rel)->natts);
	pkey = snowid_primary_key_index(rel);
	/* the latest, but no new snapshot may be taken in parallel mode */
	snapshot = RegisterSnapshot(!IsInParallelMode() ? GetLatestSnapshot() :
								ActiveSnapshotSet() ? GetActiveSnapshot() :
								GetTransactionSnapshot());
	/* seqrelid (column 1) is a regclass: compared as an OID */
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	scan = systable_beginscan(rel, pkey, OidIsValid(pkey), snapshot, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		TupleDesc	desc = RelationGetDescr(rel);
		Datum		values[7];
		bool		nulls[7];

		for (int i = 0; i < 7; i++)
		{
			values[i] = heap_getattr(tup, i + 1, desc, &nulls[i]);
			if (nulls[i])
				elog(ERROR, "column %d of snowid_ticket is null", i + 1);
		}
		entry->spec.shard = DatumGetInt32(values[1]);
		entry->spec.shards = DatumGetInt32(values[2]);
		entry->spec.block = DatumGetInt32(values[3]);
		entry->spec.start = DatumGetInt64(values[4]);
		entry->spec.maxvalue =
			snowid_ticket_type_max(DatumGetObjectId(values[5]));
		entry->stamp = DatumGetInt64(values[6]);
		entry->pool[0] = '\0';
		if (pool_attnum > 0)
		{
			bool		isnull;
			Datum		d = heap_getattr(tup, pool_attnum, desc, &isnull);

			if (!isnull)
				text_to_cstring_buffer(DatumGetTextPP(d), entry->pool,
									   sizeof(entry->pool));
		}
		entry->xmin = HeapTupleHeaderGetXmin(tup->t_data);
		found = true;
	}
	systable_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);
	return found;
}

/* Read the settings of ticket relid from the catalog in schema extnsp. */
static void
snowid_ticket_read_catalog(Oid extnsp, Oid relid, SnowidTicketEntry *entry)
{
	if (!snowid_ticket_find_row(extnsp, relid, entry))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a ticket sequence",
						snowid_ticket_name(relid)),
				 errhint("Create ticket sequences with snowid_ticket_create().")));

	/* Rows are written only by snowid_ticket_create; be safe anyway. */
	if (entry->spec.shards < 1 || entry->spec.shard < 0 ||
		entry->spec.shard >= entry->spec.shards || entry->spec.block < 1 ||
		entry->spec.maxvalue == 0 || !snowid_ticket_has_values(&entry->spec))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("settings of ticket sequence \"%s\" are invalid",
						snowid_ticket_name(relid)),
				 errdetail("The row of snowid_ticket has been changed by hand.")));
	/* a pooled ticket: its pool's slot in this server's holdings */
	entry->pool_idx = entry->pool[0] != '\0' ?
		snowid_pool_attach(entry->pool, false) : -1;
}

/*
 * Is the ticket of a slot (relid, created at stamp) still alive in this
 * database: its sequence exists and the catalog row (in schema extnsp) is
 * the one it was bound for?  Used to recycle slots.
 */
bool
snowid_ticket_alive(Oid extnsp, Oid relid, int64 stamp)
{
	SnowidTicketEntry row;

	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		return false;
	return snowid_ticket_find_row(extnsp, relid, &row) && row.stamp == stamp;
}

/*
 * The cache entry of ticket relid with valid settings; checks USAGE or
 * UPDATE for the current user if check_acl.  fn_oid is the calling SQL
 * function, whose schema is the extension's.
 */
SnowidTicketEntry *
snowid_ticket_lookup(Oid relid, Oid fn_oid, bool check_acl)
{
	SnowidTicketEntry *entry;
	bool		found;

	if (unlikely(ticket_cache == NULL))
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(SnowidTicketEntry);
		ticket_cache = hash_create("snowid ticket cache", 16, &ctl,
								   HASH_ELEM | HASH_BLOBS);
		CacheRegisterRelcacheCallback(snowid_ticket_relcache_cb, (Datum) 0);
		CacheRegisterSyscacheCallback(AUTHMEMROLEMEM, snowid_ticket_roles_cb,
									  (Datum) 0);
		CacheRegisterSyscacheCallback(AUTHOID, snowid_ticket_roles_cb,
									  (Datum) 0);
		/* the owner of the database is a member of pg_database_owner */
		CacheRegisterSyscacheCallback(DATABASEOID, snowid_ticket_roles_cb,
									  (Datum) 0);
	}

	entry = hash_search(ticket_cache, &relid, HASH_ENTER, &found);
	if (!found)
	{
		entry->valid = false;
		entry->slot = -1;
		entry->acl_user = InvalidOid;
	}
	if (unlikely(!entry->valid))
	{
		SnowidTicketEntry fresh;
		Oid			extnsp = get_func_namespace(fn_oid);

		entry->slot = -1;
		entry->acl_user = InvalidOid;
		snowid_ticket_read_catalog(extnsp, relid, &fresh);
		entry->spec = fresh.spec;
		memcpy(entry->pool, fresh.pool, sizeof(entry->pool));
		entry->pool_idx = fresh.pool_idx;
		entry->stamp = fresh.stamp;
		entry->xmin = fresh.xmin;
		entry->extnsp = extnsp;
		entry->valid = true;
	}
	if (check_acl && unlikely(entry->acl_user != GetUserId()))
	{
		AclResult	aclresult;

		aclresult = pg_class_aclcheck(relid, GetUserId(),
									  ACL_USAGE | ACL_UPDATE);
		if (aclresult != ACLCHECK_OK)
			aclcheck_error(aclresult, OBJECT_SEQUENCE, get_rel_name(relid));
		entry->acl_user = GetUserId();
	}
	return entry;
}

/*
 * The cache entry of ticket relid, checked like snowid_ticket_lookup, and
 * bound to a slot.  Binding happens only under a lock on the sequence that
 * DROP conflicts with, and after checking that the sequence still exists:
 * DROP frees the slots of the sequence (object access hook) while holding
 * its AccessExclusiveLock until commit, so no slot is ever bound for a
 * ticket that is already dropped.  The lock also processes pending
 * invalidations, so the settings read are current.
 */
SnowidTicketEntry *
snowid_ticket_lookup_bound(Oid relid, Oid fn_oid)
{
	SnowidTicketEntry *entry;

	(void) snowid_ticket_lock_existing(relid);
	entry = snowid_ticket_lookup(relid, fn_oid, true);
	if (entry->slot < 0)
		snowid_ticket_bind(entry);
	return entry;
}

/*
 * Take a RowExclusiveLock on ticket sequence relid, which DROP conflicts
 * with, and return its name.  A sequence dropped while we waited is a clear
 * error naming it, not "could not open relation".
 */
const char *
snowid_ticket_lock_existing(Oid relid)
{
	const char *name = snowid_ticket_name(relid);

	LockRelationOid(relid, RowExclusiveLock);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("ticket sequence \"%s\" does not exist", name),
				 errdetail("It was dropped while this call waited for it.")));
	return name;
}

/* The owner of the catalog table snowid_ticket in schema extnsp. */
Oid
snowid_ticket_catalog_owner(Oid extnsp)
{
	Oid			catalog = get_relname_relid("snowid_ticket", extnsp);
	HeapTuple	tup;
	Oid			owner;

	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(catalog));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "table snowid_ticket of extension snowid not found");
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}
