/*-------------------------------------------------------------------------
 *
 * generator_floor.h
 *	  Where the generator's stream starts and what it may not go below
 *	  (generator_floor.c), for snowid.c, rmgr.c and registry_claim.c.
 *	  No lock: the start sets SnowidShared.next_position in the postmaster
 *	  before anything is claimed, the raises only move it up, with
 *	  compare-and-swap (generator.c claims from it).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_GENERATOR_FLOOR_H
#define SNOWID_GENERATOR_FLOOR_H

#include "datatype/timestamp.h"

/* At a new shared-memory segment: start at the high-water mark. */
extern void snowid_generator_start(void);

/* Replay of a bound: never issue below position. */
extern void snowid_generator_raise(uint64 position);

/* The node came from another start: go on above its previous holder. */
extern void snowid_generator_raise_floor(int node_id, int64 floor_id,
										bool has_floor_id,
										TimestampTz floor_until);

#endif							/* SNOWID_GENERATOR_FLOOR_H */
