/*
 * pdb.c - one engine per database file per process, found by device and
 * inode so that every name of the file (relative, "..", symlink, hard link)
 * shares it.  The engine's own descriptor on the database stays open as
 * long as SQLite has one: closing any descriptor of a file drops all of the
 * process's POSIX locks on it, SQLite's included.
 */
#include <errno.h>
#include <signal.h>
#include <time.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "real.h"
#include "state.h"
#include "stats.h"

/* life: held while an engine is made or closed, so that a thread opening
 * the database cannot race the last close of it (which checkpoints and
 * briefly opens a descriptor of its own).  Order: life, reg, a pdb's mu. */
static pthread_mutex_t life = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t reg = PTHREAD_MUTEX_INITIALIZER;
static struct pdb *head;
int alex_pdb_dirsync_pending;

int alex_errno_of(int rc)
{
	if (rc > 0)
		return rc;
	switch (rc) {
	case ALEX_ENOMEM: return ENOMEM;
	case ALEX_EINVAL: return EINVAL;
	case ALEX_EBUSY: return EBUSY;
	default: return EIO; /* corrupt log, bad block, failed engine */
	}
}

static struct pdb *lookup(dev_t dev, ino_t ino)
{
	for (struct pdb *p = head; p; p = p->next)
		if (p->dev == dev && p->ino == ino)
			return p;
	return NULL;
}

static void dir_identity(struct pdb *p)
{
	char dir[PATH_MAX];
	struct stat st;
	const char *slash = strrchr(p->path, '/');
	size_t n = slash == p->path ? 1 : (size_t)(slash - p->path);

	memcpy(dir, p->path, n);
	dir[n] = 0;
	if (REAL(stat)(dir, &st) == 0) {
		p->dir_dev = st.st_dev;
		p->dir_ino = st.st_ino;
	}
}

/*
 * ALEX_SYNC=normal promises durability within ALEX_SYNC_MS even when the
 * program stops committing.  A thread, started with the first engine,
 * wakes every half window and syncs what is due.  It holds no lock while
 * it sleeps; after fork() the child starts its own when it opens again.
 */
static int flusher_started;

static void *flusher(void *arg)
{
	(void)arg;
	struct timespec ts = { 0, (long)alex_cfg.engine.sync_ms * 500000L };
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec = ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
	}
	for (;;) {
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&reg);
		for (struct pdb *p = head; p; p = p->next) {
			pthread_mutex_lock(&p->mu);
			int rc = alex_sync_if_due(p->eng);
			pthread_mutex_unlock(&p->mu);
			if (rc)
				alex_log(ALEX_LOG_ERROR, "%s: background sync: %s", p->path,
					 alex_strerror(rc));
		}
		pthread_mutex_unlock(&reg);
	}
	return NULL;
}

static void start_flusher(void)
{
	pthread_t t;
	pthread_attr_t a;

	if (flusher_started || alex_cfg.engine.sync != ALEX_SYNC_NORMAL)
		return;
	flusher_started = 1;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	/* signals are the program's business, not this thread's */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&t, &a, flusher, NULL) != 0) {
		flusher_started = 0;
		alex_log(ALEX_LOG_ERROR, "ALEX_SYNC=normal: no background sync thread; "
					 "commits are synced only when the next one comes");
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
}

