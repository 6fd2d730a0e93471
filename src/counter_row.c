/*-------------------------------------------------------------------------
 *
 * counter_row.c
 *	  Counters per key: the row per key of snowid_counter_key, written in
 *	  the caller's transaction, and the settings row of snowid_counter,
 *	  written once at creation.  Taking n values is the row's update (or
 *	  its insertion at the key's first use), last += step: in gapless mode
 *	  step is 1, so a rollback gives the value back and the committed
 *	  values of a key run start, start + 1, ... with no hole, a second
 *	  taker of the key waiting for the first to end, as with a
 *	  hand-written counter row; in fast mode the step is a block (times
 *	  the stripes of a striped counter: the row holds a value of this
 *	  server's stripe), taken by a server process in a transaction of its
 *	  own (counter_fast.c).
 *	  On Citus, the key's row is in the counter's state table
 *	  (counter_citus.c), in the key's shard: the same statements, argument
 *	  1 the key in its column's type.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "compat.h"
#include "counter_citus.h"
#include "counter_exec.h"
#include "counter_row.h"
#include "miscadmin.h"
#include "ticket_catalog.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

/* the common case first: the key has a row */
static const SnowidCounterStmt row_update = {
	"UPDATE %s.snowid_counter_key "
	"SET last = last OPERATOR(pg_catalog.+) $3 "
	"WHERE counter OPERATOR(pg_catalog.=) $1 AND key OPERATOR(pg_catalog.=) $2 "
	"RETURNING last", 3, {REGCLASSOID, TEXTOID, INT8OID}
};

/* its first use (or a race with another first use, which then waits) */
static const SnowidCounterStmt row_insert = {
	"INSERT INTO %s.snowid_counter_key AS k (counter, key, last) "
	"VALUES ($1, $2, $4) ON CONFLICT (counter, key) "
	"DO UPDATE SET last = k.last OPERATOR(pg_catalog.+) $3 RETURNING last",
	4, {REGCLASSOID, TEXTOID, INT8OID, INT8OID}
};

static const SnowidCounterStmt row_read = {
	"SELECT last FROM %s.snowid_counter_key "
	"WHERE counter OPERATOR(pg_catalog.=) $1 AND key OPERATOR(pg_catalog.=) $2",
	2, {REGCLASSOID, TEXTOID}
};

/* moved forward only: no row comes back when last is already beyond */
static const SnowidCounterStmt row_move = {
	"INSERT INTO %s.snowid_counter_key AS k (counter, key, last) "
	"VALUES ($1, $2, $3) ON CONFLICT (counter, key) "
	"DO UPDATE SET last = excluded.last "
	"WHERE k.last OPERATOR(pg_catalog.<=) excluded.last RETURNING last",
	3, {REGCLASSOID, TEXTOID, INT8OID}
};

static const SnowidCounterStmt row_forget = {
	"DELETE FROM %s.snowid_counter_key "
	"WHERE counter OPERATOR(pg_catalog.=) $1 AND key OPERATOR(pg_catalog.=) $2 "
	"RETURNING last", 2, {REGCLASSOID, TEXTOID}
};

static const SnowidCounterStmt rows_forget = {
	"WITH k AS (DELETE FROM %1$s.snowid_counter_key "
	"WHERE counter OPERATOR(pg_catalog.=) $1 RETURNING 1), "
	"c AS (DELETE FROM %1$s.snowid_counter "
	"WHERE counter OPERATOR(pg_catalog.=) $1 RETURNING 1) "
	"SELECT (SELECT pg_catalog.count(*) FROM k), (SELECT pg_catalog.count(*) FROM c)",
	1, {REGCLASSOID}
};

static const SnowidCounterStmt row_create = {
	"INSERT INTO %s.snowid_counter "
	"(counter, type, mode, start, block, stamp, stripe, stripes, state) "
	"VALUES ($1, $2, $5, $3, $6, $4, "
	"CASE WHEN $8 OPERATOR(pg_catalog.>) 0 THEN $7 END, "
	"CASE WHEN $8 OPERATOR(pg_catalog.>) 0 THEN $8 END, "
	"CASE WHEN $9 OPERATOR(pg_catalog.<>) 0 THEN $9::pg_catalog.regclass END) "
	"RETURNING 1::pg_catalog.int8",
	9, {REGCLASSOID, REGTYPEOID, INT8OID, INT8OID, TEXTOID, INT4OID, INT4OID, INT4OID, OIDOID}
};

