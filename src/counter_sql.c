/*-------------------------------------------------------------------------
 *
 * counter_sql.c
 *	  Counters per key: the SQL functions snowid_counter_create,
 *	  snowid_counter_next, snowid_counter_current, snowid_counter_restart,
 *	  snowid_counter_drop_key and snowid_counter_drop.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/event_trigger.h"
#include "commands/extension.h"
#include "counter_catalog.h"
#include "counter_cache.h"
#include "counter_citus.h"
#include "counter_fast.h"
#include "counter_row.h"
#include "funcapi.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "tcop/utility.h"
#include "ticket_catalog.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

PG_FUNCTION_INFO_V1(snowid_counter_create);
PG_FUNCTION_INFO_V1(snowid_counter_next);
PG_FUNCTION_INFO_V1(snowid_counter_current);
PG_FUNCTION_INFO_V1(snowid_counter_restart);
PG_FUNCTION_INFO_V1(snowid_counter_drop_key);
PG_FUNCTION_INFO_V1(snowid_counter_drop);
PG_FUNCTION_INFO_V1(snowid_counter_cache);
PG_FUNCTION_INFO_V1(snowid_counter_reserve_serve);

/* Run a utility statement as the caller, its names already qualified. */
static void
snowid_counter_utility(const char *sql)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "\"%s\" failed", sql);
	SPI_finish();
}

/*
 * The subscriptions of this database: how many, and how many of them with
 * origin = none (PostgreSQL 16+), the sign of several primaries that
 * replicate to each other (active-active).
 */
static int64
snowid_counter_subscriptions(int64 *mesh)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(MyDatabaseId)};
	int64		all = 0;
	bool		isnull;

	*mesh = 0;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT pg_catalog.count(*), "
#if PG_VERSION_NUM >= 160000
							  "pg_catalog.count(*) FILTER (WHERE pg_catalog.lower(s.suborigin) "
							  "OPERATOR(pg_catalog.=) 'none') "
#else
							  "0::pg_catalog.int8 "
#endif
							  "FROM pg_catalog.pg_subscription s "
							  "WHERE s.subdbid OPERATOR(pg_catalog.=) $1",
							  1, argtypes, args, NULL, true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "reading the subscriptions failed");
	all = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
									  SPI_tuptable->tupdesc, 1, &isnull));
	*mesh = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
										SPI_tuptable->tupdesc, 2, &isnull));
	SPI_finish();
	return all;
}

/*
 * A counter that is not striped counts on every server that has it, from
 * rows of its own (snowid's tables are kept out of replication): refused
 * where the database subscribes with origin = none (several primaries),
 * a warning under any other subscription (one-way is fine).  A striped
 * counter, or one declared this server's alone (stripe 0 of 1), passes.
 */
static void
snowid_counter_check_primaries(const char *qualified)
{
	int64		mesh;

	if (snowid_counter_subscriptions(&mesh) == 0)
		return;
	if (mesh > 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("counter %s must be striped or declared this server's alone", qualified),
				 errdetail("This database subscribes with origin = none, as one of several primaries does; each primary would give a key the same values from rows of its own."),
				 errhint("Stripe it (mode => 'fast', stripe => k, stripes => n, k different on each server), or create it on one server only, its home, with stripe => 0, stripes => 1, and take its values there.")));
	ereport(WARNING,
			(errcode(ERRCODE_WARNING),
			 errmsg("counter %s counts on this server only", qualified),
			 errdetail("This database has a subscription; if it is one of several primaries, each would give a key the same values."),
			 errhint("Take a counter's values on one server, or stripe it (stripe => k, stripes => n).")));
}

PG_FUNCTION_INFO_V1(snowid_counter_subscription_check);

/*
 * Event trigger at the end of CREATE and ALTER SUBSCRIPTION: once the
 * database subscribes with origin = none, a WARNING names its counters
 * that are not striped.  Refusing here would leave behind the slot that
 * CREATE SUBSCRIPTION has made on the publisher.
 */
Datum
snowid_counter_subscription_check(PG_FUNCTION_ARGS)
{
	Oid			extnsp = get_func_namespace(fcinfo->flinfo->fn_oid);
	int64		mesh;
	char	   *counters = NULL;
	MemoryContext caller = CurrentMemoryContext;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		elog(ERROR, "snowid_counter_subscription_check: not called as an event trigger");
	(void) snowid_counter_subscriptions(&mesh);
	if (mesh == 0)
		PG_RETURN_VOID();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute(psprintf("SELECT pg_catalog.string_agg(counter::pg_catalog.text, ', ' "
							 "ORDER BY counter::pg_catalog.text) "
							 "FROM %s.snowid_counter WHERE stripes IS NULL",
							 quote_identifier(get_namespace_name(extnsp))),
					true, 1) == SPI_OK_SELECT && SPI_processed == 1)
	{
		char	   *found = SPI_getvalue(SPI_tuptable->vals[0],
										 SPI_tuptable->tupdesc, 1);

		if (found != NULL)
			counters = MemoryContextStrdup(caller, found);
	}
	SPI_finish();
	if (counters != NULL)
		ereport(WARNING,
				(errcode(ERRCODE_WARNING),
				 errmsg("counters %s are neither striped nor declared this server's alone", counters),
				 errdetail("This database now subscribes with origin = none, as one of several primaries does; a server that has these counters too would give a key the same values."),
				 errhint("Take each one's values on one server only, its home, and drop it on the others; or drop it and create it again striped (stripe => k, stripes => n).")));
	PG_RETURN_VOID();
}

