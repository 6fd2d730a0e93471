/*-------------------------------------------------------------------------
 *
 * ticket_guard.c
 *	  Ticket sequences: what keeps a backing sequence from being rewound
 *	  or replaced behind snowid's back.
 *
 * - The served mark: column served of snowid_ticket, the highest block
 *	 number this ticket's sequence has handed out.  Raised in place
 *	 (non-transactional, WAL-logged) under the slot lock at every block
 *	 reservation; a block at or below it is refused (ticket_slot.c has the
 *	 argument).
 * - The row that holds the mark never gets a new version, and the in-place
 *	 write never waits.  Why both matter: an in-place write goes into the
 *	 row version a catalog snapshot sees.  If another transaction is
 *	 updating the row, PostgreSQL's in-place update waits for it, and here
 *	 that wait would happen under the slot lock, where no interrupt is
 *	 served: every session of the ticket would hang, uncancellable, until
 *	 that transaction ends.  If this transaction made the version by an
 *	 UPDATE, the mark goes into it and a rollback discards it, so values
 *	 come out twice.  Hence:
 *	 . trigger snowid_ticket_fixed (BEFORE UPDATE OR DELETE, ALWAYS)
 *	   refuses an UPDATE that changes any column and a DELETE of a live
 *	   ticket's row; the UPDATE that changes nothing (the re-registration
 *	   after pg_upgrade) records the dependency and skips the row.  A
 *	   BEFORE ROW trigger fires after the row is locked, so that UPDATE
 *	   leaves a row lock (FOR NO KEY UPDATE) until its transaction ends, and
 *	   a refused one until its abort; neither makes a new version;
 *	 . the write (snowid_ticket_raise_served) only tries the tuple lock and
 *	   never waits for the row's xmax.  A row locked by another transaction
 *	   is written anyway while that trigger is in force: the locker cannot
 *	   turn its lock into a new version (its UPDATE changes nothing, its
 *	   DELETE is refused), and the trigger cannot be disabled meanwhile
 *	   (ALTER TABLE takes a lock that conflicts with our RowExclusiveLock
 *	   on the table).  Otherwise (trigger disabled, or an update or delete
 *	   in progress) the reservation fails with 55P03, and a version made by
 *	   this transaction's own UPDATE with 55000, before anything is
 *	   written; the block its nextval() returned is then skipped;
 *	 . everything heavyweight the reservation needs (the sequence, the
 *	   table, its primary key index) is locked before the slot lock; the
 *	   upgrade script locks the table before it makes new row versions, so
 *	   a reservation waits, interruptibly, for it to commit.
 *	 Only a superuser or the table's owner can disable the trigger; with
 *	 it disabled, a row locked or changed by hand makes reservations fail,
 *	 never wait.  The tuple lock is tried, not waited
 *	 for, as well: a session waiting for a row lock holds it.
 * - The sequence's settings (pg_sequence, relpersistence), checked at every
 *	 block reservation (ticket_hooks.c refuses ALTER SEQUENCE / ALTER ...
 *	 SET UNLOGGED on a ticket sequence, and its trigger keeps the rows of
 *	 snowid_ticket fixed).
 *
 * All catalog access here is by OID through index scans: no SPI, no
 * search_path.  Nothing here runs on the hot path.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tupmacs.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_sequence.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "compat.h"
#include "executor/tuptable.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "ticket_catalog.h"
#include "ticket_guard.h"
#include "ticketmath.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

/* ---------- the served mark ---------- */

/* Column served of a row, which a row written before 1.2 may lack. */
static int64
snowid_ticket_served_of(Relation rel, HeapTuple tup)
{
	bool		isnull;
	Datum		d;

	if (HeapTupleHeaderGetNatts(tup->t_data) < Anum_ticket_served)
		elog(ERROR, "row of snowid_ticket without column served");
	d = heap_getattr(tup, Anum_ticket_served, RelationGetDescr(rel), &isnull);
	return isnull ? -1 : DatumGetInt64(d);
}

static void
snowid_ticket_gone(const char *name)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_TABLE),
			 errmsg("ticket sequence \"%s\" does not exist", name),
			 errdetail("It was dropped while this call waited for it.")));
}

/*
 * The served mark of ticket relid.  The caller holds a RowExclusiveLock on
 * the table (snowid_ticket_lock_table).
 */
