/*-------------------------------------------------------------------------
 *
 * pool_users.c
 *	  Pools: which databases use each pool, and freeing the slots that no
 *	  one uses.
 *
 * A pool's slot lists the databases whose ticket sequences name it
 * (st.dbs, persisted with the pool's state; more than SNOWID_POOL_DBS of
 * them: SNOWID_POOL_DBS_MANY).  A database is added when one of its tickets
 * of the pool is created or first used by a backend (snowid_pool_use), and
 * removed, once the transaction commits, when the last such ticket is
 * dropped or the extension or the database is (ticket_hooks.c).  The
 * registry's upstream pool marks the slot it draws on instead
 * (SNOWID_POOL_UPSTREAM: never unused), and a slot loaded from a file of
 * 1.4 has no list (SNOWID_POOL_DBS_UNKNOWN).
 *
 * The pool worker (snowid_pools_tidy, every heartbeat) frees a slot
 * SNOWID_POOL_IDLE_S after its last attach when
 *	 - nothing uses it and it holds no values: a slot with values in hand
 *	   keeps them (for a ticket that names the pool again; a clean shutdown
 *	   gives them back, and the next start frees the slot), or
 *	 - the registry has answered for that long that it has no such pool,
 *	   and no database is known to use it: the values it may hold belong
 *	   to a pool that is gone.
 * The freeing is persisted (a state with SNOWID_POOL_FREED: WAL, then the
 * file without the pool), so that neither a restart nor a replay of older
 * records brings the slot back (pool_store.c).
 *
 * Who uses a pool is bookkeeping, never a safety matter: a slot is freed
 * only with nothing in hand (or its pool gone), and a ticket whose pool's
 * slot was freed while it still named it (two drops racing, a drop undone
 * after its check) attaches the pool again at its next block
 * (snowid_pool_resolve).  A database listed after a creation that was
 * rolled back in a savepoint stays listed until its tickets of the pool
 * are dropped.
 *
 * Locks: the users are changed under the slot's lock, ahead of what was
 * persisted (users_changed says so; the next persist of the slot, or the
 * worker, writes them); freeing holds table_lock (exclusive), then the
 * slot's lock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "pool.h"
#include "pool_store.h"
#include "pool_users.h"
#include "storage/lwlock.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

/* A change of this transaction, applied (or undone) when it ends. */
typedef struct SnowidPoolUserChange
{
	char		name[SNOWID_POOL_NAME_LEN]; /* "": every pool */
	Oid			dbid;
	bool		added;			/* undo at abort; else remove at commit */
} SnowidPoolUserChange;

static List *pending_changes = NIL;
static bool xact_callback_set = false;

/* Remove dbid from the users of pool `name` ("": of every pool). */
static void
snowid_pool_drop_user(const char *name, Oid dbid)
{
	int			n = snowid_pool_slots();
	bool		changed = false;

	for (int i = 0; i < n; i++)
	{
		SnowidPoolSlot *slot = &snowid_pool_shared->slots[i];

		LWLockAcquire(slot->lock, LW_EXCLUSIVE);
		if (slot->in_use &&
			(name[0] == '\0' || strcmp(slot->st.name, name) == 0))
		{
			for (int j = 0; j < slot->st.ndbs; j++)
				if (slot->st.dbs[j] == dbid)
				{
					slot->st.dbs[j] = slot->st.dbs[--slot->st.ndbs];
					slot->st.dbs[slot->st.ndbs] = InvalidOid;
					slot->users_changed = true;
					changed = true;
					break;
				}
		}
		LWLockRelease(slot->lock);
	}
	if (changed)
		snowid_pool_wake_worker();
}

/* At the end of a transaction: nothing here may fail. */
static void
snowid_pool_users_xact(XactEvent event, void *arg)
{
	bool		commit;
	ListCell   *lc;

	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			commit = true;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			commit = false;
			break;
		case XACT_EVENT_PREPARE:
			/* committed later, perhaps elsewhere: the users stay */
			list_free_deep(pending_changes);
			pending_changes = NIL;
			return;
		default:
			return;
	}
	if (pending_changes == NIL || snowid_pool_shared == NULL)
		return;
	foreach(lc, pending_changes)
	{
		SnowidPoolUserChange *c = (SnowidPoolUserChange *) lfirst(lc);

		if (c->added != commit)
			snowid_pool_drop_user(c->name, c->dbid);
	}
	list_free_deep(pending_changes);
	pending_changes = NIL;
}

