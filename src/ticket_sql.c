/*-------------------------------------------------------------------------
 *
 * ticket_sql.c
 *	  Ticket sequences: the SQL functions snowid_ticket_next,
 *	  snowid_ticket_shard, snowid_ticket_create and snowid_ticket_cache.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "compat.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pool_take.h"
#include "pool_users.h"
#include "ticket.h"
#include "ticket_catalog.h"
#include "ticket_lookup.h"
#include "ticket_slot.h"
#include "ticketmath.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
#include "utils/varlena.h"

PG_FUNCTION_INFO_V1(snowid_ticket_create);
PG_FUNCTION_INFO_V1(snowid_ticket_next);
PG_FUNCTION_INFO_V1(snowid_ticket_next_named);
PG_FUNCTION_INFO_V1(snowid_ticket_shard);
PG_FUNCTION_INFO_V1(snowid_ticket_cache);

/* ---------- taking values ---------- */

/*
 * The next value of ticket relid, for the SQL function fn_oid (whose
 * schema is the extension's): the caller's side of the protocol
 * ticket_slot.c's head comment describes (take without a lock; on an
 * empty block, install the next under the slot lock; pre-fetch at the
 * threshold; bind again after the slot was freed).  It lives here, always
 * inlined into the two SQL entry points below, so that the hot path makes
 * no call of its own between fmgr and snowid_ticket_take.
 */
static pg_attribute_always_inline int64
snowid_ticket_next_of(Oid relid, Oid fn_oid)
{
	SnowidTicketShared *shared = snowid_ticket_require_shared();
	SnowidTicketEntry *entry;

	PreventCommandIfReadOnly("snowid_ticket_next()");
	PreventCommandIfParallelMode("snowid_ticket_next()");

	entry = snowid_ticket_lookup(relid, fn_oid, true);
	for (;;)
	{
		SnowidTicketSlot *slot;
		SnowidTakeResult result;
		int64		value = 0;
		uint32		g = 0;
		uint32		off = 0;
		uint32		count = 0;

		CHECK_FOR_INTERRUPTS();
		if (unlikely(entry->slot < 0))
			entry = snowid_ticket_lookup_bound(relid, fn_oid);
		slot = &shared->slots[entry->slot];

		result = snowid_ticket_take(slot, entry, &value, &g, &off, &count);
		if (unlikely(result == TAKE_EMPTY))
		{
			result = snowid_ticket_next_block(slot, entry, g, &value, &count);
			off = 0;
		}
		if (likely(result == TAKE_OK))
		{
			if (unlikely(off == snowid_ticket_threshold(count)))
				snowid_ticket_prefetch_block(slot, entry);
			return value;
		}
		if (result == TAKE_REBIND)
		{
			/* the slot was freed: perhaps the ticket was dropped */
			entry->valid = false;
			entry->slot = -1;
		}
	}
}

/* snowid_ticket_next(regclass): the ticket bound when the call was parsed */
Datum
snowid_ticket_next(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(snowid_ticket_next_of(PG_GETARG_OID(0),
										  fcinfo->flinfo->fn_oid));
}

/*
 * snowid_ticket_next(text): the ticket that bears the name in the
 * search_path now.  A default written with it depends on no sequence.
 */
Datum
snowid_ticket_next_named(PG_FUNCTION_ARGS)
{
	Oid			relid = snowid_ticket_named(PG_GETARG_TEXT_PP(0),
											fcinfo->flinfo);

	PG_RETURN_INT64(snowid_ticket_next_of(relid, fcinfo->flinfo->fn_oid));
}

/* ---------- decoding and create ---------- */

Datum
snowid_ticket_shard(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	int64		value = PG_GETARG_INT64(1);
	SnowidTicketEntry *entry;
	int32		shard;

	entry = snowid_ticket_lookup(relid, fcinfo->flinfo->fn_oid, false);
	shard = snowid_ticket_shard_of(&entry->spec, value);
	if (shard < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("value " INT64_FORMAT " is not a value of ticket sequence \"%s\"",
						value, snowid_ticket_name(relid)),
				 errdetail("Its values range from " INT64_FORMAT " to " INT64_FORMAT ".",
						   entry->spec.start, entry->spec.maxvalue)));
	PG_RETURN_INT32(shard);
}

static void
snowid_ticket_bad_argument(const char *what, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid %s for ticket sequence", what),
			 errdetail("%s", detail)));
}

