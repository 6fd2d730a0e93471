/*-------------------------------------------------------------------------
 *
 * counter_catalog.c
 *	  Counters per key: a counter named by text, found in the caller's
 *	  search_path at every call (as nextval('name'::text); the lookup
 *	  cached per backend as a ticket's name is), locked against a
 *	  concurrent DROP, its privileges checked at every call, and its
 *	  settings (the row of snowid_counter, fixed once created) cached per
 *	  backend until its sequence's relcache entry is invalidated (DROP,
 *	  ALTER, GRANT).  Also the key argument, as text, checked.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "compat.h"
#include "counter_catalog.h"
#include "counter_exec.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "storage/lmgr.h"
#include "ticket_catalog.h"
#include "ticket_lookup.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/varlena.h"

typedef struct SnowidCounterEntry
{
	Oid			relid;			/* hash key */
	bool		valid;
	SnowidCounter counter;
} SnowidCounterEntry;

static HTAB *counter_cache = NULL;

static void
snowid_counter_relcache_cb(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	SnowidCounterEntry *entry;

	if (counter_cache == NULL)
		return;
	hash_seq_init(&status, counter_cache);
	while ((entry = hash_seq_search(&status)) != NULL)
		if (!OidIsValid(relid) || entry->relid == relid)
			entry->valid = false;
}

static SnowidCounterEntry *
snowid_counter_entry(Oid relid)
{
	bool		found;
	SnowidCounterEntry *entry;

	if (unlikely(counter_cache == NULL))
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(SnowidCounterEntry);
		counter_cache = hash_create("snowid counters", 16, &ctl,
									HASH_ELEM | HASH_BLOBS);
		CacheRegisterRelcacheCallback(snowid_counter_relcache_cb, (Datum) 0);
	}
	entry = hash_search(counter_cache, &relid, HASH_ENTER, &found);
	if (!found)
		entry->valid = false;
	return entry;
}

static const SnowidCounterStmt counter_settings = {
	"SELECT type::pg_catalog.oid::pg_catalog.int8, start, block::pg_catalog.int8, "
	"(mode OPERATOR(pg_catalog.=) 'fast')::pg_catalog.int4::pg_catalog.int8, stamp, "
	"COALESCE(stripe, 0)::pg_catalog.int8, "
	"COALESCE(stripes, 1)::pg_catalog.int8, "
	"state::pg_catalog.oid::pg_catalog.int8 "
	"FROM %s.snowid_counter "
	"WHERE counter OPERATOR(pg_catalog.=) $1", 1, {REGCLASSOID}
};

/* Read the settings of counter relid into entry: false if it is none. */
static bool
snowid_counter_read(SnowidCounterEntry *entry, Oid relid, Oid extnsp,
					const char *name)
{
	Datum		arg = ObjectIdGetDatum(relid);
	int64		out[COUNTER_STMT_OUTS];
	Oid			type;

	if (!snowid_counter_exec(extnsp, &counter_settings, &arg, out))
		return false;
	type = (Oid) out[0];
	entry->counter.relid = relid;
	entry->counter.extnsp = extnsp;
	entry->counter.type = type;
	entry->counter.start = out[1];
	entry->counter.block = out[2];
	entry->counter.fast = out[3] != 0;
	entry->counter.stamp = out[4];
	entry->counter.stripe = out[5];
	entry->counter.stripes = out[6];
	entry->counter.maxvalue = snowid_ticket_type_max(type);
	entry->counter.state = (Oid) out[7];
	/* invalid if the state table is gone: refused at its use */
	entry->counter.keytype = OidIsValid(entry->counter.state) ?
		get_atttype(entry->counter.state,
					get_attnum(entry->counter.state, "key")) : InvalidOid;
	entry->counter.name = MemoryContextStrdup(TopMemoryContext, name);
	entry->valid = true;
	return true;
}

/* The counter's name as the caller wrote it, for messages. */
static char *
snowid_counter_arg_name(text *arg)
{
	return NameListToString(textToQualifiedNameList(arg));
}