static void
snowid_pool_remember(const char *name, Oid dbid, bool added)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
	SnowidPoolUserChange *c = palloc0(sizeof(SnowidPoolUserChange));

	if (name != NULL)
		strlcpy(c->name, name, SNOWID_POOL_NAME_LEN);
	c->dbid = dbid;
	c->added = added;
	pending_changes = lappend(pending_changes, c);
	MemoryContextSwitchTo(old);
	if (!xact_callback_set)
	{
		RegisterXactCallback(snowid_pool_users_xact, NULL);
		xact_callback_set = true;
	}
}

void
snowid_pool_use(int idx, const char *name, Oid dbid, bool undo_on_abort)
{
	SnowidPoolSlot *slot = &snowid_pool_shared->slots[idx];
	SnowidPoolState st;
	bool		listed = false;

	/* a standby learns its primary's users from the WAL */
	if (RecoveryInProgress() || IsInParallelMode() || !OidIsValid(dbid))
		return;
	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	if (!slot->in_use || strcmp(slot->st.name, name) != 0)
	{
		/* freed meanwhile: snowid_pool_resolve attaches it again */
		LWLockRelease(slot->lock);
		return;
	}
	for (int i = 0; i < slot->st.ndbs; i++)
		listed = listed || slot->st.dbs[i] == dbid;
	if (listed || (slot->st.flags & SNOWID_POOL_DBS_MANY) != 0)
	{
		LWLockRelease(slot->lock);
		return;
	}
	st = slot->st;
	if (st.ndbs < SNOWID_POOL_DBS)
		st.dbs[st.ndbs++] = dbid;
	else
		st.flags |= SNOWID_POOL_DBS_MANY;
	/* an error releases the lock with the transaction's abort */
	snowid_pool_persist(idx, &st);
	slot->st = st;
	slot->users_changed = false;
	LWLockRelease(slot->lock);
	if (undo_on_abort)
		snowid_pool_remember(name, dbid, true);
}

void
snowid_pool_unuse_at_commit(const char *name, Oid dbid)
{
	if (snowid_pool_shared == NULL || !OidIsValid(dbid))
		return;
	snowid_pool_remember(name, dbid, false);
}

void
snowid_pool_upstream(int idx)
{
	SnowidPoolSlot *slot = &snowid_pool_shared->slots[idx];
	SnowidPoolState st;

	if (RecoveryInProgress())
		return;
	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	if (!slot->in_use || (slot->st.flags & SNOWID_POOL_UPSTREAM) != 0)
	{
		LWLockRelease(slot->lock);
		return;
	}
	st = slot->st;
	st.flags |= SNOWID_POOL_UPSTREAM;
	snowid_pool_persist(idx, &st);
	slot->st = st;
	slot->users_changed = false;
	LWLockRelease(slot->lock);
}

typedef enum SnowidPoolTidy
{
	SNOWID_TIDY_NONE,
	SNOWID_TIDY_PERSIST,		/* write the users */
	SNOWID_TIDY_FREE
} SnowidPoolTidy;

/* What the worker should do with a slot; its lock held (exclusive). */
static SnowidPoolTidy
snowid_pool_tidy_action(SnowidPoolSlot *slot, TimestampTz now)
{
	int64		grace = (int64) SNOWID_POOL_IDLE_S * USECS_PER_SEC;
	bool		kept = (slot->st.flags & (SNOWID_POOL_UPSTREAM | SNOWID_POOL_DBS_MANY)) != 0;
	bool		unused;
	bool		idle;
	bool		gone;

	if (!slot->in_use || slot->status == SNOWID_POOL_CLOSED)
		return SNOWID_TIDY_NONE;
	unused = slot->st.ndbs == 0 && !kept &&
		(slot->st.flags & SNOWID_POOL_DBS_UNKNOWN) == 0;
	idle = now - slot->touched >= grace;
	/* an upstream pool whose own registry lacks it is gone too */
	gone = slot->status == SNOWID_POOL_UNKNOWN && slot->unknown_since != 0 &&
		now - slot->unknown_since >= grace && slot->st.ndbs == 0 &&
		(slot->st.flags & SNOWID_POOL_DBS_MANY) == 0;
	/* no ticket names it: fetch nothing more for it */
	if (unused)
		slot->demand = false;
	snowid_state_settle(&slot->st, &slot->next_off);
	if (idle && ((unused && slot->st.nranges == 0) || gone))
		return SNOWID_TIDY_FREE;
	return slot->users_changed ? SNOWID_TIDY_PERSIST : SNOWID_TIDY_NONE;
}

