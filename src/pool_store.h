/*-------------------------------------------------------------------------
 *
 * pool_store.h
 *	  The pools' shared holdings and how they are persisted (pool_store.c):
 *	  snowid_pool_shared, set up at start and loaded from snowid.pools,
 *	  the persist (WAL record, then the file) every change of a pool's
 *	  state goes through, and the redo and desc of that record for rmgr.c.
 *	  Locks (their order is in pool.h): a persist runs under the slot's
 *	  lock, which its caller holds, and takes file_lock itself; a call
 *	  that wants a lock held says so beside it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_POOL_STORE_H
#define SNOWID_POOL_STORE_H

#include "access/xlogreader.h"
#include "lib/stringinfo.h"
#include "pool.h"

extern SnowidPoolShared *snowid_pool_shared;

/* Setup (the shmem hooks call these) */
extern Size snowid_pool_shmem_size(void);
extern void snowid_pool_shmem_request(void);
extern void snowid_pool_shmem_startup(void);	/* loads snowid.pools */

/*
 * For the other pool files.  settle: drop used-up ranges and what lies
 * below the floor; wants: the slot wants the worker to fetch a range (slot
 * lock held); persist: WAL, flushed (and acknowledged by synchronous
 * standbys), then the file, for slot idx whose lock the caller holds -- the
 * _releasing form releases that lock on an error, for the worker;
 * slot_from_state: a free slot for a state, table_lock held.
 */
extern char *snowid_pool_facts_why(const char *name, int64 start);
extern void snowid_pool_release_slot(int idx);	/* table_lock, slot lock */
extern void snowid_pool_wake_worker(void);
extern int64 snowid_pool_in_hand_locked(SnowidPoolSlot *slot);	/* lock held */
extern void snowid_state_settle(SnowidPoolState *st, uint64 *next_off);
extern bool snowid_pool_wants(SnowidPoolSlot *slot);
extern int	snowid_pool_slots(void);	/* highest slot index in use + 1 */
extern SnowidPoolShared *snowid_pool_require_shared(void);
extern int	snowid_pool_slot_from_state(const SnowidPoolState *st);
extern void snowid_pool_persist(int idx, SnowidPoolState *st);
extern void snowid_pool_persist_releasing(int idx, SnowidPoolState *st);

/* Boot marks (the boot record's part for the pools) */
extern void snowid_pool_floor_from_mark(SnowidPoolState *st, bool lock);
extern int64 snowid_pool_boot_mark(const char *name);
extern int	snowid_pool_marks_unheld(SnowidPoolMark *out, int max);

/* The WAL record XLOG_SNOWID_POOL of snowid's rmgr */
extern void snowid_pool_redo(XLogReaderState *record);
extern void snowid_pool_desc(StringInfo buf, XLogReaderState *record);

#endif							/* SNOWID_POOL_STORE_H */
