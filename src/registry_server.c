/*-------------------------------------------------------------------------
 *
 * registry_server.c
 *	  The registry's own process: members' calls on the registry are
 *	  applied by a background worker of the registry server, in
 *	  transactions of its own, never in the caller's.
 *
 * A member calls a registry function (snowid_pool_grant, ...) over libpq.
 * That function is snowid_registry_forward(): it writes the call (the
 * function and its arguments as text) into a request slot in shared
 * memory, with the caller's session role taken from the session, wakes
 * the registry server of its database (starting it if none runs) and
 * waits for the answer.  The server takes every queued request of its
 * database, applies each in a subtransaction of one transaction of its
 * own (one commit for the batch) by calling the function's
 * implementation, <name>_serve, with session_user the caller's role, and
 * answers each caller once the batch has committed; the caller makes sure
 * the commit's WAL is flushed before it returns the answer.  The caller's
 * transaction holds no lock of the registry's at any time: whatever it
 * does (stays open, is prepared, runs a long expression) delays only its
 * own answer.
 *
 * server_shared->mutex (a spinlock) protects the process entries and every
 * slot's state; a slot's other fields belong to its caller until it is
 * queued, to the process applying it until it is answered, then to the
 * caller again.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "access/htup_details.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "catalog/dependency.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "replication/syncrep.h"
#include "replication/walsender.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "guc.h"
#include "registry_server.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "ticket_catalog.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#define SNOWID_SERVER_SLOTS 128
#define SNOWID_SERVER_ENTRIES 64	/* processes, all registry databases */
#define SNOWID_SERVER_BATCH 32	/* calls one transaction applies at most */
#define SNOWID_SERVER_IDLE_MS 2000	/* a process without calls this long leaves */
#define SNOWID_SERVER_MSG 32768
#define SNOWID_SERVER_WAIT_MS 30000

typedef enum
{
	SLOT_FREE = 0,
	SLOT_RESERVED,				/* a caller is writing its request */
	SLOT_QUEUED,
	SLOT_RUNNING,
	SLOT_DONE,
	SLOT_ABANDONED				/* running, its caller gone: freed when done */
} SlotState;

typedef struct ServerSlot
{
	SlotState	state;
	Oid			dboid;
	Oid			roleid;			/* the caller's session role */
	Oid			fnoid;			/* the function the caller called */
	PGPROC	   *caller;
	pid_t		caller_pid;		/* the caller's pid (its PGPROC may be reused) */
	int			route;			/* the index of the process that applies it */
	pid_t		runner;			/* the server process applying it */
	bool		failed;
	bool		stopped;		/* failed: its server process stopped first */
	int			sqlerrcode;
	XLogRecPtr	flush_to;		/* the answer holds once WAL is flushed here */
	int			len;
	char		buf[SNOWID_SERVER_MSG];
} ServerSlot;

typedef struct ServerEntry
{
	Oid			dboid;			/* InvalidOid: free */
	int			idx;			/* which of its database's processes */
	pid_t		pid;			/* 0 while starting */
	bool		failed;			/* its start found no worker slot */
	PGPROC	   *proc;
	TimestampTz started;
} ServerEntry;

typedef struct ServerShared
{
	slock_t		mutex;
	ServerEntry servers[SNOWID_SERVER_ENTRIES];
	ServerSlot	slots[SNOWID_SERVER_SLOTS];
} ServerShared;

static ServerShared *server_shared = NULL;

/*
 * The functions this process has applied: each one's implementation
 * checked once, its plan kept; forgotten when pg_proc changes.
 */
#define SNOWID_SERVER_CALLS 32
typedef struct ServerCall
{
	Oid			fnoid;			/* the function the member called */
	int			nargs;
	Oid			argtypes[FUNC_MAX_ARGS];
	Oid			input[FUNC_MAX_ARGS];
	Oid			ioparam[FUNC_MAX_ARGS];
	SPIPlanPtr	plan;			/* SELECT * FROM <name>_serve($1, ...) */
} ServerCall;
static ServerCall calls[SNOWID_SERVER_CALLS];
static int	ncalls = 0;
static bool calls_stale = false;
static int	run_depth = 0;		/* server_run()s under way (one calls another) */

static void
server_calls_stale(Datum arg, int cacheid, uint32 hashvalue)
{
	calls_stale = true;
}
static bool am_server = false;	/* this process is a registry server */

Size
snowid_server_shmem_size(void)
{
	return MAXALIGN(sizeof(ServerShared));
}

void
snowid_server_shmem_startup(void)
{
	bool		found;

	server_shared = ShmemInitStruct("snowid registry server",
									sizeof(ServerShared), &found);
	if (!found)
	{
		memset(server_shared, 0, sizeof(ServerShared));
		SpinLockInit(&server_shared->mutex);
	}
}

/* ---- the message: entries of [isnull byte][int32 length][bytes] ---- */

