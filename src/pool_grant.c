/*-------------------------------------------------------------------------
 *
 * pool_grant.c
 *	  Pools: the worker's side -- what each pool needs from the registry,
 *	  the ranges it grants and its other answers, the rate values are
 *	  taken at, and closing the pools at shutdown.
 *
 * Called by the pool worker (pool_worker.c) only.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "access/xlog.h"
#include "catalog/pg_type_d.h"
#include "lease.h"
#include "pool.h"
#include "pool_grant.h"
#include "pool_store.h"
#include "storage/fd.h"
#include "storage/lwlock.h"
#include "utils/timestamp.h"

void
snowid_pool_set_worker_latch(Latch *latch)
{
	if (snowid_pool_shared != NULL)
		snowid_pool_shared->worker_latch = latch;
}

/* A failure the worker met for pool idx, shown as its detail, counted. */
void
snowid_pool_note(int idx, const char *detail)
{
	SnowidPoolSlot *slot = &snowid_pool_shared->slots[idx];

	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	strlcpy(slot->detail, detail, SNOWID_POOL_DETAIL_LEN);
	slot->failures++;
	LWLockRelease(slot->lock);
}

/*
 * The registry refused to grant (this server's lease, say): counted and
 * shown; the request is asked again under the same key, so nothing the
 * registry might have recorded for it is lost.
 */
void
snowid_pool_refused(int idx, const char *detail)
{
	SnowidPoolSlot *slot = &snowid_pool_shared->slots[idx];

	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	if (detail != NULL && detail[0] != '\0')
		strlcpy(slot->detail, detail, SNOWID_POOL_DETAIL_LEN);
	slot->failures++;
	LWLockRelease(slot->lock);
}

/*
 * The worker starts (recovery has ended, on a primary): a recovery from a
 * copy is over, and pools closed by an earlier worker's exit (a SIGTERM
 * other than a shutdown, pg_terminate_backend) serve again.
 */
void
snowid_pool_worker_start(void)
{
	int			n = snowid_pool_slots();

	if (snowid_pool_shared == NULL)
		return;
	if (access(SNOWID_POOLS_COPIED, F_OK) == 0)
		(void) durable_unlink(SNOWID_POOLS_COPIED, LOG);
	for (int i = 0; i < n; i++)
	{
		SnowidPoolSlot *slot = &snowid_pool_shared->slots[i];

		LWLockAcquire(slot->lock, LW_EXCLUSIVE);
		if (slot->in_use && slot->status == SNOWID_POOL_CLOSED)
			slot->status = OidIsValid(slot->st.typid) ? SNOWID_POOL_OK :
				SNOWID_POOL_WAITING;
		LWLockRelease(slot->lock);
	}
}

bool
snowid_pool_wake_pending(void)
{
	return snowid_pool_shared != NULL &&
		pg_atomic_exchange_u32(&snowid_pool_shared->wake, 0) != 0;
}

