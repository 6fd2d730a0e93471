/*-------------------------------------------------------------------------
 *
 * decode.c
 *	  Functions that take snowids apart or map timestamps onto them, and
 *	  snowid_layout(), and snowid_id_above(): where a node's stream continues
 *	  above a given ID (what a start under a changed layout does).
 *
 * None of these need shared memory: they read the layout in force (see
 * snowid_current_layout), so they work in a server that does not preload
 * snowid as long as it is configured with the same layout.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "common/int.h"
#include "compat.h"
#include "decode.h"
#include "fmgr.h"
#include "funcapi.h"
#include "layout.h"
#include "lease.h"
#include "utils/fmgrprotos.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(snowid_timestamp);
PG_FUNCTION_INFO_V1(snowid_node);
PG_FUNCTION_INFO_V1(snowid_sequence);
PG_FUNCTION_INFO_V1(snowid_decode);
PG_FUNCTION_INFO_V1(snowid_from_timestamp);
PG_FUNCTION_INFO_V1(snowid_interval);
PG_FUNCTION_INFO_V1(snowid_layout);
PG_FUNCTION_INFO_V1(snowid_id_above);

/*
 * The layout, after checking that id can be one of its snowids: from 0 to
 * 2^id_bits - 1.  Anything else would decode into parts no node issued.
 */
void
snowid_layout_for(int64 id, SnowidLayout *layout, int *node_id)
{
	if (id < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid snowid: " INT64_FORMAT, id),
				 errdetail("A snowid is never negative: its sign bit is always 0.")));
	snowid_current_layout(layout, node_id);
	if (!snowid_id_in_layout(layout, id))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid snowid: " INT64_FORMAT, id),
				 errdetail("With snowid.id_bits = %d, every snowid is below " UINT64_FORMAT ".",
						   layout->id_bits, UINT64CONST(1) << layout->id_bits)));
}

static TimestampTz
snowid_timestamp_of(const SnowidLayout *layout, int64 id)
{
	TimestampTz result;

	if (!snowid_tick_start(layout, snowid_id_tick(layout, id), &result))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp of snowid " INT64_FORMAT " is out of range", id)));
	return result;
}

Datum
snowid_timestamp(PG_FUNCTION_ARGS)
{
	int64		id = PG_GETARG_INT64(0);
	SnowidLayout layout;
	int			node_id;

	snowid_layout_for(id, &layout, &node_id);
	PG_RETURN_TIMESTAMPTZ(snowid_timestamp_of(&layout, id));
}

Datum
snowid_node(PG_FUNCTION_ARGS)
{
	int64		id = PG_GETARG_INT64(0);
	SnowidLayout layout;
	int			node_id;

	snowid_layout_for(id, &layout, &node_id);
	PG_RETURN_INT32(snowid_id_node(&layout, id));
}

Datum
snowid_sequence(PG_FUNCTION_ARGS)
{
	int64		id = PG_GETARG_INT64(0);
	SnowidLayout layout;
	int			node_id;

	snowid_layout_for(id, &layout, &node_id);
	PG_RETURN_INT32(snowid_id_sequence(&layout, id));
}

Datum
snowid_decode(PG_FUNCTION_ARGS)
{
	int64		id = PG_GETARG_INT64(0);
	SnowidLayout layout;
	int			node_id;
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	snowid_layout_for(id, &layout, &node_id);
	values[0] = TimestampTzGetDatum(snowid_timestamp_of(&layout, id));
	values[1] = Int32GetDatum(snowid_id_node(&layout, id));
	values[2] = Int32GetDatum(snowid_id_sequence(&layout, id));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

Datum
snowid_from_timestamp(PG_FUNCTION_ARGS)
{
	TimestampTz ts = PG_GETARG_TIMESTAMPTZ(0);
	SnowidLayout layout;
	int			node_id;
	int64		tick;

	snowid_current_layout(&layout, &node_id);
	if (TIMESTAMP_NOT_FINITE(ts))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range for a snowid: \"%s\"",
						timestamptz_to_str(ts)),
				 errdetail("Only finite timestamps map to snowids.")));
	tick = snowid_tick_of(&layout, ts);
	if (tick < 0 || tick > snowid_max_tick(&layout))
	{
		char	   *from = pstrdup(timestamptz_to_str(layout.epoch));
		char	   *until = pstrdup(timestamptz_to_str(snowid_layout_end(&layout)));

		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range for a snowid: \"%s\"",
						timestamptz_to_str(ts)),
				 errdetail("The layout covers the time from %s until %s.",
						   from, until)));
	}
	PG_RETURN_INT64(snowid_id_of_tick(&layout, tick));
}

/* The text of an interval, for the messages of snowid_interval alone. */
static char *
snowid_interval_text(Interval *span)
{
	return DatumGetCString(DirectFunctionCall1(interval_out,
											   IntervalPGetDatum(span)));
}

