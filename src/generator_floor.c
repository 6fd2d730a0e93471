/*-------------------------------------------------------------------------
 *
 * generator_floor.c
 *	  Where the generator's stream starts and what it may not go below: the
 *	  high-water mark at a new shared-memory segment, a bound replayed from
 *	  WAL, the floor a previous holder of the node leaves.  Each only raises
 *	  SnowidShared.next_position (generator.c claims from it).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "generator_floor.h"
#include "guc.h"
#include "highwater.h"
#include "layout.h"
#include "state.h"
#include "utils/timestamp.h"

/*
 * The node came from another start: never issue at or below what its
 * previous holder may have issued.  floor_id bounds every ID it issued;
 * floor_until is when its lease ended (it issued nothing of a tick
 * starting more than max_lead after that).
 */
void
snowid_generator_raise_floor(int node_id, int64 floor_id, bool has_floor_id,
							TimestampTz floor_until)
{
	const SnowidLayout *layout = &snowid_active_layout;
	uint64		position = 0;
	uint64		old;

	if (has_floor_id && floor_id > 0)
		position = snowid_position_at_or_above(layout, node_id, (uint64) floor_id);
	if (floor_until > 0)
	{
		TimestampTz ts = floor_until + (int64) snowid_max_lead_ms * 1000;
		int64		tick = snowid_tick_of(layout, ts - 1) + 1;
		uint64		p;

		if (tick > snowid_max_tick(layout))
			p = snowid_position_end(layout);
		else
			p = tick <= 0 ? 0 : (uint64) tick << layout->sequence_bits;
		position = Max(position, p);
	}
	old = pg_atomic_read_u64(&snowid_shared->next_position);
	while (old < position &&
		   !pg_atomic_compare_exchange_u64(&snowid_shared->next_position,
										   &old, position))
		;
	if (position > old)
		ereport(LOG,
				(errmsg("snowid continues above the IDs the previous holder of node %d may have issued",
						node_id),
				 position >= snowid_position_end(layout) ?
				 errdetail("The layout has no ID left above them.") :
				 errdetail("The next ID will be " INT64_FORMAT " or above.",
						   snowid_id_from_position(layout, position, node_id))));
}

/*
 * At a new shared-memory segment, in the postmaster: start the stream at
 * the persisted high-water mark.
 */
void
snowid_generator_start(void)
{
	uint64		position = snowid_highwater_load(snowid_shared);

	pg_atomic_write_u64(&snowid_shared->next_position, position);
}

/* Replay of a bound (rmgr.c): never issue below position. */
void
snowid_generator_raise(uint64 position)
{
	uint64		old = pg_atomic_read_u64(&snowid_shared->next_position);

	while (old < position &&
		   !pg_atomic_compare_exchange_u64(&snowid_shared->next_position,
										   &old, position))
		;
}
