/*-------------------------------------------------------------------------
 *
 * replication_guard.c
 *	  snowid_local_only(): the trigger that keeps logical replication out
 *	  of snowid's own tables.
 *
 * Every table of the extension holds the state of the server it is on: the
 * settings of its tickets (snowid_ticket, whose rows name sequences by OID),
 * or, on a registry, its leases, pools and ranges.  A change made to one
 * of them on another server means nothing here, and applied it would
 * overwrite or collide with this server's own rows.  A FOR ALL TABLES
 * publication carries them all the same (PostgreSQL has no way to leave a
 * table out of one before 19).
 *
 * The trigger is a BEFORE ROW trigger on each of snowid's tables, enabled
 * REPLICA: it fires only under session_replication_role = replica, which is
 * how logical replication's apply and table-copy workers run.  There it
 * skips the row (returns NULL) when the change comes from replication (a
 * logical replication worker, or any session replaying for a replication
 * origin, as pglogical's workers do), with one WARNING per table and
 * transaction; the other changes of the same transaction, the
 * application's rows, are applied as usual.  A data load that sets
 * session_replication_role = replica by hand is not replication: its rows
 * pass.
 *
 * Row triggers do not fire for TRUNCATE, which such a publication carries
 * too, and a statement trigger cannot skip it: the same function, called
 * by the BEFORE TRUNCATE statement trigger snowid_local_only_truncate on
 * each of snowid's tables (enabled ALWAYS, so that it also fires in a
 * session that replays for an origin without session_replication_role =
 * replica), refuses a TRUNCATE that comes from replication with an ERROR.
 * The subscription stops at that transaction until the DBA takes snowid's
 * tables out of the publication and skips it: a stopped subscription loses
 * nothing, while an applied TRUNCATE would empty a registry's live leases
 * and ranges (a node or a value then granted twice) or a server's tickets.
 * A TRUNCATE by the server's own sessions passes.
 *
 * An ALTER TABLE ... ENABLE TRIGGER (ALL, USER or by name) on one of
 * snowid's tables would leave these triggers enabled ORIGIN, where the
 * apply workers never fire them: ticket_hooks.c sets them back to the mode
 * the install script gave them (snowid_keep_trigger_modes).
 *
 * The event trigger fires at the end of CREATE and ALTER PUBLICATION and,
 * when the publication now includes tables of snowid (FOR ALL TABLES, FOR
 * TABLES IN SCHEMA of snowid's schema, or by name), says so in a WARNING
 * on the publisher, where the mistake is made.  Nothing here touches
 * shared memory or GUCs; it needs no preload.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/event_trigger.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "nodes/parsenodes.h"
#include "replication/logicalworker.h"
#include "replication/origin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(snowid_local_only);
PG_FUNCTION_INFO_V1(snowid_publication_check);

/* The table and transaction last warned about: one WARNING for each pair. */
static Oid	warned_table = InvalidOid;
static TimestampTz warned_xact = 0;

/* Does this session apply changes made on another server? */
static bool
snowid_applying_replicated_changes(void)
{
	return IsLogicalWorker() || replorigin_session_origin != InvalidRepOriginId;
}

Datum
snowid_local_only(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Relation	rel;
	HeapTuple	keep;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_BEFORE(trigdata->tg_event))
		elog(ERROR, "snowid_local_only: not called as a BEFORE trigger");
	rel = trigdata->tg_relation;

	if (TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event))
	{
		if (snowid_applying_replicated_changes())
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("refusing a replicated TRUNCATE of snowid table \"%s.%s\"",
							get_namespace_name(RelationGetNamespace(rel)),
							RelationGetRelationName(rel)),
					 errdetail("The tables of snowid hold the state of their own server (its tickets, or a registry's leases and ranges): emptied by another server's TRUNCATE, they would hand out node IDs and values that are still held. A TRUNCATE cannot be skipped as a row change is, so its whole transaction is refused, and replication stops there."),
					 errhint("Publish the application's tables by name (CREATE PUBLICATION ... FOR TABLE) instead of FOR ALL TABLES. Then skip this transaction with ALTER SUBSCRIPTION ... SKIP (lsn = '...'), giving the LSN that this error's context reports as \"finished at\"; the application's changes of that transaction are skipped with it, so apply them by hand if they matter.")));
		return PointerGetDatum(NULL);
	}
	if (!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event))
		elog(ERROR, "snowid_local_only: fired by an unexpected event");
	keep = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ?
		trigdata->tg_newtuple : trigdata->tg_trigtuple;

	if (!snowid_applying_replicated_changes())
		return PointerGetDatum(keep);

	if (warned_table != RelationGetRelid(rel) ||
		warned_xact != GetCurrentTransactionStartTimestamp())
	{
		warned_table = RelationGetRelid(rel);
		warned_xact = GetCurrentTransactionStartTimestamp();
		ereport(WARNING,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("skipping a change to snowid table \"%s.%s\" that arrived by logical replication",
						get_namespace_name(RelationGetNamespace(rel)),
						RelationGetRelationName(rel)),
				 errdetail("The tables of snowid hold the state of their own server (its tickets, or a registry's leases and ranges), which a change made on another server must not overwrite. The other changes of the transaction are applied."),
				 errhint("Publish the application's tables by name (CREATE PUBLICATION ... FOR TABLE) rather than FOR ALL TABLES, and create the tickets on every server.")));
	}
	return PointerGetDatum(NULL);
}

