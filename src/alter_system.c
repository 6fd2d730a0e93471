/*-------------------------------------------------------------------------
 *
 * alter_system.c
 *	  The ALTER SYSTEM hook: a statement that would leave a layout the
 *	  server cannot start with is refused before it writes
 *	  postgresql.auto.conf.
 *
 * The layout parameters (node_id, node_bits, sequence_bits, id_bits, epoch,
 * tick) are PGC_POSTMASTER.  ALTER SYSTEM on one of them is checked
 * against the rules a start applies (guc.c, snowid_validate_layout): the
 * layout the next start would read must pass.  So must the continuation
 * rule (continuation.c) for a start under a changed layout, applied to the
 * IDs this server has issued so far (highwater.c).  A change that passes
 * but maps times onto other IDs warns about the tables whose partition
 * bounds it moves (partition_guard.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "alter_system.h"
#include "clock.h"
#include "compat.h"
#include "continuation.h"
#include "guc.h"
#include "highwater.h"
#include "layout.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "partition_guard.h"
#include "state.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"
#include "utils/timestamp.h"

static ProcessUtility_hook_type snowid_prev_process_utility = NULL;

/*
 * The layout parameters, as ALTER SYSTEM sees them.  The order is that of
 * the SnowidSetting values.
 */
typedef enum SnowidSetting
{
	SETTING_NODE_ID,
	SETTING_NODE_BITS,
	SETTING_SEQUENCE_BITS,
	SETTING_ID_BITS,
	SETTING_EPOCH,
	SETTING_TICK,
	SETTING_COUNT
} SnowidSetting;

static const char *const snowid_setting_names[SETTING_COUNT] = {
	"snowid.node_id",
	"snowid.node_bits",
	"snowid.sequence_bits",
	"snowid.id_bits",
	"snowid.epoch",
	"snowid.tick"
};

/* The layout parameter called name, or -1 if it is none of them. */
static int
snowid_setting_of(const char *name)
{
	for (int i = 0; i < SETTING_COUNT; i++)
		if (pg_strcasecmp(name, snowid_setting_names[i]) == 0)
			return i;
	return -1;
}

/*
 * Whether the running value of a parameter came from the server's command
 * line: a restart with the same command line keeps it, whatever the
 * configuration files say.
 */
static bool
snowid_set_on_command_line(const char *name)
{
	struct config_generic *var = snowid_find_guc(name);

	return var != NULL && var->source == PGC_S_ARGV;
}

/*
 * Let the entries of a parsed configuration file set the layout parameters
 * not fixed by the command line, the last entry winning as it does at
 * start.  Entries for skip (any layout parameter if skip_all) are left
 * out: ALTER SYSTEM is about to replace or remove them.
 */
static void
snowid_apply_file(ConfigVariable *item, const char **values, const bool *fixed,
				  int skip, bool skip_all)
{
	for (; item != NULL; item = item->next)
	{
		int			setting;

		if (item->name == NULL || item->value == NULL)
			continue;			/* a line that did not parse */
		setting = snowid_setting_of(item->name);
		if (setting < 0 || fixed[setting] || skip_all || setting == skip)
			continue;
		values[setting] = item->value;
	}
}

/* An integer setting, or false if it is not one within min .. max. */
static bool
snowid_setting_int(const char *text, int default_value, int flags, int min,
				   int max, int *value)
{
	if (text == NULL)
	{
		*value = default_value;
		return true;
	}
	return parse_int(text, value, flags, NULL) && *value >= min && *value <= max;
}

/*
 * Refuse a layout (with node ID node_id) under which the next start could
 * not continue above the IDs this server has issued.  This is the start-up
 * rule (snowid_continuation, which the start calls too) applied to the
 * bound this server has reserved, in the running layout, and the clock now.
 * A server that has issued nothing and found no high-water file at start,
 * a server without a node ID, and an unchanged layout pass, as they pass
 * at start.  The state is read without a lock: IDs issued while the
 * statement runs move the bound by at most one reservation window.
 *
 * The error is OBJECT_NOT_IN_PREREQUISITE_STATE, as at start: the value is
 * valid in itself (a server that has issued nothing takes it); what stands
 * in its way is the IDs already issued.
 */
static void
snowid_check_continuation(const SnowidLayout *layout, int node_id)
{
	SnowidShared *shared = snowid_shared;
	uint64		bound;
	int64		last;
	TimestampTz now;
	SnowidContinuation c;
	StringInfoData changes;
	StringInfoData previous;
	char	   *issued_text;
	char	   *now_text;
	char	   *refusal_text;
	const char *when = "";

	if (!snowid_gucs_defined || shared == NULL ||
		snowid_layout_same(&snowid_active_layout, snowid_node_id, layout,
						   node_id))
		return;
	bound = snowid_highwater_issued_bound(shared, &last);
	if (bound == 0)
		return;
	now = snowid_clock_now();
	if (snowid_continuation(layout, node_id, bound, now, &c))
		return;

	initStringInfo(&changes);
	initStringInfo(&previous);
	snowid_describe_change(&snowid_active_layout, snowid_node_id, layout,
						   node_id, &changes, &previous);
	issued_text = last >= 0 ?
		psprintf("The last ID this server issued is " INT64_FORMAT "; every ID it issued or reserved is below " UINT64_FORMAT ".",
				 last, bound) :
		psprintf("Every ID this server issued or reserved is below " UINT64_FORMAT ".",
				 bound);
	now_text = snowid_issue_now_text(layout, node_id, now);
	refusal_text = snowid_continuation_refusal_text(layout, node_id, &c, now);
	if (c.expressible)
		when = psprintf(" Only time stands between the new layout and those IDs: if this server issues no more IDs, the change is possible once the clock has passed %s.",
						timestamptz_to_str(c.reachable_from));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("snowid layout change (%s) would be refused at the next server start",
					changes.data),
			 errdetail("%s The new layout would issue %s now; %s.",
					   issued_text, now_text, refusal_text),
			 errhint("Keep the settings in force (%s), or choose a layout under which the IDs of today lie above " UINT64_FORMAT ": an earlier snowid.epoch, a shorter snowid.tick or more node and sequence bits make the IDs of a given time larger.%s",
					 previous.data, bound, when)));
}

