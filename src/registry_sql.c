/*-------------------------------------------------------------------------
 *
 * registry_sql.c
 *	  snowid_registry_status() and snowid_registry_stats(): the lease state
 *	  and the registry worker's counts, as SQL sees them; and, on the
 *	  registry's side, snowid_registry_host(): how the server that hosts a
 *	  registry database issues IDs itself.
 *
 * Where the registry is, and libpq's words on why it cannot be reached,
 * only for those who may read the settings (pg_read_all_settings); which
 * server holds this server's node in a conflict only for superusers and
 * pg_monitor (snowid_registry_detail_for_user).
 *
 * A registry database may live on a server that issues IDs itself (a
 * Citus coordinator, say), which cannot be a member of it: the registry's
 * claims (sql/install/30_registry.sql) ask snowid_registry_host() for the
 * node that server issues under, so that they never grant it to another
 * server, and for a bound above every ID it has issued.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xlog.h"
#include "catalog/pg_authid.h"
#include "fmgr.h"
#include "funcapi.h"
#include "guc.h"
#include "layout.h"
#include "lease.h"
#include "miscadmin.h"
#include "postmaster/postmaster.h"
#include "state.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"

PG_FUNCTION_INFO_V1(snowid_registry_status);
PG_FUNCTION_INFO_V1(snowid_registry_stats);
PG_FUNCTION_INFO_V1(snowid_registry_host);

Datum
snowid_registry_status(PG_FUNCTION_ARGS)
{
	SnowidRegistryShared *r = snowid_registry;
	TupleDesc	tupdesc;
	Datum		values[6];
	bool		nulls[6] = {false};
	SnowidRegistryShared copy;
	char	   *detail;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	(void) snowid_require_shared();

	snowid_registry_read(r, &copy);

	/* where the registry is: for those who may read the setting */
	if (copy.state == SNOWID_REGISTRY_OFF || copy.registry[0] == '\0' ||
		!has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_SETTINGS))
		nulls[0] = true;
	else
		values[0] = CStringGetTextDatum(copy.registry);
	values[1] = CStringGetTextDatum(snowid_state_name(copy.state));
	values[2] = Int32GetDatum(copy.node_id);
	nulls[2] = copy.node_id < 0;
	values[3] = TimestampTzGetDatum(copy.deadline);
	nulls[3] = copy.deadline == 0;
	values[4] = TimestampTzGetDatum(copy.last_contact);
	nulls[4] = copy.last_contact == 0;
	detail = snowid_registry_detail_for_user(&copy);
	if (detail == NULL)
		nulls[5] = true;
	else
		values[5] = CStringGetTextDatum(detail);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

Datum
snowid_registry_stats(PG_FUNCTION_ARGS)
{
	SnowidRegistryShared *r;
	TupleDesc	tupdesc;
	Datum		values[6];
	bool		nulls[6] = {false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	(void) snowid_require_shared();
	r = snowid_registry;
	values[0] = Int64GetDatum((int64) pg_atomic_read_u64(&r->claims));
	values[1] = Int64GetDatum((int64) pg_atomic_read_u64(&r->renewals));
	values[2] = Int64GetDatum((int64) pg_atomic_read_u64(&r->conflicts));
	values[3] = Int64GetDatum((int64) pg_atomic_read_u64(&r->outages));
	values[4] = Int64GetDatum((int64) pg_atomic_read_u64(&r->failures));
	values[5] = Int64GetDatum((int64) pg_atomic_read_u64(&r->releases));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * This server as the host of a registry database: its identity in the form
 * a member sends it (cluster name, host name, port, system identifier),
 * and, where snowid is preloaded, the layout it issues under (in
 * snowid_layout_text()'s words, as members send theirs), the node it
 * issues under now (NULL while the gate is shut), its snowid.max_lead, its
 * start identity and a bound above every ID it has issued since its data
 * directory began, under any node and any earlier layout: the ID of the
 * stream's next position on the highest node (every position issued lies
 * below the next one, and a start continues above everything issued
 * before).  NULL for all of these where snowid is not preloaded: such a
 * server issues nothing.
 */
Datum
snowid_registry_host(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[9];
	bool		nulls[9] = {false};
	char		host[256];
	char		sysid[32];

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	if (snowid_gucs_defined && snowid_shared != NULL && snowid_registry != NULL)
	{
		const SnowidLayout *layout = &snowid_active_layout;
		int			node = SNOWID_GATE_NODE(pg_atomic_read_u64(&snowid_shared->gate));
		uint64		next = pg_atomic_read_u64(&snowid_shared->next_position);
		uint64		bound;
		char		start[SNOWID_START_ID_LEN + 1];

		SpinLockAcquire(&snowid_registry->mutex);
		memcpy(start, snowid_registry->start_id, sizeof(start));
		SpinLockRelease(&snowid_registry->mutex);

		values[0] = CStringGetTextDatum(snowid_layout_text());
		values[1] = Int32GetDatum(node);
		nulls[1] = node < 0;
		values[2] = Int64GetDatum((int64) snowid_max_lead_ms);
		bound = next == 0 ? 0 :
			snowid_bound_of_position(layout, next,
									 (int32) snowid_max_node(layout));
		values[3] = Int64GetDatum((int64) Min(bound, (uint64) PG_INT64_MAX));
		nulls[3] = bound == 0;
		values[4] = CStringGetTextDatum(start);
		nulls[4] = start[0] == '\0';
	}
	else
		nulls[0] = nulls[1] = nulls[2] = nulls[3] = nulls[4] = true;

	snowid_host_name(host, sizeof(host));
	snprintf(sysid, sizeof(sysid), UINT64_FORMAT, GetSystemIdentifier());
	values[5] = CStringGetTextDatum(cluster_name != NULL ? cluster_name : "");
	values[6] = CStringGetTextDatum(host);
	values[7] = Int32GetDatum(PostPortNumber);
	values[8] = DirectFunctionCall3(numeric_in, CStringGetDatum(sysid),
									ObjectIdGetDatum(InvalidOid),
									Int32GetDatum(-1));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
