/*-------------------------------------------------------------------------
 *
 * pool.c
 *	  Pools on the member side: the ranges of registry pools this server
 *	  holds, in shared memory for every database, persisted before any of
 *	  their values is handed out.
 *
 * Each pool this server draws from has a slot (SNOWID_POOL_MAX of them,
 * never freed while the server runs).  A slot holds up to
 * SNOWID_POOL_RANGES ranges as the registry granted them; values are handed
 * out from the first, in order, from the offset next_off.  What the slot
 * would persist is its SnowidPoolState: the pool's facts (type, start,
 * maximum), the ranges, a floor (no value below it is ever handed out:
 * snowid_pool_skip), and durable_off, the offset in the first range below
 * which values may have been handed out.  A value is handed out only at an
 * offset below durable_off; taking past it first raises durable_off by
 * max(want, range size / 16) and persists the new state:
 *
 *	 1. a WAL record of snowid's resource manager (XLOG_SNOWID_POOL, the
 *		whole state of one pool with its change count gen), flushed, and
 *		acknowledged by synchronous standbys where there are any, so that
 *		standbys learn the ranges and a promoted one resumes above them;
 *	 2. the file $PGDATA/snowid.pools (every pool, written aside, synced
 *		and renamed into place), which every start reads in the postmaster
 *		before anything is handed out; crash recovery replays only records
 *		newer (by gen) than what the file says;
 *	 3. shared memory.
 * A crash thus resumes at durable_off (losing at most one chunk), a clean
 * shutdown (snowid_pool_close, from the worker) persists the exact offset,
 * truncates the ranges there and returns the unused tails for the worker
 * to give back.
 *
 * Locks: table_lock (exclusive) allocates slots, which are never freed;
 * each slot's lock protects everything in it; file_lock serialises writes
 * of the file and protects file_state (the last persisted state of every
 * slot, which a write of the file needs).  Order: slot lock, then
 * file_lock.  The WAL flush and the file write happen under the slot lock,
 * so takers of one pool wait for a persist while it runs (once per chunk).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <unistd.h>

#include "access/htup_details.h"
#include "access/xlog.h"
#include "access/xloginsert.h"
#include "access/xlogreader.h"
#include "catalog/pg_type_d.h"
#include "compat.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "pool.h"
#include "port/pg_crc32c.h"
#include "registry.h"
#include "replication/syncrep.h"
#include "snowid.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/numeric.h"
#include "utils/tuplestore.h"
#include "utils/timestamp.h"

#define SNOWID_POOLS_FILE "snowid.pools"
#define SNOWID_POOLS_TMP "snowid.pools.tmp"
#define SNOWID_POOLS_COPIED "snowid.pools.copied"	/* see snowid_pool_load */
#define SNOWID_POOLS_MAGIC "snowid-pools-1"
#define SNOWID_POOL_DETAIL_LEN 256
/* the most a wait for the registry lasts, in ms */
#define SNOWID_POOL_WAIT_MS 10000

/* What is persisted of one pool: the WAL record and a line of the file. */
typedef struct SnowidPoolState
{
	char		name[SNOWID_POOL_NAME_LEN];
	uint64		gen;			/* change count, raised by every persist */
	Oid			typid;			/* INT4OID, INT8OID; InvalidOid: no facts */
	int32		nranges;
	int64		start;
	int64		maxvalue;
	int64		floor;			/* nothing below it is handed out */
	uint64		durable_off;	/* offsets of ranges[0] below may be used */
	SnowidPoolRange ranges[SNOWID_POOL_RANGES];
} SnowidPoolState;

typedef struct SnowidPoolSlot
{
	LWLock	   *lock;
	bool		in_use;			/* also under table_lock */
	SnowidPoolState st;			/* as persisted, but for dropped ranges */
	uint64		next_off;		/* next offset of ranges[0] to hand out */
	SnowidPoolStatus status;
	bool		demand;			/* someone wants values: ask for ranges */
	char		request[SNOWID_POOL_REQUEST_LEN];	/* outstanding, "" if none */
	uint64		nrequests;
	char		detail[SNOWID_POOL_DETAIL_LEN];
	uint64		taken;			/* values handed out since start */
	uint64		rate_taken;		/* taken at rate_at */
	TimestampTz rate_at;
	double		rate;			/* values per second, smoothed */
} SnowidPoolSlot;

