/*-------------------------------------------------------------------------
 *
 * lease_file.c
 *	  The local lease file and the facts of this start: what a server
 *	  knows of its lease before the registry answers.
 *
 * The local lease file, $PGDATA/snowid.lease, one line written aside and
 * renamed, keeps the lease across a restart:
 *
 *	 snowid-lease-1 <node> <auto> <start id> <deadline> <port> <host>
 *		<registry> <database> <dev> <inode> <boot id> <seal>
 *
 * (deadline in microseconds since 2000-01-01, 0 once released; the
 * registry the lease is held from by its system identifier, 0 while
 * unknown, and its database in hex, "-" while unknown).  A file without
 * the last two fields (before 1.5) is read with the registry unknown: it
 * is learned when the registry next answers.  The last three (from 1.8)
 * are the facts of the start that wrote it: the data directory's device
 * and inode and the host's boot ID ("-" if unknown); every write follows
 * an answer of the registry, so they are those of the last start the
 * registry confirmed.  The seal (from 1.11) is a random word, new at each
 * write, that the boot record (boot_record.c) keeps outside the data
 * directory: an older file restored into the same directory carries an
 * older seal.  A start trusts the file to issue before the
 * registry answers only when the registry cannot be reached, and only when
 * it proves it is that server, in place, in the same boot of its host:
 * same host and port, same device, inode and boot ID, the seal the boot
 * record holds, not from a base
 * backup (backup_label present at start, without standby.signal: a clone,
 * or a restore), not as a standby.  Any other start (a copy, a restore, a
 * promoted standby, a start after a reboot, a file of 1.7) waits for the
 * registry, and takes its earlier start's lease over only once the
 * registry has answered for SNOWID_REGISTRY_REASSERT_MS: a copy's
 * original, resuming on the same lease, has re-asserted it by then.  Its
 * start ID is presented to the registry as this server's predecessor, so
 * that a restart after a crash takes its own lease over.  A start from a
 * backup clears the lease (keeping an assigned node as a wish).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>
#include <unistd.h>

#include "boot_record.h"
#include "durable.h"
#include "guc.h"
#include "layout.h"
#include "lease.h"
#include "lease_file.h"
#include "miscadmin.h"
#include "postmaster/postmaster.h"
#include "storage/fd.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#define SNOWID_LEASE_FILE "snowid.lease"
#define SNOWID_LEASE_TMP "snowid.lease.tmp"
#define SNOWID_LEASE_MAGIC "snowid-lease-1"
#define SNOWID_SEAL_LEN 16		/* hex digits of a lease file's seal */

/* facts of this postmaster's start, kept across crash re-initialisation */
static bool start_facts_known = false;
static char start_id[SNOWID_START_ID_LEN + 1];
static char start_secret[SNOWID_START_ID_LEN + 1];
static bool start_from_backup;
static bool start_as_standby;
static unsigned long long start_dev;	/* of the data directory */
static unsigned long long start_ino;
static char start_boot[SNOWID_BOOT_ID_LEN + 1];	/* "-" if unknown */

static void snowid_learn_place(unsigned long long *dev,
							   unsigned long long *ino, char *boot);

/* ---- the local lease file ---- */

typedef struct SnowidLeaseFile
{
	int			node_id;
	bool		auto_node;
	char		start_id[SNOWID_START_ID_LEN + 1];
	TimestampTz deadline;
	int			port;
	char		host[256];
	uint64		registry_sysid; /* 0 if unknown */
	char		registry_db[NAMEDATALEN];
	bool		has_facts;		/* from 1.8: the three below */
	unsigned long long dev;
	unsigned long long ino;
	char		boot[SNOWID_BOOT_ID_LEN + 1];
	bool		has_seal;		/* from 1.11 */
	char		seal[SNOWID_SEAL_LEN + 1];
} SnowidLeaseFile;

/*
 * The registry's database as one word of the file: hex, "-" if unknown.
 * out has room for 2 * NAMEDATALEN bytes.
 */
static void
snowid_lease_db_encode(const char *db, char *out)
{
	size_t		len = strnlen(db, NAMEDATALEN - 1);

	if (len == 0)
	{
		strcpy(out, "-");
		return;
	}
	out[hex_encode(db, len, out)] = '\0';
}

