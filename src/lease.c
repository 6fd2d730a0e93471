/*-------------------------------------------------------------------------
 *
 * lease.c
 *	  The lease state in shared memory: the gate the generator reads, the
 *	  node ID in force, and what the registry worker publishes about the
 *	  lease, with the generator's error path when the gate is shut.
 *
 * The generator reads one word, SnowidShared.gate: its low half is 0 while
 * this server may not issue, otherwise its node ID + 1; its high half counts
 * the gate's changes.  A caller reads the gate before it claims positions
 * and again after: if it changed, the claimed positions are dropped (a gap)
 * and the caller starts over, so no ID leaves under a node whose lease
 * ended, or below a floor raised, while it was claiming.  Without a
 * registry the gate is opened at start with snowid.node_id (or stays shut
 * while that is unset) and nothing else ever touches it: the hot path costs
 * what it did.  With a registry named, the gate starts shut and only the
 * worker (registry_worker.c) moves it, through the functions here: open
 * once the registry grants the node (after raising the generator above any
 * floor the previous holder left), shut on a conflict, when the lease runs
 * out, at shutdown, when the node moves, when another registry answers, or
 * when a reload names a registry where there was none (unless this server
 * issues under snowid.node_id: it goes on, unchecked, until the registry
 * answers).  lease.h says who writes which field of
 * SnowidRegistryShared; the SQL functions and the generator's error path
 * only read them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "catalog/pg_authid.h"
#include "clock.h"
#include "guc.h"
#include "layout.h"
#include "lease.h"
#include "miscadmin.h"
#include "state.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/timestamp.h"

SnowidRegistryShared *snowid_registry = NULL;

bool
snowid_registry_named(void)
{
	return snowid_registry_conninfo != NULL && snowid_registry_conninfo[0] != '\0';
}

Size
snowid_registry_shmem_size(void)
{
	return MAXALIGN(sizeof(SnowidRegistryShared));
}

/* ---- this server as the registry knows it ---- */

/*
 * This machine's host name, as a claim names it to the registry and as
 * the registry names its own server ("unknown" if the system cannot say).
 */
void
snowid_host_name(char *host, size_t size)
{
	if (gethostname(host, size) != 0)
		strlcpy(host, "unknown", size);
	host[size - 1] = '\0';
}

/* ---- the layout as the registry compares it ---- */

/* The layout in force, in words that do not depend on the time zone. */
char *
snowid_layout_text(void)
{
	const SnowidLayout *l = &snowid_active_layout;
	struct pg_tm tm;
	fsec_t		fsec;

	if (timestamp2tm(l->epoch, NULL, &tm, &fsec, NULL, NULL) != 0)
		elog(ERROR, "snowid epoch out of range");
	return psprintf("epoch %04d-%02d-%02d %02d:%02d:%02d.%06d+00, tick " INT64_FORMAT "us, node_bits %d, sequence_bits %d, id_bits %d",
					tm.tm_year, tm.tm_mon, tm.tm_mday, tm.tm_hour, tm.tm_min,
					tm.tm_sec, (int) fsec, l->tick_us, l->node_bits,
					l->sequence_bits, l->id_bits);
}

/*
 * text as the end of a sentence: capitalised, with a full stop unless it
 * already ends in punctuation.
 */
char *
snowid_sentence(const char *text)
{
	size_t		len = strlen(text);
	char	   *s = psprintf("%s%s", text,
							 len > 0 && strchr(".?!", text[len - 1]) ? "" : ".");

	s[0] = pg_toupper((unsigned char) s[0]);
	return s;
}

/* ---- the gate ---- */

void
snowid_gate_open(int node_id)
{
	uint64		old = pg_atomic_read_u64(&snowid_shared->gate);

	/* a renewal of the same node leaves the gate as it is */
	if (SNOWID_GATE_NODE(old) == node_id)
		return;
	pg_write_barrier();
	pg_atomic_write_u64(&snowid_shared->gate,
						(((old >> 32) + 1) << 32) | ((uint64) node_id + 1));
}

void
snowid_gate_close(void)
{
	uint64		old = pg_atomic_read_u64(&snowid_shared->gate);

	if (SNOWID_GATE_NODE(old) < 0)
		return;
	pg_atomic_write_u64(&snowid_shared->gate, ((old >> 32) + 1) << 32);
	pg_memory_barrier();
}

/* No registry (any more): the configured node, if any, issues freely. */
void
snowid_gate_off(void)
{
	if (snowid_node_id >= 0)
		snowid_gate_open(snowid_node_id);
	else
		snowid_gate_close();
}

