/*-------------------------------------------------------------------------
 *
 * ticket.c
 *	  Ticket sequences: short per-shard integers served from shared memory.
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
 *	- each slot's lock serialises the reservation and installation of
 *	  blocks in that slot (taken after a RowExclusiveLock on the sequence,
 *	  so that no one waits for a heavyweight lock while holding it);
 *	- the hot path takes no lock: one fetch-add on slot->cur.
 *
 * Why no value is issued twice.  slot->cur packs (generation << 32 | taken).
 * A caller fetch-adds 1 and so owns offset `taken` of generation g alone.
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
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "commands/sequence.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "snowid.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "ticketmath.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

PG_FUNCTION_INFO_V1(snowid_ticket_create);
PG_FUNCTION_INFO_V1(snowid_ticket_next);
PG_FUNCTION_INFO_V1(snowid_ticket_shard);
PG_FUNCTION_INFO_V1(snowid_ticket_cache);

int			snowid_ticket_slots = 128;
int			snowid_ticket_prefetch = 50;

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

	/* under this slot's lock */
	bool		next_valid;		/* next_first/next_count hold a block */
	bool		no_more;		/* the sequence has no block left */
	int64		next_first;
	uint32		next_count;
	int64		blocks_reserved;	/* by this server since start */
	SnowidTicketBuf buf[2];
	LWLock	   *lock;
} SnowidTicketSlot;

typedef struct SnowidTicketShared
{
	LWLock	   *table_lock;
	int			nslots;
	SnowidTicketSlot slots[FLEXIBLE_ARRAY_MEMBER];
} SnowidTicketShared;

static SnowidTicketShared *ticket_shared = NULL;

/* What a backend remembers about a ticket sequence it has used. */
typedef struct SnowidTicketEntry
{
	Oid			relid;			/* hash key */
	bool		valid;			/* settings read from the catalog */
	int64		stamp;
	SnowidTicketSpec spec;
	int			slot;			/* -1 until bound */
	uint32		bind_count;
	Oid			acl_user;		/* user whose USAGE/UPDATE was checked */
} SnowidTicketEntry;

static HTAB *ticket_cache = NULL;
static object_access_hook_type prev_object_access_hook = NULL;

typedef enum
{
	TAKE_OK,
	TAKE_EMPTY,					/* the block of generation g is used up */
	TAKE_RETRY,					/* claim lost, look again */
	TAKE_REBIND					/* the slot no longer belongs to us */
} SnowidTakeResult;

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

static SnowidTicketShared *
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
static void
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
 * DROP of a sequence, of the extension or of a database frees the slots it
 * leaves behind (the event trigger in the SQL script removes catalog rows).
 */
static void
snowid_ticket_object_access(ObjectAccessType access, Oid classId,
							Oid objectId, int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);

	if (access != OAT_DROP || ticket_shared == NULL)
		return;
	if (classId == RelationRelationId && subId == 0)
		snowid_ticket_free_slots(MyDatabaseId, objectId);
	else if (classId == DatabaseRelationId)
		snowid_ticket_free_slots(objectId, InvalidOid);
	else if (classId == ExtensionRelationId &&
			 objectId == get_extension_oid("snowid", true))
		snowid_ticket_free_slots(MyDatabaseId, InvalidOid);
}

void
snowid_ticket_init(void)
{
	prev_object_access_hook = object_access_hook;
	object_access_hook = snowid_ticket_object_access;
}

/* ---------- per-backend cache of settings and privileges ---------- */

static void
snowid_ticket_relcache_cb(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	SnowidTicketEntry *entry;

	if (ticket_cache == NULL)
		return;
	if (OidIsValid(relid))
	{
		entry = hash_search(ticket_cache, &relid, HASH_FIND, NULL);
		if (entry)
			entry->valid = false;
		return;
	}
	hash_seq_init(&status, ticket_cache);
	while ((entry = hash_seq_search(&status)) != NULL)
		entry->valid = false;
}

/* Role memberships changed: check privileges again. */
static void
snowid_ticket_authmem_cb(Datum arg, int cacheid, uint32 hashvalue)
{
	HASH_SEQ_STATUS status;
	SnowidTicketEntry *entry;

	if (ticket_cache == NULL)
		return;
	hash_seq_init(&status, ticket_cache);
	while ((entry = hash_seq_search(&status)) != NULL)
		entry->acl_user = InvalidOid;
}

