/*-------------------------------------------------------------------------
 *
 * registry_sql.c
 *	  snowid_registry_status() and snowid_registry_stats(): the lease state
 *	  and the registry worker's counts, as SQL sees them.
 *
 * Where the registry is, and libpq's words on why it cannot be reached,
 * only for those who may read the settings (pg_read_all_settings); which
 * server holds this server's node in a conflict only for superusers and
 * pg_monitor (snowid_registry_detail_for_user).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_authid.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lease.h"
#include "miscadmin.h"
#include "state.h"
#include "utils/acl.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(snowid_registry_status);
PG_FUNCTION_INFO_V1(snowid_registry_stats);

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
