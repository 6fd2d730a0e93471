/*-------------------------------------------------------------------------
 *
 * boot_record.h
 *	  The boot record (boot_record.c): what this server last wrote into
 *	  its state files, kept outside its data directory for as long as the
 *	  host runs, so that a data directory restored into itself is told
 *	  from the server in place.
 *
 * Nothing here touches shared memory, GUCs or the clock.  Each part has
 * one writer at a time, the one that writes the state file it shadows
 * (under that file's own lock); readers run in the postmaster at start.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_BOOT_RECORD_H
#define SNOWID_BOOT_RECORD_H

/* The parts, one small file each in the record's directory. */
#define SNOWID_BOOT_PART_HIGHWATER "highwater"	/* the bound's slot */
#define SNOWID_BOOT_PART_LEASE "lease"	/* "<seal> <seal or ->" */
#define SNOWID_BOOT_PART_POOLS "pools"	/* the pool file's change count */

/*
 * The record's directory, or NULL where this host keeps none (no /dev/shm,
 * or it could not be created); why it keeps none, in words, then.
 */
extern const char *snowid_boot_record_dir(const char **why);

/* Replace part with len bytes of buf; false if it failed (reported at elevel). */
extern bool snowid_boot_record_put(const char *part, const char *buf, int len,
								   int elevel);

/*
 * Read part into buf (size bytes, NUL-terminated); its length, or -1 if
 * there is none (no record, or the part was never written in this boot).
 */
extern int	snowid_boot_record_get(const char *part, char *buf, int size);

#endif							/* SNOWID_BOOT_RECORD_H */
