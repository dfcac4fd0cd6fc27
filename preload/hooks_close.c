/*
 * hooks_close.c - close and its relatives (fclose of an fdopen()ed stream,
 * closefrom, close_range) and the dup family: the fd table follows the
 * kernel's.  The last descriptor of a database drops its engine, which
 * commits and checkpoints (serve.c).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "config.h"
#include "dirsync.h"
#include "fdtable.h"
#include "hooks.h"
#include "locks.h"
#include "pdb.h"
#include "real.h"
#include "record.h"
#include "trace.h"

int alex_close_hook(int fd)
{
	if (alex_fd_get(fd) && alex_vfork_child())
		return REAL(close)(fd); /* the table is our parent's */
	struct ofd *o = alex_fd_take(fd);
	ALEX_REC_UNWATCH(fd);
	/* a close drops every POSIX lock the process holds on the file */
	if (o && o->role == ROLE_DB)
		alex_locks_gone(o->db);
	/* the journal's and the directory's kept descriptors stay open for
	 * the next transaction */
	struct alex_kept *k = alex_ofd_kept(o);
	int kept = k && alex_pdb_kept_back(o->db, k, fd);
	if (!kept)
		alex_kept_met(fd); /* a number of ours let go? (pdb.h) */
	int rc = kept ? 0 : REAL(close)(fd), saved = errno;

	if (o)
		alex_ofd_put(o); /* the last one closes the engine, checkpointing */
	errno = saved;
	return rc;
}

ALEX_EXPORT int close(int fd)
{
	int tr = alex_trace_fd(fd);
	/* a vfork()ed child's close is not its parent's: the table stays */
	if (!tr || alex_vfork_child())
		return alex_close_hook(fd);
	uint64_t t0 = alex_trace_now();
	struct ofd *o = alex_fd_get(fd);
	/* a kept descriptor (journal, directory) is not closed: served */
	struct alex_kept *k = alex_ofd_kept(o);
	int sv = k && fd == k->fd ? ALEX_TF_SERVED : 0;
	alex_trace_closed(fd);
	int r = alex_close_hook(fd);
	alex_trace_io(tr, ALEX_TK_CLOSE, fd, t0, 0, 0, r, NULL, sv);
	return r;
}

/* After newfd became a copy of oldfd in the kernel. */
void alex_dup_track(int oldfd, int newfd)
{
	int saved = errno;

	if (alex_vfork_child())
		return;
	alex_kept_met(newfd);
	struct ofd *gone = alex_fd_take(newfd), *o = alex_fd_get(oldfd);

	if (gone && gone->role == ROLE_DB)
		alex_locks_gone(gone->db);
	if (gone)
		alex_ofd_put(gone); /* may close an engine: errno is the caller's */
	if (o && alex_fd_set(newfd, o) != 0)
		alex_msg(ALEX_MSG_ERROR, "descriptor %d beyond the table: untracked", newfd);
	errno = saved;
}

/* the trace follows the copy (not in a vfork()ed child: its parent's table) */
static void trace_dup(int fd, int n)
{
	if (alex_tracing && n >= 0 && !alex_vfork_child())
		alex_trace_dup(fd, n, 1);
}

ALEX_EXPORT int dup(int fd)
{
	int n = REAL(dup)(fd);
	if (n >= 0)
		alex_dup_track(fd, n);
	trace_dup(fd, n);
	return n;
}

ALEX_EXPORT int dup2(int fd, int nfd)
{
	int r = REAL(dup2)(fd, nfd);
	if (r >= 0 && fd != nfd) {
		alex_dup_track(fd, r);
		trace_dup(fd, r);
	}
	return r;
}

ALEX_EXPORT int dup3(int fd, int nfd, int flags)
{
	int r = REAL(dup3)(fd, nfd, flags);
	if (r >= 0)
		alex_dup_track(fd, r);
	trace_dup(fd, r);
	return r;
}

/* Forgets one descriptor closed where we cannot see the close; its
 * description, if any, is the caller's to let go. */
static struct ofd *forget_one(int fd, int tracing)
{
	if (tracing && alex_trace_fd(fd))
		alex_trace_closed(fd);
	alex_kept_met(fd);
	struct ofd *o = alex_fd_get(fd) ? alex_fd_take(fd) : NULL;
	if (o && o->role == ROLE_DB)
		alex_locks_gone(o->db);
	return o;
}

static void forget_range(unsigned first, unsigned last)
{
	int saved = errno, tracing = alex_tracing;
	for (unsigned fd = first; fd <= last && fd < (1u << 20); fd++) {
		struct ofd *o = forget_one((int)fd, tracing);
		if (o)
			alex_ofd_put(o);
	}
	errno = saved;
}

/*
 * A descriptor glibc closes inside (fclose of an fdopen()ed stream,
 * closedir of an fdopendir()ed one) is forgotten before it is closed, as
 * close() does: once the kernel has the number back another thread's open
 * may get it and enter it in the table, and forgetting it then would
 * forget that one (review: a database open beside opendir/closedir churn
 * got "disk I/O error").  The description is let go after the close.
 */
static struct ofd *forget_begin(int fd)
{
	return fd < 0 || alex_vfork_child() ? NULL : forget_one(fd, alex_tracing);
}

static void forget_end(struct ofd *o)
{
	int saved = errno;

	if (o)
		alex_ofd_put(o);
	errno = saved;
}

ALEX_EXPORT int fclose(FILE *fp)
{
	struct ofd *o = forget_begin(fp ? fileno(fp) : -1);
	int r = REAL(fclose)(fp);
	forget_end(o);
	return r;
}

/* a directory stream's descriptor (fdopendir) closes inside glibc */
static int dir_fd(DIR *d)
{
	return d ? dirfd(d) : -1;
}

ALEX_EXPORT int closedir(DIR *d)
{
	struct ofd *o = forget_begin(dir_fd(d));
	int r = REAL(closedir)(d);
	forget_end(o);
	return r;
}

/* closefrom cannot fail: forgotten first, for the reason above */
ALEX_EXPORT void closefrom(int lowfd)
{
	if (lowfd >= 0 && !alex_vfork_child())
		forget_range((unsigned)lowfd, ~0u);
	REAL(closefrom)(lowfd);
}

/* Without flags close_range cannot fail on a valid range: forgotten
 * first, as closefrom.  With CLOSE_RANGE_UNSHARE it may (ENOMEM), and a
 * descriptor forgotten but still open would escape the log: after. */
ALEX_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	int ours = !alex_vfork_child(), before = ours && flags == 0 && first <= last;
	if (before)
		forget_range(first, last);
	int r = (int)syscall(SYS_close_range, first, last, flags);
	if (ours && !before && r == 0 && !(flags & CLOSE_RANGE_CLOEXEC))
		forget_range(first, last);
	return r;
}
