/*-------------------------------------------------------------------------
 *
 * stats.c
 *	  snowid_stats(): what the generator has done since the server started.
 *
 * Reads the atomics in SnowidShared without a lock; each value is exact,
 * the row as a whole is not a single snapshot.  ids_issued and last_id
 * come from the backends' own counts, summed (state.c); last_id is the
 * highest ID issued, not the stream's next position, which may lie above
 * positions claimed and dropped.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "clock.h"
#include "fmgr.h"
#include "funcapi.h"
#include "guc.h"
#include "layout.h"
#include "lease.h"
#include "state.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(snowid_stats);

Datum
snowid_stats(PG_FUNCTION_ARGS)
{
	SnowidShared *shared = snowid_require_shared();
	const SnowidLayout *layout = &snowid_active_layout;
	TupleDesc	tupdesc;
	Datum		values[11];
	bool		nulls[11] = {false};
	uint64		last = 0;
	bool		issued = snowid_last_issued(shared, &last);
	uint64		until = pg_atomic_read_u64(&shared->reserved_until);
	uint64		next = pg_atomic_read_u64(&shared->next_position);
	double		lead_ms = 0.0;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	values[0] = Int64GetDatum((int64) snowid_ids_issued(shared));
	values[1] = Int64GetDatum((int64) pg_atomic_read_u64(&shared->ticks_borrowed));
	values[2] = Int64GetDatum((int64) pg_atomic_read_u64(&shared->waits));
	values[3] = Float8GetDatum((double) pg_atomic_read_u64(&shared->wait_us) / 1000.0);
	values[4] = Int64GetDatum((int64) pg_atomic_read_u64(&shared->clock_errors));
	values[5] = Int64GetDatum((int64) pg_atomic_read_u64(&shared->regressions));
	values[6] = Float8GetDatum((double) pg_atomic_read_u64(&shared->largest_regression_us) / 1000.0);

	/* last_id: only once something was issued and the node is known */
	if (issued && snowid_node_in_force() >= 0)
		values[7] = Int64GetDatum(snowid_id_from_position(layout, last,
														  snowid_node_in_force()));
	else
		nulls[7] = true;

	/*
	 * lead: how far the stream runs ahead of the clock, by the tick of the
	 * last position claimed (issued, dropped or waited for): refused calls
	 * issue nothing, yet their claims may have moved the stream.
	 */
	if (next > 0)
	{
		TimestampTz start;

		if (snowid_tick_start(layout, (int64) ((next - 1) >> layout->sequence_bits),
							  &start))
			lead_ms = Max(0.0, (double) (start - snowid_clock_now()) / 1000.0);
	}
	values[8] = Float8GetDatum(lead_ms);

	/* the persisted high-water mark and how often it was renewed */
	values[9] = TimestampTzGetDatum((TimestampTz) until);
	nulls[9] = (until == 0);
	values[10] = Int64GetDatum((int64) pg_atomic_read_u64(&shared->renewals));

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
