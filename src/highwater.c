/*-------------------------------------------------------------------------
 *
 * highwater.c
 *	  The persisted high-water mark: an ID below which this server will
 *	  never issue a snowid again, whatever happens to it, to its clock or to
 *	  its layout.
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
 *		rewritten in place and synced (see below), which every start (clean,
 *		after a crash, after kill -9) reads before any ID is issued.  WAL
 *		alone would not do: crash recovery replays only from the last
 *		checkpoint.
 *
 * Both hold the bound as an ID (every ID this server issued lies below it)
 * together with the layout and node ID it was issued under.  A start, or
 * the replay of a record, under another layout continues at the first
 * position whose ID lies at or above the bound
 * (snowid_position_at_or_above); a start refuses when the new layout could
 * reach that position only further ahead of the clock than max_lead and
 * max_wait allow (snowid_continuation, continuation.c, which ALTER SYSTEM on
 * a layout parameter applies too, to the bound of the IDs issued so far).
 *
 * A renewal reserves SNOWID_RESERVE_MS beyond the last issued tick and
 * happens when less than half of that is left: one caller does the I/O
 * under renew_lock while the others keep issuing from what is left.  Only
 * when the window is used up does a caller wait for the renewal.  A clean
 * shutdown lowers the bound to just above the last issued ID, so a restart
 * continues there; after a crash the server continues at the bound, at most
 * SNOWID_RESERVE_MS beyond the last ID.
 *
 * Replay (on a standby, or in crash recovery) raises the bound and the
 * file, never lowers them; rmgr.c then has the generator raise its next
 * position to the bound.  The start (snowid_highwater_load) sets the bound
 * and returns its position, where the generator starts.
 *
 * The first time a bound is persisted, the marker file $PGDATA/snowid.issued
 * is created as well: a start that finds it but no snowid.highwater refuses,
 * because the data directory has issued IDs and nothing says which.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <errno.h>
#include <unistd.h>

#include "access/xlog.h"
#include "access/xloginsert.h"
#include "access/xlogreader.h"
#include "boot_record.h"
#include "clock.h"
#include "continuation.h"
#include "guc.h"
#include "highwater.h"
#include "highwater_file.h"
#include "layout.h"
#include "lease.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "port/pg_crc32c.h"
#include "replication/syncrep.h"
#include "state.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "utils/timestamp.h"
#include "wal.h"

/*
 * How far beyond the last issued tick (or the clock, if later) one renewal
 * reserves.  Short, because after a crash the server resumes at the bound
 * and may have to wait for the clock to come within snowid.max_lead of it;
 * long enough that renewals (a WAL flush and an fdatasync) stay rare: at
 * most eight a second.
 */
#define SNOWID_RESERVE_MS 250

static void snowid_highwater_shutdown(int code, Datum arg);

/* ---- bounds and layouts ---- */

/* The bound that covers the positions below position, in this server's terms. */
static void
snowid_bound_here(SnowidBound *b, uint64 position)
{
	const SnowidLayout *layout = &snowid_active_layout;

	b->has_layout = true;
	b->until = 0;
	b->layout = *layout;
	b->node_id = snowid_node_in_force();
	b->bound = snowid_bound_of_position(layout, position, Max(b->node_id, 0));
}

/*
 * Was the bound issued under the layout in force?  While the registry has
 * not yet assigned this server a node, only the layout is compared: the
 * node it assigns continues above the bound all the same.
 */
static bool
snowid_bound_is_here(const SnowidBound *b)
{
	int			node = snowid_node_in_force();

	return !b->has_layout ||
		snowid_layout_same(&b->layout, node < 0 ? b->node_id : node,
						   &snowid_active_layout, b->node_id);
}

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

/* The position in this server's layout where a bound lets the stream go on. */
static uint64
snowid_bound_position(const SnowidBound *b)
{
	const SnowidLayout *layout = &snowid_active_layout;

	if (!b->has_layout)
		return snowid_position_at(layout, b->until);
	return snowid_position_at_or_above(layout, Max(snowid_node_in_force(), 0), b->bound);
}