int64
snowid_ticket_served(Oid relid, const char *name)
{
	bool		guarded;
	Oid			table = snowid_ticket_table_guarded(NULL, &guarded);
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData key;
	HeapTuple	tup;
	int64		served = -1;

	if (!OidIsValid(table))
		snowid_ticket_gone(name);
	if (!guarded)
		return -1;				/* at 1.1: no mark yet */
	rel = table_open(table, NoLock);
	snowid_ticket_key(&key, relid);
	scan = systable_beginscan(rel, snowid_primary_key_index(rel), true,
							  NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		served = snowid_ticket_served_of(rel, tup);
	systable_endscan(scan);
	table_close(rel, NoLock);
	if (!HeapTupleIsValid(tup))
		snowid_ticket_gone(name);
	return served;
}

/*
 * Lock the table snowid_ticket (RowExclusiveLock) and its primary key index
 * (AccessShareLock), before any slot lock: no one waits for a heavyweight
 * lock while holding an LWLock.  A transaction that holds a stronger lock
 * on the table (the upgrade script, ALTER TABLE ... DISABLE TRIGGER) makes
 * this wait, interruptibly, until it ends.
 */
void
snowid_ticket_lock_table(const char *name)
{
	Oid			table = snowid_ticket_table(NULL);

	Relation	rel;
	Oid			index;

	if (!OidIsValid(table))
		snowid_ticket_gone(name);
	LockRelationOid(table, RowExclusiveLock);
	/* the scans under the slot lock open it: lock it before, too */
	rel = table_open(table, NoLock);
	index = snowid_primary_key_index(rel);
	table_close(rel, NoLock);
	if (OidIsValid(index))
		LockRelationOid(index, AccessShareLock);
}

static void
snowid_ticket_rewound(const char *name, int64 block, int64 served,
					  const SnowidTicketSpec *spec)
{
	int64		first = 0;
	int64		last_first = 0;
	uint32		count;

	(void) snowid_ticket_block(spec, block, &first, &count);
	(void) snowid_ticket_block(spec, served, &last_first, &count);
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("ticket sequence \"%s\" has been moved back", name),
			 errdetail("Its sequence returned block " INT64_FORMAT " (values from " INT64_FORMAT "), but block " INT64_FORMAT " (values from " INT64_FORMAT ") has already been served: its values would be issued twice.",
					   block, first, served, last_first),
			 errhint("Move the sequence back above the last block served: SELECT setval('%s', " INT64_FORMAT ");",
					 name, served)));
}

/*
 * Is the trigger that keeps the rows of snowid_ticket fixed in force?  Then
 * a transaction that holds a row lock on a ticket's row cannot turn it into
 * a new row version: its UPDATE changes nothing and its DELETE is refused
 * while the ticket lives.  Disabling the trigger takes a lock that conflicts
 * with the RowExclusiveLock the caller holds, so this holds until it ends.
 */
static bool
snowid_ticket_rows_fixed(Relation rel)
{
	TriggerDesc *td = rel->trigdesc;

	if (td == NULL)
		return false;
	for (int i = 0; i < td->numtriggers; i++)
	{
		Trigger    *t = &td->triggers[i];

		if (strcmp(t->tgname, "snowid_ticket_fixed") == 0 &&
			t->tgenabled == TRIGGER_FIRES_ALWAYS &&
			TRIGGER_FOR_ROW(t->tgtype) && TRIGGER_FOR_BEFORE(t->tgtype) &&
			TRIGGER_FOR_UPDATE(t->tgtype) && TRIGGER_FOR_DELETE(t->tgtype))
			return true;
	}
	return false;
}

static void
snowid_ticket_row_busy(const char *name)
{
	ereport(ERROR,
			(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
			 errmsg("ticket sequence \"%s\" cannot reserve a block now", name),
			 errdetail("Its row of snowid_ticket is being changed or locked by another transaction, and a reservation does not wait for it."),
			 errhint("Retry once that transaction has ended.  Rows of snowid_ticket are written only by snowid_ticket_create() and DROP SEQUENCE; do not update, delete or lock them by hand.")));
}

static void
snowid_ticket_row_updated_here(const char *name)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("ticket sequence \"%s\" cannot reserve a block in this transaction", name),
			 errdetail("This transaction wrote a new version of its row of snowid_ticket; a served mark written into it would be lost if the transaction rolled back, and its values issued twice."),
			 errhint("Take values of this ticket in another transaction.")));
}

/*
 * Where the value of fixed-width, not-null attribute attnum lies in a tuple
 * (NULL if it is null or absent).  The served mark is raised by writing its
 * eight bytes there: an in-place update must keep the row's length, and a
 * row written before a later version added a column (pool, in 1.4) has
 * fewer attributes than the table has now, so forming the row anew from the
 * table's descriptor would lengthen it.
 */
