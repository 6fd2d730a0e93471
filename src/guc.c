/*-------------------------------------------------------------------------
 *
 * guc.c
 *	  snowid's configuration parameters and the validation of the layout.
 *
 * The layout parameters (node_id, node_bits, sequence_bits, id_bits, epoch,
 * tick) are PGC_POSTMASTER: fixed for the life of the server, identical in
 * every backend, and no session can change them.  Each is range-checked on
 * its own by the GUC machinery; the rules that tie them together are checked
 * once, in the postmaster, when the library is preloaded, and a layout
 * that breaks them stops the server from starting.  ALTER SYSTEM on one of
 * them is checked against the same rules (alter_system.c).
 *
 * max_lead and max_wait are PGC_SIGHUP: plain ints read by the generator.
 * max_batch (PGC_SUSET) bounds the IDs of one snowid_next_batch() call by a
 * role that is not a superuser; a superuser may raise it for a role (ALTER
 * ROLE ... SET), the role itself cannot.
 *
 * ticket_slots (PGC_POSTMASTER) sizes the shared table of ticket slots;
 * counter_keys (PGC_POSTMASTER) the cache of fast counters' keys;
 * registry_processes (PGC_SIGHUP) is how many registry server processes
 * (registry_server.c) a registry database gets; a reload applies it to
 * the next call.
 *
 * ticket_prefetch (PGC_SIGHUP) is the percentage of a block after which the
 * next block is reserved.
 *
 * registry (PGC_SIGHUP) names the registry database; lease (PGC_SIGHUP) is
 * how long a node lease lasts.  The registry's connection string may hold
 * a password: its check hook keeps the string as written in its "extra",
 * which the assign hook makes snowid_registry_conninfo, and puts the masked
 * string (conninfo.c) in the parameter's own value, so that SHOW,
 * current_setting() and every column of pg_settings (reset_val too, which
 * a show hook would not cover) show no password, to anyone.  Where
 * children re-read the values from a file the postmaster writes
 * (EXEC_BACKEND, on Windows) the value must stay as written, and only the
 * show hook masks it.
 * A registry that libpq cannot parse is refused: at start fatally, at
 * reload and by ALTER SYSTEM by its check hook (the old value stays), in
 * words that quote nothing of a password.
 *
 * library_version (PGC_INTERNAL) shows the version of the library this
 * process loaded (defined wherever it is loaded, preloaded or not), from
 * snowid.control at build time: beside pg_extension's extversion, what a
 * rolling upgrade checks on every server.  Like server_version it is
 * listed by pg_settings and SHOW ALL, and set by nothing.
 *
 * A server that does not preload snowid never defines these parameters;
 * values set in postgresql.conf remain visible as placeholders, and
 * snowid_configured_layout() parses those so the decoders still work.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "clock.h"
#include "compat.h"
#include "conninfo.h"
#include "guc.h"
#include "layout.h"
#include "libpq-fe.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "pgtime.h"
#include "utils/acl.h"
#include "utils/datetime.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"
#include "utils/timestamp.h"

/* A layout must last this long from now, or the server does not start. */
#define SNOWID_MIN_LIFE_YEARS 1
/* A layout that ends sooner than this from now is logged as a warning. */
#define SNOWID_WARN_LIFE_YEARS 10

int			snowid_node_id = -1;
int			snowid_max_lead_ms = 1000;
int			snowid_max_wait_ms = 1000;
int			snowid_max_batch = SNOWID_DEFAULT_MAX_BATCH;
bool		snowid_gucs_defined = false;
SnowidLayout snowid_active_layout;
char	   *snowid_registry_conninfo = NULL;	/* as written: the hook's extra */
int			snowid_lease_s = 12 * 3600;
int			snowid_ticket_slots = 128;
int			snowid_counter_keys = 10000;
int			snowid_ticket_prefetch = 50;
int			snowid_registry_processes = 2;

