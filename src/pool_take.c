/*-------------------------------------------------------------------------
 *
 * pool_take.c
 *	  Pools: taking values -- attaching to a pool, waiting for its facts or
 *	  a range, taking consecutive values of the range in hand, and the
 *	  errors when none is.
 *
 * Takers are ticket_slot.c (blocks of pooled tickets) and the SQL
 * function snowid_pool_take (pool_sql.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "lease.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "pool.h"
#include "pool_file.h"
#include "pool_store.h"
#include "pool_take.h"
#include "pool_users.h"
#include "state.h"
#include "storage/latch.h"
#include "storage/lwlock.h"

/* the most a wait for the registry lasts, in ms */
#define SNOWID_POOL_WAIT_MS 10000

static int
snowid_pool_find(const char *name)
{
	for (int i = 0; i < snowid_pool_shared->nused; i++)
		if (snowid_pool_shared->slots[i].in_use &&
			strcmp(snowid_pool_shared->slots[i].st.name, name) == 0)
			return i;
	return -1;
}

/* A pool whose facts or grants cannot serve: the error, with why. */
static void
snowid_pool_refuse_unusable(const char *name, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("pool \"%s\" cannot serve this server", name),
			 detail[0] != '\0' ? errdetail("%s", snowid_sentence(detail)) : 0,
			 errhint("Create a pool starting at 1 or above on the registry (snowid_pool_create) and use that one.")));
}

/*
 * Values of a pool are handed out only while this server may issue under
 * its node, as IDs are: a clone, a server refused by the registry or one
 * whose lease ran out holds ranges it must not use (its original may be
 * using them).  Read once before and once after a take.
 */
static inline uint64
snowid_pool_gate(void)
{
	return snowid_shared != NULL ? pg_atomic_read_u64(&snowid_shared->gate) : 0;
}

static bool
snowid_pool_gate_open(void)
{
	return SNOWID_GATE_NODE(snowid_pool_gate()) >= 0;
}

/*
 * The registry's state and why, as a sentence for messages, with what the
 * current user may read of why (snowid_registry_detail_for_user).
 */
static char *
snowid_pool_registry_text(void)
{
	SnowidRegistryShared copy;
	char	   *detail;

	if (!snowid_registry_named() || snowid_registry == NULL)
		return pstrdup("No registry is named (snowid.registry is empty).");
	snowid_registry_read(snowid_registry, &copy);
	detail = snowid_registry_detail_for_user(&copy);
	if (detail != NULL)
		return psprintf("The registry is %s: %s", snowid_state_name(copy.state),
						snowid_sentence(detail));
	return psprintf("The registry is %s.", snowid_state_name(copy.state));
}

