/*-------------------------------------------------------------------------
 *
 * lease.h
 *	  The lease state: what the registry worker publishes in shared memory
 *	  about this server's node lease, the gate the generator reads, and the
 *	  node ID in force (lease.c); the local lease file is lease_file.h's.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_LEASE_H
#define SNOWID_LEASE_H

#include "datatype/timestamp.h"
#include "layout.h"
#include "port/atomics.h"
#include "state.h"
#include "storage/spin.h"

/* what snowid_registry_status() shows as state */
typedef enum SnowidRegistryState
{
	SNOWID_REGISTRY_OFF,		/* no registry named */
	SNOWID_REGISTRY_CONNECTING, /* named, no answer yet since start or reload */
	SNOWID_REGISTRY_OK,			/* the lease is held and fresh */
	SNOWID_REGISTRY_UNREACHABLE,	/* no answer; issuing until the lease ends */
	SNOWID_REGISTRY_CONFLICT	/* the registry refused: issuing nothing */
} SnowidRegistryState;

/* heartbeat of a member, and the silence a same-lineage takeover needs */
#define SNOWID_REGISTRY_HEARTBEAT_MS 1000
#define SNOWID_REGISTRY_TAKEOVER_MS 5000

/*
 * How long a start that cannot prove it holds its lease (lease_file.c)
 * waits, once the registry answers, before it takes its earlier start's
 * lease over: a running holder of that lease retries at least every 4 s
 * (registry_worker.c's backoff) and re-asserts it in that time.
 */
#define SNOWID_REGISTRY_REASSERT_MS 10000
#define SNOWID_BOOT_ID_LEN 36	/* /proc/sys/kernel/random/boot_id */

#define SNOWID_START_ID_LEN 32	/* hex digits of a start identity */
#define SNOWID_REGISTRY_TEXT 512

/*
 * Who writes what.  lease_file.c, in the postmaster at each shared-memory
 * initialisation, sets up every field (the start facts only then) and
 * later persisted_deadline, from snowid_lease_persist in the registry
 * worker; registry_conn.c writes registry (snowid_registry_describe, in
 * the worker); registry_worker.c writes everything else (state, node_id,
 * auto_node, deadline, last_contact, unreachable_since, conflict_layout,
 * holder, detail, unchecked, the registry's identity and the counters).
 * The registry's identity is also set up by lease_file.c from the file.
 * unconfirmed is set by lease_file.c at start and cleared by
 * registry_claim.c when the registry grants a node.
 * Backends only read, under the spinlock (snowid_registry_read) or the
 * atomics.
 */
typedef struct SnowidRegistryShared
{
	slock_t		mutex;			/* protects everything up to the counters */
	SnowidRegistryState state;
	int			node_id;		/* this server's node, -1 while unknown */
	bool		auto_node;		/* node assigned by the registry */
	TimestampTz deadline;		/* issuing allowed until (local clock), 0: none */
	TimestampTz last_contact;	/* last answer of the registry */
	TimestampTz unreachable_since;	/* 0 while it answers */
	bool		conflict_layout;	/* a conflict over the layout, not the node */
	char		registry[SNOWID_REGISTRY_TEXT];	/* connection, no password */
	char		holder[SNOWID_REGISTRY_TEXT];	/* conflict: who holds the node */
	char		detail[SNOWID_REGISTRY_TEXT];	/* why, in a sentence */

	/*
	 * The registry the lease is held from, by what it is, not by the
	 * connection string's text: its system identifier (0 while unknown) and
	 * database, learned when it first answers and kept in the lease file.
	 */
	uint64		registry_sysid;
	char		registry_db[NAMEDATALEN];

	/*
	 * Issuing under snowid.node_id, as without a registry, while a registry
	 * named by reload has not answered yet.
	 */
	bool		unchecked;

	/* facts of this start, fixed in the postmaster */
	char		start_id[SNOWID_START_ID_LEN + 1];
	char		secret[SNOWID_START_ID_LEN + 1];	/* presented on every call on
													 * the lease; never shown */
	char		predecessor[SNOWID_START_ID_LEN + 1];	/* "" if none */
	bool		from_backup;	/* started from a base backup as a primary */
	bool		moved;			/* started on another host or port than its
								 * lease file names: a copy of a data
								 * directory (a snapshot), or a move */
	bool		started_as_standby;

	/*
	 * The data directory's device and inode and the host's boot ID are
	 * those the lease file recorded at the registry's last confirmation:
	 * this start is the same server in place, in the same boot of its host.
	 * Only then does it resume on its lease while the registry is away.
	 */
	bool		proven;

	/*
	 * The lease file holds a live lease this start cannot prove is its own
	 * (a copy, a restore, a promoted standby, a start after a reboot):
	 * nothing is issued until the registry grants a node; why, in words.
	 */
	bool		unconfirmed;
	char		unproven_why[256];
	TimestampTz fallback_deadline;	/* the local lease file's, 0 if untrusted */
	TimestampTz persisted_deadline; /* what the local lease file holds */

	pg_atomic_uint64 claims;	/* leases granted afresh (start, takeover) */
	pg_atomic_uint64 renewals;
	pg_atomic_uint64 conflicts; /* answers that refused this server */
	pg_atomic_uint64 outages;	/* times the registry stopped answering */
	pg_atomic_uint64 failures;	/* failed connections and queries */
	pg_atomic_uint64 releases;
} SnowidRegistryShared;

extern SnowidRegistryShared *snowid_registry;

/* lease.c */
extern bool snowid_registry_named(void);
extern Size snowid_registry_shmem_size(void);
extern void snowid_gate_open(int node_id);
extern void snowid_gate_close(void);
extern void snowid_gate_off(void);
extern int	snowid_node_in_force(void);
extern void snowid_current_layout(SnowidLayout *layout, int *node_id);
extern uint64 snowid_gate_closed(SnowidShared *shared,
								 const SnowidLayout *layout);
extern char *snowid_sentence(const char *text);
extern void snowid_host_name(char *host, size_t size);
extern char *snowid_layout_text(void);
extern void snowid_registry_read(SnowidRegistryShared *r,
								 SnowidRegistryShared *copy);
extern const char *snowid_state_name(SnowidRegistryState state);
extern bool snowid_sees_members(void);
extern char *snowid_registry_detail_for_user(const SnowidRegistryShared *copy);
extern void snowid_refuse_unconfirmed(const char *what);

#endif							/* SNOWID_LEASE_H */
