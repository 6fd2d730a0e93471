/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  The differences between the PostgreSQL majors snowid builds against
 *	  (15, 16, 17, 18, 19), each behind a named shim.
 *
 * Every PG_VERSION_NUM test of the extension is here and nowhere else; the
 * code calls the shims.  Nothing but shims belongs in this file.  The custom
 * WAL record, the high-water file format and the SQL scripts are the same
 * on every major.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_COMPAT_H
#define SNOWID_COMPAT_H

#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/datetime.h"
#include "utils/guc_tables.h"
#include "utils/rel.h"
#include "utils/relcache.h"

/*
 * The varlena macros (VARDATA_ANY, VARSIZE_ANY_EXHDR, ...) moved from
 * postgres.h to varatt.h in 16.
 */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

/*
 * A function that never returns, marked before its declaration: 18 has
 * pg_noreturn (C11 _Noreturn) in front and dropped the trailing
 * pg_attribute_noreturn(), which GCC-style compilers also accept in front.
 */
#if PG_VERSION_NUM >= 180000
#define snowid_noreturn pg_noreturn
#else
#define snowid_noreturn pg_attribute_noreturn()
#endif

/*
 * DecodeDateTime: from 16 it takes a DateTimeErrorExtra for the details of
 * an error it reports through its return value.  The shim leaves those out
 * (the caller words its own error).
 */
static inline int
snowid_decode_datetime(char **field, int *ftype, int nf, int *dtype,
					   struct pg_tm *tm, fsec_t *fsec, int *tzp)
{
#if PG_VERSION_NUM >= 160000
	DateTimeErrorExtra extra;

	return DecodeDateTime(field, ftype, nf, dtype, tm, fsec, tzp, &extra);
#else
	return DecodeDateTime(field, ftype, nf, dtype, tm, fsec, tzp);
#endif
}

/*
 * The GUC record of a parameter by name (case-insensitive), or NULL.  16
 * keeps the records in a hash table and exports find_option(); 15 has only
 * the array of get_guc_variables().
 */
static inline struct config_generic *
snowid_find_guc(const char *name)
{
#if PG_VERSION_NUM >= 160000
	return find_option(name, false, true, ERROR);
#else
	struct config_generic **vars = get_guc_variables();
	int			n = GetNumConfigOptions();

	for (int i = 0; i < n; i++)
		if (pg_strcasecmp(vars[i]->name, name) == 0)
			return vars[i];
	return NULL;
#endif
}

/*
 * Memory for the "extra" a GUC check hook returns: the GUC machinery frees
 * it with free() up to 15, and from 16 with guc_free(), which takes only
 * what guc_malloc() gave.  NULL when out of memory.
 */
static inline void *
snowid_guc_extra_alloc(size_t size)
{
#if PG_VERSION_NUM >= 160000
	return guc_malloc(LOG, size);
#else
	return malloc(size);
#endif
}

/*
 * A new value a GUC check hook puts in place of *newval, and the freeing of
 * the old one: malloc() and free() up to 15, guc_strdup() and guc_free()
 * from 16.  NULL when out of memory.
 */
static inline char *
snowid_guc_strdup(const char *text)
{
#if PG_VERSION_NUM >= 160000
	return guc_strdup(LOG, text);
#else
	return strdup(text);
#endif
}

static inline void
snowid_guc_free(void *ptr)
{
#if PG_VERSION_NUM >= 160000
	guc_free(ptr);
#else
	free(ptr);
#endif
}

/*
 * This process's number among the PGPROCs (-1 without one): 17 replaced
 * PGPROC.pgprocno by MyProcNumber.
 */
static inline int
snowid_my_proc_number(void)
{
#if PG_VERSION_NUM >= 170000
	return MyProc != NULL ? (int) MyProcNumber : -1;
#else
	return MyProc != NULL ? MyProc->pgprocno : -1;
#endif
}

/*
 * Does role own the current database (superusers do, as for every object)?
 * 16 folded the pg_*_ownercheck functions into object_ownercheck().
 */
static inline bool
snowid_owns_database(Oid role)
{
#if PG_VERSION_NUM >= 160000
	return object_ownercheck(DatabaseRelationId, MyDatabaseId, role);
#else
	return pg_database_ownercheck(MyDatabaseId, role);
#endif
}

/* Does role own relation relid (superusers do)?  As above, for relations. */
static inline bool
snowid_owns_relation(Oid relid, Oid role)
{
#if PG_VERSION_NUM >= 160000
	return object_ownercheck(RelationRelationId, relid, role);
#else
	return pg_class_ownercheck(relid, role);
#endif
}

/*
 * The primary key index of a relation.  18 added deferrable_ok; ours is not
 * deferrable, so false asks for what older majors return.
 */
static inline Oid
snowid_primary_key_index(Relation rel)
{
#if PG_VERSION_NUM >= 180000
	return RelationGetPrimaryKeyIndex(rel, false);
#else
	return RelationGetPrimaryKeyIndex(rel);
#endif
}

/*
 * Try to lock a tuple without waiting.  18 added logLockFailure (for
 * log_lock_failure); a failure here is expected and reported by the caller.
 */
static inline bool
snowid_conditional_lock_tuple(Relation rel, ItemPointer tid, LOCKMODE mode)
{
#if PG_VERSION_NUM >= 180000
	return ConditionalLockTuple(rel, tid, mode, false);
#else
	return ConditionalLockTuple(rel, tid, mode);
#endif
}

/*
 * Whether an interval is finite: 17 added the infinite intervals
 * ('infinity', '-infinity'); before, every interval is.
 */
static inline bool
snowid_interval_is_finite(const Interval *span)
{
#if PG_VERSION_NUM >= 170000
	return !INTERVAL_NOT_FINITE(span);
#else
	return true;
#endif
}

#endif							/* SNOWID_COMPAT_H */
