/*-------------------------------------------------------------------------
 *
 * registry_stub.c
 *	  TEMPORARY stand-ins for the member-side registry functions
 *	  snowid_registry_status() and snowid_registry_stats(), so that the 1.3
 *	  install script (which declares them) loads before src/registry*.c
 *	  exists.  Drop this file (and its OBJS line) when merging those.
 *
 * No shared state.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"

PG_FUNCTION_INFO_V1(snowid_registry_status);
PG_FUNCTION_INFO_V1(snowid_registry_stats);

/* a row of NULLs */
Datum
snowid_registry_status(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[6] = {0};
	bool		nulls[6] = {true, true, true, true, true, true};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/* a row of zeros */
Datum
snowid_registry_stats(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[6];
	bool		nulls[6] = {false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	for (int i = 0; i < 6; i++)
		values[i] = Int64GetDatum(0);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
