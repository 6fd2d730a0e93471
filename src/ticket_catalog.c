/*-------------------------------------------------------------------------
 *
 * ticket_catalog.c
 *	  Ticket sequences: the catalog table snowid_ticket of this database's
 *	  snowid.  Where the table is, the row of a ticket, whether a sequence
 *	  is registered as a ticket (its dependency on the extension), a
 *	  ticket's name, the table's owner, and the removal of a dropped
 *	  ticket's row.
 *
 * All catalog access here is by OID through index scans: no SPI, no
 * search_path.  The bottom of the ticket files: it calls none of them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/pg_class.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "compat.h"
#include "miscadmin.h"
#include "pool.h"
#include "storage/lmgr.h"
#include "ticket.h"
#include "ticket_catalog.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

/* ---------- the catalog table ---------- */

/* Backend-local: the extension and its table in the current database. */
static Oid	cached_db = InvalidOid;
static Oid	cached_ext = InvalidOid;
static Oid	cached_table = InvalidOid;
static bool cached_guarded = false;

/* The schema of extension ext (PostgreSQL 15 does not export its own). */
static Oid
snowid_ticket_extension_schema(Oid ext)
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

/* The catalog table's owner, read by snowid_ticket_catalog_owner(). */
static Oid	owner_nsp = InvalidOid;
static Oid	owner_table = InvalidOid;
static Oid	owner_role = InvalidOid;

/*
 * The table changed (ALTER EXTENSION UPDATE adds served; ALTER TABLE
 * OWNER, REASSIGN OWNED or DROP EXTENSION): look again.
 */
void
snowid_ticket_table_cb(Datum arg, Oid relid)
{
	if (!OidIsValid(relid) || relid == cached_table)
		cached_table = InvalidOid;
	if (!OidIsValid(relid) || relid == owner_table)
		owner_table = InvalidOid;
}

/*
 * The OID of table snowid_ticket of this database's snowid, or InvalidOid
 * if snowid is not installed here; *extoid gets the extension's OID.
 */
Oid
snowid_ticket_table(Oid *extoid)
{
	bool		guarded;

	return snowid_ticket_table_guarded(extoid, &guarded);
}

/*
 * The same, and whether the table has the served mark and the trigger of
 * version 1.2: a database still at 1.1 (library installed, ALTER EXTENSION
 * UPDATE not yet run) serves its tickets as 1.1 did until it is updated.
 */
Oid
snowid_ticket_table_guarded(Oid *extoid, bool *guarded)
{
	Oid			ext;
	Oid			nsp;

	if (cached_db == MyDatabaseId && OidIsValid(cached_table))
	{
		char	   *name = get_rel_name(cached_table);

		/* DROP EXTENSION drops the table, whose invalidation resets this */
		if (name != NULL && strcmp(name, "snowid_ticket") == 0)
		{
			if (extoid)
				*extoid = cached_ext;
			*guarded = cached_guarded;
			return cached_table;
		}
	}
	cached_table = InvalidOid;
	ext = get_extension_oid("snowid", true);
	if (!OidIsValid(ext))
		return InvalidOid;
	nsp = snowid_ticket_extension_schema(ext);
	cached_table = get_relname_relid("snowid_ticket", nsp);
	cached_guarded = OidIsValid(cached_table) &&
		get_attnum(cached_table, "served") == Anum_ticket_served;
	cached_ext = ext;
	cached_db = MyDatabaseId;
	if (extoid)
		*extoid = ext;
	*guarded = cached_guarded;
	return cached_table;
}

/* A scan key on column seqrelid, the primary key of snowid_ticket. */
void
snowid_ticket_key(ScanKeyData *key, Oid relid)
{
	ScanKeyInit(key, Anum_ticket_seqrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
}

/* ---------- rows ---------- */

/* A ticket's or a counter's sequence, qualified for messages (its OID if gone). */
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

/*
 * The owner of the catalog table snowid_ticket in schema extnsp, cached
 * until the table's relcache entry is invalidated (snowid_ticket_table_cb):
 * every counter statement runs as it.
 */
Oid
snowid_ticket_catalog_owner(Oid extnsp)
{
	Oid			catalog;
	HeapTuple	tup;

	if (likely(OidIsValid(owner_table) && owner_nsp == extnsp))
		return owner_role;
	catalog = get_relname_relid("snowid_ticket", extnsp);
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(catalog));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "table snowid_ticket of extension snowid not found");
	owner_role = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	owner_nsp = extnsp;
	owner_table = catalog;
	return owner_role;
}

