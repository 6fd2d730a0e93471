/*-------------------------------------------------------------------------
 *
 * pool_store.c
 *	  Pools: the shared holdings and how they are persisted -- the file
 *	  $PGDATA/snowid.pools, its load at start, and the WAL record
 *	  XLOG_SNOWID_POOL with its redo and desc.
 *
 * A value is handed out only at an offset below durable_off; taking past
 * it first raises durable_off by max(want, range size / 16) and persists
 * the new state:
 *
 *	 1. a WAL record of snowid's resource manager (XLOG_SNOWID_POOL, the
 *		whole state of one pool with gen, the change count of all pools,
 *		raised under file_lock by every persist), flushed, and
 *		acknowledged by synchronous standbys where there are any, so that
 *		standbys learn the ranges and a promoted one resumes above them;
 *	 2. the file $PGDATA/snowid.pools (every pool, written aside, synced
 *		and renamed into place), which every start reads in the postmaster
 *		before anything is handed out; crash recovery replays only records
 *		newer (by gen) than the file's last write, which comes after every
 *		record with a lower gen (persists are serialised by file_lock), so
 *		that a pool freed since (pool_users.c) does not come back;
 *	 3. shared memory.
 * A crash thus resumes at durable_off (losing at most one chunk), a clean
 * shutdown (snowid_pool_close, from the worker) persists the exact offset,
 * truncates the ranges there and returns the unused tails for the worker
 * to give back.
 *
 * The text of the file (its lines, their checks, the reading of it) is
 * pool_file.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "access/xlog.h"
#include "access/xloginsert.h"
#include "access/xlogreader.h"
#include "access/xlogutils.h"
#include "boot_record.h"
#include "durable.h"
#include "lease.h"
#include "lib/stringinfo.h"
#include "pool.h"
#include "pool_file.h"
#include "pool_store.h"
#include "replication/syncrep.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"
#include "wal.h"

SnowidPoolShared *snowid_pool_shared = NULL;

/* ---------- states ---------- */

/* Drop ranges[i] of a state. */
static void
snowid_state_drop(SnowidPoolState *st, int i)
{
	for (int j = i; j < st->nranges - 1; j++)
		st->ranges[j] = st->ranges[j + 1];
	st->nranges--;
}

/*
 * Bring a state to where values can be taken: drop used-up ranges and what
 * lies below the floor.  *next_off is the offset in ranges[0] (in memory;
 * for a loaded state, durable_off).
 */
void
snowid_state_settle(SnowidPoolState *st, uint64 *next_off)
{
	for (int i = st->nranges - 1; i >= 1; i--)
		if (st->ranges[i].last < st->floor)
			snowid_state_drop(st, i);
	while (st->nranges > 0)
	{
		SnowidPoolRange *r = &st->ranges[0];
		uint64		size = snowid_range_size(r);

		if (r->first < st->floor && r->last >= st->floor)
			*next_off = Max(*next_off, (uint64) st->floor - (uint64) r->first);
		if (*next_off < size && r->last >= st->floor)
			break;
		/* used up: no range at or below it is ever taken again */
		if (r->last >= st->floor)
			st->floor = r->last == PG_INT64_MAX ? PG_INT64_MAX : r->last + 1;
		snowid_state_drop(st, 0);
		*next_off = 0;
		st->durable_off = 0;
	}
	if (st->nranges == 0)
		*next_off = st->durable_off = 0;
	st->durable_off = Max(st->durable_off, *next_off);
}

/*
 * Why a pool with these facts can never serve a pooled ticket, or NULL.
 * Members hand out no value below 0 (the floor a slot starts with); the
 * registry refuses pools starting below 1 since 1.5, older ones may.
 */
char *
snowid_pool_facts_why(const char *name, int64 start)
{
	if (!snowid_pool_start_usable(start))
		return psprintf("pool \"%s\" starts at " INT64_FORMAT ": pooled tickets hand out no value below 0, so its ranges there could never serve", name, start);
	return NULL;
}

/* Does the slot want the worker to fetch a range?  Slot lock held. */
bool
snowid_pool_wants(SnowidPoolSlot *slot)
{
	if (slot->status == SNOWID_POOL_CLOSED || slot->status == SNOWID_POOL_UNKNOWN ||
		slot->status == SNOWID_POOL_UNUSABLE)
		return false;
	/* the facts first (again, after a refusal), never a range with them */
	if (!OidIsValid(slot->st.typid) || slot->status == SNOWID_POOL_WAITING)
		return true;
	if (!snowid_pool_start_usable(slot->st.start))
		return false;			/* never a range of a pool that cannot serve */
	if (slot->st.nranges == 0)
		return slot->demand;
	return slot->st.nranges == 1 &&
		slot->next_off > snowid_range_size(&slot->st.ranges[0]) / 2;
}

