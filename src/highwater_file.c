/*-------------------------------------------------------------------------
 *
 * highwater_file.c
 *	  The high-water file, $PGDATA/snowid.highwater, in all its formats, and
 *	  the marker $PGDATA/snowid.issued: reading, writing, and the refusal
 *	  to start when the marker is there but the file is not.
 *
 * The bound itself, and when it is written, belong to highwater.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "access/xlog.h"
#include "access/xlogutils.h"
#include "boot_record.h"
#include "durable.h"
#include "guc.h"
#include "highwater_file.h"
#include "layout.h"
#include "lease.h"
#include "miscadmin.h"
#include "port/pg_crc32c.h"
#include "storage/fd.h"

#define SNOWID_HIGHWATER_FILE "snowid.highwater"
#define SNOWID_HIGHWATER_TMP "snowid.highwater.tmp"
/* the format of version 1.1's first release: one line, replaced by rename */
#define SNOWID_HIGHWATER_MAGIC_V1 "snowid-highwater-1"
/* the slots of version 1.1: a timestamp */
#define SNOWID_HIGHWATER_MAGIC_V2 "snowid-highwater-2"
/* the slots of version 1.2: an ID and its layout */
#define SNOWID_HIGHWATER_MAGIC "snowid-highwater-3"
/* one line written by hand: the highest ID issued, in the layout in force */
#define SNOWID_HIGHWATER_MAGIC_LAST_ID "snowid-last-id"
/* two slots of one sector each, so that a torn write spoils one at most */
#define SNOWID_HIGHWATER_SLOT 512
#define SNOWID_HIGHWATER_SIZE (2 * SNOWID_HIGHWATER_SLOT)

#define SNOWID_ISSUED_FILE "snowid.issued"
#define SNOWID_ISSUED_TMP "snowid.issued.tmp"
#define SNOWID_ISSUED_MAGIC "snowid-issued"

/* Are these values a layout snowid could have issued IDs under? */
static bool
snowid_layout_sane(const SnowidLayout *l)
{
	return l->node_bits >= 0 && l->node_bits <= 31 &&
		l->sequence_bits >= 0 && l->sequence_bits <= 31 &&
		l->timestamp_bits >= 1 &&
		l->node_bits + l->sequence_bits + l->timestamp_bits <= 63 &&
		l->tick_us >= 1 && IS_VALID_TIMESTAMP(l->epoch);
}

/* ---- the file ---- */

/*
 * The file holds two slots, each one line of text padded with zero bytes to
 * a sector:
 *
 *	 snowid-highwater-3 <generation> <bound> <node_id> <epoch> <tick_us>
 *		<node_bits> <sequence_bits> <timestamp_bits> <crc>
 *
 * (one line), where bound is an ID every issued ID lies below, epoch is in
 * microseconds since 2000-01-01 UTC and crc is the CRC-32C of the text
 * before it, in hex.  A write fills the slot of the next generation
 * (generation % 2) in place and syncs it; the bound it replaces is published
 * only after that, so if a crash tears the write, the other slot still holds
 * a bound nothing was issued beyond.  This costs one fdatasync per renewal
 * instead of the four fsyncs of writing a file aside and renaming it, which
 * is reserved for creating the file.  The newest valid slot wins.
 *
 * Also read, and replaced at the first write: the slots of version 1.1
 * ("snowid-highwater-2 <generation> <bound as a timestamp> <crc>"), the
 * one-line format of its first release ("snowid-highwater-1 <timestamp>"),
 * and the line to write by hand, "snowid-last-id <ID>": the highest ID this
 * server issued, read in the layout in force.  Both one-line formats mean
 * the layout in force.
 */

/* The text of a slot before its CRC, into text (128 bytes); its length. */
static int
snowid_highwater_slot_text(char *text, uint64 gen, const SnowidBound *b)
{
	if (!b->has_layout)
		return snprintf(text, 128, "%s " UINT64_FORMAT " " INT64_FORMAT,
						SNOWID_HIGHWATER_MAGIC_V2, gen, (int64) b->until);
	return snprintf(text, 128, "%s " UINT64_FORMAT " " UINT64_FORMAT " %d "
					INT64_FORMAT " " INT64_FORMAT " %d %d %d",
					SNOWID_HIGHWATER_MAGIC, gen, b->bound, b->node_id,
					(int64) b->layout.epoch, b->layout.tick_us,
					b->layout.node_bits, b->layout.sequence_bits,
					b->layout.timestamp_bits);
}

/* Format the slot of generation gen into slot (SNOWID_HIGHWATER_SLOT bytes). */
static void
snowid_highwater_format_slot(char *slot, uint64 gen, const SnowidBound *b)
{
	char		text[128];
	int			len;
	pg_crc32c	crc;

	len = snowid_highwater_slot_text(text, gen, b);
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, text, len);
	FIN_CRC32C(crc);
	memset(slot, 0, SNOWID_HIGHWATER_SLOT);
	snprintf(slot, SNOWID_HIGHWATER_SLOT, "%s %08x\n", text, (unsigned int) crc);
}