typedef struct SnowidPoolShared
{
	LWLock	   *table_lock;
	LWLock	   *file_lock;
	int			nused;			/* slots 0 .. nused - 1 are in use */
	Latch	   *worker_latch;
	pg_atomic_uint32 wake;		/* a taker woke the worker: serve the pools */
	bool		from_backup;	/* this start replays a base backup's WAL */
	TimestampTz key_epoch;		/* when this shared memory was set up */
	SnowidPoolState file_state[SNOWID_POOL_MAX];	/* under file_lock */
	bool		file_used[SNOWID_POOL_MAX];
	SnowidPoolSlot slots[SNOWID_POOL_MAX];
} SnowidPoolShared;

static SnowidPoolShared *snowid_pool_shared = NULL;

PG_FUNCTION_INFO_V1(snowid_pool_holdings);
PG_FUNCTION_INFO_V1(snowid_pool_take_sql);
PG_FUNCTION_INFO_V1(snowid_pool_skip_sql);
PG_FUNCTION_INFO_V1(snowid_pool_untake_sql);

/* ---------- ranges ---------- */

/* Number of values of a range; ranges of 2^64 values are refused at grant. */
static inline uint64
snowid_range_size(const SnowidPoolRange *r)
{
	return (uint64) r->last - (uint64) r->first + 1;
}

static inline int64
snowid_range_value(const SnowidPoolRange *r, uint64 off)
{
	return (int64) ((uint64) r->first + off);
}

static bool
snowid_pool_name_ok(const char *name)
{
	size_t		len = strlen(name);

	if (len == 0 || len >= SNOWID_POOL_NAME_LEN)
		return false;
	for (const char *p = name; *p; p++)
		if (!isalnum((unsigned char) *p) && *p != '_' && *p != '-' && *p != '.')
			return false;
	return true;
}

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
static void
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

static SnowidPoolShared *
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

/* Put a loaded or replayed state into a free slot; table_lock held. */
static int
snowid_pool_slot_from_state(const SnowidPoolState *st)
{
	SnowidPoolSlot *slot;
	int			idx = snowid_pool_shared->nused;

	if (idx >= SNOWID_POOL_MAX)
		return -1;
	slot = &snowid_pool_shared->slots[idx];
	slot->st = *st;
	slot->next_off = st->durable_off;
	snowid_state_settle(&slot->st, &slot->next_off);
	slot->status = OidIsValid(st->typid) ? SNOWID_POOL_OK : SNOWID_POOL_WAITING;
	slot->request[0] = '\0';
	slot->detail[0] = '\0';
	slot->in_use = true;
	snowid_pool_shared->nused++;
	return idx;
}

/* ---------- the file ---------- */

/*
 * The file $PGDATA/snowid.pools: the line "snowid-pools-1", then one line
 * per pool:
 *
 *	 pool <name> <gen> <typid> <start> <maxvalue> <floor> <durable_off>
 *		<nranges> [<first> <last>]... <crc>
 *
 * (one line; crc is the CRC-32C of the text before it, in hex), then
 * "end <number of pools>".  Anything else is corruption.
 */
static void
snowid_pool_format_line(StringInfo buf, const SnowidPoolState *st)
{
	int			from = buf->len;
	pg_crc32c	crc;

	appendStringInfo(buf, "pool %s " UINT64_FORMAT " %u " INT64_FORMAT " "
					 INT64_FORMAT " " INT64_FORMAT " " UINT64_FORMAT " %d",
					 st->name, st->gen, st->typid, st->start, st->maxvalue,
					 st->floor, st->durable_off, st->nranges);
	for (int i = 0; i < st->nranges; i++)
		appendStringInfo(buf, " " INT64_FORMAT " " INT64_FORMAT,
						 st->ranges[i].first, st->ranges[i].last);
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, buf->data + from, buf->len - from);
	FIN_CRC32C(crc);
	appendStringInfo(buf, " %08x\n", (unsigned int) crc);
}