/* ---------- registration ---------- */

/* Does sequence relid depend on extension extoid (as a ticket does)? */
bool
snowid_ticket_has_dependency(Oid relid, Oid extoid)
{
	Relation	depRel;
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;
	bool		found = false;

	depRel = table_open(DependRelationId, AccessShareLock);
	ScanKeyInit(&key[0], Anum_pg_depend_classid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(RelationRelationId));
	ScanKeyInit(&key[1], Anum_pg_depend_objid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(relid));
	scan = systable_beginscan(depRel, DependDependerIndexId, true, NULL, 2, key);
	while (!found && HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_depend dep = (Form_pg_depend) GETSTRUCT(tup);

		found = dep->refclassid == ExtensionRelationId &&
			dep->refobjid == extoid && dep->objsubid == 0 &&
			dep->deptype == DEPENDENCY_NORMAL;
	}
	systable_endscan(scan);
	table_close(depRel, AccessShareLock);
	return found;
}

/* Is relid a sequence registered as a ticket of the extension extoid? */
bool
snowid_ticket_is_ticket(Oid relid, Oid extoid)
{
	return get_rel_relkind(relid) == RELKIND_SEQUENCE &&
		snowid_ticket_has_dependency(relid, extoid);
}

/* ---------- DROP ---------- */

/*
 * Remove the rows of snowid_ticket of sequence relid, which is being
 * dropped (or was just created: any row with its OID is stale).  Runs with
 * no privilege check, in the dropping transaction.
 */
void
snowid_ticket_forget(Oid relid)
{
	Oid			table;
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData key;
	HeapTuple	tup;

	if (get_rel_relkind(relid) != RELKIND_SEQUENCE)
		return;
	table = snowid_ticket_table(NULL);
	if (!OidIsValid(table))
		return;
	rel = table_open(table, RowExclusiveLock);
	snowid_ticket_key(&key, relid);
	scan = systable_beginscan(rel, snowid_primary_key_index(rel), true,
							  NULL, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
		simple_heap_delete(rel, &tup->t_self);
	systable_endscan(scan);
	table_close(rel, RowExclusiveLock);
}

/*
 * The pool that ticket relid's row names, into pool (SNOWID_POOL_NAME_LEN
 * bytes); false if it has no row or the row names none.  And whether any
 * row but relid's names pool `pool`.  Both read the table in C with the
 * latest snapshot, so that rows this transaction deleted (an earlier
 * ticket of the same DROP) are not seen.
 */
static bool
snowid_ticket_scan_pool(Oid only, Oid except, const char *pool, char *found_pool)
{
	Oid			table = snowid_ticket_table(NULL);
	AttrNumber	pool_attnum;
	Relation	rel;
	SysScanDesc scan;
	Snapshot	snapshot;
	HeapTuple	tup;
	bool		found = false;

	if (!OidIsValid(table))
		return false;
	pool_attnum = get_attnum(table, "pool");
	if (pool_attnum <= 0)
		return false;			/* a database still at 1.3: no pools */
	rel = table_open(table, AccessShareLock);
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	scan = systable_beginscan(rel, InvalidOid, false, snapshot, 0, NULL);
	while (!found && HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		TupleDesc	desc = RelationGetDescr(rel);
		bool		isnull;
		Datum		seq = heap_getattr(tup, Anum_ticket_seqrelid, desc, &isnull);
		Datum		d;
		char		name[SNOWID_POOL_NAME_LEN];

		if (isnull || (OidIsValid(only) && DatumGetObjectId(seq) != only) ||
			DatumGetObjectId(seq) == except)
			continue;
		d = heap_getattr(tup, pool_attnum, desc, &isnull);
		if (isnull)
			continue;
		text_to_cstring_buffer(DatumGetTextPP(d), name, sizeof(name));
		if (found_pool != NULL)
		{
			strlcpy(found_pool, name, SNOWID_POOL_NAME_LEN);
			found = true;
		}
		else
			found = strcmp(name, pool) == 0;
	}
	systable_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);
	return found;
}

bool
snowid_ticket_pool_of(Oid relid, char *pool)
{
	if (get_rel_relkind(relid) != RELKIND_SEQUENCE)
		return false;
	return snowid_ticket_scan_pool(relid, InvalidOid, NULL, pool);
}

bool
snowid_ticket_pool_named(const char *pool, Oid except)
{
	return snowid_ticket_scan_pool(InvalidOid, except, pool, NULL);
}