Datum
snowid_ticket_create(PG_FUNCTION_ARGS)
{
	text	   *name;
	int32		shard;
	int32		shards;
	int32		block;
	int64		start;
	Oid			type;
	char	   *pool = NULL;
	Oid			extnsp = get_func_namespace(fcinfo->flinfo->fn_oid);
	SnowidTicketSpec spec;
	RangeVar   *rv;
	Oid			nspid;
	Oid			relid;
	char	   *qualified;
	char	   *sql;
	int64		stamp = GetCurrentTimestamp();
	Oid			save_userid;
	int			save_sec_context;
	Oid			argtypes[8] = {REGCLASSOID, INT4OID, INT4OID, INT4OID, INT8OID,
	REGTYPEOID, INT8OID, TEXTOID};
	int			save_nestlevel;
	Datum		args[8];
	int			nargs = 7;

	/* strict in the first six (the function was STRICT before the pool) */
	for (int i = 0; i < 6; i++)
		if (PG_ARGISNULL(i))
			PG_RETURN_NULL();
	name = PG_GETARG_TEXT_PP(0);
	shard = PG_GETARG_INT32(1);
	shards = PG_GETARG_INT32(2);
	block = PG_GETARG_INT32(3);
	start = PG_GETARG_INT64(4);
	type = PG_GETARG_OID(5);
	/* a database still at 1.3 calls with six arguments */
	if (PG_NARGS() > 6 && !PG_ARGISNULL(6))
		pool = text_to_cstring(PG_GETARG_TEXT_PP(6));

	if (pool != NULL)
	{
		int			idx;
		int64		maxvalue;

		if (shard != 0 || shards != 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a pooled ticket sequence has no shards"),
					 errdetail("Ticket sequences fed by pool \"%s\" take their values from the ranges it leases to this server; shard and shards must stay 0 and 1, not %d and %d.",
							   pool, shard, shards),
					 errhint("Leave out shard and shards.")));
		if (block < 1)
			snowid_ticket_bad_argument("block size",
									   psprintf("The block size must be at least 1, not %d.", block));
		/*
		 * A pool is shared with other servers, and what this server takes
		 * of it (blocks of a ticket that is then dropped, pools it names)
		 * is gone for all of them: the database owner decides.
		 */
		if (!snowid_owns_database(GetUserId()))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to create a ticket sequence fed by pool \"%s\"", pool),
					 errdetail("A pool's values are shared with the other members of the registry; only the owner of the database or a superuser may draw on it."),
					 errhint("Ask the database owner to create the ticket sequence and grant you USAGE on it.")));
		/* the type and start are the pool's */
		idx = snowid_pool_attach(pool, true);
		snowid_pool_facts(idx, &type, &maxvalue, &start);
		/* this database uses the pool (forgotten if the creation aborts) */
		snowid_pool_use(idx, pool, MyDatabaseId, true);
	}

	if (shards < 1)
		snowid_ticket_bad_argument("number of shards",
								   psprintf("The number of shards must be at least 1, not %d.", shards));
	if (shard < 0 || shard >= shards)
		snowid_ticket_bad_argument("shard",
								   psprintf("The shard must be between 0 and %d (shards - 1), not %d.",
											shards - 1, shard));
	if (block < 1)
		snowid_ticket_bad_argument("block size",
								   psprintf("The block size must be at least 1, not %d.", block));
	if (snowid_ticket_type_max(type) == 0 &&
		(!OidIsValid(type) || !SearchSysCacheExists1(TYPEOID, ObjectIdGetDatum(type))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid type for ticket sequence: %u", type),
				 errdetail("Ticket sequences are of type integer or bigint.")));
	if (snowid_ticket_type_max(type) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid type for ticket sequence: %s", format_type_be(type)),
				 errdetail("Ticket sequences are of type integer or bigint.")));
	spec.shard = shard;
	spec.shards = shards;
	spec.block = block;
	spec.start = start;
	spec.maxvalue = snowid_ticket_type_max(type);
	if (type == INT4OID && (start < PG_INT32_MIN || start > PG_INT32_MAX))
		snowid_ticket_bad_argument("start",
								   psprintf("Start " INT64_FORMAT " is out of range for type integer.",
											start));
	if (!snowid_ticket_has_values(&spec))
		snowid_ticket_bad_argument("start",
								   psprintf("With start " INT64_FORMAT ", shard %d would have no value of type %s.",
											start, shard, format_type_be(type)));

	rv = makeRangeVarFromNameList(textToQualifiedNameList(name));
	nspid = RangeVarGetCreationNamespace(rv);
	if (isAnyTempNamespace(nspid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("ticket sequences cannot be temporary"),
				 errdetail("Their blocks are reserved through WAL-logged sequences.")));
	if (OidIsValid(get_relname_relid(rv->relname, nspid)))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("relation \"%s\" already exists",
						quote_qualified_identifier(get_namespace_name(nspid),
												   rv->relname))));
	qualified = quote_qualified_identifier(get_namespace_name(nspid),
										   rv->relname);

	/* the sequence belongs to the caller, who needs CREATE on the schema */
	sql = psprintf("CREATE SEQUENCE %s AS bigint INCREMENT 1 MINVALUE 0 "
				   "MAXVALUE " INT64_FORMAT " START 0 CACHE 1 NO CYCLE",
				   qualified, snowid_ticket_last_block(&spec) + 1);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* names are qualified; pin the path anyway, for whatever they resolve */
	save_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "creating sequence %s failed", qualified);
	CommandCounterIncrement();
	relid = get_relname_relid(rv->relname, nspid);
	if (!OidIsValid(relid))
		elog(ERROR, "sequence %s not found after creation", qualified);
	/* a row with this OID is stale: its sequence was dropped unnoticed */
	snowid_ticket_forget(relid);
	sql = psprintf("COMMENT ON SEQUENCE %s IS %s", qualified,
				   quote_literal_cstr("ticket sequence: counts reserved blocks; take values with snowid_ticket_next()"));
	if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "commenting sequence %s failed", qualified);

	/* the catalog row is written with the rights of its table's owner */
	args[0] = ObjectIdGetDatum(relid);
	args[1] = Int32GetDatum(shard);
	args[2] = Int32GetDatum(shards);
	args[3] = Int32GetDatum(block);
	args[4] = Int64GetDatum(start);
	args[5] = ObjectIdGetDatum(type);
	args[6] = Int64GetDatum(stamp);
	if (pool != NULL)
	{
		args[7] = CStringGetTextDatum(pool);
		nargs = 8;
	}
	sql = psprintf("INSERT INTO %s.snowid_ticket "
				   "(seqrelid, shard, shards, block, start, type, stamp%s) "
				   "VALUES ($1, $2, $3, $4, $5, $6, $7%s)",
				   quote_identifier(get_namespace_name(extnsp)),
				   pool != NULL ? ", pool" : "", pool != NULL ? ", $8" : "");
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(snowid_ticket_catalog_owner(extnsp),
						   save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	if (SPI_execute_with_args(sql, nargs, argtypes, args, NULL, false, 0) !=
		SPI_OK_INSERT)
		elog(ERROR, "registering ticket sequence %s failed", qualified);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	AtEOXact_GUC(true, save_nestlevel);
	SPI_finish();

	PG_RETURN_OID(relid);
}

