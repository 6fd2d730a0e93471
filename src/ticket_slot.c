/*-------------------------------------------------------------------------
 *
 * ticket_slot.c
 *	  Ticket sequences: the slots in shared memory and the blocks they serve.
 *
 * A ticket sequence is a normal PostgreSQL sequence that counts blocks
 * (ticketmath.h says which values block b holds) plus a row in the
 * extension's table snowid_ticket with its settings.  One nextval() on that
 * sequence reserves one block for this server: non-transactional,
 * WAL-logged, replicated, dumped by pg_dump.  We flush the WAL up to the
 * reservation before any value of the block is handed out, so a crash can
 * only skip the unused rest of a block, never hand it out again.
 *
 * Each ticket sequence in use has one slot in shared memory (a fixed array
 * of snowid.ticket_slots), keyed by database, relation OID and the creation
 * stamp stored in the catalog.  Locks:
 *	- table_lock (exclusive) binds a slot to a ticket and frees it;
 *	  binding happens once per backend and ticket, under a lock on the
 *	  sequence that DROP conflicts with and after checking that it exists
 *	  (snowid_ticket_lookup_bound), so a slot is never bound for a dropped
 *	  ticket; slots bound for tickets created by a transaction that aborts
 *	  are freed at its abort, and a full table recycles the slots of this
 *	  database whose ticket no longer exists;
 *	- each slot's lock serialises the reservation and installation of
 *	  blocks in that slot (taken after a RowExclusiveLock on the sequence,
 *	  so that no one waits for a heavyweight lock while holding it);
 *	- the hot path takes no lock: one fetch-add on slot->cur.
 *
 * Why no value is issued twice.  slot->cur packs (generation << 32 | taken).
 * A caller (the loop of snowid_ticket_next_of in ticket_sql.c, inlined into
 * the SQL functions) fetch-adds 1 and so owns offset `taken` of generation g alone.
 * The block of generation g (first value, count) lives in buf[g & 1],
 * written under the slot lock before cur is switched to g, and rewritten
 * only for generation g + 2, which needs g + 1 to be installed and used up
 * first.  A caller reads buf[g & 1] under a per-buffer version counter
 * (seqlock) and accepts it only if it is stable and tagged with g; a caller
 * delayed so long that its buffer was reused drops its claim (a gap) and
 * tries again.  Offsets at or beyond the count go to the slow path, which
 * under the slot lock installs the pre-fetched (or a freshly reserved)
 * block as g + 1 with an exchange on cur.  Every block comes from its own
 * nextval(), which never returns a number twice, and the offsets of one
 * generation are handed out once by the fetch-add.  A caller also checks
 * slot->bind_count after reading the block: a slot freed (DROP) and bound
 * to another ticket in between makes it drop the claim and look again.
 *
 * Why values strictly increase.  Within a block they grow with the offset,
 * which the fetch-add hands out in order; a new generation is installed
 * only when the previous one is used up, and its block came from a later
 * nextval() than the previous one, so it lies above every value of it.
 *
 * Why a rewound sequence cannot reissue a block.  The sequence itself can
 * be moved back: setval() by a role with UPDATE, TRUNCATE ... RESTART
 * IDENTITY of a table that owns it, ALTER SEQUENCE, or a crash of an
 * unlogged one.  So each ticket also has a served mark, column served of
 * its row in snowid_ticket: the highest block number its sequence has
 * handed out.  A reservation (under the slot lock, holding RowExclusiveLock
 * on the sequence and the table) refuses any block at or below the mark
 * (SQLSTATE 55000, object not in prerequisite state: the sequence is
 * usable again once setval moves it above the mark, as the hint says; it
 * is not data corruption), then raises the mark to the block in place.
 * The mark is
 *	- non-transactional: an in-place update (systable_inplace_update_*),
 *	  which no rollback undoes, like nextval() itself;
 *	- durable and replicated: the in-place update is WAL-logged, so a
 *	  restart or a promoted standby sees it.  Its WAL is flushed at once
 *	  when the reservation's nextval() wrote WAL (every 32 blocks: nextval
 *	  logs ahead), else by the WAL writer within wal_writer_delay, and in
 *	  any case by the commit of every transaction that stores a value of
 *	  the block (a commit flushes all WAL before it).  An fsync per block
 *	  would cost more than the values of a block of the default size.  So
 *	  after a crash the mark can be behind the blocks served only for
 *	  values that no committed row holds, and only a rewind after that
 *	  crash could bring those back;
 *	- out of users' reach: only the table's owner (the extension's
 *	  installer) may write snowid_ticket, and even it cannot change a row
 *	  (a trigger refuses; ticket_guard.c); users other than the database's
 *	  owner cannot even read the column;
 *	- written without waiting: never into a row version that a rollback
 *	  could discard, and with no wait for a heavyweight lock under the slot
 *	  lock (ticket_guard.c has the argument);
 *	- dumped: the table is a configuration table, so pg_dump carries the
 *	  mark with the settings, and a restored ticket cannot be rewound below
 *	  what the old server served either (if the dump was taken while blocks
 *	  were being reserved, the mark may be ahead of the dumped sequence: the
 *	  first reservation then asks for a setval above it, which is right,
 *	  because those values did escape);
 *	- gone with the ticket: DROP removes the row.
 * The slot caches the mark (served, valid while served_bind equals
 * bind_count), so most reservations read it only to raise it.  Besides,
 * every reservation checks the sequence's settings (INCREMENT 1, NO CYCLE,
 * CACHE 1, MINVALUE 0, its MAXVALUE, bigint, logged; ticket_guard.c), which
 * ALTER SEQUENCE may not change.  A database still at 1.1 (no served
 * column) is served as before until ALTER EXTENSION UPDATE gives each
 * ticket its mark (the sequence's last value).
 *
 * Pooled tickets (column pool of snowid_ticket set) take their blocks from
 * their pool's ranges in this server's holdings (pool.c, snowid_pool_take:
 * persisted by WAL and file before it returns) instead of nextval(); the
 * backing sequence stays for the name, privileges, DROP and pg_dump, and
 * the served mark does not apply.  Blocks of one pool never overlap, since
 * the holdings hand out each value once.  With no range in hand the caller
 * that finds the block used up waits (up to 10 s) for the worker to fetch
 * one, then fails with 55000 (2200H once the pool is used up).
 *
 * The caller that takes offset floor(count * snowid.ticket_prefetch / 100)
 * reserves the next block (under the slot lock, while others keep taking
 * values from the current one).  Callers that find the block used up wait
 * on the slot lock for it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "commands/sequence.h"
#include "guc.h"
#include "miscadmin.h"
#include "pool_take.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "ticket.h"
#include "ticket_catalog.h"
#include "ticket_guard.h"
#include "ticket_slot.h"
#include "ticketmath.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

SnowidTicketShared *ticket_shared = NULL;

/* ---------- shared memory ---------- */

