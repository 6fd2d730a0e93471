/*-------------------------------------------------------------------------
 *
 * boot_record.c
 *	  The boot record: a shadow of snowid's state files kept outside the
 *	  data directory, in memory, for as long as the host runs.
 *
 * Whatever is inside a data directory can be brought back by a restore:
 * an older copy put back into the same directory (rsync --delete, rm -rf
 * and cp -a, a filesystem snapshot rolled back) keeps the directory's
 * device and inode, and in the same boot of the host nothing in it tells
 * that it went back in time.  Its high-water file then holds an older
 * bound, its lease file a lease the server may have given up since, its
 * pool file ranges whose values were handed out after the copy was taken.
 *
 * So every write of one of those files is followed by a write of its
 * shadow here, a "part" of the record: the high-water file's newest slot,
 * the lease file's seal (a random word written into the lease file at each
 * write), the pool file's change count.  A start compares (highwater.c,
 * lease_file.c, pool_store.c): a file behind its part was restored, and
 * the start acts as a copy would (continue above the record's bound, wait
 * for the registry before resuming a lease, give up the pool ranges).
 *
 * The record lives in /dev/shm (a tmpfs: emptied at every boot, as the
 * proof "same boot" wants; PostgreSQL's own dynamic shared memory lives
 * there too), in a directory named by the cluster's system identifier and
 * the data directory's device and inode (a directory emptied and given to
 * a new cluster, or a removed one whose inode is reused, finds no record),
 * mode 0700, which must be a directory of this server's OS user.
 * Where there is none (another system, a container without /dev/shm, a
 * directory of another user), a start can prove nothing: it waits for the
 * registry, as after a reboot.  Parts are written aside and renamed, not
 * synced: they live in memory, and a crash of the host ends them anyway.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/xlog.h"
#include "boot_record.h"
#include "miscadmin.h"
#include "storage/fd.h"

#define SNOWID_BOOT_RECORD_ROOT "/dev/shm"

static bool record_known = false;
static char record_dir[MAXPGPATH];
static const char *record_why = NULL;	/* NULL: the record is usable */

/*
 * Find (and create, the first time in this boot) the record's directory.
 * The postmaster does this at its first start; its children inherit it.
 */
const char *
snowid_boot_record_dir(const char **why)
{
	struct stat st;

	if (!record_known)
	{
		record_known = true;
		record_why = NULL;
		if (stat(DataDir, &st) != 0)
			record_why = "the data directory could not be examined";
		else
		{
			snprintf(record_dir, sizeof(record_dir), "%s/snowid." UINT64_FORMAT ".%llx.%llx",
					 SNOWID_BOOT_RECORD_ROOT, GetSystemIdentifier(),
					 (unsigned long long) st.st_dev,
					 (unsigned long long) st.st_ino);
			if (mkdir(record_dir, S_IRWXU) != 0 && errno != EEXIST)
				record_why = "this host has no " SNOWID_BOOT_RECORD_ROOT " to keep it in";
			else if (lstat(record_dir, &st) != 0 || !S_ISDIR(st.st_mode))
				record_why = "its place in " SNOWID_BOOT_RECORD_ROOT " is not a directory";
			else if (st.st_uid != geteuid() ||
					 (st.st_mode & (S_IRWXG | S_IRWXO)) != 0)
				record_why = "its directory in " SNOWID_BOOT_RECORD_ROOT " belongs to another user or is open to others";
		}
		if (record_why != NULL)
			ereport(LOG,
					(errmsg("snowid keeps no boot record for this data directory: %s",
							record_why),
					 errdetail("Without one, a start cannot tell this server in place from a copy restored into its directory, so it waits for the registry before it resumes a lease or its pool ranges.")));
	}
	if (why != NULL)
		*why = record_why;
	return record_why == NULL ? record_dir : NULL;
}

bool
snowid_boot_record_put(const char *part, const char *buf, int len)
{
	const char *dir = snowid_boot_record_dir(NULL);
	char		path[MAXPGPATH];
	char		tmp[MAXPGPATH];
	int			fd;
	bool		ok;

	if (dir == NULL)
		return false;
	snprintf(path, sizeof(path), "%s/%s", dir, part);
	snprintf(tmp, sizeof(tmp), "%s/%s.%d.tmp", dir, part, (int) getpid());
	fd = OpenTransientFilePerm(tmp, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY,
							   S_IRUSR | S_IWUSR);
	if (fd < 0)
	{
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", tmp)));
		return false;
	}
	errno = 0;
	ok = write(fd, buf, len) == len;
	if (!ok && errno == 0)
		errno = ENOSPC;
	if (!ok)
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", tmp)));
	if (CloseTransientFile(fd) != 0 && ok)
	{
		ok = false;
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not close file \"%s\": %m", tmp)));
	}
	if (ok && rename(tmp, path) != 0)
	{
		ok = false;
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not rename file \"%s\" to \"%s\": %m", tmp, path)));
	}
	if (!ok)
		(void) unlink(tmp);
	return ok;
}

int
snowid_boot_record_get(const char *part, char *buf, int size)
{
	const char *dir = snowid_boot_record_dir(NULL);
	char		path[MAXPGPATH];
	int			fd;
	int			len;

	if (dir == NULL)
		return -1;
	snprintf(path, sizeof(path), "%s/%s", dir, part);
	fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		if (errno != ENOENT)
			ereport(LOG,
					(errcode_for_file_access(),
					 errmsg("could not open file \"%s\": %m", path)));
		return -1;
	}
	len = read(fd, buf, size - 1);
	CloseTransientFile(fd);
	if (len < 0)
		return -1;
	buf[len] = '\0';
	return len;
}
