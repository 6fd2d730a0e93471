/*-------------------------------------------------------------------------
 *
 * ticket_hooks.c
 *	  Ticket sequences: the hooks that keep them whole, and their install.
 *
 * - DROP of a sequence, of the extension or of a database frees the slots
 *	 it leaves behind, and DROP of a ticket sequence removes its row of
 *	 snowid_ticket, from the object-access hook, so that it happens in every
 *	 mode (event triggers do not fire under session_replication_role =
 *	 replica or in single-user mode).
 * - ALTER SEQUENCE / ALTER ... SET UNLOGGED on a ticket sequence is
 *	 refused by a ProcessUtility hook (ticket_guard.c checks the same
 *	 settings at every block reservation).
 * - The dependency of each ticket sequence on the extension, recorded by a
 *	 trigger on snowid_ticket: DROP EXTENSION lists the ticket sequences,
 *	 CASCADE drops them, and a row whose sequence lacks it (a stale row whose
 *	 OID was reused by an unrelated sequence) is not a ticket.  The same
 *	 trigger keeps the rows fixed (ticket_guard.c has why).
 * - ALTER TABLE ... ENABLE TRIGGER on any of snowid's tables is followed by
 *	 setting its guard triggers back to the mode the install script gave
 *	 them (the same ProcessUtility hook).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "catalog/pg_extension.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/parse_type.h"
#include "pool.h"
#include "pool_store.h"
#include "pool_users.h"
#include "tcop/utility.h"
#include "ticket.h"
#include "ticket_catalog.h"
#include "ticket_hooks.h"
#include "ticket_slot.h"
#include "ticketmath.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

PG_FUNCTION_INFO_V1(snowid_ticket_registered);

static object_access_hook_type prev_object_access_hook = NULL;
static ProcessUtility_hook_type prev_process_utility = NULL;
static bool keeping_triggers = false;

/* ---------- DROP ---------- */

/*
 * A pooled ticket is dropped: if no other ticket of this database names its
 * pool, this database no longer uses the pool once the DROP commits
 * (pool_users.c then frees the pool's slot if no one else uses it).
 */
static void
snowid_ticket_pool_dropped(Oid relid)
{
	char		pool[SNOWID_POOL_NAME_LEN];

	if (snowid_pool_shared == NULL || !snowid_ticket_pool_of(relid, pool))
		return;
	if (!snowid_ticket_pool_named(pool, relid))
		snowid_pool_unuse_at_commit(pool, MyDatabaseId);
}

/*
 * DROP of a sequence, of the extension or of a database frees the slots it
 * leaves behind.  DROP of a ticket sequence also removes its row of
 * snowid_ticket here, in the dropping transaction: OAT_DROP runs in every
 * mode, while the event trigger of the SQL script (kept for servers that
 * do not preload snowid) is skipped under session_replication_role =
 * replica and in single-user mode.
 */
static void
snowid_ticket_object_access(ObjectAccessType access, Oid classId,
							Oid objectId, int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);

	if (access != OAT_DROP)
		return;
	if (classId == RelationRelationId && subId == 0)
	{
		snowid_ticket_pool_dropped(objectId);
		snowid_ticket_forget(objectId);
	}
	else if (classId == DatabaseRelationId)
		snowid_pool_unuse_at_commit(NULL, objectId);
	else if (classId == ExtensionRelationId &&
			 objectId == get_extension_oid("snowid", true))
		snowid_pool_unuse_at_commit(NULL, MyDatabaseId);
	if (ticket_shared == NULL)
		return;
	if (classId == RelationRelationId && subId == 0)
		snowid_ticket_free_slots(MyDatabaseId, objectId);
	else if (classId == DatabaseRelationId)
		snowid_ticket_free_slots(objectId, InvalidOid);
	else if (classId == ExtensionRelationId &&
			 objectId == get_extension_oid("snowid", true))
		snowid_ticket_free_slots(MyDatabaseId, InvalidOid);
}

/* ---------- ALTER SEQUENCE ---------- */