static Size
snowid_ticket_shmem_size(void)
{
	return add_size(offsetof(SnowidTicketShared, slots),
					mul_size(snowid_ticket_slots, sizeof(SnowidTicketSlot)));
}

void
snowid_ticket_shmem_request(void)
{
	RequestAddinShmemSpace(snowid_ticket_shmem_size());
	RequestNamedLWLockTranche("snowid_ticket", snowid_ticket_slots + 1);
}

/* Called under AddinShmemInitLock from the shmem startup hook. */
void
snowid_ticket_shmem_startup(void)
{
	bool		found;

	ticket_shared = ShmemInitStruct("snowid_ticket", snowid_ticket_shmem_size(),
									&found);
	if (!found)
	{
		LWLockPadded *locks = GetNamedLWLockTranche("snowid_ticket");

		ticket_shared->table_lock = &locks[0].lock;
		ticket_shared->nslots = snowid_ticket_slots;
		for (int i = 0; i < snowid_ticket_slots; i++)
		{
			SnowidTicketSlot *slot = &ticket_shared->slots[i];

			memset(slot, 0, sizeof(SnowidTicketSlot));
			pg_atomic_init_u64(&slot->cur, 0);
			pg_atomic_init_u32(&slot->bind_count, 0);
			pg_atomic_init_u32(&slot->buf[0].version, 0);
			pg_atomic_init_u32(&slot->buf[1].version, 0);
			slot->lock = &locks[i + 1].lock;
		}
	}
}

SnowidTicketShared *
snowid_ticket_require_shared(void)
{
	if (unlikely(ticket_shared == NULL))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowid must be loaded via shared_preload_libraries"),
				 errdetail("Ticket sequences are served from snowid's shared memory."),
				 errhint("Add snowid to shared_preload_libraries in postgresql.conf and restart the server.")));
	return ticket_shared;
}

