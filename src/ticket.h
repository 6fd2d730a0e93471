/*-------------------------------------------------------------------------
 *
 * ticket.h
 *	  Ticket sequences: shared-memory slots, the per-backend lookup cache
 *	  and the lock-free hot path that takes one value.
 *
 * ticket_slot.c owns the slots and blocks (its header comment has the
 * protocol and why no value is issued twice), ticket_catalog.c the
 * settings, privileges and DROP hooks, ticket_guard.c what keeps the
 * backing sequence from being rewound (served mark, settings, ALTER,
 * registration), ticket.c the SQL functions.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_TICKET_H
#define SNOWID_TICKET_H

#include "pool.h"
#include "access/skey.h"
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

/* ticket_slot.c */
extern SnowidTicketShared *ticket_shared;

extern SnowidTicketShared *snowid_ticket_require_shared(void);
extern void snowid_ticket_free_slots(Oid dbid, Oid relid);
extern void snowid_ticket_bind(SnowidTicketEntry *entry);
extern void snowid_ticket_prefetch_block(SnowidTicketSlot *slot,
										 SnowidTicketEntry *entry);
extern SnowidTakeResult snowid_ticket_next_block(SnowidTicketSlot *slot,
												 SnowidTicketEntry *entry,
												 uint32 g, int64 *value,
												 uint32 *count);

/* ticket_guard.c */
extern void snowid_ticket_lock_table(const char *name);
extern int64 snowid_ticket_served(Oid relid, const char *name);
extern void snowid_ticket_raise_served(Oid relid, const char *name, int64 b,
									   const SnowidTicketSpec *spec);
extern void snowid_ticket_check_sequence(Oid relid, const char *name,
										 const SnowidTicketSpec *spec);

/* ticket_hooks.c */
extern void snowid_ticket_guard_init(void);

/* ticket_lookup.c */
extern SnowidTicketEntry *snowid_ticket_lookup(Oid relid, Oid fn_oid,
											   bool check_acl);
extern SnowidTicketEntry *snowid_ticket_lookup_bound(Oid relid, Oid fn_oid);

/* ticket_catalog.c */
#define Anum_ticket_seqrelid	1
#define Anum_ticket_shard		2
#define Anum_ticket_shards		3
#define Anum_ticket_block		4
#define Anum_ticket_start		5
#define Anum_ticket_type		6
#define Anum_ticket_served		8

extern Oid	snowid_ticket_table(Oid *extoid);
extern Oid	snowid_ticket_table_guarded(Oid *extoid, bool *guarded);
extern void snowid_ticket_table_cb(Datum arg, Oid relid);
extern void snowid_ticket_key(ScanKeyData *key, Oid relid);
extern const char *snowid_ticket_name(Oid relid);
extern int64 snowid_ticket_type_max(Oid type);
extern bool snowid_ticket_alive(Oid extnsp, Oid relid, int64 stamp);
extern bool snowid_ticket_find_row(Oid extnsp, Oid relid,
								   SnowidTicketEntry *entry);
extern const char *snowid_ticket_lock_existing(Oid relid);
extern Oid	snowid_ticket_catalog_owner(Oid extnsp);
extern bool snowid_ticket_has_dependency(Oid relid, Oid extoid);
extern bool snowid_ticket_is_ticket(Oid relid, Oid extoid);
extern void snowid_ticket_forget(Oid relid);

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

/* The offset of a block whose taker pre-fetches the next block. */
static inline uint32
snowid_ticket_threshold(uint32 count)
{
	uint64		t = (uint64) count * (uint64) snowid_ticket_prefetch / 100;

	return t >= count ? count - 1 : (uint32) t;
}

#endif							/* SNOWID_TICKET_H */
