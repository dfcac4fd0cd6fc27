/*
 * watch.c - a stat of a database by its name, answered from memory.
 *
 * SQLite stats the database by name twice in every write transaction:
 * has the file been moved or deleted (SQLITE_READONLY_DBMOVED), and which
 * mode and owner the journal gets.  A stat by name walks the path; the two
 * cost more than all of SQLite's lock calls under the span lock
 * (docs/BENCHMARKS.md).
 *
 * inotify watches the database file (attributes and link count, writes,
 * moves) and every directory above it (attributes, moves, removal; the
 * attributes of the file's own directory through its parent's watch,
 * unless it is a mount's root), and
 * the kernel queues an event before the call that causes it returns.  So
 * an empty queue -- a load from memory (ring.c), or one FIONREAD; no path
 * walk -- means that nothing stat
 * shows has changed since the answer was kept, and the name still leads
 * to the same file; except st_atime, which reads change and which is not
 * watched (every read of the file would be an event).  Any event forgets
 * every kept answer.  An answer is taken again with the watches set first
 * and the stat after, so whatever changes after the stat is still queued.
 *
 * What the kernel answers also depends on the process: its credentials
 * (search permission on the directories) and its root.  Their calls
 * forget every kept answer too (hooks_cred.c).
 *
 * Every answer looks at the queue: the process's own rename, chmod or
 * link, and another program's that it learnt of, come before the question
 * that must see them (a look shared by a span's questions let SQLite
 * commit into a file renamed away between a SELECT and an INSERT of one
 * transaction, where it says SQLITE_READONLY_DBMOVED: review).  The
 * fstat of a descriptor of the database is answered from the same kept
 * stat: the same inode (hooks_stat.c).
 *
 * Not seen: a file system mounted over a directory of the path (no event);
 * credentials or root changed by raw system calls; a child made by a raw
 * clone system call or _Fork, which shares the queue without our fork
 * handlers and may read its events (libalex(7)).  The answer is
 * kept only for the canonical name (no symbolic link on the way, pdb.c)
 * and while it names the database's own inode.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "hooks.h"
#include "pdb.h"
#include "real.h"
#include "ring.h"
#include "state.h"
#include "stats.h"
#include "watch.h"

#define FILE_EVENTS (IN_ATTRIB | IN_MODIFY | IN_MOVE_SELF | IN_DELETE_SELF | IN_DONT_FOLLOW)
#define DIR_EVENTS (IN_ATTRIB | IN_MOVE_SELF | IN_DELETE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW)
/* The file's own directory: its attributes are its parent's event (a
 * directory's IN_ATTRIB reports its children's too), so no event here
 * that a child can cause -- unless it is a mount's root (mount_root).
 * A watch that takes a child's events makes the kernel look at it at
 * every write of any file in the directory (__fsnotify_parent): SQLite's
 * -wal, ALEX's log, 2 % of a WAL insert. */
#define OWN_DIR_EVENTS (IN_MOVE_SELF | IN_DELETE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW)
#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x2000 /* Linux 5.8's; headers before it lack it */
#endif
/* answers between checks that the descriptor is still the queue when the
 * hooks saw nothing of its number (a raw close by the program and the
 * number's reuse would go unseen else: pdb.h, alex_kept_still) */
#define CHECK_EVERY 256

static alex_mutex mu = ALEX_MUTEX_INIT;
static int wfd = -1;     /* the queue; -1 not made (yet, or again), -2 never (no inotify) */
static dev_t wdev;
static ino_t wino;
static struct alex_kept_check wcheck;
static uint64_t gen = 1; /* (atomic) changes seen; an answer kept at an older one is stale */
static int behind;       /* events were left in the queue: look with FIONREAD */
static int wclosed;      /* (atomic) the hooks saw the queue's number closed or reused */

/* Under mu: the queue made, or -1. */
static int make(void)
{
	struct stat64 st;
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);

	if (fd < 0) {
		/* EMFILE from the per-user instance limit, or no inotify: the
		 * kernel answers every stat, as without ALEX */
		wfd = -2;
		alex_msg(ALEX_MSG_DEBUG, "inotify: %s: stats by name made as asked", strerror(errno));
		return -1;
	}
	if (REAL(fstat64)(fd, &st) != 0) {
		REAL(close)(fd);
		wfd = -2;
		return -1;
	}
	wdev = st.st_dev;
	wino = st.st_ino;
	alex_kept_fresh(&wcheck);
	alex_kept_mark(fd, 1); /* a close of its number through the hooks is seen */
	__atomic_store_n(&wclosed, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&wfd, fd, __ATOMIC_RELEASE);
	behind = 0;
	alex_ring_queue(fd); /* before any watch: nothing is queued yet */
	alex_watch_forget();
	return 0;
}

/* Under mu: the program closed our descriptor (or its number is another
 * file's now).  Forgotten, not closed: it is not ours to close.  Its
 * number stays marked: a kept journal's may be the same now, and a stale
 * mark costs only a check. */
static void lost(void)
{
	alex_ring_retire();
	wfd = -1;
	alex_watch_forget();
}

void alex_watch_met(int fd)
{
	if (fd >= 0 && fd == __atomic_load_n(&wfd, __ATOMIC_ACQUIRE))
		__atomic_store_n(&wclosed, 1, __ATOMIC_RELEASE);
}

void alex_watch_forget(void)
{
	__atomic_add_fetch(&gen, 1, __ATOMIC_SEQ_CST);
}