/* The database back from its word; false if the word is not one. */
static bool
snowid_lease_db_decode(const char *word, char *db)
{
	size_t		len = strlen(word);

	if (strcmp(word, "-") == 0)
	{
		db[0] = '\0';
		return true;
	}
	if (len == 0 || len % 2 != 0 || len > 2 * (NAMEDATALEN - 1) ||
		strspn(word, "0123456789abcdef") != len)
		return false;
	db[hex_decode(word, len, db)] = '\0';
	return strlen(db) == len / 2;
}

static bool
snowid_lease_read(SnowidLeaseFile *f)
{
	char		buf[1024];
	char		magic[32];
	char		db_word[2 * NAMEDATALEN];
	int			fd;
	int			len;
	int			fields;
	int			auto_node;
	long long	deadline;
	unsigned long long sysid = 0;

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
	fields = sscanf(buf, "%31s %d %d %32s %lld %d %255s %llu %127s %llu %llu %36s %16s",
					magic, &f->node_id, &auto_node, f->start_id, &deadline,
					&f->port, f->host, &sysid, db_word, &f->dev, &f->ino,
					f->boot, f->seal);
	if (fields == 7)
		strcpy(db_word, "-");	/* before 1.5: the registry is not known */
	/* before 1.8: no facts of the start that wrote it, nothing proven */
	f->has_facts = fields >= 12;
	/* before 1.11: no seal, so nothing to compare with the boot record */
	f->has_seal = fields == 13;
	if ((fields != 7 && fields != 9 && fields != 12 && fields != 13) ||
		strcmp(magic, SNOWID_LEASE_MAGIC) != 0 || f->node_id < -1 ||
		strspn(f->start_id, "0123456789abcdef") != SNOWID_START_ID_LEN ||
		(f->has_seal && strspn(f->seal, "0123456789abcdef") != SNOWID_SEAL_LEN) ||
		!snowid_lease_db_decode(db_word, f->registry_db))
	{
		ereport(WARNING,
				(errmsg("snowid ignores the malformed lease file \"%s\"",
						SNOWID_LEASE_FILE),
				 errdetail("This server waits for the registry before it issues IDs.")));
		return false;
	}
	f->auto_node = auto_node != 0;
	f->deadline = (TimestampTz) deadline;
	f->registry_sysid = (uint64) sysid;
	return true;
}

static void
snowid_this_host(char *host, size_t size)
{
	snowid_host_name(host, size);
	/* one word in the file */
	for (char *p = host; *p; p++)
		if (*p == ' ' || *p == '\n' || *p == '\t')
			*p = '_';
}

/*
 * The boot record's part for the lease file (boot_record.c):
 *
 *	 <seal> <pending seal or -> <node> <start id>
 *
 * the seal of the file this server last wrote, a seal being written (a
 * crash between the record and the file leaves either), and the node and
 * start the file names: the last start of this directory in this boot.
 */
typedef struct SnowidLeaseRecord
{
	char		seal[SNOWID_SEAL_LEN + 1];
	char		pending[SNOWID_SEAL_LEN + 1];
	int			node_id;
	char		start_id[SNOWID_START_ID_LEN + 1];
} SnowidLeaseRecord;

/* The record's part; false if there is none (or it does not parse). */
static bool
snowid_lease_record_read(SnowidLeaseRecord *rec)
{
	char		part[128];

	return snowid_boot_record_get(SNOWID_BOOT_PART_LEASE, part, sizeof(part)) > 0 &&
		sscanf(part, "%16s %16s %d %32s", rec->seal, rec->pending,
			   &rec->node_id, rec->start_id) == 4 &&
		strspn(rec->start_id, "0123456789abcdef") == SNOWID_START_ID_LEN;
}

static void
snowid_lease_record_write(const char *seal, const char *pending, int node_id,
						  const char *start)
{
	char		part[128];
	int			len = snprintf(part, sizeof(part), "%s %s %d %s\n",
							   seal, pending, node_id, start);

	(void) snowid_boot_record_put(SNOWID_BOOT_PART_LEASE, part, len, WARNING);
}

/*
 * A new seal for the lease file, into seal (SNOWID_SEAL_LEN + 1 bytes), and
 * the boot record told to accept it beside the seal it holds until the
 * file is written (then snowid_lease_record_write with "-").
 */
