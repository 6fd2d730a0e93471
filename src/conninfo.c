/*-------------------------------------------------------------------------
 *
 * conninfo.c
 *	  A libpq connection string without its secrets.
 *
 * The string is read the way libpq reads it (a URI when it starts with
 * postgresql:// or postgres://, else key = value pairs, values quoted with
 * ' and escaped with \), to find the spans that hold a secret: the value
 * of password or sslpassword, and the password of a URI's user:password@.
 * snowid_conninfo_mask replaces each span by SNOWID_CONNINFO_MASK and
 * leaves every other byte as written.  What cannot be read as libpq would
 * (a key without =) is masked from there to the end: libpq refuses such a
 * string, and its tail may be a secret the writer meant to give.
 *
 * snowid_conninfo_scrub replaces every occurrence of a secret (as written,
 * unquoted, unescaped or percent-decoded) in some other text, such as an
 * error libpq reported while connecting with the string, which may quote
 * the whole of it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "conninfo.h"
#include "lib/stringinfo.h"
#include "libpq-fe.h"
#include "nodes/pg_list.h"

/* a secret's bytes in the connection string: [start, end) */
typedef struct SnowidSpan
{
	int			start;
	int			end;
	bool		uri;			/* percent-encoded, not quoted */
} SnowidSpan;

typedef struct SnowidSpans
{
	SnowidSpan *spans;
	int			n;
	int			size;
} SnowidSpans;

static void
snowid_span_add(SnowidSpans *s, int start, int end, bool uri)
{
	if (end <= start)
		return;
	if (s->n == s->size)
	{
		s->size = s->size == 0 ? 4 : s->size * 2;
		s->spans = s->spans == NULL ?
			palloc(s->size * sizeof(SnowidSpan)) :
			repalloc(s->spans, s->size * sizeof(SnowidSpan));
	}
	s->spans[s->n].start = start;
	s->spans[s->n].end = end;
	s->spans[s->n].uri = uri;
	s->n++;
}

static int
snowid_hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* text[0 .. len) percent-decoded, as a URI's parts are. */
static char *
snowid_percent_decode(const char *text, int len)
{
	char	   *out = palloc(len + 1);
	int			o = 0;

	for (int i = 0; i < len; i++)
	{
		if (text[i] == '%' && i + 2 < len &&
			snowid_hex_value(text[i + 1]) >= 0 &&
			snowid_hex_value(text[i + 2]) >= 0)
		{
			out[o++] = (char) (snowid_hex_value(text[i + 1]) * 16 +
							   snowid_hex_value(text[i + 2]));
			i += 2;
		}
		else
			out[o++] = text[i];
	}
	out[o] = '\0';
	return out;
}

/* Is key[0 .. len) (percent-decoded in a URI) the name of a secret? */
static bool
snowid_secret_key(const char *key, int len, bool uri)
{
	char	   *name = uri ? snowid_percent_decode(key, len) : pnstrdup(key, len);
	bool		secret = pg_strcasecmp(name, "password") == 0 ||
		pg_strcasecmp(name, "sslpassword") == 0;

	pfree(name);
	return secret;
}

static int
snowid_uri_prefix(const char *s)
{
	if (strncmp(s, "postgresql://", 13) == 0)
		return 13;
	if (strncmp(s, "postgres://", 11) == 0)
		return 11;
	return 0;
}

/* The secrets of a URI: user:password@, and ?password= among the parameters. */
static void
snowid_uri_spans(const char *s, int prefix, SnowidSpans *spans)
{
	int			len = strlen(s);
	int			p = prefix;
	int			q = p;
	const char *query;

	/* user[:password]@, before any / (as libpq looks for it) */
	while (q < len && s[q] != '@' && s[q] != '/')
		q++;
	if (q < len && s[q] == '@')
	{
		int			colon = p;

		while (colon < q && s[colon] != ':')
			colon++;
		if (colon < q)
			snowid_span_add(spans, colon + 1, q, true);
		p = q + 1;
	}

	/* key=value&... after the first ? */
	query = strchr(s + p, '?');
	if (query == NULL)
		return;
	for (int i = (query - s) + 1; i < len;)
	{
		int			key = i;
		int			eq = -1;

		while (i < len && s[i] != '&')
		{
			if (s[i] == '=' && eq < 0)
				eq = i;
			i++;
		}
		if (eq >= 0 && snowid_secret_key(s + key, eq - key, true))
			snowid_span_add(spans, eq + 1, i, true);
		if (i < len)
			i++;				/* the & */
	}
}

/* The secrets of key = value pairs. */
static void
snowid_keyword_spans(const char *s, SnowidSpans *spans)
{
	int			len = strlen(s);
	int			i = 0;

	while (i < len)
	{
		int			key;
		int			key_end;
		int			value;

		while (i < len && isspace((unsigned char) s[i]))
			i++;
		if (i >= len)
			break;
		key = i;
		while (i < len && s[i] != '=' && !isspace((unsigned char) s[i]))
			i++;
		key_end = i;
		while (i < len && isspace((unsigned char) s[i]))
			i++;
		if (i >= len || s[i] != '=')
		{
			/* not key = value: libpq refuses it; mask the rest */
			snowid_span_add(spans, key, len, false);
			return;
		}
		i++;
		while (i < len && isspace((unsigned char) s[i]))
			i++;
		value = i;
		if (i < len && s[i] == '\'')
		{
			for (i++; i < len && s[i] != '\''; i++)
				if (s[i] == '\\' && i + 1 < len)
					i++;
			if (i < len)
				i++;			/* the closing quote */
		}
		else
		{
			for (; i < len && !isspace((unsigned char) s[i]); i++)
				if (s[i] == '\\' && i + 1 < len)
					i++;
		}
		if (snowid_secret_key(s + key, key_end - key, false))
			snowid_span_add(spans, value, i, false);
	}
}