/*
 * The same on a Citus counter's state table (%s), $1 the key in the type
 * of its column (argtypes[0], set at each run).
 */
static const SnowidCounterStmt state_update = {
	"UPDATE %s SET last = last OPERATOR(pg_catalog.+) $2 "
	"WHERE key OPERATOR(pg_catalog.=) $1 RETURNING last",
	2, {InvalidOid, INT8OID}
};

static const SnowidCounterStmt state_insert = {
	"INSERT INTO %s AS k (key, last) VALUES ($1, $3) ON CONFLICT (key) "
	"DO UPDATE SET last = k.last OPERATOR(pg_catalog.+) $2 RETURNING last",
	3, {InvalidOid, INT8OID, INT8OID}
};

static const SnowidCounterStmt state_read = {
	"SELECT last FROM %s WHERE key OPERATOR(pg_catalog.=) $1",
	1, {InvalidOid}
};

static const SnowidCounterStmt state_move = {
	"INSERT INTO %s AS k (key, last) VALUES ($1, $2) ON CONFLICT (key) "
	"DO UPDATE SET last = excluded.last "
	"WHERE k.last OPERATOR(pg_catalog.<=) excluded.last RETURNING last",
	2, {InvalidOid, INT8OID}
};

static const SnowidCounterStmt state_forget = {
	"DELETE FROM %s WHERE key OPERATOR(pg_catalog.=) $1 RETURNING last",
	1, {InvalidOid}
};

/*
 * Run the statement for key of counter c: stmt on snowid_counter_key
 * (args[0] the counter, args[1] the key, then more), or, on Citus,
 * state on its state table (args[0] the key, then the same more), as the
 * caller, who needs the rights the statement does on it.
 */
static bool
snowid_counter_key_exec(const SnowidCounter *c, const SnowidCounterStmt *stmt,
						const SnowidCounterStmt *state, text *key,
						Datum *more, int nmore, int64 *out)
{
	Datum		args[COUNTER_STMT_ARGS];

	Assert(nmore <= COUNTER_STMT_ARGS - 2);
	if (OidIsValid(c->state))
	{
		AclMode		need = state == &state_read ? ACL_SELECT :
			state == &state_forget ? ACL_SELECT | ACL_DELETE :
			ACL_SELECT | ACL_INSERT | ACL_UPDATE;
		const char *table = snowid_counter_citus_table(c, need);

		args[0] = snowid_counter_citus_key(c, key);
		memcpy(&args[1], more, nmore * sizeof(Datum));
		return snowid_counter_exec_on(c->extnsp, state, table, c->keytype,
									  args, out);
	}
	args[0] = ObjectIdGetDatum(c->relid);
	args[1] = PointerGetDatum(key);
	memcpy(&args[2], more, nmore * sizeof(Datum));
	return snowid_counter_exec(c->extnsp, stmt, args, out);
}

/* The same on snowid_counter_key (no Citus). */
static int64
snowid_counter_key_take(Oid extnsp, Oid relid, text *key, int64 step,
						int64 first)
{
	Datum		args[4];
	int64		out[COUNTER_STMT_OUTS];

	args[0] = ObjectIdGetDatum(relid);
	args[1] = PointerGetDatum(key);
	args[2] = Int64GetDatum(step);
	args[3] = Int64GetDatum(first);
	if (!snowid_counter_exec(extnsp, &row_update, args, out) &&
		!snowid_counter_exec(extnsp, &row_insert, args, out))
		elog(ERROR, "counter %u: key row neither updated nor inserted", relid);
	return out[0];
}

/* A counter's state table on Citus, 0 if it has none. */
static const SnowidCounterStmt counter_state = {
	"SELECT state::pg_catalog.oid::pg_catalog.int8 FROM %s.snowid_counter "
	"WHERE counter OPERATOR(pg_catalog.=) $1", 1, {REGCLASSOID}
};

