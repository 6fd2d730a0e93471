/*-------------------------------------------------------------------------
 *
 * registry_claim.c
 *	  The registry worker's claim of the node lease and what it publishes
 *	  of the answers in shared memory (lease.c's SnowidRegistryShared).
 *
 * One claim is one call of snowid_registry_claim() in the registry
 * database, on registry_conn.c's connection.  Its answer is checked (it
 * must come from the extension's own function, and grant the node asked
 * for, inside the layout, under a lease no longer than asked) and
 * published: the gate opens on a grant, after the generator was raised
 * above whatever the node's previous holder may have issued, and shuts on
 * a refusal.  Here too: which registry answers (by system identifier and
 * database, not by connection string), the lease's deadline and the
 * warnings before it, and what is published when the registry cannot be
 * reached.  Refusals and failures are logged once, not on every attempt.
 *
 * When to claim, waiting and the release at shutdown belong to
 * registry_worker.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "generator_floor.h"
#include "guc.h"
#include "highwater.h"
#include "layout.h"
#include "lease.h"
#include "lease_file.h"
#include "libpq-fe.h"
#include "postmaster/postmaster.h"
#include "registry_call.h"
#include "registry_claim.h"
#include "registry_conn.h"
#include "state.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#define SNOWID_WARN_EVERY_MS 60000

static char *last_problem = NULL;	/* last logged refusal or failure */
static TimestampTz last_warning = 0;
static bool held_this_start = false;	/* the registry granted the node once */
static TimestampTz answering_since = 0; /* the registry answers since, 0: not */

/* ---- the deadline ---- */

/*
 * Shut the gate when the lease has run out; warn in the log in its last
 * quarter while the registry does not answer.
 */
void
snowid_check_deadline(void)
{
	SnowidRegistryShared *r = snowid_registry;
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz deadline;
	SnowidRegistryState state;
	int			node;
	TimestampTz last_contact;
	bool		expired = false;

	SpinLockAcquire(&r->mutex);
	deadline = r->deadline;
	state = r->state;
	node = r->node_id;
	last_contact = r->last_contact;
	if (deadline != 0 && now >= deadline && state != SNOWID_REGISTRY_OFF)
	{
		expired = SNOWID_GATE_NODE(pg_atomic_read_u64(&snowid_shared->gate)) >= 0;
		if (state == SNOWID_REGISTRY_OK)
			r->state = SNOWID_REGISTRY_UNREACHABLE;
	}
	SpinLockRelease(&r->mutex);

	if (expired)
	{
		snowid_gate_close();
		ereport(WARNING,
				(errmsg("snowid lease of node %d ran out: this server issues no more IDs",
						node),
				 errdetail("The registry last answered at %s.",
						   last_contact ? timestamptz_to_str(last_contact) : "no time since this server started"),
				 errhint("Restore the connection to the registry; this server resumes by itself when it answers.")));
	}
	else if (deadline != 0 && state == SNOWID_REGISTRY_UNREACHABLE &&
			 now < deadline &&
			 SNOWID_GATE_NODE(pg_atomic_read_u64(&snowid_shared->gate)) >= 0 &&
			 deadline - now <= (int64) snowid_lease_s * 1000000 / 4 &&
			 now - last_warning >= SNOWID_WARN_EVERY_MS * INT64CONST(1000))
	{
		last_warning = now;
		ereport(WARNING,
				(errmsg("snowid lease of node %d runs out in %.0f s and the registry does not answer",
						node, (double) (deadline - now) / 1e6),
				 errdetail("This server stops issuing IDs at %s unless the registry renews the lease.",
						   timestamptz_to_str(deadline)),
				 errhint("Restore the connection to the registry.")));
	}
}

/* ---- publishing ---- */

/*
 * Log a refusal or failure once, not every second: again only when its key
 * (the holder, or the error) changes.
 */
