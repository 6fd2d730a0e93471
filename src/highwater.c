/*-------------------------------------------------------------------------
 *
 * highwater.c
 *	  The persisted high-water mark: a time below which this server will
 *	  never issue a snowid again, whatever happens to it or to its clock.
 *
 * The generator may only hand out positions below
 * SnowidShared.reserved_position.  Moving that bound up ("renewing the
 * reservation") first makes the new bound durable, then publishes it:
 *
 *	 1. a WAL record of snowid's custom resource manager, flushed (and, with
 *		synchronous replication, acknowledged by the synchronous standbys),
 *		so that standbys learn the bound and a promoted standby continues
 *		above everything its primary may have issued;
 *	 2. the file $PGDATA/snowid.highwater, one of whose two slots is
 *		rewritten in place and synced (see below), which every start (clean, after a crash, after kill -9) reads before any
 *		ID is issued.  WAL alone would not do: crash recovery replays only
 *		from the last checkpoint.
 *
 * The bound is stored as a timestamp, so it stays meaningful if a restart
 * changes the layout.  A renewal reserves SNOWID_RESERVE_MS beyond the last
 * issued tick and happens when less than half of that is left: one caller
 * does the I/O under renew_lock while the others keep issuing from what is
 * left.  Only when the window is used up does a caller wait for the renewal.
 * A clean shutdown lowers the bound to just above the last issued ID, so a
 * restart continues there; after a crash the server continues at the bound,
 * at most SNOWID_RESERVE_MS beyond the last ID.
 *
 * Replay (on a standby, or in crash recovery) raises the bound, the
 * generator's next position and the file, never lowers them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xloginsert.h"
#include "access/xlogreader.h"
#include "lib/stringinfo.h"
#include "port/pg_crc32c.h"
#include "miscadmin.h"
#include "replication/syncrep.h"
#include "snowid.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "utils/timestamp.h"

/*
 * Custom WAL resource manager ID.  Not (yet) registered on the PostgreSQL
 * wiki's list; change it here if it collides with another extension.
 */
#define SNOWID_RMGR_ID 151
#define SNOWID_RMGR_NAME "snowid"
#define XLOG_SNOWID_RESERVE 0x00

#define SNOWID_HIGHWATER_FILE "snowid.highwater"
#define SNOWID_HIGHWATER_TMP "snowid.highwater.tmp"
/* the format of version 1.1's first release: one line, replaced by rename */
#define SNOWID_HIGHWATER_MAGIC_V1 "snowid-highwater-1"
#define SNOWID_HIGHWATER_MAGIC "snowid-highwater-2"
/* two slots of one sector each, so that a torn write spoils one at most */
#define SNOWID_HIGHWATER_SLOT 512
#define SNOWID_HIGHWATER_SIZE (2 * SNOWID_HIGHWATER_SLOT)

/*
 * How far beyond the last issued tick (or the clock, if later) one renewal
 * reserves.  Short, because after a crash the server resumes at the bound
 * and may have to wait for the clock to come within snowid.max_lead of it;
 * long enough that renewals (a WAL flush and an fdatasync) stay rare: at
 * most eight a second.
 */
#define SNOWID_RESERVE_MS 250

typedef struct xl_snowid_reserve
{
	TimestampTz reserved_until; /* no ID of a tick starting at or after it */
	int32		node_id;		/* for pg_waldump-style descriptions */
} xl_snowid_reserve;

static void snowid_highwater_shutdown(int code, Datum arg);

/* ---- the file ---- */

/*
 * The file holds two slots, each one line of text padded with zero bytes to
 * a sector:
 *
 *	 snowid-highwater-2 <generation> <bound in us since 2000-01-01 UTC> <crc>
 *
 * where crc is the CRC-32C of the text before it, in hex.  A write fills the
 * slot of the next generation (generation % 2) in place and syncs it; the
 * bound it replaces is published only after that, so if a crash tears the
 * write, the other slot still holds a bound nothing was issued beyond.  This
 * costs one fdatasync per renewal instead of the four fsyncs of writing a
 * file aside and renaming it, which is reserved for creating the file.  The
 * newest valid slot wins.  A file in the one-line format of the first
 * release ("snowid-highwater-1 <bound>") is read too, and replaced at the
 * first write; it is also the format to write by hand.
 */