static int	snowid_node_bits = SNOWID_DEFAULT_NODE_BITS;
static int	snowid_sequence_bits = SNOWID_DEFAULT_SEQUENCE_BITS;
static int	snowid_tick_ms = SNOWID_DEFAULT_TICK_MS;
static int	snowid_id_bits = SNOWID_DEFAULT_ID_BITS;
static char *snowid_epoch_text = NULL;
static TimestampTz snowid_epoch = 0;
static char *snowid_registry_shown = NULL;	/* masked: the GUC's value */

#ifndef SNOWID_LIBRARY_VERSION
#error "SNOWID_LIBRARY_VERSION must be defined (the Makefile takes it from snowid.control)"
#endif
const char *const snowid_library_version = SNOWID_LIBRARY_VERSION;
static char *snowid_library_version_shown = NULL;

/*
 * Parse an epoch.  Text without a time zone is read as UTC, whatever the
 * server's TimeZone, so that every process reads the same instant.  Never
 * throws: returns false with a reason instead, as a check hook must.
 */
bool
snowid_parse_epoch(const char *text, TimestampTz *result, const char **why)
{
	char		workbuf[MAXDATELEN + MAXDATEFIELDS];
	char	   *field[MAXDATEFIELDS];
	int			ftype[MAXDATEFIELDS];
	int			nf;
	int			dtype;
	struct pg_tm tm;
	fsec_t		fsec;
	int			tz;
	int			dterr;
	pg_tz	   *saved_zone = session_timezone;

	dterr = ParseDateTime(text, workbuf, sizeof(workbuf), field, ftype,
						  MAXDATEFIELDS, &nf);

	/* Words such as "now" would give every server start a new epoch. */
	for (int i = 0; dterr == 0 && i < nf; i++)
	{
		if (ftype[i] == DTK_STRING &&
			(pg_strcasecmp(field[i], "now") == 0 ||
			 pg_strcasecmp(field[i], "today") == 0 ||
			 pg_strcasecmp(field[i], "tomorrow") == 0 ||
			 pg_strcasecmp(field[i], "yesterday") == 0 ||
			 pg_strcasecmp(field[i], "epoch") == 0))
		{
			*why = "It must be a fixed point in time, not a word such as now or today.";
			return false;
		}
	}
	if (dterr == 0)
	{
		session_timezone = pg_tzset_offset(0);
		PG_TRY();
		{
			dterr = snowid_decode_datetime(field, ftype, nf, &dtype, &tm, &fsec,
										   &tz);
		}
		PG_FINALLY();
		{
			session_timezone = saved_zone;
		}
		PG_END_TRY();
	}
	if (dterr != 0)
	{
		*why = "It is not a valid timestamp with time zone.";
		return false;
	}
	if (dtype != DTK_DATE)
	{
		*why = "It must be a finite point in time.";
		return false;
	}
	if (tm2timestamp(&tm, fsec, &tz, result) != 0 ||
		!IS_VALID_TIMESTAMP(*result))
	{
		*why = "It is out of the range of timestamp with time zone.";
		return false;
	}
	if (*result > snowid_clock_now())
	{
		*why = "The epoch must not be in the future.";
		return false;
	}
	return true;
}

static bool
snowid_epoch_check(char **newval, void **extra, GucSource source)
{
	TimestampTz epoch;
	const char *why;
	TimestampTz *store;

	if (!snowid_parse_epoch(*newval, &epoch, &why))
	{
		GUC_check_errdetail("%s", why);
		return false;
	}
	store = (TimestampTz *) snowid_guc_extra_alloc(sizeof(TimestampTz));
	if (store == NULL)
		return false;
	*store = epoch;
	*extra = store;
	return true;
}

static void
snowid_epoch_assign(const char *newval, void *extra)
{
	snowid_epoch = *(TimestampTz *) extra;
}

static bool snowid_conninfo_parses(const char *conninfo, char **why);

