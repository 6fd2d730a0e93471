/*-------------------------------------------------------------------------
 *
 * counter_fast.c
 *	  Counters per key, mode fast: the caller's side of the protocol that
 *	  counter_cache.c's head comment describes.  Take from the cached
 *	  block; when there is none, or it is used up, have a server process of
 *	  the database reserve the next block in the key's row, in a transaction
 *	  of its own committed before it answers (snowid_counter_reserve,
 *	  forwarded by registry_server.c), and install it.  The caller's
 *	  transaction holds nothing of the reservation: its rollback, or a
 *	  crash, gives no value twice.  On Citus the key's row is in the
 *	  counter's state table, in the key's shard: each node reserves its
 *	  own blocks there and caches them.
 *
 * A striped counter (stripe k of n) gives on this server the values
 * start + k + i * n only.  The cache knows positions, consecutive as
 * before (position start + i stands for that value); the key's row holds
 * a value, moved by a block times n.  Unstriped, 0 of 1: a position is
 * its value.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "compat.h"
#include "counter_cache.h"
#include "counter_fast.h"
#include "counter_row.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/syscache.h"

static void
snowid_counter_tag(SnowidCounterTag *tag, const SnowidCounter *c, text *key)
{
	int			len = VARSIZE_ANY_EXHDR(key);

	Assert(len <= SNOWID_COUNTER_KEY_MAX);
	memset(tag, 0, sizeof(SnowidCounterTag));
	tag->dbid = MyDatabaseId;
	tag->relid = c->relid;
	tag->stamp = c->stamp;
	tag->len = len;
	memcpy(tag->key, VARDATA_ANY(key), len);
}

/* The value at position pos of this server's stripe. */
static int64
snowid_counter_value(const SnowidCounter *c, int64 pos)
{
	return c->start + c->stripe + (pos - c->start) * c->stripes;
}

/* The last position whose value lies at or below value. */
static int64
snowid_counter_position(const SnowidCounter *c, int64 value)
{
	int64		d = value - c->start - c->stripe;
	int64		q = d / c->stripes;

	if (d % c->stripes != 0 && d < 0)
		q--;
	return c->start + q;
}

/*
 * The first value of this server's stripe at or above next (PG_INT64_MAX
 * if none is a bigint).
 */
int64
snowid_counter_fast_align(const SnowidCounter *c, int64 next)
{
	int64		d = next - c->start - c->stripe;
	int64		value;

	if (d <= 0)
		return c->start + c->stripe;
	if (pg_add_s64_overflow(d, c->stripes - 1, &d) ||
		pg_mul_s64_overflow(d / c->stripes, c->stripes, &d) ||
		pg_add_s64_overflow(c->start + c->stripe, d, &value))
		return PG_INT64_MAX;
	return value;
}

/*
 * Reserve the next n values of key in a committed transaction of a server
 * process: the last of them.  snowid_counter_reserve(oid, text, bigint,
 * bigint) of snowid's schema is called directly (no user may call it; the
 * caller's right on the counter has been checked).
 */
static pg_noinline int64
snowid_counter_reserve(const SnowidCounter *c, text *key, int64 n)
{
	Oid			argtypes[4] = {OIDOID, TEXTOID, INT8OID, INT8OID};
	Oid			fn;
	int64		step = 0;
	int64		first = 0;

	/* the row moves by n values of the stripe; at first use, to the nth */
	if (pg_mul_s64_overflow(n, c->stripes, &step) ||
		pg_add_s64_overflow(snowid_counter_value(c, c->start), step - c->stripes,
							&first))
		(void) snowid_counter_row_check(c, key, PG_INT64_MAX, -1);	/* errs */

	fn = GetSysCacheOid3(PROCNAMEARGSNSP, Anum_pg_proc_oid,
						 CStringGetDatum("snowid_counter_reserve"),
						 PointerGetDatum(buildoidvector(argtypes, 4)),
						 ObjectIdGetDatum(c->extnsp));
	if (!OidIsValid(fn))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("function snowid_counter_reserve(oid, text, bigint, bigint) of snowid is missing"),
				 errhint("Update the extension: ALTER EXTENSION snowid UPDATE.")));
	return DatumGetInt64(OidFunctionCall4(fn, ObjectIdGetDatum(c->relid),
										  PointerGetDatum(key),
										  Int64GetDatum(step),
										  Int64GetDatum(first)));
}

int64
snowid_counter_fast_next(const SnowidCounter *c, text *key)
{
	SnowidCounterTag tag;
	int64		value = 0;
	int64		n = 0;
	int64		last = 0;
	TransactionId xid = InvalidTransactionId;

	snowid_counter_require_shared();
	snowid_counter_tag(&tag, c, key);
	for (;;)
	{
		SnowidCounterTake take;

		CHECK_FOR_INTERRUPTS();
		take = snowid_counter_cache_take(&tag, c->block, &value, &xid, &n);
		if (take == COUNTER_BUSY)
		{
			snowid_counter_cache_sleep();
			continue;
		}
		snowid_counter_cache_awake();
		if (take == COUNTER_TAKEN)
			return snowid_counter_value(c, value);
		if (take == COUNTER_WAIT)
		{
			XactLockTableWait(xid, NULL, NULL, XLTW_None);
			continue;
		}
		if (take == COUNTER_MOVED)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("counter %s cannot give key \"%s\" a value in the transaction that restarted or dropped it",
							c->name, text_to_cstring(key)),
					 errdetail("A fast counter reserves its values in a transaction of its own, which would wait for this one's lock on the key."),
					 errhint("Commit first, then take the key's values.")));
		break;
	}
	PG_TRY();
	{
		last = snowid_counter_reserve(c, key, n);
		(void) snowid_counter_row_check(c, key, last - (n - 1) * c->stripes,
										last);
	}
	PG_CATCH();
	{
		snowid_counter_cache_unreserve(&tag);
		PG_RE_THROW();
	}
	PG_END_TRY();
	last = snowid_counter_position(c, last);
	value = snowid_counter_cache_install(&tag, last - n + 1,
										 Min(last, snowid_counter_position(c, c->maxvalue)),
										 n);
	/* reserved before the key started over: ask again */
	if (value < 0)
		return snowid_counter_fast_next(c, key);
	return snowid_counter_value(c, value);
}

/* The last value handed out on this server, if the key is cached. */
bool
snowid_counter_fast_last(const SnowidCounter *c, text *key, int64 *last)
{
	SnowidCounterTag tag;

	snowid_counter_require_shared();
	snowid_counter_tag(&tag, c, key);
	if (!snowid_counter_cache_last(&tag, last))
		return false;
	*last = snowid_counter_value(c, *last);
	return true;
}

/*
 * This transaction moved the key's row (every value left lies at or below
 * floor) or deleted it (floor: start - 1).
 */
void
snowid_counter_fast_forget(const SnowidCounter *c, text *key, int64 floor)
{
	SnowidCounterTag tag;

	snowid_counter_require_shared();
	snowid_counter_tag(&tag, c, key);
	snowid_counter_cache_forget(&tag, snowid_counter_position(c, floor));
}