static void
msg_put(ServerSlot *slot, const char *s)
{
	int32		n = s ? (int32) strlen(s) : 0;

	if (slot->len + 1 + (int) sizeof(int32) + n > SNOWID_SERVER_MSG)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the registry's answer is longer than %d bytes",
						SNOWID_SERVER_MSG)));
	slot->buf[slot->len++] = s ? 0 : 1;
	memcpy(slot->buf + slot->len, &n, sizeof(int32));
	slot->len += sizeof(int32);
	if (n > 0)
		memcpy(slot->buf + slot->len, s, n);
	slot->len += n;
}

/*
 * A text of an error into the slot, never failing: cut (on a character
 * boundary) to a third of the message space, so that message, detail and
 * hint all fit.
 */
static void
msg_put_cut(ServerSlot *slot, const char *s)
{
	int			room = SNOWID_SERVER_MSG / 3 - 1 - (int) sizeof(int32);
	int32		n;

	if (s == NULL)
	{
		n = 0;
		slot->buf[slot->len++] = 1;
		memcpy(slot->buf + slot->len, &n, sizeof(int32));
		slot->len += sizeof(int32);
		return;
	}
	n = strlen(s);
	if (n > room)
		n = pg_mbcliplen(s, n, room);
	slot->buf[slot->len++] = 0;
	memcpy(slot->buf + slot->len, &n, sizeof(int32));
	slot->len += sizeof(int32);
	memcpy(slot->buf + slot->len, s, n);
	slot->len += n;
}

/* A slot's answer: the error, its three texts cut to fit (never fails). */
static void
slot_fail(ServerSlot *slot, int sqlerrcode, const char *message,
		  const char *detail, const char *hint)
{
	slot->failed = true;
	slot->sqlerrcode = sqlerrcode;
	slot->len = 0;
	msg_put_cut(slot, message);
	msg_put_cut(slot, detail);
	msg_put_cut(slot, hint);
}

/* The next entry from *pos: a palloc'd string, or NULL for a null. */
static char *
msg_get(const char *buf, int len, int *pos)
{
	bool		isnull;
	int32		n;
	char	   *s;

	if (*pos + 1 + (int) sizeof(int32) > len)
		elog(ERROR, "snowid: truncated registry message");
	isnull = buf[(*pos)++] != 0;
	memcpy(&n, buf + *pos, sizeof(int32));
	*pos += sizeof(int32);
	if (n < 0 || n > len - *pos)
		elog(ERROR, "snowid: truncated registry message");
	if (isnull)
		return NULL;
	s = palloc(n + 1);
	memcpy(s, buf + *pos, n);
	s[n] = '\0';
	*pos += n;
	return s;
}

/* ---- the caller's side ---- */

static bool
server_start(int entry, Oid dboid, bool must, const char *counter)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS |
		BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	strlcpy(worker.bgw_library_name, "snowid", BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, "snowid_server_main", BGW_MAXLEN);
	snprintf(worker.bgw_name, BGW_MAXLEN, "snowid registry server");
	strlcpy(worker.bgw_type, "snowid registry server", BGW_MAXLEN);
	worker.bgw_main_arg = Int32GetDatum(entry);
	worker.bgw_notify_pid = 0;
	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
	{
		/* kept, failed: not started again for 10 s (server_for) */
		SpinLockAcquire(&server_shared->mutex);
		if (server_shared->servers[entry].pid == 0)
			server_shared->servers[entry].failed = true;
		SpinLockRelease(&server_shared->mutex);
		if (counter != NULL)
			ereport(must ? ERROR : LOG,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("could not reserve values for counter %s: no background worker slot free for a server process of database \"%s\"",
							counter, get_database_name(dboid)),
					 errdetail("A fast counter's blocks are reserved by a server process of snowid in its database."),
					 errhint("Raise max_worker_processes: each database with fast counters needs snowid.registry_processes of them.")));
		else
			ereport(must ? ERROR : LOG,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("no background worker slot free for a registry server process of database \"%s\"",
							get_database_name(dboid)),
					 errhint("Raise max_worker_processes on the registry's server: each registry database needs snowid.registry_processes of them.")));
		return false;
	}
	return true;
}

/*
 * Make sure snowid.registry_processes server processes of this database
 * run or are starting; procs[k] the PGPROC of process k if it runs (else
 * NULL), the number of processes returned.  counter: the counter whose
 * values the call reserves (for messages), or NULL for a registry call.
 */
