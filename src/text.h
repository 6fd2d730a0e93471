/*-------------------------------------------------------------------------
 *
 * text.h
 *	  The text form of snowids and ticket values: Crockford base32, with an
 *	  optional check symbol.
 *
 * A value 0 .. 2^63-1 is written most significant symbol first in the 32
 * symbols 0-9 A-Z without I, L, O and U, upper case, without padding (0 is
 * "0").  The check symbol is value % 37 written in the same 32 symbols
 * followed by * ~ $ = U (32 .. 36).
 *
 * Reading is tolerant where people err and strict where a mistake would go
 * unnoticed: case is ignored, I and L read as 1, O as 0, hyphens anywhere
 * are skipped and leading zeros are allowed; anything else that is not a
 * symbol is rejected, the check symbols * ~ $ = U only stand last and only
 * when a check symbol is expected, and a check symbol that does not match
 * the value is rejected.
 *
 * Nothing here touches fmgr, catalogs or GUCs: the functions report what
 * went wrong and where, and the SQL functions in text.c turn that into an
 * error.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_TEXT_H
#define SNOWID_TEXT_H

/* Longest code: 13 symbols for 2^63-1, plus the check symbol. */
#define SNOWID_TEXT_MAX_LEN		14

/* What snowid_text_decode found. */
typedef enum SnowidTextStatus
{
	SNOWID_TEXT_OK,
	SNOWID_TEXT_EMPTY,			/* no symbols at all (only hyphens) */
	SNOWID_TEXT_BAD_SYMBOL,		/* a byte that is no symbol, at *offset */
	SNOWID_TEXT_CHECK_NOT_LAST, /* a check-only symbol before the last */
	SNOWID_TEXT_CHECK_UNEXPECTED,	/* a check-only symbol, reading without
									 * a check */
	SNOWID_TEXT_NO_VALUE,		/* a check symbol and nothing before it */
	SNOWID_TEXT_CHECK_MISMATCH, /* the check symbol, at *offset, is wrong */
	SNOWID_TEXT_OUT_OF_RANGE	/* the value is above 2^63-1 */
} SnowidTextStatus;

/*
 * Write value (which must be non-negative) into buf, which must hold
 * SNOWID_TEXT_MAX_LEN + 1 bytes, and return the length of the code.
 */
extern int	snowid_text_encode(int64 value, bool with_check, char *buf);

/*
 * Read the len bytes at code.  On SNOWID_TEXT_OK *value is set; on
 * SNOWID_TEXT_BAD_SYMBOL, CHECK_NOT_LAST, CHECK_UNEXPECTED and
 * CHECK_MISMATCH *offset is the byte offset of the offending symbol (the
 * first byte of a character in any server encoding, as every byte before it
 * is ASCII).
 */
extern SnowidTextStatus snowid_text_decode(const char *code, int len,
										   bool with_check, int64 *value,
										   int *offset);

#endif							/* SNOWID_TEXT_H */
