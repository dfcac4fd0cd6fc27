/*
 * hooks_stat.c - the stat family reports a tracked database's logical size
 * (pages may exist only in the log) and an in-memory journal as a file,
 * whose owner fchown leaves as it is.
 * One fix-up per operation; every glibc name, old and new, forwards to the
 * real function of its own name first, so nested calls inside glibc are not
 * counted twice.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "fdtable.h"
#include "hooks.h"
#include "journal.h"
#include "match.h"
#include "pdb.h"
#include "real.h"
#include "serve.h"
#include "temp.h"
#include "trace.h"
#include "watch.h"

static void set_size(struct stat64 *st, struct pdb *db)
{
	if (alex_pdb_direct(db))
		return; /* WAL mode: the file is SQLite's own, its size too */
	uint64_t size = alex_serve_size(db);
	st->st_size = (off64_t)size;
	st->st_blocks = (blkcnt64_t)((size + 511) / 512);
}

/* After a successful fstat of fd (or statx, fstatat with AT_EMPTY_PATH). */
static void fix_fd(int fd, struct stat64 *st)
{
	struct ofd *o = alex_fd_get(fd);
	if (o && o->role == ROLE_DB)
		set_size(st, o->db);
	else if (o && o->role == ROLE_JOURNAL)
		alex_journal_fstat(o->db, st);
	else if (o && o->role == ROLE_TEMP)
		alex_temp_fstat(o, st);
}

/*
 * A stat by path.  A database's own name is answered as inotify allows
 * (watch.c); any other database path is found by the inode the real call
 * saw.  Either gets the logical size.  A journal's or a WAL's name is looked
 * up first: memory may know the answer (journal.c: alex_name_known), and
 * an in-memory journal exists though the kernel says ENOENT.
 */
struct name_look {
	enum alex_role role;
	struct pdb *db;      /* a journal's or WAL's database, with a reference */
	int known, rc;       /* answered from memory: rc, errno ENOENT if -1 */
	int errno0;          /* the caller's errno, kept on success */
	struct alex_fence before;
};

static void look_begin(int dirfd, const char *path, struct stat64 *st, struct name_look *l)
{
	int exists, saved = errno;

	l->errno0 = saved;
	l->role = ROLE_NONE;
	l->db = NULL;
	l->known = 0;
	if (!alex_active() || !path)
		return;
	/* a database's own name, as SQLite stats it twice a write
	 * transaction: the name an open database was matched under is
	 * alex_match's ROLE_DB already (pdb.c: path_matches), so one lookup
	 * answers it, not the name's match first (some 300 instructions);
	 * the kernel's answer as kept (watch.c) */
	if (st && !alex_sidecar_suffix(path) && (l->db = alex_pdb_named(path))) {
		l->role = ROLE_DB;
		if (alex_watch_stat(l->db, st)) {
			set_size(st, l->db);
			l->known = 1;
			l->rc = 0;
		}
		errno = saved;
		return;
	}
	/* the lookup may stat the database's name (no database open under
	 * it): its errno is not the caller's.  A sidecar's name (journal,
	 * WAL) comes with its database; a database's name without one was
	 * not an open database's (above) */
	l->role = alex_pdb_sidecar(dirfd, path, &l->db);
	if (l->db && st && alex_name_known(l->db, l->role, st, &exists, &l->before)) {
		l->known = 1;
		l->rc = exists ? 0 : -1;
	}
	errno = saved;
}

/* The answer from memory; errno as the kernel would set it. */
static int look_answer(struct name_look *l)
{
	alex_pdb_put(l->db);
	errno = l->rc ? ENOENT : l->errno0;
	return l->rc;
}

/* After the real call (rc its result). */
static int look_end(struct name_look *l, int rc, struct stat64 *st)
{
	int saved = errno;

	if (l->role == ROLE_DB && rc == 0 && S_ISREG(st->st_mode)) {
		/* the real call named the file: no second lookup by path */
		struct pdb *db = alex_pdb_find_id(st->st_dev, st->st_ino);
		if (db)
			set_size(st, db);
		alex_pdb_put(db);
	} else if (l->db && l->role != ROLE_DB && rc != 0 && saved == ENOENT) {
		alex_name_absent(l->db, l->role, &l->before);
		if (l->role == ROLE_JOURNAL && alex_journal_stat(l->db, st) == 0)
			rc = 0;
	}
	alex_pdb_put(l->db);
	/* a success from memory after the kernel's ENOENT: the caller's errno */
	errno = rc == 0 ? l->errno0 : saved;
	return rc;
}

/* statx: the real call made, nothing answered from memory */
static int fix_path(int dirfd, const char *path, int rc, struct stat64 *st)
{
	struct name_look l;

	look_begin(dirfd, path, NULL, &l);
	return look_end(&l, rc, st);
}

/* fstatat(fd, "", st, AT_EMPTY_PATH): a call on fd itself */
static int empty_path(const char *path, int flags)
{
	return path && !*path && (flags & AT_EMPTY_PATH);
}

/* A stat by name, traced; answered from memory when it can be. */
#define STAT_NAME(dirfd, st64, call)                                                              \
	do {                                                                                      \
		struct name_look l;                                                               \
		look_begin((dirfd), path, (st64), &l);                                            \
		int r = ALEX_TRACED_PATH(path, ALEX_TK_STAT, l.known ? ALEX_TF_SERVED : 0,         \
					 l.known ? look_answer(&l) : (call));                      \
		return l.known ? r : look_end(&l, r, (st64));                                     \
	} while (0)
#define STAT_CALL(st64, call) STAT_NAME(AT_FDCWD, st64, call)
_Static_assert(sizeof(struct stat) == sizeof(struct stat64), "64-bit stat layout expected");
#define S64(p) ((struct stat64 *)(void *)(p))

