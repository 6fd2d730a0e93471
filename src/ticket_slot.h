/*-------------------------------------------------------------------------
 *
 * ticket_slot.h
 *	  Ticket sequences: the slots in shared memory and the blocks they
 *	  serve (ticket_slot.c): shared memory, binding and freeing slots,
 *	  reserving and installing blocks.  Calls ticket_guard.c and
 *	  ticket_catalog.c, and pool.h for pooled tickets.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_TICKET_SLOT_H
#define SNOWID_TICKET_SLOT_H

#include "guc.h"
#include "ticket.h"

extern SnowidTicketShared *ticket_shared;

extern void snowid_ticket_shmem_request(void);
extern void snowid_ticket_shmem_startup(void);
extern SnowidTicketShared *snowid_ticket_require_shared(void);
extern void snowid_ticket_free_slots(Oid dbid, Oid relid);
extern void snowid_ticket_bind(SnowidTicketEntry *entry);
extern void snowid_ticket_prefetch_block(SnowidTicketSlot *slot,
										 SnowidTicketEntry *entry);
extern SnowidTakeResult snowid_ticket_next_block(SnowidTicketSlot *slot,
												 SnowidTicketEntry *entry,
												 uint32 g, int64 *value,
												 uint32 *count);

/* The offset of a block whose taker pre-fetches the next block. */
static inline uint32
snowid_ticket_threshold(uint32 count)
{
	uint64		t = (uint64) count * (uint64) snowid_ticket_prefetch / 100;

	return t >= count ? count - 1 : (uint32) t;
}

#endif							/* SNOWID_TICKET_SLOT_H */
