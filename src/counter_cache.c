/*-------------------------------------------------------------------------
 *
 * counter_cache.c
 *	  Counters per key, mode fast: the keys cached in shared memory, at most
 *	  snowid.counter_keys of them (all databases together), each with the
 *	  block it hands out values from.
 *
 * Every block comes from the key's row (counter_row.c), reserved by a
 * server process of the database in a transaction of its own and committed
 * (durably) before the reserver installs it here (counter_fast.c): the row
 * is the record of what may have been handed out, and the cache never
 * hands out a value above it.  So no rollback of a caller, and no crash,
 * gives a value twice: a start reserves above the row.
 *
 * One reservation of a key at a time: the backend that finds the block
 * used up marks the slot as reserving; the key's other takers sleep on the
 * cache's condition variable until it installs (or gives up, or a second
 * passes: then they reserve too, and only a block above the cached one is
 * installed, the others' first value handed out by them, the rest a gap).
 * A key whose block lasted less than a second gets twice that block next
 * time, up to 64 times the counter's block; any other gets the counter's.
 * A block reserved before the key started over (a committed move, or its
 * slot made anew: it may have been evicted after one) is not installed
 * nor used: its values are those the key's row gives again from its new
 * position; the reserver asks anew.
 *
 * snowid_counter_restart and snowid_counter_drop_key change the row in the
 * caller's transaction and mark the slot with its transaction ID (the
 * move): until it ends, others go on with the block they have, or wait for
 * it; the mover itself may not take values (the reservation would wait for
 * its row lock); once it commits, the block goes and the next value comes
 * from the row.
 *
 * Losing a cached key loses nothing but the rest of its block (a gap): its
 * next use reserves anew above the row.  Hence the eviction is a plain
 * clock over the slots (a used key gets a second chance), done when a new
 * key needs a slot.
 *
 * Locking: one LWLock guards the slots, the clock and the index (a hash
 * from tag to slot) in exclusive mode; readers of counts take it shared.
 * The work under it is a hash lookup and a few assignments; a reservation
 * (a round trip to the server process) and a wait happen outside it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "counter_cache.h"
#include "guc.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

/* a reservation this old is given up on by the key's other takers */
#define COUNTER_RESERVE_WAIT_MS 1000
/* a block used up faster than this makes the next one twice as long */
#define COUNTER_GROW_MS 1000
#define COUNTER_GROW_MAX 64

typedef struct SnowidCounterSlot
{
	SnowidCounterTag tag;
	bool		in_use;
	bool		used;			/* clock: used since the hand passed */
	int64		first;			/* the block handed out: first .. last, */
	int64		next;			/* next the one to hand out next */
	int64		last;
	int64		grant;			/* the size of the last block reserved */
	TimestampTz granted;		/* when it was installed */
	pid_t		reserver;		/* a backend reserving the next block, or 0 */
	TimestampTz reserving;		/* since when */
	TransactionId moved_xid;	/* a transaction that moved the row, or 0 */
	int64		moved_floor;	/* all values it leaves at or below this */
	uint64		since;			/* the key started over at this change */
} SnowidCounterSlot;

typedef struct SnowidCounterIndexEntry
{
	SnowidCounterTag tag;		/* hash key */
	int			slot;
} SnowidCounterIndexEntry;

typedef struct SnowidCounterShared
{
	LWLock	   *lock;
	int			nslots;
	int			nused;			/* slots ever used; all from then on */
	int			hand;			/* clock */
	int64		evictions;
	uint64		changes;		/* keys made or started over, ever */
	ConditionVariable reserved;	/* a reservation ended */
	SnowidCounterSlot slots[FLEXIBLE_ARRAY_MEMBER];
} SnowidCounterShared;

static SnowidCounterShared *counter_shared = NULL;
static HTAB *counter_index = NULL;

/* this backend's reservation began after this many changes */
static uint64 reserving_since = 0;

static Size
snowid_counter_slots_size(void)
{
	return add_size(offsetof(SnowidCounterShared, slots),
					mul_size(snowid_counter_keys, sizeof(SnowidCounterSlot)));
}

void
snowid_counter_shmem_request(void)
{
	RequestAddinShmemSpace(add_size(snowid_counter_slots_size(),
									hash_estimate_size(snowid_counter_keys,
													   sizeof(SnowidCounterIndexEntry))));
	RequestNamedLWLockTranche("snowid_counter", 1);
}