int
snowid_pool_slots(void)
{
	int			n;

	if (snowid_pool_shared == NULL)
		return 0;
	LWLockAcquire(snowid_pool_shared->table_lock, LW_SHARED);
	n = snowid_pool_shared->nused;
	LWLockRelease(snowid_pool_shared->table_lock);
	return n;
}

void
snowid_pool_wake_worker(void)
{
	Latch	   *latch = snowid_pool_shared->worker_latch;

	pg_atomic_write_u32(&snowid_pool_shared->wake, 1);
	if (latch != NULL)
		SetLatch(latch);
}

/* Values in hand of a slot, capped at PG_INT64_MAX; slot lock held. */
int64
snowid_pool_in_hand_locked(SnowidPoolSlot *slot)
{
	uint64		sum = 0;

	for (int i = 0; i < slot->st.nranges; i++)
	{
		uint64		v = snowid_range_size(&slot->st.ranges[i]) -
			(i == 0 ? slot->next_off : 0);

		sum = sum + v < sum ? PG_UINT64_MAX : sum + v;
	}
	return sum > (uint64) PG_INT64_MAX ? PG_INT64_MAX : (int64) sum;
}

/* ---------- shared memory ---------- */

Size
snowid_pool_shmem_size(void)
{
	return MAXALIGN(sizeof(SnowidPoolShared));
}

void
snowid_pool_shmem_request(void)
{
	RequestAddinShmemSpace(snowid_pool_shmem_size());
	RequestNamedLWLockTranche("snowid_pool", SNOWID_POOL_MAX + 2);
}

static void snowid_pool_load(void);
static void snowid_pool_write_file(int idx, const SnowidPoolState *st,
								   int elevel);

/* Called under AddinShmemInitLock from the shmem startup hook. */
void
snowid_pool_shmem_startup(void)
{
	bool		found;

	snowid_pool_shared = ShmemInitStruct("snowid_pool",
										 snowid_pool_shmem_size(), &found);
	if (!found)
	{
		LWLockPadded *locks = GetNamedLWLockTranche("snowid_pool");

		memset(snowid_pool_shared, 0, sizeof(SnowidPoolShared));
		pg_atomic_init_u32(&snowid_pool_shared->wake, 0);
		pg_atomic_init_u64(&snowid_pool_shared->request_count, 0);
		/*
		 * Request keys must never repeat: a crash restart of the backends
		 * (restart_after_crash) keeps the postmaster's start identity but
		 * starts the request count over, and the registry answers a key it
		 * knows with the range it granted under it.
		 */
		snowid_pool_shared->key_epoch = GetCurrentTimestamp();
		snowid_pool_shared->table_lock = &locks[0].lock;
		snowid_pool_shared->file_lock = &locks[1].lock;
		for (int i = 0; i < SNOWID_POOL_MAX; i++)
			snowid_pool_shared->slots[i].lock = &locks[i + 2].lock;
		snowid_pool_load();
	}
}

SnowidPoolShared *
snowid_pool_require_shared(void)
{
	if (unlikely(snowid_pool_shared == NULL))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowid must be loaded via shared_preload_libraries"),
				 errdetail("The ranges of registry pools are held in snowid's shared memory."),
				 errhint("Add snowid to shared_preload_libraries in postgresql.conf and restart the server.")));
	return snowid_pool_shared;
}

/*
 * Put a state into a free slot (the lowest), as new; table_lock held
 * (exclusive).  -1 if every slot is in use.
 */
