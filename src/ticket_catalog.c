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

#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "snowid.h"
#include "ticket.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
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

/* Role memberships changed: check privileges again. */
static void
snowid_ticket_authmem_cb(Datum arg, int cacheid, uint32 hashvalue)
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

/* Read the settings of ticket relid from the catalog in schema nspid. */
static void
snowid_ticket_read_catalog(Oid nspid, Oid relid, SnowidTicketEntry *entry)
{
	char	   *query;
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(relid)};
	bool		isnull;
	TupleDesc	desc;
	HeapTuple	tup;
	int			ret;

	query = psprintf("SELECT shard, shards, block, start, type::oid, stamp "
					 "FROM %s.snowid_ticket WHERE seqrelid = $1::oid::regclass",
					 quote_identifier(get_namespace_name(nspid)));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	ret = SPI_execute_with_args(query, 1, argtypes, args, NULL, true, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "reading snowid_ticket failed: %d", ret);
	if (SPI_processed == 0)
	{
		const char *name = snowid_ticket_name(relid);

		SPI_finish();
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a ticket sequence", name),
				 errhint("Create ticket sequences with snowid_ticket_create().")));
	}
	desc = SPI_tuptable->tupdesc;
	tup = SPI_tuptable->vals[0];
	entry->spec.shard = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
	entry->spec.shards = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
	entry->spec.block = DatumGetInt32(SPI_getbinval(tup, desc, 3, &isnull));
	entry->spec.start = DatumGetInt64(SPI_getbinval(tup, desc, 4, &isnull));
	entry->spec.maxvalue =
		snowid_ticket_type_max(DatumGetObjectId(SPI_getbinval(tup, desc, 5, &isnull)));
	entry->stamp = DatumGetInt64(SPI_getbinval(tup, desc, 6, &isnull));
	SPI_finish();

	/* Rows are written only by snowid_ticket_create; be safe anyway. */
	if (entry->spec.shards < 1 || entry->spec.shard < 0 ||
		entry->spec.shard >= entry->spec.shards || entry->spec.block < 1 ||
		entry->spec.maxvalue == 0 || !snowid_ticket_has_values(&entry->spec))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("settings of ticket sequence \"%s\" are invalid",
						snowid_ticket_name(relid)),
				 errdetail("The row of snowid_ticket has been changed by hand.")));
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
		CacheRegisterSyscacheCallback(AUTHMEMROLEMEM, snowid_ticket_authmem_cb,
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

		entry->slot = -1;
		entry->acl_user = InvalidOid;
		snowid_ticket_read_catalog(get_func_namespace(fn_oid), relid, &fresh);
		entry->spec = fresh.spec;
		entry->stamp = fresh.stamp;
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
