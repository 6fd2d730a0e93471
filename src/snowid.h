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
#include "highwater.h"
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

#endif							/* SNOWID_H */