/* Format the slot of generation gen into slot (SNOWID_HIGHWATER_SLOT bytes). */
static void
snowid_highwater_format_slot(char *slot, uint64 gen, TimestampTz until)
{
	char		text[128];
	int			len;
	pg_crc32c	crc;

	len = snprintf(text, sizeof(text), "%s " UINT64_FORMAT " " INT64_FORMAT,
				   SNOWID_HIGHWATER_MAGIC, gen, (int64) until);
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, text, len);
	FIN_CRC32C(crc);
	memset(slot, 0, SNOWID_HIGHWATER_SLOT);
	snprintf(slot, SNOWID_HIGHWATER_SLOT, "%s %08x\n", text, (unsigned int) crc);
}

/* Parse one slot; false if it is empty, torn or damaged. */
static bool
snowid_highwater_parse_slot(const char *slot, uint64 *gen, TimestampTz *until)
{
	char		line[SNOWID_HIGHWATER_SLOT + 1];
	char		expect[SNOWID_HIGHWATER_SLOT];
	unsigned long long g;
	long long	u;
	unsigned int crc;

	memcpy(line, slot, SNOWID_HIGHWATER_SLOT);
	line[SNOWID_HIGHWATER_SLOT] = '\0';
	if (sscanf(line, SNOWID_HIGHWATER_MAGIC " %llu %lld %x", &g, &u, &crc) != 3 ||
		!IS_VALID_TIMESTAMP((TimestampTz) u))
		return false;
	snowid_highwater_format_slot(expect, (uint64) g, (TimestampTz) u);
	if (memcmp(expect, slot, SNOWID_HIGHWATER_SLOT) != 0)
		return false;			/* CRC, spelling or padding do not match */
	*gen = (uint64) g;
	*until = (TimestampTz) u;
	return true;
}

/*
 * Parse the file's contents: true and the newest bound and its generation
 * (0 for the one-line format), or false if nothing valid is in it.
 */
static bool
snowid_highwater_parse(const char *buf, int len, uint64 *gen, TimestampTz *until)
{
	bool		found = false;

	if (len < (int) SNOWID_HIGHWATER_SIZE &&
		strncmp(buf, SNOWID_HIGHWATER_MAGIC_V1 " ", strlen(SNOWID_HIGHWATER_MAGIC_V1) + 1) == 0)
	{
		char		line[SNOWID_HIGHWATER_SIZE];
		long long	value;
		char		rest;

		memcpy(line, buf, len);
		line[len] = '\0';
		if (sscanf(line, SNOWID_HIGHWATER_MAGIC_V1 " %lld %c", &value, &rest) != 1 ||
			!IS_VALID_TIMESTAMP((TimestampTz) value))
			return false;
		*gen = 0;
		*until = (TimestampTz) value;
		return true;
	}
	if (len != SNOWID_HIGHWATER_SIZE)
		return false;
	for (int i = 0; i < 2; i++)
	{
		uint64		g;
		TimestampTz u;

		if (snowid_highwater_parse_slot(buf + i * SNOWID_HIGHWATER_SLOT, &g, &u) &&
			(!found || g > *gen))
		{
			*gen = g;
			*until = u;
			found = true;
		}
	}
	return found;
}

/*
 * Read up to SNOWID_HIGHWATER_SIZE + 1 bytes of the open file fd into buf;
 * the length read, or -1 with errno set.
 */
static int
snowid_highwater_read_fd(int fd, char *buf)
{
	int			total = 0;

	for (;;)
	{
		ssize_t		got = pg_pread(fd, buf + total,
								   SNOWID_HIGHWATER_SIZE + 1 - total, total);

		if (got < 0)
			return -1;
		if (got == 0 || (total += got) > (int) SNOWID_HIGHWATER_SIZE)
			return total;
	}
}

