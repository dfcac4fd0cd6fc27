/*
 * io_posix.c - the real-file backend.  It enters the kernel with syscall(2)
 * rather than through libc's wrappers, so that when the engine runs inside
 * libalex.so its own I/O never re-enters the interposed functions.
 */
#include "io.h"
#include "io_many.h"
#include "io_writeout.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h> /* RENAME_NOREPLACE */
#include <limits.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

static int err_of(long r)
{
	return r < 0 ? errno : 0;
}

static int px_open(void *ctx, const char *path, int flags, int *fd)
{
	int of = (flags & ALEX_O_RDONLY ? O_RDONLY : O_RDWR) | O_CLOEXEC;
	long r;

	(void)ctx;
	if (flags & ALEX_O_CREAT)
		of |= O_CREAT;
	if (flags & ALEX_O_TRUNC)
		of |= O_TRUNC;
	/* 0600 until own() gives a new file its database's mode: never, even
	 * for a moment, more open than the database it holds pages of */
	do
		r = syscall(SYS_openat, AT_FDCWD, path, of, 0600);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return errno;
	*fd = (int)r;
	return 0;
}

/* Through /proc, not by name: the name may already be another file's
 * (a log made anew); checked to be the same file all the same. */
static int px_open_direct(void *ctx, int fd, int *dfd)
{
	char path[40];
	struct stat a, b;
	long r;

	(void)ctx;
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	do
		r = syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_DIRECT | O_CLOEXEC);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return errno == ENOENT ? EOPNOTSUPP : errno; /* no /proc */
	/* closed only when known to be another file: closing a descriptor
	 * of the database would drop SQLite's POSIX locks on it (a stat
	 * that fails cannot tell; the descriptor is then kept and used) */
	if (syscall(SYS_fstat, fd, &a) == 0 && syscall(SYS_fstat, (int)r, &b) == 0 &&
	    (a.st_dev != b.st_dev || a.st_ino != b.st_ino)) {
		syscall(SYS_close, (int)r);
		return EOPNOTSUPP;
	}
	*dfd = (int)r;
	return 0;
}

static int px_pwrite_many(void *ctx, int dfd, int fd, const struct alex_piece *p, size_t n)
{
	(void)ctx;
	return alex_io_pwrite_many(dfd, fd, p, n);
}

static void px_forget(void *ctx, int fd)
{
	(void)ctx;
	syscall(SYS_fadvise64, fd, (off_t)0, (off_t)0, POSIX_FADV_DONTNEED);
}

static int px_close(void *ctx, int fd)
{
	(void)ctx;
	/* no retry on EINTR: the descriptor is gone either way on Linux */
	return err_of(syscall(SYS_close, fd));
}

static int px_pread(void *ctx, int fd, void *buf, size_t n, uint64_t off, size_t *got)
{
	size_t done = 0;

	(void)ctx;
	while (done < n) {
		long r = syscall(SYS_pread64, fd, (char *)buf + done, n - done,
				 (off_t)(off + done));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (r == 0)
			break;
		done += (size_t)r;
	}
	*got = done;
	return 0;
}

static int px_pwrite(void *ctx, int fd, const void *buf, size_t n, uint64_t off)
{
	(void)ctx;
	return alex_io_pwrite_all(fd, buf, n, off);
}

static int px_fdatasync(void *ctx, int fd)
{
	long r;

	(void)ctx;
	do
		r = syscall(SYS_fdatasync, fd);
	while (r < 0 && errno == EINTR);
	return err_of(r);
}

static int px_write_out(void *ctx, int fd, uint64_t off, uint64_t n, int with)
{
	(void)ctx;
	return alex_io_write_out(fd, off, n, with);
}

static void px_writeback(void *ctx, int fd, uint64_t off, uint64_t n)
{
	(void)ctx;
	(void)sync_file_range(fd, (off64_t)off, (off64_t)n, SYNC_FILE_RANGE_WRITE);
}

static int px_ftruncate(void *ctx, int fd, uint64_t size)
{
	long r;

	(void)ctx;
	do
		r = syscall(SYS_ftruncate, fd, (off_t)size);
	while (r < 0 && errno == EINTR);
	return err_of(r);
}

static int px_allocate(void *ctx, int fd, uint64_t off, uint64_t n)
{
	long r;

	(void)ctx;
	do
		r = syscall(SYS_fallocate, fd, 0, (off_t)off, (off_t)n);
	while (r < 0 && errno == EINTR);
	return err_of(r);
}

