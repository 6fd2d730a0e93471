/*-------------------------------------------------------------------------
 *
 * partition_guard.c
 *	  A warning, at ALTER SYSTEM on a layout parameter, for the tables whose
 *	  partition bounds the change would move.
 *
 * A table partitioned by range on an ID column has bounds that are IDs,
 * computed once (with snowid_from_timestamp or snowid_interval) under the
 * layout in force.  A layout that maps times onto other IDs (another epoch,
 * tick, or number of bits below the tick) makes those bounds stand for other
 * times: rows land in partitions meant for other days, and retention by ID
 * range drops other rows than intended.  The bounds are not wrong as IDs
 * (no ID is lost or issued twice), so the change is not refused; the
 * statement warns, naming the tables.
 *
 * The tables found are those of the current database partitioned by range
 * on one column whose default calls snowid_next() (not snowid_next_uuid():
 * a UUID's order starts with its Unix milliseconds, which no layout change
 * moves).  Other databases, and columns filled by the application, are out
 * of sight: the README says so.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_attrdef.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_proc.h"
#include "continuation.h"
#include "executor/spi.h"
#include "layout.h"
#include "lib/stringinfo.h"
#include "partition_guard.h"
#include "utils/builtins.h"

/* Tables named in the message; the others are counted. */
#define SNOWID_PARTITION_GUARD_NAMES 10

/*
 * The range-partitioned tables of the current database whose partition key
 * is one column with a default that calls snowid_next() of the extension
 * snowid.  $1, $2, $3: the catalogs pg_attrdef, pg_proc, pg_extension.
 */
static const char *const snowid_partitioned_by_id_sql =
"SELECT c.oid::pg_catalog.regclass::pg_catalog.text"
" FROM pg_catalog.pg_partitioned_table t"
" JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.partrelid"
" JOIN pg_catalog.pg_attrdef a ON a.adrelid OPERATOR(pg_catalog.=) t.partrelid"
"  AND a.adnum OPERATOR(pg_catalog.=) t.partattrs[0]"
" WHERE t.partstrat OPERATOR(pg_catalog.=) 'r'"
"  AND t.partnatts OPERATOR(pg_catalog.=) 1"
"  AND EXISTS (SELECT FROM pg_catalog.pg_depend d"
"   JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) d.refobjid"
"   JOIN pg_catalog.pg_depend e ON e.classid OPERATOR(pg_catalog.=) $2"
"    AND e.objid OPERATOR(pg_catalog.=) p.oid"
"    AND e.refclassid OPERATOR(pg_catalog.=) $3"
"    AND e.deptype OPERATOR(pg_catalog.=) 'e'"
"   JOIN pg_catalog.pg_extension x ON x.oid OPERATOR(pg_catalog.=) e.refobjid"
"   WHERE d.classid OPERATOR(pg_catalog.=) $1"
"    AND d.objid OPERATOR(pg_catalog.=) a.oid"
"    AND d.refclassid OPERATOR(pg_catalog.=) $2"
"    AND x.extname OPERATOR(pg_catalog.=) 'snowid'"
"    AND p.proname OPERATOR(pg_catalog.=) 'snowid_next')"
" ORDER BY 1";

/*
 * Whether the two layouts map every time onto the same smallest ID: the ID
 * of a tick is tick << (node_bits + sequence_bits), so the epoch, the tick
 * and the bits below it decide; node_id and id_bits do not.
 */
static bool
snowid_same_ids_of_time(const SnowidLayout *a, const SnowidLayout *b)
{
	return a->epoch == b->epoch && a->tick_us == b->tick_us &&
		a->node_bits + a->sequence_bits == b->node_bits + b->sequence_bits;
}

void
snowid_warn_partition_bounds(const SnowidLayout *was, int was_node,
							 const SnowidLayout *now, int now_node)
{
	Oid			argtypes[3] = {OIDOID, OIDOID, OIDOID};
	Datum		args[3];
	StringInfoData tables;
	StringInfoData changes;
	StringInfoData previous;
	uint64		count;

	if (snowid_same_ids_of_time(was, now))
		return;

	args[0] = ObjectIdGetDatum(AttrDefaultRelationId);
	args[1] = ObjectIdGetDatum(ProcedureRelationId);
	args[2] = ObjectIdGetDatum(ExtensionRelationId);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args(snowid_partitioned_by_id_sql, 3, argtypes, args,
							  NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not look up the tables partitioned by snowid ranges");
	count = SPI_processed;
	initStringInfo(&tables);
	for (uint64 i = 0; i < count && i < SNOWID_PARTITION_GUARD_NAMES; i++)
		appendStringInfo(&tables, "%s%s", i > 0 ? ", " : "",
						 SPI_getvalue(SPI_tuptable->vals[i],
									  SPI_tuptable->tupdesc, 1));
	if (count > SNOWID_PARTITION_GUARD_NAMES)
		appendStringInfo(&tables, " and " UINT64_FORMAT " more",
						 count - SNOWID_PARTITION_GUARD_NAMES);
	SPI_finish();
	if (count == 0)
		return;

	initStringInfo(&changes);
	initStringInfo(&previous);
	snowid_describe_change(was, was_node, now, now_node, &changes, &previous);
	ereport(WARNING,
			(errmsg_plural("snowid layout change (%s) moves the times the partition bounds of table %s stand for",
						   "snowid layout change (%s) moves the times the partition bounds of tables %s stand for",
						   (unsigned long) count, changes.data, tables.data),
			 errdetail_plural("The table is partitioned by range on a column filled by snowid, with bounds that are IDs computed under the layout in force (%s). Under the new layout, IDs reach each bound at another time: new rows land in partitions meant for other times, and retention by ID range (pg_partman's too) drops other rows than intended.",
							  "The tables are partitioned by range on a column filled by snowid, with bounds that are IDs computed under the layout in force (%s). Under the new layout, IDs reach each bound at another time: new rows land in partitions meant for other times, and retention by ID range (pg_partman's too) drops other rows than intended.",
							  (unsigned long) count, previous.data),
			 errhint("Keep the layout in force, or after the restart create the partitions anew with bounds from snowid_from_timestamp and snowid_interval and move the rows. Only the current database was checked.")));
}