static void
snowid_log_problem(const char *key, const char *msg, const char *detail)
{
	if (last_problem != NULL && strcmp(last_problem, key) == 0)
		return;
	if (last_problem != NULL)
		pfree(last_problem);
	last_problem = MemoryContextStrdup(TopMemoryContext, key);
	ereport(WARNING,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("%s", msg),
			 detail != NULL && detail[0] != '\0' ?
			 errdetail("%s", snowid_sentence(detail)) : 0));
}

static void
snowid_forget_problem(void)
{
	if (last_problem != NULL)
		pfree(last_problem);
	last_problem = NULL;
}

/* ---- which registry ---- */

/*
 * snowid.registry was set (first: where it was empty, or at the worker's
 * start) or edited.  An edit changes nothing yet: the lease is kept until
 * the registry answers, and dropped then only if another registry answers
 * (snowid_registry_identify).  A registry named where there was none shuts
 * the gate, as at start, except on a server issuing under snowid.node_id:
 * that one goes on issuing until the registry answers, "unchecked".
 */
void
snowid_registry_renamed(bool first)
{
	SnowidRegistryShared *r = snowid_registry;
	bool		was_off;
	bool		unchecked = false;

	SpinLockAcquire(&r->mutex);
	was_off = r->state == SNOWID_REGISTRY_OFF;
	if (was_off)
	{
		unchecked = snowid_node_id >= 0 &&
			SNOWID_GATE_NODE(pg_atomic_read_u64(&snowid_shared->gate)) ==
			snowid_node_id;
		r->state = SNOWID_REGISTRY_CONNECTING;
		r->unchecked = unchecked;
		r->deadline = 0;
		r->fallback_deadline = 0;
		r->registry_sysid = 0;
		r->registry_db[0] = '\0';
	}
	SpinLockRelease(&r->mutex);

	if (was_off && !unchecked)
		snowid_gate_close();	/* as at start: nothing until a grant */
	else if (unchecked)
		ereport(LOG,
				(errmsg("snowid asks the registry for node %d, and issues IDs meanwhile as before",
						snowid_node_id),
				 errdetail("This server stops issuing only if the registry refuses it the node.")));
	else if (!first)
		ereport(LOG,
				(errmsg("snowid.registry changed: snowid reconnects, keeping its lease unless another registry answers")));
}

/*
 * The registry connected to, by what it is (snowid_registry_answered
 * learns it): the same one keeps the lease, whatever the connection
 * string; another one drops it, two registries not knowing each other's
 * leases.
 */
void
snowid_registry_identify(void)
{
	SnowidRegistryShared *r = snowid_registry;
	uint64		sysid;
	const char *db;
	uint64		old_sysid;
	char		old_db[NAMEDATALEN];
	int			node;
	TimestampTz persisted;

	if (!snowid_registry_identity(&sysid, &db))
		return;
	SpinLockAcquire(&r->mutex);
	old_sysid = r->registry_sysid;
	memcpy(old_db, r->registry_db, sizeof(old_db));
	if (old_sysid == 0 ||
		(old_sysid == sysid && strncmp(old_db, db, NAMEDATALEN - 1) == 0))
	{
		SpinLockRelease(&r->mutex);
		return;
	}
	/* another registry: drop the lease, as at start nothing until a grant */
	r->registry_sysid = sysid;
	strlcpy(r->registry_db, db, NAMEDATALEN);
	r->state = SNOWID_REGISTRY_CONNECTING;
	r->deadline = 0;
	r->fallback_deadline = 0;
	r->unchecked = false;
	r->unconfirmed = false;
	node = r->node_id;
	persisted = r->persisted_deadline;
	SpinLockRelease(&r->mutex);
	snowid_gate_close();
	if (persisted != 0 && node >= 0)
		snowid_lease_persist(node, 0, true, NULL);

	/*
	 * The old registry keeps this server's lease until it runs out, then may
	 * grant the node to another of its members; the new one knows nothing
	 * of the old one's grants.
	 */
	ereport(WARNING,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("snowid.registry now names another registry: this server issues nothing until it grants a node"),
			 errdetail("The lease was held from database \"%s\" of the server with system identifier " UINT64_FORMAT "; database \"%s\" of the server with system identifier " UINT64_FORMAT " answers now.  Two registries do not know each other's leases: a node granted by both can be used by two servers.",
					   old_db, old_sysid, db, sysid),
			 errhint("Move every member to the new registry at once, and copy the old registry's tables into it first (pg_dump of its database).")));
}