/*
 * snowid_interval(span): how much an ID grows while span passes, under the
 * layout in force: the ticks of span times 2^(node_bits + sequence_bits).
 * snowid_from_timestamp(t + span) - snowid_from_timestamp(t) is this span
 * whenever t is at the start of a tick, so bounds built from it stay on
 * tick boundaries.  A day counts as 24 hours; months have no fixed length
 * and are refused, and so are negative spans, spans that are not a whole
 * number of ticks and spans longer than the layout can express.
 */
Datum
snowid_interval(PG_FUNCTION_ARGS)
{
	Interval   *span = PG_GETARG_INTERVAL_P(0);
	SnowidLayout layout;
	int			node_id;
	int64		usecs;
	int64		ticks;

	snowid_current_layout(&layout, &node_id);
	if (!snowid_interval_is_finite(span))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("interval out of range for a snowid span: \"%s\"", snowid_interval_text(span)),
				 errdetail("Only finite intervals span a number of IDs.")));
	if (span->month != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("interval \"%s\" has no fixed length", snowid_interval_text(span)),
				 errdetail("It counts months or years, whose length in days varies, so it spans no fixed number of IDs."),
				 errhint("Give the interval in days or smaller units, or compute the bound of each month with snowid_from_timestamp.")));
	if (pg_mul_s64_overflow((int64) span->day, USECS_PER_DAY, &usecs) ||
		pg_add_s64_overflow(usecs, span->time, &usecs))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("interval out of range for a snowid span: \"%s\"", snowid_interval_text(span)),
				 errdetail("Counting a day as 24 hours, it is too long to be expressed in microseconds.")));
	if (usecs < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("interval \"%s\" is negative", snowid_interval_text(span)),
				 errdetail("A snowid span is how much an ID grows as time passes: it is never negative."),
				 errhint("Subtract the span of the positive interval instead.")));
	ticks = usecs / layout.tick_us;
	if (usecs % layout.tick_us != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("interval \"%s\" is not a whole number of snowid ticks", snowid_interval_text(span)),
				 errdetail("snowid.tick is " INT64_FORMAT " ms: the interval lies between " INT64_FORMAT " and " INT64_FORMAT " ticks.",
						   layout.tick_us / 1000, ticks, ticks + 1),
				 errhint("Give an interval that is a multiple of snowid.tick, so that bounds built from the span fall on the start of a tick.")));
	if (ticks > snowid_max_tick(&layout))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("interval out of range for a snowid span: \"%s\"", snowid_interval_text(span)),
				 errdetail("It is " INT64_FORMAT " ticks; with %d timestamp bits, the layout expresses at most " INT64_FORMAT ".",
						   ticks, layout.timestamp_bits, snowid_max_tick(&layout))));
	PG_RETURN_INT64(snowid_id_of_tick(&layout, ticks));
}

/*
 * snowid_id_above(id, node): the smallest ID of node in the layout in force
 * that is greater than id (an ID of any layout), or NULL if it has none.
 */
Datum
snowid_id_above(PG_FUNCTION_ARGS)
{
	int64		id = PG_GETARG_INT64(0);
	int32		node = PG_GETARG_INT32(1);
	SnowidLayout layout;
	int			node_id;
	uint64		position;

	snowid_layout_for(id, &layout, &node_id);
	if (node < 0 || node > snowid_max_node(&layout))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("node %d is outside the range of the layout (0 .. " INT64_FORMAT ")",
						node, snowid_max_node(&layout))));
	position = snowid_position_at_or_above(&layout, node, (uint64) id + 1);
	if (position >= snowid_position_end(&layout))
		PG_RETURN_NULL();
	PG_RETURN_INT64(snowid_id_from_position(&layout, position, node));
}

Datum
snowid_layout(PG_FUNCTION_ARGS)
{
	SnowidLayout layout;
	int			node_id;
	TupleDesc	tupdesc;
	Datum		values[9];
	bool		nulls[9] = {false};
	Interval   *tick;
	TimestampTz last;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	snowid_current_layout(&layout, &node_id);

	tick = (Interval *) palloc0(sizeof(Interval));
	tick->time = layout.tick_us;

	values[0] = TimestampTzGetDatum(layout.epoch);
	values[1] = IntervalPGetDatum(tick);
	values[2] = Int32GetDatum(layout.timestamp_bits);
	values[3] = Int32GetDatum(layout.node_bits);
	values[4] = Int32GetDatum(layout.sequence_bits);
	values[5] = Int32GetDatum(node_id);
	nulls[5] = (node_id < 0);
	values[6] = Int64GetDatum((INT64CONST(1) << layout.sequence_bits) *
							  USECS_PER_SEC / layout.tick_us);
	if (snowid_tick_start(&layout, snowid_max_tick(&layout), &last))
		values[7] = TimestampTzGetDatum(last);
	else
		nulls[7] = true;		/* beyond what timestamptz can hold */
	/* id_bits: a 1.0 or 1.1 definition has no column for it, and ignores it */
	values[8] = Int32GetDatum(layout.id_bits);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
