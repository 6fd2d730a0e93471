/*-------------------------------------------------------------------------
 *
 * registry.h
 *	  The member side of the registry: node leases held by a background
 *	  worker, published in shared memory for the generator.
 *
 * lease.h has the shared lease state and the gate; registry_worker.c owns
 * the background worker and its libpq connection.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_REGISTRY_H
#define SNOWID_REGISTRY_H

#include "datatype/timestamp.h"
#include "generator.h"
#include "lease.h"


/* until snowid.c includes it: snowid_registry_worker_register */
#include "registry_worker.h"

#endif							/* SNOWID_REGISTRY_H */