static int
server_for(Oid dboid, PGPROC **procs, uint64 *present, const char *counter)
{
	int			want = Min(Max(snowid_registry_processes, 1), SNOWID_SERVER_ENTRIES);
	int			i;
	int			k;
	int			n = 0;
	int			start[SNOWID_SERVER_ENTRIES];
	int			nstart = 0;
	bool		full = false;
	TimestampTz now = GetCurrentTimestamp();

	*present = 0;
	SpinLockAcquire(&server_shared->mutex);
	for (k = 0; k < want; k++)
	{
		int			free_i = -1;

		procs[k] = NULL;

		for (i = 0; i < SNOWID_SERVER_ENTRIES; i++)
		{
			ServerEntry *e = &server_shared->servers[i];

			if (e->dboid == dboid && e->idx == k)
				break;
			if (e->dboid == InvalidOid && free_i < 0)
				free_i = i;
		}
		if (i < SNOWID_SERVER_ENTRIES)
		{
			ServerEntry *e = &server_shared->servers[i];

			if (e->proc != NULL)
			{
				procs[k] = e->proc;
				n++;
				*present |= UINT64CONST(1) << k;
			}
			/* a start that failed or never came up: again after 10 s */
			else if (TimestampDifferenceExceeds(e->started, now, 10000))
			{
				e->started = now;
				e->failed = false;
				start[nstart++] = i;
			}
			else if (!e->failed)
				*present |= UINT64CONST(1) << k;	/* starting */
			continue;
		}
		if (free_i < 0)
		{
			full = true;
			for (; k < want; k++)
				procs[k] = NULL;
			break;
		}
		server_shared->servers[free_i].dboid = dboid;
		server_shared->servers[free_i].idx = k;
		server_shared->servers[free_i].pid = 0;
		server_shared->servers[free_i].proc = NULL;
		server_shared->servers[free_i].started = now;
		server_shared->servers[free_i].failed = false;
		start[nstart++] = free_i;
	}
	SpinLockRelease(&server_shared->mutex);
	{
		int			started = 0;

		for (i = 0; i < nstart; i++)
		{
			/* the last that fails ends the call only if none other serves */
			if (server_start(start[i], dboid, n + started == 0 && i == nstart - 1,
							 counter))
			{
				started++;
				*present |= UINT64CONST(1) << server_shared->servers[start[i]].idx;
			}
		}
		nstart = started;
	}
	if (full && *present == 0 && counter != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("could not reserve values for counter %s: too many server processes of snowid on this server",
						counter),
				 errdetail("One server runs at most %d of them, for all its databases with fast counters or a registry.",
						   SNOWID_SERVER_ENTRIES),
				 errhint("Lower snowid.registry_processes.")));
	if (full && *present == 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many registry server processes on this server"),
				 errdetail("One server runs at most %d of them, for all its registry databases.",
						   SNOWID_SERVER_ENTRIES),
				 errhint("Lower snowid.registry_processes.")));
	if (*present == 0 && counter != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("could not reserve values for counter %s: no server process of database \"%s\" runs or can start",
						counter, get_database_name(dboid)),
				 errdetail("Its last start found no free background worker slot; a fast counter's blocks are reserved by a server process of snowid in its database."),
				 errhint("Raise max_worker_processes: each database with fast counters needs snowid.registry_processes of them.")));
	if (*present == 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("no registry server process of database \"%s\" runs or can start",
						get_database_name(dboid)),
				 errdetail("Its last start found no free background worker slot."),
				 errhint("Raise max_worker_processes on the registry's server: each registry database needs snowid.registry_processes of them.")));
	return want;
}

static void slot_release(ServerSlot *slot);

/* A caller's slot, released however its wait ends (an error, or a FATAL). */
static void
forward_cleanup(int code, Datum arg)
{
	slot_release((ServerSlot *) DatumGetPointer(arg));
}

static void
slot_release(ServerSlot *slot)
{
	SpinLockAcquire(&server_shared->mutex);
	if (slot->state == SLOT_RUNNING)
		slot->state = SLOT_ABANDONED;
	else
		slot->state = SLOT_FREE;
	SpinLockRelease(&server_shared->mutex);
}

/*
 * The call's arguments, as text, into the slot's message, written in the
 * styles the server process reads them in (ISO dates, postgres intervals,
 * exact floats), whatever the caller's session has set.
 */
static void
encode_args(FunctionCallInfo fcinfo, Oid fnoid, ServerSlot *slot)
{
	Oid		   *argtypes;
	int			fnargs;
	int			i;
	int			nest = NewGUCNestLevel();

	(void) set_config_option("DateStyle", "ISO, MDY", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("IntervalStyle", "postgres", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("extra_float_digits", "3", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) get_func_signature(fnoid, &argtypes, &fnargs);
	slot->len = 0;
	for (i = 0; i < PG_NARGS(); i++)
	{
		char	   *v = NULL;

		if (!PG_ARGISNULL(i))
		{
			Oid			out;
			bool		varlena;

			getTypeOutputInfo(argtypes[i], &out, &varlena);
			v = OidOutputFunctionCall(out, PG_GETARG_DATUM(i));
		}
		/* no member sends a call this long: refused as junk, as any */
		if (slot->len + 1 + (int) sizeof(int32) + (v ? (int) strlen(v) : 0) > SNOWID_SERVER_MSG)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the arguments of a call on the registry are longer than %d bytes",
							SNOWID_SERVER_MSG),
					 errdetail("No member sends such a call; nothing was done.")));
		msg_put(slot, v);
	}
	AtEOXact_GUC(true, nest);
}

static void server_run(Oid fnoid, const char *req, int req_len, ServerSlot *out);

/*
 * Wake the process a queued call is routed to, or every one if any may
 * take it (a woken process with nothing of its own to do goes back to
 * sleep, at the cost of a wake-up).
 */
static void
forward_wake(PGPROC **procs, int nprocs, int route)
{
	int			i;

	if (route >= 0 && route < nprocs && procs[route] != NULL)
	{
		SetLatch(&procs[route]->procLatch);
		return;
	}
	for (i = 0; i < nprocs; i++)
		if (procs[i] != NULL)
			SetLatch(&procs[i]->procLatch);
}

