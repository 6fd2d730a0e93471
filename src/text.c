/*-------------------------------------------------------------------------
 *
 * text.c
 *	  snowid_to_text() and snowid_from_text(): the Crockford base32 text
 *	  form of snowids and ticket values (see text.h for the format).
 *
 * The encoder and decoder at the top are pure functions of their inputs;
 * the SQL functions below them check the arguments and turn what the
 * decoder reports into errors.  Nothing here depends on the layout, a GUC
 * or shared memory, so both SQL functions are IMMUTABLE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "compat.h"
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "text.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(snowid_to_text);
PG_FUNCTION_INFO_V1(snowid_from_text);

snowid_noreturn static void snowid_text_error(text *code,
											  SnowidTextStatus status,
											  int offset);

/* Symbols 0 .. 36: the 32 value symbols, then the 5 check-only symbols. */
static const char snowid_text_symbols[] =
"0123456789ABCDEFGHJKMNPQRSTVWXYZ*~$=U";

#define SNOWID_TEXT_BASE		32
#define SNOWID_TEXT_CHECK_BASE	37

/*
 * What each byte reads as, plus one (0: not a symbol).  Lower case reads as
 * upper case, I and L as 1, O as 0.
 */
static const int8 snowid_text_reading[256] = {
	['0'] = 1,['1'] = 2,['2'] = 3,['3'] = 4,['4'] = 5,
	['5'] = 6,['6'] = 7,['7'] = 8,['8'] = 9,['9'] = 10,
	['A'] = 11,['B'] = 12,['C'] = 13,['D'] = 14,['E'] = 15,
	['F'] = 16,['G'] = 17,['H'] = 18,['J'] = 19,['K'] = 20,
	['M'] = 21,['N'] = 22,['P'] = 23,['Q'] = 24,['R'] = 25,
	['S'] = 26,['T'] = 27,['V'] = 28,['W'] = 29,['X'] = 30,
	['Y'] = 31,['Z'] = 32,
	['a'] = 11,['b'] = 12,['c'] = 13,['d'] = 14,['e'] = 15,
	['f'] = 16,['g'] = 17,['h'] = 18,['j'] = 19,['k'] = 20,
	['m'] = 21,['n'] = 22,['p'] = 23,['q'] = 24,['r'] = 25,
	['s'] = 26,['t'] = 27,['v'] = 28,['w'] = 29,['x'] = 30,
	['y'] = 31,['z'] = 32,
	['I'] = 2,['i'] = 2,['L'] = 2,['l'] = 2,['O'] = 1,['o'] = 1,
	['*'] = 33,['~'] = 34,['$'] = 35,['='] = 36,['U'] = 37,['u'] = 37,
};

int
snowid_text_encode(int64 value, bool with_check, char *buf)
{
	char		reversed[SNOWID_TEXT_MAX_LEN];
	uint64		rest = (uint64) value;
	int			n = 0;
	int			len = 0;

	Assert(value >= 0);
	do
	{
		reversed[n++] = snowid_text_symbols[rest % SNOWID_TEXT_BASE];
		rest /= SNOWID_TEXT_BASE;
	} while (rest > 0);
	while (n > 0)
		buf[len++] = reversed[--n];
	if (with_check)
		buf[len++] = snowid_text_symbols[value % SNOWID_TEXT_CHECK_BASE];
	buf[len] = '\0';
	return len;
}

SnowidTextStatus
snowid_text_decode(const char *code, int len, bool with_check, int64 *value,
				   int *offset)
{
	int			last = len - 1;
	int			check = -1;
	int			values = 0;
	int64		result = 0;
	int			remainder = 0;	/* of the whole value, even past 2^63-1 */
	bool		overflow = false;

	/* The last symbol, which is the check symbol when there is one. */
	while (last >= 0 && code[last] == '-')
		last--;
	if (last < 0)
		return SNOWID_TEXT_EMPTY;

	for (int i = 0; i <= last; i++)
	{
		int			symbol;

		if (code[i] == '-')
			continue;
		symbol = snowid_text_reading[(unsigned char) code[i]] - 1;
		*offset = i;
		if (symbol < 0)
			return SNOWID_TEXT_BAD_SYMBOL;
		if (with_check && i == last)
		{
			check = symbol;
			break;
		}
		if (symbol >= SNOWID_TEXT_BASE)
			return with_check ? SNOWID_TEXT_CHECK_NOT_LAST :
				SNOWID_TEXT_CHECK_UNEXPECTED;

		values++;
		remainder = (remainder * SNOWID_TEXT_BASE + symbol) %
			SNOWID_TEXT_CHECK_BASE;
		if (overflow || result > (PG_INT64_MAX - symbol) / SNOWID_TEXT_BASE)
			overflow = true;
		else
			result = result * SNOWID_TEXT_BASE + symbol;
	}

	if (values == 0)
		return SNOWID_TEXT_NO_VALUE;
	/* A mistyped code is reported as such, even if it is also too large. */
	if (with_check && check != remainder)
	{
		*offset = last;
		return SNOWID_TEXT_CHECK_MISMATCH;
	}
	if (overflow)
		return SNOWID_TEXT_OUT_OF_RANGE;
	*value = result;
	return SNOWID_TEXT_OK;
}

