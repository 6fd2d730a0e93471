/*-------------------------------------------------------------------------
 *
 * registry_xact.c
 *	  snowid_registry_no_prepare(): kept as a no-op.
 *
 * From 1.10 to 2.0 every registry function that locked a row called
 * snowid_registry_no_prepare() first, and the PREPARE TRANSACTION of its
 * transaction failed: a member's prepared transaction would have kept the
 * registry's rows locked with no session left to end.  From 2.0 members
 * never touch the registry's tables (their calls are applied by the
 * registry's own server processes, registry_server.c, in short
 * transactions of their own), so there is nothing to refuse, and 2.1's
 * SQL no longer has the function.  The symbol stays because a registry
 * database whose extension is still at 2.0 (its SQL not yet updated) runs
 * this library and its 2.0 functions call it: it does nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"

PG_FUNCTION_INFO_V1(snowid_registry_no_prepare);

Datum
snowid_registry_no_prepare(PG_FUNCTION_ARGS)
{
	PG_RETURN_VOID();
}