/*
 * Move key's row in counter c's state table on Citus by step (to first at
 * the key's first use), in the key's shard, as the current user: its new
 * last.
 */
static int64
snowid_counter_state_take(const SnowidCounter *c, text *key, int64 step,
						  int64 first)
{
	Datum		more[2];
	int64		out[COUNTER_STMT_OUTS];

	more[0] = Int64GetDatum(step);
	more[1] = Int64GetDatum(first);
	if (!snowid_counter_key_exec(c, NULL, &state_update, key, more, 1, out) &&
		!snowid_counter_key_exec(c, NULL, &state_insert, key, more, 2, out))
		elog(ERROR, "counter %s: key row neither updated nor inserted",
			 c->name);
	return out[0];
}

/* Counter name (qualified) has no value left for key: its values end at end. */
snowid_noreturn static void
snowid_counter_none_left(const char *name, text *key, int64 end)
{
	ereport(ERROR,
			(errcode(ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED),
			 errmsg("counter %s has no value left for key \"%s\"",
					name, text_to_cstring(key)),
			 errdetail("Its values end at " INT64_FORMAT ".", end)));
}

/*
 * In a PG_CATCH: a key's row moved past the end of bigint (a step or a
 * block from near it) is the end of counter relid's values for the key,
 * said as the end of its type is (snowid_counter_row_check); any other
 * error goes on as it was.  ctx: the caller's context.
 */
static void
snowid_counter_past_end(MemoryContext ctx, Oid relid, text *key)
{
	ErrorData  *ed;

	MemoryContextSwitchTo(ctx);
	ed = CopyErrorData();
	if (ed->sqlerrcode != ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE)
		PG_RE_THROW();
	FlushErrorState();
	snowid_counter_none_left(snowid_ticket_name(relid), key, PG_INT64_MAX);
}

/*
 * Move the row of key of counter relid by step (to first at the key's
 * first use) in the current transaction, the row locked until it ends:
 * returns its new last.  Gapless: the caller's transaction; fast: the
 * server process's (snowid_counter_reserve_serve), which on Citus writes
 * the key's row in the state table as the owner of snowid's tables (who
 * owns the state table), through Citus, in the key's shard: its
 * transaction commits there (in one or two phases) before it answers.
 */
static int64
snowid_counter_row_take_at(Oid extnsp, Oid relid, text *key, int64 step,
						   int64 first)
{
	Datum		arg = ObjectIdGetDatum(relid);
	int64		out[COUNTER_STMT_OUTS];

	if (snowid_counter_citus() &&
		snowid_counter_exec(extnsp, &counter_state, &arg, out) && out[0] != 0)
	{
		SnowidCounter c;
		Oid			save_userid;
		int			save_sec_context;

		memset(&c, 0, sizeof(c));
		c.relid = relid;
		c.extnsp = extnsp;
		c.state = (Oid) out[0];
		c.keytype = get_rel_name(c.state) == NULL ? InvalidOid :
			get_atttype(c.state, get_attnum(c.state, "key"));
		c.name = snowid_ticket_name(relid);
		GetUserIdAndSecContext(&save_userid, &save_sec_context);
		SetUserIdAndSecContext(snowid_ticket_catalog_owner(extnsp),
							   save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
							   SECURITY_RESTRICTED_OPERATION);
		out[0] = snowid_counter_state_take(&c, key, step, first);
		SetUserIdAndSecContext(save_userid, save_sec_context);
		return out[0];
	}
	return snowid_counter_key_take(extnsp, relid, key, step, first);
}

/* The same; a row moved past bigint's end is the counter's end. */
int64
snowid_counter_row_take(Oid extnsp, Oid relid, text *key, int64 step,
						int64 first)
{
	MemoryContext ctx = CurrentMemoryContext;
	int64		last = 0;

	PG_TRY();
	{
		last = snowid_counter_row_take_at(extnsp, relid, key, step, first);
	}
	PG_CATCH();
	{
		snowid_counter_past_end(ctx, relid, key);
	}
	PG_END_TRY();
	return last;
}