/* Write block (gen, first, count) into its buffer; caller holds slot lock. */
static void
snowid_ticket_install(SnowidTicketSlot *slot, uint32 gen, int64 first,
					  uint32 count)
{
	SnowidTicketBuf *buf = &slot->buf[gen & 1];

	pg_atomic_fetch_add_u32(&buf->version, 1);	/* odd: being written */
	pg_write_barrier();
	buf->gen = gen;
	buf->first = first;
	buf->count = count;
	pg_write_barrier();
	pg_atomic_fetch_add_u32(&buf->version, 1);	/* even: stable */
}

/* Free a slot; caller holds table_lock exclusively. */
static void
snowid_ticket_free_slot(SnowidTicketSlot *slot)
{
	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	slot->in_use = false;
	slot->relid = InvalidOid;
	slot->dbid = InvalidOid;
	pg_atomic_fetch_add_u32(&slot->bind_count, 1);
	LWLockRelease(slot->lock);
}

/*
 * Free the slots of database dbid: of relation relid, or all of them if
 * relid is InvalidOid.  Freeing a slot is always safe: the values left in
 * its blocks are skipped, and the next user reserves a fresh block.
 */
void
snowid_ticket_free_slots(Oid dbid, Oid relid)
{
	bool		any = false;

	if (ticket_shared == NULL)
		return;

	LWLockAcquire(ticket_shared->table_lock, LW_SHARED);
	for (int i = 0; i < ticket_shared->nslots && !any; i++)
	{
		SnowidTicketSlot *slot = &ticket_shared->slots[i];

		any = slot->in_use && slot->dbid == dbid &&
			(!OidIsValid(relid) || slot->relid == relid);
	}
	LWLockRelease(ticket_shared->table_lock);
	if (!any)
		return;

	LWLockAcquire(ticket_shared->table_lock, LW_EXCLUSIVE);
	for (int i = 0; i < ticket_shared->nslots; i++)
	{
		SnowidTicketSlot *slot = &ticket_shared->slots[i];

		if (slot->in_use && slot->dbid == dbid &&
			(!OidIsValid(relid) || slot->relid == relid))
			snowid_ticket_free_slot(slot);
	}
	LWLockRelease(ticket_shared->table_lock);
}

/*
 * Slots this backend bound, in the current transaction, for tickets that
 * the transaction itself created: if it aborts (or prepares), no one else
 * will ever use them, so they are freed then.  After a subtransaction's
 * abort, those whose sequence is gone (created in the aborted
 * subtransaction) are freed before the transaction commits.
 */
typedef struct SnowidPendingSlot
{
	int			index;
	Oid			relid;
	int64		stamp;
	bool		gone;			/* to be freed */
} SnowidPendingSlot;

static SnowidPendingSlot *pending = NULL;
static int	npending = 0;
static bool pending_recheck = false;

/* Free the pending slots, or only those whose sequence is gone. */
static void
snowid_ticket_free_pending(bool only_gone)
{
	if (npending > 0 && ticket_shared != NULL)
	{
		for (int i = 0; i < npending; i++)
			pending[i].gone = !only_gone ||
				!SearchSysCacheExists1(RELOID,
									   ObjectIdGetDatum(pending[i].relid));
		LWLockAcquire(ticket_shared->table_lock, LW_EXCLUSIVE);
		for (int i = 0; i < npending; i++)
		{
			SnowidTicketSlot *slot = &ticket_shared->slots[pending[i].index];

			if (pending[i].gone && slot->in_use && slot->dbid == MyDatabaseId &&
				slot->relid == pending[i].relid &&
				slot->stamp == pending[i].stamp)
				snowid_ticket_free_slot(slot);
		}
		LWLockRelease(ticket_shared->table_lock);
	}
	npending = 0;
	pending_recheck = false;
}

static void
snowid_ticket_xact_cb(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			if (pending_recheck)
				snowid_ticket_free_pending(true);
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			snowid_ticket_free_pending(false);
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			npending = 0;
			pending_recheck = false;
			break;
		default:
			break;
	}
}

static void
snowid_ticket_subxact_cb(SubXactEvent event, SubTransactionId mySubid,
						 SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB && npending > 0)
		pending_recheck = true;
}

/*
 * The table is full: free the slots of this database whose ticket no longer
 * exists (or is not the one the slot was bound for).  Checked without
 * table_lock, which is then taken again to free only the slots whose key
 * has not changed meanwhile.  True if any slot was freed.
 */
