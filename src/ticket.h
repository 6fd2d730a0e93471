/*-------------------------------------------------------------------------
 *
 * ticket.h
 *	  Ticket sequences: the structs the ticket files share and the
 *	  lock-free hot path that takes one value.
 *
 * The subsystem, its calls running one way (each file calls only those
 * listed before it):
 *	 ticket_catalog.c  the catalog table snowid_ticket: rows, names, owner,
 *					   registration, removal of a dropped ticket's row;
 *	 ticket_guard.c	   the served mark and the backing sequence's checks;
 *	 ticket_slot.c	   the slots in shared memory and the blocks they serve
 *					   (its header comment has the protocol and why no
 *					   value is issued twice);
 *	 ticket_lookup.c   the per-backend cache of settings and privileges;
 *	 ticket_sql.c	   the SQL functions;
 *	 ticket_hooks.c	   the DROP and ALTER hooks, the registration trigger
 *					   and snowid_ticket_init.
 * Each has its own header; this one is included by all of them.
 *
 * Who writes what:
 *	 SnowidTicketShared and SnowidTicketSlot: ticket_slot.c alone, which
 *	 initialises them at shmem startup, binds and frees slots and installs
 *	 blocks, under the locks the comments below name; the one other writer
 *	 is the fetch-add of snowid_ticket_take (below) on slot->cur.
 *	 SnowidTicketEntry (backend-local): ticket_lookup.c fills the settings
 *	 (from ticket_catalog.c's row), valid and acl_user; ticket_slot.c's
 *	 snowid_ticket_bind sets slot and bind_count; ticket_sql.c drops slot
 *	 and valid when the slot was rebound.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_TICKET_H
#define SNOWID_TICKET_H

#include "pool.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "ticketmath.h"

/* One block as the hot path reads it (seqlock: version odd while written). */
typedef struct SnowidTicketBuf
{
	pg_atomic_uint32 version;
	uint32		gen;
	uint32		count;
	int64		first;
} SnowidTicketBuf;

typedef struct SnowidTicketSlot
{
	pg_atomic_uint64 cur;		/* generation << 32 | offsets taken */
	pg_atomic_uint32 bind_count;	/* changes whenever the key changes */
	char		pad[PG_CACHE_LINE_SIZE - sizeof(pg_atomic_uint64) -
					sizeof(pg_atomic_uint32)];

	/* key and settings: written under table_lock and this slot's lock */
	bool		in_use;
	Oid			dbid;
	Oid			relid;
	int64		stamp;
	SnowidTicketSpec spec;
	int			pool_idx;		/* slot of its pool (pool.c), -1: striped */

	/* under this slot's lock */
	bool		next_valid;		/* next_first/next_count hold a block */
	bool		no_more;		/* the sequence has no block left */
	int64		next_first;
	uint32		next_count;
	int64		blocks_reserved;	/* by this server since start */
	int64		served;			/* served mark, valid while served_bind */
	uint32		served_bind;	/* == bind_count: no re-read needed */
	SnowidTicketBuf buf[2];
	LWLock	   *lock;
} SnowidTicketSlot;

typedef struct SnowidTicketShared
{
	LWLock	   *table_lock;
	int			nslots;
	SnowidTicketSlot slots[FLEXIBLE_ARRAY_MEMBER];
} SnowidTicketShared;

/* What a backend remembers about a ticket sequence it has used. */
typedef struct SnowidTicketEntry
{
	Oid			relid;			/* hash key */
	bool		valid;			/* settings read from the catalog */
	int64		stamp;
	SnowidTicketSpec spec;
	char		pool[SNOWID_POOL_NAME_LEN];	/* "" for a striped ticket */
	int			pool_idx;		/* its slot in pool.c, -1: striped */
	TransactionId xmin;			/* that inserted the catalog row */
	Oid			extnsp;			/* schema of the catalog table */
	int			slot;			/* -1 until bound */
	uint32		bind_count;
	Oid			acl_user;		/* user whose USAGE/UPDATE was checked */
} SnowidTicketEntry;

typedef enum
{
	TAKE_OK,
	TAKE_EMPTY,					/* the block of generation g is used up */
	TAKE_RETRY,					/* claim lost, look again */
	TAKE_REBIND					/* the slot no longer belongs to us */
} SnowidTakeResult;

/*
 * The hot path: take one offset of the current generation with a
 * fetch-add and read its block (see ticket_slot.c for the protocol).
 */
static inline SnowidTakeResult
snowid_ticket_take(SnowidTicketSlot *slot, SnowidTicketEntry *entry,
				   int64 *value, uint32 *gen, uint32 *offset, uint32 *count)
{
	uint64		word = pg_atomic_fetch_add_u64(&slot->cur, 1);
	uint32		g = (uint32) (word >> 32);
	uint32		off = (uint32) word;
	SnowidTicketBuf *buf = &slot->buf[g & 1];
	uint32		v1,
				v2,
				bgen,
				bcount;
	int64		first;

	v1 = pg_atomic_read_u32(&buf->version);
	pg_read_barrier();
	bgen = buf->gen;
	first = buf->first;
	bcount = buf->count;
	pg_read_barrier();
	v2 = pg_atomic_read_u32(&buf->version);
	if (unlikely(pg_atomic_read_u32(&slot->bind_count) != entry->bind_count))
		return TAKE_REBIND;
	if (unlikely(v1 != v2 || (v1 & 1) != 0 || bgen != g))
		return TAKE_RETRY;
	*gen = g;
	*offset = off;
	*count = bcount;
	if (unlikely(off >= bcount))
		return TAKE_EMPTY;
	*value = (int64) ((uint64) first + (uint64) off * (uint64) entry->spec.shards);
	return TAKE_OK;
}

#endif							/* SNOWID_TICKET_H */