/*
 * A registry named by reload to a server issuing under snowid.node_id
 * cannot be reached, or refuses the connection or a query: it goes on
 * issuing, as without a registry, and says so.  False if this server is
 * not in that case.
 */
static bool
snowid_unchecked_unreachable(const char *error)
{
	SnowidRegistryShared *r = snowid_registry;
	bool		unchecked;
	int			node = snowid_node_id;

	SpinLockAcquire(&r->mutex);
	unchecked = r->unchecked;
	if (unchecked)
	{
		r->state = SNOWID_REGISTRY_UNREACHABLE;
		if (r->unreachable_since == 0)
			r->unreachable_since = GetCurrentTimestamp();
		snprintf(r->detail, SNOWID_REGISTRY_TEXT,
				 "unchecked: this server issues IDs as node %d as without a registry until the registry answers; %s",
				 node, error);
	}
	SpinLockRelease(&r->mutex);
	if (!unchecked)
		return false;

	pg_atomic_fetch_add_u64(&r->failures, 1);
	snowid_log_problem(error,
					   psprintf("snowid registry unreachable: this server goes on issuing IDs as node %d, unchecked by a registry",
								node),
					   error);
	return true;
}

/*
 * The registry answers a claim: what it is, if not known yet, is learned
 * (and kept with the lease), and nothing is issued unchecked any more.
 */
static void
snowid_registry_answered(void)
{
	SnowidRegistryShared *r = snowid_registry;
	uint64		sysid;
	const char *db;
	bool		known = snowid_registry_identity(&sysid, &db);

	SpinLockAcquire(&r->mutex);
	if (known && r->registry_sysid == 0)
	{
		r->registry_sysid = sysid;
		strlcpy(r->registry_db, db, NAMEDATALEN);
	}
	r->unchecked = false;
	SpinLockRelease(&r->mutex);
}

/* The registry could not be reached, or failed: keep going on the lease. */
void
snowid_publish_unreachable(const char *error)
{
	SnowidRegistryShared *r = snowid_registry;
	TimestampTz now = GetCurrentTimestamp();
	bool		was_ok;
	TimestampTz fallback = 0;
	int			node;

	answering_since = 0;
	if (snowid_unchecked_unreachable(error))
		return;
	pg_atomic_fetch_add_u64(&r->failures, 1);
	SpinLockAcquire(&r->mutex);
	was_ok = r->state == SNOWID_REGISTRY_OK;
	if (r->state == SNOWID_REGISTRY_CONNECTING && r->fallback_deadline > now)
	{
		/* the first attempt since start failed: the lease from before */
		fallback = r->fallback_deadline;
		r->deadline = fallback;
	}
	r->fallback_deadline = 0;
	if (r->state != SNOWID_REGISTRY_CONFLICT || fallback != 0)
		r->state = SNOWID_REGISTRY_UNREACHABLE;
	if (r->unreachable_since == 0)
		r->unreachable_since = now;
	strlcpy(r->detail, error, SNOWID_REGISTRY_TEXT);
	node = r->node_id;
	SpinLockRelease(&r->mutex);

	if (was_ok)
		pg_atomic_fetch_add_u64(&r->outages, 1);
	if (fallback != 0)
	{
		snowid_gate_open(node);
		ereport(LOG,
				(errmsg("snowid issues IDs as node %d under the lease it held before the restart, until %s",
						node, timestamptz_to_str(fallback)),
				 errdetail("The registry cannot be reached: %s.", error)));
	}
	snowid_log_problem(error, pstrdup("snowid registry unreachable"), error);
	snowid_check_deadline();
}