int
snowid_pool_slot_from_state(const SnowidPoolState *st)
{
	SnowidPoolSlot *slot;
	LWLock	   *lock;
	int			idx = 0;

	while (idx < SNOWID_POOL_MAX && snowid_pool_shared->slots[idx].in_use)
		idx++;
	if (idx >= SNOWID_POOL_MAX)
		return -1;
	slot = &snowid_pool_shared->slots[idx];
	lock = slot->lock;
	memset(slot, 0, sizeof(SnowidPoolSlot));
	slot->lock = lock;
	slot->st = *st;
	slot->next_off = st->durable_off;
	snowid_state_settle(&slot->st, &slot->next_off);
	slot->status = OidIsValid(st->typid) ? SNOWID_POOL_OK : SNOWID_POOL_WAITING;
	if (OidIsValid(st->typid) && !snowid_pool_start_usable(st->start))
	{
		/* kept by a server before 1.5: its takers learn why at once */
		slot->status = SNOWID_POOL_UNUSABLE;
		strlcpy(slot->detail, snowid_pool_facts_why(st->name, st->start),
				SNOWID_POOL_DETAIL_LEN);
	}
	slot->in_use = true;
	snowid_pool_shared->nused = Max(snowid_pool_shared->nused, idx + 1);
	return idx;
}

/*
 * Free slot idx, whose freeing (a state with SNOWID_POOL_FREED) the caller
 * persisted or replayed; table_lock held (exclusive) and the slot's lock.
 */
void
snowid_pool_release_slot(int idx)
{
	snowid_pool_shared->slots[idx].in_use = false;
	while (snowid_pool_shared->nused > 0 &&
		   !snowid_pool_shared->slots[snowid_pool_shared->nused - 1].in_use)
		snowid_pool_shared->nused--;
}

/* ---------- the file ---------- */

/*
 * Give up every range of a state copied from another server: none is used
 * again, nothing below the highest of them is handed out.  Returns the
 * number of values given up.
 */
static int64
snowid_state_give_up(SnowidPoolState *st)
{
	int64		dropped = 0;

	for (int r = 0; r < st->nranges; r++)
	{
		dropped += st->ranges[r].last - st->ranges[r].first + 1;
		if (st->ranges[r].last >= st->floor)
			st->floor = st->ranges[r].last == PG_INT64_MAX ?
				PG_INT64_MAX : st->ranges[r].last + 1;
	}
	st->nranges = 0;
	st->durable_off = 0;
	return dropped;
}

/* ---------- boot marks ---------- */

/*
 * The boot mark a state shows: the last value it may have handed out (the
 * one below durable_off in its first range, the only one values are taken
 * from, or else the one below its floor); -1 if none.  Not the last value
 * of its ranges: a tail given back unused at a shutdown was never handed
 * out, and a mark above it would make the registry skip it.
 */
static int64
snowid_state_mark(const SnowidPoolState *st)
{
	int64		m = st->floor > 0 ? st->floor - 1 : -1;

	if (st->nranges > 0 && st->durable_off > 0)
	{
		uint64		size = snowid_range_size(&st->ranges[0]);

		m = Max(m, snowid_range_value(&st->ranges[0],
									  Min(st->durable_off, size) - 1));
	}
	return m;
}

/* Pool name's boot mark, or -1; file_lock held (or the postmaster, at start). */
static int64
snowid_pool_mark_of(const char *name)
{
	for (int i = 0; i < snowid_pool_shared->nmarks; i++)
		if (strcmp(snowid_pool_shared->marks[i].name, name) == 0)
			return snowid_pool_shared->marks[i].last;
	return -1;
}

/* Raise pool name's boot mark to last; file_lock held (or at start). */
static void
snowid_pool_mark_raise(const char *name, int64 last)
{
	SnowidPoolShared *sh = snowid_pool_shared;

	if (last < 0 || name[0] == '\0')
		return;
	for (int i = 0; i < sh->nmarks; i++)
		if (strcmp(sh->marks[i].name, name) == 0)
		{
			sh->marks[i].last = Max(sh->marks[i].last, last);
			return;
		}
	if (sh->nmarks >= SNOWID_POOL_MARKS)
	{
		if (!sh->marks_full)
		{
			sh->marks_full = true;
			ereport(WARNING,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("snowid's boot record holds the marks of %d pools, the most it can",
							SNOWID_POOL_MARKS),
					 errdetail("The values this server hands out of pool \"%s\" and of other pools it draws on for the first time in this boot of its host are not in it: a restore of this data directory into itself, followed by a restore of the registry from an older backup, could hand them out again.",
							   name),
					 errhint("Draw on fewer pools from this server, or restart its host.")));
		}
		return;
	}
	strlcpy(sh->marks[sh->nmarks].name, name, SNOWID_POOL_NAME_LEN);
	sh->marks[sh->nmarks].last = last;
	sh->nmarks++;
}