/* Read the settings of ticket relid (for the hook; true if found). */
static bool
snowid_ticket_spec_of(Oid relid, SnowidTicketSpec *spec)
{
	Oid			table = snowid_ticket_table(NULL);
	SnowidTicketEntry entry;

	if (!OidIsValid(table) ||
		!snowid_ticket_find_row(get_rel_namespace(table), relid, &entry))
		return false;
	*spec = entry.spec;
	return spec->shards >= 1 && spec->block >= 1 &&
		spec->maxvalue != 0 && snowid_ticket_has_values(spec);
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
 * ALTER TABLE ... SET UNLOGGED of a table that owns a ticket sequence
 * (ALTER SEQUENCE ... OWNED BY): from 15 the owned sequences become
 * unlogged with their table, so refuse it as on the sequence itself.
 */
static void
snowid_ticket_check_owner_unlogged(AlterTableStmt *stmt, Oid relid)
{
	ListCell   *lc;
	Oid			extoid;

	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);
		List	   *seqs;
		ListCell   *sc;

		if (cmd->subtype != AT_SetUnLogged)
			continue;
		if (!OidIsValid(snowid_ticket_table(&extoid)))
			return;
		seqs = getOwnedSequences(relid);
		foreach(sc, seqs)
		{
			Oid			seq = lfirst_oid(sc);

			if (snowid_ticket_has_dependency(seq, extoid))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("table \"%s\" cannot be altered with SET UNLOGGED: it owns ticket sequence \"%s\"",
								get_rel_name(relid), snowid_ticket_name(seq)),
						 errdetail("An unlogged table makes the sequences it owns unlogged, and a crash would reset the ticket sequence: its values would be handed out twice."),
						 errhint("Detach the ticket sequence first (ALTER SEQUENCE %s OWNED BY NONE), or keep the table logged.",
								 snowid_ticket_name(seq))));
		}
	}
}

/*
 * Does ALTER TABLE enable triggers (ENABLE [ALWAYS | REPLICA] TRIGGER name,
 * ENABLE TRIGGER ALL | USER)?  pg_dump --disable-triggers ends a data-only
 * restore with ENABLE TRIGGER ALL, which would leave every guard trigger
 * enabled ORIGIN: those of snowid_ticket would not fire under
 * session_replication_role = replica, and snowid_local_only would fire
 * nowhere else.
 */
static bool
snowid_enables_trigger(AlterTableStmt *stmt)
{
	ListCell   *lc;

	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);

		if (cmd->subtype == AT_EnableTrig || cmd->subtype == AT_EnableTrigAll ||
			cmd->subtype == AT_EnableTrigUser ||
			cmd->subtype == AT_EnableAlwaysTrig ||
			cmd->subtype == AT_EnableReplicaTrig)
			return true;
	}
	return false;
}

/* Is relid one of the tables of the snowid extension (present or future)? */
static bool
snowid_is_own_table(Oid relid)
{
	Oid			extoid = get_extension_oid("snowid", true);

	return OidIsValid(extoid) &&
		getExtensionOfObject(RelationRelationId, relid) == extoid;
}

/*
 * The guard triggers of snowid's tables and the mode the install script
 * enables each in: the one list of them.  A table has those of them it has
 * (snowid_ticket the first two; every table the last two).
 */
static const struct
{
	const char *name;
	char		mode;			/* pg_trigger.tgenabled */
	const char *word;			/* the same in ALTER TABLE ... ENABLE */
}			snowid_guard_triggers[] = {
	{"snowid_ticket_fixed", TRIGGER_FIRES_ALWAYS, "ALWAYS"},
	{"snowid_ticket_registered", TRIGGER_FIRES_ALWAYS, "ALWAYS"},
	{"snowid_local_only", TRIGGER_FIRES_ON_REPLICA, "REPLICA"},
	{"snowid_local_only_truncate", TRIGGER_FIRES_ALWAYS, "ALWAYS"},
};

/*
 * After an ALTER TABLE that enabled triggers of one of snowid's tables, set
 * each of its guard triggers that is enabled in another mode back to the
 * mode of snowid_guard_triggers, as the install script created it.  A guard
 * trigger left disabled (DISABLE TRIGGER name) stays so, and only the
 * triggers that exist are named: pg_upgrade's restore creates them one at
 * a time, each followed by its ENABLE.  Runs as the statement's user, who
 * owns the table or is a superuser; the names are quoted and qualified.
 */
