/*
 * hooks_fcntl.c - fcntl: descriptor copies, and SQLite's locks on the
 * database.  Releasing the RESERVED lock byte ends SQLite's write
 * transaction: with synchronous=OFF that is the only boundary SQLite shows,
 * so the open transaction is committed before the lock goes -- a writer makes
 * its commit visible before it lets anyone else in.
 */
#include <errno.h>
#include <stdarg.h>

#include "config.h"
#include "hooks.h"
#include "real.h"
#include "state.h"
#include "stats.h"

#define SQLITE_RESERVED_BYTE 0x40000001LL /* PENDING_BYTE + 1, os_unix.c */
#define SQLITE_SHARED_FIRST 0x40000002LL  /* PENDING_BYTE + 2 */

int alex_commit_fd(int fd);

/* A byte-range lock being set (process or open-file-description kind). */
static int sets_lock(int cmd, const struct flock *l)
{
	return l && l->l_whence == SEEK_SET &&
	       (cmd == F_SETLK || cmd == F_SETLKW || cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW);
}

static int releases_reserved(int cmd, const struct flock *l)
{
	if (!sets_lock(cmd, l) || l->l_type != F_UNLCK)
		return 0;
	return l->l_start <= SQLITE_RESERVED_BYTE &&
	       (l->l_len == 0 || l->l_start + l->l_len > SQLITE_RESERVED_BYTE);
}

/* SQLite taking its SHARED lock: the start of a read or write transaction,
 * when other processes' commits must become visible.  Or EXCLUSIVE on the
 * same bytes: closing a WAL database, SQLite goes there straight from a
 * SHARED it took long ago, and then checkpoints from what it reads. */
static int takes_shared(int cmd, const struct flock *l)
{
	if (!sets_lock(cmd, l) || (l->l_type != F_RDLCK && l->l_type != F_WRLCK))
		return 0;
	return l->l_start <= SQLITE_SHARED_FIRST &&
	       (l->l_len == 0 || l->l_start + l->l_len > SQLITE_SHARED_FIRST);
}

static int refresh(struct ofd *o, int fd, int cmd, struct flock *l, int (*real)(int, int, ...))
{
	ALEX_COUNT(refreshes, 1);
	pthread_mutex_lock(&o->db->mu);
	int rc = alex_refresh(o->db->eng);
	pthread_mutex_unlock(&o->db->mu);
	if (!rc)
		return 0;
	alex_log(ALEX_LOG_ERROR, "%s: reading other processes' commits: %s", o->db->path,
		 alex_strerror(rc));
	struct flock u = *l;
	/* give the lock back: SQLite sees the lock fail; from EXCLUSIVE it
	 * falls back to the SHARED it held */
	u.l_type = l->l_type == F_WRLCK ? F_RDLCK : F_UNLCK;
	real(fd, cmd, &u);
	errno = alex_errno_of(rc);
	return -1;
}

/* In a -shm file: the lock bytes of WAL mode (wal.c), from byte 120. */
#define SHM_CKPT_LOCK 121   /* a checkpoint writes the database */
#define SHM_READ_FIRST 123  /* read marks 0..4: a read transaction starts */
#define SHM_READ_LAST 127

static int covers(const struct flock *l, long lo, long hi)
{
	return l->l_start <= hi && (l->l_len == 0 || l->l_start + l->l_len > lo);
}

/* SQLite starting a WAL read transaction or a checkpoint. */
static int shm_begins(int cmd, const struct flock *l)
{
	if (!sets_lock(cmd, l))
		return 0;
	if (l->l_type == F_RDLCK && covers(l, SHM_READ_FIRST, SHM_READ_LAST))
		return 1;
	return l->l_type == F_WRLCK && covers(l, SHM_CKPT_LOCK, SHM_CKPT_LOCK);
}

static int do_fcntl(int fd, int cmd, void *arg, int (*real)(int, int, ...))
{
	struct ofd *o = alex_fd_get(fd);

	if (o && o->role == ROLE_SHM) {
		/* a checkpoint ends with the release of its lock: with
		 * synchronous=OFF there is no sync of the database to mark it,
		 * and the WAL may be restarted over the pages right after */
		const struct flock *l = arg;
		if (sets_lock(cmd, l) && l->l_type == F_UNLCK &&
		    covers(l, SHM_CKPT_LOCK, SHM_CKPT_LOCK) && alex_pdb_commit(o->db) != 0)
			return -1;
		int r = real(fd, cmd, arg);
		if (r == 0 && shm_begins(cmd, arg)) {
			int saved = errno;
			if (refresh(o, fd, cmd, arg, real))
				return -1;
			errno = saved;
		}
		return r;
	}

	if (o && o->role == ROLE_DB && releases_reserved(cmd, arg)) {
		ALEX_COUNT(reserved_releases, 1);
		if (alex_commit_fd(fd) != 0)
			return -1; /* the lock stays: SQLite reports the failed unlock */
	}
	int r = real(fd, cmd, arg);
	if (r == 0 && o && o->role == ROLE_DB && takes_shared(cmd, arg)) {
		int saved = errno;
		if (refresh(o, fd, cmd, arg, real))
			return -1;
		errno = saved;
	}
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
