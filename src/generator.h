/*-------------------------------------------------------------------------
 *
 * generator.h
 *	  The generator (generator.c; its start and floors, generator_floor.c):
 *	  the one stream of positions of this server, the only writer of
 *	  SnowidShared.next_position.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_GENERATOR_H
#define SNOWID_GENERATOR_H

#include "datatype/timestamp.h"

/* The next ID of this server: what snowid_next() returns. */
extern int64 snowid_next_id(void);

/* At a new shared-memory segment: start at the high-water mark. */
extern void snowid_generator_start(void);

/* Replay of a bound: never issue below position. */
extern void snowid_generator_raise(uint64 position);

/* The node came from another start: go on above its previous holder. */
extern void snowid_generator_raise_floor(int node_id, int64 floor_id,
										bool has_floor_id,
										TimestampTz floor_until);

#endif							/* SNOWID_GENERATOR_H */