int
snowid_pool_attach(const char *name, bool wait_facts)
{
	SnowidPoolShared *shared = snowid_pool_require_shared();
	int			idx;
	SnowidPoolSlot *slot;
	int			waited = 0;
	bool		created = false;

	if (!snowid_pool_name_ok(name))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid pool name \"%s\"", name),
				 errdetail("Pool names have 1 to %d letters, digits, underscores, hyphens and dots.",
						   SNOWID_POOL_NAME_LEN - 1)));

	/* touched under table_lock: not freed for SNOWID_POOL_IDLE_S now */
	LWLockAcquire(shared->table_lock, LW_SHARED);
	idx = snowid_pool_find(name);
	if (idx >= 0)
	{
		LWLockAcquire(shared->slots[idx].lock, LW_EXCLUSIVE);
		shared->slots[idx].touched = GetCurrentTimestamp();
		LWLockRelease(shared->slots[idx].lock);
	}
	LWLockRelease(shared->table_lock);
	if (idx < 0 && wait_facts && !snowid_registry_named())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the registry has not told this server about pool \"%s\"", name),
				 errdetail("%s", snowid_pool_registry_text()),
				 errhint("Set snowid.registry to the connection string of the registry that has the pool, and reload.")));
	for (int attempt = 0; idx < 0; attempt++)
	{
		LWLockAcquire(shared->table_lock, LW_EXCLUSIVE);
		idx = snowid_pool_find(name);
		if (idx < 0)
		{
			SnowidPoolState empty;

			memset(&empty, 0, sizeof(empty));
			strlcpy(empty.name, name, SNOWID_POOL_NAME_LEN);
			snowid_pool_floor_from_mark(&empty, true);
			idx = snowid_pool_slot_from_state(&empty);
			created = idx >= 0;
		}
		/* touched at once: the slot of a new pool has no user yet */
		if (idx >= 0)
		{
			LWLockAcquire(shared->slots[idx].lock, LW_EXCLUSIVE);
			shared->slots[idx].touched = GetCurrentTimestamp();
			LWLockRelease(shared->slots[idx].lock);
		}
		LWLockRelease(shared->table_lock);
		/* full: free a slot of a pool that does not exist, and try again */
		if (idx < 0 && attempt == 0 && snowid_pool_reclaim())
			continue;
		if (idx < 0)
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("this server cannot draw from pool \"%s\"", name),
					 errdetail("It already draws from %d pools, the most it can.",
							   SNOWID_POOL_MAX),
					 errhint("A pool's slot is freed once no ticket sequence names it and it holds no values, or once the registry has no such pool, %d seconds after its last use.",
							 SNOWID_POOL_IDLE_S)));
		break;
	}
	if (!wait_facts)
	{
		if (created)
			snowid_pool_wake_worker();
		return idx;
	}

	slot = &shared->slots[idx];
	/*
	 * Ask again about a pool the registry did not have (it may have it
	 * now), or that could not serve (once per ticket created).
	 */
	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	if (slot->status == SNOWID_POOL_UNKNOWN ||
		slot->status == SNOWID_POOL_UNUSABLE)
	{
		slot->status = SNOWID_POOL_WAITING;
		slot->unknown_since = 0;
		created = true;
	}
	LWLockRelease(slot->lock);
	if (created)
		snowid_pool_wake_worker();
	for (;;)
	{
		SnowidPoolStatus status;
		bool		known;
		char		detail[SNOWID_POOL_DETAIL_LEN];

		LWLockAcquire(slot->lock, LW_SHARED);
		status = slot->status;
		known = OidIsValid(slot->st.typid);
		strlcpy(detail, slot->detail, sizeof(detail));
		LWLockRelease(slot->lock);
		if (status == SNOWID_POOL_UNKNOWN)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("pool \"%s\" does not exist in the registry", name),
					 detail[0] != '\0' ? errdetail("%s", snowid_sentence(detail)) : 0,
					 errhint("Create it on the registry with snowid_pool_create().")));
		if (status == SNOWID_POOL_UNUSABLE)
			snowid_pool_refuse_unusable(name, detail);
		if (known && status != SNOWID_POOL_WAITING)
			return idx;
		if (!snowid_registry_named() || waited >= SNOWID_POOL_WAIT_MS)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the registry has not told this server about pool \"%s\"", name),
					 errdetail("%s", snowid_pool_registry_text()),
					 errhint(snowid_registry_named() ?
							 "Try again once snowid_registry_status() shows the registry as ok." :
							 "Set snowid.registry to the connection string of the registry that has the pool, and reload.")));
		CHECK_FOR_INTERRUPTS();
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 100, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		waited += 100;
	}
}

bool
snowid_pool_wait(int idx)
{
	SnowidPoolSlot *slot = &snowid_pool_shared->slots[idx];

	for (int waited = 0; snowid_registry_named() && waited < SNOWID_POOL_WAIT_MS;
		 waited += 50)
	{
		bool		done;

		/*
		 * Shut gate: wait only for the first answer after start; a refusal
		 * or a lease that ran out is reported at once.
		 */
		if (!snowid_pool_gate_open())
		{
			SnowidRegistryShared copy;

			snowid_registry_read(snowid_registry, &copy);
			if (copy.state != SNOWID_REGISTRY_CONNECTING)
				return false;
			done = false;
		}
		else
		{
		LWLockAcquire(slot->lock, LW_SHARED);
		done = slot->st.nranges > 0 || slot->status == SNOWID_POOL_EMPTY ||
			slot->status == SNOWID_POOL_UNKNOWN ||
			slot->status == SNOWID_POOL_CLOSED ||
			slot->status == SNOWID_POOL_UNUSABLE;
		LWLockRelease(slot->lock);
		}
		if (done)
			return true;
		CHECK_FOR_INTERRUPTS();
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 50, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	return false;
}

void
snowid_pool_refuse_standby(const char *name)
{
	ereport(ERROR,
			(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
			 errmsg("cannot take values of pool \"%s\" during recovery", name),
			 errdetail("A standby holds its primary's ranges only to continue them after promotion."),
			 errhint("Take values on the primary.")));
}

/*
 * The slot of pool `name` for a holder of index idx (-1: none yet): idx if
 * it still holds that pool, else the pool attached again, for this
 * database (pool_users.c freed the slot while no ticket named the pool).
 */
int
snowid_pool_resolve(int idx, const char *name)
{
	SnowidPoolShared *shared = snowid_pool_require_shared();
	bool		same = false;

	if (idx >= 0 && idx < SNOWID_POOL_MAX)
	{
		SnowidPoolSlot *slot = &shared->slots[idx];

		LWLockAcquire(slot->lock, LW_SHARED);
		same = slot->in_use && strcmp(slot->st.name, name) == 0;
		LWLockRelease(slot->lock);
	}
	if (same)
		return idx;
	idx = snowid_pool_attach(name, false);
	snowid_pool_use(idx, name, MyDatabaseId, false);
	return idx;
}

bool
snowid_pool_take(int idx, const char *name, int64 want, int64 *first,
				 int64 *count)
{
	SnowidPoolSlot *slot = &snowid_pool_shared->slots[idx];
	SnowidPoolRange *r;
	uint64		size;
	uint64		n;
	bool		wake;

	uint64		gate = snowid_pool_gate();

	Assert(want > 0);
	if (RecoveryInProgress())
		snowid_pool_refuse_standby(name);
	if (SNOWID_GATE_NODE(gate) < 0)
		return false;			/* snowid_pool_error_none says why */
	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	if (!slot->in_use || strcmp(slot->st.name, name) != 0)
	{
		LWLockRelease(slot->lock);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("this server released its slot of pool \"%s\" meanwhile", name),
				 errdetail("No ticket sequence named the pool for a while, and it held no values."),
				 errhint("Try again: the pool is attached again.")));
	}
	slot->demand = true;
	snowid_state_settle(&slot->st, &slot->next_off);
	if (slot->status == SNOWID_POOL_CLOSED || slot->st.nranges == 0)
	{
		wake = snowid_pool_wants(slot);
		LWLockRelease(slot->lock);
		if (wake)
			snowid_pool_wake_worker();
		return false;
	}
	r = &slot->st.ranges[0];
	size = snowid_range_size(r);
	n = Min((uint64) want, size - slot->next_off);
	if (slot->next_off + n > slot->st.durable_off)
	{
		SnowidPoolState st = slot->st;

		st.durable_off = Min(size, slot->next_off + Max(n, size / 16));
		snowid_pool_persist(idx, &st);
		slot->st = st;
	}
	*first = snowid_range_value(r, slot->next_off);
	*count = (int64) n;
	slot->next_off += n;
	slot->taken += n;
	wake = snowid_pool_wants(slot);
	LWLockRelease(slot->lock);
	if (wake)
		snowid_pool_wake_worker();
	/* the gate moved meanwhile (refusal, lease end): the block is a gap */
	if (snowid_pool_gate() != gate)
		return false;
	return true;
}

