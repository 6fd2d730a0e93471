/*-------------------------------------------------------------------------
 *
 * registry_worker.c
 *	  The background worker that holds this server's node lease at the
 *	  registry, over libpq.
 *
 * One worker per member, started once recovery has finished (on a standby:
 * at promotion).  Every SNOWID_REGISTRY_HEARTBEAT_MS it calls
 * snowid_registry_claim() in the registry database: one short transaction
 * that grants or renews the node for snowid.lease, or refuses it (another
 * live server holds the node, or the registry's layout differs).  The
 * answer is published in shared memory (lease.c): the gate opens on a
 * grant, after the generator was raised above whatever the node's previous
 * holder may have issued, and shuts on a refusal.  The lease this server
 * may issue under ends at the time the request was sent plus the lease,
 * less a margin, so it always ends before the registry's (which starts
 * later): the worker shuts the gate at that deadline, whatever the
 * registry is doing.  While the registry cannot be reached the server
 * keeps issuing until then, warning in the log in the last quarter.
 *
 * The connection is registry_conn.c's; failed attempts back off up to
 * SNOWID_BACKOFF_MAX_MS.  The registry is known by what it is (system
 * identifier and database, kept with the lease), not by the connection
 * string: an edit of snowid.registry that reaches the same registry keeps
 * the lease, one that reaches another drops it when that one answers.  A
 * registry named by reload to a server issuing under snowid.node_id lets
 * it go on issuing, "unchecked", until the registry answers: a refusal
 * stops it; while none comes it issues as without a registry.
 *
 * At shutdown (SIGTERM) the worker shuts the gate, then releases the lease
 * at the registry, reporting the bound of every ID issued: the next holder
 * of the node continues above it.
 *
 * This file is the process: signals, waiting, the main loop and the
 * release.  One claim and the publishing of its answer, the deadline and
 * which registry answers are registry_claim.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "guc.h"
#include "lease.h"
#include "lease_file.h"
#include "libpq-fe.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "pool_grant.h"
#include "pool_worker.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "registry_call.h"
#include "registry_claim.h"
#include "registry_conn.h"
#include "registry_worker.h"
#include "state.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#define SNOWID_RELEASE_TIMEOUT_MS 3000	/* the release at shutdown */
/* below SNOWID_REGISTRY_TAKEOVER_MS: a holder that can reach the registry
 * again renews before another start may take its node over */
#define SNOWID_BACKOFF_MAX_MS 4000

static volatile sig_atomic_t got_sigterm = false;
static bool releasing = false;	/* in snowid_release(): waits ignore SIGTERM */

static char *conn_for = NULL;	/* the connection string conn was made with */

static void
snowid_worker_sigterm(SIGNAL_ARGS)
{
	int			save_errno = errno;

	got_sigterm = true;
	SetLatch(MyLatch);
	errno = save_errno;
}

/* ---- waiting ---- */

static void
snowid_worker_reload(void)
{
	ConfigReloadPending = false;
	ProcessConfigFile(PGC_SIGHUP);
}

/*
 * Wait for events on the socket (0: none) until the latch is set or
 * "until" passes; the deadline is checked on every wake.  Returns false on
 * timeout, or when a reload or a shutdown wants the worker's attention.
 */
static bool
snowid_worker_wait(int events, pgsocket sock, TimestampTz until)
{
	for (;;)
	{
		TimestampTz now = GetCurrentTimestamp();
		long		timeout_ms;
		int			rc;
		TimestampTz deadline;

		snowid_check_deadline();
		if (!releasing && (got_sigterm || ConfigReloadPending))
			return false;
		if (now >= until)
			return false;
		timeout_ms = (long) ((until - now + 999) / 1000);
		SpinLockAcquire(&snowid_registry->mutex);
		deadline = snowid_registry->deadline;
		SpinLockRelease(&snowid_registry->mutex);
		if (deadline > now &&
			SNOWID_GATE_NODE(pg_atomic_read_u64(&snowid_shared->gate)) >= 0)
		{
			/* wake at the start of the last quarter (the warning) too */
			TimestampTz warn_at = deadline - (int64) snowid_lease_s * 1000000 / 4;

			timeout_ms = Min(timeout_ms, (long) ((deadline - now + 999) / 1000));
			if (warn_at > now)
				timeout_ms = Min(timeout_ms, (long) ((warn_at - now + 999) / 1000));
		}
		timeout_ms = Max(timeout_ms, 1);

		rc = WaitLatchOrSocket(MyLatch,
							   WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH |
							   (sock != PGINVALID_SOCKET ? events : 0),
							   sock, timeout_ms, PG_WAIT_EXTENSION);
		if (rc & WL_LATCH_SET)
		{
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
			/* an idle wait ends early when a pool needs a range */
			if (sock == PGINVALID_SOCKET && snowid_pool_wake_pending())
				return false;
		}
		if (rc & (WL_SOCKET_READABLE | WL_SOCKET_WRITEABLE))
			return true;
	}
}