/* Under mu, wfd >= 0: reads whatever the queue holds.  0 when it was
 * empty, 1 when it held events (every kept answer stale now), -1 lost. */
static int drain(void)
{
	int n = 0;

	if (!behind && alex_ring_quiet())
		return 0; /* nothing queued since the last look: a load */
	/* still the queue before the ioctl: after a close the hooks saw,
	 * the number may be a file of the program's -- lost, whatever an
	 * fstat says (an inotify instance of the program's looks like ours) */
	if (__atomic_exchange_n(&wclosed, 0, __ATOMIC_ACQ_REL) ||
	    !alex_kept_still(&wcheck, wfd, wdev, wino, CHECK_EVERY)) {
		lost();
		return -1;
	}
	/* the ring's signals taken before the look: what is queued after it
	 * is signalled again; a poll that ended, or one of a queue lost, is
	 * armed again on this one first */
	alex_ring_look(wfd);
	if (ioctl(wfd, FIONREAD, &n) != 0) {
		lost();
		return -1;
	}
	if (n == 0) {
		behind = 0;
		return 0;
	}
	if (!alex_fd_is(wfd, wdev, wino)) { /* before its events are read */
		lost();
		return -1;
	}
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	/* events that keep coming (a checkpoint's writes) are left for the
	 * next call, which looks with FIONREAD again and reads on: the ring
	 * signals new events only (every answer is forgotten already; this
	 * keeps the queue from filling) */
	int i = 0;
	while (i < 16 && REAL(read)(wfd, buf, sizeof buf) > 0)
		i++;
	behind = i == 16;
	alex_watch_forget();
	return 1;
}

/* Is dir a mount's root?  The kernel tells a directory's watch of its
 * child's events through the file system's tree, where a mount's root has
 * no parent, or another directory (a bind mount, as a container's volume
 * is): its attributes reach no watch of the path above, and it is watched
 * for them itself.  In doubt (before Linux 5.8, no such attribute), yes. */
static int mount_root(const char *dir)
{
	struct statx sx;

	if (REAL(statx)(AT_FDCWD, dir, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, 0, &sx) != 0)
		return 1;
	return !(sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) ||
	       (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

/* Under mu: watches on every directory of path and on the file, before
 * the stat that is kept.  path is canonical: absolute, no symbolic link. */
static int arm(const char *path)
{
	char dir[PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof dir || path[0] != '/')
		return -1;
	size_t own = 0; /* where the file's own directory's name ends */
	for (size_t i = 1; i < len; i++)
		if (path[i] == '/')
			own = i;
	/* added to, not replaced: a directory may be one database's own and
	 * another's above it, and then needs both (IN_MASK_ADD) */
	if (inotify_add_watch(wfd, "/", DIR_EVENTS | IN_MASK_ADD) < 0)
		return -1;
	for (size_t i = 1; i < len; i++) {
		if (path[i] != '/')
			continue;
		memcpy(dir, path, i);
		dir[i] = 0;
		if (inotify_add_watch(wfd, dir, (i == own ? OWN_DIR_EVENTS : DIR_EVENTS) | IN_MASK_ADD) < 0)
			return -1;
		/* asked after the watch is set: a mount made there before the
		 * question is seen; one made after is not (no mount over the
		 * path is: above) */
		if (i == own && mount_root(dir) &&
		    inotify_add_watch(wfd, dir, DIR_EVENTS | IN_MASK_ADD) < 0)
			return -1;
	}
	return inotify_add_watch(wfd, path, FILE_EVENTS | IN_MASK_ADD) < 0 ? -1 : 0;
}

/* Under mu, the queue empty at g: the kernel's answer now, kept if the
 * name still leads to the database's inode -- itself, not through a
 * symbolic link that took its place (then the answers with and without
 * following it differ: review), by lstat, which follows the directories'. */
static int take(struct pdb *db, struct stat64 *st, uint64_t g)
{
	struct stat64 now;

	if (arm(db->path) != 0 || REAL(lstat64)(db->path, &now) != 0 || now.st_dev != db->dev ||
	    now.st_ino != db->ino || !S_ISREG(now.st_mode))
		return 0;
	db->name_st = now;
	db->name_gen = g;
	*st = now;
	ALEX_COUNT(name_takes, 1);
	return 1;
}

int alex_watch_stat(struct pdb *db, struct stat64 *st)
{
	int saved = errno, done = 0;

	if (!alex_cfg.name_watch || alex_vfork_child())
		return 0;
	alex_mutex_lock(&mu);
	if ((wfd >= 0 || (wfd == -1 && make() == 0)) && drain() >= 0) {
		uint64_t g = __atomic_load_n(&gen, __ATOMIC_SEQ_CST);
		if (db->name_gen == g) {
			*st = db->name_st;
			done = 1;
			ALEX_COUNT(name_answers, 1);
		} else {
			done = take(db, st, g);
		}
	}
	alex_mutex_unlock(&mu);
	errno = saved;
	return done;
}

static void before_fork(void)
{
	alex_mutex_lock(&mu);
}

static void after_fork_parent(void)
{
	alex_mutex_unlock(&mu);
}

/* The child's copy reads the parent's queue: closed, and the child makes
 * its own when it asks. */
static void after_fork_child(void)
{
	alex_ring_forked();
	if (wfd >= 0 && !__atomic_load_n(&wclosed, __ATOMIC_ACQUIRE) && alex_fd_is(wfd, wdev, wino))
		REAL(close)(wfd);
	if (wfd != -2)
		lost();
	alex_mutex_unlock(&mu);
}

void alex_watch_atfork(void)
{
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}