/*
 * snowid.registry: one libpq can parse; the string as written goes to
 * extra, the masked one replaces it as the parameter's value.
 */
static bool
snowid_registry_check(char **newval, void **extra, GucSource source)
{
	const char *text = *newval != NULL ? *newval : "";
	size_t		len = strlen(text) + 1;
	char	   *written;
	char	   *masked;
	char	   *why;

	/* one libpq can parse; the message quotes nothing of the value */
	if (!snowid_conninfo_parses(text, &why))
	{
		GUC_check_errcode(ERRCODE_INVALID_PARAMETER_VALUE);
		GUC_check_errmsg("invalid connection string for parameter \"snowid.registry\"");
		GUC_check_errdetail("%s", why);
		GUC_check_errhint("Write it as libpq's key=value pairs or a postgresql:// URI; the server keeps the connection string it had.");
		return false;
	}
	written = (char *) snowid_guc_extra_alloc(len);
	if (written == NULL)
		return false;
	memcpy(written, text, len);
	masked = snowid_conninfo_mask(text);
#ifndef EXEC_BACKEND
	if (*newval != NULL && strcmp(masked, *newval) != 0)
	{
		char	   *shown = snowid_guc_strdup(masked);

		if (shown == NULL)
		{
			pfree(masked);
			snowid_guc_free(written);
			return false;
		}
		snowid_guc_free(*newval);
		*newval = shown;
	}
#endif
	pfree(masked);
	*extra = written;
	return true;
}

static void
snowid_registry_assign(const char *newval, void *extra)
{
	snowid_registry_conninfo = (char *) extra;
}

static const char *
snowid_registry_show(void)
{
	return snowid_conninfo_mask(snowid_registry_shown != NULL ?
								snowid_registry_shown : "");
}

/*
 * Check the rules that tie the layout parameters together, reporting a
 * broken one at elevel (FATAL at server start, ERROR for ALTER SYSTEM).
 * Warns when the layout ends within SNOWID_WARN_LIFE_YEARS: always with
 * warn_always, else at most once per process.
 */
void
snowid_validate_layout(SnowidLayout *layout, int id_bits, int node_bits,
					   int sequence_bits, TimestampTz epoch, int tick_ms,
					   int node_id, int elevel, bool warn_always)
{
	TimestampTz now = snowid_clock_now();
	TimestampTz end;
	static bool warned = false;

	if (!snowid_layout_init(layout, id_bits, node_bits, sequence_bits, epoch,
							tick_ms))
		ereport(elevel,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("snowid.node_bits and snowid.sequence_bits together must be less than snowid.id_bits"),
				 errdetail("snowid.id_bits is %d, snowid.node_bits is %d and snowid.sequence_bits is %d, which leaves no bit for the timestamp.",
						   id_bits, node_bits, sequence_bits)));

	if (node_id < -1 || node_id > snowid_max_node(layout))
		ereport(elevel,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%d is outside the valid range for parameter \"snowid.node_id\" (0 .. " INT64_FORMAT ")",
						node_id, snowid_max_node(layout)),
				 errdetail("snowid.node_bits = %d allows node IDs from 0 to " INT64_FORMAT "; -1 leaves the node ID unset.",
						   node_bits, snowid_max_node(layout))));

	end = snowid_layout_end(layout);
	if (end != DT_NOEND &&
		end < now + SNOWID_MIN_LIFE_YEARS * DAYS_PER_YEAR * USECS_PER_DAY)
	{
		char	   *epoch_text = pstrdup(timestamptz_to_str(epoch));

		ereport(elevel,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("snowid layout leaves too few timestamp bits"),
				 errdetail("With snowid.id_bits = %d, snowid.node_bits = %d and snowid.sequence_bits = %d, %d bits remain for the timestamp; counting %d ms ticks from %s, they run out at %s.",
						   id_bits, node_bits, sequence_bits,
						   layout->timestamp_bits, tick_ms, epoch_text,
						   timestamptz_to_str(end)),
				 errhint("The layout must last at least %d year from now. Raising snowid.id_bits keeps new IDs above those already issued; fewer node or sequence bits, a longer tick or a later epoch do not, so on a server that has issued IDs make those changes only as the README section \"What may change between restarts\" says.",
						 SNOWID_MIN_LIFE_YEARS)));
	}

	if ((warn_always || !warned) && end != DT_NOEND &&
		end < now + SNOWID_WARN_LIFE_YEARS * DAYS_PER_YEAR * USECS_PER_DAY)
	{
		warned = true;
		ereport(WARNING,
				(errmsg("snowid layout runs out of timestamp bits at %s",
						timestamptz_to_str(end)),
				 errdetail("That is less than %d years from now; after it, snowid_next() fails instead of issuing IDs.",
						   SNOWID_WARN_LIFE_YEARS),
				 errhint("Plan a new layout well before then: raising snowid.id_bits is safe, other changes only as the README section \"What may change between restarts\" says.")));
	}
}

