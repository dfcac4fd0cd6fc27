/* temp.h - SQLite's temporary files under a key, stored encrypted
 * (temp.c; core/xts_file.h has the format). */
#ifndef ALEX_PRELOAD_TEMP_H
#define ALEX_PRELOAD_TEMP_H

#include <stdint.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/types.h>

#include "serve.h"
#include "state.h"

/* Is path, opened with flags, one of SQLite's temporary files (made new,
 * "etilqs_" its name's start)? */
int alex_temp_name(const char *path, int flags);
/* Tracks fd, just made for such a file (path relative to dirfd), as one
 * stored encrypted with the key.  fd, or -1 with errno (fd closed and its
 * name removed: nothing in clear). */
int alex_temp_track(int fd, int dirfd, const char *path);

/* The calls on such a descriptor, with their kernel conventions. */
ssize_t alex_temp_io(struct ofd *o, const struct iovec *iov, int cnt, uint64_t *pos,
		     enum alex_serve_io how);
int64_t alex_temp_seek(struct ofd *o, int64_t off, int whence);
int alex_temp_truncate(struct ofd *o, int64_t size);
/* posix_fallocate: 0 or an errno */
int alex_temp_extend(struct ofd *o, uint64_t end);
void alex_temp_fstat(struct ofd *o, struct stat64 *st);

#endif
