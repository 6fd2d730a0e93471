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
 * - The sequence's settings (pg_sequence, relpersistence), checked at every
 *	 block reservation, and ALTER SEQUENCE / ALTER ... SET UNLOGGED on a
 *	 ticket sequence, refused by a ProcessUtility hook.
 * - The dependency of each ticket sequence on the extension, recorded by a
 *	 trigger on snowid_ticket: DROP EXTENSION lists the ticket sequences,
 *	 CASCADE drops them, and a row whose sequence lacks it (a stale row whose
 *	 OID was reused by an unrelated sequence) is not a ticket.
 * - The removal of a dropped ticket's row, from the object-access hook, so
 *	 that it happens in every mode (event triggers do not fire under
 *	 session_replication_role = replica or in single-user mode).
 *
 * All catalog access here is by OID through index scans: no SPI, no
 * search_path.  Nothing here runs on the hot path.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "compat.h"
#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_sequence.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/parse_type.h"
#include "snowid.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "ticket.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"

PG_FUNCTION_INFO_V1(snowid_ticket_registered);

#define Anum_ticket_seqrelid	1
#define Anum_ticket_shard		2
#define Anum_ticket_shards		3
#define Anum_ticket_block		4
#define Anum_ticket_start		5
#define Anum_ticket_type		6
#define Anum_ticket_served		8

static ProcessUtility_hook_type prev_process_utility = NULL;

/* ---------- the catalog table ---------- */

/* Backend-local: the extension and its table in the current database. */
static Oid	cached_db = InvalidOid;
static Oid	cached_ext = InvalidOid;
static Oid	cached_table = InvalidOid;
static bool cached_guarded = false;

/* The schema of extension ext (PostgreSQL 15 does not export its own). */
static Oid
snowid_ticket_extension_schema(Oid ext)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			nsp = InvalidOid;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(ext));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		nsp = ((Form_pg_extension) GETSTRUCT(tup))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return nsp;
}

/*
 * The OID of table snowid_ticket of this database's snowid, or InvalidOid
 * if snowid is not installed here; *extoid gets the extension's OID.
 */
static Oid snowid_ticket_table_guarded(Oid *extoid, bool *guarded);

/* The table changed (ALTER EXTENSION UPDATE adds served): look again. */
static void
snowid_ticket_table_cb(Datum arg, Oid relid)
{
	if (!OidIsValid(relid) || relid == cached_table)
		cached_table = InvalidOid;
}

Oid
snowid_ticket_table(Oid *extoid)
{
	bool		guarded;

	return snowid_ticket_table_guarded(extoid, &guarded);
}

/*
 * The same, and whether the table has the served mark and the trigger of
 * version 1.2: a database still at 1.1 (library installed, ALTER EXTENSION
 * UPDATE not yet run) serves its tickets as 1.1 did until it is updated.
 */
static Oid
snowid_ticket_table_guarded(Oid *extoid, bool *guarded)
{
	Oid			ext;
	Oid			nsp;

	if (cached_db == MyDatabaseId && OidIsValid(cached_table))
	{
		char	   *name = get_rel_name(cached_table);

		/* DROP EXTENSION drops the table, whose invalidation resets this */
		if (name != NULL && strcmp(name, "snowid_ticket") == 0)
		{
			if (extoid)
				*extoid = cached_ext;
			*guarded = cached_guarded;
			return cached_table;
		}
	}
	cached_table = InvalidOid;
	ext = get_extension_oid("snowid", true);
	if (!OidIsValid(ext))
		return InvalidOid;
	nsp = snowid_ticket_extension_schema(ext);
	cached_table = get_relname_relid("snowid_ticket", nsp);
	cached_guarded = OidIsValid(cached_table) &&
		get_attnum(cached_table, "served") == Anum_ticket_served;
	cached_ext = ext;
	cached_db = MyDatabaseId;
	if (extoid)
		*extoid = ext;
	*guarded = cached_guarded;
	return cached_table;
}

