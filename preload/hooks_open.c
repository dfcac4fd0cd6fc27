/*
 * hooks_open.c - the open family, close, dup and the library's constructor.
 *
 * A database file is opened for SQLite as usual (its descriptor, its locks)
 * and gets the process's engine.  A rollback journal that does not exist on
 * disk is made in memory (a memfd): an extent commit is atomic, so the
 * journal is only needed for SQLite's in-process rollback, and its writes
 * and syncs need not reach the disk.  One that does exist on disk was left by
 * a crash of a program without ALEX: it is passed through so that SQLite
 * rolls it back.  WAL and -shm files are passed through; while the WAL is
 * open the database file is too (pdb.c: WAL mode).
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "config.h"
#include "hooks.h"
#include "real.h"
#include "record.h"
#include "state.h"
#include "stats.h"

static int ready;
static pid_t owner; /* the process whose tables these are */

void alex_owner_reset(void)
{
	owner = getpid();
}

int alex_vfork_child(void)
{
	return getpid() != owner;
}

__attribute__((constructor)) static void alex_init(void)
{
	int saved = errno;

	alex_real_init();
	alex_owner_reset();
	alex_config_load();
	if (alex_fd_init())
		alex_cfg.mode = ALEX_MODE_OFF;
	alex_pdb_atfork();
	ready = 1;
	errno = saved;
}

__attribute__((destructor)) static void alex_fini(void)
{
	int saved = errno;

	if (ready)
		alex_stats_write();
	errno = saved;
}

int alex_active(void)
{
	return ready && alex_cfg.mode == ALEX_MODE_ON;
}

enum open_kind { K_OPEN, K_OPEN64, K_OPEN_2, K_OPEN64_2, K_OPENAT, K_OPENAT64, K_OPENAT_2,
		 K_OPENAT64_2, K_CREAT, K_CREAT64 };

static int pass(enum open_kind k, int dirfd, const char *path, int flags, mode_t mode)
{
	switch (k) {
	case K_OPEN: return REAL(open)(path, flags, mode);
	case K_OPEN64: return REAL(open64)(path, flags, mode);
	case K_OPEN_2: return REAL(__open_2)(path, flags);
	case K_OPEN64_2: return REAL(__open64_2)(path, flags);
	case K_OPENAT: return REAL(openat)(dirfd, path, flags, mode);
	case K_OPENAT64: return REAL(openat64)(dirfd, path, flags, mode);
	case K_OPENAT_2: return REAL(__openat_2)(dirfd, path, flags);
	case K_OPENAT64_2: return REAL(__openat64_2)(dirfd, path, flags);
	case K_CREAT: return REAL(creat)(path, mode);
	case K_CREAT64: return REAL(creat64)(path, mode);
	}
	errno = EINVAL;
	return -1;
}

/* path made absolute against dirfd (or the cwd), for engine identity */
int alex_abs_path(int dirfd, const char *path, char *out, size_t cap)
{
	char base[PATH_MAX];
	size_t n;

	if (path[0] == '/') {
		n = strlen(path);
		if (n >= cap)
			return ENAMETOOLONG;
		memcpy(out, path, n + 1);
		return 0;
	}
	if (dirfd == AT_FDCWD) {
		if (!getcwd(base, sizeof base))
			return errno;
	} else {
		char link[64];
		snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
		ssize_t k = readlink(link, base, sizeof base - 1);
		if (k < 0)
			return errno;
		base[k] = 0;
	}
	if ((size_t)snprintf(out, cap, "%s/%s", base, path) >= cap)
		return ENAMETOOLONG;
	return 0;
}

static int fail(int err)
{
	errno = err;
	return -1;
}

/*
 * Puts fd in the table as a new open file description of db (whose
 * reference it takes over).  On failure fd is closed, errno set, NULL.
 */
static struct ofd *track(int fd, struct pdb *db, enum alex_role role)
{
	struct ofd *o = alex_ofd_new(db, role);
	int err = ENOMEM;