/* ---- shutdown ---- */

/* A release as the registry takes it (registry_call.c): true if it held it. */
static const char *const release_fields[] = {
	"node_id", "start_id", "secret", "last_id"
};
static const char *const release_exprs[] = {
	"$1::pg_catalog.int4", "$2::pg_catalog.text", "$3::pg_catalog.text",
	"$4::pg_catalog.int8"
};
static const SnowidRegistryCall release_call = {
	"release", "snowid_registry_release", NULL, 4, release_fields,
	release_exprs, "value pg_catalog.bool", true, "c.value"
};

/* Shut the gate and give the node back, reporting the bound of the IDs issued. */
static void
snowid_release(void)
{
	SnowidRegistryShared *r = snowid_registry;
	char		node_text[16];
	char		last_text[32];
	char		start[SNOWID_START_ID_LEN + 1];
	const char *values[4];
	uint64		bound;
	int			node;
	SnowidRegistryState state;
	char	   *error = NULL;
	PGresult   *res;

	snowid_gate_close();
	SpinLockAcquire(&r->mutex);
	node = r->node_id;
	state = r->state;
	memcpy(start, r->start_id, sizeof(start));
	SpinLockRelease(&r->mutex);
	if (snowid_registry_schema() == NULL || node < 0 ||
		state != SNOWID_REGISTRY_OK)
	{
		/* keep the ranges in hand, exactly where they stand, for the next start */
		snowid_pools_give_back(node, start, false);
		return;
	}

	bound = snowid_registry_report_bound();
	snprintf(node_text, sizeof(node_text), "%d", node);
	snprintf(last_text, sizeof(last_text), UINT64_FORMAT, bound);
	values[0] = node_text;
	values[1] = start;
	values[2] = r->secret;		/* fixed since the postmaster started */
	values[3] = bound > 0 ? last_text : NULL;
	/*
	 * Let the waits run although SIGTERM came: clearing got_sigterm would
	 * not do, as the postmaster signals a child twice (the process, then
	 * its process group), and the second one may land after the clearing.
	 */
	releasing = true;
	if (snowid_registry_drain(TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														  SNOWID_RELEASE_TIMEOUT_MS),
							  &error))
	{
		/* the pools' unused tails first: the registry checks the lease */
		snowid_pools_give_back(node, start, true);
		res = snowid_registry_call(&release_call, 4, values,
								   SNOWID_RELEASE_TIMEOUT_MS, &error, NULL);
	}
	else
	{
		snowid_pools_give_back(node, start, false);
		res = NULL;
	}
	releasing = false;
	if (res == NULL)
	{
		ereport(LOG,
				(errmsg("snowid could not release node %d at the registry: %s",
						node, error),
				 errdetail("The lease runs out by itself; this server's next start takes it over.")));
		return;
	}
	PQclear(res);
	pg_atomic_fetch_add_u64(&r->releases, 1);
	SpinLockAcquire(&r->mutex);
	r->deadline = 0;
	r->state = SNOWID_REGISTRY_CONNECTING;
	SpinLockRelease(&r->mutex);
	snowid_lease_persist(node, 0, true, NULL);
	ereport(LOG, (errmsg("snowid released node %d at the registry", node)));
}

/* ---- the main loop ---- */