/*
 * last, the last of the values first .. last just taken for key, refused
 * when none of them lies within the counter's type.
 */
int64
snowid_counter_row_check(const SnowidCounter *c, text *key, int64 first,
						 int64 last)
{
	if (first > c->maxvalue || last < c->start)
		snowid_counter_none_left(c->name, key, c->maxvalue);
	return last;
}

/* Gapless: the key's next value, in the caller's transaction. */
int64
snowid_counter_row_next(const SnowidCounter *c, text *key)
{
	MemoryContext ctx = CurrentMemoryContext;
	int64		last = 0;

	PG_TRY();
	{
		/* on Citus, as the caller, in the caller's distributed transaction */
		if (!OidIsValid(c->state))
			last = snowid_counter_key_take(c->extnsp, c->relid, key, 1, c->start);
		else
			last = snowid_counter_state_take(c, key, 1, c->start);
	}
	PG_CATCH();
	{
		snowid_counter_past_end(ctx, c->relid, key);
	}
	PG_END_TRY();
	return snowid_counter_row_check(c, key, last, last);
}

/* The last value given to key, as this transaction sees it: false if none. */
bool
snowid_counter_row_last(const SnowidCounter *c, text *key, int64 *last)
{
	int64		out[COUNTER_STMT_OUTS];

	if (!snowid_counter_key_exec(c, &row_read, &state_read, key, NULL, 0, out))
		return false;
	*last = out[0];
	return true;
}

/*
 * Make next (a value of this server's stripe) the next value of key;
 * refused at or below a value given.
 */
void
snowid_counter_row_move(const SnowidCounter *c, text *key, int64 next)
{
	Datum		more = Int64GetDatum(next - c->stripes);
	int64		out[COUNTER_STMT_OUTS];
	int64		last;

	if (snowid_counter_key_exec(c, &row_move, &state_move, key, &more, 1, out))
		return;
	/* the row is locked now (ON CONFLICT ... WHERE locks it): read it */
	if (!snowid_counter_row_last(c, key, &last))
		last = next - 1;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("counter %s cannot go back for key \"%s\"",
					c->name, text_to_cstring(key)),
			 errdetail("It has given the key values up to " INT64_FORMAT "; its next value cannot be " INT64_FORMAT ".",
					   last, next),
			 errhint("Restart the key at " INT64_FORMAT " or above, or drop the key to start it over.",
					 last + 1)));
}

/* Forget key: its next use starts over.  Whether it had a row. */
bool
snowid_counter_row_forget(const SnowidCounter *c, text *key)
{
	int64		out[COUNTER_STMT_OUTS];

	return snowid_counter_key_exec(c, &row_forget, &state_forget, key, NULL,
								   0, out);
}

/* Remove every row of counter relid (dropped, or a stale OID reused). */
void
snowid_counter_rows_forget(Oid extnsp, Oid relid)
{
	Datum		arg = ObjectIdGetDatum(relid);
	int64		out[COUNTER_STMT_OUTS];

	(void) snowid_counter_exec(extnsp, &rows_forget, &arg, out);
}

/*
 * Register counter relid (stripes 0: not striped; state: its state table
 * on Citus, else invalid).
 */
void
snowid_counter_row_create(Oid extnsp, Oid relid, Oid type, int64 start,
						  int64 stamp, const char *mode, int32 block,
						  int32 stripe, int32 stripes, Oid state)
{
	Datum		args[9];
	int64		out[COUNTER_STMT_OUTS];

	args[0] = ObjectIdGetDatum(relid);
	args[1] = ObjectIdGetDatum(type);
	args[2] = Int64GetDatum(start);
	args[3] = Int64GetDatum(stamp);
	args[4] = CStringGetTextDatum(mode);
	args[5] = Int32GetDatum(block);
	args[6] = Int32GetDatum(stripe);
	args[7] = Int32GetDatum(stripes);
	args[8] = ObjectIdGetDatum(state);
	(void) snowid_counter_exec(extnsp, &row_create, args, out);
}