static bool
snowid_ticket_recycle(Oid extnsp)
{
	SnowidTicketShared *shared = ticket_shared;
	int			n = 0;
	int		   *index = palloc(sizeof(int) * shared->nslots);
	Oid		   *relid = palloc(sizeof(Oid) * shared->nslots);
	int64	   *stamp = palloc(sizeof(int64) * shared->nslots);
	uint32	   *bind_count = palloc(sizeof(uint32) * shared->nslots);
	bool		freed = false;

	LWLockAcquire(shared->table_lock, LW_SHARED);
	for (int i = 0; i < shared->nslots; i++)
	{
		SnowidTicketSlot *slot = &shared->slots[i];

		if (slot->in_use && slot->dbid == MyDatabaseId)
		{
			index[n] = i;
			relid[n] = slot->relid;
			stamp[n] = slot->stamp;
			bind_count[n] = pg_atomic_read_u32(&slot->bind_count);
			n++;
		}
	}
	LWLockRelease(shared->table_lock);

	for (int i = 0; i < n; i++)
		if (snowid_ticket_alive(extnsp, relid[i], stamp[i]))
			index[i] = -1;

	LWLockAcquire(shared->table_lock, LW_EXCLUSIVE);
	for (int i = 0; i < n; i++)
	{
		SnowidTicketSlot *slot;

		if (index[i] < 0)
			continue;
		slot = &shared->slots[index[i]];
		if (slot->in_use &&
			pg_atomic_read_u32(&slot->bind_count) == bind_count[i])
		{
			snowid_ticket_free_slot(slot);
			freed = true;
		}
	}
	LWLockRelease(shared->table_lock);
	return freed;
}

/*
 * Bind entry to a slot: the one of its key, or a free one, recycling the
 * slots of dead tickets of this database if there is none.  The caller
 * holds a lock on the sequence and has checked that it exists
 * (snowid_ticket_lookup_bound).
 */
void
snowid_ticket_bind(SnowidTicketEntry *entry)
{
	SnowidTicketShared *shared = ticket_shared;
	SnowidTicketSlot *slot;
	int			index;
	bool		created_here = TransactionIdIsCurrentTransactionId(entry->xmin);
	static bool callbacks = false;
	static int	maxpending = 0;

	if (created_here)
	{
		if (!callbacks)
		{
			RegisterXactCallback(snowid_ticket_xact_cb, NULL);
			RegisterSubXactCallback(snowid_ticket_subxact_cb, NULL);
			callbacks = true;
		}
		/* room to remember the slot, before it is bound */
		if (npending >= maxpending)
		{
			int			newmax = Max(8, maxpending * 2);

			pending = pending == NULL ?
				MemoryContextAlloc(TopMemoryContext,
								   sizeof(SnowidPendingSlot) * newmax) :
				repalloc(pending, sizeof(SnowidPendingSlot) * newmax);
			maxpending = newmax;
		}
	}

	for (int attempt = 0;; attempt++)
	{
		slot = NULL;
		index = -1;
		LWLockAcquire(shared->table_lock, LW_EXCLUSIVE);
		for (int i = 0; i < shared->nslots; i++)
		{
			SnowidTicketSlot *s = &shared->slots[i];

			if (s->in_use && s->dbid == MyDatabaseId && s->relid == entry->relid)
			{
				if (s->stamp == entry->stamp)
				{
					index = i;
					break;
				}
				/* a dropped ticket whose OID was reused: never serve it */
				snowid_ticket_free_slot(s);
			}
			if (!s->in_use && index < 0 && slot == NULL)
				slot = s;
		}
		if (index >= 0 || slot != NULL)
			break;
		LWLockRelease(shared->table_lock);
		if (attempt < 3 && snowid_ticket_recycle(entry->extnsp))
			continue;
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("no free snowid ticket slot for \"%s\"",
						snowid_ticket_name(entry->relid)),
				 errdetail("All %d slots are in use by ticket sequences of this server.",
						   shared->nslots),
				 errhint("Raise snowid.ticket_slots and restart the server, or drop ticket sequences that are no longer used.")));
	}
	if (index < 0)
	{
		uint32		gen;

		LWLockAcquire(slot->lock, LW_EXCLUSIVE);
		slot->dbid = MyDatabaseId;
		slot->relid = entry->relid;
		slot->stamp = entry->stamp;
		slot->spec = entry->spec;
		slot->pool_idx = entry->pool_idx;
		slot->next_valid = false;
		slot->no_more = false;
		slot->blocks_reserved = 0;
		/* an empty block: the first caller reserves one */
		gen = (uint32) (pg_atomic_read_u64(&slot->cur) >> 32) + 1;
		snowid_ticket_install(slot, gen, 0, 0);
		pg_atomic_fetch_add_u32(&slot->bind_count, 1);
		pg_atomic_exchange_u64(&slot->cur, (uint64) gen << 32);
		slot->in_use = true;
		LWLockRelease(slot->lock);
		index = slot - shared->slots;
	}
	entry->slot = index;
	entry->bind_count = pg_atomic_read_u32(&shared->slots[index].bind_count);
	LWLockRelease(shared->table_lock);

	if (created_here)
	{
		int			i;

		for (i = 0; i < npending && pending[i].index != index; i++)
			;
		pending[i].index = index;
		pending[i].relid = entry->relid;
		pending[i].stamp = entry->stamp;
		if (i == npending)
			npending++;
	}
}

