/*-------------------------------------------------------------------------
 *
 * conninfo.h
 *	  A libpq connection string without its secrets (conninfo.c): the
 *	  string as it may be shown, and any text scrubbed of the secrets the
 *	  string holds.
 *
 * The secrets are the values of password and sslpassword, in key/value
 * form (quoted or not) and in a URI (user:secret@, ?password=).  Nothing
 * here touches shared memory, GUCs or the clock.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_CONNINFO_H
#define SNOWID_CONNINFO_H

/* what a secret is replaced with */
#define SNOWID_CONNINFO_MASK "********"

extern char *snowid_conninfo_mask(const char *conninfo);
extern char *snowid_conninfo_scrub(const char *conninfo, const char *text);

#endif							/* SNOWID_CONNINFO_H */
