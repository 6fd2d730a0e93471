/*-------------------------------------------------------------------------
 *
 * continuation.c
 *	  The continuation rule: where a stream may go on above the IDs issued
 *	  before, under a layout (or node ID) that may differ from theirs, and
 *	  the words messages use to describe a change of layout.
 *
 * The start of a server under a changed layout and the replay of a bound
 * (highwater.c), and ALTER SYSTEM on a layout parameter (alter_system.c),
 * all judge by snowid_continuation, and only by it.
 *
 * Pure functions of their arguments and the max_lead/max_wait settings:
 * nothing here touches shared memory or reads the clock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "continuation.h"
#include "guc.h"
#include "layout.h"
#include "utils/timestamp.h"

/* Do two layouts, each with its node ID, issue the same IDs? */
bool
snowid_layout_same(const SnowidLayout *a, int a_node,
				   const SnowidLayout *b, int b_node)
{
	return a->epoch == b->epoch && a->tick_us == b->tick_us &&
		a->node_bits == b->node_bits &&
		a->sequence_bits == b->sequence_bits &&
		a->timestamp_bits == b->timestamp_bits && a_node == b_node;
}

static char *
snowid_tick_text(int64 tick_us)
{
	if (tick_us % 1000 == 0)
		return psprintf(INT64_FORMAT "ms", tick_us / 1000);
	return psprintf(INT64_FORMAT "us", tick_us);
}

/*
 * Describe how the layout was (with node ID was_node) differs from now
 * (with now_node): into changes ("snowid.tick 1ms -> 2ms, ...") and into
 * previous (the settings to restore, "snowid.tick = '1ms', ...").
 */
void
snowid_describe_change(const SnowidLayout *was, int was_node,
					   const SnowidLayout *now, int now_node,
					   StringInfo changes, StringInfo previous)
{
	int			was_width = was->node_bits + was->sequence_bits + was->timestamp_bits;
	int			now_width = now->node_bits + now->sequence_bits + now->timestamp_bits;

#define SNOWID_CHANGE(name, fmt, x, y) \
	do { \
		appendStringInfo(changes, "%s" name " " fmt " -> " fmt, \
						 changes->len > 0 ? ", " : "", (x), (y)); \
		appendStringInfo(previous, "%s" name " = '" fmt "'", \
						 previous->len > 0 ? ", " : "", (x)); \
	} while (0)

	if (was->epoch != now->epoch)
	{
		char	   *x = pstrdup(timestamptz_to_str(was->epoch));
		char	   *y = pstrdup(timestamptz_to_str(now->epoch));

		appendStringInfo(changes, "%ssnowid.epoch '%s' -> '%s'",
						 changes->len > 0 ? ", " : "", x, y);
		appendStringInfo(previous, "%ssnowid.epoch = '%s'",
						 previous->len > 0 ? ", " : "", x);
	}
	if (was->tick_us != now->tick_us)
		SNOWID_CHANGE("snowid.tick", "%s", snowid_tick_text(was->tick_us),
					  snowid_tick_text(now->tick_us));
	if (was->node_bits != now->node_bits)
		SNOWID_CHANGE("snowid.node_bits", "%d", was->node_bits, now->node_bits);
	if (was->sequence_bits != now->sequence_bits)
		SNOWID_CHANGE("snowid.sequence_bits", "%d", was->sequence_bits,
					  now->sequence_bits);
	if (was_width != now_width)
		SNOWID_CHANGE("snowid.id_bits", "%d", was_width, now_width);
	if (was_node != now_node)
		SNOWID_CHANGE("snowid.node_id", "%d", was_node, now_node);
#undef SNOWID_CHANGE
}

/*
 * The continuation rule.  A stream under layout on node node_id goes on
 * above bound (every ID issued before lies below it, under whatever
 * layout) at the first position of its node whose ID is at or above bound;
 * it may go on there only if the clock, read as now, is within
 * snowid.max_lead + snowid.max_wait of that position's tick (callers wait
 * for it as for a clock step).  A server without a node ID issues nothing,
 * so it may always.  Fills *c; returns c->ok.
 *
 * The start of a server under a changed layout and ALTER SYSTEM on a
 * layout parameter (alter_system.c) both judge by this, and only this.
 */
bool
snowid_continuation(const SnowidLayout *layout, int node_id, uint64 bound,
					TimestampTz now, SnowidContinuation *c)
{
	int64		allowed_us = ((int64) snowid_max_lead_ms + snowid_max_wait_ms) * 1000;

	c->position = snowid_position_at_or_above(layout, Max(node_id, 0), bound);
	c->start = DT_NOEND;
	c->expressible = c->position < snowid_position_end(layout) &&
		snowid_tick_start(layout, (int64) (c->position >> layout->sequence_bits),
						  &c->start);
	c->reachable_from = c->expressible ? c->start - allowed_us : DT_NOEND;
	c->ok = node_id < 0 || (c->expressible && c->start - now <= allowed_us);
	return c->ok;
}

/* What layout would issue on node_id at now, for messages. */
char *
snowid_issue_now_text(const SnowidLayout *layout, int node_id, TimestampTz now)
{
	int64		wall_tick = snowid_tick_of(layout, now);

	if (wall_tick < 0 || wall_tick > snowid_max_tick(layout))
		return pstrdup("no ID");
	return psprintf(INT64_FORMAT,
					snowid_id_from_position(layout,
											(uint64) wall_tick << layout->sequence_bits,
											Max(node_id, 0)));
}

/* Why a continuation c that is not ok cannot go on, for messages. */
char *
snowid_continuation_refusal_text(const SnowidLayout *layout, int node_id,
								 const SnowidContinuation *c, TimestampTz now)
{
	if (!c->expressible)
		return pstrdup("it has no ID above them");
	return psprintf("its first ID above them, " INT64_FORMAT ", belongs to the tick starting at %s, %.3f s ahead of the clock, more than snowid.max_lead (%d ms) and snowid.max_wait (%d ms) allow",
					snowid_id_from_position(layout, c->position, Max(node_id, 0)),
					timestamptz_to_str(c->start), (double) (c->start - now) / 1e6,
					snowid_max_lead_ms, snowid_max_wait_ms);
}