static void
snowid_ticket_key(ScanKeyData *key, Oid relid)
{
	ScanKeyInit(key, Anum_ticket_seqrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
}

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
 * Lock the table snowid_ticket (RowExclusiveLock, before any slot lock:
 * no one waits for a heavyweight lock while holding an LWLock).
 */
void
snowid_ticket_lock_table(const char *name)
{
	Oid			table = snowid_ticket_table(NULL);

	if (!OidIsValid(table))
		snowid_ticket_gone(name);
	LockRelationOid(table, RowExclusiveLock);
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
 * Raise the served mark of ticket relid to block b, in place (not undone by
 * a rollback; WAL-logged, so replicated and recovered).  Refuses if the mark
 * is already at or above b.  Caller holds the slot lock and a
 * RowExclusiveLock on the table.
 */
void
snowid_ticket_raise_served(Oid relid, const char *name, int64 b,
						   const SnowidTicketSpec *spec)
{
	bool		guarded;
	Oid			table = snowid_ticket_table_guarded(NULL, &guarded);
	Relation	rel;
	ScanKeyData key;
	HeapTuple	tup;
	HeapTuple	newtup;
	void	   *state;
	int64		served;
	int			col = Anum_ticket_served;
	Datum		value = Int64GetDatum(b);
	bool		isnull = false;

	if (!OidIsValid(table))
		snowid_ticket_gone(name);
	if (!guarded)
		return;					/* at 1.1: no mark yet */
	rel = table_open(table, NoLock);
	snowid_ticket_key(&key, relid);
	systable_inplace_update_begin(rel, snowid_primary_key_index(rel), true,
								  NULL, 1, &key, &tup, &state);
	if (!HeapTupleIsValid(tup))
	{
		table_close(rel, NoLock);
		snowid_ticket_gone(name);
	}
	served = snowid_ticket_served_of(rel, tup);
	if (b <= served)
	{
		systable_inplace_update_cancel(state);
		table_close(rel, NoLock);
		snowid_ticket_rewound(name, b, served, spec);
	}
	newtup = heap_modify_tuple_by_cols(tup, RelationGetDescr(rel), 1, &col,
									   &value, &isnull);
	newtup->t_self = tup->t_self;
	systable_inplace_update_finish(state, newtup);
	table_close(rel, NoLock);
}

/* ---------- the backing sequence ---------- */

static bool
snowid_ticket_has_dependency(Oid relid, Oid extoid)
{
	Relation	depRel;
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;
	bool		found = false;

	depRel = table_open(DependRelationId, AccessShareLock);
	ScanKeyInit(&key[0], Anum_pg_depend_classid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(RelationRelationId));
	ScanKeyInit(&key[1], Anum_pg_depend_objid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(relid));
	scan = systable_beginscan(depRel, DependDependerIndexId, true, NULL, 2, key);
	while (!found && HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_depend dep = (Form_pg_depend) GETSTRUCT(tup);

		found = dep->refclassid == ExtensionRelationId &&
			dep->refobjid == extoid && dep->objsubid == 0 &&
			dep->deptype == DEPENDENCY_NORMAL;
	}
	systable_endscan(scan);
	table_close(depRel, AccessShareLock);
	return found;
}

/* Is relid a sequence registered as a ticket of the extension extoid? */
static bool
snowid_ticket_is_ticket(Oid relid, Oid extoid)
{
	return get_rel_relkind(relid) == RELKIND_SEQUENCE &&
		snowid_ticket_has_dependency(relid, extoid);
}

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

/* ---------- ALTER SEQUENCE ---------- */

/* Read the settings of ticket relid (for the hook; true if found). */
static bool
snowid_ticket_spec_of(Oid relid, SnowidTicketSpec *spec)
{
	Oid			table = snowid_ticket_table(NULL);
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData key;
	HeapTuple	tup;
	bool		found = false;

	if (!OidIsValid(table))
		return false;
	rel = table_open(table, AccessShareLock);
	snowid_ticket_key(&key, relid);
	scan = systable_beginscan(rel, snowid_primary_key_index(rel), true,
							  NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		TupleDesc	desc = RelationGetDescr(rel);
		bool		isnull;

		spec->shard = DatumGetInt32(heap_getattr(tup, Anum_ticket_shard, desc, &isnull));
		spec->shards = DatumGetInt32(heap_getattr(tup, Anum_ticket_shards, desc, &isnull));
		spec->block = DatumGetInt32(heap_getattr(tup, Anum_ticket_block, desc, &isnull));
		spec->start = DatumGetInt64(heap_getattr(tup, Anum_ticket_start, desc, &isnull));
		spec->maxvalue = snowid_ticket_type_max(DatumGetObjectId(heap_getattr(tup, Anum_ticket_type, desc, &isnull)));
		found = spec->shards >= 1 && spec->block >= 1 &&
			spec->maxvalue != 0 && snowid_ticket_has_values(spec);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/* Does option opt of ALTER SEQUENCE keep what a ticket sequence needs? */
static bool
snowid_ticket_option_ok(DefElem *opt, const SnowidTicketSpec *spec)
{
	if (strcmp(opt->defname, "owned_by") == 0)
		return true;
	if (opt->arg == NULL)
		return false;			/* NO MINVALUE, NO MAXVALUE, RESTART */
	if (strcmp(opt->defname, "increment") == 0 ||
		strcmp(opt->defname, "cache") == 0)
		return defGetInt64(opt) == 1;
	if (strcmp(opt->defname, "minvalue") == 0)
		return defGetInt64(opt) == 0;
	if (strcmp(opt->defname, "maxvalue") == 0)
		return defGetInt64(opt) == snowid_ticket_last_block(spec) + 1;
	if (strcmp(opt->defname, "cycle") == 0)
		return !defGetBoolean(opt);
	if (strcmp(opt->defname, "as") == 0)
		return typenameTypeId(NULL, defGetTypeName(opt)) == INT8OID;
	/* restart, start and anything new */
	return false;
}

static void
snowid_ticket_refuse_alter(Oid relid, const char *option)
{
	char	   *what = pstrdup(option);

	for (char *c = what; *c; c++)
		*c = (*c == '_') ? ' ' : pg_toupper((unsigned char) *c);
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("ticket sequence \"%s\" cannot be altered with %s",
					snowid_ticket_name(relid), what),
			 errdetail("A ticket sequence counts reserved blocks; changing how it counts would hand out values twice or skip the end of its values."),
			 errhint("To skip values, move it forward with setval(); for other settings, create a new ticket sequence.")));
}

/*
 * ALTER SEQUENCE ... RESTART/START/INCREMENT/MINVALUE/MAXVALUE/CYCLE/CACHE/
 * AS and ALTER ... SET UNLOGGED on a ticket sequence are refused before they
 * run.  A ProcessUtility hook rather than an event trigger: it also runs
 * under session_replication_role = replica and in single-user mode, and
 * refuses before anything is changed.  Options that restore what a ticket
 * needs (INCREMENT 1, NO CYCLE, ...) and OWNED BY are allowed.
 */
static void
snowid_ticket_utility(PlannedStmt *pstmt, const char *queryString,
					  bool readOnlyTree, ProcessUtilityContext context,
					  ParamListInfo params, QueryEnvironment *queryEnv,
					  DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;

	if (IsA(parsetree, AlterSeqStmt) || IsA(parsetree, AlterTableStmt))
	{
		RangeVar   *rv = IsA(parsetree, AlterSeqStmt) ?
		((AlterSeqStmt *) parsetree)->sequence :
		((AlterTableStmt *) parsetree)->relation;
		Oid			relid = rv ? RangeVarGetRelid(rv, NoLock, true) : InvalidOid;
		Oid			extoid;

		if (OidIsValid(relid) && get_rel_relkind(relid) == RELKIND_SEQUENCE &&
			OidIsValid(snowid_ticket_table(&extoid)) &&
			snowid_ticket_has_dependency(relid, extoid))
		{
			ListCell   *lc;

			if (IsA(parsetree, AlterSeqStmt))
			{
				SnowidTicketSpec spec = {0};
				bool		have_spec = snowid_ticket_spec_of(relid, &spec);

				foreach(lc, ((AlterSeqStmt *) parsetree)->options)
				{
					DefElem    *opt = lfirst_node(DefElem, lc);

					if (!have_spec || !snowid_ticket_option_ok(opt, &spec))
						snowid_ticket_refuse_alter(relid, opt->defname);
				}
			}
			else
			{
				foreach(lc, ((AlterTableStmt *) parsetree)->cmds)
				{
					AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);

					if (cmd->subtype == AT_SetUnLogged)
						snowid_ticket_refuse_alter(relid, "set unlogged");
				}
			}
		}
	}

	if (prev_process_utility)
		prev_process_utility(pstmt, queryString, readOnlyTree, context,
							 params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
}

/* ---------- registration and DROP ---------- */

/*
 * Trigger on snowid_ticket (AFTER INSERT OR UPDATE OF seqrelid, FOR EACH
 * ROW, enabled ALWAYS): the sequence of a new row depends on the extension,
 * whether the row comes from snowid_ticket_create, from pg_restore or from
 * the upgrade script.
 */
Datum
snowid_ticket_registered(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	HeapTuple	tup;
	bool		isnull;
	Oid			relid;
	Oid			extoid;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!TRIGGER_FIRED_AFTER(trigdata->tg_event))
		elog(ERROR, "snowid_ticket_registered: not called as an after row trigger");
	tup = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ?
		trigdata->tg_newtuple : trigdata->tg_trigtuple;
	relid = DatumGetObjectId(heap_getattr(tup, Anum_ticket_seqrelid,
										  RelationGetDescr(trigdata->tg_relation),
										  &isnull));
	extoid = getExtensionOfObject(RelationRelationId,
								  RelationGetRelid(trigdata->tg_relation));
	if (isnull || !OidIsValid(extoid))
		return PointerGetDatum(NULL);
	if (get_rel_relkind(relid) != RELKIND_SEQUENCE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a sequence", snowid_ticket_name(relid)),
				 errdetail("Rows of snowid_ticket describe ticket sequences.")));
	if (!snowid_ticket_has_dependency(relid, extoid))
	{
		ObjectAddress seq;
		ObjectAddress ext;

		ObjectAddressSet(seq, RelationRelationId, relid);
		ObjectAddressSet(ext, ExtensionRelationId, extoid);
		recordDependencyOn(&seq, &ext, DEPENDENCY_NORMAL);
	}
	return PointerGetDatum(NULL);
}

/*
 * Remove the rows of snowid_ticket of sequence relid, which is being
 * dropped (or was just created: any row with its OID is stale).  Runs with
 * no privilege check, in the dropping transaction.
 */
void
snowid_ticket_forget(Oid relid)
{
	Oid			table;
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData key;
	HeapTuple	tup;

	if (get_rel_relkind(relid) != RELKIND_SEQUENCE)
		return;
	table = snowid_ticket_table(NULL);
	if (!OidIsValid(table))
		return;
	rel = table_open(table, RowExclusiveLock);
	snowid_ticket_key(&key, relid);
	scan = systable_beginscan(rel, snowid_primary_key_index(rel), true,
							  NULL, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
		simple_heap_delete(rel, &tup->t_self);
	systable_endscan(scan);
	table_close(rel, RowExclusiveLock);
}

void
snowid_ticket_guard_init(void)
{
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = snowid_ticket_utility;
	CacheRegisterRelcacheCallback(snowid_ticket_table_cb, (Datum) 0);
}