static const char *
snowid_ticket_name(Oid relid)
{
	char	   *name = get_rel_name(relid);
	char	   *nsp = get_namespace_name(get_rel_namespace(relid));

	if (name == NULL)
		return psprintf("%u", relid);
	return quote_qualified_identifier(nsp, name);
}

/* Maximum of a ticket type, or 0 if the type is not allowed. */
static int64
snowid_ticket_type_max(Oid type)
{
	if (type == INT4OID)
		return PG_INT32_MAX;
	if (type == INT8OID)
		return PG_INT64_MAX;
	return 0;
}

/* Read the settings of ticket relid from the catalog in schema nspid. */
static void
snowid_ticket_read_catalog(Oid nspid, Oid relid, SnowidTicketEntry *entry)
{
	char	   *query;
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(relid)};
	bool		isnull;
	TupleDesc	desc;
	HeapTuple	tup;
	int			ret;

	query = psprintf("SELECT shard, shards, block, start, type::oid, stamp "
					 "FROM %s.snowid_ticket WHERE seqrelid = $1::oid::regclass",
					 quote_identifier(get_namespace_name(nspid)));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	ret = SPI_execute_with_args(query, 1, argtypes, args, NULL, true, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "reading snowid_ticket failed: %d", ret);
	if (SPI_processed == 0)
	{
		const char *name = snowid_ticket_name(relid);

		SPI_finish();
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a ticket sequence", name),
				 errhint("Create ticket sequences with snowid_ticket_create().")));
	}
	desc = SPI_tuptable->tupdesc;
	tup = SPI_tuptable->vals[0];
	entry->spec.shard = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
	entry->spec.shards = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
	entry->spec.block = DatumGetInt32(SPI_getbinval(tup, desc, 3, &isnull));
	entry->spec.start = DatumGetInt64(SPI_getbinval(tup, desc, 4, &isnull));
	entry->spec.maxvalue =
		snowid_ticket_type_max(DatumGetObjectId(SPI_getbinval(tup, desc, 5, &isnull)));
	entry->stamp = DatumGetInt64(SPI_getbinval(tup, desc, 6, &isnull));
	SPI_finish();

	/* Rows are written only by snowid_ticket_create; be safe anyway. */
	if (entry->spec.shards < 1 || entry->spec.shard < 0 ||
		entry->spec.shard >= entry->spec.shards || entry->spec.block < 1 ||
		entry->spec.maxvalue == 0 || !snowid_ticket_has_values(&entry->spec))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("settings of ticket sequence \"%s\" are invalid",
						snowid_ticket_name(relid)),
				 errdetail("The row of snowid_ticket has been changed by hand.")));
}

/*
 * The cache entry of ticket relid with valid settings; checks USAGE or
 * UPDATE for the current user if check_acl.  fn_oid is the calling SQL
 * function, whose schema is the extension's.
 */
static SnowidTicketEntry *
snowid_ticket_lookup(Oid relid, Oid fn_oid, bool check_acl)
{
	SnowidTicketEntry *entry;
	bool		found;

	if (unlikely(ticket_cache == NULL))
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(SnowidTicketEntry);
		ticket_cache = hash_create("snowid ticket cache", 16, &ctl,
								   HASH_ELEM | HASH_BLOBS);
		CacheRegisterRelcacheCallback(snowid_ticket_relcache_cb, (Datum) 0);
		CacheRegisterSyscacheCallback(AUTHMEMROLEMEM, snowid_ticket_authmem_cb,
									  (Datum) 0);
	}

	entry = hash_search(ticket_cache, &relid, HASH_ENTER, &found);
	if (!found)
	{
		entry->valid = false;
		entry->slot = -1;
		entry->acl_user = InvalidOid;
	}
	if (unlikely(!entry->valid))
	{
		SnowidTicketEntry fresh;

		entry->slot = -1;
		entry->acl_user = InvalidOid;
		snowid_ticket_read_catalog(get_func_namespace(fn_oid), relid, &fresh);
		entry->spec = fresh.spec;
		entry->stamp = fresh.stamp;
		entry->valid = true;
	}
	if (check_acl && unlikely(entry->acl_user != GetUserId()))
	{
		AclResult	aclresult;

		aclresult = pg_class_aclcheck(relid, GetUserId(),
									  ACL_USAGE | ACL_UPDATE);
		if (aclresult != ACLCHECK_OK)
			aclcheck_error(aclresult, OBJECT_SEQUENCE, get_rel_name(relid));
		entry->acl_user = GetUserId();
	}
	return entry;
}

