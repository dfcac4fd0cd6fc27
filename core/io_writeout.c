/*
 * io_writeout.c - one cache flush for two files.
 *
 * A device's cache flush (what every fdatasync ends with) makes durable
 * every write the device had completed before it, whichever file it
 * belonged to.  So a small overwrite that was written out and waited for
 * (sync_file_range) becomes durable with the next fdatasync of any file on
 * the same file system: the fence on the database's page 1 rides on the
 * log's commit sync instead of costing a sync of its own (protect.c).
 *
 * That holds only where the write needs nothing but its own data blocks
 * to be found after a crash, and the two files share one device: an
 * overwrite in place of blocks that are allocated and written.  So the
 * answer is yes only when
 *   - both files are on one device (not a database bind-mounted alone,
 *     its log beside it elsewhere; not an xfs realtime file);
 *   - the file system overwrites in place and journals metadata only:
 *     ext4 (neither mounted data=journal nor the file's +j attribute, which
 *     send data through the journal) or xfs.  Not btrfs, f2fs, nilfs, zfs
 *     (copy on write or log-structured: an overwrite is an allocation),
 *     nor network file systems;
 *   - FIEMAP shows the range inside one extent that is allocated, written,
 *     not delayed, not shared (a reflinked block is copied on write), not
 *     inline, not packed with others.
 * Anything else answers EOPNOTSUPP, and the caller syncs the file itself.
 * The checks cost a few system calls once per epoch of the log, against
 * the sync they save.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "io_writeout.h"

/* The extent flags that say the data is not simply in place. */
#define NOT_IN_PLACE (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_ENCODED | \
		      FIEMAP_EXTENT_NOT_ALIGNED | FIEMAP_EXTENT_DATA_INLINE |                   \
		      FIEMAP_EXTENT_DATA_TAIL | FIEMAP_EXTENT_UNWRITTEN | FIEMAP_EXTENT_SHARED)

/* Reads the small text file path (procfs, sysfs) into buf, NUL-ended:
 * its length, or -1. */
static long read_small(const char *path, char *buf, size_t cap)
{
	size_t len = 0;
	long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	for (long r = 1; r != 0 && len + 1 < cap;) {
		r = syscall(SYS_read, (int)fd, buf + len, cap - 1 - len);
		if (r < 0 && errno != EINTR) {
			syscall(SYS_close, (int)fd);
			return -1;
		}
		len += r > 0 ? (size_t)r : 0;
	}
	syscall(SYS_close, (int)fd);
	buf[len] = '\0';
	return (long)len;
}

int alex_io_opts_journal(const char *opts)
{
	for (const char *p = opts; (p = strstr(p, "data=journal")); p += 12)
		if ((p == opts || p[-1] == '\n') && (p[12] == '\n' || !p[12]))
			return 1;
	return 0;
}

/* The ext4 file system on dev journals data, from its own options file
 * (/proc/fs/ext4/NAME/options lists every option, defaults included, one
 * a line; NAME is the block device's, from /sys/dev/block/MAJ:MIN): 1, 0,
 * or -1 when either cannot be read.  A few small reads, where the mount
 * table costs tens of microseconds to make (about 60 us per process here,
 * a container's many mounts) -- and a short process asks once.  Since
 * Linux 5.x this file names the data mode even when it is the superblock's
 * default (tune2fs -o journal_data), which the mount table does not. */
static int ext4_options_journal(dev_t dev)
{
	char link[64], target[256], path[320], opts[4096];

	snprintf(link, sizeof link, "/sys/dev/block/%u:%u", major(dev), minor(dev));
	long n = syscall(SYS_readlinkat, AT_FDCWD, link, target, sizeof target - 1);
	if (n <= 0 || n >= (long)sizeof target - 1)
		return -1;
	target[n] = '\0';
	const char *name = strrchr(target, '/');
	name = name ? name + 1 : target;
	if (!*name || snprintf(path, sizeof path, "/proc/fs/ext4/%s/options", name) >= (int)sizeof path)
		return -1;
	long len = read_small(path, opts, sizeof opts);
	if (len <= 0 || len >= (long)sizeof opts - 1) /* empty, or cut short: unsure */
		return -1;
	return alex_io_opts_journal(opts);
}