/*
 * The slots of this database: what each ticket sequence has cached on this
 * server.  Read without the slot locks, so a row may be a moment out of
 * date.  The position (cached block, values, blocks reserved) shows only to
 * users with SELECT or USAGE on the sequence, as pg_sequence_last_value;
 * others, and slots whose sequence no longer exists, get NULLs.  Without
 * shared memory, no rows.
 */
typedef struct SnowidCacheRow
{
	Oid			relid;
	bool		has_block;
	int64		first;
	int64		last;
	int64		left;
	int64		blocks;
} SnowidCacheRow;

Datum
snowid_ticket_cache(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	SnowidTicketShared *shared = ticket_shared;
	SnowidCacheRow *rows;
	int			n = 0;

	InitMaterializedSRF(fcinfo, 0);
	if (shared == NULL)
		return (Datum) 0;		/* not preloaded: nothing cached */
	rows = palloc(sizeof(SnowidCacheRow) * shared->nslots);
	LWLockAcquire(shared->table_lock, LW_SHARED);
	for (int i = 0; i < shared->nslots; i++)
	{
		SnowidTicketSlot *slot = &shared->slots[i];
		SnowidCacheRow *row = &rows[n];
		uint64		word;
		SnowidTicketBuf *buf;
		uint32		off;

		if (!slot->in_use || slot->dbid != MyDatabaseId)
			continue;
		word = pg_atomic_read_u64(&slot->cur);
		off = (uint32) word;
		buf = &slot->buf[(word >> 32) & 1];
		row->relid = slot->relid;
		row->left = off < buf->count ? buf->count - off : 0;
		row->has_block = buf->count > 0;
		row->first = buf->first;
		row->last = (int64) ((uint64) buf->first +
							 (uint64) (buf->count - 1) *
							 (uint64) slot->spec.shards);
		if (slot->next_valid)
			row->left += slot->next_count;
		row->blocks = slot->blocks_reserved;
		n++;
	}
	LWLockRelease(shared->table_lock);

	for (int i = 0; i < n; i++)
	{
		SnowidCacheRow *row = &rows[i];
		Datum		values[5];
		bool		nulls[5] = {false, true, true, true, true};
		bool		missing = false;

		values[0] = ObjectIdGetDatum(row->relid);
		if (pg_class_aclcheck_ext(row->relid, GetUserId(),
								  ACL_SELECT | ACL_USAGE, &missing) ==
			ACLCHECK_OK && !missing)
		{
			values[1] = Int64GetDatum(row->first);
			values[2] = Int64GetDatum(row->last);
			nulls[1] = nulls[2] = !row->has_block;
			values[3] = Int64GetDatum(row->left);
			values[4] = Int64GetDatum(row->blocks);
			nulls[3] = nulls[4] = false;
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