static int px_size(void *ctx, int fd, uint64_t *size)
{
	struct stat st;

	(void)ctx;
	if (syscall(SYS_fstat, fd, &st) < 0)
		return errno;
	*size = (uint64_t)st.st_size;
	return 0;
}

static void info_of(const struct stat *st, struct alex_finfo *fi)
{
	fi->size = (uint64_t)st->st_size;
	fi->mode = st->st_mode & 07777;
	fi->uid = st->st_uid;
	fi->gid = st->st_gid;
	fi->nlink = (uint32_t)st->st_nlink;
	fi->dev = (uint64_t)st->st_dev;
	fi->ino = (uint64_t)st->st_ino;
}

static int px_stat(void *ctx, int fd, struct alex_finfo *fi)
{
	struct stat st;

	(void)ctx;
	if (syscall(SYS_fstat, fd, &st) < 0)
		return errno;
	info_of(&st, fi);
	return 0;
}

static int px_stat_path(void *ctx, const char *path, struct alex_finfo *fi)
{
	struct stat st;

	(void)ctx;
	if (syscall(SYS_newfstatat, AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno;
	info_of(&st, fi);
	return 0;
}

/* Gives fd (whose stat is st) like's owner and permission bits. */
static int own_as(int fd, const struct stat *st, const struct alex_finfo *like)
{
	/* root: the database's owner and group first (a chown clears the
	 * set-id bits, and a non-root caller may not give files away) */
	if ((st->st_uid != like->uid || st->st_gid != like->gid) && syscall(SYS_geteuid) == 0 &&
	    syscall(SYS_fchown, fd, like->uid, like->gid) < 0)
		return errno;
	if ((st->st_mode & 0777) != (like->mode & 0777) &&
	    syscall(SYS_fchmod, fd, like->mode & 0777) < 0)
		return errno;
	return 0;
}

static int px_own(void *ctx, int fd, const struct alex_finfo *like)
{
	struct stat st;

	(void)ctx;
	if (syscall(SYS_fstat, fd, &st) < 0)
		return errno;
	return own_as(fd, &st, like);
}

static int px_space(void *ctx, int fd, uint64_t *avail)
{
	struct statfs sf;

	(void)ctx;
	if (syscall(SYS_fstatfs, fd, &sf) < 0)
		return errno;
	*avail = (uint64_t)sf.f_bavail * (uint64_t)sf.f_bsize;
	return 0;
}

static int px_exists(void *ctx, const char *path, int *yes)
{
	(void)ctx;
	if (syscall(SYS_faccessat, AT_FDCWD, path, F_OK, 0) == 0) {
		*yes = 1;
		return 0;
	}
	if (errno == ENOENT) {
		*yes = 0;
		return 0;
	}
	return errno;
}

static int px_rename(void *ctx, const char *from, const char *to, int noreplace)
{
	(void)ctx;
	if (!noreplace)
		return err_of(syscall(SYS_renameat, AT_FDCWD, from, AT_FDCWD, to));
	if (syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return errno;
	/* a file system without RENAME_NOREPLACE: link() never replaces */
	if (syscall(SYS_linkat, AT_FDCWD, from, AT_FDCWD, to, 0) < 0)
		return errno;
	return err_of(syscall(SYS_unlinkat, AT_FDCWD, from, 0));
}

static int px_unlink(void *ctx, const char *path)
{
	(void)ctx;
	return err_of(syscall(SYS_unlinkat, AT_FDCWD, path, 0));
}

static int px_sync_dir(void *ctx, const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	size_t n;
	long fd, r;
	int err;

	(void)ctx;
	if (!slash) {
		strcpy(dir, ".");
	} else {
		n = slash == path ? 1 : (size_t)(slash - path);
		if (n >= sizeof dir)
			return ENAMETOOLONG;
		memcpy(dir, path, n);
		dir[n] = 0;
	}
	fd = syscall(SYS_openat, AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	do
		r = syscall(SYS_fsync, (int)fd);
	while (r < 0 && errno == EINTR);
	err = err_of(r);
	syscall(SYS_close, (int)fd);
	return err;
}

int alex_journal_cold(const char *path)
{
	unsigned char first = 1;
	struct stat st;
	long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

	if (fd < 0)
		return 0;
	int cold = syscall(SYS_fstat, (int)fd, &st) == 0 && S_ISREG(st.st_mode) &&
		   (st.st_size == 0 || (syscall(SYS_pread64, (int)fd, &first, 1, 0) == 1 && first == 0));
	syscall(SYS_close, (int)fd);
	return cold;
}

/* Open file description locks: tied to this descriptor's open file, not to
 * the process, so no other close() in the process can drop them, and a
 * forked child shares them. */
static int px_lock(void *ctx, int fd, uint64_t byte, int mode)
{
	struct flock l = { .l_type = mode == ALEX_EXCLUSIVE ? F_WRLCK
				     : mode == ALEX_SHARED ? F_RDLCK : F_UNLCK,
			   .l_whence = SEEK_SET, .l_start = (off_t)byte, .l_len = 1 };

	(void)ctx;
	if (syscall(SYS_fcntl, fd, F_OFD_SETLK, &l) == 0)
		return 0;
	return errno == EACCES ? EAGAIN : errno;
}

/*
 * Its 4096 bytes are allocated before they are mapped: a store into a hole
 * of a full file system would be a SIGBUS in the host program.  No lock:
 * two openers that initialise the region at once leave one of their
 * random counts, which sends every engine to the log once more (shm.c).
 */
static int px_shm_map(void *ctx, const char *path, const struct alex_finfo *like,
		      int (*init)(void *region, void *arg, int may_change), void *arg, void **region,
		      uint32_t *wrote)
{
	static const uint8_t zeros[4096];
	struct stat st;
	int fd, err = 0;
	void *p;

	*region = NULL;
	*wrote = 0;
	/* never through a symbolic or a hard link, never a device or a FIFO:
	 * the file is changed (its mode, owner and size) as soon as it is open */
	do
		fd = (int)syscall(SYS_openat, AT_FDCWD, path,
				  O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY,
				  0600);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return errno;
	if (syscall(SYS_fstat, fd, &st) < 0) {
		err = errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		err = EINVAL;
		goto out;
	}
	/* a region with other names (a snapshot's hard link) is used only as
	 * it is, if it is this log's already: nothing is changed in a file a
	 * link may have put here */
	int linked = st.st_nlink != 1;
	if (linked && (st.st_size < 4096 || (st.st_mode & 0777 & ~like->mode))) {
		err = EINVAL;
		goto out;
	}
	/* one the database's mode cannot be given to (another user made it,
	 * then the database's mode changed) will do if it is no more open */
	if (!linked && own_as(fd, &st, like) && (st.st_mode & 0777 & ~like->mode)) {
		err = EPERM;
		goto out;
	}
	/* A new file gets its bytes by a write: space is reserved (an ENOSPC
	 * comes back here, not as a SIGBUS later), and a file system that
	 * allocates late never gives a block to a region removed before its
	 * write-back -- a short process's region costs the disk nothing, not
	 * an allocation and a discard.  One already written needs nothing. */
	if (!linked && st.st_size == 0) {
		if ((err = px_pwrite(ctx, fd, zeros, sizeof zeros, 0)))
			goto out;
		*wrote = sizeof zeros;
	} else if (!linked && (st.st_size < 4096 || st.st_blocks < 4096 / 512) &&
		   syscall(SYS_fallocate, fd, 0, 0, 4096) < 0) {
		if (errno != EOPNOTSUPP && errno != ENOSYS && errno != EINVAL) {
			err = errno;
			goto out;
		}
		if (st.st_size < 4096) {
			if ((err = px_pwrite(ctx, fd, zeros, sizeof zeros, 0)))
				goto out;
			*wrote = sizeof zeros;
		}
	}
	p = (void *)syscall(SYS_mmap, NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		err = errno;
		goto out;
	}
	if ((err = init(p, arg, !linked))) {
		syscall(SYS_munmap, p, 4096);
		goto out;
	}
	*region = p;
out:
	px_close(ctx, fd);
	return err;
}

static void px_shm_unmap(void *ctx, void *region)
{
	(void)ctx;
	syscall(SYS_munmap, region, 4096);
}

static const struct alex_io_ops posix_ops = {
	.open = px_open,
	.close = px_close,
	.open_direct = px_open_direct,
	.pwrite_many = px_pwrite_many,
	.forget = px_forget,
	.pread = px_pread,
	.pwrite = px_pwrite,
	.fdatasync = px_fdatasync,
	.write_out = px_write_out,
	.writeback = px_writeback,
	.ftruncate = px_ftruncate,
	.allocate = px_allocate,
	.size = px_size,
	.stat = px_stat,
	.own = px_own,
	.space = px_space,
	.exists = px_exists,
	.stat_path = px_stat_path,
	.rename = px_rename,
	.unlink = px_unlink,
	.sync_dir = px_sync_dir,
	.lock = px_lock,
	.shm_map = px_shm_map,
	.shm_unmap = px_shm_unmap,
};

const struct alex_io alex_io_posix = { &posix_ops, NULL };