/* Start of the first tick with no position below position (for display). */
static TimestampTz
snowid_position_until(const SnowidLayout *layout, uint64 position)
{
	TimestampTz until;
	int64		tick = (int64) ((position + snowid_sequence_mask(layout)) >>
								layout->sequence_bits);

	if (position >= snowid_position_end(layout) ||
		!snowid_tick_start(layout, tick, &until))
		return DT_NOEND - 1;
	return until;
}

/*
 * A start under a layout (or node ID) other than the bound's: go on at
 * position (where the bound lies in the layout in force) if the
 * continuation rule lets it, saying so in the log; otherwise refuse to
 * start.
 */
static void
snowid_check_layout_change(const SnowidBound *b, uint64 position)
{
	const SnowidLayout *layout = &snowid_active_layout;
	int32		node_id = snowid_node_in_force();
	int32		node = Max(node_id, 0);
	TimestampTz now = snowid_clock_now();
	SnowidContinuation c;
	char	   *old_until;
	char	   *next_text;
	StringInfoData changes;
	StringInfoData previous;

	initStringInfo(&changes);
	initStringInfo(&previous);
	snowid_describe_change(&b->layout, b->node_id, layout, node_id,
						   &changes, &previous);

	if (!snowid_continuation(layout, node_id, b->bound, now, &c))
	{
		uint64		old_first = snowid_position_at_or_above(&b->layout, 0, b->bound);
		TimestampTz old_start;

		old_until = snowid_tick_start(&b->layout,
									  (int64) (old_first >> b->layout.sequence_bits),
									  &old_start) ?
			psprintf("the tick starting at %s", timestamptz_to_str(old_start)) :
			pstrdup("beyond the range of timestamps");
		ereport(FATAL,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowid layout changed (%s) and cannot continue above the IDs already issued",
						changes.data),
				 errdetail("Every ID this server issued is below " UINT64_FORMAT " (%s under the previous layout). The new layout would issue %s now; %s.",
						   b->bound, old_until,
						   snowid_issue_now_text(layout, node_id, now),
						   snowid_continuation_refusal_text(layout, node_id,
															&c, now)),
				 errhint("Restore the previous settings (%s), or choose a layout under which the IDs of today lie above " UINT64_FORMAT ": an earlier snowid.epoch, a shorter snowid.tick or more node and sequence bits make the IDs of a given time larger.",
						 previous.data, b->bound)));
	}
	Assert(c.position == position);

	next_text = c.expressible ?
		psprintf(INT64_FORMAT " or above (the tick starting at %s, %.3f s %s the clock now)",
				 snowid_id_from_position(layout, position, node),
				 timestamptz_to_str(c.start),
				 (double) (c.start > now ? c.start - now : now - c.start) / 1e6,
				 c.start > now ? "ahead of" : "behind") :
		pstrdup("none (the layout has no ID above them)");
	ereport(LOG,
			(errmsg("snowid continues under a changed layout (%s)", changes.data),
			 errdetail("Every ID issued before is below " UINT64_FORMAT "; the next ID will be %s.",
					   b->bound, next_text)));
}

/*
 * The bound the IDs this server issued lie below, in the layout in force:
 * its reservation, which is what a start after a crash continues above (a
 * clean shutdown lowers it to just above the last ID).  0 if the server
 * has no bound: it issued nothing, and found no high-water file at start.
 * *last is set to the last ID issued since start, or -1 if none.
 */