static void
snowid_lease_seal_new(char *seal, int node_id, const char *start)
{
	uint8		bytes[SNOWID_SEAL_LEN / 2];
	SnowidLeaseRecord rec;

	if (!pg_strong_random(bytes, sizeof(bytes)))
		ereport(ERROR,
				(errmsg("could not generate a random seal for snowid's lease file")));
	hex_encode((char *) bytes, sizeof(bytes), seal);
	seal[SNOWID_SEAL_LEN] = '\0';
	/*
	 * Accepted beside it: the seal the file holds now, which is the
	 * pending one while an earlier write has not been confirmed (it may
	 * have failed), else the current one.
	 */
	snowid_lease_record_write(seal,
							  !snowid_lease_record_read(&rec) ? "-" :
							  strcmp(rec.pending, "-") != 0 ? rec.pending : rec.seal,
							  node_id, start);
}

/*
 * Does the boot record know the file's seal?  NULL if so; else why not.
 */
static const char *
snowid_lease_seal_why(const SnowidLeaseFile *f)
{
	SnowidLeaseRecord rec;
	const char *no_record;

	if (!f->has_seal)
		return "its lease file was written by snowid 1.10 or older, which kept no boot record to tell it from a restored one";
	if (snowid_boot_record_dir(&no_record) == NULL)
		return "this host keeps no boot record for its data directory";
	if (!snowid_lease_record_read(&rec))
		return "the boot record of its data directory holds no lease file (it was removed, or this start is the first since the host booted)";
	if (strcmp(f->seal, rec.seal) != 0 && strcmp(f->seal, rec.pending) != 0)
		return "its lease file is older than the one this server last wrote: the data directory was restored into itself";
	/* the file's seal alone from now on (a write cut short is settled) */
	if (strcmp(rec.pending, "-") != 0)
		snowid_lease_record_write(f->seal, "-", f->node_id, f->start_id);
	return NULL;
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
	uint64		registry_sysid;
	char		registry_db[NAMEDATALEN];
	char		db_word[2 * NAMEDATALEN];
	char		seal[SNOWID_SEAL_LEN + 1];

	SpinLockAcquire(&r->mutex);
	persisted = r->persisted_deadline;
	auto_node = r->auto_node;
	registry_sysid = r->registry_sysid;
	memcpy(registry_db, r->registry_db, sizeof(registry_db));
	SpinLockRelease(&r->mutex);
	if (!force && deadline != 0 &&
		deadline - persisted < (int64) snowid_lease_s * 100000)
		return;

	snowid_this_host(host, sizeof(host));
	snowid_lease_db_encode(registry_db, db_word);
	if (start == NULL)
		start = r->start_id;
	snowid_lease_seal_new(seal, node_id, start);
	line = psprintf("%s %d %d %s " INT64_FORMAT " %d %s " UINT64_FORMAT " %s %llu %llu %s %s\n",
					SNOWID_LEASE_MAGIC, node_id, auto_node ? 1 : 0,
					start, deadline,
					PostPortNumber, host, registry_sysid, db_word,
					start_dev, start_ino, start_boot, seal);
	if (snowid_write_durably(SNOWID_LEASE_FILE, SNOWID_LEASE_TMP, line,
							 strlen(line), LOG))
	{
		snowid_lease_record_write(seal, "-", node_id, start);
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
	/* the secret: the registry keeps only its SHA-256 */
	if (!pg_strong_random(bytes, sizeof(bytes)))
		ereport(FATAL,
				(errmsg("could not generate a random secret for snowid's node lease")));
	hex_encode((char *) bytes, sizeof(bytes), start_secret);
	start_secret[SNOWID_START_ID_LEN] = '\0';
	start_as_standby = access("standby.signal", F_OK) == 0;
	start_from_backup = !start_as_standby && access("backup_label", F_OK) == 0;
	snowid_learn_place(&start_dev, &start_ino, start_boot);
	start_facts_known = true;
}

/*
 * Where this server runs: its data directory's device and inode, and the
 * kernel's boot ID ("-" where there is none to read: no start then proves
 * it is in the same boot).
 */
static void
snowid_learn_place(unsigned long long *dev, unsigned long long *ino,
				   char *boot)
{
	struct stat st;
	FILE	   *f;

	*dev = 0;
	*ino = 0;
	if (stat(DataDir, &st) == 0)
	{
		*dev = (unsigned long long) st.st_dev;
		*ino = (unsigned long long) st.st_ino;
	}
	strcpy(boot, "-");
	f = AllocateFile("/proc/sys/kernel/random/boot_id", "r");
	if (f != NULL)
	{
		char		line[64];

		if (fgets(line, sizeof(line), f) != NULL)
		{
			size_t		len = strspn(line, "0123456789abcdef-");

			if (len == SNOWID_BOOT_ID_LEN)
			{
				memcpy(boot, line, len);
				boot[len] = '\0';
			}
		}
		FreeFile(f);
	}
}

/*
 * Why this start cannot prove it is the server that wrote the lease file
 * f, in words; NULL if it can.
 */
static const char *
snowid_unproven_why(const SnowidLeaseFile *f, bool moved)
{
	if (start_from_backup)
		return "it starts from a base backup (a clone or a restore)";
	if (start_as_standby)
		return "it started as a standby";
	if (moved)
		return "it runs on another host or port than its lease file names";
	if (!f->has_facts)
		return "its lease file was written by snowid 1.7 or older, which did not record where the server ran";
	if (f->dev != start_dev || f->ino != start_ino || start_dev == 0)
		return "its data directory is not the one the registry last confirmed the lease in (a copy or a restore)";
	if (strcmp(start_boot, "-") == 0)
		return "the host has no boot ID to compare (/proc/sys/kernel/random/boot_id)";
	if (strcmp(f->boot, start_boot) != 0)
		return "the host has booted since the registry last confirmed the lease (a reboot, or a copy of a whole machine)";
	return snowid_lease_seal_why(f);
}

/*
 * A lease file older than the boot record's (restored into its directory):
 * true, and f made to name the node and start the record names, the last
 * ones of this directory, which the registry knows as its holder (a node
 * of the registry's choosing is asked for again; a configured one stays).
 * This start still cannot prove it is the server in place: it waits for
 * the registry, then takes its own lease over as a restart after a crash
 * does, continuing above the boot record's high-water bound.
 */
static bool
snowid_lease_restored(SnowidLeaseFile *f)
{
	SnowidLeaseRecord rec;

	if (!f->has_seal || !snowid_lease_record_read(&rec) ||
		strcmp(f->seal, rec.seal) == 0 || strcmp(f->seal, rec.pending) == 0)
		return false;
	if (f->auto_node && snowid_node_id < 0 && rec.node_id >= 0)
		f->node_id = rec.node_id;
	if (rec.node_id == f->node_id)
		memcpy(f->start_id, rec.start_id, sizeof(f->start_id));
	return true;
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
	const char *why = NULL;
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
	memcpy(r->secret, start_secret, sizeof(r->secret));
	r->from_backup = start_from_backup;
	r->started_as_standby = start_as_standby;

	have_file = snowid_lease_read(&f);
	snowid_this_host(host, sizeof(host));
	if (have_file && snowid_lease_restored(&f))
		ereport(LOG,
				(errmsg("snowid's lease file is older than the one this server last wrote, in this boot of its host"),
				 errdetail("The data directory was restored into itself; this server waits for the registry, and asks it for node %d as the successor of its last start.",
						   f.node_id)));
	r->moved = have_file &&
		(f.port != PostPortNumber || strcmp(f.host, host) != 0);
	same_home = have_file && !start_from_backup && !r->moved;
	if (have_file)
		why = snowid_unproven_why(&f, r->moved);
	r->proven = why == NULL;

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
		r->registry_sysid = f.registry_sysid;
		memcpy(r->registry_db, f.registry_db, sizeof(r->registry_db));
		if (r->proven && f.deadline > GetCurrentTimestamp())
			r->fallback_deadline = f.deadline;
	}

	if (have_file && why != NULL && f.node_id == r->node_id &&
		r->node_id >= 0 && f.deadline > GetCurrentTimestamp())
	{
		/* a lease this start would resume, could it prove it is its own */
		r->unconfirmed = true;
		strlcpy(r->unproven_why, why, sizeof(r->unproven_why));
		ereport(LOG,
				(errmsg("snowid issues nothing under the lease of node %d until the registry confirms it",
						r->node_id),
				 errdetail("This start cannot prove it is the server that holds the lease: %s.",
						   why)));
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