	if (o && !(err = alex_fd_set(fd, o)))
		return o;
	REAL(close)(fd);
	free(o); /* never in the table: no references to drop but db's */
	alex_pdb_put(db);
	errno = err;
	return NULL;
}

static int open_journal(enum open_kind k, int dirfd, const char *path, const char *dbpath,
			int flags, mode_t mode)
{
	char jabs[PATH_MAX], dabs[PATH_MAX];
	int err;

	if ((err = alex_abs_path(dirfd, path, jabs, sizeof jabs)) ||
	    (err = alex_abs_path(dirfd, dbpath, dabs, sizeof dabs)))
		return fail(err);
	struct pdb *db = alex_pdb_find(dabs);
	if (!db)
		return pass(k, dirfd, path, flags, mode); /* its database is not ours */
	pthread_mutex_lock(&db->mu);
	if (db->jmem < 0) {
		if (REAL(access)(jabs, F_OK) == 0) {
			/* on disk before us: SQLite must see it, to roll it back */
			pthread_mutex_unlock(&db->mu);
			alex_pdb_put(db);
			return pass(k, dirfd, path, flags, mode);
		}
		if (!(flags & O_CREAT)) {
			pthread_mutex_unlock(&db->mu);
			alex_pdb_put(db);
			return fail(ENOENT);
		}
		db->jmem = memfd_create("alex-journal", MFD_CLOEXEC);
		if (db->jmem < 0) {
			err = errno;
			pthread_mutex_unlock(&db->mu);
			alex_pdb_put(db);
			return fail(err);
		}
		db->skip_dirsync = 1;
		__atomic_store_n(&alex_pdb_dirsync_pending, 1, __ATOMIC_RELEASE);
	} else if ((flags & O_CREAT) && (flags & O_EXCL)) {
		pthread_mutex_unlock(&db->mu);
		alex_pdb_put(db);
		return fail(EEXIST);
	}
	int fd = REAL(fcntl)(db->jmem, (flags & O_CLOEXEC) ? F_DUPFD_CLOEXEC : F_DUPFD, 0);
	err = errno;
	if (fd >= 0 && (flags & O_TRUNC) && REAL(ftruncate)(db->jmem, 0) != 0)
		err = errno;
	pthread_mutex_unlock(&db->mu);
	if (fd < 0) {
		alex_pdb_put(db);
		return fail(err);
	}
	return track(fd, db, ROLE_JOURNAL) ? fd : -1;
}

/*
 * SQLite's -wal: passed through, but while it is open the database is in
 * WAL mode and its file SQLite's own (pdb.c: alex_pdb_wal_open says why,
 * and refuses the WAL while the log cannot be emptied).
 */
static int open_wal(enum open_kind k, int dirfd, const char *path, const char *dbpath,
		    int flags, mode_t mode)
{
	char dabs[PATH_MAX];
	struct pdb *db;
	int err;

	if (alex_abs_path(dirfd, dbpath, dabs, sizeof dabs) || !(db = alex_pdb_find(dabs)))
		return pass(k, dirfd, path, flags, mode); /* its database is not ours */
	if ((err = alex_pdb_wal_open(db))) {
		alex_pdb_put(db);
		return fail(err);
	}
	int fd = pass(k, dirfd, path, flags, mode);
	if (fd < 0) {
		err = errno;
		alex_pdb_wal_closed(db);
		alex_pdb_put(db);
		return fail(err);
	}
	/* counted already: the description takes over that count */
	struct ofd *o = alex_ofd_new(db, ROLE_WAL);
	if (!o || alex_fd_set(fd, o)) {
		free(o);
		alex_pdb_wal_closed(db);
		alex_pdb_put(db);
		REAL(close)(fd);
		return fail(ENOMEM);
	}
	ALEX_REC(ALEX_TR_NAME, o, fd, 0, 0, NULL, path);
	if (flags & O_TRUNC)
		ALEX_REC(ALEX_TR_TRUNC, o, fd, 0, 0, NULL, NULL);
	return fd;
}

