/*-------------------------------------------------------------------------
 *
 * continuation.h
 *	  The rule for going on above a bound under another layout, and the
 *	  words of its messages (continuation.c).
 *
 * Nothing here touches shared memory or the clock.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_CONTINUATION_H
#define SNOWID_CONTINUATION_H

#include "layout.h"
#include "lib/stringinfo.h"

/*
 * Where a stream under a layout and node ID goes on above a bound: filled
 * in by snowid_continuation.
 */
typedef struct SnowidContinuation
{
	uint64		position;		/* first position of the node at or above it */
	bool		expressible;	/* the layout has it, in a tick timestamptz holds */
	TimestampTz start;			/* expressible: the start of its tick */
	TimestampTz reachable_from; /* expressible: the clock may go on from then */
	bool		ok;				/* it may go on there now */
} SnowidContinuation;

extern bool snowid_continuation(const SnowidLayout *layout, int node_id,
								uint64 bound, TimestampTz now,
								SnowidContinuation *c);
extern bool snowid_layout_same(const SnowidLayout *a, int a_node,
							   const SnowidLayout *b, int b_node);
extern void snowid_describe_change(const SnowidLayout *was, int was_node,
								   const SnowidLayout *now, int now_node,
								   StringInfo changes, StringInfo previous);
extern char *snowid_issue_now_text(const SnowidLayout *layout, int node_id,
								   TimestampTz now);
extern char *snowid_continuation_refusal_text(const SnowidLayout *layout,
											  int node_id,
											  const SnowidContinuation *c,
											  TimestampTz now);

#endif							/* SNOWID_CONTINUATION_H */
