/*-------------------------------------------------------------------------
 *
 * counter_citus.c
 *	  Counters per key on Citus.  A counter's keys live in a state table of
 *	  its own (one per counter, never one per key) in snowid's schema,
 *	  owned by the extension's owner, its column key of the type (and
 *	  collation) of the distribution column of the table the counter
 *	  numbers, and distributed co-located with that table: a key's row is
 *	  in the shard of the rows of the same key, on the worker that holds
 *	  them, and moves with them.  Every statement on it (counter_row.c) is
 *	  an ordinary one on a distributed table, so Citus sends it to that
 *	  shard in the caller's distributed transaction, from the coordinator
 *	  or from any worker: one row per key in the whole cluster, locked
 *	  there, committed with the caller's transaction (two-phase).  A fast
 *	  counter's blocks are reserved from the same row by each node's
 *	  server process, in a transaction of its own (counter_row.c), and
 *	  cached on that node.
 *
 *	  The coordinator's snowid_counter_create makes the state table; each
 *	  worker's (run there afterwards) finds it by its name, made from the
 *	  counter's qualified name, and checks its co-location.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "common/md5.h"
#include "compat.h"
#include "counter_citus.h"
#include "counter_exec.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "ticket_catalog.h"
#include "utils/builtins.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"

/* How a table is distributed: 0 in every column when it is not. */
typedef struct
{
	bool		hash;			/* distributed by hash of a column */
	Oid			colocation;		/* its co-location group */
	Oid			type;			/* of its distribution column */
	Oid			collation;
} SnowidCitusTable;

static const SnowidCounterStmt citus_table = {
	"SELECT (p.partmethod OPERATOR(pg_catalog.=) 'h')::pg_catalog.int4::pg_catalog.int8, "
	"p.colocationid::pg_catalog.int8, "
	"a.atttypid::pg_catalog.oid::pg_catalog.int8, "
	"a.attcollation::pg_catalog.oid::pg_catalog.int8 "
	"FROM pg_catalog.pg_dist_partition p "
	"LEFT JOIN pg_catalog.pg_attribute a "
	"ON a.attrelid OPERATOR(pg_catalog.=) p.logicalrelid "
	"AND a.attname OPERATOR(pg_catalog.=) "
	"pg_catalog.column_to_column_name(p.logicalrelid, p.partkey) "
	"WHERE p.logicalrelid OPERATOR(pg_catalog.=) $1%.0s",
	1, {REGCLASSOID}
};

static const SnowidCounterStmt citus_coordinator = {
	"SELECT pg_catalog.citus_is_coordinator()::pg_catalog.int4::pg_catalog.int8%.0s",
	0, {InvalidOid}
};

/* Whether Citus is installed in this database. */
bool
snowid_counter_citus(void)
{
	return OidIsValid(get_extension_oid("citus", true));
}

static void
snowid_citus_table(Oid extnsp, Oid relid, SnowidCitusTable *t)
{
	Datum		arg = ObjectIdGetDatum(relid);
	int64		out[COUNTER_STMT_OUTS];

	memset(t, 0, sizeof(SnowidCitusTable));
	if (!snowid_counter_exec(extnsp, &citus_table, &arg, out))
		return;
	t->hash = out[0] != 0;
	t->colocation = (Oid) out[1];
	t->type = (Oid) out[2];
	t->collation = (Oid) out[3];
}

static bool
snowid_citus_coordinator(Oid extnsp)
{
	int64		out[COUNTER_STMT_OUTS];

	return snowid_counter_exec(extnsp, &citus_coordinator, NULL, out) &&
		out[0] != 0;
}