/*
 * The configured value of an integer parameter, from its placeholder (set
 * in postgresql.conf, or in the session of a server that does not preload
 * snowid), else the default.  A value out of range or not an integer is
 * reported at elevel, in the words PostgreSQL uses for its own parameters.
 */
static int
snowid_placeholder_int(const char *name, int default_value, int flags,
					   int min, int max, int elevel)
{
	const char *text = GetConfigOption(name, true, false);
	const char *unit = (flags & GUC_UNIT_MS) ? " ms" : "";
	int			value;
	const char *hint = NULL;

	if (text == NULL)
		return default_value;
	if (!parse_int(text, &value, flags, &hint))
		ereport(elevel,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for parameter \"%s\": \"%s\"", name, text),
				 errdetail("It must be an integer from %d%s to %d%s.",
						   min, unit, max, unit),
				 hint ? errhint("%s", hint) : 0));
	else if (value < min || value > max)
		ereport(elevel,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%d%s is outside the valid range for parameter \"%s\" (%d .. %d)",
						value, unit, name, min, max)));
	return value;
}

/* The configured epoch (or the default), parsed; reports at elevel. */
static TimestampTz
snowid_placeholder_epoch(int elevel)
{
	const char *text = GetConfigOption("snowid.epoch", true, false);
	TimestampTz epoch = 0;
	const char *why;

	if (text == NULL)
		text = SNOWID_DEFAULT_EPOCH;
	if (!snowid_parse_epoch(text, &epoch, &why))
		ereport(elevel,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for parameter \"snowid.epoch\": \"%s\"", text),
				 errdetail("%s", why)));
	return epoch;
}

/*
 * libpq's complaint about a connection string, as one line that quotes
 * nothing of a password: where the string may hold one (a password or
 * sslpassword keyword, or a URI with user:password@), every quoted part of
 * the complaint but "=" is hidden, as libpq quotes the word it stumbled on,
 * which may be a piece of the password.
 */
static char *
snowid_conninfo_complaint(const char *conninfo, const char *libpq_msg)
{
	bool		secret = strstr(conninfo, "://") != NULL;
	char	   *msg = pstrdup(libpq_msg);
	char	   *out;
	char	   *p;
	char	   *q;

	for (const char *c = conninfo; *c && !secret; c++)
		secret = pg_strncasecmp(c, "password", 8) == 0;
	for (p = msg; *p; p++)
		if (*p == '\n' || *p == '\t')
			*p = ' ';
	while (p > msg && p[-1] == ' ')
		*--p = '\0';
	if (!secret)
		return msg;

	out = palloc(3 * strlen(msg) + 1);	/* "" becomes "..." */
	q = out;
	for (p = msg; *p; p++)
	{
		char	   *close = *p == '"' ? strchr(p + 1, '"') : NULL;

		if (close == NULL || (close == p + 2 && p[1] == '='))
		{
			*q++ = *p;
			if (close != NULL)
			{
				*q++ = *++p;
				*q++ = *++p;
			}
			continue;
		}
		memcpy(q, "\"...\"", 5);
		q += 5;
		p = close;
	}
	*q = '\0';
	pfree(msg);
	return out;
}