/*
 * May slot (lock held) be freed at once, for a new pool when every slot is
 * in use?  A pool the registry does not have, or that cannot serve, that no
 * one uses and of which nothing is in hand: whoever attached it got an
 * error, and attaching it again asks the registry again.
 */
static bool
snowid_pool_reclaimable(SnowidPoolSlot *slot)
{
	return slot->in_use && slot->st.ndbs == 0 && slot->st.nranges == 0 &&
		(slot->st.flags & SNOWID_POOL_DBS_MANY) == 0 &&
		(slot->status == SNOWID_POOL_UNKNOWN ||
		 slot->status == SNOWID_POOL_UNUSABLE);
}

/*
 * Free slot idx if it still should be (reclaim: if it may be at once);
 * persisted first.  True if it was freed.
 */
static bool
snowid_pool_free(int idx, TimestampTz now, bool reclaim)
{
	SnowidPoolSlot *slot = &snowid_pool_shared->slots[idx];
	SnowidPoolState st;
	int64		dropped;

	LWLockAcquire(snowid_pool_shared->table_lock, LW_EXCLUSIVE);
	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	if (reclaim ? !snowid_pool_reclaimable(slot) :
		snowid_pool_tidy_action(slot, now) != SNOWID_TIDY_FREE)
	{
		LWLockRelease(slot->lock);
		LWLockRelease(snowid_pool_shared->table_lock);
		return false;
	}
	dropped = snowid_pool_in_hand_locked(slot);
	st = slot->st;
	st.nranges = 0;
	st.durable_off = 0;
	st.flags |= SNOWID_POOL_FREED;
	/* the worker's error handler runs no transaction abort: release here */
	PG_TRY();
	{
		snowid_pool_persist(idx, &st);
	}
	PG_CATCH();
	{
		LWLockRelease(slot->lock);
		LWLockRelease(snowid_pool_shared->table_lock);
		PG_RE_THROW();
	}
	PG_END_TRY();
	slot->st = st;
	slot->next_off = 0;
	snowid_pool_release_slot(idx);
	LWLockRelease(slot->lock);
	LWLockRelease(snowid_pool_shared->table_lock);
	ereport(LOG,
			(errmsg("snowid freed its slot of pool \"%s\"", st.name),
			 dropped > 0 ?
			 errdetail("The registry has no such pool; the " INT64_FORMAT " values this server held of it are dropped.",
					   dropped) :
			 errdetail("No ticket sequence names the pool, and this server holds no values of it.")));
	return true;
}

bool
snowid_pool_reclaim(void)
{
	int			n = snowid_pool_slots();

	if (RecoveryInProgress())
		return false;
	for (int idx = 0; idx < n; idx++)
	{
		SnowidPoolSlot *slot = &snowid_pool_shared->slots[idx];
		bool		candidate;

		LWLockAcquire(slot->lock, LW_SHARED);
		candidate = snowid_pool_reclaimable(slot);
		LWLockRelease(slot->lock);
		if (candidate && snowid_pool_free(idx, 0, true))
			return true;
	}
	return false;
}

void
snowid_pools_tidy(TimestampTz now)
{
	int			n = snowid_pool_slots();

	if (snowid_pool_shared == NULL || RecoveryInProgress())
		return;
	for (int idx = 0; idx < n; idx++)
	{
		SnowidPoolSlot *slot = &snowid_pool_shared->slots[idx];
		SnowidPoolTidy action;

		LWLockAcquire(slot->lock, LW_EXCLUSIVE);
		action = snowid_pool_tidy_action(slot, now);
		if (action == SNOWID_TIDY_PERSIST)
		{
			SnowidPoolState st = slot->st;

			snowid_pool_persist_releasing(idx, &st);
			slot->st = st;
			slot->users_changed = false;
		}
		LWLockRelease(slot->lock);
		if (action == SNOWID_TIDY_FREE)
			(void) snowid_pool_free(idx, now, false);
	}
}
