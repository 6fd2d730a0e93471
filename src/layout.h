/*-------------------------------------------------------------------------
 *
 * layout.h
 *	  The bit layout of a snowid and the pure arithmetic on it.
 *
 * A snowid is a non-negative int64 below 2^id_bits:
 *
 *	  0 ... 0 | tick (timestamp_bits) | node (node_bits) | sequence (sequence_bits)
 *
 * with timestamp_bits = id_bits - node_bits - sequence_bits (id_bits is 63
 * by default, leaving only the sign bit 0).
 *
 * The generator works on "positions": tick << sequence_bits | sequence, that
 * is the ID without its node bits.  Positions of one node and the IDs built
 * from them are ordered alike, so the generator can count positions and let
 * a carry out of the sequence move into the next tick.
 *
 * Nothing here touches shared memory, GUCs or the clock.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_LAYOUT_H
#define SNOWID_LAYOUT_H

#include "datatype/timestamp.h"

typedef struct SnowidLayout
{
	int			node_bits;
	int			sequence_bits;
	int			timestamp_bits; /* id_bits - node_bits - sequence_bits */
	int			id_bits;		/* every ID is below 2^id_bits (32 .. 63) */
	TimestampTz epoch;			/* start of tick 0 */
	int64		tick_us;		/* length of one tick in microseconds */
} SnowidLayout;

/* Fill in timestamp_bits; false if the widths leave no timestamp bit. */
extern bool snowid_layout_init(SnowidLayout *layout, int id_bits,
							   int node_bits, int sequence_bits,
							   TimestampTz epoch, int tick_ms);

static inline uint64
snowid_sequence_mask(const SnowidLayout *layout)
{
	return (UINT64CONST(1) << layout->sequence_bits) - 1;
}

static inline int64
snowid_max_node(const SnowidLayout *layout)
{
	return (INT64CONST(1) << layout->node_bits) - 1;
}

/* Largest tick the layout can express. */
static inline int64
snowid_max_tick(const SnowidLayout *layout)
{
	return (INT64CONST(1) << layout->timestamp_bits) - 1;
}

/* One past the largest position: positions are 0 .. snowid_position_end-1. */
static inline uint64
snowid_position_end(const SnowidLayout *layout)
{
	return UINT64CONST(1) << (layout->timestamp_bits + layout->sequence_bits);
}

/* Build the ID of a position on a node. */
static inline int64
snowid_id_from_position(const SnowidLayout *layout, uint64 position, int32 node)
{
	uint64		tick = position >> layout->sequence_bits;
	uint64		seq = position & snowid_sequence_mask(layout);

	return (int64) ((tick << (layout->node_bits + layout->sequence_bits)) |
					((uint64) node << layout->sequence_bits) |
					seq);
}

/* Whether an int64 can be an ID of the layout: 0 <= id < 2^id_bits. */
static inline bool
snowid_id_in_layout(const SnowidLayout *layout, int64 id)
{
	return id >= 0 && (uint64) id < (UINT64CONST(1) << layout->id_bits);
}

/* The parts of an ID (which must be in the layout). */
static inline int64
snowid_id_tick(const SnowidLayout *layout, int64 id)
{
	return id >> (layout->node_bits + layout->sequence_bits);
}

static inline int32
snowid_id_node(const SnowidLayout *layout, int64 id)
{
	return (int32) ((id >> layout->sequence_bits) & snowid_max_node(layout));
}

static inline int32
snowid_id_sequence(const SnowidLayout *layout, int64 id)
{
	return (int32) ((uint64) id & snowid_sequence_mask(layout));
}

/* Smallest ID any node can issue in a tick. */
static inline int64
snowid_id_of_tick(const SnowidLayout *layout, int64 tick)
{
	return tick << (layout->node_bits + layout->sequence_bits);
}

/*
 * Start of a tick as a timestamp; false if it lies beyond what timestamptz
 * can hold.
 */
extern bool snowid_tick_start(const SnowidLayout *layout, int64 tick,
							  TimestampTz *result);

/*
 * The tick containing a timestamp: floor((ts - epoch) / tick).  Negative
 * for timestamps before the epoch.
 */
extern int64 snowid_tick_of(const SnowidLayout *layout, TimestampTz ts);

/*
 * The smallest position whose ID on node is at or above bound, an ID of any
 * layout (up to 2^63); snowid_position_end(layout) if the layout has none.
 * This is where a stream continues when every ID issued before lies below
 * bound, whatever layout issued them.
 */
extern uint64 snowid_position_at_or_above(const SnowidLayout *layout,
										  int32 node, uint64 bound);

/*
 * The bound that covers every position below position on node: the ID of
 * position, or 2^(width of the layout) for snowid_position_end.
 */
extern uint64 snowid_bound_of_position(const SnowidLayout *layout,
									   uint64 position, int32 node);

/*
 * A bound of every ID issued by time ts: the first ID of the tick after the
 * one containing ts, 0 before the epoch, 2^id_bits past the layout's end.
 * The registry's rule for an ID a member reports (ts: its clock plus the
 * holder's max_lead), which a member applies to what it sends and receives.
 */
extern uint64 snowid_id_bound_at(const SnowidLayout *layout, TimestampTz ts);

/*
 * End of the layout's life: the start of the first tick it cannot express,
 * or DT_NOEND when that lies beyond what timestamptz can hold.
 */
extern TimestampTz snowid_layout_end(const SnowidLayout *layout);

#endif							/* SNOWID_LAYOUT_H */