Datum
snowid_counter_create(PG_FUNCTION_ARGS)
{
	text	   *name;
	Oid			type;
	char	   *mode;
	int64		start;
	int32		block;
	int32		stripe = 0;
	int32		stripes = 0;
	bool		fast;
	Oid			extnsp = get_func_namespace(fcinfo->flinfo->fn_oid);
	int64		maxvalue;
	Oid			colocate_with;
	Oid			state = InvalidOid;
	bool		citus;
	RangeVar   *rv;
	Oid			nspid;
	Oid			relid;
	char	   *qualified;

	for (int i = 0; i < 4; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s of a counter must not be null",
							i == 0 ? "name" : i == 1 ? "type" : i == 2 ? "mode" : "start")));
	name = PG_GETARG_TEXT_PP(0);
	type = PG_GETARG_OID(1);
	mode = text_to_cstring(PG_GETARG_TEXT_PP(2));
	start = PG_GETARG_INT64(3);
	fast = strcmp(mode, "fast") == 0;
	maxvalue = snowid_ticket_type_max(type);
	PreventCommandIfReadOnly("snowid_counter_create()");
	colocate_with = PG_NARGS() > 7 && !PG_ARGISNULL(7) ?
		PG_GETARG_OID(7) : InvalidOid;
	citus = snowid_counter_citus();
	/* each node would count on its own: refuse rather than repeat values */
	if (citus && !OidIsValid(colocate_with))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a counter on Citus needs colocate_with"),
				 errdetail("Its keys are kept with the rows they number, in the shards of a distributed table, so that every node takes a key's values from the same row."),
				 errhint("Name the table distributed by the key: snowid_counter_create('public.inv_no', colocate_with => 'public.inv'), on the coordinator, then on the workers.")));
	if (!citus && OidIsValid(colocate_with))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("colocate_with is for counters on Citus"),
				 errdetail("Citus is not installed in this database."),
				 errhint("Leave out colocate_with.")));
	if (citus && PG_NARGS() > 6 && (!PG_ARGISNULL(5) || !PG_ARGISNULL(6)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a counter on Citus is not striped"),
				 errdetail("Every node of the cluster takes a key's values from the key's one row, in its shard."),
				 errhint("Leave out stripe and stripes.")));
	if (maxvalue == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid type for counter: %s",
						OidIsValid(type) ? format_type_be(type) : "-"),
				 errdetail("Counters are of type integer or bigint.")));
	if (!fast && strcmp(mode, "gapless") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid mode for counter: \"%s\"", mode),
				 errdetail("A counter's mode is gapless (its values taken in the caller's transaction) or fast (from shared memory).")));
	if (!fast && !PG_ARGISNULL(4))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a gapless counter has no block size"),
				 errdetail("A gapless counter takes its values one at a time, in the caller's transaction."),
				 errhint("Leave out block, or write mode => 'fast'.")));
	block = PG_ARGISNULL(4) ? 100 : PG_GETARG_INT32(4);
	if (block < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid block size for counter: %d", block),
				 errdetail("The block size must be at least 1."),
				 errhint("Leave out block for the default of 100.")));
	if (PG_NARGS() > 6 && PG_ARGISNULL(5) != PG_ARGISNULL(6))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("stripe and stripes of a counter go together"),
				 errdetail("A striped counter gives on this server the values of stripe k of n: start + k, start + k + n, ..."),
				 errhint("Give both (stripe => k, stripes => n), or neither.")));
	if (PG_NARGS() > 6 && !PG_ARGISNULL(6))
	{
		stripe = PG_GETARG_INT32(5);
		stripes = PG_GETARG_INT32(6);
		if (stripes < 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid number of stripes for counter: %d", stripes),
					 errdetail("A counter has at least 1 stripe.")));
		if (stripe < 0 || stripe >= stripes)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid stripe for counter: %d", stripe),
					 errdetail("The stripe of a counter of %d stripes lies between 0 and %d.",
							   stripes, stripes - 1)));
		if (!fast && stripes > 1)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a gapless counter cannot be striped"),
					 errdetail("A gapless key's values run start, start + 1, ... without a hole, so servers cannot share them."),
					 errhint("Take a key's numbers on its home server: create the counter there only (stripe => 0, stripes => 1 where the database has other primaries), or stripe a counter of mode fast.")));
	}
	if (fast)
		snowid_counter_require_shared();
	if (start < 0 || start >= maxvalue)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid start for counter: " INT64_FORMAT, start),
				 errdetail("A counter of type %s starts between 0 and " INT64_FORMAT ".",
						   format_type_be(type), maxvalue - 1)));
	if (stripe > maxvalue - start)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid stripe for counter: %d", stripe),
				 errdetail("A counter of type %s that starts at " INT64_FORMAT " has no value in that stripe.",
						   format_type_be(type), start)));

	rv = makeRangeVarFromNameList(textToQualifiedNameList(name));
	nspid = RangeVarGetCreationNamespace(rv);
	if (isAnyTempNamespace(nspid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("counters cannot be temporary"),
				 errdetail("Their keys' values outlive the session.")));
	qualified = quote_qualified_identifier(get_namespace_name(nspid),
										   rv->relname);
	if (stripes == 0)
		snowid_counter_check_primaries(qualified);

	/*
	 * The handle: a sequence of the caller (who needs CREATE on the
	 * schema), never advanced; its privileges are the counter's.
	 */
	snowid_counter_utility(psprintf("CREATE SEQUENCE %s AS smallint MINVALUE 0 "
									"MAXVALUE 1 START 0 CACHE 1 NO CYCLE",
									qualified));
	CommandCounterIncrement();
	relid = get_relname_relid(rv->relname, nspid);
	if (!OidIsValid(relid))
		elog(ERROR, "sequence %s not found after creation", qualified);
	snowid_counter_utility(psprintf("COMMENT ON SEQUENCE %s IS %s", qualified,
									quote_literal_cstr("counter per key (its privileges are the counter's): take values with snowid_counter_next()")));
	/* rows with this OID are stale: their sequence was dropped unnoticed */
	snowid_counter_rows_forget(extnsp, relid);
	if (citus)
		state = snowid_counter_citus_create(extnsp, qualified, colocate_with,
											fast);
	snowid_counter_row_create(extnsp, relid, type, start,
							  GetCurrentTimestamp(), mode, fast ? block : 1,
							  stripe, stripes, state);
	PG_RETURN_OID(relid);
}

