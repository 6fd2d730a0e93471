/*-------------------------------------------------------------------------
 *
 * ticket_hooks.h
 *	  Ticket sequences: the hooks that keep them whole (ticket_hooks.c):
 *	  DROP (object access), ALTER (ProcessUtility), the relcache callback
 *	  of the catalog table, installed by snowid_ticket_init from _PG_init.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_TICKET_HOOKS_H
#define SNOWID_TICKET_HOOKS_H

extern void snowid_ticket_init(void);

#endif							/* SNOWID_TICKET_HOOKS_H */
