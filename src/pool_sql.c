/*-------------------------------------------------------------------------
 *
 * pool_sql.c
 *	  Pools: the SQL functions -- snowid_pool_holdings() and, for the
 *	  registry functions of an upstream pool, snowid_pool_take(),
 *	  snowid_pool_skip(), snowid_pool_untake() and snowid_pool_reach().
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/xlog.h"
#include "fmgr.h"
#include "funcapi.h"
#include "pool.h"
#include "pool_grant.h"
#include "pool_store.h"
#include "pool_take.h"
#include "pool_users.h"
#include "storage/lwlock.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(snowid_pool_holdings);
PG_FUNCTION_INFO_V1(snowid_pool_take_sql);
PG_FUNCTION_INFO_V1(snowid_pool_skip_sql);
PG_FUNCTION_INFO_V1(snowid_pool_untake_sql);
PG_FUNCTION_INFO_V1(snowid_pool_reach_sql);

static const char *
snowid_pool_state_text(SnowidPoolSlot *slot)
{
	switch (slot->status)
	{
		case SNOWID_POOL_WAITING:
			return "waiting";
		case SNOWID_POOL_OK:
			return slot->request[0] != '\0' && snowid_pool_wants(slot) &&
				slot->st.nranges > 0 ? "fetching" : "ok";
		case SNOWID_POOL_EMPTY:
			return "empty";
		case SNOWID_POOL_UNKNOWN:
			return "unknown";
		case SNOWID_POOL_CLOSED:
			return "closed";
		case SNOWID_POOL_UNUSABLE:
			return "unusable";
	}
	return "unknown";
}

Datum
snowid_pool_holdings(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			n;
	TimestampTz now = GetCurrentTimestamp();

	InitMaterializedSRF(fcinfo, 0);
	if (snowid_pool_shared == NULL)
		return (Datum) 0;
	/* failures: from 1.5 on (a database at 1.4 has eleven columns) */
	if (rsinfo->setDesc->natts != 11 && rsinfo->setDesc->natts != 12)
		elog(ERROR, "snowid_pool_holdings() has %d columns",
			 rsinfo->setDesc->natts);
	n = snowid_pool_slots();
	for (int i = 0; i < n; i++)
	{
		SnowidPoolSlot *slot = &snowid_pool_shared->slots[i];
		Datum		values[12];
		bool		nulls[12] = {false};
		int64		in_hand;
		double		rate;

		LWLockAcquire(slot->lock, LW_EXCLUSIVE);
		if (!slot->in_use)
		{
			LWLockRelease(slot->lock);
			continue;
		}
		snowid_state_settle(&slot->st, &slot->next_off);
		values[0] = CStringGetTextDatum(slot->st.name);
		values[1] = ObjectIdGetDatum(slot->st.typid);
		nulls[1] = !OidIsValid(slot->st.typid);
		values[2] = CStringGetTextDatum(snowid_pool_state_text(slot));
		if (slot->st.nranges > 0)
		{
			SnowidPoolRange *r = &slot->st.ranges[0];

			values[3] = Int64GetDatum(r->first);
			values[4] = Int64GetDatum(r->last);
			values[5] = Int64GetDatum(snowid_range_value(r, slot->next_off));
		}
		else
			nulls[3] = nulls[4] = nulls[5] = true;
		in_hand = snowid_pool_in_hand_locked(slot);
		values[6] = Int64GetDatum(in_hand);
		values[7] = Int32GetDatum(slot->st.nranges);
		rate = snowid_pool_rate_locked(slot, now);
		values[8] = DirectFunctionCall1(float8_numeric, Float8GetDatum(rate));
		nulls[8] = slot->rate_at == 0;
		if (rate > 0 && (double) in_hand / rate < 1e12)
		{
			Interval   *left = palloc0(sizeof(Interval));

			left->time = (int64) rint((double) in_hand / rate) * USECS_PER_SEC;
			values[9] = IntervalPGetDatum(left);
		}
		else
			nulls[9] = true;
		values[10] = CStringGetTextDatum(slot->detail);
		nulls[10] = slot->detail[0] == '\0';
		values[11] = Int64GetDatum((int64) Min(slot->failures, (uint64) PG_INT64_MAX));
		LWLockRelease(slot->lock);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

Datum
snowid_pool_take_sql(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int64		want = PG_GETARG_INT64(1);
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {true, true, false};
	int			idx;
	int64		first;
	int64		count;
	SnowidPoolSlot *slot;
	const char *state;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (want < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot take %lld values of pool \"%s\"", (long long) want, name),
				 errdetail("The number of values must be 0 (only attach) or more.")));
	if (RecoveryInProgress())
		snowid_pool_refuse_standby(name);
	idx = snowid_pool_attach(name, false);
	snowid_pool_upstream(idx);
	slot = &snowid_pool_shared->slots[idx];
	if (want > 0 && snowid_pool_take(idx, name, want, &first, &count))
	{
		values[0] = Int64GetDatum(first);
		values[1] = Int64GetDatum(first + (count - 1));
		nulls[0] = nulls[1] = false;
		state = "ok";
	}
	else
	{
		LWLockAcquire(slot->lock, LW_EXCLUSIVE);
		slot->demand = true;
		switch (slot->status)
		{
			case SNOWID_POOL_EMPTY:
				state = "empty";
				break;
			case SNOWID_POOL_UNKNOWN:
				state = "unknown";
				break;
			case SNOWID_POOL_CLOSED:
				state = "closed";
				break;
			case SNOWID_POOL_UNUSABLE:
				/* the registry's members wait; its holdings say why */
				state = "wait";
				break;
			default:
				state = want == 0 && slot->st.nranges > 0 ? "ok" : "wait";
				break;
		}
		LWLockRelease(slot->lock);
		snowid_pool_wake_worker();
	}
	values[2] = CStringGetTextDatum(state);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

