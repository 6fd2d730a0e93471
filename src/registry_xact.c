/*-------------------------------------------------------------------------
 *
 * registry_xact.c
 *	  snowid_registry_no_prepare(): a transaction that has locked a row of
 *	  the registry cannot be prepared.
 *
 * The registry's functions lock the rows they write (a node's, a pool's,
 * the settings') and never wait for another session's: a member's session
 * that leaves such a transaction open is ended once it is 1 s old
 * (snowid_registry_unblock), so that no member keeps the others out.  A
 * prepared transaction (PREPARE TRANSACTION, where max_prepared_transactions
 * is above 0, as on a Citus coordinator that hosts a registry) keeps its
 * row locks with no session left to end: only a superuser's ROLLBACK
 * PREPARED would free them.  So every registry function that locks a row
 * calls this one first, and the PREPARE of its transaction fails (the
 * transaction then rolls back, its locks with it).
 *
 * The mark is per transaction: set by the call, cleared at the end of the
 * transaction, whichever way it ends.  Nothing here touches shared memory
 * or GUCs; it needs no preload.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "fmgr.h"

PG_FUNCTION_INFO_V1(snowid_registry_no_prepare);

/* the current transaction called a registry function that locks rows */
static bool registry_xact_marked = false;
static bool registry_xact_callback_set = false;

static void
registry_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			if (registry_xact_marked)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot prepare a transaction that called snowid's registry functions"),
						 errdetail("A prepared transaction would keep the registry's rows it locked from every other member until a superuser ends it."),
						 errhint("Call the registry's functions outside of two-phase transactions.")));
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			registry_xact_marked = false;
			break;
		default:
			break;
	}
}

Datum
snowid_registry_no_prepare(PG_FUNCTION_ARGS)
{
	if (!registry_xact_callback_set)
	{
		RegisterXactCallback(registry_xact_callback, NULL);
		registry_xact_callback_set = true;
	}
	registry_xact_marked = true;
	PG_RETURN_VOID();
}