/* Parse one slot; false if it is empty, torn or damaged. */
static bool
snowid_highwater_parse_slot(const char *slot, uint64 *gen, SnowidBound *b)
{
	char		line[SNOWID_HIGHWATER_SLOT + 1];
	char		expect[SNOWID_HIGHWATER_SLOT];
	unsigned long long g;
	unsigned long long bound;
	long long	epoch;
	long long	tick_us;
	long long	u;
	int			node_id;
	unsigned int crc;

	memcpy(line, slot, SNOWID_HIGHWATER_SLOT);
	line[SNOWID_HIGHWATER_SLOT] = '\0';
	memset(b, 0, sizeof(*b));
	if (sscanf(line, SNOWID_HIGHWATER_MAGIC " %llu %llu %d %lld %lld %d %d %d %x",
			   &g, &bound, &node_id, &epoch, &tick_us, &b->layout.node_bits,
			   &b->layout.sequence_bits, &b->layout.timestamp_bits, &crc) == 9)
	{
		b->has_layout = true;
		b->bound = (uint64) bound;
		b->node_id = node_id;
		b->layout.epoch = (TimestampTz) epoch;
		b->layout.tick_us = (int64) tick_us;
		b->layout.id_bits = b->layout.node_bits + b->layout.sequence_bits +
			b->layout.timestamp_bits;
		if (!snowid_layout_sane(&b->layout) || node_id < -1 ||
			b->bound > (UINT64CONST(1) << 63))
			return false;
	}
	else if (sscanf(line, SNOWID_HIGHWATER_MAGIC_V2 " %llu %lld %x", &g, &u, &crc) == 3)
	{
		b->until = (TimestampTz) u;
		if (!IS_VALID_TIMESTAMP(b->until))
			return false;
	}
	else
		return false;
	snowid_highwater_format_slot(expect, (uint64) g, b);
	if (memcmp(expect, slot, SNOWID_HIGHWATER_SLOT) != 0)
		return false;			/* CRC, spelling or padding do not match */
	*gen = (uint64) g;
	return true;
}

/*
 * Parse text as a decimal integer: digits only (a minus sign too if
 * negative_ok), then nothing but white space.  False if it is not one, or
 * does not fit in an int64 (*overflow then says so).  sscanf's %lld would
 * saturate instead, turning any long number into PG_INT64_MAX.  Reports
 * nothing: it runs in the postmaster.
 */
static bool
snowid_parse_int64_strict(const char *text, bool negative_ok, int64 *value,
						  bool *overflow)
{
	const char *digits = text;
	char	   *end;
	long long	v;

	*overflow = false;
	if (negative_ok && *digits == '-')
		digits++;
	if (!isdigit((unsigned char) *digits))
		return false;
	errno = 0;
	v = strtoll(text, &end, 10);
	if (errno == ERANGE)
	{
		*overflow = true;
		return false;
	}
	if (errno != 0 || end == text)
		return false;
	while (isspace((unsigned char) *end))
		end++;
	if (*end != '\0')
		return false;
	*value = (int64) v;
	return true;
}

/*
 * If line is magic followed by white space, what follows that; else NULL.
 */
static const char *
snowid_after_magic(const char *line, const char *magic)
{
	size_t		len = strlen(magic);

	if (strncmp(line, magic, len) != 0 || !isspace((unsigned char) line[len]))
		return NULL;
	line += len;
	while (isspace((unsigned char) *line))
		line++;
	return line;
}

/*
 * Parse a file of one line (formats -1 and last-id); false if it is not one.
 * A last-id line whose number is not an ID of the layout in force sets
 * *detail (if detail is not NULL) to what is wrong with it.
 */