Datum
snowid_pool_skip_sql(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int64		through = PG_GETARG_INT64(1);
	int			idx;
	SnowidPoolSlot *slot;
	SnowidPoolState st;
	uint64		next_off;

	if (RecoveryInProgress())
		snowid_pool_refuse_standby(name);
	idx = snowid_pool_attach(name, false);
	snowid_pool_upstream(idx);
	slot = &snowid_pool_shared->slots[idx];
	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	if (through == PG_INT64_MAX || (slot->st.floor > through))
	{
		/* nothing above, or nothing new: the floor stays or goes to the end */
		if (through == PG_INT64_MAX && slot->st.nranges > 0)
		{
			st = slot->st;
			st.nranges = 0;
			st.durable_off = 0;
			snowid_pool_persist(idx, &st);
			slot->st = st;
			slot->next_off = 0;
		}
		LWLockRelease(slot->lock);
		PG_RETURN_VOID();
	}
	st = slot->st;
	next_off = slot->next_off;
	st.floor = through + 1;
	snowid_state_settle(&st, &next_off);
	snowid_pool_persist(idx, &st);
	slot->st = st;
	slot->next_off = next_off;
	LWLockRelease(slot->lock);
	snowid_pool_wake_worker();
	PG_RETURN_VOID();
}

Datum
snowid_pool_untake_sql(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int64		first = PG_GETARG_INT64(1);
	int64		last = PG_GETARG_INT64(2);
	int			idx;
	SnowidPoolSlot *slot;
	bool		done = false;

	if (RecoveryInProgress())
		snowid_pool_refuse_standby(name);
	idx = snowid_pool_attach(name, false);
	snowid_pool_upstream(idx);
	slot = &snowid_pool_shared->slots[idx];
	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	if (slot->status != SNOWID_POOL_CLOSED && slot->st.nranges > 0 &&
		first <= last && slot->next_off > 0)
	{
		SnowidPoolRange *r = &slot->st.ranges[0];

		/* only the values taken last, and none of them since */
		if (first >= r->first && first >= slot->st.floor &&
			last == snowid_range_value(r, slot->next_off - 1))
		{
			slot->next_off = (uint64) first - (uint64) r->first;
			done = true;
		}
	}
	LWLockRelease(slot->lock);
	PG_RETURN_BOOL(done);
}

/*
 * How far the grants of an upstream pool from this server's holdings can
 * reach, for the registry's bound on a member's report (snowid_pool_report):
 * the next value a grant would hand out (the floor while nothing is in
 * hand), the last value one grant can reach from there (a take never goes
 * past the first range: snowid_pool_take) and the last value held at all.
 * The last two are NULL while nothing is in hand: no grant can be made.
 */
Datum
snowid_pool_reach_sql(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {false, true, true};
	int			idx;
	SnowidPoolSlot *slot;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (RecoveryInProgress())
		snowid_pool_refuse_standby(name);
	idx = snowid_pool_attach(name, false);
	snowid_pool_upstream(idx);
	slot = &snowid_pool_shared->slots[idx];
	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	snowid_state_settle(&slot->st, &slot->next_off);
	if (slot->st.nranges > 0)
	{
		SnowidPoolRange *r = &slot->st.ranges[0];
		int64		held_last = r->last;

		for (int i = 1; i < slot->st.nranges; i++)
			held_last = Max(held_last, slot->st.ranges[i].last);
		values[0] = Int64GetDatum(snowid_range_value(r, slot->next_off));
		values[1] = Int64GetDatum(r->last);
		values[2] = Int64GetDatum(held_last);
		nulls[1] = nulls[2] = false;
	}
	else
		values[0] = Int64GetDatum(slot->st.floor);
	LWLockRelease(slot->lock);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