/*
 * Read the persisted bound; DT_NOBEGIN if there is no file yet.  A file
 * that exists but cannot be read is fatal: starting from zero could reissue
 * IDs.
 */
static TimestampTz
snowid_highwater_read(void)
{
	char		buf[SNOWID_HIGHWATER_SIZE + 1];
	int			fd;
	int			len;
	uint64		gen;
	TimestampTz until;

	fd = OpenTransientFile(SNOWID_HIGHWATER_FILE, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		if (errno == ENOENT)
			return DT_NOBEGIN;
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", SNOWID_HIGHWATER_FILE)));
	}
	len = snowid_highwater_read_fd(fd, buf);
	if (len < 0)
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not read file \"%s\": %m", SNOWID_HIGHWATER_FILE)));
	CloseTransientFile(fd);
	if (!snowid_highwater_parse(buf, len, &gen, &until))
		ereport(FATAL,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("snowid high-water file \"%s\" is corrupt", SNOWID_HIGHWATER_FILE),
				 errdetail("snowid cannot know which IDs this server issued before, so it does not start."),
				 errhint("If you know no ID was issued after a time T, replace the file with the line \"%s <microseconds of T since 2000-01-01 UTC>\".",
						 SNOWID_HIGHWATER_MAGIC_V1)));
	return until;
}

/*
 * Write len bytes at offset into the open file fd (named path), sync its
 * data and close it.  Returns false if any step failed, having reported it
 * at elevel (a failed sync at data_sync_elevel, as PostgreSQL does).
 */
static bool
snowid_highwater_put(int fd, const char *path, const char *buf, int len,
					 off_t offset, int elevel)
{
	errno = 0;
	if (pg_pwrite(fd, buf, len, offset) != len)
	{
		if (errno == 0)
			errno = ENOSPC;
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", path)));
		CloseTransientFile(fd);
		return false;
	}
	if (pg_fdatasync(fd) != 0)
	{
		ereport(elevel == ERROR ? data_sync_elevel(ERROR) : elevel,
				(errcode_for_file_access(),
				 errmsg("could not fdatasync file \"%s\": %m", path)));
		CloseTransientFile(fd);
		return false;
	}
	if (CloseTransientFile(fd) != 0)
	{
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not close file \"%s\": %m", path)));
		return false;
	}
	return true;
}

