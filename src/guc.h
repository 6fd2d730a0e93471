/*-------------------------------------------------------------------------
 *
 * guc.h
 *	  snowid's configuration parameters (guc.c): every snowid.* setting,
 *	  its variable, and the layout it validates at start.
 *
 * The variables are written only by the GUC machinery (and, for the
 * layout, once by snowid_guc_init in the postmaster); every other file
 * only reads them.  Nothing here touches shared memory or the clock.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_GUC_H
#define SNOWID_GUC_H

#include "layout.h"

/* the layout and the generator */
extern int	snowid_node_id;		/* -1 while unset */
extern int	snowid_max_lead_ms;
extern int	snowid_max_wait_ms;
extern bool snowid_gucs_defined;	/* loaded by shared_preload_libraries */
extern SnowidLayout snowid_active_layout;	/* valid when snowid_gucs_defined */

/* tickets */
extern int	snowid_ticket_slots;
extern int	snowid_ticket_prefetch;

/* the registry */
extern char *snowid_registry_conninfo;
extern int	snowid_lease_s;

extern void snowid_guc_init(void);
extern void snowid_current_layout(SnowidLayout *layout, int *node_id);

#endif							/* SNOWID_GUC_H */