int alex_pdb_get(int fd, const char *path, struct pdb **out)
{
	struct stat st;
	char canon[PATH_MAX];
	int err = 0;

	if (REAL(fstat)(fd, &st) != 0)
		return errno;
	if (!S_ISREG(st.st_mode))
		return ENOTSUP; /* a device or fifo named *.db: not ours */
	pthread_mutex_lock(&life);
	pthread_mutex_lock(&reg);
	struct pdb *p = lookup(st.st_dev, st.st_ino);
	if (p) {
		p->refs++;
		goto out;
	}
	if (!realpath(path, canon)) {
		err = errno;
		goto out;
	}
	p = calloc(1, sizeof *p);
	if (!p || !(p->path = strdup(canon))) {
		free(p);
		p = NULL;
		err = ENOMEM;
		goto out;
	}
	p->dev = st.st_dev;
	p->ino = st.st_ino;
	p->jmem = -1;
	p->refs = 1;
	pthread_mutex_init(&p->mu, NULL);
#ifdef ALEX_TESTING
	const struct alex_io *io = alex_cfg.test ? alex_test_io(&alex_cfg.test_cfg) : NULL;
#else
	const struct alex_io *io = NULL;
#endif
	int rc = alex_open(canon, &alex_cfg.engine, io, &p->eng);
	/* SQLite retries a failed open (read-only next): say it once */
	static dev_t last_dev;
	static ino_t last_ino;
	static int last_rc;
	int quiet = rc && rc == last_rc && st.st_dev == last_dev && st.st_ino == last_ino;
	if (rc) {
		last_rc = rc;
		last_dev = st.st_dev;
		last_ino = st.st_ino;
	}
	if (quiet) {
		/* said already */
	} else if (rc == ALEX_EPERMS) {
		struct stat ls, ds;
		char log[PATH_MAX + 8];
		snprintf(log, sizeof log, "%s-alex", canon);
		unsigned lm = REAL(stat)(log, &ls) ? 0 : ls.st_mode & 0777;
		unsigned dm = REAL(stat)(canon, &ds) ? 0 : ds.st_mode & 0777;
		alex_log(ALEX_LOG_ERROR, "%s: mode %04o lets in users the database (%04o) keeps out, "
			 "and ALEX may not narrow it; the database stays closed until: chmod %04o %s",
			 log, lm, dm, dm, log);
	} else if (rc) {
		/* a problem of the log names the log, with what to do about it */
		int logs = rc == ALEX_ECORRUPT || rc == ALEX_EVERSION || rc == ALEX_EFOREIGN;
		alex_log(ALEX_LOG_ERROR, "%s%s: %s%s%s", canon, logs ? "-alex" : "",
			 alex_strerror(rc), logs ? "; the database stays closed until: alex recover " : "",
			 logs ? canon : "");
	}
	if (rc) {
		err = alex_errno_of(rc);
		free(p->path);
		free(p);
		p = NULL;
		goto out;
	}
	struct alex_stats s;
	alex_stats(p->eng, &s);
	if (s.lost_offset)
		alex_log(ALEX_LOG_ERROR, "%s-alex: damaged record at byte %llu (%s); committed "
			 "records after it (from byte %llu) cannot be used; %llu commits kept",
			 canon, (unsigned long long)s.stop_offset,
			 alex_damage_name(s.stop_reason),
			 (unsigned long long)s.lost_offset, (unsigned long long)s.recovered_commits);
	else if (s.stop_reason > ALEX_STOP_STALE)
		/* a torn last write after a crash looks the same: not an error */
		alex_log(ALEX_LOG_WARN, "%s-alex: damaged or torn record at byte %llu (%s), the "
			 "last in the log: dropped; %llu commits kept", canon,
			 (unsigned long long)s.stop_offset, alex_stop_name(s.stop_reason),
			 (unsigned long long)s.recovered_commits);
	else if (s.recovered_records)
		alex_log(ALEX_LOG_INFO, "%s-alex: recovered %llu commits; log ends at byte %llu "
			 "(%s), %llu uncommitted or torn records dropped", canon,
			 (unsigned long long)s.recovered_commits, (unsigned long long)s.stop_offset,
			 alex_stop_name(s.stop_reason), (unsigned long long)s.dropped_records);
	dir_identity(p);
	/* a reference journal a crash left (multidb.c): removed once decided */
	char jpath[PATH_MAX + 16];
	snprintf(jpath, sizeof jpath, "%s-journal", canon);
	p->ref_check = REAL(access)(jpath, F_OK) == 0;
	ALEX_COUNT(engines, 1);
	start_flusher();
	p->next = head;
	head = p;
out:
	pthread_mutex_unlock(&reg);
	pthread_mutex_unlock(&life);
	*out = p;
	return err;
}

struct pdb *alex_pdb_find_id(dev_t dev, ino_t ino)
{
	if (!__atomic_load_n(&head, __ATOMIC_ACQUIRE))
		return NULL;
	pthread_mutex_lock(&reg);
	struct pdb *p = lookup(dev, ino);
	if (p)
		p->refs++;
	pthread_mutex_unlock(&reg);
	return p;
}

struct pdb *alex_pdb_find(const char *path)
{
	struct stat st;

	if (!head || REAL(stat)(path, &st) != 0)
		return NULL;
	pthread_mutex_lock(&reg);
	struct pdb *p = lookup(st.st_dev, st.st_ino);
	if (p)
		p->refs++;
	pthread_mutex_unlock(&reg);
	return p;
}

