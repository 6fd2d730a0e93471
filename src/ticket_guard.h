/*-------------------------------------------------------------------------
 *
 * ticket_guard.h
 *	  Ticket sequences: what keeps a backing sequence from being rewound
 *	  (ticket_guard.c): the served mark, read and raised in place, and the
 *	  check of the sequence's settings at every block reservation.  Called
 *	  by ticket_slot.c; calls ticket_catalog.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_TICKET_GUARD_H
#define SNOWID_TICKET_GUARD_H

#include "ticketmath.h"

extern void snowid_ticket_lock_table(const char *name);
extern int64 snowid_ticket_served(Oid relid, const char *name);
extern void snowid_ticket_raise_served(Oid relid, const char *name, int64 b,
									   const SnowidTicketSpec *spec);
extern void snowid_ticket_check_sequence(Oid relid, const char *name,
										 const SnowidTicketSpec *spec);

#endif							/* SNOWID_TICKET_GUARD_H */