/* ---------- blocks ---------- */

static void
snowid_ticket_exhausted(SnowidTicketEntry *entry, const char *name)
{
	int64		last = snowid_ticket_value(&entry->spec,
										   snowid_ticket_last_k(&entry->spec));

	ereport(ERROR,
			(errcode(ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED),
			 errmsg("ticket sequence \"%s\" has no values left for shard %d",
					name, entry->spec.shard),
			 errdetail("The last value of shard %d of %d is " INT64_FORMAT ", the largest its type allows.",
					   entry->spec.shard, entry->spec.shards, last),
			 errhint("Move to a new ticket sequence, of type bigint if this one is integer.")));
}

/*
 * End of the WAL inserted so far: a position XLogFlush accepts.  The WAL
 * record that covers the block just reserved (nextval logs ahead, so it
 * may be an earlier record, of any backend) ends at or before it.  Just
 * after a page header nothing has been written on that page yet, and a
 * flush request there would ask for WAL that does not exist: flush to the
 * end of the previous page instead.
 */
static XLogRecPtr
snowid_ticket_wal_end(void)
{
	XLogRecPtr	end = GetXLogInsertRecPtr();

	if (XLogSegmentOffset(end, wal_segment_size) == SizeOfXLogLongPHD)
		end -= SizeOfXLogLongPHD;
	else if (end % XLOG_BLCKSZ == SizeOfXLogShortPHD)
		end -= SizeOfXLogShortPHD;
	return end;
}

/*
 * nextval() on the backing sequence.  A sequence at its MAXVALUE (the
 * number after the last block) means this shard is out of values: say so
 * as snowid_ticket_exhausted does, not as nextval would.
 */
static int64
snowid_ticket_nextval(SnowidTicketEntry *entry, const char *name)
{
	MemoryContext cxt = CurrentMemoryContext;
	volatile int64 b = 0;
	volatile bool exhausted = false;

	PG_TRY();
	{
		b = nextval_internal(entry->relid, true);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		if (edata->sqlerrcode != ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED)
			PG_RE_THROW();
		FlushErrorState();
		exhausted = true;
	}
	PG_END_TRY();
	/* the transaction is aborting: only raise the clearer error */
	if (exhausted)
		snowid_ticket_exhausted(entry, name);
	return b;
}

/*
 * Reserve the next block into slot->next (or set no_more).  Caller holds
 * the slot lock, a RowExclusiveLock on the sequence and one on the table
 * snowid_ticket, and has checked that the sequence is still what a ticket
 * needs (snowid_ticket_lock_for_block).  The block must lie above every
 * block served (the served mark, raised here); the WAL
 * record of the reservation and of the mark is flushed before any value of
 * the block escapes.
 */
static void
snowid_ticket_reserve(SnowidTicketSlot *slot, SnowidTicketEntry *entry,
					  const char *name)
{
	int64		b;
	uint32		bind = pg_atomic_read_u32(&slot->bind_count);
	XLogRecPtr	before;
	bool		logged;

	if (slot->next_valid || slot->no_more)
		return;
	if (slot->pool_idx >= 0)
	{
		int64		first;
		int64		count;

		/* a slot freed and reused since the binding: attached again */
		slot->pool_idx = snowid_pool_resolve(slot->pool_idx, entry->pool);
		/* persisted by pool.c before it returns; no served mark needed */
		if (snowid_pool_take(slot->pool_idx, entry->pool, entry->spec.block,
							 &first, &count))
		{
			slot->next_first = first;
			slot->next_count = (uint32) count;
			slot->next_valid = true;
			slot->blocks_reserved++;
		}
		return;
	}
	if (slot->served_bind != bind)
	{
		slot->served = snowid_ticket_served(entry->relid, name);
		slot->served_bind = bind;
	}
	if (slot->served > snowid_ticket_last_block(&entry->spec))
	{
		/* the end marker has been served: nothing left */
		slot->no_more = true;
		return;
	}
	before = GetXLogInsertRecPtr();
	b = snowid_ticket_nextval(entry, name);
	logged = GetXLogInsertRecPtr() != before;
	snowid_ticket_raise_served(entry->relid, name, b, &entry->spec);
	slot->served = b;
	if (logged)
		XLogFlush(snowid_ticket_wal_end());
	else
		XLogSetAsyncXactLSN(GetXLogInsertRecPtr());
	if (snowid_ticket_block(&entry->spec, b, &slot->next_first,
							&slot->next_count))
	{
		slot->next_valid = true;
		slot->blocks_reserved++;
	}
	else
		slot->no_more = true;
}