/* Called under AddinShmemInitLock from the shmem startup hook. */
void
snowid_counter_shmem_startup(void)
{
	bool		found;
	HASHCTL		info;

	counter_shared = ShmemInitStruct("snowid_counter",
									 snowid_counter_slots_size(), &found);
	if (!found)
	{
		counter_shared->lock = &(GetNamedLWLockTranche("snowid_counter"))->lock;
		counter_shared->nslots = snowid_counter_keys;
		counter_shared->nused = 0;
		counter_shared->hand = 0;
		counter_shared->evictions = 0;
		counter_shared->changes = 0;
		ConditionVariableInit(&counter_shared->reserved);
		memset(counter_shared->slots, 0,
			   mul_size(snowid_counter_keys, sizeof(SnowidCounterSlot)));
	}
	info.keysize = sizeof(SnowidCounterTag);
	info.entrysize = sizeof(SnowidCounterIndexEntry);
	counter_index = ShmemInitHash("snowid_counter keys",
								  snowid_counter_keys, snowid_counter_keys,
								  &info, HASH_ELEM | HASH_BLOBS | HASH_FIXED_SIZE);
}

void
snowid_counter_require_shared(void)
{
	if (unlikely(counter_shared == NULL))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowid must be loaded via shared_preload_libraries"),
				 errdetail("Counters of mode fast are served from snowid's shared memory."),
				 errhint("Add snowid to shared_preload_libraries in postgresql.conf and restart the server, or use a counter of mode gapless.")));
}

static SnowidCounterSlot *
snowid_counter_find_slot(const SnowidCounterTag *tag)
{
	SnowidCounterIndexEntry *entry;

	entry = hash_search(counter_index, tag, HASH_FIND, NULL);
	return entry != NULL ? &counter_shared->slots[entry->slot] : NULL;
}

/*
 * Settle the slot's move if its transaction has ended: the block goes if it
 * committed.  Whether one is still under way (of this transaction or one
 * in progress).  Caller holds the lock exclusively.
 */
static bool
snowid_counter_settle(SnowidCounterSlot *slot)
{
	TransactionId moved = slot->moved_xid;

	if (!TransactionIdIsValid(moved))
		return false;
	if (TransactionIdIsCurrentTransactionId(moved) ||
		TransactionIdIsInProgress(moved))
		return true;
	if (TransactionIdDidCommit(moved))
	{
		slot->first = slot->next = slot->moved_floor + 1;
		slot->last = slot->moved_floor;
		slot->grant = 0;
		slot->since = ++counter_shared->changes;
	}
	slot->moved_xid = InvalidTransactionId;
	return false;
}

/* A slot for a new key: a free one, or the clock's victim. */
static SnowidCounterSlot *
snowid_counter_new_slot(const SnowidCounterTag *tag)
{
	SnowidCounterShared *s = counter_shared;
	SnowidCounterIndexEntry *entry;
	SnowidCounterSlot *slot;
	int			idx;
	bool		found;

	if (s->nused < s->nslots)
		idx = s->nused++;
	else
	{
		/*
		 * A moved key keeps its slot while the move is under way (its
		 * takers must wait for it, not reserve), unless every slot is
		 * one: then after two turns of the hand anyway.
		 */
		for (int turns = 0;; turns++)
		{
			slot = &s->slots[s->hand];
			idx = s->hand;
			s->hand = (s->hand + 1) % s->nslots;
			if (!slot->used &&
				(!snowid_counter_settle(slot) || turns >= 2 * s->nslots))
				break;
			slot->used = false;
		}
		(void) hash_search(counter_index, &slot->tag, HASH_REMOVE, NULL);
		s->evictions++;
	}
	slot = &s->slots[idx];
	memset(slot, 0, sizeof(SnowidCounterSlot));
	slot->tag = *tag;
	slot->in_use = true;
	slot->first = 0;			/* empty, below every start */
	slot->next = 0;
	slot->last = -1;
	slot->since = ++s->changes;
	entry = hash_search(counter_index, tag, HASH_ENTER_NULL, &found);
	if (entry == NULL)
		elog(ERROR, "counter key cache is full");	/* sized to nslots */
	entry->slot = idx;
	return slot;
}

/*
 * The next value of the key, or what to do to get one: on
 * COUNTER_RESERVE, *n values (block, or more for a hot key), the slot
 * marked as reserving by this backend until snowid_counter_cache_install
 * or snowid_counter_cache_unreserve.
 */
SnowidCounterTake
snowid_counter_cache_take(const SnowidCounterTag *tag, int64 block,
						  int64 *value, TransactionId *xid, int64 *n)
{
	SnowidCounterSlot *slot;
	SnowidCounterTake result;
	TimestampTz now;

	LWLockAcquire(counter_shared->lock, LW_EXCLUSIVE);
	slot = snowid_counter_find_slot(tag);
	if (slot == NULL)
		slot = snowid_counter_new_slot(tag);
	slot->used = true;
	if (TransactionIdIsValid(slot->moved_xid) && snowid_counter_settle(slot))
	{
		/* a move under way: the mover may not take; others use the block */
		if (TransactionIdIsCurrentTransactionId(slot->moved_xid))
			result = COUNTER_MOVED;
		else if (slot->next <= slot->last)
		{
			*value = slot->next++;
			result = COUNTER_TAKEN;
		}
		else
		{
			*xid = slot->moved_xid;
			result = COUNTER_WAIT;
		}
		LWLockRelease(counter_shared->lock);
		return result;
	}
	if (slot->next <= slot->last)
	{
		*value = slot->next++;
		LWLockRelease(counter_shared->lock);
		return COUNTER_TAKEN;
	}
	now = GetCurrentTimestamp();
	if (slot->reserver != 0 && slot->reserver != MyProcPid &&
		!TimestampDifferenceExceeds(slot->reserving, now,
									COUNTER_RESERVE_WAIT_MS))
	{
		LWLockRelease(counter_shared->lock);
		return COUNTER_BUSY;
	}
	slot->reserver = MyProcPid;
	slot->reserving = now;
	reserving_since = counter_shared->changes;
	*n = block;
	if (slot->grant > 0 &&
		!TimestampDifferenceExceeds(slot->granted, now, COUNTER_GROW_MS))
		*n = Max(block, Min(slot->grant * 2, block * COUNTER_GROW_MAX));
	LWLockRelease(counter_shared->lock);
	return COUNTER_RESERVE;
}