/* The rows of an answer as the function's result. */
static Datum
forward_answer(FunctionCallInfo fcinfo, const char *answer, int answer_len)
{
	{
		ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
		TupleDesc	tupdesc;
		TypeFuncClass cls;
		int			pos = 0;
		int			ncols;
		char	   *ncols_s;
		Oid			rettype;

		ncols_s = msg_get(answer, answer_len, &pos);
		ncols = atoi(ncols_s);
		cls = get_call_result_type(fcinfo, &rettype, &tupdesc);
		if (fcinfo->flinfo->fn_retset)
		{
			Tuplestorestate *ts;
			AttInMetadata *meta;
			MemoryContext per_query = rsinfo->econtext->ecxt_per_query_memory;
			MemoryContext old;

			if (cls != TYPEFUNC_COMPOSITE || tupdesc->natts != ncols)
				elog(ERROR, "snowid: registry answer does not match the function's result");
			old = MemoryContextSwitchTo(per_query);
			tupdesc = CreateTupleDescCopy(tupdesc);
			ts = tuplestore_begin_heap(true, false, work_mem);
			MemoryContextSwitchTo(old);
			meta = TupleDescGetAttInMetadata(tupdesc);
			while (pos < answer_len)
			{
				char	  **vals = palloc(sizeof(char *) * ncols);
				int			c;

				for (c = 0; c < ncols; c++)
					vals[c] = msg_get(answer, answer_len, &pos);
				tuplestore_puttuple(ts, BuildTupleFromCStrings(meta, vals));
			}
			rsinfo->returnMode = SFRM_Materialize;
			rsinfo->setResult = ts;
			rsinfo->setDesc = tupdesc;
			return (Datum) 0;
		}
		else
		{
			char	   *v;

			if (pos >= answer_len)
				PG_RETURN_NULL();
			if (cls == TYPEFUNC_COMPOSITE)
			{
				char	  **vals;
				int			c;

				if (tupdesc->natts != ncols)
					elog(ERROR, "snowid: registry answer does not match the function's result");
				vals = palloc(sizeof(char *) * ncols);

				for (c = 0; c < ncols; c++)
					vals[c] = msg_get(answer, answer_len, &pos);
				return HeapTupleGetDatum(BuildTupleFromCStrings(TupleDescGetAttInMetadata(tupdesc), vals));
			}
			v = msg_get(answer, answer_len, &pos);
			if (v == NULL)
				PG_RETURN_NULL();
			{
				Oid			in;
				Oid			ioparam;

				getTypeInputInfo(rettype, &in, &ioparam);
				return OidInputFunctionCall(in, v, ioparam, -1);
			}
		}
	}
}


/*
 * Which of its database's server processes applies a call: every call on
 * pools the first (grants, reports and returns of one pool lock its row,
 * and two processes would find it locked by each other), a call on a
 * named node the one of that node (its row likewise), any other the first.
 */
static int
forward_route(FunctionCallInfo fcinfo, Oid fnoid)
{
	int			want = Min(Max(snowid_registry_processes, 1), SNOWID_SERVER_ENTRIES);
	char	   *name = get_func_name(fnoid);
	Oid			argtype = get_fn_expr_argtype(fcinfo->flinfo, 0);

	if (name == NULL || strncmp(name, "snowid_pool_", 12) == 0)
		return 0;
	if (PG_NARGS() > 0 && !PG_ARGISNULL(0) && argtype == INT4OID)
	{
		int32		node = PG_GETARG_INT32(0);

		return (int) ((uint32) node % (uint32) want);
	}
	return 0;
}

/*
 * The counter whose values a call of fnoid reserves
 * (snowid_counter_reserve, its first argument), qualified for messages;
 * NULL for a registry call.
 */
static pg_noinline const char *
forward_counter(FunctionCallInfo fcinfo, Oid fnoid)
{
	char	   *name = get_func_name(fnoid);

	if (name == NULL || strcmp(name, "snowid_counter_reserve") != 0 ||
		PG_NARGS() < 1 || PG_ARGISNULL(0))
		return NULL;
	return snowid_ticket_name(PG_GETARG_OID(0));
}

PG_FUNCTION_INFO_V1(snowid_registry_forward);

/*
 * Every registry function a member calls: hands the call to the registry
 * server and returns its answer (rows, or the error it raised).
 */