/* Create the file with one slot, written aside and renamed into place. */
static bool
snowid_highwater_create(uint64 gen, TimestampTz until, int elevel)
{
	char		buf[SNOWID_HIGHWATER_SIZE];
	int			fd;

	memset(buf, 0, sizeof(buf));
	snowid_highwater_format_slot(buf + (gen % 2) * SNOWID_HIGHWATER_SLOT, gen, until);
	fd = OpenTransientFile(SNOWID_HIGHWATER_TMP, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
	if (fd < 0)
	{
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", SNOWID_HIGHWATER_TMP)));
		return false;
	}
	if (!snowid_highwater_put(fd, SNOWID_HIGHWATER_TMP, buf, sizeof(buf), 0, elevel))
		return false;
	return durable_rename(SNOWID_HIGHWATER_TMP, SNOWID_HIGHWATER_FILE, elevel) == 0;
}

/*
 * Make the bound durable in the file: in place, in the slot of the next
 * generation.  Returns false if it could not, having reported the failure at
 * elevel.
 */
static bool
snowid_highwater_write(TimestampTz until, int elevel)
{
	char		buf[SNOWID_HIGHWATER_SIZE + 1];
	int			fd;
	int			len;
	uint64		gen = 0;
	TimestampTz old;
	off_t		offset;

	fd = OpenTransientFile(SNOWID_HIGHWATER_FILE, O_RDWR | PG_BINARY);
	if (fd < 0)
	{
		if (errno == ENOENT)
			return snowid_highwater_create(1, until, elevel);
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", SNOWID_HIGHWATER_FILE)));
		return false;
	}
	len = snowid_highwater_read_fd(fd, buf);
	if (len != SNOWID_HIGHWATER_SIZE || !snowid_highwater_parse(buf, len, &gen, &old))
	{
		/* the one-line format, or a file damaged since start: replace it */
		CloseTransientFile(fd);
		return snowid_highwater_create(gen + 1, until, elevel);
	}
	gen++;
	snowid_highwater_format_slot(buf, gen, until);
	offset = (off_t) (gen % 2) * SNOWID_HIGHWATER_SLOT;
	return snowid_highwater_put(fd, SNOWID_HIGHWATER_FILE, buf,
								SNOWID_HIGHWATER_SLOT, offset, elevel);
}

/* ---- conversions ---- */

/* First position of the first tick starting at or after ts. */
static uint64
snowid_position_at(const SnowidLayout *layout, TimestampTz ts)
{
	int64		tick;

	if (ts == DT_NOBEGIN)
		return 0;
	tick = snowid_tick_of(layout, ts - 1) + 1;	/* ceiling */
	if (tick <= 0)
		return 0;
	if (tick > snowid_max_tick(layout))
		return snowid_position_end(layout);
	return (uint64) tick << layout->sequence_bits;
}

/* Raise an atomic to at least value. */
static void
snowid_atomic_raise(pg_atomic_uint64 *ptr, uint64 value)
{
	uint64		old = pg_atomic_read_u64(ptr);

	while (old < value && !pg_atomic_compare_exchange_u64(ptr, &old, value))
		;
}

/* ---- start-up ---- */

/*
 * Called once per shared-memory initialisation, in the postmaster, before
 * recovery: nothing below the persisted bound will be issued.
 */
void
snowid_highwater_load(SnowidShared *shared)
{
	TimestampTz until = snowid_highwater_read();
	uint64		position = snowid_position_at(&snowid_active_layout, until);

	pg_atomic_write_u64(&shared->next_position, position);
	pg_atomic_write_u64(&shared->reserved_position, position);
	if (!IsUnderPostmaster)
		on_shmem_exit(snowid_highwater_shutdown, (Datum) 0);
	/* 0 stands for "nothing reserved yet": real bounds lie after 2000 */
	pg_atomic_write_u64(&shared->reserved_until,
						until == DT_NOBEGIN ? 0 : (uint64) Max(until, 0));
}

/*
 * At a clean exit of the postmaster (every backend gone), lower the
 * persisted bound to just above the last issued position, so that the next
 * start continues there instead of at the reserved bound, with no wait.  On
 * any other exit, or if the write fails, the reserved bound stays: it is
 * higher, so still safe.
 */
static void
snowid_highwater_shutdown(int code, Datum arg)
{
	SnowidShared *shared = snowid_shared;
	const SnowidLayout *layout = &snowid_active_layout;
	uint64		next;
	TimestampTz until;

	if (code != 0 || shared == NULL)
		return;
	next = pg_atomic_read_u64(&shared->next_position);
	if (next == 0)
		return;
	/* the first tick with nothing issued in it */
	if (!snowid_tick_start(layout,
						   (int64) ((next + snowid_sequence_mask(layout)) >>
									layout->sequence_bits),
						   &until))
		return;
	if (until < (TimestampTz) pg_atomic_read_u64(&shared->reserved_until))
		(void) snowid_highwater_write(until, LOG);
}

/* ---- renewal ---- */

/* Ticks reserved ahead by one renewal (the layout is fixed once started). */
int64
snowid_highwater_window_ticks(const SnowidLayout *layout)
{
	static int64 window_ticks = 0;

	if (unlikely(window_ticks == 0))
		window_ticks = Max((SNOWID_RESERVE_MS * INT64CONST(1000) +
							layout->tick_us - 1) / layout->tick_us, 1);
	return window_ticks;
}

/*
 * Make sure positions up to and including last_tick's may be issued, and
 * reserve a window beyond.  With wait = false this is the early renewal at
 * half use: skipped if another caller is already at it.
 */
void
snowid_highwater_renew(SnowidShared *shared, const SnowidLayout *layout,
					   int64 last_tick, int64 wall_tick, bool wait)
{
	int64		window_ticks = snowid_highwater_window_ticks(layout);
	int64		from = Max(last_tick, wall_tick);
	int64		target;
	int64		reserved_tick;
	TimestampTz until;
	xl_snowid_reserve xlrec;
	XLogRecPtr	lsn;

	if (wait)
		LWLockAcquire(shared->renew_lock, LW_EXCLUSIVE);
	else if (!LWLockConditionalAcquire(shared->renew_lock, LW_EXCLUSIVE))
		return;

	/* Someone may have renewed while we waited for the lock. */
	reserved_tick = (int64) (pg_atomic_read_u64(&shared->reserved_position) >>
							 layout->sequence_bits);
	if (reserved_tick - from > window_ticks / 2)
	{
		LWLockRelease(shared->renew_lock);
		return;
	}

	target = Min(from + window_ticks, snowid_max_tick(layout) + 1);
	if (!snowid_tick_start(layout, target, &until))
		until = DT_NOEND - 1;	/* beyond timestamptz: cannot happen in practice */

	xlrec.reserved_until = until;
	xlrec.node_id = snowid_node_id;
	XLogBeginInsert();
	XLogRegisterData((char *) &xlrec, sizeof(xlrec));
	lsn = XLogInsert(SNOWID_RMGR_ID, XLOG_SNOWID_RESERVE);
	XLogFlush(lsn);
	SyncRepWaitForLSN(lsn, false);
	(void) snowid_highwater_write(until, ERROR);

	pg_atomic_write_u64(&shared->reserved_until, (uint64) until);
	pg_atomic_write_u64(&shared->reserved_position,
						(uint64) target << layout->sequence_bits);
	pg_atomic_fetch_add_u64(&shared->renewals, 1);
	LWLockRelease(shared->renew_lock);
}

/* ---- the resource manager ---- */

static void
snowid_redo(XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
	xl_snowid_reserve *xlrec = (xl_snowid_reserve *) XLogRecGetData(record);
	SnowidShared *shared = snowid_shared;
	uint64		position;

	if (info != XLOG_SNOWID_RESERVE)
		elog(PANIC, "snowid_redo: unknown op code %u", info);
	if (shared == NULL)
		elog(PANIC, "snowid_redo: shared memory is not initialised");

	if ((TimestampTz) pg_atomic_read_u64(&shared->reserved_until) >= xlrec->reserved_until)
		return;					/* already known (e.g. from the file) */

	(void) snowid_highwater_write(xlrec->reserved_until, ERROR);
	position = snowid_position_at(&snowid_active_layout, xlrec->reserved_until);
	snowid_atomic_raise(&shared->reserved_until, (uint64) xlrec->reserved_until);
	snowid_atomic_raise(&shared->reserved_position, position);
	snowid_atomic_raise(&shared->next_position, position);
}

static void
snowid_desc(StringInfo buf, XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;

	if (info == XLOG_SNOWID_RESERVE)
	{
		xl_snowid_reserve *xlrec = (xl_snowid_reserve *) XLogRecGetData(record);

		appendStringInfo(buf, "node %d reserved until %s", xlrec->node_id,
						 timestamptz_to_str(xlrec->reserved_until));
	}
}

static const char *
snowid_identify(uint8 info)
{
	if ((info & ~XLR_INFO_MASK) == XLOG_SNOWID_RESERVE)
		return "RESERVE";
	return NULL;
}

static RmgrData snowid_rmgr = {
	.rm_name = SNOWID_RMGR_NAME,
	.rm_redo = snowid_redo,
	.rm_desc = snowid_desc,
	.rm_identify = snowid_identify,
};

void
snowid_highwater_init(void)
{
	RegisterCustomRmgr(SNOWID_RMGR_ID, &snowid_rmgr);
}
