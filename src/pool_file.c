/*-------------------------------------------------------------------------
 *
 * pool_file.c
 *	  The pool file, $PGDATA/snowid.pools, as text: the rule for a pool's
 *	  name, the line of one pool and its checks, and the reading of the
 *	  whole file at start (FATAL if it is corrupt).
 *
 * Nothing here touches shared memory: when the file is read and written,
 * and what is kept of it, belong to pool_store.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <errno.h>

#include "catalog/pg_type_d.h"
#include "lease.h"
#include "lib/stringinfo.h"
#include "pool.h"
#include "pool_file.h"
#include "port/pg_crc32c.h"
#include "storage/fd.h"

bool
snowid_pool_name_ok(const char *name)
{
	size_t		len = strlen(name);

	if (len == 0 || len >= SNOWID_POOL_NAME_LEN)
		return false;
	for (const char *p = name; *p; p++)
		if (!isalnum((unsigned char) *p) && *p != '_' && *p != '-' && *p != '.')
			return false;
	return true;
}

/*
 * The file $PGDATA/snowid.pools: the line "snowid-pools-2", then one line
 * per pool:
 *
 *	 pool <name> <gen> <typid> <start> <maxvalue> <floor> <durable_off>
 *		<nranges> [<first> <last>]... <flags> <ndbs> [<database oid>]... <crc>
 *
 * (one line; crc is the CRC-32C of the text before it, in hex), then
 * "end <number of pools> <highest change count written>".  A file of 1.4
 * ("snowid-pools-1") has neither flags nor databases, nor the change count
 * on its end line.  Anything else is corruption.
 */
void
snowid_pool_format_line(StringInfo buf, const SnowidPoolState *st, bool v1)
{
	int			from = buf->len;
	pg_crc32c	crc;

	appendStringInfo(buf, "pool %s " UINT64_FORMAT " %u " INT64_FORMAT " "
					 INT64_FORMAT " " INT64_FORMAT " " UINT64_FORMAT " %d",
					 st->name, st->gen, st->typid, st->start, st->maxvalue,
					 st->floor, st->durable_off, st->nranges);
	for (int i = 0; i < st->nranges; i++)
		appendStringInfo(buf, " " INT64_FORMAT " " INT64_FORMAT,
						 st->ranges[i].first, st->ranges[i].last);
	if (!v1)
	{
		appendStringInfo(buf, " %u %d", st->flags, st->ndbs);
		for (int i = 0; i < st->ndbs; i++)
			appendStringInfo(buf, " %u", st->dbs[i]);
	}
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, buf->data + from, buf->len - from);
	FIN_CRC32C(crc);
	appendStringInfo(buf, " %08x\n", (unsigned int) crc);
}

/* Next space-separated token of *p (advanced), or NULL. */
static char *
snowid_pool_token(char **p)
{
	char	   *s = *p;
	char	   *t;

	if (*s == '\0')
		return NULL;
	t = s;
	while (*s != '\0' && *s != ' ')
		s++;
	if (*s == ' ')
	{
		*s++ = '\0';
		if (*s == ' ' || *s == '\0')
			return NULL;		/* two spaces, or a trailing one */
	}
	*p = s;
	return t;
}

static bool
snowid_pool_int(char **p, bool is_unsigned, int64 *value)
{
	char	   *t = snowid_pool_token(p);
	char	   *end;

	if (t == NULL || !(isdigit((unsigned char) t[0]) ||
					   (!is_unsigned && t[0] == '-' && isdigit((unsigned char) t[1]))))
		return false;
	errno = 0;
	if (is_unsigned)
		*value = (int64) strtoull(t, &end, 10);
	else
		*value = (int64) strtoll(t, &end, 10);
	return errno == 0 && *end == '\0';
}

/* Is a state what this code could have written? */
static bool
snowid_pool_state_sane(const SnowidPoolState *st)
{
	if (!snowid_pool_name_ok(st->name) || st->nranges < 0 ||
		st->nranges > SNOWID_POOL_RANGES)
		return false;
	if (OidIsValid(st->typid) &&
		((st->typid != INT4OID && st->typid != INT8OID) ||
		 st->maxvalue != (st->typid == INT4OID ? PG_INT32_MAX : PG_INT64_MAX) ||
		 st->start > st->maxvalue))
		return false;
	for (int i = 0; i < st->nranges; i++)
		if (st->ranges[i].first > st->ranges[i].last ||
			snowid_range_size(&st->ranges[i]) == 0 ||
			(OidIsValid(st->typid) &&
			 (st->ranges[i].first < st->start ||
			  st->ranges[i].last > st->maxvalue)))
			return false;
	if (st->nranges > 0 && st->durable_off > snowid_range_size(&st->ranges[0]))
		return false;
	if (st->ndbs < 0 || st->ndbs > SNOWID_POOL_DBS ||
		(st->flags & SNOWID_POOL_FREED) != 0)
		return false;
	return true;
}