/* ---- what is possible ---- */

/*
 * No holder leads its clock by more than snowid.max_lead's largest value;
 * a floor from the registry may lie that far ahead of this server's clock,
 * and as far again for the registry's lead_margin and the difference of
 * the two clocks, not more.
 */
#define SNOWID_FLOOR_AHEAD_MS ((int64) SNOWID_MAX_TIME_MS * 2)

/*
 * The bound of the IDs this server issued, as it reports it to the
 * registry (a claim, a renewal, the release): every ID issued lies below
 * it.  Its reservation may run ahead of the clock (and a floor received
 * may have moved it to the layout's end, 2^63 with 63 bits), but no ID
 * issued leads the clock by more than max_lead, so the report stops at
 * the registry's bound (snowid_id_bound_at of the clock plus max_lead),
 * which is never above bigint's largest value.
 */
uint64
snowid_registry_report_bound(void)
{
	const SnowidLayout *layout = &snowid_active_layout;
	int64		last;
	uint64		bound = snowid_highwater_issued_bound(snowid_shared, &last);
	uint64		possible;

	possible = snowid_id_bound_at(layout,
								  TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
															  snowid_max_lead_ms));
	possible = Min(possible, (uint64) PG_INT64_MAX);
	return Min(bound, possible);
}

/*
 * What is impossible in a floor the registry sends with a grant (floor_id
 * an ID, floor_until_us a time in Unix microseconds; has_*: sent), NULL if
 * nothing: no holder can have issued an ID beyond SNOWID_FLOOR_AHEAD_MS
 * ahead of this server's clock.  Such a floor (a poisoned report, or a
 * registry that does not check reports) would stop this server for good.
 */
static char *
snowid_floor_impossible(bool has_floor_id, int64 floor_id,
						bool has_floor_until, int64 floor_until_us)
{
	const SnowidLayout *layout = &snowid_active_layout;
	TimestampTz limit = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													SNOWID_FLOOR_AHEAD_MS);
	uint64		possible = snowid_id_bound_at(layout, limit);
	int64		limit_unix_us = limit +
		((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY);

	if (has_floor_id && (floor_id < 0 || (uint64) floor_id > possible))
		return psprintf("the registry granted the node with a floor of ID " INT64_FORMAT ", beyond " UINT64_FORMAT ", the first ID of this server's layout " INT64_FORMAT " s ahead of its clock, which no holder can have reached: nothing is issued from it (a report the registry should have refused; ask its administrator to correct the node's last_id)",
						floor_id, possible, SNOWID_FLOOR_AHEAD_MS / 1000);
	if (has_floor_until && floor_until_us > limit_unix_us)
		return psprintf("the registry granted the node with a floor " INT64_FORMAT " s ahead of this server's clock, more than the " INT64_FORMAT " s any holder can lead by: nothing is issued from it (ask the registry's administrator to correct the node's floor_until)",
						(floor_until_us - limit_unix_us) / 1000000 + SNOWID_FLOOR_AHEAD_MS / 1000,
						SNOWID_FLOOR_AHEAD_MS / 1000);
	return NULL;
}

/*
 * A claim (reassert: with held_until, 17th) as the registry takes it; its
 * answer: the claim's columns, floor_until as microseconds since 1970, and
 * whether the function is the extension's own.
 */
static const char *const claim_fields[] = {
	"node_id", "auto", "max_node", "layout", "cluster_name", "host", "port",
	"system_identifier", "start_id", "secret", "predecessor", "promoted",
	"lease_ms", "takeover_ms", "max_lead_ms", "last_id", "held_until"
};
static const char *const claim_exprs[] = {
	"$1::pg_catalog.int4", "$2::pg_catalog.bool", "$3::pg_catalog.int4",
	"$4::pg_catalog.text", "$5::pg_catalog.text", "$6::pg_catalog.text",
	"$7::pg_catalog.int4", "$8::pg_catalog.numeric", "$9::pg_catalog.text",
	"$10::pg_catalog.text", "$11::pg_catalog.text", "$12::pg_catalog.bool",
	"$13::pg_catalog.int8", "$14::pg_catalog.int8", "$15::pg_catalog.int8",
	"$16::pg_catalog.int8", "pg_catalog.to_timestamp($17::pg_catalog.float8)"
};