/* This server's node ID: configured, or assigned by the registry; -1 if none. */
int
snowid_node_in_force(void)
{
	int			node;

	if (snowid_node_id >= 0 || snowid_registry == NULL)
		return snowid_node_id;
	SpinLockAcquire(&snowid_registry->mutex);
	node = snowid_registry->node_id;
	SpinLockRelease(&snowid_registry->mutex);
	return node;
}

/*
 * The layout in force and this server's node ID (-1 if none), for the
 * decoders: the configured layout, with the node the registry assigned.
 */
void
snowid_current_layout(SnowidLayout *layout, int *node_id)
{
	snowid_configured_layout(layout, node_id);
	if (snowid_gucs_defined)
		*node_id = snowid_node_in_force();
}

/* ---- reading the published state ---- */

/* Copy what the worker publishes, consistently, into *copy. */
void
snowid_registry_read(SnowidRegistryShared *r, SnowidRegistryShared *copy)
{
	SpinLockAcquire(&r->mutex);
	copy->state = r->state;
	copy->node_id = r->node_id;
	copy->deadline = r->deadline;
	copy->last_contact = r->last_contact;
	copy->unreachable_since = r->unreachable_since;
	memcpy(copy->registry, r->registry, sizeof(copy->registry));
	memcpy(copy->holder, r->holder, sizeof(copy->holder));
	memcpy(copy->detail, r->detail, sizeof(copy->detail));
	copy->unconfirmed = r->unconfirmed;
	memcpy(copy->unproven_why, r->unproven_why, sizeof(copy->unproven_why));
	SpinLockRelease(&r->mutex);
}

/* ---- what the current user may read of it ---- */

/*
 * May the current user read other members' identity (host, port, system
 * identifier, start, cluster name), which the registry names in a
 * conflict?  Superusers and members of pg_monitor; checked on every call.
 */
bool
snowid_sees_members(void)
{
	return superuser() || has_privs_of_role(GetUserId(), ROLE_PG_MONITOR);
}

/*
 * The published detail as the current user may read it, or NULL.  Why the
 * registry cannot be reached (libpq's words, naming where it is) only for
 * those who may read the setting (pg_read_all_settings); who holds the node
 * in a conflict only for snowid_sees_members(), others read that another
 * server holds it.  The server log has the whole text.
 */
char *
snowid_registry_detail_for_user(const SnowidRegistryShared *copy)
{
	if (copy->detail[0] == '\0')
		return NULL;
	if (copy->unreachable_since != 0 || copy->state == SNOWID_REGISTRY_UNREACHABLE)
		return has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_SETTINGS) ?
			pstrdup(copy->detail) : NULL;
	if (copy->holder[0] != '\0' && !snowid_sees_members())
		return psprintf("node %d is held by another server", copy->node_id);
	return pstrdup(copy->detail);
}

/* ---- the generator's error path ---- */

const char *
snowid_state_name(SnowidRegistryState state)
{
	switch (state)
	{
		case SNOWID_REGISTRY_OFF:
			return "off";
		case SNOWID_REGISTRY_CONNECTING:
			return "connecting";
		case SNOWID_REGISTRY_OK:
			return "ok";
		case SNOWID_REGISTRY_UNREACHABLE:
			return "unreachable";
		case SNOWID_REGISTRY_CONFLICT:
			return "conflict";
	}
	return "unknown";
}

/*
 * The gate is shut on a start that cannot prove it holds the lease in its
 * lease file (lease_file.c) and has no answer of the registry yet: fail,
 * saying why and when it retries, what being "IDs" or a pool's values.
 * Returns if this start is not in that case.
 */
void
snowid_refuse_unconfirmed(const char *what)
{
	SnowidRegistryShared copy;

	if (snowid_registry == NULL)
		return;
	snowid_registry_read(snowid_registry, &copy);
	if (!copy.unconfirmed || (copy.state != SNOWID_REGISTRY_CONNECTING &&
							  copy.state != SNOWID_REGISTRY_UNREACHABLE))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("snowid issues no %s under the lease of node %d until the registry confirms it",
					what, copy.node_id),
			 errdetail("This start cannot prove it is the server that holds the lease: %s.  A copy, a restore, a promoted standby or a start after a reboot waits for the registry; %s.",
					   copy.unproven_why,
					   copy.state == SNOWID_REGISTRY_UNREACHABLE ?
					   "the registry cannot be reached" :
					   "the registry has not granted the node yet"),
			 errhint("The background worker retries every 1 to 4 s; once the registry answers it waits up to %d s for a running holder of the lease to re-assert it, then this server issues if the registry grants it the node.  snowid_registry_status() shows the state.",
					 SNOWID_REGISTRY_REASSERT_MS / 1000)));
}

