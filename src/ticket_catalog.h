/*-------------------------------------------------------------------------
 *
 * ticket_catalog.h
 *	  Ticket sequences: the catalog table snowid_ticket of this database's
 *	  snowid, read and written in C by OID (ticket_catalog.c).  The bottom
 *	  of the ticket files: it calls none of them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_TICKET_CATALOG_H
#define SNOWID_TICKET_CATALOG_H

#include "access/skey.h"
#include "ticket.h"

/* Columns of snowid_ticket */
#define Anum_ticket_seqrelid	1
#define Anum_ticket_shard		2
#define Anum_ticket_shards		3
#define Anum_ticket_block		4
#define Anum_ticket_start		5
#define Anum_ticket_type		6
#define Anum_ticket_served		8

extern Oid	snowid_ticket_table(Oid *extoid);
extern Oid	snowid_ticket_table_guarded(Oid *extoid, bool *guarded);
extern void snowid_ticket_table_cb(Datum arg, Oid relid);
extern void snowid_ticket_key(ScanKeyData *key, Oid relid);
extern const char *snowid_ticket_name(Oid relid);
extern int64 snowid_ticket_type_max(Oid type);
extern bool snowid_ticket_find_row(Oid extnsp, Oid relid,
								   SnowidTicketEntry *entry);
extern bool snowid_ticket_alive(Oid extnsp, Oid relid, int64 stamp);
extern const char *snowid_ticket_lock_existing(Oid relid);
extern Oid	snowid_ticket_catalog_owner(Oid extnsp);
extern bool snowid_ticket_has_dependency(Oid relid, Oid extoid);
extern bool snowid_ticket_is_ticket(Oid relid, Oid extoid);
extern void snowid_ticket_forget(Oid relid);
extern bool snowid_ticket_pool_of(Oid relid, char *pool);
extern bool snowid_ticket_pool_named(const char *pool, Oid except);

#endif							/* SNOWID_TICKET_CATALOG_H */
