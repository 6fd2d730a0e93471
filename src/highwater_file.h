/*-------------------------------------------------------------------------
 *
 * highwater_file.h
 *	  The high-water file and the issued marker (highwater_file.c), for
 *	  highwater.c alone.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_HIGHWATER_FILE_H
#define SNOWID_HIGHWATER_FILE_H

#include "layout.h"

/* What the file or a WAL record says. */
typedef struct SnowidBound
{
	bool		has_layout;		/* false: formats of 1.1, a bare timestamp */
	TimestampTz until;			/* !has_layout: no ID of a tick from it on */
	uint64		bound;			/* has_layout: every ID issued is below it */
	SnowidLayout layout;		/* has_layout: the layout it was issued under */
	int32		node_id;		/* has_layout: and the node ID (-1: unset) */
} SnowidBound;

/* The newest valid bound in the file; false if there is no file. */
extern bool snowid_highwater_read(SnowidBound *b);
/* The bound the boot record holds for this directory; false if none. */
extern bool snowid_highwater_record_read(SnowidBound *b);
/* Persist b in the file (created if need be); false if that failed at elevel. */
extern bool snowid_highwater_write(const SnowidBound *b, int elevel);
/* Create the marker snowid.issued unless it exists. */
extern bool snowid_issued_create(int elevel);
/* No high-water file: return, unless the marker says IDs were issued. */
extern void snowid_highwater_missing(void);

#endif							/* SNOWID_HIGHWATER_FILE_H */