bool
snowid_pool_need(int idx, int64 rate_want, SnowidPoolNeed *need)
{
	SnowidPoolSlot *slot = &snowid_pool_shared->slots[idx];

	memset(need, 0, sizeof(*need));
	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	if (!slot->in_use)
	{
		LWLockRelease(slot->lock);
		return false;			/* a free slot: no name, nothing to ask */
	}
	strlcpy(need->name, slot->st.name, SNOWID_POOL_NAME_LEN);
	need->nheld = slot->st.nranges;
	memcpy(need->held, slot->st.ranges,
		   sizeof(SnowidPoolRange) * slot->st.nranges);

	/*
	 * The floor's mark: the last value of the ranges used up (or given up)
	 * lies below the floor, and the boot mark (pool_store.c) is the last
	 * value this server may have handed out in this boot of its host, even
	 * before its data directory was restored into itself.  Where it lies
	 * above every range in hand, it is reported as a range of one value: a
	 * registry that forgot those ranges (a restore from a backup taken
	 * before they were granted) then does not grant them again; one that
	 * remembers them finds it inside a range it knows and records nothing.
	 * (Below a range in hand it says nothing more than that range: a
	 * registry records at most SNOWID_POOL_RANGES ranges of a pool per
	 * report.)
	 */
	{
		int64		mark = Max(slot->st.floor - 1,
							   snowid_pool_boot_mark(slot->st.name));
		int64		top = -1;

		for (int i = 0; i < slot->st.nranges; i++)
			top = Max(top, slot->st.ranges[i].last);
		if (mark >= 0 && mark >= slot->st.start && mark > top &&
			slot->st.nranges < SNOWID_POOL_RANGES)
		{
			need->held[need->nheld].first = mark;
			need->held[need->nheld].last = mark;
			need->nheld++;
		}
	}
	need->need = snowid_pool_wants(slot) &&
		slot->st.nranges < SNOWID_POOL_RANGES;
	if (need->need)
	{
		/*
		 * The facts alone while no one has asked for values, and always
		 * first (a pool whose facts cannot serve is granted nothing).
		 */
		need->want = slot->status == SNOWID_POOL_WAITING ||
			(!OidIsValid(slot->st.typid) && !slot->demand) ? 0 :
			Max(rate_want, SNOWID_POOL_MIN_RANGE);
		if (slot->request[0] == '\0')
		{
			const char *start = snowid_registry != NULL ?
				snowid_registry->start_id : "";

			/* counted for all slots: a freed slot's index is reused */
			slot->nrequests++;
			snprintf(slot->request, SNOWID_POOL_REQUEST_LEN,
					 "%s-" INT64_FORMAT "-" UINT64_FORMAT,
					 start, snowid_pool_shared->key_epoch,
					 pg_atomic_add_fetch_u64(&snowid_pool_shared->request_count, 1));
		}
		strlcpy(need->request, slot->request, SNOWID_POOL_REQUEST_LEN);
	}
	LWLockRelease(slot->lock);
	return need->need;
}

/* A pool that cannot serve: asked nothing more (attach asks again). */
static void
snowid_pool_set_unusable(SnowidPoolSlot *slot, const char *why)
{
	strlcpy(slot->detail, why, SNOWID_POOL_DETAIL_LEN);
	slot->failures++;
	if (slot->status != SNOWID_POOL_CLOSED)
		slot->status = SNOWID_POOL_UNUSABLE;
}

/* Take the pool's facts from an answer; slot lock held. */
static bool
snowid_pool_take_facts(SnowidPoolState *st, Oid typid, int64 maxvalue,
					   int64 start)
{
	if ((typid != INT4OID && typid != INT8OID) ||
		maxvalue != (typid == INT4OID ? PG_INT32_MAX : PG_INT64_MAX) ||
		start > maxvalue)
		return false;
	if (OidIsValid(st->typid) &&
		(st->typid != typid || st->start != start || st->maxvalue != maxvalue))
		return false;
	st->typid = typid;
	st->maxvalue = maxvalue;
	st->start = start;
	return true;
}