static int open_db(enum open_kind k, int dirfd, const char *path, int flags, mode_t mode)
{
	char abs[PATH_MAX];
	struct pdb *db;
	int err, fd;

	if ((err = alex_abs_path(dirfd, path, abs, sizeof abs)))
		return fail(err);
	/* O_TRUNC would cut the base file under the engine: truncate the
	 * logical file instead */
	fd = pass(k, dirfd, path, flags & ~O_TRUNC, mode);
	if (fd < 0)
		return fd;
	err = alex_pdb_get(fd, abs, &db);
	if (err == ENOTSUP)
		return fd; /* not a regular file */
	if (err) {
		char log[PATH_MAX + 8];
		snprintf(log, sizeof log, "%s-alex", abs);
		if ((err == EACCES || err == EROFS) && REAL(access)(log, F_OK) != 0) {
			/* read-only place, no log: nothing of ours to protect */
			alex_log(ALEX_LOG_INFO, "%s: read-only, passed through", abs);
			return fd;
		}
		REAL(close)(fd);
		return fail(err);
	}
	struct ofd *o = track(fd, db, ROLE_DB);
	if (!o)
		return -1;
	o->append = (flags & O_APPEND) != 0;
	ALEX_COUNT(opens, 1);
	if (flags & O_TRUNC) {
		pthread_mutex_lock(&db->mu);
		int rc = alex_truncate(db->eng, ALEX_FILE_DB, 0);
		pthread_mutex_unlock(&db->mu);
		if (rc) {
			alex_close_hook(fd);
			return fail(alex_errno_of(rc));
		}
	}
	return fd;
}

static int do_open(enum open_kind k, int dirfd, const char *path, int flags, mode_t mode)
{
	char dbpath[PATH_MAX];
	enum alex_role role = ROLE_NONE;

	if (alex_active() && path)
		role = alex_match(path, dbpath, sizeof dbpath);
	if (role == ROLE_WAL && !alex_cfg.bad && !alex_vfork_child()) {
		int saved = errno, fd = open_wal(k, dirfd, path, dbpath, flags, mode);
		if (fd >= 0)
			errno = saved;
		return fd;
	}
	if (role == ROLE_NONE || role == ROLE_WAL || role == ROLE_SHM) {
		if ((flags & O_CREAT) && __atomic_load_n(&alex_pdb_dirsync_pending, __ATOMIC_ACQUIRE))
			alex_pdb_cancel_dirsync(); /* a real file appears: its dirsync counts */
		int fd = pass(k, dirfd, path, flags, mode);
		if (fd >= 0 && alex_fd_get(fd) && !alex_vfork_child())
			alex_ofd_put(alex_fd_take(fd)); /* closed behind our back */
		if (fd >= 0)
			ALEX_REC_WATCH(fd, path);
		return fd;
	}
	if (alex_cfg.bad)
		return fail(EINVAL);
	if (alex_vfork_child()) /* our parent's tables: leave them alone */
		return pass(k, dirfd, path, flags, mode);
	int saved = errno, fd;
	if (role == ROLE_JOURNAL)
		fd = open_journal(k, dirfd, path, dbpath, flags, mode);
	else
		fd = open_db(k, dirfd, path, flags, mode);
	if (fd >= 0)
		errno = saved;
	return fd;
}

static int wants_mode(int flags)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

#define MODE_ARG(flags)                                                                           \
	mode_t mode = 0;                                                                          \
	if (wants_mode(flags)) {                                                                  \
		va_list ap;                                                                       \
		va_start(ap, flags);                                                              \
		mode = (mode_t)va_arg(ap, int);                                                   \
		va_end(ap);                                                                       \
	}

