/*-------------------------------------------------------------------------
 *
 * ticket_lookup.h
 *	  Ticket sequences: the per-backend cache of settings and privileges
 *	  (ticket_lookup.c), the binding of an entry to its slot, and the
 *	  lookup of a ticket (or any relation, a counter's) named by text.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_TICKET_LOOKUP_H
#define SNOWID_TICKET_LOOKUP_H

#include "fmgr.h"
#include "ticket.h"

extern SnowidTicketEntry *snowid_ticket_lookup(Oid relid, Oid fn_oid,
											   bool check_acl);
extern SnowidTicketEntry *snowid_ticket_lookup_bound(Oid relid, Oid fn_oid);
extern Oid	snowid_relation_named(text *name, FmgrInfo *flinfo);
extern Oid	snowid_ticket_named(text *name, FmgrInfo *flinfo);

#endif							/* SNOWID_TICKET_LOOKUP_H */