void
snowid_pool_granted(int idx, const char *request, Oid typid, int64 maxvalue,
					int64 start, int64 first, int64 last)
{
	SnowidPoolSlot *slot = &snowid_pool_shared->slots[idx];
	SnowidPoolState st;
	const char *why = NULL;

	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	if (request == NULL || slot->request[0] == '\0' ||
		strcmp(request, slot->request) != 0)
	{
		/* an answer we already took (or never asked): nothing changes */
		LWLockRelease(slot->lock);
		return;
	}
	st = slot->st;
	if (!snowid_pool_take_facts(&st, typid, maxvalue, start))
		why = "its type, start or maximum differ from what this server knows of the pool";
	else if ((why = snowid_pool_facts_why(st.name, start)) != NULL)
		;
	else if (first > last || first < start || last > maxvalue ||
			 (uint64) last - (uint64) first == PG_UINT64_MAX)
		why = "the range lies outside the pool's values";
	else if (st.nranges >= SNOWID_POOL_RANGES)
		why = "this server holds as many ranges of the pool as it can";
	else if (first < st.floor)
		why = "the range lies below values this server has handed out";
	for (int i = 0; why == NULL && i < st.nranges; i++)
		if (first <= st.ranges[i].last && last >= st.ranges[i].first)
			why = "the range overlaps one this server holds";
	if (why != NULL)
	{
		/*
		 * Nothing of it is used, and nothing more is asked for until a
		 * ticket attaches again (then the facts first, under a new key):
		 * a registry that keeps answering so would otherwise lose a range
		 * on every heartbeat.
		 */
		slot->request[0] = '\0';
		snowid_pool_set_unusable(slot, why);
		LWLockRelease(slot->lock);
		ereport(WARNING,
				(errmsg("snowid ignores range [" INT64_FORMAT ", " INT64_FORMAT "] of pool \"%s\" from the registry",
						first, last, slot->st.name),
				 errdetail("%s", snowid_sentence(why))));
		return;
	}
	st.ranges[st.nranges].first = first;
	st.ranges[st.nranges].last = last;
	st.nranges++;
	if (st.nranges == 1)
		st.durable_off = 0;
	snowid_pool_persist_releasing(idx, &st);
	slot->st = st;
	if (st.nranges == 1)
		slot->next_off = 0;
	snowid_state_settle(&slot->st, &slot->next_off);
	slot->request[0] = '\0';
	slot->detail[0] = '\0';
	if (slot->status != SNOWID_POOL_CLOSED)
		slot->status = SNOWID_POOL_OK;
	LWLockRelease(slot->lock);
}

void
snowid_pool_answered(int idx, const char *request, SnowidPoolStatus status,
					 Oid typid, int64 maxvalue, int64 start,
					 const char *detail)
{
	SnowidPoolSlot *slot = &snowid_pool_shared->slots[idx];

	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	if (request != NULL && slot->request[0] != '\0' &&
		strcmp(request, slot->request) != 0)
	{
		LWLockRelease(slot->lock);
		return;
	}
	if (OidIsValid(typid))
		(void) snowid_pool_take_facts(&slot->st, typid, maxvalue, start);
	slot->request[0] = '\0';
	strlcpy(slot->detail, detail != NULL ? detail : "", SNOWID_POOL_DETAIL_LEN);
	if (status == SNOWID_POOL_EMPTY || status == SNOWID_POOL_UNKNOWN)
		slot->failures++;
	if (status == SNOWID_POOL_UNKNOWN && slot->status != SNOWID_POOL_UNKNOWN)
		slot->unknown_since = GetCurrentTimestamp();
	else if (status != SNOWID_POOL_UNKNOWN)
		slot->unknown_since = 0;
	if (slot->status != SNOWID_POOL_CLOSED)
		slot->status = status == SNOWID_POOL_OK && !OidIsValid(slot->st.typid) ?
			SNOWID_POOL_WAITING : status;
	if (OidIsValid(slot->st.typid) && status != SNOWID_POOL_UNKNOWN)
	{
		char	   *why = snowid_pool_facts_why(slot->st.name, slot->st.start);

		if (why != NULL)
			snowid_pool_set_unusable(slot, why);
	}
	LWLockRelease(slot->lock);
}

void
snowid_pool_update_rate(TimestampTz now)
{
	int			n = snowid_pool_slots();

	for (int i = 0; i < n; i++)
	{
		SnowidPoolSlot *slot = &snowid_pool_shared->slots[i];

		LWLockAcquire(slot->lock, LW_EXCLUSIVE);
		if (slot->rate_at == 0)
		{
			slot->rate_at = now;
			slot->rate_taken = slot->taken;
		}
		else if (now - slot->rate_at >= USECS_PER_SEC)
		{
			slot->rate = snowid_pool_rate_locked(slot, now);
			slot->rate_at = now;
			slot->rate_taken = slot->taken;
		}
		LWLockRelease(slot->lock);
	}
}