Datum
snowid_registry_forward(PG_FUNCTION_ARGS)
{
	Oid			fnoid = fcinfo->flinfo->fn_oid;
	ServerSlot *volatile slot = NULL;
	int			i;
	char	   *answer;
	int			answer_len;
	bool		failed;
	bool		stopped;
	int			sqlerrcode;
	XLogRecPtr	flush_to;
	TimestampTz give_up;
	const char *counter;

	if (server_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowid must be loaded via shared_preload_libraries"),
				 errdetail("On a registry's server, snowid's background worker applies the members' calls."),
				 errhint("Add snowid to shared_preload_libraries on the registry's server and restart it.")));

	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("the registry is a standby: it applies no call until it is promoted"),
				 errhint("Name the registry's primary in snowid.registry.")));

	/*
	 * Called by a registry function the server is applying (one function
	 * of the registry's calling another): run it here, in the same
	 * transaction.
	 */
	if (am_server)
	{
		ServerSlot *local = palloc(sizeof(ServerSlot));
		char	   *req;
		int			req_len;

		encode_args(fcinfo, fnoid, local);
		req_len = local->len;
		req = palloc(req_len + 1);
		memcpy(req, local->buf, req_len);
		server_run(fnoid, req, req_len, local);
		return forward_answer(fcinfo, local->buf, local->len);
	}

	counter = forward_counter(fcinfo, fnoid);

	/* a slot */
	SpinLockAcquire(&server_shared->mutex);
	for (i = 0; i < SNOWID_SERVER_SLOTS; i++)
		if (server_shared->slots[i].state == SLOT_FREE)
		{
			slot = &server_shared->slots[i];
			slot->state = SLOT_RESERVED;
			break;
		}
	SpinLockRelease(&server_shared->mutex);
	if (slot == NULL && counter != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("could not reserve values for counter %s: snowid's server processes are busy",
						counter),
				 errdetail("All %d request slots of this server are in use.",
						   SNOWID_SERVER_SLOTS),
				 errhint("Ask again.")));
	if (slot == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("the registry is busy"),
				 errdetail("All %d request slots of its server are in use.",
						   SNOWID_SERVER_SLOTS),
				 errhint("Ask again.")));

	PG_ENSURE_ERROR_CLEANUP(forward_cleanup, PointerGetDatum(slot));
	{
		PGPROC	   *servers[SNOWID_SERVER_ENTRIES];
		int			nservers;
		uint64		present;
		int			route = forward_route(fcinfo, fnoid);

		slot->dboid = MyDatabaseId;
		slot->roleid = GetSessionUserId();
		slot->fnoid = fnoid;
		slot->caller = MyProc;
		slot->caller_pid = MyProcPid;
		slot->failed = false;
		slot->stopped = false;
		slot->sqlerrcode = 0;
		slot->flush_to = InvalidXLogRecPtr;
		encode_args(fcinfo, fnoid, slot);
		nservers = server_for(MyDatabaseId, servers, &present, counter);
		SpinLockAcquire(&server_shared->mutex);
		/* to the process of its route, if that one runs or starts */
		slot->route = (present & (UINT64CONST(1) << route)) ? route : -1;
		slot->state = SLOT_QUEUED;
		route = slot->route;
		SpinLockRelease(&server_shared->mutex);
		forward_wake(servers, nservers, route);

		give_up = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
											  SNOWID_SERVER_WAIT_MS);
		for (;;)
		{
			SlotState	st;

			SpinLockAcquire(&server_shared->mutex);
			st = slot->state;
			SpinLockRelease(&server_shared->mutex);
			if (st == SLOT_DONE)
				break;
			if (GetCurrentTimestamp() >= give_up && counter != NULL)
				ereport(ERROR,
						(errcode(ERRCODE_CONNECTION_FAILURE),
						 errmsg("could not reserve values for counter %s: the server process of its database did not answer within %d ms",
								counter, SNOWID_SERVER_WAIT_MS),
						 errhint("Check that its snowid registry server process runs (pg_stat_activity).")));
			if (GetCurrentTimestamp() >= give_up)
				ereport(ERROR,
						(errcode(ERRCODE_CONNECTION_FAILURE),
						 errmsg("the registry's server did not answer within %d ms",
								SNOWID_SERVER_WAIT_MS),
						 errhint("Check that its snowid registry server process runs (pg_stat_activity).")));
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 200, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
			/* a server that was starting has come up: wake it */
			if (st == SLOT_QUEUED)
			{
				nservers = server_for(MyDatabaseId, servers, &present,
									  counter);
				SpinLockAcquire(&server_shared->mutex);
				if (slot->state == SLOT_QUEUED && slot->route >= 0 &&
					!(present & (UINT64CONST(1) << slot->route)))
					slot->route = -1;
				route = slot->route;
				SpinLockRelease(&server_shared->mutex);
				forward_wake(servers, nservers, route);
			}
		}
	}
	PG_END_ENSURE_ERROR_CLEANUP(forward_cleanup, PointerGetDatum(slot));

	failed = slot->failed;
	stopped = slot->stopped;
	sqlerrcode = slot->sqlerrcode;
	flush_to = slot->flush_to;
	answer_len = slot->len;
	answer = palloc(answer_len + 1);
	memcpy(answer, slot->buf, answer_len);
	slot_release(slot);

	/*
	 * The server committed the batch without waiting for its WAL to reach
	 * disk (it went on with the next one): the answer, and whatever it
	 * read, is durable once that WAL is flushed, which the caller does
	 * here, before it returns (the callers of a batch share the flush).
	 */
	if (!XLogRecPtrIsInvalid(flush_to))
		XLogFlush(flush_to);

	/* what it may have reserved is never handed out: a gap, no repeat */
	if (failed && stopped && counter != NULL)
		ereport(ERROR,
				(errcode(sqlerrcode),
				 errmsg("could not reserve values for counter %s: the server process of its database stopped before it answered",
						counter),
				 errdetail("No value of the counter was handed out for this call."),
				 errhint("Ask again: the next call starts a new server process.")));
	if (failed)
	{
		int			pos = 0;
		char	   *msg = msg_get(answer, answer_len, &pos);
		char	   *detail = msg_get(answer, answer_len, &pos);
		char	   *hint = msg_get(answer, answer_len, &pos);

		ereport(ERROR,
				(errcode(sqlerrcode),
				 errmsg_internal("%s", msg ? msg : "registry request failed"),
				 detail ? errdetail_internal("%s", detail) : 0,
				 hint ? errhint("%s", hint) : 0));
	}

	return forward_answer(fcinfo, answer, answer_len);
}