/*
 * A state of a server started from a copy (from_backup) starts above its
 * pool's boot mark: up to it, values may have been handed out in this boot
 * of the host by this data directory before it was restored into itself,
 * from ranges its older files do not show.  lock: take file_lock (not in
 * the postmaster at start).
 */
void
snowid_pool_floor_from_mark(SnowidPoolState *st, bool lock)
{
	int64		m;

	if (!snowid_pool_shared->from_backup)
		return;
	if (lock)
		LWLockAcquire(snowid_pool_shared->file_lock, LW_SHARED);
	m = snowid_pool_mark_of(st->name);
	if (lock)
		LWLockRelease(snowid_pool_shared->file_lock);
	if (m >= 0 && m >= st->floor)
		st->floor = m == PG_INT64_MAX ? PG_INT64_MAX : m + 1;
}

/*
 * Pool name's boot mark, -1 if none: for the report of what this server
 * held (pool_grant.c); the caller may hold the slot's lock.
 */
int64
snowid_pool_boot_mark(const char *name)
{
	int64		m;

	LWLockAcquire(snowid_pool_shared->file_lock, LW_SHARED);
	m = snowid_pool_mark_of(name);
	LWLockRelease(snowid_pool_shared->file_lock);
	return m;
}

/*
 * The boot marks of the pools no slot holds now (up to max of them into
 * out), for the worker's report: a slot freed since keeps telling a
 * registry that forgot its ranges.  Returns how many.
 */
int
snowid_pool_marks_unheld(SnowidPoolMark *out, int max)
{
	SnowidPoolShared *sh = snowid_pool_shared;
	int			n = 0;

	LWLockAcquire(sh->table_lock, LW_SHARED);
	LWLockAcquire(sh->file_lock, LW_SHARED);
	for (int m = 0; m < sh->nmarks && n < max; m++)
	{
		bool		held = false;

		for (int i = 0; i < sh->nused && !held; i++)
			held = sh->slots[i].in_use &&
				strcmp(sh->slots[i].st.name, sh->marks[m].name) == 0;
		if (!held)
			out[n++] = sh->marks[m];
	}
	LWLockRelease(sh->file_lock);
	LWLockRelease(sh->table_lock);
	return n;
}

/*
 * Read the boot record's part for the pools: the change count the pool
 * file last reached in this boot of the host (0 if none) and the boot
 * marks, loaded into shared memory.  Is the pool file (n pools in states,
 * end count hwm; n < 0: no file) behind that count?
 */
static bool
snowid_pool_file_restored(int n, const SnowidPoolState *states, uint64 hwm,
						  uint64 *recorded)
{
	int			size = 64 + SNOWID_POOL_MARKS * (SNOWID_POOL_NAME_LEN + 32);
	char	   *part = palloc(size);
	char	   *line;
	char	   *next;
	unsigned long long count;

	*recorded = 0;
	if (snowid_boot_record_get(SNOWID_BOOT_PART_POOLS, part, size) <= 0 ||
		sscanf(part, "%llu", &count) != 1)
	{
		pfree(part);
		return false;
	}
	*recorded = (uint64) count;
	for (line = part; line != NULL; line = next)
	{
		long long	last;
		char		name[SNOWID_POOL_NAME_LEN];
		int			used = 0;

		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		/* "mark <last> <name>"; anything else is not a mark */
		if (sscanf(line, "mark %lld %63s%n", &last, name, &used) == 2 &&
			line[used] == '\0' && snowid_pool_name_ok(name))
			snowid_pool_mark_raise(name, (int64) last);
	}
	pfree(part);
	for (int i = 0; i < n; i++)
		hwm = Max(hwm, states[i].gen);
	return *recorded > (n < 0 ? 0 : hwm);
}