/* Next space-separated token of *p (advanced), or NULL. */
static char *
snowid_pool_token(char **p)
{
	char	   *s = *p;
	char	   *t;

	if (*s == '\0')
		return NULL;
	t = s;
	while (*s != '\0' && *s != ' ')
		s++;
	if (*s == ' ')
	{
		*s++ = '\0';
		if (*s == ' ' || *s == '\0')
			return NULL;		/* two spaces, or a trailing one */
	}
	*p = s;
	return t;
}

static bool
snowid_pool_int(char **p, bool is_unsigned, int64 *value)
{
	char	   *t = snowid_pool_token(p);
	char	   *end;

	if (t == NULL || !(isdigit((unsigned char) t[0]) ||
					   (!is_unsigned && t[0] == '-' && isdigit((unsigned char) t[1]))))
		return false;
	errno = 0;
	if (is_unsigned)
		*value = (int64) strtoull(t, &end, 10);
	else
		*value = (int64) strtoll(t, &end, 10);
	return errno == 0 && *end == '\0';
}

/* Is a state what this code could have written? */
static bool
snowid_pool_state_sane(const SnowidPoolState *st)
{
	if (!snowid_pool_name_ok(st->name) || st->nranges < 0 ||
		st->nranges > SNOWID_POOL_RANGES)
		return false;
	if (OidIsValid(st->typid) &&
		((st->typid != INT4OID && st->typid != INT8OID) ||
		 st->maxvalue != (st->typid == INT4OID ? PG_INT32_MAX : PG_INT64_MAX) ||
		 st->start > st->maxvalue))
		return false;
	for (int i = 0; i < st->nranges; i++)
		if (st->ranges[i].first > st->ranges[i].last ||
			snowid_range_size(&st->ranges[i]) == 0 ||
			(OidIsValid(st->typid) &&
			 (st->ranges[i].first < st->start ||
			  st->ranges[i].last > st->maxvalue)))
			return false;
	if (st->nranges > 0 && st->durable_off > snowid_range_size(&st->ranges[0]))
		return false;
	return true;
}

/* Parse one line (NUL-terminated, no newline) into st. */
static bool
snowid_pool_parse_line(const char *line, SnowidPoolState *st)
{
	char	   *copy = pstrdup(line);
	char	   *p = copy;
	char	   *t;
	int64		v;
	StringInfoData again;
	bool		ok = false;

	memset(st, 0, sizeof(*st));
	if ((t = snowid_pool_token(&p)) == NULL || strcmp(t, "pool") != 0)
		goto done;
	if ((t = snowid_pool_token(&p)) == NULL || strlen(t) >= SNOWID_POOL_NAME_LEN)
		goto done;
	strlcpy(st->name, t, SNOWID_POOL_NAME_LEN);
	if (!snowid_pool_int(&p, true, &v))
		goto done;
	st->gen = (uint64) v;
	if (!snowid_pool_int(&p, true, &v) || v > PG_UINT32_MAX)
		goto done;
	st->typid = (Oid) v;
	if (!snowid_pool_int(&p, false, &st->start) ||
		!snowid_pool_int(&p, false, &st->maxvalue) ||
		!snowid_pool_int(&p, false, &st->floor) ||
		!snowid_pool_int(&p, true, &v))
		goto done;
	st->durable_off = (uint64) v;
	if (!snowid_pool_int(&p, false, &v) || v < 0 || v > SNOWID_POOL_RANGES)
		goto done;
	st->nranges = (int32) v;
	for (int i = 0; i < st->nranges; i++)
		if (!snowid_pool_int(&p, false, &st->ranges[i].first) ||
			!snowid_pool_int(&p, false, &st->ranges[i].last))
			goto done;
	if (!snowid_pool_state_sane(st))
		goto done;
	/* the rest must be the CRC: compare with the line this state makes */
	initStringInfo(&again);
	snowid_pool_format_line(&again, st);
	again.data[--again.len] = '\0'; /* the newline */
	ok = strcmp(again.data, line) == 0;
	pfree(again.data);
done:
	pfree(copy);
	return ok;
}

