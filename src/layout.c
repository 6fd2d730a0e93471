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

uint64
snowid_id_bound_at(const SnowidLayout *layout, TimestampTz ts)
{
	int64		tick = snowid_tick_of(layout, ts);

	if (tick < 0)
		return 0;
	if (tick >= snowid_max_tick(layout))
		return UINT64CONST(1) << layout->id_bits;
	return (uint64) snowid_id_of_tick(layout, tick + 1);
}

TimestampTz
snowid_layout_end(const SnowidLayout *layout)
{
	TimestampTz end;

	if (!snowid_tick_start(layout, snowid_max_tick(layout) + 1, &end))
		return DT_NOEND;
	return end;
}

uint64
snowid_position_at_or_above(const SnowidLayout *layout, int32 node,
							uint64 bound)
{
	const int	shift = layout->node_bits + layout->sequence_bits;
	const uint64 low_mask = (UINT64CONST(1) << shift) - 1;
	uint64		tick = bound >> shift;
	uint64		low = bound & low_mask; /* node and sequence part */
	uint64		node_part = (uint64) node << layout->sequence_bits;
	uint64		seq = 0;

	if (low > node_part)
	{
		if ((low >> layout->sequence_bits) == (uint64) node)
			seq = low & snowid_sequence_mask(layout);	/* same tick, same node */
		else
			tick++;				/* this node's IDs of the tick are all below */
	}
	/* tick is at most 2^63 here, so the comparison comes before any shift */
	if (tick > (uint64) snowid_max_tick(layout))
		return snowid_position_end(layout);
	return (tick << layout->sequence_bits) | seq;
}

uint64
snowid_bound_of_position(const SnowidLayout *layout, uint64 position,
						 int32 node)
{
	if (position >= snowid_position_end(layout))
		return UINT64CONST(1) << (layout->timestamp_bits + layout->node_bits +
								  layout->sequence_bits);
	return (uint64) snowid_id_from_position(layout, position, node);
}
