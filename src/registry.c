/*-------------------------------------------------------------------------
 *
 * registry.c
 *	  The member side of the registry, in shared memory: the gate the
 *	  generator reads, the lease state the background worker publishes, the
 *	  local lease file, and snowid_registry_status() / _stats().
 *
 * The generator reads one word, SnowidShared.gate: its low half is 0 while
 * this server may not issue, otherwise its node ID + 1; its high half counts
 * the gate's changes.  A caller reads the gate before it claims positions
 * and again after: if it changed, the claimed positions are dropped (a gap)
 * and the caller starts over, so no ID leaves under a node whose lease
 * ended, or below a floor raised, while it was claiming.  Without a registry the gate is
 * opened at start with snowid.node_id (or stays shut while that is unset)
 * and nothing else ever touches it: the hot path costs what it did.  With a
 * registry named, the gate starts shut and only the worker
 * (registry_worker.c) moves it: open once the registry grants the node
 * (after raising the generator above any floor the previous holder left),
 * shut on a conflict, when the lease runs out, at shutdown, when the node
 * moves, or when a reload names a registry where there was none.  The
 * worker alone writes the fields under the spinlock; the SQL functions and
 * the error path of the generator read them.
 *
 * The local lease file, $PGDATA/snowid.lease, one line written aside and
 * renamed, keeps the lease across a restart:
 *
 *	 snowid-lease-1 <node> <auto> <start id> <deadline> <port> <host>
 *
 * (deadline in microseconds since 2000-01-01, 0 once released).  A start
 * trusts it to issue before the registry answers only when the registry
 * cannot be reached, and only on the same host and port, never in a data
 * directory started from a base backup (backup_label present at start,
 * without standby.signal: a clone, or a restore) or as a standby.  Its
 * start ID is presented to the registry as this server's predecessor, so
 * that a restart after a crash takes its own lease over.  A start from a
 * backup clears the lease (keeping an assigned node as a wish).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "access/htup_details.h"
#include "fmgr.h"
#include "catalog/pg_authid.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "postmaster/postmaster.h"
#include "registry.h"
#include "snowid.h"
#include "storage/fd.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(snowid_registry_status);
PG_FUNCTION_INFO_V1(snowid_registry_stats);

#define SNOWID_LEASE_FILE "snowid.lease"
#define SNOWID_LEASE_TMP "snowid.lease.tmp"
#define SNOWID_LEASE_MAGIC "snowid-lease-1"

SnowidRegistryShared *snowid_registry = NULL;

/* facts of this postmaster's start, kept across crash re-initialisation */
static bool start_facts_known = false;
static char start_id[SNOWID_START_ID_LEN + 1];
static bool start_from_backup;
static bool start_as_standby;

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
 * The node came from another start: never issue at or below what its
 * previous holder may have issued.  floor_id bounds every ID it issued;
 * floor_until is when its lease ended (it issued nothing of a tick
 * starting more than max_lead after that).
 */
void
snowid_registry_raise_floor(int node_id, int64 floor_id, bool has_floor_id,
							TimestampTz floor_until)
{
	const SnowidLayout *layout = &snowid_active_layout;
	uint64		position = 0;
	uint64		old;

	if (has_floor_id && floor_id > 0)
		position = snowid_position_at_or_above(layout, node_id, (uint64) floor_id);
	if (floor_until > 0)
	{
		TimestampTz ts = floor_until + (int64) snowid_max_lead_ms * 1000;
		int64		tick = snowid_tick_of(layout, ts - 1) + 1;
		uint64		p;

		if (tick > snowid_max_tick(layout))
			p = snowid_position_end(layout);
		else
			p = tick <= 0 ? 0 : (uint64) tick << layout->sequence_bits;
		position = Max(position, p);
	}
	old = pg_atomic_read_u64(&snowid_shared->next_position);
	while (old < position &&
		   !pg_atomic_compare_exchange_u64(&snowid_shared->next_position,
										   &old, position))
		;
	if (position > old)
		ereport(LOG,
				(errmsg("snowid continues above the IDs the previous holder of node %d may have issued",
						node_id),
				 errdetail("The next ID will be " INT64_FORMAT " or above.",
						   snowid_id_from_position(layout, position, node_id))));
}

/* ---- the local lease file ---- */

typedef struct SnowidLeaseFile
{
	int			node_id;
	bool		auto_node;
	char		start_id[SNOWID_START_ID_LEN + 1];
	TimestampTz deadline;
	int			port;
	char		host[256];
} SnowidLeaseFile;