/* Run a utility statement or a query as the owner of snowid's tables. */
static void
snowid_citus_owner_sql(Oid extnsp, const char *sql)
{
	Oid			save_userid;
	int			save_sec_context;
	int			rc;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(snowid_ticket_catalog_owner(extnsp),
						   save_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	rc = SPI_execute(sql, false, 0);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	if (rc < 0)
		elog(ERROR, "\"%s\" failed: %s", sql, SPI_result_code_string(rc));
	SPI_finish();
}

static Oid
snowid_citus_rel_owner(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/*
 * The state table's name: the same on every node for the same counter
 * name, within NAMEDATALEN whatever the name.
 */
static char *
snowid_citus_state_name(const char *qualified)
{
	char		hex[33];
	const char *errstr = NULL;

	if (!pg_md5_hash(qualified, strlen(qualified), hex, &errstr))
		elog(ERROR, "could not hash counter name: %s", errstr);
	hex[16] = '\0';
	return psprintf("snowid_counter_state_%s", hex);
}

/*
 * The state table of counter qualified (its handle just made), co-located
 * with colocate_with: made here on the coordinator, found and checked on
 * a worker.  The caller must own colocate_with: the state table's shards
 * move with its shards.  The creator of a fast counter gets no DELETE on
 * it: a key deleted would start over while other nodes still hand out
 * their blocks of it.
 */
Oid
snowid_counter_citus_create(Oid extnsp, const char *qualified,
							Oid colocate_with, bool fast)
{
	SnowidCitusTable t;
	SnowidCitusTable s;
	char	   *colocate_name = get_rel_name(colocate_with);
	char	   *name = snowid_citus_state_name(qualified);
	char	   *state_name;
	Oid			state;
	int			nest;
	bool		coordinator = snowid_citus_coordinator(extnsp);

	if (colocate_name == NULL)
		elog(ERROR, "cache lookup failed for relation %u", colocate_with);
	colocate_name = quote_qualified_identifier(get_namespace_name(get_rel_namespace(colocate_with)),
											   colocate_name);
	state_name = quote_qualified_identifier(get_namespace_name(extnsp), name);
	if (!snowid_owns_relation(colocate_with, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of table %s to co-locate a counter with it",
						colocate_name),
				 errdetail("The counter's keys are kept in shards that move with that table's shards.")));
	snowid_citus_table(extnsp, colocate_with, &t);
	if (!t.hash || !OidIsValid(t.type))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table %s is not distributed by a column", colocate_name),
				 errdetail("A counter on Citus keeps each key where the rows of that key live: in the shards of a hash-distributed table, not a reference, local or single-shard one."),
				 errhint("Distribute it by its tenant column first: SELECT create_distributed_table('%s', 'tenant').",
						 colocate_name)));
	state = get_relname_relid(name, extnsp);
	if (coordinator)
	{
		if (OidIsValid(state))
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_TABLE),
					 errmsg("state table %s of counter %s exists already",
							state_name, qualified),
					 errdetail("It is left from a counter of the same name that was dropped on a node other than the coordinator."),
					 errhint("A superuser may drop it if no node has that counter any more.")));
		snowid_citus_owner_sql(extnsp,
							   psprintf("CREATE TABLE %s (key %s%s%s PRIMARY KEY, last bigint NOT NULL)",
										state_name, format_type_be_qualified(t.type),
										OidIsValid(t.collation) ? " COLLATE " : "",
										OidIsValid(t.collation) ? generate_collation_name(t.collation) : ""));
		snowid_citus_owner_sql(extnsp,
							   psprintf("COMMENT ON TABLE %s IS %s", state_name,
										quote_literal_cstr(psprintf("keys of counter %s on Citus: the last value given to each (snowid, written by snowid_counter_next)",
																	qualified))));
		snowid_citus_owner_sql(extnsp,
							   psprintf("CREATE TRIGGER snowid_counter_forward BEFORE INSERT OR UPDATE OR DELETE ON %s "
										"FOR EACH ROW EXECUTE FUNCTION %s.snowid_counter_forward()",
										state_name,
										quote_identifier(get_namespace_name(extnsp))));
		/* Citus copies the trigger to every shard, moves included */
		nest = NewGUCNestLevel();
		(void) set_config_option("citus.enable_unsafe_triggers", "on",
								 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
								 true, 0, false);
		snowid_citus_owner_sql(extnsp,
							   psprintf("SELECT pg_catalog.create_distributed_table(%s, 'key', colocate_with => %s)",
										quote_literal_cstr(state_name),
										quote_literal_cstr(colocate_name)));
		AtEOXact_GUC(true, nest);
		/* the counter's creator grants its takers the rights they need */
		if (GetUserId() != snowid_ticket_catalog_owner(extnsp))
			snowid_citus_owner_sql(extnsp,
								   psprintf("GRANT SELECT, INSERT, UPDATE%s ON %s TO %s WITH GRANT OPTION",
											fast ? "" : ", DELETE", state_name,
											quote_identifier(GetUserNameFromId(GetUserId(), false))));
		CommandCounterIncrement();
		state = get_relname_relid(name, extnsp);
		if (!OidIsValid(state))
			elog(ERROR, "state table %s not found after creation", state_name);
	}
	else if (!OidIsValid(state))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("counter %s has no state table on Citus yet", qualified),
				 errdetail("Its state table %s is made by snowid_counter_create() on the coordinator.",
						   state_name),
				 errhint("Create the counter on the coordinator first, then on the workers.")));
	snowid_citus_table(extnsp, state, &s);
	if (snowid_citus_rel_owner(state) != snowid_ticket_catalog_owner(extnsp))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s is not the state table of counter %s",
						state_name, qualified),
				 errdetail("A counter's state table belongs to the owner of snowid's tables; this one has another owner."),
				 errhint("A superuser may drop it; then create the counter on the coordinator.")));
	if (!s.hash || s.colocation != t.colocation || s.type != t.type)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("state table %s of counter %s is not co-located with table %s",
						state_name, qualified, colocate_name),
				 errdetail("A key's row must be in the shard of that key's rows."),
				 errhint("Create the counter with the same colocate_with on every node.")));
	return state;
}