/*
 * Whether libpq can parse conninfo (empty: no registry); if not, *why says
 * why, as a sentence that quotes nothing of a password.
 */
static bool
snowid_conninfo_parses(const char *conninfo, char **why)
{
	PQconninfoOption *opts;
	char	   *err = NULL;

	if (conninfo == NULL || conninfo[0] == '\0')
		return true;
	opts = PQconninfoParse(conninfo, &err);
	if (opts != NULL)
	{
		PQconninfoFree(opts);
		return true;
	}
	*why = psprintf("libpq cannot parse it: %s.",
					snowid_conninfo_complaint(conninfo,
											  err != NULL ? err : "out of memory"));
	if (err != NULL)
		PQfreemem(err);
	return false;
}


void
snowid_guc_init(void)
{
	/*
	 * Defining a parameter re-applies the postgresql.conf value with only a
	 * WARNING on failure, falling back to the default: a typo would silently
	 * change the layout.  Check the configured values first, fatally.
	 */
	(void) snowid_placeholder_int("snowid.node_id", -1, 0, -1, PG_INT32_MAX, FATAL);
	(void) snowid_placeholder_int("snowid.node_bits", SNOWID_DEFAULT_NODE_BITS,
								  0, 0, 31, FATAL);
	(void) snowid_placeholder_int("snowid.sequence_bits",
								  SNOWID_DEFAULT_SEQUENCE_BITS, 0, 0, 31, FATAL);
	(void) snowid_placeholder_int("snowid.tick", SNOWID_DEFAULT_TICK_MS,
								  GUC_UNIT_MS, 1, SNOWID_MAX_TICK_MS, FATAL);
	(void) snowid_placeholder_int("snowid.id_bits", SNOWID_DEFAULT_ID_BITS, 0,
								  SNOWID_MIN_ID_BITS, 63, FATAL);
	(void) snowid_placeholder_int("snowid.max_lead", 1000, GUC_UNIT_MS, 0,
								  SNOWID_MAX_TIME_MS, FATAL);
	(void) snowid_placeholder_int("snowid.max_wait", 1000, GUC_UNIT_MS, 0,
								  SNOWID_MAX_TIME_MS, FATAL);
	(void) snowid_placeholder_int("snowid.ticket_slots", 128, 0, 1, 65536, FATAL);
	(void) snowid_placeholder_int("snowid.counter_keys", 10000, 0, 16, 10000000, FATAL);
	(void) snowid_placeholder_int("snowid.ticket_prefetch", 50, 0, 0, 100, FATAL);
	(void) snowid_placeholder_epoch(FATAL);
	{
		const char *registry = GetConfigOption("snowid.registry", true, false);
		char	   *why;

		if (!snowid_conninfo_parses(registry, &why))
			ereport(FATAL,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid connection string for parameter \"snowid.registry\""),
					 errdetail("%s", why)));
	}

	DefineCustomIntVariable("snowid.node_id",
							"Node ID of this server, embedded in every snowid it issues.",
							"Must be unique among the servers that share IDs, between 0 and 2^snowid.node_bits - 1; -1 (unset) makes snowid_next() fail.",
							&snowid_node_id,
							-1, -1, PG_INT32_MAX,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("snowid.node_bits",
							"Number of bits of a snowid that hold the node ID.",
							NULL,
							&snowid_node_bits,
							SNOWID_DEFAULT_NODE_BITS, 0, 31,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("snowid.sequence_bits",
							"Number of bits of a snowid that hold the sequence within one tick.",
							NULL,
							&snowid_sequence_bits,
							SNOWID_DEFAULT_SEQUENCE_BITS, 0, 31,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	DefineCustomStringVariable("snowid.epoch",
							   "Start of tick 0 of the snowid timestamp (a timestamptz; UTC if no zone is given).",
							   "Must not be in the future.",
							   &snowid_epoch_text,
							   SNOWID_DEFAULT_EPOCH,
							   PGC_POSTMASTER, 0,
							   snowid_epoch_check, snowid_epoch_assign, NULL);
	DefineCustomIntVariable("snowid.tick",
							"Length of one snowid timestamp unit.",
							NULL,
							&snowid_tick_ms,
							SNOWID_DEFAULT_TICK_MS, 1, SNOWID_MAX_TICK_MS,
							PGC_POSTMASTER, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("snowid.id_bits",
							"Number of bits a snowid may use: every ID is below 2^snowid.id_bits.",
							"The timestamp gets snowid.id_bits - snowid.node_bits - snowid.sequence_bits bits; 53 keeps every ID exact as a JavaScript or JSON number.",
							&snowid_id_bits,
							SNOWID_DEFAULT_ID_BITS, SNOWID_MIN_ID_BITS, 63,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("snowid.max_lead",
							"How far the timestamp of an issued snowid may run ahead of the wall clock.",
							"Lets a node borrow ticks when one tick's sequence is used up, and absorbs small backward clock steps.",
							&snowid_max_lead_ms,
							1000, 0, SNOWID_MAX_TIME_MS,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("snowid.max_wait",
							"How long snowid_next() may wait for the wall clock before it fails.",
							NULL,
							&snowid_max_wait_ms,
							1000, 0, SNOWID_MAX_TIME_MS,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("snowid.max_batch",
							"Most IDs one snowid_next_batch() call may take, for roles that are not superusers.",
							"Bounds how far one call can move the IDs ahead of the clock; such a role's batches also lead by at most half of snowid.max_lead.  Superusers are not bound by it and may set it for a role with ALTER ROLE.",
							&snowid_max_batch,
							SNOWID_DEFAULT_MAX_BATCH, 1, SNOWID_MAX_BATCH,
							PGC_SUSET, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("snowid.ticket_slots",
							"Number of ticket sequences this server can serve at once.",
							"Each ticket sequence in use takes one slot in shared memory, in every database.",
							&snowid_ticket_slots,
							128, 1, 65536,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("snowid.counter_keys",
							"Number of keys of fast counters this server keeps in shared memory.",
							"Each takes about 300 bytes, all databases together; a key used when all are taken replaces one not used lately, and its next value comes from a new block.",
							&snowid_counter_keys,
							10000, 16, 10000000,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("snowid.registry_processes",
							"Processes of a registry's server that apply the members' calls, per registry database.",
							"Started on the first call; each takes a background worker slot (max_worker_processes).  More apply calls faster on more cores.",
							&snowid_registry_processes,
							2, 1, 16,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("snowid.ticket_prefetch",
							"Percentage of a ticket block after which the next block is reserved.",
							"The caller that takes this value of a block reserves the next one while others keep taking values.",
							&snowid_ticket_prefetch,
							50, 0, 100,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);

	DefineCustomStringVariable("snowid.registry",
							   "Connection string of the registry database that leases node IDs to this server.",
							   "A libpq connection string; empty: no registry.  The background worker reconnects on reload.  Shown with any password masked.",
							   &snowid_registry_shown,
							   "",
							   PGC_SIGHUP, GUC_SUPERUSER_ONLY,
							   snowid_registry_check, snowid_registry_assign,
							   snowid_registry_show);
	DefineCustomIntVariable("snowid.lease",
							"How long a node lease from the registry lasts.",
							"Also how long this server keeps issuing IDs while the registry cannot be reached.",
							&snowid_lease_s,
							12 * 3600, 10, 7 * 24 * 3600,
							PGC_SIGHUP, GUC_UNIT_S,
							NULL, NULL, NULL);

	MarkGUCPrefixReserved("snowid");

	snowid_validate_layout(&snowid_active_layout, snowid_id_bits,
						   snowid_node_bits, snowid_sequence_bits, snowid_epoch,
						   snowid_tick_ms, snowid_node_id, FATAL, false);
	snowid_gucs_defined = true;
}

/*
 * snowid.library_version, defined wherever the library is loaded: at
 * preload, and in a backend that loads it later (a registry without the
 * preload, at its first call of snowid's), as PGC_INTERNAL may be defined
 * after start-up.  It reserves nothing: the layout's placeholders stay.
 */
void
snowid_guc_define_version(void)
{
	DefineCustomStringVariable("snowid.library_version",
							   "Version of the snowid library this process loaded.",
							   "Set when the library is built; after an upgrade, compare it with pg_extension.extversion in each database.",
							   &snowid_library_version_shown,
							   SNOWID_LIBRARY_VERSION,
							   PGC_INTERNAL,
							   GUC_NOT_IN_SAMPLE | GUC_DISALLOW_IN_FILE,
							   NULL, NULL, NULL);
}

/*
 * The configured layout, and the configured node ID (-1 if unset).  With
 * snowid preloaded that is the validated start-up configuration; without
 * it, the configured placeholders, validated here (and cached until they
 * change).  snowid_current_layout (lease.c) adds the node in force.
 */
void
snowid_configured_layout(SnowidLayout *layout, int *node_id)
{
	static SnowidLayout cached;
	static int	cached_node_id;
	static char *cached_key = NULL;
	SnowidLayout fresh;
	const char *epoch_text;
	int			node_bits;
	int			sequence_bits;
	int			tick_ms;
	int			id_bits;
	int			node;
	TimestampTz epoch;
	char	   *key;

	if (snowid_gucs_defined)
	{
		*layout = snowid_active_layout;
		*node_id = snowid_node_id;
		return;
	}

	node = snowid_placeholder_int("snowid.node_id", -1, 0, -1, PG_INT32_MAX,
								  ERROR);
	node_bits = snowid_placeholder_int("snowid.node_bits",
									   SNOWID_DEFAULT_NODE_BITS, 0, 0, 31, ERROR);
	sequence_bits = snowid_placeholder_int("snowid.sequence_bits",
										   SNOWID_DEFAULT_SEQUENCE_BITS,
										   0, 0, 31, ERROR);
	tick_ms = snowid_placeholder_int("snowid.tick", SNOWID_DEFAULT_TICK_MS,
									 GUC_UNIT_MS, 1, SNOWID_MAX_TICK_MS, ERROR);
	id_bits = snowid_placeholder_int("snowid.id_bits", SNOWID_DEFAULT_ID_BITS,
									 0, SNOWID_MIN_ID_BITS, 63, ERROR);
	epoch_text = GetConfigOption("snowid.epoch", true, false);
	if (epoch_text == NULL)
		epoch_text = SNOWID_DEFAULT_EPOCH;

	key = psprintf("%d/%d/%d/%d/%d/%s", node, id_bits, node_bits,
				   sequence_bits, tick_ms, epoch_text);
	if (cached_key != NULL && strcmp(key, cached_key) == 0)
	{
		pfree(key);
		*layout = cached;
		*node_id = cached_node_id;
		return;
	}

	epoch = snowid_placeholder_epoch(ERROR);
	snowid_validate_layout(&fresh, id_bits, node_bits, sequence_bits, epoch,
						   tick_ms, node, ERROR, false);

	cached = fresh;
	cached_node_id = node;
	if (cached_key != NULL)
		free(cached_key);
	cached_key = strdup(key);
	pfree(key);

	*layout = cached;
	*node_id = cached_node_id;
}