static bool
snowid_highwater_parse_line(const char *buf, int len, SnowidBound *b,
							char **detail)
{
	char		line[SNOWID_HIGHWATER_SIZE];
	const SnowidLayout *layout = &snowid_active_layout;
	int64		value;
	bool		overflow;
	const char *text;

	if (len >= (int) SNOWID_HIGHWATER_SIZE)
		return false;
	memcpy(line, buf, len);
	line[len] = '\0';
	memset(b, 0, sizeof(*b));
	if ((text = snowid_after_magic(line, SNOWID_HIGHWATER_MAGIC_V1)) != NULL)
	{
		if (!snowid_parse_int64_strict(text, true, &value, &overflow))
			return false;
		b->until = (TimestampTz) value;
		return IS_VALID_TIMESTAMP(b->until);
	}
	if ((text = snowid_after_magic(line, SNOWID_HIGHWATER_MAGIC_LAST_ID)) == NULL)
		return false;
	if (!snowid_parse_int64_strict(text, true, &value, &overflow))
	{
		if (detail != NULL)
			*detail = overflow ?
				psprintf("The line \"%s <ID>\" holds a number too large for a bigint, so it is no ID.",
						 SNOWID_HIGHWATER_MAGIC_LAST_ID) :
				psprintf("The line \"%s <ID>\" must hold one ID as a decimal number, and nothing after it.",
						 SNOWID_HIGHWATER_MAGIC_LAST_ID);
		return false;
	}
	if (!snowid_id_in_layout(layout, value))
	{
		if (detail != NULL)
			*detail = psprintf("The line \"%s <ID>\" gives " INT64_FORMAT ", which is not an ID of the layout in force: its IDs lie from 0 to " INT64_FORMAT " (snowid.id_bits = %d).",
							   SNOWID_HIGHWATER_MAGIC_LAST_ID, value,
							   (int64) ((UINT64CONST(1) << layout->id_bits) - 1),
							   layout->id_bits);
		return false;
	}
	b->has_layout = true;
	b->bound = (uint64) value + 1;
	b->layout = *layout;
	b->node_id = snowid_node_in_force();
	return true;
}

/*
 * Parse the file's contents: true and the newest bound and its generation
 * (0 for a one-line file), or false if nothing valid is in it (and, for a
 * hand-written line that is wrong, *detail if detail is not NULL).
 */
static bool
snowid_highwater_parse(const char *buf, int len, uint64 *gen, SnowidBound *b,
					   char **detail)
{
	bool		found = false;

	if (len != SNOWID_HIGHWATER_SIZE)
	{
		*gen = 0;
		return snowid_highwater_parse_line(buf, len, b, detail);
	}
	for (int i = 0; i < 2; i++)
	{
		uint64		g;
		SnowidBound slot;

		if (snowid_highwater_parse_slot(buf + i * SNOWID_HIGHWATER_SLOT, &g, &slot) &&
			(!found || g > *gen))
		{
			*gen = g;
			*b = slot;
			found = true;
		}
	}
	return found;
}

/*
 * Read up to SNOWID_HIGHWATER_SIZE + 1 bytes of the open file fd into buf;
 * the length read, or -1 with errno set.
 */
static int
snowid_highwater_read_fd(int fd, char *buf)
{
	int			total = 0;

	for (;;)
	{
		ssize_t		got = pg_pread(fd, buf + total,
								   SNOWID_HIGHWATER_SIZE + 1 - total, total);

		if (got < 0)
			return -1;
		if (got == 0 || (total += got) > (int) SNOWID_HIGHWATER_SIZE)
			return total;
	}
}

#define SNOWID_HAND_HINT \
	"If you know the highest ID this server issued, replace the file with the line \"" \
	SNOWID_HIGHWATER_MAGIC_LAST_ID " <that ID>\" (read in the layout now configured); otherwise restore the file from a backup."

/*
 * Read the persisted bound into b; false if there is no file.  A file that
 * exists but cannot be read is fatal: starting from zero could reissue IDs.
 */
bool
snowid_highwater_read(SnowidBound *b)
{
	char		buf[SNOWID_HIGHWATER_SIZE + 1];
	int			fd;
	int			len;
	uint64		gen;
	char	   *detail = NULL;

	fd = OpenTransientFile(SNOWID_HIGHWATER_FILE, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		if (errno == ENOENT)
			return false;
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", SNOWID_HIGHWATER_FILE)));
	}
	len = snowid_highwater_read_fd(fd, buf);
	if (len < 0)
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not read file \"%s\": %m", SNOWID_HIGHWATER_FILE)));
	CloseTransientFile(fd);
	if (!snowid_highwater_parse(buf, len, &gen, b, &detail))
		ereport(FATAL,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("snowid high-water file \"%s\" is corrupt", SNOWID_HIGHWATER_FILE),
				 detail != NULL ?
				 errdetail("%s snowid cannot know which IDs this server issued before, so it does not start.", detail) :
				 errdetail("snowid cannot know which IDs this server issued before, so it does not start."),
				 errhint(SNOWID_HAND_HINT)));
	return true;
}

/*
 * Create the marker that says this data directory has issued IDs, unless it
 * exists.  It holds the system identifier, to say in messages which cluster
 * wrote it (a marker copied along from another cluster, say after
 * pg_upgrade, still counts).
 */
bool
snowid_issued_create(int elevel)
{
	char		line[64];
	int			len;

	if (access(SNOWID_ISSUED_FILE, F_OK) == 0)
		return true;
	len = snprintf(line, sizeof(line), "%s " UINT64_FORMAT "\n",
				   SNOWID_ISSUED_MAGIC, GetSystemIdentifier());
	return snowid_write_durably(SNOWID_ISSUED_FILE, SNOWID_ISSUED_TMP, line, len,
								elevel);
}