int alex_pdb_each(int (*fn)(struct pdb *db, void *arg), void *arg)
{
	struct pdb *v[64];
	int n = 0, err = 0;

	if (!__atomic_load_n(&head, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&reg);
	for (struct pdb *p = head; p && n < 64; p = p->next, n++) {
		p->refs++;
		v[n] = p;
	}
	pthread_mutex_unlock(&reg);
	for (int i = 0; i < n; i++) {
		if (!err)
			err = fn(v[i], arg);
		alex_pdb_put(v[i]);
	}
	return err;
}

/* Takes SQLite's EXCLUSIVE lock on path, without waiting: the descriptor
 * that holds it, or -1 if another process uses the database. */
static int exclusive_hold(const char *path)
{
	struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0x40000000L,
			   .l_len = 2 + 510 };
	int fd = REAL(open)(path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (REAL(fcntl)(fd, F_SETLK, &l) != 0) {
		REAL(close)(fd);
		return -1;
	}
	return fd;
}

void alex_pdb_put(struct pdb *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&reg);
	if (p->refs > 1) {
		p->refs--;
		pthread_mutex_unlock(&reg);
		return;
	}
	pthread_mutex_unlock(&reg);
	/* perhaps the last reference: decide under life, which also keeps
	 * new opens out until this one is closed */
	pthread_mutex_lock(&life);
	pthread_mutex_lock(&reg);
	if (--p->refs > 0) {
		pthread_mutex_unlock(&reg);
		pthread_mutex_unlock(&life);
		return;
	}
	for (struct pdb **pp = &head; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	pthread_mutex_unlock(&reg);
	/* The last descriptor is gone.  What SQLite wrote without a sync of
	 * its own (synchronous=OFF) is still a finished transaction to it. */
	int rc = alex_commit(p->eng);
	if (rc)
		alex_log(ALEX_LOG_ERROR, "%s: final commit: %s", p->path, alex_strerror(rc));
	/* Checkpoint only if no other process uses the database: their engines
	 * may be reading the log this would start to overwrite.  SQLite's own
	 * EXCLUSIVE lock says so, and is held throughout, so that nobody
	 * commits meanwhile; first catch up with what others committed since
	 * this engine last looked, or the new epoch would orphan it.  This
	 * process has no SQLite descriptor left on the file, so closing ours
	 * drops nothing of SQLite's. */
	int xfd = -1;
	if (!rc && alex_cfg.engine.checkpoint_on_close && (xfd = exclusive_hold(p->path)) >= 0 &&
	    ((rc = alex_refresh(p->eng, 1)) || (rc = alex_checkpoint(p->eng))))
		alex_log(ALEX_LOG_WARN, "%s: checkpoint at close: %s (the log keeps the data)",
			 p->path, alex_strerror(rc));
	if (xfd >= 0)
		REAL(close)(xfd);
	alex_set_checkpoint_on_close(p->eng, 0);
	struct alex_stats es;
	alex_stats(p->eng, &es);
	pthread_mutex_lock(&reg);
	alex_stats_add_engine(&es);
	pthread_mutex_unlock(&reg);
	if ((rc = alex_close(p->eng)))
		alex_log(ALEX_LOG_WARN, "%s: close: %s", p->path, alex_strerror(rc));
	if (p->jmem >= 0)
		REAL(close)(p->jmem);
	free(p->super);
	pthread_mutex_unlock(&life);
	pthread_mutex_destroy(&p->mu);
	free(p->path);
	free(p);
}

int alex_pdb_commit(struct pdb *db)
{
	int saved = errno, err = 0;
	pthread_mutex_lock(&db->mu);
	if (db->super && !db->super_done)
		err = alex_multidb_commit(db); /* one database of several */
	else if ((err = alex_commit(db->eng)))
		err = alex_errno_of(err);
	pthread_mutex_unlock(&db->mu);
	if (err) {
		errno = err;
		return -1;
	}
	errno = saved;
	return 0;
}

int alex_pdb_journal_done(struct pdb *db)
{
	int r = alex_pdb_commit(db), saved = errno;
	pthread_mutex_lock(&db->mu);
	alex_multidb_end(db);
	pthread_mutex_unlock(&db->mu);
	errno = saved;
	return r;
}

/*
 * WAL mode keeps ALEX's log out of the way (docs/PRELOAD.md): SQLite
 * writes the database file itself, in its WAL checkpoints, and a program
 * without ALEX -- Litestream, a plain sqlite3 -- reads it through the WAL,
 * where no mark could stop it.  So before SQLite may use the WAL, the log
 * must hold nothing the database file lacks.  journal_mode=WAL already
 * checkpointed it (core: a commit that enters WAL mode); this catches what
 * a crash or a failed checkpoint left, and refuses the WAL if it cannot.
 * SQLite holds SHARED here, so no rollback-mode commit can land meanwhile;
 * the log's checkpoint lock keeps out other processes doing the same.
 */
int alex_pdb_wal_open(struct pdb *db)
{
	int rc = 0;

	pthread_mutex_lock(&db->mu);
	rc = alex_refresh(db->eng, 1);
	if (!rc && alex_holds_pages(db->eng))
		rc = alex_checkpoint(db->eng);
	if (!rc && alex_holds_pages(db->eng))
		rc = ALEX_EBUSY;
	if (!rc)
		__atomic_add_fetch(&db->wal_ofds, 1, __ATOMIC_ACQ_REL);
	pthread_mutex_unlock(&db->mu);
	if (rc)
		alex_log(ALEX_LOG_ERROR, "%s: the log still holds pages and could not be checkpointed "
			 "(%s); the WAL stays closed until: alex checkpoint %s", db->path,
			 alex_strerror(rc), db->path);
	return rc ? alex_errno_of(rc) : 0;
}

/* Leaving WAL mode (or closing): the engine serves the file again, and
 * must first see it as SQLite and other processes left it. */
void alex_pdb_wal_closed(struct pdb *db)
{
	pthread_mutex_lock(&db->mu);
	if (__atomic_sub_fetch(&db->wal_ofds, 1, __ATOMIC_ACQ_REL) == 0) {
		/* SQLite may hold no lock while it closes its -wal */
		int rc = alex_refresh(db->eng, 0);
		if (rc)
			alex_log(ALEX_LOG_ERROR, "%s: leaving WAL mode: %s", db->path, alex_strerror(rc));
	}
	pthread_mutex_unlock(&db->mu);
}

int alex_pdb_take_dirsync(int fd)
{
	struct stat st;
	int hit = 0;

	if (REAL(fstat)(fd, &st) != 0 || !S_ISDIR(st.st_mode))
		return 0;
	pthread_mutex_lock(&reg);
	int pending = 0;
	for (struct pdb *p = head; p; p = p->next) {
		if (p->skip_dirsync && p->dir_dev == st.st_dev && p->dir_ino == st.st_ino) {
			p->skip_dirsync = 0;
			hit = 1;
		}
		pending |= p->skip_dirsync;
	}
	__atomic_store_n(&alex_pdb_dirsync_pending, pending, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&reg);
	return hit;
}

void alex_pdb_cancel_dirsync(void)
{
	pthread_mutex_lock(&reg);
	for (struct pdb *p = head; p; p = p->next)
		p->skip_dirsync = 0;
	__atomic_store_n(&alex_pdb_dirsync_pending, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&reg);
}

/*
 * fork(): the child gets a copy of every engine.  The locks are taken around
 * the fork so the copies are consistent.
 */
static void before_fork(void)
{
	pthread_mutex_lock(&life);
	pthread_mutex_lock(&reg);
	for (struct pdb *p = head; p; p = p->next)
		pthread_mutex_lock(&p->mu);
}

static void after_fork(void)
{
	for (struct pdb *p = head; p; p = p->next)
		pthread_mutex_unlock(&p->mu);
	pthread_mutex_unlock(&reg);
	pthread_mutex_unlock(&life);
}

/*
 * The child's engines go on working: every transaction starts with SQLite's
 * SHARED lock, which makes them catch up with the log (alex_refresh).  But an
 * in-memory journal must not be shared: one process deleting "its" journal
 * would leave the other a stale one that looks hot.  The child forgets it.
 */
static void child_after_fork(void)
{
	alex_owner_reset();
	flusher_started = 0; /* threads do not survive fork */
	for (struct pdb *p = head; p; p = p->next) {
		if (p->jmem >= 0)
			REAL(close)(p->jmem);
		p->jmem = -1;
		p->skip_dirsync = 0;
		/* the parent's unfinished transaction is the parent's: if the
		 * child closed its copies of SQLite's descriptors, the last
		 * close must not commit it */
		int rc = alex_discard(p->eng);
		if (rc)
			alex_log(ALEX_LOG_ERROR, "%s: after fork: %s", p->path, alex_strerror(rc));
	}
	alex_pdb_dirsync_pending = 0;
	after_fork();
}

void alex_pdb_atfork(void)
{
	pthread_atfork(before_fork, after_fork, child_after_fork);
}

void alex_pdb_sum_live(struct alex_stats *out)
{
	memset(out, 0, sizeof *out);
	pthread_mutex_lock(&reg);
	for (struct pdb *p = head; p; p = p->next) {
		struct alex_stats s;
		pthread_mutex_lock(&p->mu);
		alex_stats(p->eng, &s);
		pthread_mutex_unlock(&p->mu);
		alex_stats_sum(out, &s);
	}
	pthread_mutex_unlock(&reg);
}
