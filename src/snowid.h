/*-------------------------------------------------------------------------
 *
 * snowid.h
 *	  Declarations shared between the modules of snowid.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_H
#define SNOWID_H

#include "clock.h"
#include "compat.h"
#include "continuation.h"
#include "durable.h"
#include "state.h"
#include "guc.h"
#include "layout.h"
#include "lib/stringinfo.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "wal.h"

/* ticket.c: ticket sequences */

extern void snowid_ticket_init(void);
extern void snowid_ticket_shmem_request(void);
extern void snowid_ticket_shmem_startup(void);

/* highwater.c: the persisted high-water mark */
extern void snowid_highwater_init(void);
extern void snowid_highwater_load(SnowidShared *shared);
extern void snowid_highwater_renew(SnowidShared *shared,
								   const SnowidLayout *layout,
								   int64 last_tick, int64 wall_tick, bool wait);
extern int64 snowid_highwater_window_ticks(const SnowidLayout *layout);
extern uint64 snowid_highwater_issued_bound(SnowidShared *shared, int64 *last);

#endif							/* SNOWID_H */