/* Read and parse the file into states; -1 if there is none.  FATAL if bad. */
static int
snowid_pool_read_file(SnowidPoolState *states)
{
	FILE	   *f;
	char		line[1024];
	int			n = 0;
	int			lineno = 0;
	bool		ended = false;
	const char *why = NULL;

	f = AllocateFile(SNOWID_POOLS_FILE, "r");
	if (f == NULL)
	{
		if (errno == ENOENT)
			return -1;
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", SNOWID_POOLS_FILE)));
	}
	while (why == NULL && fgets(line, sizeof(line), f) != NULL)
	{
		size_t		len = strlen(line);
		int			count;

		lineno++;
		if (len == 0 || line[len - 1] != '\n')
		{
			why = "a line is cut short or too long";
			break;
		}
		line[len - 1] = '\0';
		if (ended)
			why = "text follows the end line";
		else if (lineno == 1)
		{
			if (strcmp(line, SNOWID_POOLS_MAGIC) != 0)
				why = "the first line is not \"" SNOWID_POOLS_MAGIC "\"";
		}
		else if (strncmp(line, "end ", 4) == 0)
		{
			if (sscanf(line, "end %d", &count) != 1 || count != n ||
				strcmp(line, psprintf("end %d", n)) != 0)
				why = "the end line does not match the pools listed";
			ended = true;
		}
		else if (n >= SNOWID_POOL_MAX)
			why = "it lists more pools than a server holds";
		else if (!snowid_pool_parse_line(line, &states[n]))
			why = psprintf("line %d is not a valid pool line", lineno);
		else
		{
			for (int i = 0; i < n; i++)
				if (strcmp(states[i].name, states[n].name) == 0)
					why = psprintf("pool \"%s\" is listed twice", states[n].name);
			n++;
		}
	}
	if (why == NULL && ferror(f))
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not read file \"%s\": %m", SNOWID_POOLS_FILE)));
	FreeFile(f);
	if (why == NULL && !ended)
		why = "it has no end line";
	if (why != NULL)
		ereport(FATAL,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("snowid pool file \"%s\" is corrupt", SNOWID_POOLS_FILE),
				 errdetail("%s; snowid cannot know which values of its ranges were handed out, so it does not start.",
						   snowid_sentence(why)),
				 errhint("Restore the file from a backup, or remove it to give up the ranges it held: their unused values are lost, and pooled tickets fetch new ranges.")));
	return n;
}

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

