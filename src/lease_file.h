/*-------------------------------------------------------------------------
 *
 * lease_file.h
 *	  The local lease file, $PGDATA/snowid.lease, and the facts of this
 *	  start (lease_file.c): what a server knows of its lease before the
 *	  registry answers, for snowid.c (at each shared-memory
 *	  initialisation, in the postmaster) and the registry worker's
 *	  registry_worker.c and registry_claim.c.  Locks: it writes
 *	  persisted_deadline of lease.h's SnowidRegistryShared under its
 *	  spinlock; a caller holds none.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_LEASE_FILE_H
#define SNOWID_LEASE_FILE_H

#include "datatype/timestamp.h"

extern void snowid_registry_shmem_startup(void);
extern void snowid_lease_persist(int node_id, TimestampTz deadline,
								 bool force, const char *start);

#endif							/* SNOWID_LEASE_FILE_H */
