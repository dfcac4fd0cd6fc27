/*
 * hooks_fcntl.c - fcntl: descriptor copies, and SQLite's locks on the
 * database.  Releasing the RESERVED lock byte ends SQLite's write
 * transaction: with synchronous=OFF that is the only boundary SQLite shows,
 * so the open transaction is committed before the lock goes -- a writer makes
 * its commit visible before it lets anyone else in.
 */
#include <errno.h>
#include <stdarg.h>

#include "hooks.h"
#include "real.h"
#include "state.h"

#define SQLITE_RESERVED_BYTE 0x40000001LL /* PENDING_BYTE + 1, os_unix.c */

int alex_commit_fd(int fd);

static int releases_reserved(int cmd, const struct flock *l)
{
	if (cmd != F_SETLK && cmd != F_SETLKW && cmd != F_OFD_SETLK && cmd != F_OFD_SETLKW)
		return 0;
	if (!l || l->l_type != F_UNLCK || l->l_whence != SEEK_SET)
		return 0;
	return l->l_start <= SQLITE_RESERVED_BYTE &&
	       (l->l_len == 0 || l->l_start + l->l_len > SQLITE_RESERVED_BYTE);
}

static int do_fcntl(int fd, int cmd, void *arg, int (*real)(int, int, ...))
{
	struct ofd *o = alex_fd_get(fd);

	if (o && o->role == ROLE_DB && releases_reserved(cmd, arg) && alex_commit_fd(fd) != 0)
		return -1; /* the lock stays: SQLite reports the failed unlock */
	int r = real(fd, cmd, arg);
	if (r >= 0 && o && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)) {
		int saved = errno;
		alex_dup_track(fd, r);
		errno = saved;
	}
	return r;
}

/* Every fcntl argument is an int or a pointer; both travel in one register
 * slot, so reading it as a pointer and passing it on is exact. */
ALEX_EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return do_fcntl(fd, cmd, arg, REAL(fcntl));
}

ALEX_EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return do_fcntl(fd, cmd, arg, REAL(fcntl64));
}