static void
snowid_pool_load(void)
{
	SnowidPoolState states[SNOWID_POOL_MAX];
	int			n = snowid_pool_read_file(states);
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
	bool		from_backup = (marked || access("backup_label", F_OK) == 0) &&
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
			dropped += snowid_state_give_up(&states[i]);
			states[i].gen += UINT64CONST(1) << 40;
		}
		idx = snowid_pool_slot_from_state(&states[i]);
		snowid_pool_shared->file_state[idx] = states[i];
		snowid_pool_shared->file_used[idx] = true;
		last_idx = idx;
	}
	if (from_backup && last_idx >= 0)
	{
		snowid_pool_write_file(last_idx, &snowid_pool_shared->file_state[last_idx], FATAL);
		ereport(LOG,
				(errmsg("snowid gave up the pool ranges this data directory was copied with (" INT64_FORMAT " values)",
						dropped),
				 errdetail("The server starts from a base backup (backup_label is present): the ranges belong to the server it was copied from."),
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
	snowid_pool_shared->file_used[idx] = true;
	initStringInfo(&buf);
	appendStringInfoString(&buf, SNOWID_POOLS_MAGIC "\n");
	for (int i = 0; i < SNOWID_POOL_MAX; i++)
		if (snowid_pool_shared->file_used[i])
		{
			snowid_pool_format_line(&buf, &snowid_pool_shared->file_state[i]);
			n++;
		}
	appendStringInfo(&buf, "end %d\n", n);
	(void) snowid_write_durably(SNOWID_POOLS_FILE, SNOWID_POOLS_TMP,
								buf.data, buf.len, elevel);
	pfree(buf.data);
}

/*
 * Persist the state st of slot idx (whose lock the caller holds): WAL,
 * flushed and, with synchronous replication, acknowledged; then the file.
 * The caller publishes st in shared memory afterwards.
 */
static void
snowid_pool_persist(int idx, SnowidPoolState *st)
{
	XLogRecPtr	lsn;

	if (RecoveryInProgress())
		elog(ERROR, "snowid pool state cannot be persisted during recovery");
	st->gen = snowid_pool_shared->slots[idx].st.gen + 1;
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
	LWLockAcquire(snowid_pool_shared->file_lock, LW_EXCLUSIVE);
	PG_TRY();
	{
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
static void
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

void
snowid_pool_redo(XLogReaderState *record)
{
	SnowidPoolState st;
	SnowidPoolSlot *slot;
	int			idx = -1;

	if (snowid_pool_shared == NULL)
		elog(PANIC, "snowid_pool_redo: shared memory is not initialised");
	if (XLogRecGetDataLen(record) != sizeof(SnowidPoolState))
		elog(PANIC, "snowid_pool_redo: record of %u bytes, expected %zu",
			 XLogRecGetDataLen(record), sizeof(SnowidPoolState));
	memcpy(&st, XLogRecGetData(record), sizeof(st));
	st.name[SNOWID_POOL_NAME_LEN - 1] = '\0';
	/*
	 * The WAL of the server this one was copied from: not our ranges; and
	 * a change count above the rest of that WAL, should this recovery be
	 * interrupted and resumed.
	 */
	if (snowid_pool_shared->from_backup)
	{
		(void) snowid_state_give_up(&st);
		st.gen += UINT64CONST(1) << 40;
	}

	LWLockAcquire(snowid_pool_shared->table_lock, LW_EXCLUSIVE);
	for (int i = 0; i < snowid_pool_shared->nused; i++)
		if (strcmp(snowid_pool_shared->slots[i].st.name, st.name) == 0)
			idx = i;
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

	if (XLogRecGetDataLen(record) != sizeof(SnowidPoolState))
		return;
	memcpy(&st, XLogRecGetData(record), sizeof(st));
	st.name[SNOWID_POOL_NAME_LEN - 1] = '\0';
	/*
	 * The WAL of the server this one was copied from: not our ranges; and
	 * a change count above the rest of that WAL, should this recovery be
	 * interrupted and resumed.
	 */
	if (snowid_pool_shared->from_backup)
	{
		(void) snowid_state_give_up(&st);
		st.gen += UINT64CONST(1) << 40;
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

/* ---------- for takers ---------- */

static void
snowid_pool_wake_worker(void)
{
	Latch	   *latch = snowid_pool_shared->worker_latch;

	pg_atomic_write_u32(&snowid_pool_shared->wake, 1);
	if (latch != NULL)
		SetLatch(latch);
}

static int
snowid_pool_find(const char *name)
{
	for (int i = 0; i < snowid_pool_shared->nused; i++)
		if (strcmp(snowid_pool_shared->slots[i].st.name, name) == 0)
			return i;
	return -1;
}

/* The registry's state and why, as a sentence for messages. */
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

static char *
snowid_pool_registry_text(void)
{
	SnowidRegistryShared copy;

	if (!snowid_registry_named() || snowid_registry == NULL)
		return pstrdup("No registry is named (snowid.registry is empty).");
	snowid_registry_read(snowid_registry, &copy);
	if (copy.detail[0] != '\0')
		return psprintf("The registry is %s: %s", snowid_state_name(copy.state),
						snowid_sentence(copy.detail));
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

	LWLockAcquire(shared->table_lock, LW_SHARED);
	idx = snowid_pool_find(name);
	LWLockRelease(shared->table_lock);
	if (idx < 0 && wait_facts && !snowid_registry_named())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the registry has not told this server about pool \"%s\"", name),
				 errdetail("%s", snowid_pool_registry_text()),
				 errhint("Set snowid.registry to the connection string of the registry that has the pool, and reload.")));
	if (idx < 0)
	{
		LWLockAcquire(shared->table_lock, LW_EXCLUSIVE);
		idx = snowid_pool_find(name);
		if (idx < 0 && shared->nused < SNOWID_POOL_MAX)
		{
			SnowidPoolState empty;

			memset(&empty, 0, sizeof(empty));
			strlcpy(empty.name, name, SNOWID_POOL_NAME_LEN);
			idx = snowid_pool_slot_from_state(&empty);
			created = true;
		}
		LWLockRelease(shared->table_lock);
		if (idx < 0)
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("this server cannot draw from pool \"%s\"", name),
					 errdetail("It already draws from %d pools, the most it can.",
							   SNOWID_POOL_MAX)));
	}
	if (!wait_facts)
	{
		if (created)
			snowid_pool_wake_worker();
		return idx;
	}

	slot = &shared->slots[idx];
	/* ask again about a pool the registry did not have: it may have it now */
	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	if (slot->status == SNOWID_POOL_UNKNOWN)
	{
		slot->status = SNOWID_POOL_WAITING;
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
		if (known)
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
			slot->status == SNOWID_POOL_CLOSED;
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

static void
snowid_pool_refuse_standby(const char *name)
{
	ereport(ERROR,
			(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
			 errmsg("cannot take values of pool \"%s\" during recovery", name),
			 errdetail("A standby holds its primary's ranges only to continue them after promotion."),
			 errhint("Take values on the primary.")));
}

/* Does the slot want the worker to fetch a range?  Slot lock held. */
static bool
snowid_pool_wants(SnowidPoolSlot *slot)
{
	if (slot->status == SNOWID_POOL_CLOSED || slot->status == SNOWID_POOL_UNKNOWN)
		return false;
	if (!OidIsValid(slot->st.typid))
		return true;
	if (slot->st.nranges == 0)
		return slot->demand;
	return slot->st.nranges == 1 &&
		slot->next_off > snowid_range_size(&slot->st.ranges[0]) / 2;
}

bool
snowid_pool_take(int idx, int64 want, int64 *first, int64 *count)
{
	SnowidPoolSlot *slot = &snowid_pool_shared->slots[idx];
	SnowidPoolRange *r;
	uint64		size;
	uint64		n;
	bool		wake;

	uint64		gate = snowid_pool_gate();

	Assert(want > 0);
	if (RecoveryInProgress())
		snowid_pool_refuse_standby(slot->st.name);
	if (SNOWID_GATE_NODE(gate) < 0)
		return false;			/* snowid_pool_error_none says why */
	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
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

/* Values in hand of a slot, capped at PG_INT64_MAX; slot lock held. */
static int64
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

/* ---------- for the worker ---------- */

void
snowid_pool_set_worker_latch(Latch *latch)
{
	if (snowid_pool_shared != NULL)
		snowid_pool_shared->worker_latch = latch;
}

/* A failure the worker met for pool idx, shown as its detail. */
void
snowid_pool_note(int idx, const char *detail)
{
	SnowidPoolSlot *slot = &snowid_pool_shared->slots[idx];

	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	strlcpy(slot->detail, detail, SNOWID_POOL_DETAIL_LEN);
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

bool
snowid_pool_need(int idx, int64 rate_want, SnowidPoolNeed *need)
{
	SnowidPoolSlot *slot = &snowid_pool_shared->slots[idx];

	memset(need, 0, sizeof(*need));
	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	strlcpy(need->name, slot->st.name, SNOWID_POOL_NAME_LEN);
	need->nheld = slot->st.nranges;
	memcpy(need->held, slot->st.ranges, sizeof(need->held));
	need->need = snowid_pool_wants(slot) &&
		slot->st.nranges < SNOWID_POOL_RANGES;
	if (need->need)
	{
		/* the facts alone while no one has asked for values */
		need->want = !OidIsValid(slot->st.typid) && !slot->demand ? 0 :
			Max(rate_want, SNOWID_POOL_MIN_RANGE);
		if (slot->request[0] == '\0')
		{
			const char *start = snowid_registry != NULL ?
				snowid_registry->start_id : "";

			snprintf(slot->request, SNOWID_POOL_REQUEST_LEN,
					 "%s-" INT64_FORMAT "-" UINT64_FORMAT,
					 start, snowid_pool_shared->key_epoch, ++slot->nrequests);
		}
		strlcpy(need->request, slot->request, SNOWID_POOL_REQUEST_LEN);
	}
	LWLockRelease(slot->lock);
	return need->need;
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
		/* ask afresh next time, under a new key */
		slot->request[0] = '\0';
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
	if (slot->status != SNOWID_POOL_CLOSED)
		slot->status = status == SNOWID_POOL_OK && !OidIsValid(slot->st.typid) ?
			SNOWID_POOL_WAITING : status;
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
			/*
			 * Over a second at least: the worker also runs right after a
			 * taker woke it, and a block taken a moment ago would make a
			 * rate of millions a second out of a few milliseconds.
			 */
			double		secs = (double) (now - slot->rate_at) / 1e6;
			double		seen = (double) (slot->taken - slot->rate_taken) / secs;
			/* weigh the last minute most */
			double		w = Min(1.0, secs / 60.0);

			slot->rate = slot->rate == 0 ? seen : slot->rate + w * (seen - slot->rate);
			slot->rate_at = now;
			slot->rate_taken = slot->taken;
		}
		LWLockRelease(slot->lock);
	}
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

/* ---------- SQL ---------- */

static const char *
snowid_pool_state_text(SnowidPoolSlot *slot)
{
	switch (slot->status)
	{
		case SNOWID_POOL_WAITING:
			return "waiting";
		case SNOWID_POOL_OK:
			return slot->request[0] != '\0' && snowid_pool_wants(slot) &&
				slot->st.nranges > 0 ? "fetching" : "ok";
		case SNOWID_POOL_EMPTY:
			return "empty";
		case SNOWID_POOL_UNKNOWN:
			return "unknown";
		case SNOWID_POOL_CLOSED:
			return "closed";
	}
	return "unknown";
}

Datum
snowid_pool_holdings(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			n;

	InitMaterializedSRF(fcinfo, 0);
	if (snowid_pool_shared == NULL)
		return (Datum) 0;
	n = snowid_pool_slots();
	for (int i = 0; i < n; i++)
	{
		SnowidPoolSlot *slot = &snowid_pool_shared->slots[i];
		Datum		values[11];
		bool		nulls[11] = {false};
		int64		in_hand;
		double		rate;

		LWLockAcquire(slot->lock, LW_EXCLUSIVE);
		snowid_state_settle(&slot->st, &slot->next_off);
		values[0] = CStringGetTextDatum(slot->st.name);
		values[1] = ObjectIdGetDatum(slot->st.typid);
		nulls[1] = !OidIsValid(slot->st.typid);
		values[2] = CStringGetTextDatum(snowid_pool_state_text(slot));
		if (slot->st.nranges > 0)
		{
			SnowidPoolRange *r = &slot->st.ranges[0];

			values[3] = Int64GetDatum(r->first);
			values[4] = Int64GetDatum(r->last);
			values[5] = Int64GetDatum(snowid_range_value(r, slot->next_off));
		}
		else
			nulls[3] = nulls[4] = nulls[5] = true;
		in_hand = snowid_pool_in_hand_locked(slot);
		values[6] = Int64GetDatum(in_hand);
		values[7] = Int32GetDatum(slot->st.nranges);
		rate = slot->rate;
		values[8] = DirectFunctionCall1(float8_numeric, Float8GetDatum(rate));
		nulls[8] = slot->rate_at == 0;
		if (rate > 0 && (double) in_hand / rate < 1e12)
		{
			Interval   *left = palloc0(sizeof(Interval));

			left->time = (int64) rint((double) in_hand / rate) * USECS_PER_SEC;
			values[9] = IntervalPGetDatum(left);
		}
		else
			nulls[9] = true;
		values[10] = CStringGetTextDatum(slot->detail);
		nulls[10] = slot->detail[0] == '\0';
		LWLockRelease(slot->lock);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

Datum
snowid_pool_take_sql(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int64		want = PG_GETARG_INT64(1);
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {true, true, false};
	int			idx;
	int64		first;
	int64		count;
	SnowidPoolSlot *slot;
	const char *state;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (want < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot take %lld values of pool \"%s\"", (long long) want, name),
				 errdetail("The number of values must be 0 (only attach) or more.")));
	if (RecoveryInProgress())
		snowid_pool_refuse_standby(name);
	idx = snowid_pool_attach(name, false);
	slot = &snowid_pool_shared->slots[idx];
	if (want > 0 && snowid_pool_take(idx, want, &first, &count))
	{
		values[0] = Int64GetDatum(first);
		values[1] = Int64GetDatum(first + (count - 1));
		nulls[0] = nulls[1] = false;
		state = "ok";
	}
	else
	{
		LWLockAcquire(slot->lock, LW_EXCLUSIVE);
		slot->demand = true;
		switch (slot->status)
		{
			case SNOWID_POOL_EMPTY:
				state = "empty";
				break;
			case SNOWID_POOL_UNKNOWN:
				state = "unknown";
				break;
			case SNOWID_POOL_CLOSED:
				state = "closed";
				break;
			default:
				state = want == 0 && slot->st.nranges > 0 ? "ok" : "wait";
				break;
		}
		LWLockRelease(slot->lock);
		snowid_pool_wake_worker();
	}
	values[2] = CStringGetTextDatum(state);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

Datum
snowid_pool_skip_sql(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int64		through = PG_GETARG_INT64(1);
	int			idx;
	SnowidPoolSlot *slot;
	SnowidPoolState st;
	uint64		next_off;

	if (RecoveryInProgress())
		snowid_pool_refuse_standby(name);
	idx = snowid_pool_attach(name, false);
	slot = &snowid_pool_shared->slots[idx];
	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	if (through == PG_INT64_MAX || (slot->st.floor > through))
	{
		/* nothing above, or nothing new: the floor stays or goes to the end */
		if (through == PG_INT64_MAX && slot->st.nranges > 0)
		{
			st = slot->st;
			st.nranges = 0;
			st.durable_off = 0;
			snowid_pool_persist(idx, &st);
			slot->st = st;
			slot->next_off = 0;
		}
		LWLockRelease(slot->lock);
		PG_RETURN_VOID();
	}
	st = slot->st;
	next_off = slot->next_off;
	st.floor = through + 1;
	snowid_state_settle(&st, &next_off);
	snowid_pool_persist(idx, &st);
	slot->st = st;
	slot->next_off = next_off;
	LWLockRelease(slot->lock);
	snowid_pool_wake_worker();
	PG_RETURN_VOID();
}

Datum
snowid_pool_untake_sql(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int64		first = PG_GETARG_INT64(1);
	int64		last = PG_GETARG_INT64(2);
	int			idx;
	SnowidPoolSlot *slot;
	bool		done = false;

	if (RecoveryInProgress())
		snowid_pool_refuse_standby(name);
	idx = snowid_pool_attach(name, false);
	slot = &snowid_pool_shared->slots[idx];
	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	if (slot->status != SNOWID_POOL_CLOSED && slot->st.nranges > 0 &&
		first <= last && slot->next_off > 0)
	{
		SnowidPoolRange *r = &slot->st.ranges[0];

		/* only the values taken last, and none of them since */
		if (first >= r->first && first >= slot->st.floor &&
			last == snowid_range_value(r, slot->next_off - 1))
		{
			slot->next_off = (uint64) first - (uint64) r->first;
			done = true;
		}
	}
	LWLockRelease(slot->lock);
	PG_RETURN_BOOL(done);
}