static void
snowid_counter_check(Oid relid, text *arg, SnowidCounterRight right)
{
	AclResult	result = ACLCHECK_OK;
	char	   *name;

	switch (right)
	{
		case COUNTER_TAKE:
			result = pg_class_aclcheck(relid, GetUserId(),
									   ACL_USAGE | ACL_UPDATE);
			break;
		case COUNTER_READ:
			result = pg_class_aclcheck(relid, GetUserId(),
									   ACL_SELECT | ACL_USAGE);
			break;
		case COUNTER_MOVE:
			result = pg_class_aclcheck(relid, GetUserId(), ACL_UPDATE);
			break;
		case COUNTER_OWN:
			if (!snowid_owns_relation(relid, GetUserId()))
				result = ACLCHECK_NOT_OWNER;
			break;
	}
	if (likely(result == ACLCHECK_OK))
		return;
	name = snowid_counter_arg_name(arg);
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied for counter %s", name),
			 errdetail("%s",
					   right == COUNTER_TAKE ? "Taking a counter's values needs USAGE or UPDATE on it, as nextval() does." :
					   right == COUNTER_READ ? "Reading a counter's values needs SELECT or USAGE on it." :
					   right == COUNTER_MOVE ? "Moving a key of a counter forward needs UPDATE on it, as setval() does." :
					   "Only the counter's owner may drop it or its keys."),
			 errhint("A counter's privileges are those of its sequence: GRANT USAGE ON SEQUENCE %s TO ...", name)));
}

/*
 * The relation that counter name arg stands for in the search_path, locked
 * against DROP until the transaction ends.  The lookup is cached per
 * backend (snowid_relation_named); a lock newly taken processes
 * invalidations, so the name is looked up again after it, and the lookup
 * starts over if the name has moved to another relation meanwhile.
 */
static Oid
snowid_counter_locked(text *arg, FmgrInfo *flinfo)
{
	for (;;)
	{
		Oid			relid = snowid_relation_named(arg, flinfo);

		if (!OidIsValid(relid))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("counter \"%s\" does not exist",
							snowid_counter_arg_name(arg)),
					 errdetail("A counter is looked up by name in the search_path at every call."),
					 errhint("Create it with snowid_counter_create().")));
		LockRelationOid(relid, AccessShareLock);
		if (likely(snowid_relation_named(arg, flinfo) == relid))
			return relid;
		UnlockRelationOid(relid, AccessShareLock);
	}
}

/*
 * The counter named by argument 0 of the SQL function (text, looked up in
 * the search_path), locked against DROP until the transaction ends, with
 * the privilege right checked for the current user at every call.
 */
const SnowidCounter *
snowid_counter_find(FunctionCallInfo fcinfo, SnowidCounterRight right)
{
	text	   *arg;
	Oid			relid;
	SnowidCounterEntry *entry;
	Oid			extnsp = get_func_namespace(fcinfo->flinfo->fn_oid);

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("counter name must not be null")));
	arg = PG_GETARG_TEXT_PP(0);
	relid = snowid_counter_locked(arg, fcinfo->flinfo);
	entry = snowid_counter_entry(relid);
	if (unlikely(!entry->valid || entry->counter.extnsp != extnsp))
	{
		char	   *name = snowid_counter_arg_name(arg);

		if (get_rel_relkind(relid) != RELKIND_SEQUENCE ||
			!snowid_counter_read(entry, relid, extnsp, name))
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("\"%s\" is not a counter", name),
					 errdetail("Counters are made by snowid_counter_create()."),
					 errhint("For a ticket sequence, use snowid_ticket_next().")));
	}
	snowid_counter_check(relid, arg, right);
	return &entry->counter;
}

/*
 * Argument argno as a key: text as it is, bigint as its decimal text (so
 * 42 and '42' are one key).  NULL and keys over SNOWID_COUNTER_KEY_MAX
 * bytes are refused.
 */
text *
snowid_counter_key_arg(FunctionCallInfo fcinfo, int argno)
{
	Oid			type = get_fn_expr_argtype(fcinfo->flinfo, argno);
	text	   *key;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("counter key must not be null"),
				 errdetail("Every value of a counter belongs to a key.")));
	if (!OidIsValid(type))
	{
		HeapTuple	tup = SearchSysCache1(PROCOID,
										  ObjectIdGetDatum(fcinfo->flinfo->fn_oid));

		if (!HeapTupleIsValid(tup))
			elog(ERROR, "cache lookup failed for function %u",
				 fcinfo->flinfo->fn_oid);
		type = ((Form_pg_proc) GETSTRUCT(tup))->proargtypes.values[argno];
		ReleaseSysCache(tup);
	}
	if (type == INT8OID)
		return cstring_to_text(DatumGetCString(DirectFunctionCall1(int8out,
																   PG_GETARG_DATUM(argno))));
	key = PG_GETARG_TEXT_PP(argno);
	if (VARSIZE_ANY_EXHDR(key) > SNOWID_COUNTER_KEY_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_STRING_DATA_RIGHT_TRUNCATION),
				 errmsg("counter key is too long"),
				 errdetail("A key has at most %d bytes; this one has %d.",
						   SNOWID_COUNTER_KEY_MAX,
						   (int) VARSIZE_ANY_EXHDR(key))));
	return key;
}