/* ---- the server ---- */

static void
server_detach(int code, Datum arg)
{
	int			i;
	PGPROC	   *wake[SNOWID_SERVER_SLOTS];
	int			nwake = 0;

	SpinLockAcquire(&server_shared->mutex);
	/* requests it was applying: rolled back with its transaction */
	for (i = 0; i < SNOWID_SERVER_SLOTS; i++)
	{
		ServerSlot *slot = &server_shared->slots[i];

		if (slot->runner != MyProcPid ||
			(slot->state != SLOT_RUNNING && slot->state != SLOT_ABANDONED))
			continue;
		if (slot->state == SLOT_ABANDONED)
			slot->state = SLOT_FREE;
		else if (slot->state == SLOT_RUNNING)
		{
			slot_fail(slot, ERRCODE_CONNECTION_FAILURE,
					  "the registry's server process stopped before it answered",
					  NULL, NULL);
			slot->stopped = true;
			slot->state = SLOT_DONE;
			wake[nwake++] = slot->caller;
		}
	}
	for (i = 0; i < SNOWID_SERVER_ENTRIES; i++)
		if (server_shared->servers[i].pid == MyProcPid)
		{
			server_shared->servers[i].dboid = InvalidOid;
			server_shared->servers[i].pid = 0;
			server_shared->servers[i].proc = NULL;
		}
	SpinLockRelease(&server_shared->mutex);
	for (i = 0; i < nwake; i++)
		SetLatch(&wake[i]->procLatch);
}

/*
 * Call <name>_serve, the implementation of the registry function fnoid,
 * with the arguments of the request (text), and write its rows into out:
 * the number of columns, then each value.  The implementation must be the
 * extension's own (not a function of that name someone else created).
 */
static void
server_run(Oid fnoid, const char *req, int req_len, ServerSlot *out)
{
	ServerCall *call = NULL;
	Datum	   *values;
	char	   *nulls;
	int			pos = 0;
	int			i;

	/* (not while an outer call's plan runs) */
	if (calls_stale && run_depth == 0)
	{
		for (i = 0; i < ncalls; i++)
			SPI_freeplan(calls[i].plan);
		ncalls = 0;
		calls_stale = false;
	}
	run_depth++;
	for (i = 0; i < ncalls; i++)
		if (calls[i].fnoid == fnoid)
			call = &calls[i];

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "snowid: SPI_connect failed");

	if (call == NULL)
	{
		/* first call of this function: its implementation, checked */
		HeapTuple	proctup;
		Form_pg_proc proc;
		Oid			nsp;
		char	   *name;
		Oid			impl;
		Oid			ext = get_extension_oid("snowid", false);
		StringInfoData q;
		ServerCall	c;

		proctup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fnoid));
		if (!HeapTupleIsValid(proctup))
			elog(ERROR, "snowid: function %u of a registry request is gone", fnoid);
		proc = (Form_pg_proc) GETSTRUCT(proctup);
		nsp = proc->pronamespace;
		name = psprintf("%s_serve", NameStr(proc->proname));
		c.nargs = proc->pronargs;
		if (c.nargs > FUNC_MAX_ARGS)
			elog(ERROR, "snowid: too many arguments");
		memcpy(c.argtypes, proc->proargtypes.values, sizeof(Oid) * c.nargs);
		ReleaseSysCache(proctup);

		impl = GetSysCacheOid3(PROCNAMEARGSNSP, Anum_pg_proc_oid,
							   CStringGetDatum(name),
							   PointerGetDatum(buildoidvector(c.argtypes, c.nargs)),
							   ObjectIdGetDatum(nsp));
		if (!OidIsValid(impl) ||
			getExtensionOfObject(ProcedureRelationId, impl) != ext ||
			getExtensionOfObject(ProcedureRelationId, fnoid) != ext)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("the registry has no function %s of snowid's", name)));

		initStringInfo(&q);
		appendStringInfo(&q, "SELECT * FROM %s.%s(",
						 quote_identifier(get_namespace_name(nsp)),
						 quote_identifier(name));
		for (i = 0; i < c.nargs; i++)
		{
			appendStringInfo(&q, "%s$%d", i ? ", " : "", i + 1);
			getTypeInputInfo(c.argtypes[i], &c.input[i], &c.ioparam[i]);
		}
		appendStringInfoChar(&q, ')');
		c.fnoid = fnoid;
		c.plan = SPI_prepare(q.data, c.nargs, c.argtypes);
		if (c.plan == NULL)
			elog(ERROR, "snowid: registry request could not be planned: %s",
				 SPI_result_code_string(SPI_result));
		if (ncalls < SNOWID_SERVER_CALLS && SPI_keepplan(c.plan) == 0)
		{
			calls[ncalls] = c;
			call = &calls[ncalls++];
		}
		else
		{
			call = palloc(sizeof(ServerCall));
			*call = c;
		}
	}

	values = palloc(sizeof(Datum) * Max(call->nargs, 1));
	nulls = palloc(Max(call->nargs, 1));
	for (i = 0; i < call->nargs; i++)
	{
		char	   *v = msg_get(req, req_len, &pos);

		if (v == NULL)
		{
			values[i] = (Datum) 0;
			nulls[i] = 'n';
		}
		else
		{
			values[i] = OidInputFunctionCall(call->input[i], v, call->ioparam[i], -1);
			nulls[i] = ' ';
		}
	}
	if (SPI_execute_plan(call->plan, values, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "snowid: registry request did not run");
	{
		uint64		r;
		int			c;
		int			ncols = SPI_tuptable->tupdesc->natts;

		out->len = 0;
		msg_put(out, psprintf("%d", ncols));
		for (r = 0; r < SPI_processed; r++)
			for (c = 1; c <= ncols; c++)
				msg_put(out, SPI_getvalue(SPI_tuptable->vals[r],
										  SPI_tuptable->tupdesc, c));
	}
	SPI_finish();
	run_depth--;
}

