/*-------------------------------------------------------------------------
 *
 * ticket_lookup.c
 *	  Ticket sequences: the per-backend cache of their settings and of the
 *	  privileges checked, its invalidation, the binding of a cache entry to
 *	  its slot, and the per-backend cache of ticket names looked up.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "compat.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "pool_take.h"
#include "ticket.h"
#include "ticket_catalog.h"
#include "ticket_lookup.h"
#include "ticket_slot.h"
#include "ticketmath.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/varlena.h"

static HTAB *ticket_cache = NULL;

/* the generation of name lookups (see "tickets named by text" below) */
static uint64 ticket_names_generation = 1;

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

	ticket_names_generation++;	/* a lookup checks USAGE on schemas */
	if (ticket_cache == NULL)
		return;
	hash_seq_init(&status, ticket_cache);
	while ((entry = hash_seq_search(&status)) != NULL)
		entry->acl_user = InvalidOid;
}

/*
 * A relation or a schema was created, renamed, dropped or had its
 * privileges changed: look names up again.
 */
static void
snowid_ticket_names_cb(Datum arg, int cacheid, uint32 hashvalue)
{
	ticket_names_generation++;
}

/* The invalidation callbacks of both caches, registered once per backend. */
static void
snowid_ticket_register_callbacks(void)
{
	static bool registered = false;

	if (registered)
		return;
	CacheRegisterRelcacheCallback(snowid_ticket_relcache_cb, (Datum) 0);
	CacheRegisterSyscacheCallback(AUTHMEMROLEMEM, snowid_ticket_roles_cb,
								  (Datum) 0);
	CacheRegisterSyscacheCallback(AUTHOID, snowid_ticket_roles_cb,
								  (Datum) 0);
	/* the owner of the database is a member of pg_database_owner */
	CacheRegisterSyscacheCallback(DATABASEOID, snowid_ticket_roles_cb,
								  (Datum) 0);
	CacheRegisterSyscacheCallback(RELNAMENSP, snowid_ticket_names_cb,
								  (Datum) 0);
	CacheRegisterSyscacheCallback(NAMESPACEOID, snowid_ticket_names_cb,
								  (Datum) 0);
	registered = true;
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
		snowid_ticket_register_callbacks();
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

/* ---------- tickets named by text ---------- */

/*
 * snowid_ticket_next(text) looks its name up at every call, in the caller's
 * search_path, as nextval('name'::text) does: a column default written with
 * it depends on no sequence (Citus rewrites a default that does).  The
 * lookups are cached per backend and per call site (fn_extra), and a cached
 * answer is used only while nothing it depended on can have changed: the
 * search_path setting, the current user (the search_path's "$user", and the
 * USAGE on schemas that a lookup checks), and the catalogs a lookup reads
 * (pg_class by name, pg_namespace, roles and their memberships).  Any
 * invalidation of those starts a new generation of lookups.
 */
#define TICKET_NAME_MAX 256		/* longer names are looked up every time */
#define TICKET_NAMES_MAX 256	/* entries kept before the cache starts over */

typedef struct SnowidTicketName
{
	char		name[TICKET_NAME_MAX];	/* hash key, NUL-terminated */
	Oid			relid;
	uint64		generation;
} SnowidTicketName;

static HTAB *ticket_names = NULL;
static char *ticket_names_path = NULL;	/* search_path of this generation */
static Oid	ticket_names_user = InvalidOid; /* user of this generation */

/* The generation of lookups valid now: a new one if the path or user moved. */
static uint64
snowid_ticket_names_current(void)
{
	if (unlikely(ticket_names == NULL))
	{
		HASHCTL		ctl;

		ctl.keysize = TICKET_NAME_MAX;
		ctl.entrysize = sizeof(SnowidTicketName);
		ticket_names = hash_create("snowid ticket names", 16, &ctl,
								   HASH_ELEM | HASH_STRINGS);
		snowid_ticket_register_callbacks();
	}
	if (unlikely(ticket_names_user != GetUserId() ||
				 ticket_names_path == NULL ||
				 strcmp(ticket_names_path, namespace_search_path) != 0))
	{
		char	   *path = MemoryContextStrdup(TopMemoryContext,
											   namespace_search_path);

		if (ticket_names_path != NULL)
			pfree(ticket_names_path);
		ticket_names_path = path;
		ticket_names_user = GetUserId();
		ticket_names_generation++;
	}
	return ticket_names_generation;
}

/* Look name up in the search_path: InvalidOid if no relation bears it. */
static Oid
snowid_ticket_name_lookup(text *name)
{
	return RangeVarGetRelid(makeRangeVarFromNameList(textToQualifiedNameList(name)),
							NoLock, true);
}

/*
 * The relation that name (as text) stands for now, for the call site
 * flinfo: looked up as a qualified name in the search_path, or cached;
 * InvalidOid if there is none (not cached).  No lock is taken: a caller
 * that locks the relation looks the name up again after (the lock
 * processes invalidations) and retries if the answer moved.
 */
Oid
snowid_relation_named(text *name, FmgrInfo *flinfo)
{
	uint64		generation = snowid_ticket_names_current();
	const char *data = VARDATA_ANY(name);
	int			len = VARSIZE_ANY_EXHDR(name);
	SnowidTicketName *site = (SnowidTicketName *) flinfo->fn_extra;
	SnowidTicketName *entry;
	char		key[TICKET_NAME_MAX];
	Oid			relid;

	if (unlikely(len >= TICKET_NAME_MAX))
		return snowid_ticket_name_lookup(name);

	/* the call site's last answer */
	if (likely(site != NULL && site->generation == generation &&
			   strncmp(site->name, data, len) == 0 && site->name[len] == '\0'))
		return site->relid;

	memcpy(key, data, len);
	key[len] = '\0';
	entry = hash_search(ticket_names, key, HASH_FIND, NULL);
	if (entry != NULL && entry->generation == generation)
		relid = entry->relid;
	else
	{
		relid = snowid_ticket_name_lookup(name);
		if (!OidIsValid(relid))
			return InvalidOid;
		/* a lookup may process invalidations: keep it only if none came */
		if (generation == snowid_ticket_names_current())
		{
			bool		found;

			if (entry == NULL &&
				hash_get_num_entries(ticket_names) >= TICKET_NAMES_MAX)
			{
				HASH_SEQ_STATUS status;
				SnowidTicketName *old;

				hash_seq_init(&status, ticket_names);
				while ((old = hash_seq_search(&status)) != NULL)
					(void) hash_search(ticket_names, old->name, HASH_REMOVE,
									   NULL);
			}
			entry = hash_search(ticket_names, key, HASH_ENTER, &found);
			entry->relid = relid;
			entry->generation = generation;
		}
	}

	if (site == NULL)
	{
		site = MemoryContextAlloc(flinfo->fn_mcxt, sizeof(SnowidTicketName));
		flinfo->fn_extra = site;
	}
	memcpy(site->name, key, len + 1);
	site->relid = relid;
	site->generation = generation;
	return relid;
}

/* The same for a ticket: an error if no relation bears the name. */
Oid
snowid_ticket_named(text *name, FmgrInfo *flinfo)
{
	Oid			relid = snowid_relation_named(name, flinfo);

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("ticket sequence \"%s\" does not exist",
						NameListToString(textToQualifiedNameList(name))),
				 errdetail("snowid_ticket_next() looks the name up in the search_path when it takes a value."),
				 errhint("Create the ticket sequence with snowid_ticket_create() on every server that takes its values (on Citus, on every node).")));
	return relid;
}