/* The ext4 mount of device dev sends file data through its journal
 * (data=journal): from the file system's options file, or failing that
 * /proc/self/mountinfo; 1 too when neither can be read.  Asked once per
 * epoch of a log, so not cached. */
static int ext4_journals_data(dev_t dev)
{
	char want[32], *buf = NULL;
	size_t len = 0, cap = 0;
	int opt = ext4_options_journal(dev);

	if (opt >= 0)
		return opt;
	long fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	for (long r = 1; r != 0;) {
		if (len + 1 >= cap) {
			char *nb = cap < (1u << 20) ? realloc(buf, cap ? 2 * cap : 16384) : NULL;
			if (!nb) {
				len = 0; /* too large or no memory: say journalled */
				break;
			}
			buf = nb;
			cap = cap ? 2 * cap : 16384;
		}
		r = syscall(SYS_read, (int)fd, buf + len, cap - 1 - len);
		if (r < 0 && errno != EINTR) {
			len = 0;
			break;
		}
		len += r > 0 ? (size_t)r : 0;
	}
	syscall(SYS_close, (int)fd);
	if (!len) {
		free(buf);
		return 1;
	}
	buf[len] = '\0';
	snprintf(want, sizeof want, " %u:%u ", major(dev), minor(dev));
	int journals = 1, seen = 0;
	/* "id parent major:minor root mountpoint options ... - type source
	 * super-options": the device is the third field */
	for (char *line = buf, *end; *line; line = end + 1) {
		if (!(end = strchr(line, '\n')))
			break;
		*end = '\0';
		char *at = strstr(line, want), *sep = strstr(line, " - ");
		if (!at || !sep || at > sep)
			continue;
		seen = 1;
		journals = strstr(sep, "data=journal") != NULL;
		break;
	}
	free(buf);
	return seen ? journals : 1;
}

/* XFS keeps a realtime file's data on another device than the rest. */
static int xfs_realtime(int fd)
{
	struct fsxattr x;

	return syscall(SYS_ioctl, fd, FS_IOC_FSGETXATTR, &x) < 0 ||
	       (x.fsx_xflags & FS_XFLAG_REALTIME);
}

/* May a written-out overwrite of [off, off + n) of fd ride on the next
 * fdatasync of with?  Both on one device (a database bind-mounted alone
 * has its log elsewhere), overwritten in place. */
static int in_place(int fd, uint64_t off, uint64_t n, int with)
{
	struct statfs sf;
	struct stat st, wst;

	if (syscall(SYS_fstat, fd, &st) < 0 || syscall(SYS_fstat, with, &wst) < 0 ||
	    st.st_dev != wst.st_dev || syscall(SYS_fstatfs, fd, &sf) < 0)
		return 0;
	if (sf.f_type == EXT4_SUPER_MAGIC) {
		int attr = 0; /* the kernel's FS_IOC_GETFLAGS takes an int */
		if (ext4_journals_data(st.st_dev) ||
		    syscall(SYS_ioctl, fd, FS_IOC_GETFLAGS, &attr) < 0 ||
		    (attr & FS_JOURNAL_DATA_FL))
			return 0;
	} else if (sf.f_type != XFS_SUPER_MAGIC || xfs_realtime(fd) || xfs_realtime(with)) {
		return 0;
	}
	union {
		struct fiemap m;
		char room[sizeof(struct fiemap) + sizeof(struct fiemap_extent)];
	} u;
	memset(&u, 0, sizeof u);
	u.m.fm_start = off;
	u.m.fm_length = n;
	u.m.fm_extent_count = 1;
	if (syscall(SYS_ioctl, fd, FS_IOC_FIEMAP, &u.m) < 0 || u.m.fm_mapped_extents != 1)
		return 0;
	const struct fiemap_extent *e = &u.m.fm_extents[0];
	return e->fe_logical <= off && e->fe_logical + e->fe_length >= off + n &&
	       !(e->fe_flags & NOT_IN_PLACE);
}

int alex_io_write_out(int fd, uint64_t off, uint64_t n, int with)
{
	long r;

	if (!n || !in_place(fd, off, n, with))
		return EOPNOTSUPP;
	do
		r = syscall(SYS_sync_file_range, fd, (off_t)off, (off_t)n,
			    SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
				    SYNC_FILE_RANGE_WAIT_AFTER);
	while (r < 0 && errno == EINTR);
	return r < 0 ? errno : 0;
}
