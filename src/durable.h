/*-------------------------------------------------------------------------
 *
 * durable.h
 *	  Crash-safe writes of snowid's small files (durable.c).
 *
 * Nothing here touches shared memory, GUCs or the clock.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_DURABLE_H
#define SNOWID_DURABLE_H

/*
 * Write len bytes at offset into the open file fd (named path), sync its
 * data and close it; false if a step failed, reported at elevel.
 */
extern bool snowid_highwater_put(int fd, const char *path, const char *buf,
								 int len, off_t offset, int elevel);

/* Write len bytes as the whole of file path, aside (tmp) and renamed. */
extern bool snowid_write_durably(const char *path, const char *tmp,
								 const char *buf, int len, int elevel);

#endif							/* SNOWID_DURABLE_H */