static char *
snowid_fixed_attr_pointer(HeapTuple tup, TupleDesc desc, int attnum)
{
	HeapTupleHeader th = tup->t_data;
	char	   *tp = (char *) th + th->t_hoff;
	bool		hasnulls = HeapTupleHasNulls(tup);
	uint32		off = 0;

	if (attnum > HeapTupleHeaderGetNatts(th))
		return NULL;
	for (int i = 0; i < attnum; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (hasnulls && att_isnull(i, th->t_bits))
		{
			if (i == attnum - 1)
				return NULL;
			continue;
		}
		if (att->attlen == -1)
			off = att_align_pointer(off, att->attalign, -1, tp + off);
		else
			off = att_align_nominal(off, att->attalign);
		if (i == attnum - 1)
			return att->attlen == sizeof(int64) ? tp + off : NULL;
		off = att_addlength_pointer(off, att->attlen, tp + off);
	}
	return NULL;
}

/*
 * Raise the served mark of ticket relid to block b, in place (not undone by
 * a rollback; WAL-logged, so replicated and recovered).  Refuses if the mark
 * is already at or above b.  Caller holds the slot lock and a
 * RowExclusiveLock on the table and on its primary key index.
 *
 * This is systable_inplace_update_begin/finish without their waits: under
 * the slot lock nothing may wait for a heavyweight lock (no interrupt is
 * served there, so the wait could not be cancelled), and a row version
 * that this transaction made by an UPDATE must not receive the mark (a
 * rollback would discard it).  So the tuple lock is only tried, and a row
 * that another transaction is changing is refused (55P03) rather than
 * waited for.  The header comment has the argument.
 */
void
snowid_ticket_raise_served(Oid relid, const char *name, int64 b,
						   const SnowidTicketSpec *spec)
{
	bool		guarded;
	Oid			table = snowid_ticket_table_guarded(NULL, &guarded);
	Relation	rel;
	ScanKeyData key;
	bool		fixed;
	int			col = Anum_ticket_served;

	if (!OidIsValid(table))
		snowid_ticket_gone(name);
	if (!guarded)
		return;					/* at 1.1: no mark yet */
	rel = table_open(table, NoLock);
	fixed = snowid_ticket_rows_fixed(rel);
	snowid_ticket_key(&key, relid);
	for (int attempt = 0;; attempt++)
	{
		SysScanDesc scan;
		BufferHeapTupleTableSlot *bslot;
		HeapTuple	tup;
		HeapTuple	newtup;
		Buffer		buffer;
		TM_Result	result;
		uint16		infomask;
		bool		ok;
		int64		served;
		char	   *served_at;

		scan = systable_beginscan(rel, snowid_primary_key_index(rel), true,
								  NULL, 1, &key);
		tup = systable_getnext(scan);
		if (!HeapTupleIsValid(tup))
		{
			systable_endscan(scan);
			table_close(rel, NoLock);
			snowid_ticket_gone(name);
		}
		Assert(TTS_IS_BUFFERTUPLE(scan->slot));
		bslot = (BufferHeapTupleTableSlot *) scan->slot;
		tup = bslot->base.tuple;
		buffer = bslot->buffer;
		if (!snowid_conditional_lock_tuple(rel, &tup->t_self, InplaceUpdateTupleLock))
		{
			systable_endscan(scan);
			snowid_ticket_row_busy(name);
		}
		LockBuffer(buffer, BUFFER_LOCK_EXCLUSIVE);
		result = HeapTupleSatisfiesUpdate(tup, GetCurrentCommandId(false),
										  buffer);
		infomask = tup->t_data->t_infomask;
		if ((result == TM_Ok || result == TM_BeingModified) &&
			(infomask & HEAP_UPDATED) &&
			TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetXmin(tup->t_data)))
		{
			heap_inplace_unlock(rel, tup, buffer);
			systable_endscan(scan);
			snowid_ticket_row_updated_here(name);
		}
		if (result == TM_Ok)
			ok = true;
		else if (result == TM_BeingModified && HEAP_XMAX_IS_LOCKED_ONLY(infomask))
		{
			/* only locked: harmless if the locker cannot update it */
			TransactionId xmax = HeapTupleHeaderGetRawXmax(tup->t_data);

			ok = fixed ||
				(!(infomask & HEAP_XMAX_IS_MULTI) &&
				 (TransactionIdIsCurrentTransactionId(xmax) ||
				  HEAP_XMAX_IS_KEYSHR_LOCKED(infomask)));
			if (!ok)
			{
				heap_inplace_unlock(rel, tup, buffer);
				systable_endscan(scan);
				snowid_ticket_row_busy(name);
			}
		}
		else if (result == TM_BeingModified)
		{
			/* an update or delete in progress */
			heap_inplace_unlock(rel, tup, buffer);
			systable_endscan(scan);
			snowid_ticket_row_busy(name);
		}
		else if (result == TM_SelfModified)
		{
			heap_inplace_unlock(rel, tup, buffer);
			systable_endscan(scan);
			snowid_ticket_row_updated_here(name);
		}
		else if (result == TM_Updated || result == TM_Deleted)
		{
			/* changed by a transaction that committed since: look again */
			heap_inplace_unlock(rel, tup, buffer);
			systable_endscan(scan);
			InvalidateCatalogSnapshot();
			if (attempt >= 100)
			{
				table_close(rel, NoLock);
				snowid_ticket_row_busy(name);
			}
			continue;
		}
		else
		{
			heap_inplace_unlock(rel, tup, buffer);
			systable_endscan(scan);
			elog(ERROR, "row of snowid_ticket for \"%s\" is not visible to its update", name);
		}

		served = snowid_ticket_served_of(rel, tup);
		if (b <= served)
		{
			heap_inplace_unlock(rel, tup, buffer);
			systable_endscan(scan);
			table_close(rel, NoLock);
			snowid_ticket_rewound(name, b, served, spec);
		}
		/*
		 * The row as it is, with only the mark changed: an in-place update
		 * must not change its length, and a row written before a later
		 * version added a column (pool, in 1.4) has fewer attributes than
		 * the table now has.
		 */
		newtup = heap_copytuple(tup);
		served_at = snowid_fixed_attr_pointer(newtup, RelationGetDescr(rel), col);
		if (served_at == NULL)
		{
			heap_inplace_unlock(rel, tup, buffer);
			elog(ERROR, "row of snowid_ticket for \"%s\" has no served mark", name);
		}
		memcpy(served_at, &b, sizeof(int64));
		newtup->t_self = tup->t_self;
		heap_inplace_update_and_unlock(rel, tup, newtup, buffer);
		systable_endscan(scan);
		break;
	}
	table_close(rel, NoLock);
}
/* ---------- the backing sequence ---------- */