static void
snowid_alter_system_context(void *arg)
{
	errcontext("snowid layout the next server start would read from postgresql.conf and postgresql.auto.conf, with this ALTER SYSTEM applied");
}

/*
 * Refuse an ALTER SYSTEM that would leave a layout with which the server
 * does not start.  The next start reads: values given on the command line;
 * for the others, the last one in postgresql.conf (and the files it
 * includes), then in postgresql.auto.conf as this statement leaves it;
 * else the default.  What ALTER SYSTEM itself refuses (a value out of
 * range or malformed, a missing privilege) is left to it, and so is a
 * configuration file that does not parse.
 */
static void
snowid_check_alter_system(AlterSystemStmt *stmt)
{
	VariableSetStmt *set = stmt->setstmt;
	const char *values[SETTING_COUNT] = {NULL};
	bool		fixed[SETTING_COUNT] = {false};
	bool		reset_all = (set->kind == VAR_RESET_ALL);
	int			target = -1;
	ConfigVariable *conf_head = NULL;
	ConfigVariable *conf_tail = NULL;
	ConfigVariable *auto_head = NULL;
	ConfigVariable *auto_tail = NULL;
	int			node_id;
	int			node_bits;
	int			sequence_bits;
	int			id_bits;
	int			tick_ms;
	TimestampTz epoch;
	const char *why;
	SnowidLayout layout;
	ErrorContextCallback callback;

	if (!reset_all)
	{
		target = snowid_setting_of(set->name);
		if (target < 0)
			return;
		if (set->kind != VAR_SET_VALUE && set->kind != VAR_SET_DEFAULT &&
			set->kind != VAR_RESET)
			return;
		if (!superuser() &&
			pg_parameter_aclcheck(set->name, GetUserId(),
								  ACL_ALTER_SYSTEM) != ACLCHECK_OK)
			return;
	}
	else if (!superuser())
		return;

	for (int i = 0; i < SETTING_COUNT; i++)
	{
		fixed[i] = snowid_set_on_command_line(snowid_setting_names[i]);
		if (fixed[i])
			values[i] = GetConfigOption(snowid_setting_names[i], false, false);
	}

	if (!ParseConfigFile(ConfigFileName, true, NULL, 0, 0, LOG,
						 &conf_head, &conf_tail) ||
		!ParseConfigFile(PG_AUTOCONF_FILENAME, false, NULL, 0, 0, LOG,
						 &auto_head, &auto_tail))
		goto done;
	snowid_apply_file(conf_head, values, fixed, -1, false);
	snowid_apply_file(auto_head, values, fixed, target, reset_all);
	if (target >= 0 && set->kind == VAR_SET_VALUE && !fixed[target])
		values[target] = ExtractSetVariableArgs(set);

	if (!snowid_setting_int(values[SETTING_NODE_ID], -1, 0, -1, PG_INT32_MAX,
							&node_id) ||
		!snowid_setting_int(values[SETTING_NODE_BITS],
							SNOWID_DEFAULT_NODE_BITS, 0, 0, 31, &node_bits) ||
		!snowid_setting_int(values[SETTING_SEQUENCE_BITS],
							SNOWID_DEFAULT_SEQUENCE_BITS, 0, 0, 31,
							&sequence_bits) ||
		!snowid_setting_int(values[SETTING_ID_BITS], SNOWID_DEFAULT_ID_BITS, 0,
							SNOWID_MIN_ID_BITS, 63, &id_bits) ||
		!snowid_setting_int(values[SETTING_TICK], SNOWID_DEFAULT_TICK_MS,
							GUC_UNIT_MS, 1, SNOWID_MAX_TICK_MS, &tick_ms) ||
		!snowid_parse_epoch(values[SETTING_EPOCH] ? values[SETTING_EPOCH] :
							SNOWID_DEFAULT_EPOCH, &epoch, &why))
		goto done;

	callback.callback = snowid_alter_system_context;
	callback.arg = NULL;
	callback.previous = error_context_stack;
	error_context_stack = &callback;
	snowid_validate_layout(&layout, id_bits, node_bits, sequence_bits, epoch,
						   tick_ms, node_id, ERROR, true);
	snowid_check_continuation(&layout, node_id);
	error_context_stack = callback.previous;
	if (snowid_gucs_defined)
		snowid_warn_partition_bounds(&snowid_active_layout, snowid_node_id,
									 &layout, node_id);

done:
	FreeConfigVariables(conf_head);
	FreeConfigVariables(auto_head);
}

static void
snowid_process_utility(PlannedStmt *pstmt, const char *queryString,
					   bool readOnlyTree, ProcessUtilityContext context,
					   ParamListInfo params, QueryEnvironment *queryEnv,
					   DestReceiver *dest, QueryCompletion *qc)
{
	if (IsA(pstmt->utilityStmt, AlterSystemStmt))
		snowid_check_alter_system((AlterSystemStmt *) pstmt->utilityStmt);

	if (snowid_prev_process_utility)
		snowid_prev_process_utility(pstmt, queryString, readOnlyTree, context,
									params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
}

void
snowid_alter_system_init(void)
{
	snowid_prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = snowid_process_utility;
}