static void
snowid_keep_trigger_modes(Oid table)
{
	StringInfoData sql;
	bool		any = false;
	Relation	rel;
	TriggerDesc *trigdesc;

	/* see what the ALTER TABLE made of them */
	CommandCounterIncrement();
	rel = table_open(table, AccessShareLock);
	trigdesc = rel->trigdesc;
	initStringInfo(&sql);
	appendStringInfo(&sql, "ALTER TABLE %s",
					 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
												RelationGetRelationName(rel)));
	for (int t = 0; trigdesc != NULL && t < trigdesc->numtriggers; t++)
	{
		const Trigger *trigger = &trigdesc->triggers[t];

		for (size_t i = 0; i < lengthof(snowid_guard_triggers); i++)
		{
			if (strcmp(trigger->tgname, snowid_guard_triggers[i].name) != 0 ||
				trigger->tgenabled == TRIGGER_DISABLED ||
				trigger->tgenabled == snowid_guard_triggers[i].mode)
				continue;
			appendStringInfo(&sql, "%s ENABLE %s TRIGGER %s", any ? "," : "",
							 snowid_guard_triggers[i].word,
							 quote_identifier(snowid_guard_triggers[i].name));
			any = true;
		}
	}
	table_close(rel, AccessShareLock);
	if (!any)
	{
		pfree(sql.data);
		return;
	}
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* that ALTER TABLE enables triggers too: the hook leaves it alone */
	keeping_triggers = true;
	PG_TRY();
	{
		if (SPI_execute(sql.data, false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "re-enabling the guard triggers of \"%s\" failed",
				 get_rel_name(table));
	}
	PG_FINALLY();
	{
		keeping_triggers = false;
	}
	PG_END_TRY();
	SPI_finish();
	pfree(sql.data);
}

/*
 * ALTER SEQUENCE ... RESTART/START/INCREMENT/MINVALUE/MAXVALUE/CYCLE/CACHE/
 * AS and ALTER ... SET UNLOGGED on a ticket sequence, and ALTER TABLE ...
 * SET UNLOGGED of a table that owns one, are refused before they run.  A
 * ProcessUtility hook rather than an event trigger: it also runs under
 * session_replication_role = replica and in single-user mode, and refuses
 * before anything is changed.  Options that restore what a ticket
 * needs (INCREMENT 1, NO CYCLE, ...) and OWNED BY are allowed.
 */
static void
snowid_ticket_utility(PlannedStmt *pstmt, const char *queryString,
					  bool readOnlyTree, ProcessUtilityContext context,
					  ParamListInfo params, QueryEnvironment *queryEnv,
					  DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;
	Oid			reenable = InvalidOid;

	if (IsA(parsetree, AlterSeqStmt) || IsA(parsetree, AlterTableStmt))
	{
		RangeVar   *rv = IsA(parsetree, AlterSeqStmt) ?
		((AlterSeqStmt *) parsetree)->sequence :
		((AlterTableStmt *) parsetree)->relation;
		Oid			relid = rv ? RangeVarGetRelid(rv, NoLock, true) : InvalidOid;
		Oid			extoid;

		if (OidIsValid(relid) && IsA(parsetree, AlterTableStmt) &&
			get_rel_relkind(relid) != RELKIND_SEQUENCE)
		{
			snowid_ticket_check_owner_unlogged((AlterTableStmt *) parsetree,
											   relid);
			if (snowid_enables_trigger((AlterTableStmt *) parsetree) &&
				snowid_is_own_table(relid))
				reenable = relid;
		}
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
	if (OidIsValid(reenable) && !keeping_triggers)
		snowid_keep_trigger_modes(reenable);
}

/* ---------- registration ---------- */

/* Record that ticket relid (a row of snowid_ticket) depends on extoid. */
static void
snowid_ticket_register(Oid relid, Oid extoid)
{
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
}

/* The first column whose value differs between two rows, or 0. */
static AttrNumber
snowid_ticket_changed_column(TupleDesc desc, HeapTuple oldtup, HeapTuple newtup)
{
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		bool		oldnull;
		bool		newnull;
		Datum		oldval;
		Datum		newval;

		if (att->attisdropped)
			continue;
		oldval = heap_getattr(oldtup, i + 1, desc, &oldnull);
		newval = heap_getattr(newtup, i + 1, desc, &newnull);
		if (oldnull != newnull ||
			(!oldnull && !datum_image_eq(oldval, newval, att->attbyval,
										 att->attlen)))
			return i + 1;
	}
	return 0;
}

