/*-------------------------------------------------------------------------
 *
 * generator.h
 *	  The generator (generator.c; its start and floors are
 *	  generator_floor.h's): the one stream of positions of this server,
 *	  the only writer of SnowidShared.next_position.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_GENERATOR_H
#define SNOWID_GENERATOR_H

/* The next ID of this server: what snowid_next() returns. */
extern int64 snowid_next_id(void);

#endif							/* SNOWID_GENERATOR_H */