Datum
snowid_to_text(PG_FUNCTION_ARGS)
{
	int64		value = PG_GETARG_INT64(0);
	bool		with_check = PG_GETARG_BOOL(1);
	char		buf[SNOWID_TEXT_MAX_LEN + 1];

	if (value < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot write negative value " INT64_FORMAT " as a snowid code",
						value),
				 errdetail("Only values 0 .. 9223372036854775807 have a Crockford base32 code.")));
	snowid_text_encode(value, with_check, buf);
	PG_RETURN_TEXT_P(cstring_to_text(buf));
}

/* Report what snowid_text_decode found wrong with code. */
static void
snowid_text_error(text *code, SnowidTextStatus status, int offset)
{
	const char *bytes = VARDATA_ANY(code);
	char	   *input = text_to_cstring(code);
	char	   *symbol = NULL;
	int			position = 0;

	/*
	 * The offending symbol, a whole character, and its position from 1.
	 * Every byte before it is ASCII, so bytes and characters count alike.
	 */
	if (status == SNOWID_TEXT_BAD_SYMBOL ||
		status == SNOWID_TEXT_CHECK_NOT_LAST ||
		status == SNOWID_TEXT_CHECK_UNEXPECTED ||
		status == SNOWID_TEXT_CHECK_MISMATCH)
	{
		position = offset + 1;
		symbol = pnstrdup(bytes + offset, pg_mblen(bytes + offset));
	}

	switch (status)
	{
		case SNOWID_TEXT_OUT_OF_RANGE:
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("snowid code \"%s\" is out of range for type bigint",
							input),
					 errdetail("The largest value is 9223372036854775807, \"7ZZZZZZZZZZZZ\".")));
			break;
		case SNOWID_TEXT_EMPTY:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid snowid code: \"%s\"", input),
					 errdetail("The code has no symbols.")));
			break;
		case SNOWID_TEXT_NO_VALUE:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid snowid code: \"%s\"", input),
					 errdetail("The code has a check symbol but no symbols before it.")));
			break;
		case SNOWID_TEXT_BAD_SYMBOL:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid snowid code: \"%s\"", input),
					 errdetail("\"%s\" at position %d is not a Crockford base32 symbol.",
							   symbol, position),
					 errhint("A code consists of 0-9, A-Z except U (I and L read as 1, O as 0) and hyphens, and its check symbol may also be *, ~, $, = or U.")));
			break;
		case SNOWID_TEXT_CHECK_NOT_LAST:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid snowid code: \"%s\"", input),
					 errdetail("\"%s\" at position %d is a check symbol, which may only stand last.",
							   symbol, position)));
			break;
		case SNOWID_TEXT_CHECK_UNEXPECTED:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid snowid code: \"%s\"", input),
					 errdetail("\"%s\" at position %d is a check symbol, but the code is read without one.",
							   symbol, position),
					 errhint("Read codes that end in a check symbol with with_check => true.")));
			break;
		case SNOWID_TEXT_CHECK_MISMATCH:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid snowid code: \"%s\"", input),
					 errdetail("The check symbol \"%s\" at position %d does not match the symbols before it.",
							   symbol, position),
					 errhint("Look for a mistyped or swapped symbol.")));
			break;
		case SNOWID_TEXT_OK:
			break;
	}
	elog(ERROR, "unexpected snowid code status %d", (int) status);
}

Datum
snowid_from_text(PG_FUNCTION_ARGS)
{
	text	   *code = PG_GETARG_TEXT_PP(0);
	bool		with_check = PG_GETARG_BOOL(1);
	int64		value = 0;
	int			offset = 0;
	SnowidTextStatus status;

	status = snowid_text_decode(VARDATA_ANY(code), VARSIZE_ANY_EXHDR(code),
								with_check, &value, &offset);
	if (status != SNOWID_TEXT_OK)
		snowid_text_error(code, status, offset);
	PG_RETURN_INT64(value);
}