static void
snowid_pool_load(void)
{
	SnowidPoolState states[SNOWID_POOL_MAX];
	uint64		hwm;
	bool		file_v1;
	int			n = snowid_pool_read_file(states, &hwm, &file_v1);
	int64		dropped = 0;
	int			last_idx = -1;

	/*
	 * A start from a base backup as a primary (backup_label present, no
	 * standby.signal): a clone, or a restore.  The ranges in the file, and
	 * in the WAL it replays, belong to the server it was copied from, which
	 * may go on using them; give them up, with a floor above them, and a
	 * change count above any record in that WAL, before recovery starts.
	 */
	/*
	 * PostgreSQL renames backup_label before redo: a marker of our own
	 * keeps telling a resumed recovery (after a crash or a stop during the
	 * first one) that the WAL is the original's, until the worker, which
	 * starts once recovery has ended, removes it.
	 */
	bool		marked = access(SNOWID_POOLS_COPIED, F_OK) == 0;
	bool		label = access("backup_label", F_OK) == 0;

	/*
	 * So is a start on another host or port than the lease file names, or
	 * one that cannot prove it is the server in place, in the same boot
	 * (lease_file.c): a copy taken without backup_label (cp -a, a
	 * filesystem or volume snapshot), whose original may go on using the
	 * ranges, or a start after a reboot (which only loses them).
	 */
	bool		moved = snowid_registry != NULL &&
		(snowid_registry->moved || !snowid_registry->proven);

	/*
	 * And so is a file older than the one this server last wrote in this
	 * boot of its host, as the boot record says (boot_record.c): the data
	 * directory was restored into itself, and the values handed out since
	 * that copy was taken would be handed out again.
	 */
	uint64		recorded;
	bool		restored = snowid_pool_file_restored(n, states, hwm, &recorded);
	bool		from_backup = (marked || label || moved || restored) &&
		access("standby.signal", F_OK) != 0;

	snowid_pool_shared->from_backup = from_backup;
	if (from_backup && !marked)
		(void) snowid_write_durably(SNOWID_POOLS_COPIED, SNOWID_POOLS_COPIED ".tmp",
									"snowid: this data directory replays the WAL of the server it was copied from\n",
									strlen("snowid: this data directory replays the WAL of the server it was copied from\n"),
									FATAL);

	for (int i = 0; i < n; i++)
	{
		int			idx;

		if (from_backup)
		{
			/*
			 * Above any count the record holds too: a second restore of the
			 * same old copy must not write a lower count into it, which
			 * would let a newer copy pass for current.
			 */
			dropped += snowid_state_give_up(&states[i]);
			states[i].gen = Max(states[i].gen, recorded) + (UINT64CONST(1) << 40);
			snowid_pool_floor_from_mark(&states[i], false);
		}
		snowid_pool_mark_raise(states[i].name, snowid_state_mark(&states[i]));
		idx = snowid_pool_slot_from_state(&states[i]);
		snowid_pool_shared->file_state[idx] = states[i];
		snowid_pool_shared->file_used[idx] = true;
		hwm = Max(hwm, states[i].gen);
		last_idx = idx;
	}
	/*
	 * Replay skips the records the file has seen; not in a file of 1.4,
	 * whose change counts were per pool, nor in the WAL of a copy (each of
	 * its records is given up, compared per pool as before).
	 */
	/* the record's count never goes down */
	hwm = Max(hwm, recorded);
	snowid_pool_shared->gen_hwm = hwm;
	snowid_pool_shared->loaded_hwm = n >= 0 && !file_v1 && !from_backup ?
		hwm : 0;
	if (from_backup && last_idx >= 0)
	{
		snowid_pool_write_file(last_idx, &snowid_pool_shared->file_state[last_idx], FATAL);
		ereport(LOG,
				(errmsg("snowid gave up the pool ranges this data directory was copied with (" INT64_FORMAT " values)",
						dropped),
				 label || marked ?
				 errdetail("The server starts from a base backup (backup_label is present): the ranges belong to the server it was copied from.") :
				 restored && !moved ?
				 errdetail("The file \"%s\" is older than the one this server last wrote, in this boot of its host: the data directory was restored into itself, and values of these ranges were handed out after the copy was taken.",
						   SNOWID_POOLS_FILE) :
				 errdetail("The server cannot prove it is the one its lease file names (another host or port, another data directory, or another boot of its host), as a copy of another server's data directory would: the ranges may belong to the server it was copied from."),
				 errhint("This server asks the registry for ranges of its own.")));
	}
}

/*
 * Write the file from file_state, with slot idx's state now st; caller
 * holds file_lock.
 */
