/*
 * hooks_fcntl.c - fcntl: descriptor copies, and SQLite's locks on the
 * database.  Lowering EXCLUSIVE, or releasing the RESERVED lock byte, ends
 * SQLite's write transaction: with synchronous=OFF and no journal file that
 * is the only boundary SQLite shows, so the open transaction is committed
 * before the lock goes -- a writer makes its commit visible before it lets
 * anyone else in.
 */
#include <errno.h>
#include <stdarg.h>

#include "fdtable.h"
#include "hooks.h"
#include "locks.h"
#include "real.h"
#include "serve.h"
#include "span.h"
#include "sqlite_locks.h"
#include "stats.h"
#include "trace.h"

/* A byte-range lock being set (process or open-file-description kind).
 * The command first: for F_SETFD, F_DUPFD and the like the argument is an
 * integer, not a struct to read (a close-on-exec sweep over every
 * descriptor would crash here). */
static int sets_lock(int cmd, const struct flock *l)
{
	return (cmd == F_SETLK || cmd == F_SETLKW || cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW) &&
	       l && l->l_whence == SEEK_SET;
}

/* Does the lock set by l cover byte b? */
static int covers(const struct flock *l, long long b)
{
	return l->l_start <= b && (l->l_len == 0 || l->l_start + l->l_len > b);
}

/* What a lock set on SQLite's bytes means to the engine, found once:
 * releasing the RESERVED byte, letting go of SHARED (and so of any lock:
 * others may commit from now on), or taking SHARED -- the start of a read
 * or write transaction, when other processes' commits must become visible.
 * Or EXCLUSIVE on the same bytes: closing a WAL database, SQLite goes there
 * straight from a SHARED it took long ago, and then checkpoints from what
 * it reads. */
/* SHARED_READ: a process's read lock there, which is also how SQLite
 * lowers EXCLUSIVE (when the process holds it). */
enum { RELEASES_RESERVED = 1, RELEASES_SHARED = 2, TAKES_SHARED = 4, SHARED_READ = 8 };
static int lock_meaning(int cmd, const struct flock *l)
{
	if (!sets_lock(cmd, l))
		return 0;
	if (l->l_type == F_UNLCK)
		return (covers(l, SQLITE_RESERVED_BYTE) ? RELEASES_RESERVED : 0) |
		       (covers(l, SQLITE_SHARED_FIRST) ? RELEASES_SHARED : 0);
	if ((l->l_type != F_RDLCK && l->l_type != F_WRLCK) || !covers(l, SQLITE_SHARED_FIRST))
		return 0;
	return TAKES_SHARED |
	       (l->l_type == F_RDLCK && (cmd == F_SETLK || cmd == F_SETLKW) ? SHARED_READ : 0);
}

/* ALEX's own lock call on SQLite's bytes, as SQLite's would be made: in
 * the span lock, to the model (locks.c) */
static void own_lock(struct ofd *o, int fd, int cmd, struct flock *l, int (*real)(int, int, ...))
{
	int r;
	if (!alex_locks_call(o, fd, cmd, l, real, &r))
		alex_locks_made(o, cmd, l, real(fd, cmd, l));
}

/* After SQLite got SHARED: catch up with other processes' commits, or give
 * the lock back, so that SQLite sees the lock fail (from EXCLUSIVE it falls
 * back to the SHARED it held). */
static int refresh(struct ofd *o, int fd, int cmd, struct flock *l, int (*real)(int, int, ...))
{
	if (alex_serve_lock_shared(o->db) == 0)
		return 0;
	int err = errno;
	struct flock u = *l;
	u.l_type = l->l_type == F_WRLCK ? F_RDLCK : F_UNLCK;
	own_lock(o, fd, cmd, &u, real);
	errno = err;
	return -1;
}

/* SQLite taking RESERVED (a write lock on that byte), the start of its writes */
static int takes_reserved(int cmd, const struct flock *l)
{
	return sets_lock(cmd, l) && l->l_type == F_WRLCK && covers(l, SQLITE_RESERVED_BYTE);
}

/* A lock that the flusher's merge locks may refuse: any lock set on
 * SQLite's bytes (RESERVED, PENDING and EXCLUSIVE are write locks; a
 * SHARED read lock meets them only while it asks at PENDING) */
static int sets_sqlite_lock(int cmd, const struct flock *l)
{
	return sets_lock(cmd, l) && l->l_type != F_UNLCK &&
	       l->l_start < SQLITE_PENDING_BYTE + SQLITE_LOCK_BYTES &&
	       (l->l_len == 0 || l->l_start + l->l_len > SQLITE_PENDING_BYTE);
}

/* Did the lock call that failed meet the flusher's merge locks (their
 * generation odd when the call began, or moved since: staging.c)?  Then
 * wait until the flusher lets go -- it holds mu throughout -- so that this
 * process never sees a writer or a reader that is its own merge. */
static int met_flusher(struct pdb *db, unsigned gen)
{
	if (!(gen & 1) && __atomic_load_n(&db->flusher_gen, __ATOMIC_ACQUIRE) == gen)
		return 0;
	alex_serve_wait(db);
	return 1;
}

/* a lock call locks.c follows: set, or asked about */
static int lock_call(int cmd, const struct flock *l)
{
	return l && (cmd == F_SETLK || cmd == F_SETLKW || cmd == F_OFD_SETLK ||
		     cmd == F_OFD_SETLKW || cmd == F_GETLK || cmd == F_OFD_GETLK);
}