/* snowid_counter_next(counter, key): the key's next value */
Datum
snowid_counter_next(PG_FUNCTION_ARGS)
{
	const SnowidCounter *c = snowid_counter_find(fcinfo, COUNTER_TAKE);
	text	   *key = snowid_counter_key_arg(fcinfo, 1);

	PreventCommandIfReadOnly("snowid_counter_next()");
	PreventCommandIfParallelMode("snowid_counter_next()");
	if (c->fast)
		PG_RETURN_INT64(snowid_counter_fast_next(c, key));
	PG_RETURN_INT64(snowid_counter_row_next(c, key));
}

/*
 * snowid_counter_current(counter, key): the last value given, or NULL if
 * none; in mode fast, the last handed out on this server while the key is
 * cached, else the highest reserved.
 */
Datum
snowid_counter_current(PG_FUNCTION_ARGS)
{
	const SnowidCounter *c = snowid_counter_find(fcinfo, COUNTER_READ);
	text	   *key = snowid_counter_key_arg(fcinfo, 1);
	int64		last;

	if (c->fast && snowid_counter_fast_last(c, key, &last))
		PG_RETURN_INT64(last);
	if (!snowid_counter_row_last(c, key, &last))
		PG_RETURN_NULL();
	PG_RETURN_INT64(last);
}

/*
 * A fast counter on Citus: every node caches blocks of a key, reserved
 * from the key's one row; a restart or a drop of the key there would leave
 * the others' blocks in use, below the new next value or from the key's
 * life before.  Refused.
 */
static void
snowid_counter_citus_fast_refuse(const SnowidCounter *c, const char *what)
{
	if (c->fast && OidIsValid(c->state))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a key of fast counter %s on Citus cannot be %s", c->name, what),
				 errdetail("Every node of the cluster caches blocks of the key's values; the others would go on giving the values of theirs."),
				 errhint("Use a gapless counter on Citus where keys must restart, or drop the counter on every node and create it again.")));
}

