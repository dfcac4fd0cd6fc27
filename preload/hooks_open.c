/*
 * hooks_open.c - the open family (open, open64, __open_2, openat, creat ...).
 *
 * A database file is opened for SQLite as usual (its descriptor, its locks)
 * and gets the process's engine.  A rollback journal that does not exist on
 * disk is made in memory (journal.c).  One that does exist on disk was left
 * by a crash of a program without ALEX: it is passed through so that SQLite
 * rolls it back.  WAL and -shm files are passed through; while the WAL is
 * open the database file is too (serve.c: WAL mode).
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
#include "dirsync.h"
#include "fdtable.h"
#include "flusher.h"
#include "hooks.h"
#include "journal.h"
#include "locks.h"
#include "match.h"
#include "pdb.h"
#include "real.h"
#include "record.h"
#include "serve.h"
#include "stats.h"
#include "temp.h"
#include "trace.h"

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
	/* Closing a descriptor of the database drops every POSIX lock the
	 * process holds on it -- another connection's SHARED among them,
	 * unseen by it.  While the process may hold one, the descriptor is
	 * left open (a leak on a path that is out of memory or table) */
	if (role == ROLE_DB && alex_locks_any(db))
		alex_msg(ALEX_MSG_ERROR, "%s: a descriptor could not be tracked (%s); left open, "
					 "so that the process's locks on the file stay", db->path,
			 strerror(err));
	else
		REAL(close)(fd);
	free(o); /* never in the table: no references to drop but db's */
	alex_pdb_put(db);
	errno = err;
	return NULL;
}

/* fd, just handed out by the kernel, is still in the table: its number was
 * closed without the hooks (a raw close, close_range); forget it. */
static void forget_closed(int fd)
{
	struct ofd *o = alex_fd_take(fd);

	if (o && o->role == ROLE_DB)
		alex_locks_gone_late(o->db); /* and the process's locks with it */
	alex_ofd_put(o);
}

/* db: the journal's database if alex_pdb_name knew it (its reference
 * taken over), else NULL and dbpath says */
static int open_journal(enum open_kind k, int dirfd, const char *path, const char *dbpath,
			struct pdb *db, int flags, mode_t mode)
{
	char jabs[PATH_MAX], dabs[PATH_MAX];
	const char *jpath = path; /* absolute when db is known */
	int err, fd = -1;

	if (!db) {
		if ((err = alex_abs_path(dirfd, path, jabs, sizeof jabs)) ||
		    (err = alex_abs_path(dirfd, dbpath, dabs, sizeof dabs)))
			return fail(err);
		jpath = jabs;
		db = alex_pdb_find_name(dabs);
	}
	if (!db)
		return pass(k, dirfd, path, flags, mode); /* its database is not ours */
	switch (alex_journal_open(db, jpath, flags, &fd)) {
	case ALEX_JOURNAL_MEM:
		return track(fd, db, ROLE_JOURNAL) ? fd : -1;
	case ALEX_JOURNAL_DISK:
		alex_pdb_put(db);
		/* with a key ALEX never writes a journal to disk: one there is
		 * not ours, and SQLite would write pages into it in clear */
		if (alex_cfg.engine.key && (flags & O_ACCMODE) != O_RDONLY) {
			alex_msg(ALEX_MSG_ERROR, "%s: a journal on disk beside an encrypted database is "
				 "not written (its pages would be in clear); the database stays "
				 "read-only until it is removed", path);
			return fail(EACCES);
		}
		return pass(k, dirfd, path, flags, mode);
	default:
		err = errno;
		alex_pdb_put(db);
		return fail(err);
	}
}

/*
 * SQLite's -wal: passed through, but while it is open the database is in
 * WAL mode and its file SQLite's own (serve.c: alex_serve_wal_open says why,
 * and refuses the WAL while the log cannot be emptied).
 */
static int open_wal(enum open_kind k, int dirfd, const char *path, const char *dbpath,
		    struct pdb *db, int flags, mode_t mode)
{
	char dabs[PATH_MAX];
	int err;

