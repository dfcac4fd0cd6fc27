/*
 * temp.c - with a key, SQLite's temporary files are stored encrypted.
 *
 * SQLite writes a VACUUM's temporary database, temporary tables and
 * indexes, statement journals and the sorter's spills of a large CREATE
 * INDEX or ORDER BY to files it names "etilqs_" + random letters in its
 * temporary directory, made with O_EXCL and unlinked at once.  Their bytes
 * are the database's, so with a key they would be plaintext on the disk
 * (and in its free space afterwards).  Such a file is private to the
 * descriptor that made it and never opened again, so it needs nothing on
 * disk but its units: core/xts_file.c keeps the size in memory and each
 * 512-byte unit encrypted under tweaks drawn for the file.  If the cipher
 * cannot be set up the open fails and the file is removed: SQLite reports
 * the error; nothing is written in clear.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "fdtable.h"
#include "real.h"
#include "stats.h"
#include "temp.h"
#include "xts_file.h"

/* SQLite's SQLITE_TEMP_FILE_PREFIX (os_unix.c), the name every build uses
 * unless it was compiled otherwise */
#define TEMP_PREFIX "etilqs_"

int alex_temp_name(const char *path, int flags)
{
	if ((flags & (O_CREAT | O_EXCL)) != (O_CREAT | O_EXCL))
		return 0;
	const char *base = strrchr(path, '/');
	return strncmp(base ? base + 1 : path, TEMP_PREFIX, sizeof TEMP_PREFIX - 1) == 0;
}

int alex_temp_track(int fd, int dirfd, const char *path)
{
	struct ofd *o = alex_ofd_new(NULL, ROLE_TEMP);
	int err = o ? alex_xts_file_new(&alex_io_posix, fd, alex_cfg.engine.key,
					alex_cfg.engine.crypt_buffer_bytes, &o->tmp)
		    : ENOMEM;

	if (!err && !(err = alex_fd_set(fd, o))) {
		ALEX_COUNT(temp_files, 1);
		return fd;
	}
	if (o && o->tmp)
		alex_xts_file_free(o->tmp);
	free(o);
	REAL(close)(fd);
	REAL(unlinkat)(dirfd, path, 0); /* made with O_EXCL: ours, empty */
	alex_msg(ALEX_MSG_ERROR, "%s: SQLite's temporary file cannot be encrypted (%s); refused",
		 path, strerror(err));
	errno = err;
	return -1;
}

ssize_t alex_temp_io(struct ofd *o, const struct iovec *iov, int cnt, uint64_t *pos,
		     enum alex_serve_io how)
{
	uint64_t at = how == ALEX_SERVE_APPEND ? alex_xts_file_size(o->tmp) : *pos;
	ssize_t total = 0;
	int err = 0, saved = errno;

	for (int i = 0; i < cnt && !err; i++) {
		size_t n = iov[i].iov_len, got = n;
		if (how & ALEX_SERVE_WRITE)
			err = alex_xts_file_pwrite(o->tmp, iov[i].iov_base, n, at, &got);
		else
			err = alex_xts_file_pread(o->tmp, iov[i].iov_base, n, at, &got);
		at += got;
		total += (ssize_t)got;
		if (err || got < n)
			break; /* an error after some bytes: their count, as the kernel */
	}
	if (err && !total) {
		errno = err;
		return -1;
	}
	*pos = at;
	errno = saved;
	return total;
}

int64_t alex_temp_seek(struct ofd *o, int64_t off, int whence)
{
	int64_t size = (int64_t)alex_xts_file_size(o->tmp), base;

	switch (whence) {
	case SEEK_SET: base = 0; break;
	case SEEK_CUR: base = (int64_t)o->pos; break;
	case SEEK_END: base = size; break;
	default: errno = EINVAL; return -1;
	}
	if (base + off < 0) {
		errno = EINVAL;
		return -1;
	}
	o->pos = (uint64_t)(base + off);
	return (int64_t)o->pos;
}

int alex_temp_truncate(struct ofd *o, int64_t size)
{
	int err = size < 0 ? EINVAL : alex_xts_file_truncate(o->tmp, (uint64_t)size);
	return err ? (errno = err, -1) : 0;
}

int alex_temp_extend(struct ofd *o, uint64_t end)
{
	if (end <= alex_xts_file_size(o->tmp))
		return 0;
	return alex_xts_file_truncate(o->tmp, end);
}

void alex_temp_fstat(struct ofd *o, struct stat64 *st)
{
	uint64_t size = alex_xts_file_size(o->tmp);
	st->st_size = (off64_t)size;
	st->st_blocks = (blkcnt64_t)((size + 511) / 512);
}