/*
 * The fstat family: an in-memory journal's descriptor is answered without
 * the kernel (journal.c), a database's as its name is (watch.c: the same
 * inode, the same attributes) and with its logical size.  One look at the
 * fd table; the real call is the one of the caller's name.
 */
static int fstat_known(struct ofd *o, struct stat64 *st)
{
	if (o->role == ROLE_JOURNAL) {
		alex_journal_fstat(o->db, st);
		return 1;
	}
	return o->role == ROLE_DB && o->db->path_matches && alex_watch_stat(o->db, st);
}

#define FSTAT(st64, call)                                                                         \
	do {                                                                                      \
		struct ofd *o = alex_fd_get(fd);                                                  \
		int mem = o && fstat_known(o, (st64));                                            \
		int r = ALEX_TRACED_IO(fd, ALEX_TK_FSTAT, 0, 0, NULL, mem ? ALEX_TF_SERVED : 0,   \
				       mem ? 0 : (call));                                         \
		if (r == 0 && o && o->role == ROLE_DB)                                           \
			set_size(st64, o->db);                                                    \
		if (r == 0 && o && o->role == ROLE_TEMP)                                         \
			alex_temp_fstat(o, st64);                                                 \
		return r;                                                                         \
	} while (0)

/* the fstatat family: on dirfd itself (AT_EMPTY_PATH), or by name */
#define STATAT_CALL(st64, call)                                                                   \
	do {                                                                                      \
		if (empty_path(path, flags)) {                                                    \
			int fd = dirfd;                                                           \
			FSTAT(st64, call);                                                        \
		}                                                                                 \
		STAT_NAME(dirfd, st64, call);                                                     \
	} while (0)

/* SQLite run as root gives each new journal the database's owner and
 * group: one system call per transaction, and a journal in memory has no
 * owner to give.  Anything else passes through, after the fd lookup. */
ALEX_EXPORT int fchown(int fd, uid_t uid, gid_t gid)
{
	struct ofd *o = alex_fd_get(fd);
	if (o && o->role == ROLE_JOURNAL)
		return 0;
	return REAL(fchown)(fd, uid, gid);
}

ALEX_EXPORT int fstat(int fd, struct stat *st)
{
	FSTAT(S64(st), REAL(fstat)(fd, st));
}
ALEX_EXPORT int fstat64(int fd, struct stat64 *st)
{
	FSTAT(st, REAL(fstat64)(fd, st));
}
ALEX_EXPORT int __fxstat(int ver, int fd, struct stat *st)
{
	FSTAT(S64(st), REAL(__fxstat)(ver, fd, st));
}
ALEX_EXPORT int __fxstat64(int ver, int fd, struct stat64 *st)
{
	FSTAT(st, REAL(__fxstat64)(ver, fd, st));
}

ALEX_EXPORT int stat(const char *path, struct stat *st)
{
	STAT_CALL(S64(st), REAL(stat)(path, st));
}
ALEX_EXPORT int stat64(const char *path, struct stat64 *st)
{
	STAT_CALL(st, REAL(stat64)(path, st));
}
ALEX_EXPORT int lstat(const char *path, struct stat *st)
{
	STAT_CALL(S64(st), REAL(lstat)(path, st));
}
ALEX_EXPORT int lstat64(const char *path, struct stat64 *st)
{
	STAT_CALL(st, REAL(lstat64)(path, st));
}
ALEX_EXPORT int __xstat(int ver, const char *path, struct stat *st)
{
	STAT_CALL(S64(st), REAL(__xstat)(ver, path, st));
}
ALEX_EXPORT int __xstat64(int ver, const char *path, struct stat64 *st)
{
	STAT_CALL(st, REAL(__xstat64)(ver, path, st));
}
ALEX_EXPORT int __lxstat(int ver, const char *path, struct stat *st)
{
	STAT_CALL(S64(st), REAL(__lxstat)(ver, path, st));
}
ALEX_EXPORT int __lxstat64(int ver, const char *path, struct stat64 *st)
{
	STAT_CALL(st, REAL(__lxstat64)(ver, path, st));
}

static int fix_at(int dirfd, const char *path, int flags, int rc, struct stat64 *st)
{
	if (path && !*path && (flags & AT_EMPTY_PATH)) {
		if (rc == 0)
			fix_fd(dirfd, st);
		return rc;
	}
	return fix_path(dirfd, path, rc, st);
}

ALEX_EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	STATAT_CALL(S64(st), REAL(fstatat)(dirfd, path, st, flags));
}
ALEX_EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
	STATAT_CALL(st, REAL(fstatat64)(dirfd, path, st, flags));
}
ALEX_EXPORT int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags)
{
	STATAT_CALL(S64(st), REAL(__fxstatat)(ver, dirfd, path, st, flags));
}
ALEX_EXPORT int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags)
{
	STATAT_CALL(st, REAL(__fxstatat64)(ver, dirfd, path, st, flags));
}

ALEX_EXPORT int statx(int dirfd, const char *path, int flags, unsigned int mask,
		      struct statx *stx)
{
	int r = REAL(statx)(dirfd, path, flags, mask, stx);
	struct stat64 st;

	if (r != 0 || !alex_active())
		return r;
	memset(&st, 0, sizeof st);
	st.st_dev = makedev(stx->stx_dev_major, stx->stx_dev_minor);
	st.st_ino = stx->stx_ino;
	st.st_mode = stx->stx_mode;
	st.st_size = (off64_t)stx->stx_size;
	st.st_blocks = (blkcnt64_t)stx->stx_blocks;
	fix_at(dirfd, path, flags, 0, &st);
	stx->stx_size = (uint64_t)st.st_size;
	stx->stx_blocks = (uint64_t)st.st_blocks;
	return r;
}