/* Bind entry to a slot: the one of its key, or a free one. */
static void
snowid_ticket_bind(SnowidTicketEntry *entry)
{
	SnowidTicketShared *shared = ticket_shared;
	SnowidTicketSlot *slot = NULL;
	int			index = -1;

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
	if (index < 0)
	{
		uint32		gen;

		if (slot == NULL)
		{
			LWLockRelease(shared->table_lock);
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("no free snowid ticket slot for \"%s\"",
							snowid_ticket_name(entry->relid)),
					 errdetail("All %d slots are in use by ticket sequences of this server.",
							   shared->nslots),
					 errhint("Raise snowid.ticket_slots and restart the server, or drop ticket sequences that are no longer used.")));
		}
		LWLockAcquire(slot->lock, LW_EXCLUSIVE);
		slot->dbid = MyDatabaseId;
		slot->relid = entry->relid;
		slot->stamp = entry->stamp;
		slot->spec = entry->spec;
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
}

/* ---------- taking values ---------- */

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

static void
snowid_ticket_exhausted(SnowidTicketEntry *entry)
{
	const char *name = snowid_ticket_name(entry->relid);
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
 * Reserve the next block into slot->next (or set no_more).  Caller holds
 * the slot lock and a RowExclusiveLock on the sequence.  The WAL record
 * of the reservation is flushed before any value of the block escapes.
 */
static void
snowid_ticket_reserve(SnowidTicketSlot *slot, SnowidTicketEntry *entry)
{
	int64		b;

	if (slot->next_valid || slot->no_more)
		return;
	b = nextval_internal(entry->relid, true);
	XLogFlush(snowid_ticket_wal_end());
	if (snowid_ticket_block(&entry->spec, b, &slot->next_first,
							&slot->next_count))
	{
		slot->next_valid = true;
		slot->blocks_reserved++;
	}
	else
		slot->no_more = true;
}

/* Pre-fetch the block after generation g (when called, g was current). */
static void
snowid_ticket_prefetch_block(SnowidTicketSlot *slot, SnowidTicketEntry *entry)
{
	LockRelationOid(entry->relid, RowExclusiveLock);
	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	if (pg_atomic_read_u32(&slot->bind_count) == entry->bind_count)
		snowid_ticket_reserve(slot, entry);
	LWLockRelease(slot->lock);
}

/*
 * Generation g of slot is used up: install the next block as g + 1 and
 * take its first value, unless someone else did already.
 */
static SnowidTakeResult
snowid_ticket_next_block(SnowidTicketSlot *slot, SnowidTicketEntry *entry,
						 uint32 g, int64 *value, uint32 *count)
{
	uint64		word;

	LockRelationOid(entry->relid, RowExclusiveLock);
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
		snowid_ticket_reserve(slot, entry);
	}
	PG_CATCH();
	{
		LWLockRelease(slot->lock);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (!slot->next_valid)
	{
		LWLockRelease(slot->lock);
		snowid_ticket_exhausted(entry);
	}

	snowid_ticket_install(slot, g + 1, slot->next_first, slot->next_count);
	slot->next_valid = false;
	*value = slot->next_first;
	*count = slot->next_count;
	pg_atomic_exchange_u64(&slot->cur, ((uint64) (g + 1) << 32) | 1);
	LWLockRelease(slot->lock);
	return TAKE_OK;
}

static inline uint32
snowid_ticket_threshold(uint32 count)
{
	uint64		t = (uint64) count * (uint64) snowid_ticket_prefetch / 100;

	return t >= count ? count - 1 : (uint32) t;
}

Datum
snowid_ticket_next(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	SnowidTicketShared *shared = snowid_ticket_require_shared();
	SnowidTicketEntry *entry;

	PreventCommandIfReadOnly("snowid_ticket_next()");
	PreventCommandIfParallelMode("snowid_ticket_next()");

	entry = snowid_ticket_lookup(relid, fcinfo->flinfo->fn_oid, true);
	for (;;)
	{
		SnowidTicketSlot *slot;
		SnowidTakeResult result;
		int64		value = 0;
		uint32		g = 0;
		uint32		off = 0;
		uint32		count = 0;

		CHECK_FOR_INTERRUPTS();
		if (unlikely(entry->slot < 0))
			snowid_ticket_bind(entry);
		slot = &shared->slots[entry->slot];

		result = snowid_ticket_take(slot, entry, &value, &g, &off, &count);
		if (unlikely(result == TAKE_EMPTY))
		{
			result = snowid_ticket_next_block(slot, entry, g, &value, &count);
			off = 0;
		}
		if (likely(result == TAKE_OK))
		{
			if (unlikely(off == snowid_ticket_threshold(count)))
				snowid_ticket_prefetch_block(slot, entry);
			PG_RETURN_INT64(value);
		}
		if (result == TAKE_REBIND)
		{
			/* the slot was freed: perhaps the ticket was dropped */
			entry->valid = false;
			entry = snowid_ticket_lookup(relid, fcinfo->flinfo->fn_oid, true);
			entry->slot = -1;
		}
	}
}

/* ---------- decoding and create ---------- */

Datum
snowid_ticket_shard(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	int64		value = PG_GETARG_INT64(1);
	SnowidTicketEntry *entry;
	int32		shard;

	entry = snowid_ticket_lookup(relid, fcinfo->flinfo->fn_oid, false);
	shard = snowid_ticket_shard_of(&entry->spec, value);
	if (shard < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("value " INT64_FORMAT " is not a value of ticket sequence \"%s\"",
						value, snowid_ticket_name(relid)),
				 errdetail("Its values range from " INT64_FORMAT " to " INT64_FORMAT ".",
						   entry->spec.start, entry->spec.maxvalue)));
	PG_RETURN_INT32(shard);
}