/*
 * The rate of slot (lock held) as of now: the smoothed rate moved by what
 * was taken since the last update, so that an idle pool's rate falls (by
 * half every SNOWID_POOL_RATE_HALF_LIFE_S) even while the worker does not
 * update it.  Over a second at least: the worker also runs right after a
 * taker woke it, and a block taken a moment ago would make a rate of
 * millions a second out of a few milliseconds.  The first second's rate is
 * taken as it is, to size the first range.
 */
double
snowid_pool_rate_locked(SnowidPoolSlot *slot, TimestampTz now)
{
	double		secs;
	double		seen;

	if (slot->rate_at == 0 || now - slot->rate_at < USECS_PER_SEC)
		return slot->rate;
	secs = (double) (now - slot->rate_at) / 1e6;
	seen = (double) (slot->taken - slot->rate_taken) / secs;
	return slot->rate == 0 ? seen : snowid_rate_smooth(slot->rate, seen, secs);
}

double
snowid_pool_rate(int idx)
{
	SnowidPoolSlot *slot = &snowid_pool_shared->slots[idx];
	double		rate;

	LWLockAcquire(slot->lock, LW_SHARED);
	rate = slot->rate;
	LWLockRelease(slot->lock);
	return rate;
}

int
snowid_pool_close(int idx, SnowidPoolRange *tails)
{
	SnowidPoolSlot *slot = &snowid_pool_shared->slots[idx];
	SnowidPoolState st;
	int			n = 0;

	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	slot->status = SNOWID_POOL_CLOSED;
	snowid_state_settle(&slot->st, &slot->next_off);
	if (slot->st.nranges == 0 || RecoveryInProgress())
	{
		LWLockRelease(slot->lock);
		return 0;
	}
	st = slot->st;
	/* the unused tails, highest first */
	for (int i = st.nranges - 1; i >= 0; i--)
	{
		SnowidPoolRange t = st.ranges[i];

		if (i == 0)
			t.first = snowid_range_value(&t, slot->next_off);
		for (int j = 0; j <= n; j++)
			if (j == n || t.first > tails[j].first)
			{
				memmove(&tails[j + 1], &tails[j], sizeof(SnowidPoolRange) * (n - j));
				tails[j] = t;
				break;
			}
		n++;
	}
	st.nranges = 0;
	st.durable_off = 0;
	snowid_pool_persist_releasing(idx, &st);
	slot->st = st;
	slot->next_off = 0;
	LWLockRelease(slot->lock);
	return n;
}

void
snowid_pool_kept(int idx, SnowidPoolRange tail)
{
	SnowidPoolSlot *slot = &snowid_pool_shared->slots[idx];
	SnowidPoolState st;

	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	st = slot->st;
	if (st.nranges >= SNOWID_POOL_RANGES || tail.first > tail.last)
	{
		LWLockRelease(slot->lock);
		return;
	}
	/*
	 * In order of value (the tails come highest first): a member's values
	 * increase, so its ranges are used lowest first.  Only after close,
	 * where nothing of ranges[0] has been handed out.
	 */
	{
		int			j = st.nranges;

		while (j > 0 && st.ranges[j - 1].first > tail.first)
		{
			st.ranges[j] = st.ranges[j - 1];
			j--;
		}
		st.ranges[j] = tail;
		st.nranges++;
	}
	if (st.nranges == 1 || slot->status == SNOWID_POOL_CLOSED)
		st.durable_off = 0;
	snowid_pool_persist_releasing(idx, &st);
	slot->st = st;
	if (st.nranges == 1 || slot->status == SNOWID_POOL_CLOSED)
		slot->next_off = 0;
	LWLockRelease(slot->lock);
}