/*
 * The tables of the snowid extension that publication pubname publishes,
 * as a list for a message ("public.snowid_ticket, ..."), or NULL if none.
 */
static char *
snowid_published_tables(const char *pubname)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1];
	char	   *tables = NULL;
	MemoryContext caller = CurrentMemoryContext;

	values[0] = CStringGetTextDatum(pubname);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args(
							  "SELECT pg_catalog.string_agg(pg_catalog.quote_ident(p.schemaname) "
							  "OPERATOR(pg_catalog.||) '.' OPERATOR(pg_catalog.||) "
							  "pg_catalog.quote_ident(p.tablename), ', ' ORDER BY p.tablename) "
							  "FROM pg_catalog.pg_publication_tables p "
							  "JOIN pg_catalog.pg_namespace n ON n.nspname OPERATOR(pg_catalog.=) p.schemaname "
							  "JOIN pg_catalog.pg_class c ON c.relnamespace OPERATOR(pg_catalog.=) n.oid "
							  " AND c.relname OPERATOR(pg_catalog.=) p.tablename "
							  "JOIN pg_catalog.pg_depend d ON d.objid OPERATOR(pg_catalog.=) c.oid "
							  " AND d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass "
							  " AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass "
							  " AND d.deptype OPERATOR(pg_catalog.=) 'e' "
							  "JOIN pg_catalog.pg_extension x ON x.oid OPERATOR(pg_catalog.=) d.refobjid "
							  " AND x.extname OPERATOR(pg_catalog.=) 'snowid' "
							  "WHERE p.pubname OPERATOR(pg_catalog.=) $1",
							  1, argtypes, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "reading the tables of publication \"%s\" failed", pubname);
	if (SPI_processed == 1)
	{
		char	   *found = SPI_getvalue(SPI_tuptable->vals[0],
										 SPI_tuptable->tupdesc, 1);

		if (found != NULL)
			tables = MemoryContextStrdup(caller, found);
	}
	SPI_finish();
	return tables;
}

Datum
snowid_publication_check(PG_FUNCTION_ARGS)
{
	EventTriggerData *trigdata;
	const char *pubname = NULL;
	char	   *tables;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		elog(ERROR, "snowid_publication_check: not called as an event trigger");
	trigdata = (EventTriggerData *) fcinfo->context;
	if (IsA(trigdata->parsetree, CreatePublicationStmt))
		pubname = ((CreatePublicationStmt *) trigdata->parsetree)->pubname;
	else if (IsA(trigdata->parsetree, AlterPublicationStmt))
		pubname = ((AlterPublicationStmt *) trigdata->parsetree)->pubname;
	if (pubname == NULL)
		PG_RETURN_VOID();

	tables = snowid_published_tables(pubname);
	if (tables != NULL)
		ereport(WARNING,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("publication \"%s\" publishes snowid's own tables", pubname),
				 errdetail("Tables %s hold the state of this server (its tickets, or a registry's leases and ranges); subscribers with snowid skip their changes, and a ticket created here alone stops a subscription until it exists there too.",
						   tables),
				 errhint("Publish the application's tables by name (CREATE PUBLICATION ... FOR TABLE) rather than FOR ALL TABLES or FOR TABLES IN SCHEMA of snowid's schema.")));
	PG_RETURN_VOID();
}