static void
snowid_ticket_altered(const char *name, const char *what,
					  const SnowidTicketSpec *spec)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("ticket sequence \"%s\" has been altered", name),
			 errdetail("It %s; a ticket sequence is a logged sequence AS bigint INCREMENT 1 MINVALUE 0 MAXVALUE " INT64_FORMAT " CACHE 1 NO CYCLE, so that no block is handed out twice.",
					   what, snowid_ticket_last_block(spec) + 1),
			 errhint("Restore these settings with ALTER SEQUENCE (or ALTER SEQUENCE ... SET LOGGED), or move to a new ticket sequence.")));
}

/*
 * Refuse a backing sequence that could hand out a block twice or skip the
 * end marker: unlogged (reset by a crash), cycling, an increment or cache
 * other than 1, other bounds, or a sequence that is not registered as a
 * ticket (a stale row of snowid_ticket whose OID was reused).  Called at
 * every block reservation, under the sequence's RowExclusiveLock.
 */
void
snowid_ticket_check_sequence(Oid relid, const char *name,
							 const SnowidTicketSpec *spec)
{
	HeapTuple	tup;
	Form_pg_sequence seq;
	Oid			extoid = InvalidOid;
	bool		guarded = false;
	const char *what = NULL;

	if (!OidIsValid(snowid_ticket_table_guarded(&extoid, &guarded)) ||
		(guarded && !snowid_ticket_is_ticket(relid, extoid)))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a ticket sequence", name),
				 errdetail("Its row in snowid_ticket was not written for this sequence: a ticket sequence depends on extension snowid, this one does not."),
				 errhint("Create ticket sequences with snowid_ticket_create(). After pg_upgrade or a data-only restore with --disable-triggers, which do not record that dependency, run UPDATE snowid_ticket SET seqrelid = seqrelid once in this database.")));
	if (get_rel_persistence(relid) != RELPERSISTENCE_PERMANENT)
		what = "is unlogged (a crash would reset it)";
	tup = SearchSysCache1(SEQRELID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for sequence %u", relid);
	seq = (Form_pg_sequence) GETSTRUCT(tup);
	if (what != NULL)
		;
	else if (seq->seqincrement != 1)
		what = psprintf("has INCREMENT " INT64_FORMAT, seq->seqincrement);
	else if (seq->seqcycle)
		what = "has CYCLE";
	else if (seq->seqcache != 1)
		what = psprintf("has CACHE " INT64_FORMAT, seq->seqcache);
	else if (seq->seqmin != 0)
		what = psprintf("has MINVALUE " INT64_FORMAT, seq->seqmin);
	else if (seq->seqmax != snowid_ticket_last_block(spec) + 1)
		what = psprintf("has MAXVALUE " INT64_FORMAT, seq->seqmax);
	else if (seq->seqtypid != INT8OID)
		what = psprintf("is of type %s", format_type_be(seq->seqtypid));
	ReleaseSysCache(tup);
	if (what != NULL)
		snowid_ticket_altered(name, what, spec);
}