uint64
snowid_highwater_issued_bound(SnowidShared *shared, int64 *last)
{
	const SnowidLayout *layout = &snowid_active_layout;
	int32		node = Max(snowid_node_in_force(), 0);
	uint64		reserved = pg_atomic_read_u64(&shared->reserved_position);
	uint64		next = pg_atomic_read_u64(&shared->next_position);
	uint64		last_position;

	*last = -1;
	if (snowid_last_issued(shared, &last_position))
		*last = snowid_id_from_position(layout, last_position, node);
	if (reserved == 0 && next == 0)
		return 0;
	return snowid_bound_of_position(layout, Max(reserved, next), node);
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
 * recovery: nothing below the persisted bound will be issued.  Sets the
 * reservation to the bound and returns its position, where the generator
 * starts (snowid_generator_start).
 */
uint64
snowid_highwater_load(SnowidShared *shared)
{
	const SnowidLayout *layout = &snowid_active_layout;
	SnowidBound b;
	uint64		position = 0;
	TimestampTz until = 0;		/* 0 stands for "nothing reserved yet" */

	bool		have_file = snowid_highwater_read(&b);
	SnowidBound recorded;

	/*
	 * The boot record holds the last bound this server wrote in this boot
	 * of its host: a file behind it (or gone) was restored into the
	 * directory, from a copy older than IDs issued since; continue above
	 * them (boot_record.c).
	 */
	if (snowid_highwater_record_read(&recorded) &&
		(!have_file ||
		 snowid_bound_position(&recorded) > snowid_bound_position(&b)))
	{
		ereport(LOG,
				(errmsg("snowid continues above the bound of its boot record, not of its high-water file"),
				 errdetail(have_file ?
						   "The file \"snowid.highwater\" holds a lower bound than this server wrote into it before, in this boot of its host: the data directory was restored into itself from an older copy." :
						   "The file \"snowid.highwater\" is gone, but this server wrote one in this boot of its host: the data directory was restored into itself from an older copy."),
				 errhint("The boot record is in \"%s\"; remove it only if the file is known to hold the highest ID issued: this server then trusts the file, as after a reboot.",
						 snowid_boot_record_dir(NULL))));
		b = recorded;
		have_file = true;
	}

	if (!have_file)
		snowid_highwater_missing();
	else
	{
		/* a data directory of 1.1, or a crash before the marker was made */
		(void) snowid_issued_create(WARNING);
		position = snowid_bound_position(&b);
		if (!snowid_bound_is_here(&b))
			snowid_check_layout_change(&b, position);
		/* real bounds lie after 2000 */
		until = Max(b.has_layout ? snowid_position_until(layout, position) : b.until, 0);
	}

	pg_atomic_write_u64(&shared->reserved_position, position);
	pg_atomic_write_u64(&shared->reserved_until, (uint64) until);
	if (!IsUnderPostmaster)
		on_shmem_exit(snowid_highwater_shutdown, (Datum) 0);
	return position;
}

/*
 * At a clean exit of the postmaster (every backend gone), lower the
 * persisted bound to just above the last issued ID, so that the next start
 * continues there instead of at the reserved bound, with no wait.  On any
 * other exit, or if the write fails, the reserved bound stays: it is
 * higher, so still safe.  Nothing issued since start (a standby, a server
 * without a node ID): the file stays as it is.
 */
static void
snowid_highwater_shutdown(int code, Datum arg)
{
	SnowidShared *shared = snowid_shared;
	uint64		next;
	SnowidBound b;

	if (code != 0 || shared == NULL)
		return;
	next = pg_atomic_read_u64(&shared->next_position);
	if (next == 0 || next >= pg_atomic_read_u64(&shared->reserved_position))
		return;
	snowid_bound_here(&b, next);
	(void) snowid_highwater_write(&b, LOG);
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
	uint64		position;
	SnowidBound b;
	xl_snowid_bound xlrec;
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
	position = (uint64) target << layout->sequence_bits;
	snowid_bound_here(&b, position);

	memset(&xlrec, 0, sizeof(xlrec));
	xlrec.bound = b.bound;
	xlrec.epoch = b.layout.epoch;
	xlrec.tick_us = b.layout.tick_us;
	xlrec.node_id = b.node_id;
	xlrec.node_bits = b.layout.node_bits;
	xlrec.sequence_bits = b.layout.sequence_bits;
	xlrec.timestamp_bits = b.layout.timestamp_bits;
	XLogBeginInsert();
	XLogRegisterData((char *) &xlrec, sizeof(xlrec));
	lsn = XLogInsert(SNOWID_RMGR_ID, XLOG_SNOWID_BOUND);
	XLogFlush(lsn);
	SyncRepWaitForLSN(lsn, false);
	(void) snowid_highwater_write(&b, ERROR);

	pg_atomic_write_u64(&shared->reserved_until,
						(uint64) snowid_position_until(layout, position));
	pg_atomic_write_u64(&shared->reserved_position, position);
	pg_atomic_fetch_add_u64(&shared->renewals, 1);
	LWLockRelease(shared->renew_lock);
}

/* ---- the WAL records (dispatched by rmgr.c) ---- */

/* The bound of a record of either version. */
static void
snowid_record_bound(XLogReaderState *record, SnowidBound *b)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;

	memset(b, 0, sizeof(*b));
	if (info == XLOG_SNOWID_RESERVE)
	{
		xl_snowid_reserve *xlrec = (xl_snowid_reserve *) XLogRecGetData(record);

		b->until = xlrec->reserved_until;
		b->node_id = xlrec->node_id;
	}
	else if (info == XLOG_SNOWID_BOUND)
	{
		xl_snowid_bound *xlrec = (xl_snowid_bound *) XLogRecGetData(record);

		b->has_layout = true;
		b->bound = xlrec->bound;
		b->node_id = xlrec->node_id;
		b->layout.epoch = xlrec->epoch;
		b->layout.tick_us = xlrec->tick_us;
		b->layout.node_bits = xlrec->node_bits;
		b->layout.sequence_bits = xlrec->sequence_bits;
		b->layout.timestamp_bits = xlrec->timestamp_bits;
		b->layout.id_bits = xlrec->node_bits + xlrec->sequence_bits +
			xlrec->timestamp_bits;
	}
	else
		elog(PANIC, "snowid_redo: unknown op code %u", info);
}