void
snowid_registry_main(Datum main_arg)
{
	SnowidRegistryShared *r;
	int			backoff_ms = 0;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, snowid_worker_sigterm);
	BackgroundWorkerUnblockSignals();

	r = snowid_registry;
	if (r == NULL || snowid_shared == NULL)
		proc_exit(0);
	snowid_registry_set_wait(snowid_worker_wait);
	/* takers wake the worker when a pool needs a range */
	snowid_pool_set_worker_latch(MyLatch);
	snowid_pool_worker_start();

	for (;;)
	{
		TimestampTz next;
		char	   *error = NULL;

		if (ConfigReloadPending)
			snowid_worker_reload();
		if (got_sigterm)
		{
			snowid_release();
			snowid_registry_disconnect();
			proc_exit(1);
		}

		if (!snowid_registry_named())
		{
			/* no registry: nothing to hold; the configured node issues */
			snowid_registry_disconnect();
			if (conn_for != NULL)
			{
				pfree(conn_for);
				conn_for = NULL;
			}
			SpinLockAcquire(&r->mutex);
			if (r->state != SNOWID_REGISTRY_OFF)
			{
				int			node = r->node_id;
				TimestampTz deadline = r->deadline;

				r->state = SNOWID_REGISTRY_OFF;
				r->deadline = 0;
				r->registry[0] = '\0';
				r->detail[0] = '\0';
				r->holder[0] = '\0';
				r->unchecked = false;
				r->registry_sysid = 0;
				r->registry_db[0] = '\0';
				if (snowid_node_id >= 0)
					r->node_id = snowid_node_id;
				SpinLockRelease(&r->mutex);
				snowid_gate_off();
				if (snowid_node_id >= 0 && node >= 0)
					ereport(WARNING,
							(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
							 errmsg("snowid.registry was emptied: node %d is no longer checked by a registry",
									node),
							 deadline != 0 ?
							 errdetail("The registry keeps this server's lease until about %s; after that it may grant node %d to another server, whose IDs would then collide with this server's.",
									   timestamptz_to_str(deadline), node) : 0,
							 errhint("Remove the registry from every member at once, or set it again.")));
			}
			else
				SpinLockRelease(&r->mutex);
			(void) snowid_worker_wait(0, PGINVALID_SOCKET,
									  TimestampTzPlusMilliseconds(GetCurrentTimestamp(), 60000));
			continue;
		}

		if (conn_for == NULL || strcmp(conn_for, snowid_registry_conninfo) != 0)
		{
			/*
			 * A registry named, or the connection string edited: connect
			 * with the new one.  Which registry it reaches is known once it
			 * answers (snowid_registry_identify).
			 */
			snowid_registry_disconnect();
			snowid_registry_renamed(conn_for == NULL);
			if (conn_for != NULL)
				pfree(conn_for);
			conn_for = MemoryContextStrdup(TopMemoryContext, snowid_registry_conninfo);
			snowid_registry_describe(conn_for);
			backoff_ms = 0;
		}

		if (snowid_registry_connected() ||
			snowid_registry_connect(conn_for, &error))
		{
			snowid_registry_identify();
			if (snowid_claim(&error))
			{
				int			node;
				SnowidRegistryState state;
				char		start[SNOWID_START_ID_LEN + 1];

				backoff_ms = 0;
				SpinLockAcquire(&r->mutex);
				node = r->node_id;
				state = r->state;
				memcpy(start, r->start_id, sizeof(start));
				SpinLockRelease(&r->mutex);
				/*
				 * Ranges are granted to the holder of a node only; one
				 * refused reports what it holds all the same (a registry
				 * in its grace after a restore records it from anyone).
				 */
				if (state == SNOWID_REGISTRY_OK && node >= 0)
					(void) snowid_pools_serve(node, start, true, &error);
				else if (state == SNOWID_REGISTRY_CONFLICT && node >= 0)
					(void) snowid_pools_serve(node, start, false, &error);
			}
		}
		if (error != NULL)
		{
			if (got_sigterm)
				continue;		/* the release drains what is in flight */
			if (ConfigReloadPending)
			{
				/* a query may still be in flight: start over */
				snowid_registry_disconnect();
				continue;
			}
			snowid_registry_disconnect();
			snowid_publish_unreachable(error);
			pfree(error);
			backoff_ms = Min(Max(backoff_ms * 2, SNOWID_REGISTRY_HEARTBEAT_MS),
							 SNOWID_BACKOFF_MAX_MS);
		}

		next = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
										   backoff_ms > 0 ? backoff_ms :
										   SNOWID_REGISTRY_HEARTBEAT_MS);
		(void) snowid_worker_wait(0, PGINVALID_SOCKET, next);
	}
}

void
snowid_registry_worker_register(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 1;
	strlcpy(worker.bgw_library_name, "snowid", BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, "snowid_registry_main", BGW_MAXLEN);
	strlcpy(worker.bgw_name, "snowid registry worker", BGW_MAXLEN);
	strlcpy(worker.bgw_type, "snowid registry worker", BGW_MAXLEN);
	RegisterBackgroundWorker(&worker);
}