/* Drop counter's state table: on the coordinator, if it is still there. */
void
snowid_counter_citus_drop(Oid extnsp, Oid state)
{
	char	   *name = get_rel_name(state);

	if (name == NULL || !snowid_counter_citus() ||
		!snowid_citus_coordinator(extnsp))
		return;
	snowid_citus_owner_sql(extnsp,
						   psprintf("DROP TABLE %s",
									quote_qualified_identifier(get_namespace_name(get_rel_namespace(state)),
															   name)));
}

/*
 * The qualified name of counter c's state table, on which the current user
 * needs the rights need (the statements run as the caller); refused if it
 * is gone.
 */
const char *
snowid_counter_citus_table(const SnowidCounter *c, AclMode need)
{
	char	   *name = get_rel_name(c->state);
	char	   *qualified;

	if (name == NULL || !OidIsValid(c->keytype))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the keys of counter %s are gone", c->name),
				 errdetail("Its state table on Citus has been dropped."),
				 errhint("Drop the counter on this node too: SELECT snowid_counter_drop('%s').",
						 c->name)));
	qualified = quote_qualified_identifier(get_namespace_name(get_rel_namespace(c->state)),
										   name);
	if (pg_class_aclmask(c->state, GetUserId(), need, ACLMASK_ALL) != need)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for the keys of counter %s", c->name),
				 errdetail("On Citus, a counter's keys are written as the caller, in its state table %s.",
						   qualified),
				 errhint("Grant them with the counter, on the coordinator: GRANT SELECT, INSERT, UPDATE ON TABLE %s TO ...",
						 qualified)));
	return qualified;
}

/* key as a value of the state table's key column (refused if invalid). */
Datum
snowid_counter_citus_key(const SnowidCounter *c, text *key)
{
	Oid			typinput;
	Oid			typioparam;

	getTypeInputInfo(c->keytype, &typinput, &typioparam);
	return OidInputFunctionCall(typinput, text_to_cstring(key), typioparam, -1);
}