static bool
snowid_lease_read(SnowidLeaseFile *f)
{
	char		buf[512];
	char		magic[32];
	int			fd;
	int			len;
	int			auto_node;
	long long	deadline;

	fd = OpenTransientFile(SNOWID_LEASE_FILE, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		if (errno != ENOENT)
			ereport(LOG,
					(errcode_for_file_access(),
					 errmsg("could not open file \"%s\": %m", SNOWID_LEASE_FILE)));
		return false;
	}
	len = read(fd, buf, sizeof(buf) - 1);
	CloseTransientFile(fd);
	buf[Max(len, 0)] = '\0';
	if (sscanf(buf, "%31s %d %d %32s %lld %d %255s", magic, &f->node_id,
			   &auto_node, f->start_id, &deadline, &f->port, f->host) != 7 ||
		strcmp(magic, SNOWID_LEASE_MAGIC) != 0 || f->node_id < -1 ||
		strspn(f->start_id, "0123456789abcdef") != SNOWID_START_ID_LEN)
	{
		ereport(WARNING,
				(errmsg("snowid ignores the malformed lease file \"%s\"",
						SNOWID_LEASE_FILE),
				 errdetail("This server waits for the registry before it issues IDs.")));
		return false;
	}
	f->auto_node = auto_node != 0;
	f->deadline = (TimestampTz) deadline;
	return true;
}

static void
snowid_this_host(char *host, size_t size)
{
	if (gethostname(host, size) != 0)
		strlcpy(host, "unknown", size);
	host[size - 1] = '\0';
	/* one word in the file */
	for (char *p = host; *p; p++)
		if (*p == ' ' || *p == '\n' || *p == '\t')
			*p = '_';
}

/*
 * Write the lease this server holds (deadline 0: released) for node_id.
 * Skipped unless force, or the deadline moved by a tenth of a lease: the
 * file may lag behind the registry, never lead it.
 */
void
snowid_lease_persist(int node_id, TimestampTz deadline, bool force,
					 const char *start)
{
	SnowidRegistryShared *r = snowid_registry;
	char		host[256];
	char	   *line;
	TimestampTz persisted;
	bool		auto_node;

	SpinLockAcquire(&r->mutex);
	persisted = r->persisted_deadline;
	auto_node = r->auto_node;
	SpinLockRelease(&r->mutex);
	if (!force && deadline != 0 &&
		deadline - persisted < (int64) snowid_lease_s * 100000)
		return;

	snowid_this_host(host, sizeof(host));
	line = psprintf("%s %d %d %s " INT64_FORMAT " %d %s\n", SNOWID_LEASE_MAGIC,
					node_id, auto_node ? 1 : 0,
					start != NULL ? start : r->start_id, deadline,
					PostPortNumber, host);
	if (snowid_write_durably(SNOWID_LEASE_FILE, SNOWID_LEASE_TMP, line,
							 strlen(line), LOG))
	{
		SpinLockAcquire(&r->mutex);
		r->persisted_deadline = deadline;
		SpinLockRelease(&r->mutex);
	}
	pfree(line);
}

/* ---- start-up ---- */

static void
snowid_learn_start_facts(void)
{
	uint8		bytes[SNOWID_START_ID_LEN / 2];

	if (start_facts_known)
		return;
	if (!pg_strong_random(bytes, sizeof(bytes)))
		ereport(FATAL,
				(errmsg("could not generate a random start identity for snowid")));
	hex_encode((char *) bytes, sizeof(bytes), start_id);
	start_id[SNOWID_START_ID_LEN] = '\0';
	start_as_standby = access("standby.signal", F_OK) == 0;
	start_from_backup = !start_as_standby && access("backup_label", F_OK) == 0;
	start_facts_known = true;
}

/*
 * Called in the postmaster at every shared-memory initialisation, before
 * the high-water mark is loaded (which needs the node).
 */