/*
 * The end of the WAL inserted so far, as a position XLogFlush can reach:
 * when nothing is written on the current page yet, the insert position
 * lies past that page's header; the end is then the page's start.
 */
static XLogRecPtr
wal_inserted_end(void)
{
	XLogRecPtr	p = GetXLogInsertRecPtr();

	if (XLogSegmentOffset(p, wal_segment_size) == SizeOfXLogLongPHD)
		p -= SizeOfXLogLongPHD;
	else if (p % XLOG_BLCKSZ == SizeOfXLogShortPHD)
		p -= SizeOfXLogShortPHD;
	return p;
}

/*
 * Apply one request of the batch, in a subtransaction of its transaction,
 * as the caller's session role, and write its rows (or its error) into the
 * slot.
 */
static void
server_apply(ServerSlot *slot)
{
	MemoryContext ctx = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	char	   *req;
	int			req_len = slot->len;

	req = palloc(req_len + 1);
	memcpy(req, slot->buf, req_len);
	slot->len = 0;

	run_depth = 0;
	BeginInternalSubTransaction(NULL);
	PG_TRY();
	{
		/* session_user is the caller; current_user may call _serve */
		SetSessionAuthorization(slot->roleid, superuser_arg(slot->roleid));
		SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID, SECURITY_LOCAL_USERID_CHANGE);
		server_run(slot->fnoid, req, req_len, slot);
		SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID, 0);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(ctx);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *ed;

		MemoryContextSwitchTo(ctx);
		ed = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(ctx);
		CurrentResourceOwner = owner;
		SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID, 0);
		slot_fail(slot, ed->sqlerrcode, ed->message, ed->detail, ed->hint);
		FreeErrorData(ed);
	}
	PG_END_TRY();
}

void
snowid_server_main(Datum main_arg)
{
	int			entry = DatumGetInt32(main_arg);
	int			my_idx;
	Oid			dboid;
	int			i;
	TimestampTz last_work;

	am_server = true;
#ifdef __GLIBC__

	/*
	 * Keep freed memory for the next call rather than hand it back to the
	 * system: a call's layout checks run regular expressions whose
	 * matching (PostgreSQL 15's regex code mallocs its own) allocates and
	 * frees a few hundred kB at the top of the heap each time, which glibc
	 * then trims, so that every call faulted the pages in again.
	 */
	(void) mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024);
	(void) mallopt(M_MMAP_THRESHOLD, 4 * 1024 * 1024);