#define CLAIM_COLUMNS \
	"result pg_catalog.text, node_id pg_catalog.int4, lease_ms pg_catalog.int8, " \
	"holder pg_catalog.text, detail pg_catalog.text, floor_id pg_catalog.int8, " \
	"floor_until pg_catalog.timestamptz"
#define CLAIM_SELECT \
	"c.result, c.node_id, c.lease_ms, c.holder, c.detail, c.floor_id, " \
	"(pg_catalog.date_part('epoch', c.floor_until) OPERATOR(pg_catalog.*) 1000000)::pg_catalog.int8"

static const SnowidRegistryCall claim_call = {
	"claim", "snowid_registry_claim",
	"snowid_registry_claim(integer, boolean, integer, text, text, text, integer, numeric, text, text, text, boolean, bigint, bigint, bigint, bigint)",
	16, claim_fields, claim_exprs, CLAIM_COLUMNS, false, CLAIM_SELECT
};
static const SnowidRegistryCall reassert_call = {
	"reassert", "snowid_registry_reassert",
	"snowid_registry_reassert(integer, boolean, integer, text, text, text, integer, numeric, text, text, text, boolean, bigint, bigint, bigint, bigint, timestamptz)",
	17, claim_fields, claim_exprs, CLAIM_COLUMNS, false, CLAIM_SELECT
};

/*
 * What is wrong with the registry's answer to a claim of node asked (-1:
 * none named) with a lease of lease_ms, NULL if nothing: it must come from
 * the extension's own function, and a node granted must be the one asked
 * for (unless assigned), inside the layout, under a lease no longer than
 * asked.  A wrong answer is a conflict: nothing is issued under it.
 */
static char *
snowid_claim_answer_wrong(PGresult *res, int asked, bool auto_node,
						  int64 lease_ms, int64 max_node)
{
	int64		node;
	int64		granted_ms;

	if (strcmp(PQgetvalue(res, 0, 7), "t") != 0)
		return pstrdup("the registry's snowid_registry_claim() is not the function of its snowid extension (a function of that name was put in the extension's schema): nothing is issued under its answer");
	if (strcmp(PQgetvalue(res, 0, 0), "ok") != 0)
		return NULL;
	if (PQgetisnull(res, 0, 1) || PQgetisnull(res, 0, 2))
		return pstrdup("the registry granted a lease without a node or a length");
	node = strtoi64(PQgetvalue(res, 0, 1), NULL, 10);
	granted_ms = strtoi64(PQgetvalue(res, 0, 2), NULL, 10);
	if (node < 0 || node > max_node)
		return psprintf("the registry granted node " INT64_FORMAT ", outside this server's layout (node IDs 0 to " INT64_FORMAT ")",
						node, max_node);
	if (!auto_node && asked >= 0 && node != asked)
		return psprintf("the registry granted node " INT64_FORMAT " to a claim of node %d (snowid.node_id)",
						node, asked);
	if (granted_ms <= 0 || granted_ms > lease_ms)
		return psprintf("the registry granted a lease of " INT64_FORMAT " ms to a claim of " INT64_FORMAT " ms",
						granted_ms, lease_ms);
	return snowid_floor_impossible(!PQgetisnull(res, 0, 5),
								   PQgetisnull(res, 0, 5) ? 0 :
								   strtoi64(PQgetvalue(res, 0, 5), NULL, 10),
								   !PQgetisnull(res, 0, 6),
								   PQgetisnull(res, 0, 6) ? 0 :
								   strtoi64(PQgetvalue(res, 0, 6), NULL, 10));
}

