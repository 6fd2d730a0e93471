/*-------------------------------------------------------------------------
 *
 * layout.c
 *	  Tick arithmetic of a snowid layout: pure functions of their inputs,
 *	  with every multiplication checked for overflow.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/int.h"
#include "layout.h"

bool
snowid_layout_init(SnowidLayout *layout, int id_bits, int node_bits,
				   int sequence_bits, TimestampTz epoch, int tick_ms)
{
	layout->id_bits = id_bits;
	layout->node_bits = node_bits;
	layout->sequence_bits = sequence_bits;
	layout->timestamp_bits = id_bits - node_bits - sequence_bits;
	layout->epoch = epoch;
	layout->tick_us = (int64) tick_ms * 1000;
	return id_bits <= 63 && layout->timestamp_bits >= 1 && node_bits >= 0 &&
		sequence_bits >= 0 && tick_ms >= 1;
}

bool
snowid_tick_start(const SnowidLayout *layout, int64 tick, TimestampTz *result)
{
	int64		offset;

	if (pg_mul_s64_overflow(tick, layout->tick_us, &offset) ||
		pg_add_s64_overflow(layout->epoch, offset, result))
		return false;
	return IS_VALID_TIMESTAMP(*result);
}

int64
snowid_tick_of(const SnowidLayout *layout, TimestampTz ts)
{
	int64		delta;

	if (pg_sub_s64_overflow(ts, layout->epoch, &delta))
		delta = (ts > layout->epoch) ? PG_INT64_MAX : PG_INT64_MIN + 1;
	if (delta >= 0)
		return delta / layout->tick_us;
	return -((-delta + layout->tick_us - 1) / layout->tick_us);
}

TimestampTz
snowid_layout_end(const SnowidLayout *layout)
{
	TimestampTz end;

	if (!snowid_tick_start(layout, snowid_max_tick(layout) + 1, &end))
		return DT_NOEND;
	return end;
}