/* *served: answered without the call as made (locks.c) */
static int do_fcntl(struct ofd *o, int fd, int cmd, void *arg, int (*real)(int, int, ...),
		    int *served_out)
{
	int r;

	/* in WAL mode the file is SQLite's own: its locks mark nothing of
	 * ours, and go to the kernel as SQLite makes them */
	if (o && o->role == ROLE_DB && o->db->held.span && alex_pdb_direct(o->db) &&
	    alex_span_leave(o->db) && lock_call(cmd, arg)) {
		/* SQLite holds a write lock on the span's description: its
		 * calls are made there until it lets go */
		int how = alex_span_call(o->db, fd, cmd, arg, 0, real, &r);
		*served_out = how == 1;
		if (how > 0)
			return r;
	}
	if (!o || o->role != ROLE_DB || alex_pdb_direct(o->db)) {
		r = real(fd, cmd, arg);
		if (r >= 0 && o && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC))
			alex_dup_track(fd, r);
		return r;
	}
	/* The transaction is committed before EXCLUSIVE is lowered, not only
	 * before RESERVED goes: SQLite lowers it to SHARED first, and a reader
	 * whose PENDING question (locks.c) came before this writer's PENDING
	 * gets SHARED at that moment -- it must find the commit there, or it
	 * would read, and write, from the state before it. */
	int means = lock_meaning(cmd, arg);
	if (means & RELEASES_RESERVED) {
		ALEX_COUNT(reserved_releases, 1);
		if (alex_serve_commit_open(o->db) != 0)
			return -1; /* the lock stays: SQLite reports the failed unlock */
	} else if ((means & SHARED_READ) && alex_locks_may_hold_exclusive(o->db) &&
		   alex_serve_commit_open(o->db) != 0) {
		return -1;
	}
	int locks = lock_call(cmd, arg), saved = errno;
	unsigned gen = __atomic_load_n(&o->db->flusher_gen, __ATOMIC_ACQUIRE);
	for (int again = 0;; again = 1) {
		int how = locks ? alex_locks_call(o, fd, cmd, arg, real, &r) : 0;
		*served_out = how == 1;
		if (!how) {
			r = real(fd, cmd, arg);
			if (locks)
				alex_locks_made(o, cmd, arg, r);
		}
		if (again || r == 0 || (errno != EAGAIN && errno != EACCES) ||
		    !sets_sqlite_lock(cmd, arg) || !met_flusher(o->db, gen))
			break;
		errno = saved; /* a success the second time leaves it as it was */
	}
	if (r == 0 && takes_reserved(cmd, arg) && alex_serve_lock_reserved(o->db) != 0) {
		int err = errno;
		struct flock u = *(struct flock *)arg;
		u.l_type = F_UNLCK;
		own_lock(o, fd, cmd, &u, real);
		errno = err;
		return -1; /* SQLite: an I/O error taking RESERVED; nothing written yet */
	}
	if (r == 0 && (means & RELEASES_SHARED))
		alex_serve_unfresh(o->db);
	if (r == 0 && (means & TAKES_SHARED) && !__atomic_load_n(&o->db->fresh, __ATOMIC_ACQUIRE)) {
		int saved = errno;
		if (refresh(o, fd, cmd, arg, real))
			return -1;
		errno = saved;
	}
	if (r >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC))
		alex_dup_track(fd, r);
	return r;
}

/* Inline in both entry points: SQLite's WAL mode makes four lock calls
 * per transaction on -shm, which ALEX does not track, and they pay only
 * the fd-table lookup. */
static inline __attribute__((always_inline)) int traced_fcntl(int fd, int cmd, void *arg,
							      int (*real)(int, int, ...))
{
	struct ofd *o = alex_fd_get(fd);
	int tr = alex_trace_fd(fd), served = 0;
	if (!tr)
		return o ? do_fcntl(o, fd, cmd, arg, real, &served) : real(fd, cmd, arg);
	uint64_t t0 = alex_trace_now();
	int r = do_fcntl(o, fd, cmd, arg, real, &served);
	alex_trace_fcntl(tr, fd, cmd, arg, t0, r, served ? ALEX_TF_SERVED : 0);
	if (r >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC))
		alex_trace_dup(fd, r, 0);
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
	return traced_fcntl(fd, cmd, arg, REAL(fcntl));
}

ALEX_EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return traced_fcntl(fd, cmd, arg, REAL(fcntl64));
}

/* lockf sets a lock from the file's offset through libc's own fcntl, past
 * the hook: on a database's descriptor the span lock ends first and the
 * model is in doubt, as after any lock call that is not SQLite's (the
 * span lock's write lock, kept between transactions, would otherwise be
 * let go unseen). */
static int before_lockf(int fd, int cmd)
{
	struct ofd *o = alex_fd_get(fd);

	if (!o || o->role != ROLE_DB || cmd == F_TEST)
		return 0;
	int saved = errno, direct = alex_pdb_direct(o->db);
	/* in WAL mode too: a span whose SQLite held a write lock when the
	 * WAL opened (exclusive locking) stays until SQLite lets go */
	if ((!direct || o->db->held.span) && alex_span_leave(o->db) && cmd != F_ULOCK) {
		/* SQLite holds a write lock on the span's description, which
		 * would refuse this process's own lock: refused as another
		 * owner's would, never left to wait (review: libc's F_SETLKW
		 * waited for ever) */
		errno = cmd == F_LOCK ? EDEADLK : EAGAIN;
		return -1;
	}
	if (!direct)
		alex_locks_unknown(o->db);
	errno = saved;
	return 0;
}

ALEX_EXPORT int lockf(int fd, int cmd, off_t len)
{
	return before_lockf(fd, cmd) ? -1 : REAL(lockf)(fd, cmd, len);
}

ALEX_EXPORT int lockf64(int fd, int cmd, off64_t len)
{
	return before_lockf(fd, cmd) ? -1 : REAL(lockf64)(fd, cmd, len);
}