	if (!db && alex_abs_path(dirfd, dbpath, dabs, sizeof dabs) == 0)
		db = alex_pdb_find_name(dabs);
	if (!db)
		return pass(k, dirfd, path, flags, mode); /* its database is not ours */
	if ((err = alex_serve_wal_open(db))) {
		alex_pdb_put(db);
		return fail(err);
	}
	int fd = pass(k, dirfd, path, flags, mode);
	if (fd < 0) {
		err = errno;
		alex_serve_wal_closed(db);
		alex_pdb_put(db);
		return fail(err);
	}
	/* counted already: the description takes over that count */
	struct ofd *o = alex_ofd_new(db, ROLE_WAL);
	if (!o || alex_fd_set(fd, o)) {
		free(o);
		alex_serve_wal_closed(db);
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
			alex_msg(ALEX_MSG_INFO, "%s: read-only, passed through", abs);
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
	if ((flags & O_TRUNC) && alex_serve_truncate(db, 0) != 0) {
		err = errno;
		alex_close_hook(fd);
		return fail(err);
	}
	return fd;
}

/* SQLite opening a database's directory for a sync that is moot: the
 * descriptor kept for it (dirsync.c), or -1 to open as usual. */
static int open_dir(const char *path, int flags)
{
	struct pdb *db;
	int saved = errno, fd = alex_dirsync_open(path, flags, &db);

	if (fd < 0)
		return -1;
	struct ofd *o = alex_ofd_new(db, ROLE_DIR);
	if (!o || alex_fd_set(fd, o)) {
		free(o);
		alex_pdb_kept_back(db, &db->dir, fd);
		alex_pdb_put(db);
		fd = -1; /* opened as usual, then */
	}
	errno = saved;
	return fd;
}

/* SQLite's temporary file with a key asked for: stored encrypted, or
 * refused when the key is not usable (never in clear). */
static int open_temp(enum open_kind k, int dirfd, const char *path, int flags, mode_t mode)
{
	if (alex_cfg.bad || !alex_cfg.engine.key || alex_vfork_child())
		return fail(EINVAL);
	int saved = errno, fd = pass(k, dirfd, path, flags, mode);
	if (fd < 0)
		return fd;
	if (alex_fd_get(fd))
		forget_closed(fd);
	fd = alex_temp_track(fd, dirfd, path);
	if (fd >= 0)
		errno = saved;
	return fd;
}

static int open_inner(enum open_kind k, int dirfd, const char *path, int flags, mode_t mode)
{
	char dbpath[PATH_MAX];
	enum alex_role role = ROLE_NONE;
	struct pdb *known = NULL; /* a journal's or WAL's, by alex_pdb_name */

	int on = alex_active() || alex_refusing();
	/* SQLite's temporary files are never databases, whatever ALEX_MATCH
	 * says: with a key stored encrypted, else passed through */
	int temp = on && path && alex_temp_name(path, flags);
	if (temp && alex_cfg.key_asked)
		return open_temp(k, dirfd, path, flags, mode);
	/* a vfork()ed child takes no reference: the tables are its parent's */
	if (on && path && !temp &&
	    (alex_vfork_child() || !(role = alex_pdb_name(path, &known))))
		role = alex_match(path, dbpath, sizeof dbpath);
	if (role == ROLE_WAL && !alex_cfg.bad && !alex_vfork_child()) {
		int saved = errno, fd = open_wal(k, dirfd, path, dbpath, known, flags, mode);
		if (fd >= 0)
			errno = saved;
		return fd;
	}
	if (known && (role != ROLE_JOURNAL || alex_cfg.bad)) {
		alex_pdb_put(known); /* not used below: passed through or refused */
		known = NULL;
	}
	/* one load while no directory sync is expected: getpid (after a
	 * vfork) only then */
	if (role == ROLE_NONE && __atomic_load_n(&alex_dirsync_count, __ATOMIC_ACQUIRE) &&
	    !alex_cfg.bad && !alex_vfork_child()) {
		int fd = open_dir(path, flags);
		if (fd >= 0)
			return fd;
	}
	if (role == ROLE_NONE || role == ROLE_WAL || role == ROLE_SHM) {
		if (flags & O_CREAT)
			alex_dirsync_cancel(); /* a real file appears: its dirsync counts */
		int fd = pass(k, dirfd, path, flags, mode);
		if (fd >= 0 && alex_fd_get(fd) && !alex_vfork_child())
			forget_closed(fd);
		alex_kept_met(fd); /* a kept number handed out again: closed unseen */
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
		fd = open_journal(k, dirfd, path, dbpath, known, flags, mode);
	else
		fd = open_db(k, dirfd, path, flags, mode);
	if (fd >= 0)
		errno = saved;
	if (role != ROLE_JOURNAL)
		alex_kept_met(fd);
	return fd;
}

static int do_open(enum open_kind k, int dirfd, const char *path, int flags, mode_t mode)
{
	if (__builtin_expect(!alex_tracing, 1))
		return open_inner(k, dirfd, path, flags, mode);
	uint64_t t0 = alex_trace_now();
	int fd = open_inner(k, dirfd, path, flags, mode);
	struct ofd *o = fd >= 0 ? alex_fd_get(fd) : NULL;
	/* an in-memory journal, a kept directory: no file was opened */
	alex_trace_opened(fd, path, t0,
			  o && (o->role == ROLE_JOURNAL || o->role == ROLE_DIR) ? ALEX_TF_SERVED : 0);
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