static void
snowid_pool_write_file(int idx, const SnowidPoolState *st, int elevel)
{
	StringInfoData buf;
	int			n = 0;

	snowid_pool_shared->file_state[idx] = *st;
	snowid_pool_shared->file_used[idx] = (st->flags & SNOWID_POOL_FREED) == 0;
	snowid_pool_shared->gen_hwm = Max(snowid_pool_shared->gen_hwm, st->gen);
	initStringInfo(&buf);
	appendStringInfoString(&buf, SNOWID_POOLS_MAGIC "\n");
	for (int i = 0; i < SNOWID_POOL_MAX; i++)
		if (snowid_pool_shared->file_used[i])
		{
			snowid_pool_format_line(&buf, &snowid_pool_shared->file_state[i],
									false);
			n++;
		}
	appendStringInfo(&buf, "end %d " UINT64_FORMAT "\n", n,
					 snowid_pool_shared->gen_hwm);
	if (snowid_write_durably(SNOWID_POOLS_FILE, SNOWID_POOLS_TMP,
							 buf.data, buf.len, elevel))
	{
		/*
		 * Its shadow in the boot record: the change count written, and the
		 * boot mark of every pool (this state's raised now, should it free
		 * its slot; the others' at their writes, or at the load).
		 */
		StringInfoData part;

		snowid_pool_mark_raise(st->name, snowid_state_mark(st));
		initStringInfo(&part);
		appendStringInfo(&part, UINT64_FORMAT "\n", snowid_pool_shared->gen_hwm);
		for (int i = 0; i < snowid_pool_shared->nmarks; i++)
			appendStringInfo(&part, "mark " INT64_FORMAT " %s\n",
							 snowid_pool_shared->marks[i].last,
							 snowid_pool_shared->marks[i].name);
		(void) snowid_boot_record_put(SNOWID_BOOT_PART_POOLS, part.data, part.len,
									  elevel == ERROR && !InRecovery ?
									  ERROR : WARNING);
		pfree(part.data);
	}
	pfree(buf.data);
}

/*
 * Persist the state st of slot idx (whose lock the caller holds): WAL,
 * flushed and, with synchronous replication, acknowledged; then the file.
 * The caller publishes st in shared memory afterwards.
 */
void
snowid_pool_persist(int idx, SnowidPoolState *st)
{
	XLogRecPtr	lsn;

	if (RecoveryInProgress())
		elog(ERROR, "snowid pool state cannot be persisted during recovery");
	/*
	 * Under file_lock from the change count to the file: the file's writes
	 * follow the order of the counts, so the count it was last written
	 * with says which records it has seen.
	 */
	LWLockAcquire(snowid_pool_shared->file_lock, LW_EXCLUSIVE);
	PG_TRY();
	{
		st->gen = ++snowid_pool_shared->gen_hwm;
		XLogBeginInsert();
		XLogRegisterData((char *) st, sizeof(SnowidPoolState));
		lsn = XLogInsert(SNOWID_RMGR_ID, XLOG_SNOWID_POOL);
		/*
		 * The change count is spent even if the file write below fails: the
		 * next record must carry a higher one, or replay would skip it.
		 */
		snowid_pool_shared->slots[idx].st.gen = st->gen;
		XLogFlush(lsn);
		SyncRepWaitForLSN(lsn, false);
		snowid_pool_write_file(idx, st, ERROR);
	}
	PG_FINALLY();
	{
		LWLockRelease(snowid_pool_shared->file_lock);
	}
	PG_END_TRY();
}

/*
 * snowid_pool_persist for the worker's calls, which hold slot idx's lock:
 * released on an error, whose handler (the worker's exit) does not run
 * under a transaction abort.
 */
void
snowid_pool_persist_releasing(int idx, SnowidPoolState *st)
{
	PG_TRY();
	{
		snowid_pool_persist(idx, st);
	}
	PG_CATCH();
	{
		LWLockRelease(snowid_pool_shared->slots[idx].lock);
		PG_RE_THROW();
	}
	PG_END_TRY();
}

/* ---------- replay ---------- */

/* The state a record carries (one of 1.4 too: *v1); false if malformed. */
static bool
snowid_pool_record_state(XLogReaderState *record, SnowidPoolState *st,
						 bool *v1)
{
	uint32		len = XLogRecGetDataLen(record);

	memset(st, 0, sizeof(*st));
	*v1 = len == SNOWID_POOL_STATE_LEN_1_4;
	if (len != sizeof(SnowidPoolState) && !*v1)
		return false;
	memcpy(st, XLogRecGetData(record), len);
	st->name[SNOWID_POOL_NAME_LEN - 1] = '\0';
	if (*v1)
		st->flags = SNOWID_POOL_DBS_UNKNOWN;
	st->ndbs = Min(Max(st->ndbs, 0), SNOWID_POOL_DBS);
	return true;
}