void
snowid_pool_error_none(int idx)
{
	SnowidPoolSlot *slot = &snowid_pool_shared->slots[idx];
	SnowidPoolStatus status;
	char		name[SNOWID_POOL_NAME_LEN];
	char		detail[SNOWID_POOL_DETAIL_LEN];

	LWLockAcquire(slot->lock, LW_SHARED);
	status = slot->status;
	strlcpy(name, slot->st.name, sizeof(name));
	strlcpy(detail, slot->detail, sizeof(detail));
	LWLockRelease(slot->lock);

	if (!snowid_pool_gate_open())
		snowid_refuse_unconfirmed(psprintf("values of pool \"%s\"", name));
	if (!snowid_pool_gate_open())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowid hands out no values of pool \"%s\" while this server does not hold its node", name),
				 errdetail("%s", snowid_pool_registry_text()),
				 errhint("Pool values, like IDs, are issued only under the node lease of the registry: see snowid_registry_status().")));

	if (status == SNOWID_POOL_EMPTY)
		ereport(ERROR,
				(errcode(ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED),
				 errmsg("pool \"%s\" has no values left", name),
				 errdetail("The registry has granted every value of the pool, and this server has used up the ranges it held."),
				 errhint("Move to a new pool, of type bigint if this one is integer.")));
	if (status == SNOWID_POOL_CLOSED)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pool \"%s\" is closed", name),
				 errdetail("The server is shutting down and has given back what it held.")));
	if (status == SNOWID_POOL_UNUSABLE)
		snowid_pool_refuse_unusable(name, detail);
	if (status == SNOWID_POOL_UNKNOWN)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no range of pool \"%s\" in hand", name),
				 errdetail("The registry has no such pool%s",
						   detail[0] != '\0' ? psprintf(": %s", snowid_sentence(detail)) : "."),
				 errhint("Create the pool on the registry with snowid_pool_create().")));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("no range of pool \"%s\" in hand", name),
			 errdetail("%s%s%s", snowid_pool_registry_text(),
					   detail[0] != '\0' ? " " : "",
					   detail[0] != '\0' ? snowid_sentence(detail) : ""),
			 errhint("Ranges come from the registry through the snowid background worker; this server issues again once it has one.")));
	pg_unreachable();
}

void
snowid_pool_facts(int idx, Oid *typid, int64 *maxvalue, int64 *start)
{
	SnowidPoolSlot *slot = &snowid_pool_shared->slots[idx];

	LWLockAcquire(slot->lock, LW_SHARED);
	*typid = slot->st.typid;
	*maxvalue = slot->st.maxvalue;
	*start = slot->st.start;
	LWLockRelease(slot->lock);
}

int64
snowid_pool_in_hand(int idx)
{
	SnowidPoolSlot *slot = &snowid_pool_shared->slots[idx];
	int64		n;

	LWLockAcquire(slot->lock, LW_SHARED);
	n = snowid_pool_in_hand_locked(slot);
	LWLockRelease(slot->lock);
	return n;
}