/*
 * The triggers on snowid_ticket, enabled ALWAYS (also under
 * session_replication_role = replica):
 *	- snowid_ticket_registered, AFTER INSERT FOR EACH ROW: the sequence of a
 *	  new row depends on the extension, whether the row comes from
 *	  snowid_ticket_create, from pg_restore or from the upgrade script;
 *	- snowid_ticket_fixed, BEFORE UPDATE OR DELETE FOR EACH ROW: an UPDATE
 *	  that changes a column is refused (a ticket's settings are fixed, its
 *	  served mark is raised in place only); one that changes nothing
 *	  (UPDATE snowid_ticket SET seqrelid = seqrelid, which re-registers the
 *	  tickets after pg_upgrade) records the dependency and skips the row, so
 *	  that no new row version is made; a DELETE of the row of a live ticket
 *	  is refused (DROP SEQUENCE removes it, from C, which fires no trigger).
 */
Datum
snowid_ticket_registered(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	TupleDesc	desc;
	HeapTuple	tup;
	bool		isnull;
	Oid			relid;
	Oid			extoid;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event))
		elog(ERROR, "snowid_ticket_registered: not called as a row trigger");
	desc = RelationGetDescr(trigdata->tg_relation);
	tup = trigdata->tg_trigtuple;
	relid = DatumGetObjectId(heap_getattr(tup, Anum_ticket_seqrelid, desc,
										  &isnull));
	extoid = getExtensionOfObject(RelationRelationId,
								  RelationGetRelid(trigdata->tg_relation));

	if (TRIGGER_FIRED_AFTER(trigdata->tg_event))
	{
		if (!TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
			elog(ERROR, "snowid_ticket_registered: AFTER trigger not fired by INSERT");
		if (!isnull && OidIsValid(extoid))
			snowid_ticket_register(relid, extoid);
		return PointerGetDatum(NULL);
	}

	if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
	{
		AttrNumber	changed = snowid_ticket_changed_column(desc, tup,
														   trigdata->tg_newtuple);

		if (changed != 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("column \"%s\" of snowid_ticket cannot be changed",
							NameStr(TupleDescAttr(desc, changed - 1)->attname)),
					 errdetail("The settings of a ticket sequence are fixed when it is created, and its served mark is raised only by the reservation of a block."),
					 errhint("For other settings, create a new ticket sequence with snowid_ticket_create().")));
		if (!isnull && OidIsValid(extoid))
			snowid_ticket_register(relid, extoid);
		return PointerGetDatum(NULL);	/* no new row version */
	}

	if (TRIGGER_FIRED_BY_DELETE(trigdata->tg_event))
	{
		if (!isnull && OidIsValid(extoid) && snowid_ticket_is_ticket(relid, extoid))
		{
			const char *name = snowid_ticket_name(relid);

			ereport(ERROR,
					(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
					 errmsg("the row of ticket sequence \"%s\" cannot be deleted", name),
					 errdetail("The row holds the ticket's settings and its served mark as long as the sequence exists."),
					 errhint("Drop the ticket sequence instead (DROP SEQUENCE %s); its row goes with it.", name)));
		}
		return PointerGetDatum(tup);
	}
	elog(ERROR, "snowid_ticket_registered: fired by an unexpected event");
	return PointerGetDatum(NULL);	/* keep the compiler quiet */
}

/* ---------- install ---------- */

static void
snowid_ticket_guard_init(void)
{
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = snowid_ticket_utility;
	CacheRegisterRelcacheCallback(snowid_ticket_table_cb, (Datum) 0);
}

void
snowid_ticket_init(void)
{
	prev_object_access_hook = object_access_hook;
	object_access_hook = snowid_ticket_object_access;
	snowid_ticket_guard_init();
}