/* Parse one line (NUL-terminated, no newline) into st. */
static bool
snowid_pool_parse_line(const char *line, SnowidPoolState *st, bool v1)
{
	char	   *copy = pstrdup(line);
	char	   *p = copy;
	char	   *t;
	int64		v;
	StringInfoData again;
	bool		ok = false;

	memset(st, 0, sizeof(*st));
	if ((t = snowid_pool_token(&p)) == NULL || strcmp(t, "pool") != 0)
		goto done;
	if ((t = snowid_pool_token(&p)) == NULL || strlen(t) >= SNOWID_POOL_NAME_LEN)
		goto done;
	strlcpy(st->name, t, SNOWID_POOL_NAME_LEN);
	if (!snowid_pool_int(&p, true, &v))
		goto done;
	st->gen = (uint64) v;
	if (!snowid_pool_int(&p, true, &v) || v > PG_UINT32_MAX)
		goto done;
	st->typid = (Oid) v;
	if (!snowid_pool_int(&p, false, &st->start) ||
		!snowid_pool_int(&p, false, &st->maxvalue) ||
		!snowid_pool_int(&p, false, &st->floor) ||
		!snowid_pool_int(&p, true, &v))
		goto done;
	st->durable_off = (uint64) v;
	if (!snowid_pool_int(&p, false, &v) || v < 0 || v > SNOWID_POOL_RANGES)
		goto done;
	st->nranges = (int32) v;
	for (int i = 0; i < st->nranges; i++)
		if (!snowid_pool_int(&p, false, &st->ranges[i].first) ||
			!snowid_pool_int(&p, false, &st->ranges[i].last))
			goto done;
	if (!v1)
	{
		if (!snowid_pool_int(&p, true, &v) || v > PG_UINT32_MAX)
			goto done;
		st->flags = (uint32) v;
		if (!snowid_pool_int(&p, false, &v) || v < 0 || v > SNOWID_POOL_DBS)
			goto done;
		st->ndbs = (int32) v;
		for (int i = 0; i < st->ndbs; i++)
		{
			if (!snowid_pool_int(&p, true, &v) || v > PG_UINT32_MAX)
				goto done;
			st->dbs[i] = (Oid) v;
		}
	}
	if (!snowid_pool_state_sane(st))
		goto done;
	/* the rest must be the CRC: compare with the line this state makes */
	initStringInfo(&again);
	snowid_pool_format_line(&again, st, v1);
	again.data[--again.len] = '\0'; /* the newline */
	ok = strcmp(again.data, line) == 0;
	pfree(again.data);
	/* who uses a pool of 1.4 is not known: never freed as unused */
	if (v1)
		st->flags = SNOWID_POOL_DBS_UNKNOWN;
done:
	pfree(copy);
	return ok;
}

/*
 * Read and parse the file into states; -1 if there is none.  FATAL if bad.
 * *hwm: the change count on its end line (0 in a file of 1.4).
 */
int
snowid_pool_read_file(SnowidPoolState *states, uint64 *hwm, bool *file_v1)
{
	FILE	   *f;
	char		line[1024];
	int			n = 0;
	int			lineno = 0;
	bool		ended = false;
	bool		v1 = false;
	const char *why = NULL;

	*hwm = 0;
	*file_v1 = true;

	f = AllocateFile(SNOWID_POOLS_FILE, "r");
	if (f == NULL)
	{
		if (errno == ENOENT)
			return -1;
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", SNOWID_POOLS_FILE)));
	}
	while (why == NULL && fgets(line, sizeof(line), f) != NULL)
	{
		size_t		len = strlen(line);
		int			count;

		lineno++;
		if (len == 0 || line[len - 1] != '\n')
		{
			why = "a line is cut short or too long";
			break;
		}
		line[len - 1] = '\0';
		if (ended)
			why = "text follows the end line";
		else if (lineno == 1)
		{
			v1 = strcmp(line, SNOWID_POOLS_MAGIC_1_4) == 0;
			if (!v1 && strcmp(line, SNOWID_POOLS_MAGIC) != 0)
				why = "the first line is not \"" SNOWID_POOLS_MAGIC "\"";
		}
		else if (strncmp(line, "end ", 4) == 0)
		{
			unsigned long long end_hwm = 0;

			if (v1 ? (sscanf(line, "end %d", &count) != 1 || count != n ||
					  strcmp(line, psprintf("end %d", n)) != 0) :
				(sscanf(line, "end %d %llu", &count, &end_hwm) != 2 ||
				 count != n ||
				 strcmp(line, psprintf("end %d " UINT64_FORMAT, n,
									   (uint64) end_hwm)) != 0))
				why = "the end line does not match the pools listed";
			*hwm = (uint64) end_hwm;
			ended = true;
		}
		else if (n >= SNOWID_POOL_MAX)
			why = "it lists more pools than a server holds";
		else if (!snowid_pool_parse_line(line, &states[n], v1))
			why = psprintf("line %d is not a valid pool line", lineno);
		else
		{
			for (int i = 0; i < n; i++)
				if (strcmp(states[i].name, states[n].name) == 0)
					why = psprintf("pool \"%s\" is listed twice", states[n].name);
			n++;
		}
	}
	if (why == NULL && ferror(f))
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not read file \"%s\": %m", SNOWID_POOLS_FILE)));
	FreeFile(f);
	if (why == NULL && !ended)
		why = "it has no end line";
	*file_v1 = v1;
	if (why != NULL)
		ereport(FATAL,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("snowid pool file \"%s\" is corrupt", SNOWID_POOLS_FILE),
				 errdetail("%s; snowid cannot know which values of its ranges were handed out, so it does not start.",
						   snowid_sentence(why)),
				 errhint("Restore the file from a backup, or remove it to give up the ranges it held: their unused values are lost, and pooled tickets fetch new ranges.")));
	return n;
}
