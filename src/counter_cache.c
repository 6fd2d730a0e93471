/*-------------------------------------------------------------------------
 *
 * counter_cache.c
 *	  Counters per key, mode fast: the keys cached in shared memory, at most
 *	  snowid.counter_keys of them (all databases together), each with the
 *	  block it hands out values from.
 *
 * Every block comes from the key's row (counter_row.c), reserved in the
 * transaction of the caller that needed it: the row is the record of what
 * may have been handed out, and the cache never hands out a value above
 * it.  A block stays the reserver's alone (pending, with its transaction
 * ID) until that transaction commits: others go on with the block before
 * it, or wait for the reserver when that one is used up.  So a value in a
 * committed row always comes from a block whose reservation committed no
 * later, and a start after a crash, which reserves above the row, never
 * repeats it.  A reserver that rolls back takes its block with it.
 *
 * Losing a cached key loses nothing but the rest of its block (a gap): its
 * next use reserves anew above the row.  Hence the eviction is a plain
 * clock over the slots (a used key gets a second chance), done when a new
 * key needs a slot.
 *
 * Locking: one LWLock guards the slots, the clock and the index (a hash
 * from tag to slot) in exclusive mode; readers of counts take it shared.
 * The work under it is a hash lookup and a few assignments; a reservation
 * (SQL) and a wait happen outside it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "counter_cache.h"
#include "guc.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"

typedef struct SnowidCounterSlot
{
	SnowidCounterTag tag;
	bool		in_use;
	bool		used;			/* clock: used since the hand passed */
	int64		first;			/* the block handed out: first .. last, */
	int64		next;			/* next the one to hand out next */
	int64		last;
	TransactionId pending_xid;	/* a reserver not yet committed, or 0 */
	int64		pending_first;	/* its block (empty: read the row again) */
	int64		pending_next;
	int64		pending_last;
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
	SnowidCounterSlot slots[FLEXIBLE_ARRAY_MEMBER];
} SnowidCounterShared;

static SnowidCounterShared *counter_shared = NULL;
static HTAB *counter_index = NULL;

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
 * Settle the slot's pending block if its transaction has ended: taken over
 * if it committed, dropped if not.  Whether one is still pending (of this
 * transaction or one in progress).  Caller holds the lock exclusively.
 */
static bool
snowid_counter_settle(SnowidCounterSlot *slot)
{
	TransactionId pending = slot->pending_xid;

	if (!TransactionIdIsValid(pending))
		return false;
	if (TransactionIdIsCurrentTransactionId(pending) ||
		TransactionIdIsInProgress(pending))
		return true;
	if (TransactionIdDidCommit(pending))
	{
		slot->first = slot->pending_first;
		slot->next = slot->pending_next;
		slot->last = slot->pending_last;
	}
	slot->pending_xid = InvalidTransactionId;
	return false;
}

/* The next value of the key, or what to do to get one. */
SnowidCounterTake
snowid_counter_cache_take(const SnowidCounterTag *tag, int64 *value,
						  TransactionId *xid)
{
	SnowidCounterSlot *slot;
	SnowidCounterTake result = COUNTER_RESERVE;

	LWLockAcquire(counter_shared->lock, LW_EXCLUSIVE);
	slot = snowid_counter_find_slot(tag);
	if (slot == NULL)
	{
		LWLockRelease(counter_shared->lock);
		return COUNTER_RESERVE;
	}
	slot->used = true;
	if (snowid_counter_settle(slot))
	{
		TransactionId pending = slot->pending_xid;

		if (TransactionIdIsCurrentTransactionId(pending))
		{
			/* our own block: ours until we commit */
			if (slot->pending_next <= slot->pending_last)
			{
				*value = slot->pending_next++;
				result = COUNTER_TAKEN;
			}
			LWLockRelease(counter_shared->lock);
			return result;
		}
		/* another's, in progress: go on with the block before it */
		if (slot->next <= slot->last)
		{
			*value = slot->next++;
			result = COUNTER_TAKEN;
		}
		else
		{
			*xid = pending;
			result = COUNTER_WAIT;
		}
		LWLockRelease(counter_shared->lock);
		return result;
	}
	if (slot->next <= slot->last)
	{
		*value = slot->next++;
		result = COUNTER_TAKEN;
	}
	LWLockRelease(counter_shared->lock);
	return result;
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
		for (;;)
		{
			slot = &s->slots[s->hand];
			idx = s->hand;
			s->hand = (s->hand + 1) % s->nslots;
			if (!slot->used)
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
	slot->first = 1;
	slot->next = 1;
	slot->last = 0;
	entry = hash_search(counter_index, tag, HASH_ENTER_NULL, &found);
	if (entry == NULL)
		elog(ERROR, "counter key cache is full");	/* sized to nslots */
	entry->slot = idx;
	return slot;
}

/*
 * Install the block first .. last that this transaction has just reserved
 * (its row stays locked until the transaction ends) as the key's pending
 * block, and take its first value.
 */
int64
snowid_counter_cache_install(const SnowidCounterTag *tag, int64 first,
							 int64 last)
{
	SnowidCounterSlot *slot;

	LWLockAcquire(counter_shared->lock, LW_EXCLUSIVE);
	slot = snowid_counter_find_slot(tag);
	if (slot == NULL)
		slot = snowid_counter_new_slot(tag);
	else
		(void) snowid_counter_settle(slot);
	slot->used = true;
	slot->pending_xid = GetCurrentTransactionId();
	slot->pending_first = first;
	slot->pending_next = first + 1;
	slot->pending_last = last;
	LWLockRelease(counter_shared->lock);
	return first;
}

/*
 * The key's row was moved or deleted by this transaction: once it
 * commits, the cached block goes and the next value comes from the row.
 */
void
snowid_counter_cache_forget(const SnowidCounterTag *tag)
{
	SnowidCounterSlot *slot;

	LWLockAcquire(counter_shared->lock, LW_EXCLUSIVE);
	slot = snowid_counter_find_slot(tag);
	if (slot != NULL)
	{
		(void) snowid_counter_settle(slot);
		slot->pending_xid = GetCurrentTransactionId();
		slot->pending_first = 1;
		slot->pending_next = 1;
		slot->pending_last = 0;
	}
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
