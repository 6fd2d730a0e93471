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
extern int	snowid_max_batch;	/* per call, roles that are not superusers */
extern bool snowid_gucs_defined;	/* loaded by shared_preload_libraries */
extern SnowidLayout snowid_active_layout;	/* valid when snowid_gucs_defined */

/* tickets */
extern int	snowid_ticket_slots;
extern int	snowid_counter_keys;
extern int	snowid_ticket_prefetch;
extern int	snowid_registry_processes;

/* the registry */
extern char *snowid_registry_conninfo;	/* as written, password and all:
											 * for libpq only, never shown */
extern int	snowid_lease_s;

/* the version of this library, as built (snowid.library_version) */
extern const char *const snowid_library_version;

/* the defaults and limits of the layout parameters */
#define SNOWID_DEFAULT_EPOCH "2025-01-01 00:00:00+00"
#define SNOWID_DEFAULT_NODE_BITS 10
#define SNOWID_DEFAULT_SEQUENCE_BITS 12
#define SNOWID_DEFAULT_TICK_MS 1
#define SNOWID_DEFAULT_ID_BITS 63
#define SNOWID_MIN_ID_BITS 32
#define SNOWID_MAX_TICK_MS 86400000 /* one day */
#define SNOWID_MAX_TIME_MS 3600000	/* one hour, for max_lead and max_wait */
#define SNOWID_MAX_BATCH 1000000	/* IDs per snowid_next_batch() call */
#define SNOWID_DEFAULT_MAX_BATCH 65536	/* 16 ticks of the default layout */

extern void snowid_guc_init(void);
extern void snowid_guc_define_version(void);
extern bool snowid_parse_epoch(const char *text, TimestampTz *result,
							   const char **why);
extern void snowid_validate_layout(SnowidLayout *layout, int id_bits,
								   int node_bits, int sequence_bits,
								   TimestampTz epoch, int tick_ms, int node_id,
								   int elevel, bool warn_always);
extern void snowid_configured_layout(SnowidLayout *layout, int *node_id);

#endif							/* SNOWID_GUC_H */
