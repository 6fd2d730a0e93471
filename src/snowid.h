/*-------------------------------------------------------------------------
 *
 * snowid.h
 *	  Declarations shared between the modules of snowid.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_H
#define SNOWID_H

#include "layout.h"
#include "port/atomics.h"

/* guc.c: configuration */
extern int	snowid_node_id;		/* -1 while unset */
extern int	snowid_max_lead_ms;
extern int	snowid_max_wait_ms;
extern bool snowid_gucs_defined;	/* loaded by shared_preload_libraries */
extern SnowidLayout snowid_active_layout;	/* valid when snowid_gucs_defined */

extern void snowid_guc_init(void);
extern void snowid_current_layout(SnowidLayout *layout, int *node_id);

/* shmem.c: the instance-wide state */
typedef struct SnowidShared
{
	/* the generator: next position not yet issued */
	pg_atomic_uint64 next_position;
	char		pad[PG_CACHE_LINE_SIZE - sizeof(pg_atomic_uint64)];

	/* statistics, on their own cache line(s) */
	pg_atomic_uint64 ids_issued;
	pg_atomic_uint64 ticks_borrowed;
	pg_atomic_uint64 waits;
	pg_atomic_uint64 wait_us;
	pg_atomic_uint64 clock_errors;
} SnowidShared;

extern SnowidShared *snowid_shared;

extern void snowid_shmem_init(void);
extern SnowidShared *snowid_require_shared(void);

/* clock.c: wall clock and waiting */
extern TimestampTz snowid_clock_now(void);
extern int64 snowid_clock_monotonic_us(void);
extern void snowid_clock_sleep(int64 us);

#endif							/* SNOWID_H */