/* Sleep until a reservation ends (or a while): after COUNTER_BUSY. */
void
snowid_counter_cache_sleep(void)
{
	(void) ConditionVariableTimedSleep(&counter_shared->reserved, 100,
									   PG_WAIT_EXTENSION);
}

/* Done with sleeping: before anything but another take. */
void
snowid_counter_cache_awake(void)
{
	ConditionVariableCancelSleep();
}

/* The key's slot, made if it has none, its move settled. */
static SnowidCounterSlot *
snowid_counter_slot_settled(const SnowidCounterTag *tag)
{
	SnowidCounterSlot *slot = snowid_counter_find_slot(tag);

	if (slot == NULL)
		return snowid_counter_new_slot(tag);
	(void) snowid_counter_settle(slot);
	return slot;
}

/* The slot's reservation is this backend's no more. */
static void
snowid_counter_unmark(SnowidCounterSlot *slot)
{
	if (slot != NULL && slot->reserver == MyProcPid)
		slot->reserver = 0;
}

/*
 * Install the block first .. last (of n values) that this backend has just
 * reserved, committed, if it lies above the cached one, and take its first
 * value; -1 if the key has started over since the reservation began (the
 * block is dropped: ask again).
 */
int64
snowid_counter_cache_install(const SnowidCounterTag *tag, int64 first,
							 int64 last, int64 n)
{
	SnowidCounterSlot *slot;

	LWLockAcquire(counter_shared->lock, LW_EXCLUSIVE);
	slot = snowid_counter_slot_settled(tag);
	snowid_counter_unmark(slot);
	slot->used = true;
	if (slot->since > reserving_since)
		first = -1;
	else if (first > slot->last)
	{
		slot->first = first;
		slot->next = first + 1;
		slot->last = last;
		slot->grant = n;
		slot->granted = GetCurrentTimestamp();
	}
	LWLockRelease(counter_shared->lock);
	ConditionVariableBroadcast(&counter_shared->reserved);
	return first;
}

/* This backend's reservation failed: the key's other takers go on. */
void
snowid_counter_cache_unreserve(const SnowidCounterTag *tag)
{
	LWLockAcquire(counter_shared->lock, LW_EXCLUSIVE);
	snowid_counter_unmark(snowid_counter_find_slot(tag));
	LWLockRelease(counter_shared->lock);
	ConditionVariableBroadcast(&counter_shared->reserved);
}

/*
 * This transaction moved the key's row (every value it leaves lies at or
 * below floor) or deleted it (floor: start - 1): once it commits, the
 * cached block goes and the next value comes from the row.
 */
void
snowid_counter_cache_forget(const SnowidCounterTag *tag, int64 floor)
{
	SnowidCounterSlot *slot;

	LWLockAcquire(counter_shared->lock, LW_EXCLUSIVE);
	slot = snowid_counter_slot_settled(tag);
	slot->moved_xid = GetCurrentTransactionId();
	slot->moved_floor = floor;
	LWLockRelease(counter_shared->lock);
}

/* The last value this server handed out for the key, if it is cached. */
bool
snowid_counter_cache_last(const SnowidCounterTag *tag, int64 *last)
{
	SnowidCounterSlot *slot;
	bool		found = false;

	LWLockAcquire(counter_shared->lock, LW_EXCLUSIVE);
	slot = snowid_counter_find_slot(tag);
	if (slot != NULL && !snowid_counter_settle(slot) &&
		slot->next > slot->first)
	{
		*last = slot->next - 1;
		found = true;
	}
	LWLockRelease(counter_shared->lock);
	return found;
}

/* Keys cached now, the most that can be, and keys evicted since start. */
void
snowid_counter_cache_counts(int64 *keys, int64 *capacity, int64 *evictions)
{
	LWLockAcquire(counter_shared->lock, LW_SHARED);
	*keys = counter_shared->nused;
	*capacity = counter_shared->nslots;
	*evictions = counter_shared->evictions;
	LWLockRelease(counter_shared->lock);
}