/* The owner of the catalog table snowid_ticket in schema extnsp. */
static Oid
snowid_ticket_catalog_owner(Oid extnsp)
{
	Oid			catalog = get_relname_relid("snowid_ticket", extnsp);
	HeapTuple	tup;
	Oid			owner;

	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(catalog));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "table snowid_ticket of extension snowid not found");
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

static void
snowid_ticket_bad_argument(const char *what, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid %s for ticket sequence", what),
			 errdetail("%s", detail)));
}

Datum
snowid_ticket_create(PG_FUNCTION_ARGS)
{
	text	   *name = PG_GETARG_TEXT_PP(0);
	int32		shard = PG_GETARG_INT32(1);
	int32		shards = PG_GETARG_INT32(2);
	int32		block = PG_GETARG_INT32(3);
	int64		start = PG_GETARG_INT64(4);
	Oid			type = PG_GETARG_OID(5);
	Oid			extnsp = get_func_namespace(fcinfo->flinfo->fn_oid);
	SnowidTicketSpec spec;
	RangeVar   *rv;
	Oid			nspid;
	Oid			relid;
	char	   *qualified;
	char	   *sql;
	int64		stamp = GetCurrentTimestamp();
	Oid			save_userid;
	int			save_sec_context;
	Oid			argtypes[7] = {OIDOID, INT4OID, INT4OID, INT4OID, INT8OID, OIDOID, INT8OID};
	Datum		args[7];

	if (shards < 1)
		snowid_ticket_bad_argument("number of shards",
								   psprintf("The number of shards must be at least 1, not %d.", shards));
	if (shard < 0 || shard >= shards)
		snowid_ticket_bad_argument("shard",
								   psprintf("The shard must be between 0 and %d (shards - 1), not %d.",
											shards - 1, shard));
	if (block < 1)
		snowid_ticket_bad_argument("block size",
								   psprintf("The block size must be at least 1, not %d.", block));
	if (snowid_ticket_type_max(type) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid type for ticket sequence: %s", format_type_be(type)),
				 errdetail("Ticket sequences are of type integer or bigint.")));
	spec.shard = shard;
	spec.shards = shards;
	spec.block = block;
	spec.start = start;
	spec.maxvalue = snowid_ticket_type_max(type);
	if (type == INT4OID && (start < PG_INT32_MIN || start > PG_INT32_MAX))
		snowid_ticket_bad_argument("start",
								   psprintf("Start " INT64_FORMAT " is out of range for type integer.",
											start));
	if (!snowid_ticket_has_values(&spec))
		snowid_ticket_bad_argument("start",
								   psprintf("With start " INT64_FORMAT ", shard %d would have no value of type %s.",
											start, shard, format_type_be(type)));

	rv = makeRangeVarFromNameList(textToQualifiedNameList(name));
	nspid = RangeVarGetCreationNamespace(rv);
	if (isAnyTempNamespace(nspid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("ticket sequences cannot be temporary"),
				 errdetail("Their blocks are reserved through WAL-logged sequences.")));
	if (OidIsValid(get_relname_relid(rv->relname, nspid)))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("relation \"%s\" already exists",
						quote_qualified_identifier(get_namespace_name(nspid),
												   rv->relname))));
	qualified = quote_qualified_identifier(get_namespace_name(nspid),
										   rv->relname);

	/* the sequence belongs to the caller, who needs CREATE on the schema */
	sql = psprintf("CREATE SEQUENCE %s AS bigint INCREMENT 1 MINVALUE 0 "
				   "MAXVALUE " INT64_FORMAT " START 0 CACHE 1 NO CYCLE",
				   qualified, snowid_ticket_last_block(&spec) + 1);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "creating sequence %s failed", qualified);
	CommandCounterIncrement();
	relid = get_relname_relid(rv->relname, nspid);
	if (!OidIsValid(relid))
		elog(ERROR, "sequence %s not found after creation", qualified);
	sql = psprintf("COMMENT ON SEQUENCE %s IS %s", qualified,
				   quote_literal_cstr("ticket sequence: counts reserved blocks; take values with snowid_ticket_next()"));
	if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "commenting sequence %s failed", qualified);

	/* the catalog row is written with the rights of its table's owner */
	args[0] = ObjectIdGetDatum(relid);
	args[1] = Int32GetDatum(shard);
	args[2] = Int32GetDatum(shards);
	args[3] = Int32GetDatum(block);
	args[4] = Int64GetDatum(start);
	args[5] = ObjectIdGetDatum(type);
	args[6] = Int64GetDatum(stamp);
	sql = psprintf("INSERT INTO %s.snowid_ticket "
				   "(seqrelid, shard, shards, block, start, type, stamp) "
				   "VALUES ($1::regclass, $2, $3, $4, $5, $6::regtype, $7)",
				   quote_identifier(get_namespace_name(extnsp)));
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(snowid_ticket_catalog_owner(extnsp),
						   save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	if (SPI_execute_with_args(sql, 7, argtypes, args, NULL, false, 0) !=
		SPI_OK_INSERT)
		elog(ERROR, "registering ticket sequence %s failed", qualified);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	SPI_finish();

	PG_RETURN_OID(relid);
}