/*
 * The gate is shut.  While the worker has not yet heard from the registry
 * the caller waits for it, within snowid.max_wait; otherwise, or after
 * that, it fails with the reason.  Returns the gate once it opens.
 */
uint64
snowid_gate_closed(SnowidShared *shared, const SnowidLayout *layout)
{
	SnowidRegistryShared *r = snowid_registry;
	int64		wait_start = snowid_clock_monotonic_us();
	SnowidRegistryShared copy;
	char	   *where = "the registry";
	char	   *why = "";

	for (;;)
	{
		uint64		gate = pg_atomic_read_u64(&shared->gate);

		if (SNOWID_GATE_NODE(gate) >= 0)
			return gate;
		if (r == NULL)
			break;
		snowid_registry_read(r, &copy);
		if (copy.state != SNOWID_REGISTRY_CONNECTING ||
			snowid_clock_monotonic_us() - wait_start >=
			(int64) snowid_max_wait_ms * 1000)
			break;
		CHECK_FOR_INTERRUPTS();
		snowid_clock_sleep(10000);
	}

	if (r == NULL || copy.state == SNOWID_REGISTRY_OFF)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowid.node_id is not set"),
				 errdetail("Every server that generates snowids needs a node ID of its own, from 0 to " INT64_FORMAT ".",
						   snowid_max_node(layout)),
				 errhint("Set snowid.node_id in postgresql.conf and restart the server, or name a registry in snowid.registry to have one assigned.")));

	snowid_refuse_unconfirmed("IDs");

	if (copy.state == SNOWID_REGISTRY_CONFLICT)
	{
		char	   *detail = snowid_registry_detail_for_user(&copy);

		if (copy.holder[0] != '\0' && !snowid_sees_members())
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("snowid node %d is held by another server",
							copy.node_id),
					 errdetail("Only superusers and members of pg_monitor see which server holds it, in snowid_registry_status() and in the server log."),
					 errhint("Give one of the two servers another snowid.node_id (or leave it unset to have the registry assign one), or stop the other server; this server retries every second and resumes by itself once the node is free.")));
		if (copy.holder[0] != '\0')
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("snowid node %d is held by %s", copy.node_id,
							copy.holder),
					 errdetail("The registry says: %s", snowid_sentence(copy.detail)),
					 errhint("Give one of the two servers another snowid.node_id (or leave it unset to have the registry assign one), or stop the other server; this server retries every second and resumes by itself once the node is free.")));
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 copy.node_id >= 0 ?
				 errmsg("snowid registry refused node %d to this server",
						copy.node_id) :
				 errmsg("snowid registry assigned this server no node"),
				 detail != NULL ? errdetail("%s", snowid_sentence(detail)) :
				 errdetail("Only roles with the privileges of pg_read_all_settings see why."),
				 errhint("Make this server's snowid layout settings match the registry's, or free a node ID; this server retries every second.")));
	}

	/*
	 * Where the registry is, and libpq's words on why it cannot be reached,
	 * only for those who may read the setting.
	 */
	if (has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_SETTINGS))
	{
		where = psprintf("the registry (%s)", copy.registry);
		why = psprintf(": %s", copy.detail);
	}

	if (copy.state == SNOWID_REGISTRY_CONNECTING)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowid is waiting for the registry to grant this server a node"),
				 errdetail("%s", snowid_sentence(psprintf("The background worker has had no answer yet from %s", where))),
				 errhint("Retry in a moment; snowid_registry_status() shows the state.")));

	/*
	 * Unreachable, with no lease left (or never one).  A lease end still to
	 * come belongs to a lease given up (another registry named): it did not
	 * run out.
	 */
	if (copy.deadline != 0 && copy.deadline <= GetCurrentTimestamp())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowid lease of node %d ran out at %s", copy.node_id,
						timestamptz_to_str(copy.deadline)),
				 errdetail("%s", snowid_sentence(psprintf("%s has not answered since %s%s",
														  where,
														  copy.unreachable_since ?
														  timestamptz_to_str(copy.unreachable_since) :
														  "this server started",
														  why))),
				 errhint("Restore the connection to the registry; this server resumes by itself when it answers.  snowid.lease sets how long a lease lasts.")));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("snowid has no node lease from the registry"),
			 errdetail("%s", snowid_sentence(psprintf("%s cannot be reached%s", where, why))),
			 errhint("Restore the connection to the registry; this server resumes by itself when it answers.")));
	pg_unreachable();
}