static SnowidSpans
snowid_secret_spans(const char *conninfo)
{
	SnowidSpans spans = {NULL, 0, 0};
	int			prefix = snowid_uri_prefix(conninfo);

	if (prefix > 0)
		snowid_uri_spans(conninfo, prefix, &spans);
	else if (strchr(conninfo, '=') != NULL)
		snowid_keyword_spans(conninfo, &spans);
	/* else a database name alone, as libpq takes it: no secret */
	return spans;
}

/* The connection string with each secret replaced by SNOWID_CONNINFO_MASK. */
char *
snowid_conninfo_mask(const char *conninfo)
{
	SnowidSpans spans = snowid_secret_spans(conninfo);
	StringInfoData buf;
	int			at = 0;

	initStringInfo(&buf);
	/* the spans come in order and do not overlap */
	for (int k = 0; k < spans.n; k++)
	{
		appendBinaryStringInfo(&buf, conninfo + at, spans.spans[k].start - at);
		appendStringInfoString(&buf, SNOWID_CONNINFO_MASK);
		at = spans.spans[k].end;
	}
	appendStringInfoString(&buf, conninfo + at);
	if (spans.spans != NULL)
		pfree(spans.spans);
	return buf.data;
}

/* A quoted, escaped value as libpq reads it. */
static char *
snowid_unquote(const char *text, int len)
{
	char	   *out = palloc(len + 1);
	int			o = 0;
	int			i = 0;

	if (len > 0 && text[0] == '\'')
	{
		i = 1;
		if (len > 1 && text[len - 1] == '\'')
			len--;
	}
	for (; i < len; i++)
	{
		if (text[i] == '\\' && i + 1 < len)
			i++;
		out[o++] = text[i];
	}
	out[o] = '\0';
	return out;
}

static void
snowid_secret_add(List **secrets, char *secret)
{
	if (secret != NULL && secret[0] != '\0')
		*secrets = lappend(*secrets, secret);
}

/* Longer first, so that a secret is not left half masked by a shorter one. */
static int
snowid_longer_first(const ListCell *a, const ListCell *b)
{
	size_t		la = strlen(lfirst(a));
	size_t		lb = strlen(lfirst(b));

	return la > lb ? -1 : la < lb ? 1 : 0;
}

/*
 * text with every occurrence of a secret of conninfo replaced by
 * SNOWID_CONNINFO_MASK: the secret as written, without its quotes,
 * unescaped or percent-decoded, and as libpq parses it.
 */
char *
snowid_conninfo_scrub(const char *conninfo, const char *text)
{
	SnowidSpans spans;
	List	   *secrets = NIL;
	PQconninfoOption *opts;
	StringInfoData buf;

	if (conninfo == NULL || text == NULL)
		return pstrdup(text != NULL ? text : "");

	spans = snowid_secret_spans(conninfo);
	for (int k = 0; k < spans.n; k++)
	{
		const char *raw = conninfo + spans.spans[k].start;
		int			len = spans.spans[k].end - spans.spans[k].start;

		snowid_secret_add(&secrets, pnstrdup(raw, len));
		if (spans.spans[k].uri)
			snowid_secret_add(&secrets, snowid_percent_decode(raw, len));
		else
		{
			snowid_secret_add(&secrets, snowid_unquote(raw, len));
			if (len >= 2 && raw[0] == '\'' && raw[len - 1] == '\'')
				snowid_secret_add(&secrets, pnstrdup(raw + 1, len - 2));
		}
	}
	if (spans.spans != NULL)
		pfree(spans.spans);

	opts = PQconninfoParse(conninfo, NULL);
	if (opts != NULL)
	{
		for (PQconninfoOption *o = opts; o->keyword != NULL; o++)
			if (o->val != NULL &&
				(strcmp(o->keyword, "password") == 0 ||
				 strcmp(o->keyword, "sslpassword") == 0))
				snowid_secret_add(&secrets, pstrdup(o->val));
		PQconninfoFree(opts);
	}

	if (secrets == NIL)
		return pstrdup(text);
	list_sort(secrets, snowid_longer_first);

	initStringInfo(&buf);
	for (const char *p = text; *p != '\0';)
	{
		bool		found = false;
		ListCell   *lc;

		foreach(lc, secrets)
		{
			const char *secret = lfirst(lc);
			size_t		len = strlen(secret);

			if (strncmp(p, secret, len) == 0)
			{
				appendStringInfoString(&buf, SNOWID_CONNINFO_MASK);
				p += len;
				found = true;
				break;
			}
		}
		if (!found)
			appendStringInfoChar(&buf, *p++);
	}
	list_free_deep(secrets);
	return buf.data;
}