void
snowid_pool_redo(XLogReaderState *record)
{
	SnowidPoolState st;
	SnowidPoolSlot *slot;
	int			idx = -1;
	bool		v1;

	if (snowid_pool_shared == NULL)
		elog(PANIC, "snowid_pool_redo: shared memory is not initialised");
	if (!snowid_pool_record_state(record, &st, &v1))
		elog(PANIC, "snowid_pool_redo: record of %u bytes, expected %zu",
			 XLogRecGetDataLen(record), sizeof(SnowidPoolState));
	/*
	 * The WAL of the server this one was copied from: not our ranges; and
	 * a change count above the rest of that WAL, should this recovery be
	 * interrupted and resumed.
	 */
	if (snowid_pool_shared->from_backup)
	{
		(void) snowid_state_give_up(&st);
		st.gen += UINT64CONST(1) << 40;
		snowid_pool_floor_from_mark(&st, true);
	}
	/* in the file already (a pool freed since must not come back) */
	else if (!v1 && st.gen <= snowid_pool_shared->loaded_hwm)
		return;

	LWLockAcquire(snowid_pool_shared->table_lock, LW_EXCLUSIVE);
	for (int i = 0; i < snowid_pool_shared->nused; i++)
		if (snowid_pool_shared->slots[i].in_use &&
			strcmp(snowid_pool_shared->slots[i].st.name, st.name) == 0)
			idx = i;
	if ((st.flags & SNOWID_POOL_FREED) != 0)
	{
		/* the pool's slot was freed */
		if (idx >= 0)
		{
			slot = &snowid_pool_shared->slots[idx];
			LWLockAcquire(slot->lock, LW_EXCLUSIVE);
			if (st.gen > slot->st.gen)
			{
				LWLockAcquire(snowid_pool_shared->file_lock, LW_EXCLUSIVE);
				snowid_pool_write_file(idx, &st, ERROR);
				LWLockRelease(snowid_pool_shared->file_lock);
				snowid_pool_release_slot(idx);
			}
			LWLockRelease(slot->lock);
		}
		LWLockRelease(snowid_pool_shared->table_lock);
		return;
	}
	if (idx < 0)
	{
		SnowidPoolState empty;

		memset(&empty, 0, sizeof(empty));
		strlcpy(empty.name, st.name, SNOWID_POOL_NAME_LEN);
		idx = snowid_pool_slot_from_state(&empty);
	}
	LWLockRelease(snowid_pool_shared->table_lock);
	if (idx < 0)
		ereport(FATAL,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("snowid cannot replay the ranges of pool \"%s\"", st.name),
				 errdetail("This server already holds the ranges of %d pools, the most it can.",
						   SNOWID_POOL_MAX)));

	slot = &snowid_pool_shared->slots[idx];
	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	if (st.gen > slot->st.gen)
	{
		LWLockAcquire(snowid_pool_shared->file_lock, LW_EXCLUSIVE);
		snowid_pool_write_file(idx, &st, ERROR);
		LWLockRelease(snowid_pool_shared->file_lock);
		slot->st = st;
		slot->next_off = st.durable_off;
		snowid_state_settle(&slot->st, &slot->next_off);
		if (OidIsValid(st.typid) && slot->status == SNOWID_POOL_WAITING)
			slot->status = SNOWID_POOL_OK;
	}
	LWLockRelease(slot->lock);
}

void
snowid_pool_desc(StringInfo buf, XLogReaderState *record)
{
	SnowidPoolState st;
	bool		v1;

	/* the record as written: no shared memory here (pg_waldump) */
	if (!snowid_pool_record_state(record, &st, &v1))
		return;
	if ((st.flags & SNOWID_POOL_FREED) != 0)
	{
		appendStringInfo(buf, "pool %s change " UINT64_FORMAT " freed",
						 st.name, st.gen);
		return;
	}
	appendStringInfo(buf, "pool %s change " UINT64_FORMAT " used below offset "
					 UINT64_FORMAT " floor " INT64_FORMAT " ranges",
					 st.name, st.gen, st.durable_off, st.floor);
	for (int i = 0; i < st.nranges && i < SNOWID_POOL_RANGES; i++)
		appendStringInfo(buf, " [" INT64_FORMAT ", " INT64_FORMAT "]",
						 st.ranges[i].first, st.ranges[i].last);
	if (st.nranges == 0)
		appendStringInfoString(buf, " none");
}