/*
 * Replay raises this server's bound to the record's, converted to this
 * server's layout and node ID if they differ (a standby configured apart
 * from its primary): then the promoted server continues above the
 * primary's IDs, or its callers get the clock error, never a lower ID.
 * Returns the position the generator must go on from (rmgr.c raises it
 * there), or 0 if the record raises nothing.
 */
uint64
snowid_highwater_redo(XLogReaderState *record)
{
	SnowidShared *shared = snowid_shared;
	SnowidBound b;
	SnowidBound here;
	uint64		position;
	static bool logged = false;

	if (shared == NULL)
		elog(PANIC, "snowid_redo: shared memory is not initialised");
	snowid_record_bound(record, &b);
	position = snowid_bound_position(&b);

	if (!logged && !snowid_bound_is_here(&b) && snowid_node_id >= 0)
	{
		StringInfoData changes;
		StringInfoData previous;

		initStringInfo(&changes);
		initStringInfo(&previous);
		snowid_describe_change(&b.layout, b.node_id, &snowid_active_layout,
							   snowid_node_id, &changes, &previous);
		ereport(LOG,
				(errmsg("snowid replays reservations made under another layout (%s)",
						changes.data),
				 errdetail("Their bounds are converted to this server's layout; if it cannot reach them within snowid.max_lead and snowid.max_wait of the clock, snowid_next() fails after promotion instead of issuing lower IDs.")));
		logged = true;
	}

	if (pg_atomic_read_u64(&shared->reserved_position) >= position)
		return 0;				/* already known (e.g. from the file) */

	snowid_bound_here(&here, position);
	(void) snowid_highwater_write(&here, ERROR);
	snowid_atomic_raise(&shared->reserved_until,
						(uint64) Max(snowid_position_until(&snowid_active_layout,
														   position), 0));
	snowid_atomic_raise(&shared->reserved_position, position);
	return position;
}

/* A description of a record of either version, read from the record alone. */
void
snowid_highwater_desc(StringInfo buf, XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
	SnowidBound b;

	if (info != XLOG_SNOWID_RESERVE && info != XLOG_SNOWID_BOUND)
		return;
	snowid_record_bound(record, &b);
	if (!b.has_layout)
		appendStringInfo(buf, "node %d reserved until %s", b.node_id,
						 timestamptz_to_str(b.until));
	else
		appendStringInfo(buf, "node %d reserved below ID " UINT64_FORMAT
						 " (epoch %s, tick " INT64_FORMAT " us, %d/%d/%d bits)",
						 b.node_id, b.bound, timestamptz_to_str(b.layout.epoch),
						 b.layout.tick_us, b.layout.timestamp_bits,
						 b.layout.node_bits, b.layout.sequence_bits);
}