#endif
	pqsignal(SIGTERM, die);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	if (entry < 0 || entry >= SNOWID_SERVER_ENTRIES)
		proc_exit(0);
	SpinLockAcquire(&server_shared->mutex);
	dboid = server_shared->servers[entry].dboid;
	if (!OidIsValid(dboid) || server_shared->servers[entry].pid != 0)
	{
		SpinLockRelease(&server_shared->mutex);
		proc_exit(0);			/* not asked for, or another runs */
	}
	server_shared->servers[entry].pid = MyProcPid;
	my_idx = server_shared->servers[entry].idx;
	SpinLockRelease(&server_shared->mutex);
	on_shmem_exit(server_detach, (Datum) 0);

	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	pgstat_report_appname("snowid registry server");
	CacheRegisterSyscacheCallback(PROCOID, server_calls_stale, (Datum) 0);

	/*
	 * Whatever the database's or the server's settings say (the database
	 * owner may set some for every session of it): an answer goes out
	 * only once its commit is durable, writes are allowed, and values
	 * cross as text in one style.
	 */
	if (synchronous_commit == SYNCHRONOUS_COMMIT_OFF)
		SetConfigOption("synchronous_commit", "on", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("default_transaction_read_only", "off", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("DateStyle", "ISO, MDY", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("IntervalStyle", "postgres", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("extra_float_digits", "3", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("statement_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);
	SpinLockAcquire(&server_shared->mutex);
	server_shared->servers[entry].proc = MyProc;
	SpinLockRelease(&server_shared->mutex);

	last_work = GetCurrentTimestamp();
	for (;;)
	{
		int			batch[SNOWID_SERVER_SLOTS];
		int			n = 0;
		bool		idle;
		bool		callers_flush;
		XLogRecPtr	flush_to = InvalidXLogRecPtr;

		CHECK_FOR_INTERRUPTS();
		/* (synchronous_standby_names, below; the overrides above stay) */
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		idle = TimestampDifferenceExceeds(last_work, GetCurrentTimestamp(),
										  SNOWID_SERVER_IDLE_MS);
		SpinLockAcquire(&server_shared->mutex);
		/* answers no caller will read (it exited without its cleanup) */
		for (i = 0; i < SNOWID_SERVER_SLOTS; i++)
			if (server_shared->slots[i].state == SLOT_DONE &&
				server_shared->slots[i].caller->pid != server_shared->slots[i].caller_pid)
				server_shared->slots[i].state = SLOT_FREE;
		for (i = 0; i < SNOWID_SERVER_SLOTS && n < SNOWID_SERVER_BATCH; i++)
			if (server_shared->slots[i].state == SLOT_QUEUED &&
				server_shared->slots[i].dboid == dboid &&
				(server_shared->slots[i].route < 0 ||
				 server_shared->slots[i].route == my_idx))
			{
				server_shared->slots[i].state = SLOT_RUNNING;
				server_shared->slots[i].runner = MyProcPid;
				batch[n++] = i;
			}
		/*
		 * Idle for a while: leave, so that the database can be dropped,
		 * renamed or copied (those wait 5 s for its sessions to end); the
		 * next call starts a process again.  The entry goes while the lock
		 * is held, so a call queued after this starts a new one.
		 */
		if (n == 0 && idle)
		{
			server_shared->servers[entry].dboid = InvalidOid;
			server_shared->servers[entry].pid = 0;
			server_shared->servers[entry].proc = NULL;
			SpinLockRelease(&server_shared->mutex);
			proc_exit(0);
		}
		SpinLockRelease(&server_shared->mutex);

		if (n == 0)
		{
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 SNOWID_SERVER_IDLE_MS, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			continue;
		}
		last_work = GetCurrentTimestamp();

		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		/* decide on the state as it stands, whatever the server's default */
		XactIsoLevel = XACT_READ_COMMITTED;
		PushActiveSnapshot(GetTransactionSnapshot());
		pgstat_report_activity(STATE_RUNNING, "snowid registry requests");
		for (i = 0; i < n; i++)
			server_apply(&server_shared->slots[batch[i]]);
		SetSessionAuthorization(BOOTSTRAP_SUPERUSERID, true);
		PopActiveSnapshot();

		/*
		 * The commit.  Without a synchronous standby to wait for, it does
		 * not wait for its WAL flush: each caller flushes up to the batch's
		 * end before it reads its answer (forward), so that the flush, the
		 * slowest step, overlaps the next batch here, and the callers of
		 * one batch (and of others) share it.  The end taken is the WAL
		 * inserted by now: it covers this commit and every commit this
		 * batch could see, so no answer rests on a state that is not
		 * durable (a call that wrote nothing included).  With a synchronous
		 * standby, the commit waits for it here, as any commit would.
		 */
		callers_flush = !(synchronous_commit > SYNCHRONOUS_COMMIT_LOCAL_FLUSH &&
						  max_wal_senders > 0 &&
						  SyncRepStandbyNames != NULL &&
						  SyncRepStandbyNames[0] != '\0');
		if (callers_flush)
		{
			int			level = synchronous_commit;

			synchronous_commit = SYNCHRONOUS_COMMIT_OFF;
			PG_TRY();
			{
				CommitTransactionCommand();
			}
			PG_FINALLY();
			{
				synchronous_commit = level;
			}
			PG_END_TRY();
			flush_to = wal_inserted_end();
		}
		else
			CommitTransactionCommand();
		pgstat_report_activity(STATE_IDLE, NULL);

		/*
		 * The answers: read once the batch is durable (committed here with
		 * a synchronous standby, else flushed by each caller to flush_to)
		 */
		{
			PGPROC	   *wake[SNOWID_SERVER_SLOTS];
			int			nwake = 0;

			SpinLockAcquire(&server_shared->mutex);
			for (i = 0; i < n; i++)
			{
				ServerSlot *slot = &server_shared->slots[batch[i]];

				if (slot->state == SLOT_ABANDONED)
					slot->state = SLOT_FREE;
				else
				{
					slot->flush_to = flush_to;
					slot->state = SLOT_DONE;
					wake[nwake++] = slot->caller;
				}
			}
			SpinLockRelease(&server_shared->mutex);
			for (i = 0; i < nwake; i++)
				SetLatch(&wake[i]->procLatch);
		}
	}
}
