/*-------------------------------------------------------------------------
 *
 * ticketmath.h
 *	  The pure arithmetic of ticket sequences: values, shards and blocks.
 *
 * Shard s of n issues the values start + s + k * n, k = 0, 1, 2, ... up to
 * the largest value not above the maximum of the ticket's type.  The k of
 * one shard are cut into blocks of `block` consecutive k: block b holds
 * k = b * block .. min((b + 1) * block, kcount) - 1, so the last block is
 * cut at the type's maximum and no block ever holds a value of another
 * shard.  The backing sequence counts blocks 0 .. last_block + 1; the extra
 * number means "no block left".
 *
 * All arithmetic is done in uint64, where every intermediate result fits:
 * the distance from start + s to the maximum is below 2^64.
 *
 * Nothing here touches shared memory, catalogs or GUCs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_TICKETMATH_H
#define SNOWID_TICKETMATH_H

/* The settings of one ticket sequence, as stored in snowid_ticket. */
typedef struct SnowidTicketSpec
{
	int32		shard;
	int32		shards;
	int32		block;
	int64		start;
	int64		maxvalue;		/* of the type: PG_INT32_MAX or PG_INT64_MAX */
} SnowidTicketSpec;

/* Does shard s have at least one value (start + s <= maxvalue)? */
static inline bool
snowid_ticket_has_values(const SnowidTicketSpec *spec)
{
	return spec->start <= spec->maxvalue &&
		(uint64) spec->maxvalue - (uint64) spec->start >= (uint64) spec->shard;
}

/* The largest k of this shard (requires snowid_ticket_has_values). */
static inline uint64
snowid_ticket_last_k(const SnowidTicketSpec *spec)
{
	uint64		room = (uint64) spec->maxvalue - (uint64) spec->start -
		(uint64) spec->shard;

	return room / (uint64) spec->shards;
}

/* The last block number that holds values, capped to fit a sequence. */
static inline int64
snowid_ticket_last_block(const SnowidTicketSpec *spec)
{
	uint64		last = snowid_ticket_last_k(spec) / (uint64) spec->block;

	/* One number above it must still fit: it marks the end. */
	return last >= (uint64) PG_INT64_MAX ? PG_INT64_MAX - 1 : (int64) last;
}

/* The value of this shard for a given k (k <= last_k). */
static inline int64
snowid_ticket_value(const SnowidTicketSpec *spec, uint64 k)
{
	return (int64) ((uint64) spec->start + (uint64) spec->shard +
					k * (uint64) spec->shards);
}

/*
 * First value and number of values of block b; false if b holds none
 * (b beyond the last block, or negative).
 */
static inline bool
snowid_ticket_block(const SnowidTicketSpec *spec, int64 b,
					int64 *first, uint32 *count)
{
	uint64		last_k = snowid_ticket_last_k(spec);
	uint64		first_k;
	uint64		left;

	if (b < 0 || b > snowid_ticket_last_block(spec))
		return false;
	first_k = (uint64) b * (uint64) spec->block;
	left = last_k - first_k;	/* values after the first */
	*first = snowid_ticket_value(spec, first_k);
	*count = left >= (uint64) spec->block - 1 ? (uint32) spec->block :
		(uint32) (left + 1);
	return true;
}

/*
 * The shard of a ticket sequence that issues value, or -1 if no shard
 * does (below start or above the type's maximum).
 */
static inline int32
snowid_ticket_shard_of(const SnowidTicketSpec *spec, int64 value)
{
	if (value < spec->start || value > spec->maxvalue)
		return -1;
	return (int32) (((uint64) value - (uint64) spec->start) %
					(uint64) spec->shards);
}

#endif							/* SNOWID_TICKETMATH_H */