void
snowid_registry_shmem_startup(void)
{
	SnowidRegistryShared *r;
	SnowidLeaseFile f;
	bool		have_file;
	bool		same_home;
	char		host[256];
	bool		found;

	r = ShmemInitStruct("snowid registry", snowid_registry_shmem_size(), &found);
	snowid_registry = r;
	if (found)
		return;

	memset(r, 0, sizeof(*r));
	SpinLockInit(&r->mutex);
	pg_atomic_init_u64(&r->claims, 0);
	pg_atomic_init_u64(&r->renewals, 0);
	pg_atomic_init_u64(&r->conflicts, 0);
	pg_atomic_init_u64(&r->outages, 0);
	pg_atomic_init_u64(&r->failures, 0);
	pg_atomic_init_u64(&r->releases, 0);
	r->node_id = snowid_node_id;

	snowid_learn_start_facts();
	memcpy(r->start_id, start_id, sizeof(r->start_id));
	r->from_backup = start_from_backup;
	r->started_as_standby = start_as_standby;

	have_file = snowid_lease_read(&f);
	snowid_this_host(host, sizeof(host));
	same_home = have_file && !start_from_backup &&
		f.port == PostPortNumber && strcmp(f.host, host) == 0;

	if (snowid_node_id < 0 && have_file && f.auto_node &&
		f.node_id >= 0 && f.node_id <= snowid_max_node(&snowid_active_layout))
	{
		/* the node the registry gave this server: asked for again */
		r->node_id = f.node_id;
		r->auto_node = true;
	}
	else if (snowid_node_id < 0)
		r->auto_node = true;

	if (same_home && f.node_id == r->node_id && r->node_id >= 0)
	{
		memcpy(r->predecessor, f.start_id, sizeof(r->predecessor));
		r->persisted_deadline = f.deadline;
		if (!start_as_standby && f.deadline > GetCurrentTimestamp())
			r->fallback_deadline = f.deadline;
	}

	if (start_from_backup && have_file && f.deadline != 0)
	{
		/* a clone or a restore: the lease in the file is not ours */
		r->persisted_deadline = 1;
		snowid_lease_persist(r->auto_node ? r->node_id : snowid_node_id, 0, true,
							 NULL);
		ereport(LOG,
				(errmsg("snowid cleared the node lease this data directory was copied with"),
				 errdetail("The server starts from a base backup (backup_label is present): the lease belonged to the server it was copied from."),
				 errhint("This server issues IDs once the registry grants it a node.")));
	}

	if (snowid_registry_named())
	{
		r->state = SNOWID_REGISTRY_CONNECTING;
		snowid_gate_close();
	}
	else
	{
		r->state = SNOWID_REGISTRY_OFF;
		snowid_gate_off();
	}
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
	SpinLockRelease(&r->mutex);
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

	if (copy.state == SNOWID_REGISTRY_CONFLICT)
	{
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
				 errdetail("%s", snowid_sentence(copy.detail)),
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

	/* unreachable, with no lease left (or never one) */
	if (copy.deadline != 0)
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

/* ---- SQL ---- */

Datum
snowid_registry_status(PG_FUNCTION_ARGS)
{
	SnowidRegistryShared *r = snowid_registry;
	TupleDesc	tupdesc;
	Datum		values[6];
	bool		nulls[6] = {false};
	SnowidRegistryShared copy;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	(void) snowid_require_shared();

	snowid_registry_read(r, &copy);

	/* where the registry is: for those who may read the setting */
	if (copy.state == SNOWID_REGISTRY_OFF || copy.registry[0] == '\0' ||
		!has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_SETTINGS))
		nulls[0] = true;
	else
		values[0] = CStringGetTextDatum(copy.registry);
	values[1] = CStringGetTextDatum(snowid_state_name(copy.state));
	values[2] = Int32GetDatum(copy.node_id);
	nulls[2] = copy.node_id < 0;
	values[3] = TimestampTzGetDatum(copy.deadline);
	nulls[3] = copy.deadline == 0;
	values[4] = TimestampTzGetDatum(copy.last_contact);
	nulls[4] = copy.last_contact == 0;
	if (copy.detail[0] == '\0' ||
		(copy.state == SNOWID_REGISTRY_UNREACHABLE &&
		 !has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_SETTINGS)))
		nulls[5] = true;
	else
		values[5] = CStringGetTextDatum(copy.detail);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

Datum
snowid_registry_stats(PG_FUNCTION_ARGS)
{
	SnowidRegistryShared *r;
	TupleDesc	tupdesc;
	Datum		values[6];
	bool		nulls[6] = {false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	(void) snowid_require_shared();
	r = snowid_registry;
	values[0] = Int64GetDatum((int64) pg_atomic_read_u64(&r->claims));
	values[1] = Int64GetDatum((int64) pg_atomic_read_u64(&r->renewals));
	values[2] = Int64GetDatum((int64) pg_atomic_read_u64(&r->conflicts));
	values[3] = Int64GetDatum((int64) pg_atomic_read_u64(&r->outages));
	values[4] = Int64GetDatum((int64) pg_atomic_read_u64(&r->failures));
	values[5] = Int64GetDatum((int64) pg_atomic_read_u64(&r->releases));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
