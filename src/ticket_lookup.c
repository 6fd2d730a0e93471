/*-------------------------------------------------------------------------
 *
 * ticket_lookup.c
 *	  Ticket sequences: the per-backend cache of their settings and of the
 *	  privileges checked, its invalidation, and the binding of a cache entry
 *	  to its slot.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pool.h"
#include "ticket.h"
#include "ticket_catalog.h"
#include "ticket_lookup.h"
#include "ticket_slot.h"
#include "ticketmath.h"
#include "utils/acl.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

static HTAB *ticket_cache = NULL;

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
		snowid_pool_resolve(-1, entry->pool) : -1;
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
