/*-------------------------------------------------------------------------
 *
 * uuid.h
 *	  Snowids as RFC 9562 version 7 UUIDs (uuid.c).
 *
 * The UUID of a snowid, most significant bit first (uuid compares its
 * bytes in this order):
 *
 *	  bits   0 .. 47	unix_ts_ms: the start of the ID's tick in Unix
 *						milliseconds, rounded down; 0 for ticks before
 *						1970, 2^48 - 1 for ticks after 10889-08-02
 *						05:31:50.655 UTC (both only in layouts that reach
 *						that far)
 *	  bits  48 .. 51	the version, 7
 *	  bits  52 .. 62	zero
 *	  bit   63			bit 62 of the ID
 *	  bits  64 .. 65	the variant, binary 10
 *	  bits  66 .. 127	bits 61 .. 0 of the ID
 *
 * The 74 bits RFC 9562 leaves to the generator (rand_a and rand_b) hold the
 * whole ID, right-aligned, so the round trip needs no layout and is exact
 * for every ID; the time field repeats the ID's tick in the unit version 7
 * defines.  UUIDs therefore sort by time, then by ID: for IDs of one layout
 * that is the order of the IDs.  Reading a UUID back checks that its time
 * field is what the layout in force makes of the ID it holds, which is how
 * a UUID made under another epoch, tick or width (or not by snowid) is
 * told apart.
 *
 * Nothing here touches shared memory, GUCs or the clock.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_UUID_H
#define SNOWID_UUID_H

#include "layout.h"
#include "utils/uuid.h"

/* Largest value of the 48-bit time field. */
#define SNOWID_UUID_MAX_MS		((INT64CONST(1) << 48) - 1)

/* What the bits of a version 7 UUID say, taken apart. */
typedef struct SnowidUuidParts
{
	int64		time_ms;		/* bits 0 .. 47 */
	int			version;		/* bits 48 .. 51 */
	int			reserved;		/* bits 52 .. 62, zero in a snowid's UUID */
	int			variant;		/* bits 64 .. 65 */
	int64		id;				/* bit 63, then bits 66 .. 127 */
} SnowidUuidParts;

/* The time field of the UUIDs of a tick of the layout. */
extern int64 snowid_uuid_time_ms(const SnowidLayout *layout, int64 tick);

/* The UUID of an ID of the layout. */
extern void snowid_uuid_make(const SnowidLayout *layout, int64 id,
							 pg_uuid_t *uuid);

/* Take the bits of any UUID apart (nothing is checked). */
extern void snowid_uuid_split(const pg_uuid_t *uuid, SnowidUuidParts *parts);

#endif							/* SNOWID_UUID_H */
