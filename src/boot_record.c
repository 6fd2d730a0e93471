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
 * the data directory's path (a directory made anew at the same path is a
 * restore too; a new cluster there has another identifier), mode 0700,
 * which must be a directory of this server's OS user.
 * Where there is none (another system, a container without /dev/shm, a
 * directory of another user), a start can prove nothing: it waits for the
 * registry, as after a reboot (a WARNING at start says so).  Parts are
 * written aside and renamed, not synced: they live in memory, and a crash
 * of the host ends them anyway.  A part that cannot be written fails the
 * write of the high-water bound or pools it shadows (see put, below).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <limits.h>
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
 * The record's name: the system identifier and the data directory's path,
 * every character but letters, digits, '.' and '-' written as '_' (a
 * restore that makes the directory anew, rm -rf $PGDATA and cp -a, keeps
 * its path; a new cluster in it has another identifier).
 */
static void
snowid_boot_record_name(void)
{
	char		path[PATH_MAX];		/* realpath() wants this much */
	char	   *p;
	int			len;

	if (realpath(DataDir, path) == NULL)
		strlcpy(path, DataDir, sizeof(path));
	for (p = path; *p; p++)
		if (!isalnum((unsigned char) *p) && *p != '.' && *p != '-')
			*p = '_';
	len = snprintf(record_dir, sizeof(record_dir), "%s/snowid." UINT64_FORMAT ".",
				   SNOWID_BOOT_RECORD_ROOT, GetSystemIdentifier());
	/* a name of at most NAME_MAX (255) bytes: the path's end */
	p = path + Max((int) strlen(path) - (255 - (len - (int) strlen(SNOWID_BOOT_RECORD_ROOT) - 1)), 0);
	strlcat(record_dir, p, sizeof(record_dir));
}

/* Create the directory if need be and check it; NULL if usable, else why. */
static const char *
snowid_boot_record_check(int *err)
{
	struct stat st;

	*err = 0;
	if (mkdir(record_dir, S_IRWXU) != 0 && errno != EEXIST)
	{
		*err = errno;
		return "it could not be created";
	}
	if (lstat(record_dir, &st) != 0)
	{
		*err = errno;
		return "it could not be examined";
	}
	if (!S_ISDIR(st.st_mode))
		return "something that is not a directory has its name";
	if (st.st_uid != geteuid())
		return "another user owns a directory of its name";
	if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0)
		return "its directory is open to other users";
	return NULL;
}

/*
 * Find (and create, the first time in this boot) the record's directory.
 * The postmaster does this at its first start; its children inherit it.
 */
const char *
snowid_boot_record_dir(const char **why)
{
	if (!record_known)
	{
		int			err;

		record_known = true;
		snowid_boot_record_name();
		record_why = snowid_boot_record_check(&err);
		if (record_why != NULL)
		{
			errno = err;
			ereport(WARNING,
					(errmsg("snowid keeps no boot record for this data directory: %s",
							record_why),
					 err != 0 ?
					 errdetail("The boot record is \"%s\" (%m). Without one, a start cannot tell this server in place from an older copy restored into its directory: members wait for the registry at every start, and a server without a registry is not protected from such a restore.",
							   record_dir) :
					 errdetail("The boot record is \"%s\". Without one, a start cannot tell this server in place from an older copy restored into its directory: members wait for the registry at every start, and a server without a registry is not protected from such a restore.",
							   record_dir),
					 errhint("Remove \"%s\" (as root if another user made it) and restart, or make " SNOWID_BOOT_RECORD_ROOT " writable for this server's user.",
							 record_dir)));
		}
	}
	if (why != NULL)
		*why = record_why;
	return record_why == NULL ? record_dir : NULL;
}

/* Write part aside and rename it into place; errno set when false. */
static bool
snowid_boot_record_write(const char *part, const char *buf, int len)
{
	char		path[MAXPGPATH];
	char		tmp[MAXPGPATH];
	int			fd;
	bool		ok;
	int			save_errno;

	snprintf(path, sizeof(path), "%s/%s", record_dir, part);
	snprintf(tmp, sizeof(tmp), "%s/%s.%d.tmp", record_dir, part, (int) getpid());
	fd = OpenTransientFilePerm(tmp, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY,
							   S_IRUSR | S_IWUSR);
	if (fd < 0)
		return false;
	errno = 0;
	ok = write(fd, buf, len) == len;
	if (!ok && errno == 0)
		errno = ENOSPC;
	save_errno = errno;
	if (CloseTransientFile(fd) != 0 && ok)
	{
		ok = false;
		save_errno = errno;
	}
	if (ok && rename(tmp, path) != 0)
	{
		ok = false;
		save_errno = errno;
	}
	if (!ok)
		(void) unlink(tmp);
	errno = save_errno;
	return ok;
}

/*
 * Replace part with len bytes of buf.  A failure is reported at elevel
 * (false returned below ERROR): a writer that goes on after one leaves
 * what it then hands out unknown to the record, so the writers of the
 * high-water bound and of the pools fail instead (ERROR), before they
 * publish what the record does not hold.  A directory removed meanwhile
 * (a clean-up of /dev/shm) is made again.
 */
bool
snowid_boot_record_put(const char *part, const char *buf, int len, int elevel)
{
	const char *why;

	if (snowid_boot_record_dir(&why) == NULL)
	{
		/* no record at all: nothing to keep current, said at start */
		return false;
	}
	if (snowid_boot_record_write(part, buf, len))
		return true;
	if (errno == ENOENT)
	{
		int			err;

		why = snowid_boot_record_check(&err);
		if (why == NULL && snowid_boot_record_write(part, buf, len))
			return true;
		if (why != NULL)
			errno = err != 0 ? err : EEXIST;
	}
	ereport(elevel,
			(errcode_for_file_access(),
			 errmsg("could not write snowid's boot record \"%s/%s\": %m",
					record_dir, part),
			 errdetail("Without it, an older copy of this data directory restored into it would not be recognised, and would hand out again what is handed out now."),
			 errhint("Free space in " SNOWID_BOOT_RECORD_ROOT ", or make the directory writable for this server's user.")));
	return false;
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