ALEX_EXPORT int open(const char *path, int flags, ...)
{
	MODE_ARG(flags);
	return do_open(K_OPEN, AT_FDCWD, path, flags, mode);
}
ALEX_EXPORT int open64(const char *path, int flags, ...)
{
	MODE_ARG(flags);
	return do_open(K_OPEN64, AT_FDCWD, path, flags, mode);
}
ALEX_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	MODE_ARG(flags);
	return do_open(K_OPENAT, dirfd, path, flags, mode);
}
ALEX_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	MODE_ARG(flags);
	return do_open(K_OPENAT64, dirfd, path, flags, mode);
}
ALEX_EXPORT int __open_2(const char *path, int flags)
{
	return do_open(K_OPEN_2, AT_FDCWD, path, flags, 0);
}
ALEX_EXPORT int __open64_2(const char *path, int flags)
{
	return do_open(K_OPEN64_2, AT_FDCWD, path, flags, 0);
}
ALEX_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	return do_open(K_OPENAT_2, dirfd, path, flags, 0);
}
ALEX_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
	return do_open(K_OPENAT64_2, dirfd, path, flags, 0);
}
ALEX_EXPORT int creat(const char *path, mode_t mode)
{
	return do_open(K_CREAT, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}
ALEX_EXPORT int creat64(const char *path, mode_t mode)
{
	return do_open(K_CREAT64, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

/* ---- close and dup ---------------------------------------------------- */

int alex_close_hook(int fd)
{
	if (alex_fd_get(fd) && alex_vfork_child())
		return REAL(close)(fd); /* the table is our parent's */
	struct ofd *o = alex_fd_take(fd);
	ALEX_REC_UNWATCH(fd);
	int rc = REAL(close)(fd), saved = errno;

	if (o)
		alex_ofd_put(o); /* the last one closes the engine, checkpointing */
	errno = saved;
	return rc;
}

ALEX_EXPORT int close(int fd)
{
	return alex_close_hook(fd);
}

/* After newfd became a copy of oldfd in the kernel. */
void alex_dup_track(int oldfd, int newfd)
{
	if (alex_vfork_child())
		return;
	struct ofd *gone = alex_fd_take(newfd), *o = alex_fd_get(oldfd);

	if (gone)
		alex_ofd_put(gone);
	if (o && alex_fd_set(newfd, o) != 0)
		alex_log(ALEX_LOG_ERROR, "descriptor %d beyond the table: untracked", newfd);
}

ALEX_EXPORT int dup(int fd)
{
	int n = REAL(dup)(fd);
	if (n >= 0) {
		int saved = errno;
		alex_dup_track(fd, n);
		errno = saved;
	}
	return n;
}

ALEX_EXPORT int dup2(int fd, int nfd)
{
	int r = REAL(dup2)(fd, nfd);
	if (r >= 0 && fd != nfd) {
		int saved = errno;
		alex_dup_track(fd, r);
		errno = saved;
	}
	return r;
}

ALEX_EXPORT int dup3(int fd, int nfd, int flags)
{
	int r = REAL(dup3)(fd, nfd, flags);
	if (r >= 0) {
		int saved = errno;
		alex_dup_track(fd, r);
		errno = saved;
	}
	return r;
}

/* Descriptors closed where we cannot see the close: forget them. */
static void forget_range(unsigned first, unsigned last)
{
	int saved = errno;
	for (unsigned fd = first; fd <= last && fd < (1u << 20); fd++)
		if (alex_fd_get((int)fd))
			alex_ofd_put(alex_fd_take((int)fd));
	errno = saved;
}

ALEX_EXPORT int fclose(FILE *fp)
{
	int fd = fp ? fileno(fp) : -1; /* fdopen()ed descriptor: glibc closes it inside */
	int r = REAL(fclose)(fp);
	if (fd >= 0 && alex_fd_get(fd) && !alex_vfork_child())
		forget_range((unsigned)fd, (unsigned)fd);
	return r;
}

ALEX_EXPORT void closefrom(int lowfd)
{
	REAL(closefrom)(lowfd);
	if (lowfd >= 0 && !alex_vfork_child())
		forget_range((unsigned)lowfd, ~0u);
}

ALEX_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	int r = (int)syscall(SYS_close_range, first, last, flags);
	if (r == 0 && !(flags & CLOSE_RANGE_CLOEXEC) && !alex_vfork_child()) {
		forget_range(first, last);
	}
	return r;
}