/*
 * The registry's answer to a claim sent at sent_at; wrong: what is wrong
 * with it (snowid_claim_answer_wrong), NULL if nothing.
 */
static void
snowid_publish_answer(PGresult *res, TimestampTz sent_at, const char *wrong)
{
	SnowidRegistryShared *r = snowid_registry;
	const char *result = wrong != NULL ? "wrong" : PQgetvalue(res, 0, 0);
	TimestampTz now = GetCurrentTimestamp();
	int			node = wrong != NULL || PQgetisnull(res, 0, 1) ? -1 :
		atoi(PQgetvalue(res, 0, 1));
	const char *holder = wrong != NULL || PQgetisnull(res, 0, 3) ? "" :
		PQgetvalue(res, 0, 3);
	const char *detail = wrong != NULL ? wrong :
		PQgetisnull(res, 0, 4) ? "" : PQgetvalue(res, 0, 4);

	if (wrong != NULL)
		ereport(LOG,
				(errmsg("snowid refuses the registry's answer: %s", wrong)));

	if (strcmp(result, "ok") == 0 && node >= 0)
	{
		int64		lease_ms = strtoi64(PQgetvalue(res, 0, 2), NULL, 10);
		int64		margin_us = 1000000 + lease_ms;	/* 1 s + 1/1000 */
		TimestampTz deadline = sent_at + lease_ms * 1000 - margin_us;
		int			old_node;
		SnowidRegistryState old_state;
		bool		moved;
		bool		unproven;

		SpinLockAcquire(&r->mutex);
		old_node = r->node_id;
		old_state = r->state;
		unproven = r->unconfirmed;
		SpinLockRelease(&r->mutex);
		moved = old_node != node;

		if (moved || old_state != SNOWID_REGISTRY_OK)
		{
			/* a new grant: close, raise above the previous holder, open */
			if (moved || unproven ||
				!PQgetisnull(res, 0, 5) || !PQgetisnull(res, 0, 6))
				snowid_gate_close();
			if (unproven)
			{
				/*
				 * A start that could not prove it is the server in place
				 * (a copy, a restore) takes over a lease whose holder may
				 * have issued IDs during an outage and stopped before the
				 * registry heard of them: every such ID lies below that
				 * holder's clock plus its max_lead, so this start goes on
				 * above the time of the answer plus max_lead (which
				 * raise_floor adds).
				 */
				snowid_generator_raise_floor(node, 0, false, now);
			}
			if (!PQgetisnull(res, 0, 5) || !PQgetisnull(res, 0, 6))
			{
				TimestampTz until = 0;

				if (!PQgetisnull(res, 0, 6))
				{
					int64		unix_us = strtoi64(PQgetvalue(res, 0, 6), NULL, 10);

					until = unix_us - ((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY);
				}
				snowid_generator_raise_floor(node,
											PQgetisnull(res, 0, 5) ? 0 :
											strtoi64(PQgetvalue(res, 0, 5), NULL, 10),
											!PQgetisnull(res, 0, 5), until);
			}
		}

		SpinLockAcquire(&r->mutex);
		r->node_id = node;
		r->state = SNOWID_REGISTRY_OK;
		r->deadline = deadline;
		r->last_contact = now;
		r->unreachable_since = 0;
		r->fallback_deadline = 0;
		r->unconfirmed = false;
		r->holder[0] = '\0';
		strlcpy(r->detail, detail, SNOWID_REGISTRY_TEXT);
		SpinLockRelease(&r->mutex);

		snowid_lease_persist(node, deadline,
							 moved || old_state != SNOWID_REGISTRY_OK, NULL);
		held_this_start = true;
		snowid_gate_open(node);
		if (moved || old_state != SNOWID_REGISTRY_OK)
		{
			pg_atomic_fetch_add_u64(&r->claims, 1);
			snowid_forget_problem();
			ereport(LOG,
					(errmsg("snowid holds node %d from the registry until %s",
							node, timestamptz_to_str(deadline)),
					 detail[0] ? errdetail("The registry says: %s.", detail) : 0));
		}
		else
			pg_atomic_fetch_add_u64(&r->renewals, 1);
		return;
	}

	/* refused */
	{
		TimestampTz persisted;
		char		predecessor[SNOWID_START_ID_LEN + 1];

	snowid_gate_close();
	pg_atomic_fetch_add_u64(&r->conflicts, 1);
	SpinLockAcquire(&r->mutex);
	if (node >= 0)
		r->node_id = node;
	else
		node = r->node_id;
	r->state = SNOWID_REGISTRY_CONFLICT;
	r->last_contact = now;
	r->unreachable_since = 0;
	r->fallback_deadline = 0;
	strlcpy(r->holder, holder, SNOWID_REGISTRY_TEXT);
	strlcpy(r->detail, detail, SNOWID_REGISTRY_TEXT);
	persisted = r->persisted_deadline;
	memcpy(predecessor, r->predecessor, sizeof(predecessor));
	SpinLockRelease(&r->mutex);

	/*
	 * Someone else holds the node: the lease in the local file is no longer
	 * one to issue under after a restart.  Its start stays the one that last
	 * held the node here, so that a crash-restart can still take it over.
	 */
	if (holder[0] != '\0' && persisted != 0 && node >= 0)
		snowid_lease_persist(node, 0, true,
							 held_this_start || predecessor[0] == '\0' ?
							 NULL : predecessor);

	if (holder[0] != '\0')
		snowid_log_problem(psprintf("%d %s", node, holder),
						   psprintf("snowid node %d is held by %s: this server issues no IDs",
									node, holder),
						   detail);
	else if (node >= 0)
		snowid_log_problem(detail,
						   psprintf("snowid registry refused node %d: this server issues no IDs",
									node),
						   detail);
	else
		snowid_log_problem(detail,
						   pstrdup("snowid registry assigned this server no node: it issues no IDs"),
						   detail);
	}
}

/* ---- one claim ---- */

bool
snowid_claim(char **error)
{
	SnowidRegistryShared *r = snowid_registry;
	const SnowidLayout *layout = &snowid_active_layout;
	char		node_text[16];
	char		max_node_text[16];
	char		port_text[16];
	char		sysid_text[32];
	char		lease_text[32];
	char		takeover_text[16];
	char		max_lead_text[16];
	char		last_text[32];
	char		held_text[32];
	char		host[256];
	char		predecessor[SNOWID_START_ID_LEN + 1];
	char		start[SNOWID_START_ID_LEN + 1];
	char		secret[SNOWID_START_ID_LEN + 1];
	const char *values[17];
	int			node;
	bool		auto_node;
	bool		promoted;
	bool		unconfirmed;
	bool		reassert;
	TimestampTz deadline;
	uint64		bound;
	PGresult   *res;
	TimestampTz sent_at;

	SpinLockAcquire(&r->mutex);
	node = r->node_id;
	auto_node = r->auto_node;
	promoted = r->started_as_standby;
	unconfirmed = r->unconfirmed;
	memcpy(predecessor, r->predecessor, sizeof(predecessor));
	memcpy(start, r->start_id, sizeof(start));
	memcpy(secret, r->secret, sizeof(secret));
	deadline = r->deadline;
	SpinLockRelease(&r->mutex);

	/*
	 * A start that cannot prove it holds its earlier start's lease
	 * (lease_file.c) takes it over only once the registry has answered
	 * long enough for a running holder of that lease (the original of a
	 * copy, resuming on it in place) to re-assert it; until then it claims
	 * nothing, so that an assigned node is not given up for another.
	 */
	if (answering_since == 0)
		answering_since = GetCurrentTimestamp();
	if (unconfirmed && predecessor[0] != '\0' &&
		GetCurrentTimestamp() - answering_since <
		(int64) SNOWID_REGISTRY_REASSERT_MS * 1000)
	{
		/* the registry still answers? */
		res = snowid_registry_exec("SELECT 1", 0, NULL,
								   SNOWID_REGISTRY_TIMEOUT_MS, error, NULL);
		if (res == NULL)
			return false;
		PQclear(res);
		SpinLockAcquire(&r->mutex);
		r->state = SNOWID_REGISTRY_CONNECTING;
		r->unreachable_since = 0;
		r->fallback_deadline = 0;
		snprintf(r->detail, SNOWID_REGISTRY_TEXT,
				 "this start cannot prove it is the server that holds node %d's lease; it claims the node once the registry has answered for %d s",
				 node, SNOWID_REGISTRY_REASSERT_MS / 1000);
		SpinLockRelease(&r->mutex);
		return true;
	}

	/*
	 * A lease this server holds and issues under is re-asserted, saying
	 * until when it believes it holds it: a registry that may have
	 * forgotten it (restarted, promoted, restored, its snowid created
	 * again) gives it back to this server before any other (1.8 on).  A
	 * start that cannot prove it is the server in place never does.
	 */
	reassert = node >= 0 && !unconfirmed && deadline > GetCurrentTimestamp() &&
		SNOWID_GATE_NODE(pg_atomic_read_u64(&snowid_shared->gate)) == node &&
		snowid_registry_has_version("1.8");
	snprintf(held_text, sizeof(held_text), "%.6f",
			 (double) deadline / 1e6 +
			 (double) ((POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY));

	snowid_host_name(host, sizeof(host));
	snprintf(node_text, sizeof(node_text), "%d", node);
	snprintf(max_node_text, sizeof(max_node_text), INT64_FORMAT,
			 snowid_max_node(layout));
	snprintf(port_text, sizeof(port_text), "%d", PostPortNumber);
	snprintf(sysid_text, sizeof(sysid_text), UINT64_FORMAT, GetSystemIdentifier());
	snprintf(lease_text, sizeof(lease_text), INT64_FORMAT,
			 (int64) snowid_lease_s * 1000);
	snprintf(takeover_text, sizeof(takeover_text), "%d",
			 SNOWID_REGISTRY_TAKEOVER_MS);
	snprintf(max_lead_text, sizeof(max_lead_text), "%d", snowid_max_lead_ms);
	bound = snowid_registry_report_bound();
	snprintf(last_text, sizeof(last_text), UINT64_FORMAT, bound);

	values[0] = node >= 0 ? node_text : NULL;
	values[1] = auto_node ? "true" : "false";
	values[2] = max_node_text;
	values[3] = snowid_layout_text();
	values[4] = cluster_name;
	values[5] = host;
	values[6] = port_text;
	values[7] = sysid_text;
	values[8] = start;
	values[9] = secret;
	values[10] = predecessor[0] ? predecessor : NULL;
	values[11] = promoted ? "true" : "false";
	values[12] = lease_text;
	values[13] = takeover_text;
	values[14] = max_lead_text;
	values[15] = bound > 0 ? last_text : NULL;
	values[16] = held_text;

	sent_at = GetCurrentTimestamp();
	res = snowid_registry_call(reassert ? &reassert_call : &claim_call,
							   reassert ? 17 : 16, values,
							   SNOWID_REGISTRY_TIMEOUT_MS, error, NULL);
	if (res == NULL)
		return false;
	if (PQntuples(res) != 1 || PQnfields(res) != 8)
	{
		PQclear(res);
		*error = pstrdup("the registry's snowid_registry_claim() answered in an unknown form");
		return false;
	}
	snowid_registry_answered();
	snowid_publish_answer(res, sent_at,
						  snowid_claim_answer_wrong(res, node, auto_node,
													(int64) snowid_lease_s * 1000,
													snowid_max_node(layout)));
	PQclear(res);
	return true;
}