/* snowid_counter_restart(counter, key, next): forward only */
Datum
snowid_counter_restart(PG_FUNCTION_ARGS)
{
	const SnowidCounter *c = snowid_counter_find(fcinfo, COUNTER_MOVE);
	text	   *key = snowid_counter_key_arg(fcinfo, 1);
	int64		next;
	int64		aligned;

	PreventCommandIfReadOnly("snowid_counter_restart()");
	snowid_counter_citus_fast_refuse(c, "restarted");
	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("next value of a counter key must not be null")));
	next = PG_GETARG_INT64(2);
	/* striped: the first value of this server's stripe from there */
	aligned = next < c->start ? next : snowid_counter_fast_align(c, next);
	if (next < c->start || aligned > c->maxvalue)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("next value " INT64_FORMAT " is out of range for counter %s",
						next, c->name),
				 errdetail("Its values run from " INT64_FORMAT " to " INT64_FORMAT "%s.",
						   c->start, c->maxvalue,
						   c->stripes > 1 ? psprintf(", on this server those of stripe " INT64_FORMAT " of " INT64_FORMAT,
													 c->stripe, c->stripes) : "")));
	next = aligned;
	snowid_counter_row_move(c, key, next);
	if (c->fast)
		snowid_counter_fast_forget(c, key, next - 1);
	PG_RETURN_VOID();
}

/* snowid_counter_drop_key(counter, key): whether the key had been used */
Datum
snowid_counter_drop_key(PG_FUNCTION_ARGS)
{
	const SnowidCounter *c = snowid_counter_find(fcinfo, COUNTER_OWN);
	text	   *key = snowid_counter_key_arg(fcinfo, 1);

	bool		had;

	PreventCommandIfReadOnly("snowid_counter_drop_key()");
	snowid_counter_citus_fast_refuse(c, "dropped");
	had = snowid_counter_row_forget(c, key);
	if (c->fast)
		snowid_counter_fast_forget(c, key, c->start - 1);
	PG_RETURN_BOOL(had);
}

/* snowid_counter_drop(counter): its sequence and rows */
Datum
snowid_counter_drop(PG_FUNCTION_ARGS)
{
	const SnowidCounter *c = snowid_counter_find(fcinfo, COUNTER_OWN);
	Oid			relid = c->relid;
	Oid			extnsp = c->extnsp;
	Oid			state = c->state;
	char	   *qualified;

	PreventCommandIfReadOnly("snowid_counter_drop()");
	qualified = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
										   get_rel_name(relid));
	snowid_counter_utility(psprintf("DROP SEQUENCE %s", qualified));
	/* the event trigger did it already where event triggers fire */
	snowid_counter_rows_forget(extnsp, relid);
	if (OidIsValid(state))
		snowid_counter_citus_drop(extnsp, state);
	PG_RETURN_VOID();
}

/* snowid_counter_cache(): the keys of fast counters cached on this server */
Datum
snowid_counter_cache(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	int64		keys;
	int64		capacity;
	int64		evictions;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	snowid_counter_require_shared();
	snowid_counter_cache_counts(&keys, &capacity, &evictions);
	values[0] = Int64GetDatum(keys);
	values[1] = Int64GetDatum(capacity);
	values[2] = Int64GetDatum(evictions);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc),
													  values, nulls)));
}

/*
 * snowid_counter_reserve_serve(counter, key, step, first): what
 * snowid_counter_reserve asks of a server process (registry_server.c),
 * which runs it in a transaction of its own and answers once that has
 * committed: the key's row moves by step (to first at its first use), its
 * new last returned.
 * It never waits long for the row: the only other writers are a
 * transaction that restarted or dropped the key, or an earlier
 * reservation, and the first may be the very caller that waits for this
 * answer.
 */
Datum
snowid_counter_reserve_serve(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	text	   *key = PG_GETARG_TEXT_PP(1);
	int64		step = PG_GETARG_INT64(2);
	int64		first = PG_GETARG_INT64(3);
	Oid			extnsp = get_func_namespace(fcinfo->flinfo->fn_oid);
	MemoryContext ctx = CurrentMemoryContext;
	int			nest;
	int64		last = 0;

	if (step < 1 || first < 0 || VARSIZE_ANY_EXHDR(key) > SNOWID_COUNTER_KEY_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid reservation of a counter's values")));
	PreventCommandIfReadOnly("snowid_counter_reserve_serve()");
	nest = NewGUCNestLevel();
	(void) set_config_option("lock_timeout", "1000", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	PG_TRY();
	{
		last = snowid_counter_row_take(extnsp, relid, key, step, first);
	}
	PG_CATCH();
	{
		ErrorData  *ed;

		MemoryContextSwitchTo(ctx);
		ed = CopyErrorData();
		if (ed->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
			PG_RE_THROW();
		FlushErrorState();
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("key \"%s\" of counter %s is locked by another transaction",
						text_to_cstring(key),
						snowid_ticket_name(relid)),
				 errdetail("A fast counter reserves values in a transaction of its own; another has held the key's row for more than 1 s (as one that restarts or drops the key does until it ends)."),
				 errhint("If it is the transaction that asks for this value, commit it first; else ask again once that transaction has ended.")));
	}
	PG_END_TRY();
	AtEOXact_GUC(true, nest);
	PG_RETURN_INT64(last);
}
