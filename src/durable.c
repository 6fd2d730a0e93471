/*-------------------------------------------------------------------------
 *
 * durable.c
 *	  Writing a small file so that it survives a crash: the high-water
 *	  file, the lease file and the pool file all go through here.
 *
 * A whole file is written aside, synced and renamed into place
 * (snowid_write_durably); a slot of a file that is rewritten in place is
 * written at its offset and synced (snowid_highwater_put).  Failures are
 * reported at the caller's level, a failed sync at data_sync_elevel as
 * PostgreSQL does.
 *
 * Nothing here touches shared memory, GUCs or the clock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "durable.h"
#include "storage/fd.h"

/*
 * Write len bytes at offset into the open file fd (named path), sync its
 * data and close it.  Returns false if any step failed, having reported it
 * at elevel (a failed sync at data_sync_elevel, as PostgreSQL does).
 */
bool
snowid_highwater_put(int fd, const char *path, const char *buf, int len,
					 off_t offset, int elevel)
{
	errno = 0;
	if (pg_pwrite(fd, buf, len, offset) != len)
	{
		if (errno == 0)
			errno = ENOSPC;
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", path)));
		CloseTransientFile(fd);
		return false;
	}
	if (pg_fdatasync(fd) != 0)
	{
		ereport(elevel == ERROR ? data_sync_elevel(ERROR) : elevel,
				(errcode_for_file_access(),
				 errmsg("could not fdatasync file \"%s\": %m", path)));
		CloseTransientFile(fd);
		return false;
	}
	if (CloseTransientFile(fd) != 0)
	{
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not close file \"%s\": %m", path)));
		return false;
	}
	return true;
}

/* Write len bytes as the whole of file path, aside and renamed into place. */
bool
snowid_write_durably(const char *path, const char *tmp, const char *buf,
					 int len, int elevel)
{
	int			fd;

	fd = OpenTransientFile(tmp, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
	if (fd < 0)
	{
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", tmp)));
		return false;
	}
	if (!snowid_highwater_put(fd, tmp, buf, len, 0, elevel))
		return false;
	return durable_rename(tmp, path, elevel) == 0;
}