/*
 * The slots of this database: what each ticket sequence has cached on this
 * server.  Read without the slot locks, so a row may be a moment out of
 * date.  Without shared memory, no rows.
 */
Datum
snowid_ticket_cache(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	SnowidTicketShared *shared = ticket_shared;

	InitMaterializedSRF(fcinfo, 0);
	if (shared == NULL)
		return (Datum) 0;		/* not preloaded: nothing cached */
	LWLockAcquire(shared->table_lock, LW_SHARED);
	for (int i = 0; i < shared->nslots; i++)
	{
		SnowidTicketSlot *slot = &shared->slots[i];
		Datum		values[5];
		bool		nulls[5] = {false, false, false, false, false};
		uint64		word;
		SnowidTicketBuf *buf;
		uint32		off;
		int64		left;

		if (!slot->in_use || slot->dbid != MyDatabaseId)
			continue;
		word = pg_atomic_read_u64(&slot->cur);
		off = (uint32) word;
		buf = &slot->buf[(word >> 32) & 1];
		left = off < buf->count ? buf->count - off : 0;
		values[0] = ObjectIdGetDatum(slot->relid);
		if (buf->count > 0)
		{
			values[1] = Int64GetDatum(buf->first);
			values[2] = Int64GetDatum((int64) ((uint64) buf->first +
											   (uint64) (buf->count - 1) *
											   (uint64) slot->spec.shards));
		}
		else
			nulls[1] = nulls[2] = true;
		if (slot->next_valid)
			left += slot->next_count;
		values[3] = Int64GetDatum(left);
		values[4] = Int64GetDatum(slot->blocks_reserved);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	LWLockRelease(shared->table_lock);
	return (Datum) 0;
}
