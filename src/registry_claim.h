/*-------------------------------------------------------------------------
 *
 * registry_claim.h
 *	  The registry worker's claim of the node lease and the publishing of
 *	  its answers (registry_claim.c), for registry_worker.c alone.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_REGISTRY_CLAIM_H
#define SNOWID_REGISTRY_CLAIM_H

/*
 * check_deadline: shut the gate once the lease has run out, warn in its
 * last quarter; renamed: snowid.registry was set (first: at the worker's
 * start, or where it was empty) or edited; identify: the registry
 * connected to, by what it is (a different one drops the lease); claim:
 * one claim, its answer published (false with *error if the registry
 * could not answer); publish_unreachable: the registry could not be
 * reached or failed, go on under the lease.
 */
extern void snowid_check_deadline(void);
extern void snowid_registry_renamed(bool first);
extern void snowid_registry_identify(void);
extern bool snowid_claim(char **error);
extern uint64 snowid_registry_report_bound(void);
extern void snowid_publish_unreachable(const char *error);

#endif							/* SNOWID_REGISTRY_CLAIM_H */