/*
 * The boot record's shadow of the file (boot_record.c): the slot just
 * written, once the file holds it.  A file restored into its directory
 * then holds less than its shadow says.
 */
static bool
snowid_highwater_shadow(bool written, const char *slot, int elevel)
{
	/*
	 * A renewal whose shadow fails fails too (ERROR, before the bound is
	 * published); replay (a standby issues nothing) only warns.
	 */
	if (written)
		(void) snowid_boot_record_put(SNOWID_BOOT_PART_HIGHWATER, slot,
									  SNOWID_HIGHWATER_SLOT,
									  elevel >= ERROR ? (InRecovery ? WARNING : ERROR) :
									  elevel);
	return written;
}

/*
 * The bound the boot record holds: the last this server wrote into its
 * file in this boot of the host; false if there is none (or it is damaged:
 * no proof, then, either way).
 */
bool
snowid_highwater_record_read(SnowidBound *b)
{
	char		buf[SNOWID_HIGHWATER_SLOT + 1];
	uint64		gen;

	if (snowid_boot_record_get(SNOWID_BOOT_PART_HIGHWATER, buf, sizeof(buf)) !=
		SNOWID_HIGHWATER_SLOT)
		return false;
	return snowid_highwater_parse_slot(buf, &gen, b);
}

/* Create the file with one slot; the marker first. */
static bool
snowid_highwater_create(uint64 gen, const SnowidBound *b, int elevel)
{
	char		buf[SNOWID_HIGHWATER_SIZE];
	char	   *slot = buf + (gen % 2) * SNOWID_HIGHWATER_SLOT;

	if (!snowid_issued_create(elevel))
		return false;
	memset(buf, 0, sizeof(buf));
	snowid_highwater_format_slot(slot, gen, b);
	return snowid_highwater_shadow(snowid_write_durably(SNOWID_HIGHWATER_FILE,
														SNOWID_HIGHWATER_TMP,
														buf, sizeof(buf), elevel),
								   slot, elevel);
}

/*
 * Make the bound durable in the file: in place, in the slot of the next
 * generation.  Returns false if it could not, having reported the failure at
 * elevel.
 */
bool
snowid_highwater_write(const SnowidBound *b, int elevel)
{
	char		buf[SNOWID_HIGHWATER_SIZE + 1];
	int			fd;
	int			len;
	uint64		gen = 0;
	SnowidBound old;
	off_t		offset;

	fd = OpenTransientFile(SNOWID_HIGHWATER_FILE, O_RDWR | PG_BINARY);
	if (fd < 0)
	{
		if (errno == ENOENT)
			return snowid_highwater_create(1, b, elevel);
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", SNOWID_HIGHWATER_FILE)));
		return false;
	}
	len = snowid_highwater_read_fd(fd, buf);
	if (len != SNOWID_HIGHWATER_SIZE || !snowid_highwater_parse(buf, len, &gen, &old, NULL))
	{
		/* a one-line format, or a file damaged since start: replace it */
		CloseTransientFile(fd);
		return snowid_highwater_create(gen + 1, b, elevel);
	}
	gen++;
	snowid_highwater_format_slot(buf, gen, b);
	offset = (off_t) (gen % 2) * SNOWID_HIGHWATER_SLOT;
	return snowid_highwater_shadow(snowid_highwater_put(fd, SNOWID_HIGHWATER_FILE,
														buf, SNOWID_HIGHWATER_SLOT,
														offset, elevel),
								   buf, elevel);
}

/*
 * No high-water file: a fresh data directory, unless the marker says that
 * IDs were issued here, which makes it a refusal to start.
 */
void
snowid_highwater_missing(void)
{
	char		buf[64];
	int			fd;
	int			len;
	unsigned long long sysid = 0;

	fd = OpenTransientFile(SNOWID_ISSUED_FILE, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		if (errno == ENOENT)
			return;
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", SNOWID_ISSUED_FILE)));
	}
	len = read(fd, buf, sizeof(buf) - 1);
	CloseTransientFile(fd);
	buf[Max(len, 0)] = '\0';
	(void) sscanf(buf, SNOWID_ISSUED_MAGIC " %llu", &sysid);
	ereport(FATAL,
			(errcode(ERRCODE_UNDEFINED_FILE),
			 errmsg("snowid high-water file \"%s\" is missing", SNOWID_HIGHWATER_FILE),
			 errdetail("The file \"%s\" shows that this data directory (system identifier %llu) has issued snowids, but the file that records the highest of them is gone; starting from the clock could issue some of them again.",
					   SNOWID_ISSUED_FILE, sysid),
			 errhint(SNOWID_HAND_HINT)));
}