/*
 * Take the heavyweight locks a reservation needs, before the slot lock:
 * the sequence's and the table snowid_ticket's.  A sequence dropped while
 * we waited is a clear error, not "could not open relation".  Then check
 * that the sequence is still what a ticket needs, also before the slot
 * lock: the check reads pg_depend, pg_class and pg_sequence, and a catalog
 * lock taken under an LWLock could wait, uncancellable and unseen by the
 * deadlock detector, behind a VACUUM FULL of that catalog.  The locks held
 * on the sequence keep what was checked from changing until the
 * transaction ends.  Returns the ticket's name (looked up while it still
 * existed).
 */
static const char *
snowid_ticket_lock_for_block(SnowidTicketEntry *entry)
{
	const char *name = snowid_ticket_lock_existing(entry->relid);

	snowid_ticket_lock_table(name);
	snowid_ticket_check_sequence(entry->relid, name, &entry->spec);
	return name;
}

/* Pre-fetch the block after generation g (when called, g was current). */
void
snowid_ticket_prefetch_block(SnowidTicketSlot *slot, SnowidTicketEntry *entry)
{
	const char *name = snowid_ticket_lock_for_block(entry);

	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	if (pg_atomic_read_u32(&slot->bind_count) == entry->bind_count)
		snowid_ticket_reserve(slot, entry, name);
	LWLockRelease(slot->lock);
}

/*
 * Generation g of slot is used up: install the next block as g + 1 and
 * take its first value, unless someone else did already.
 */
SnowidTakeResult
snowid_ticket_next_block(SnowidTicketSlot *slot, SnowidTicketEntry *entry,
						 uint32 g, int64 *value, uint32 *count)
{
	uint64		word;
	const char *name = snowid_ticket_lock_for_block(entry);

	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	if (pg_atomic_read_u32(&slot->bind_count) != entry->bind_count)
	{
		LWLockRelease(slot->lock);
		return TAKE_REBIND;
	}
	word = pg_atomic_read_u64(&slot->cur);
	if ((uint32) (word >> 32) != g)
	{
		LWLockRelease(slot->lock);
		return TAKE_RETRY;
	}
	/* keep the offset of a used-up block bounded while we work */
	pg_atomic_exchange_u64(&slot->cur, ((uint64) g << 32) |
						   slot->buf[g & 1].count);

	PG_TRY();
	{
		snowid_ticket_reserve(slot, entry, name);
	}
	PG_CATCH();
	{
		LWLockRelease(slot->lock);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (!slot->next_valid && slot->pool_idx >= 0)
	{
		/* no range in hand: wait for the worker to fetch one, then retry */
		int			pool_idx = slot->pool_idx;

		LWLockRelease(slot->lock);
		/*
		 * Retry once a range came, even if another caller took all of it
		 * meanwhile: that caller installed a block in this slot, which the
		 * retry finds (or it waits again for the next range).
		 */
		if (snowid_pool_wait(pool_idx) &&
			(snowid_pool_in_hand(pool_idx) > 0 ||
			 (uint32) (pg_atomic_read_u64(&slot->cur) >> 32) != g))
			return TAKE_RETRY;
		snowid_pool_error_none(pool_idx);
	}
	if (!slot->next_valid)
	{
		LWLockRelease(slot->lock);
		snowid_ticket_exhausted(entry, name);
	}

	snowid_ticket_install(slot, g + 1, slot->next_first, slot->next_count);
	slot->next_valid = false;
	*value = slot->next_first;
	*count = slot->next_count;
	pg_atomic_exchange_u64(&slot->cur, ((uint64) (g + 1) << 32) | 1);
	LWLockRelease(slot->lock);
	return TAKE_OK;
}
