/*
 * span.c - the span lock: SQLite's lock calls of one transaction answered
 * under one lock of ALEX's, while no other process with ALEX has the
 * database open (docs/LOCKS.md, "The span lock").
 *
 * SQLite makes eight lock calls for an autocommit write and three for a
 * read (with locks.c's question at PENDING); each costs about its kernel
 * time again in the code around it.  At SQLite's first call of a span (its
 * read lock on PENDING, holding nothing) this process takes instead one
 * write lock over all of SQLite's lock bytes, answers the span's calls
 * from the model (locks.c) under it, and makes SQLite's last call (its
 * release of everything) as asked: a read transaction in two calls, a
 * write in three.  The third is EXCLUSIVE's: the write lock is taken again
 * when SQLite asks for PENDING's, so that a lock lost unseen during the
 * span (a descriptor of the file closed by a raw system call) meets
 * whatever another process took meanwhile, as SQLite's own call would.
 *
 * Whenever a call is answered from the model, the kernel holds at least
 * what SQLite was told, and nobody else holds anything.  The cost is to
 * others: a reader of another process is refused where SQLite would let it
 * share.  So the write lock is a lease: a thread of its own (started with
 * the first span, never behind a sync: review) ticks every LEASE_MS while
 * spans are taken, and a span it saw at one tick and finds at the next is
 * given SQLite's own locks -- exactly what the model says, each region
 * replaced in place -- and goes on with SQLite's own calls.  Without that
 * thread there is no span lock.  A
 * process takes it only while it is the only one with ALEX that has the
 * database open: each holds, from its first transaction on it to its last
 * close, a read lock (open file description) on one byte of the
 * database's directory, the byte at the database's inode number, and a
 * write query there through its own description finds any other.  Not on
 * the database file: a lock of any byte there would meet a program's lock
 * of the whole file -- and hang one of this process (review) -- and not on
 * the log: a process that opened the database before the log was made has
 * none open, and would wait behind the spans of a busy writer unseen.
 *
 * Lingering.  In a burst of transactions -- one that begins within
 * BURST_US of the last one's end -- on a fenced file (which SQLite without
 * ALEX cannot read: a plain writer's chance at the file between bursts is
 * not taken from it), SQLite's release of everything is answered too and
 * the write lock kept (span 2): the next transaction's
 * first call takes it again, a call that still meets any lock lost unseen
 * and anything another process took meanwhile, and the release costs no
 * call.  Any other call on the file ends the lingering first (the lock
 * made as it would be without it), and so does the lease, at its second
 * tick: after a burst the lock stays 2-4 ms, no longer.  A transaction
 * after a pause releases as SQLite asks.
 *
 * The span's state is changed by SQLite's lock calls, by the lease and by
 * closes, one at a time (span_mu); SQLite's own calls come one at a time
 * already (its inode mutex).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>

#include "config.h"
#include "flush.h"
#include "locks.h"
#include "pdb.h"
#include "real.h"
#include "serve.h"
#include "span.h"
#include "sqlite_locks.h"
#include "stats.h"
#include "trace.h"

enum { NONE = ALEX_HELD_NONE, READ = ALEX_HELD_READ, WRITE = ALEX_HELD_WRITE };
enum { SPAN_NONE = 0, SPAN_HELD = 1, SPAN_LINGER = 2 };

/* A transaction that begins within this of the last one's end is in a
 * burst: its release lingers */
#define BURST_US 1000

/* A database's first spans go without the span lock */
#define SPAN_WARM 8

/* A span holds the write lock for one to two of these at most */
#define LEASE_MS 2

static int started, refused; /* (atomic) the lease's thread */
static int fast;             /* (atomic) it ticks: spans are taken */
static int news;             /* (atomic) a span began since its last tick */
static pthread_mutex_t lmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lcv;
static pthread_once_t lcv_once = PTHREAD_ONCE_INIT;

/* the monotonic clock: a step of the wall clock neither stalls nor hurries it */
static void init_lcv(void)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&lcv, &a);
	pthread_condattr_destroy(&a);
}

static void lease_one(struct pdb *db, void *arg)
{
	*(int *)arg |= alex_span_lease(db);
}

/* Every LEASE_MS while spans are taken; asleep while none are (a span's
 * start that finds it asleep wakes it).  It only ever tries a database's
 * span_mu, and waits for no I/O but its lock calls. */
static void *leaser(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&lmu);
		if (__atomic_load_n(&fast, __ATOMIC_SEQ_CST)) {
			struct timespec at;
			clock_gettime(CLOCK_MONOTONIC, &at);
			at.tv_nsec += LEASE_MS * 1000000L;
			if (at.tv_nsec >= 1000000000L) {
				at.tv_sec++;
				at.tv_nsec -= 1000000000L;
			}
			while (pthread_cond_timedwait(&lcv, &lmu, &at) == 0)
				; /* a kick is no reason to tick early */
		} else {
			while (!__atomic_load_n(&fast, __ATOMIC_SEQ_CST))
				pthread_cond_wait(&lcv, &lmu);
		}
		pthread_mutex_unlock(&lmu);
		/* ticking on only for spans seen young or begun since: a
		 * span's start that finds fast 0 after this store wakes it */
		int young = 0;
		__atomic_store_n(&fast, 0, __ATOMIC_SEQ_CST);
		alex_pdb_scan(lease_one, &young);
		if (young || __atomic_exchange_n(&news, 0, __ATOMIC_SEQ_CST))
			__atomic_store_n(&fast, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

/* The lease's thread, started at the first span: 1 when it runs */
static int lease_thread(void)
{
	if (__atomic_load_n(&started, __ATOMIC_ACQUIRE))
		return 1;
	if (__atomic_load_n(&refused, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&lmu);
	if (!started && !refused) {
		pthread_t t;
		pthread_attr_t a;
		sigset_t all, old;
		pthread_once(&lcv_once, init_lcv);
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		sigfillset(&all); /* signals are the program's business */
		pthread_sigmask(SIG_SETMASK, &all, &old);
		if (pthread_create(&t, &a, leaser, NULL) == 0)
			__atomic_store_n(&started, 1, __ATOMIC_RELEASE);
		else
			__atomic_store_n(&refused, 1, __ATOMIC_RELEASE);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_attr_destroy(&a);
	}
	pthread_mutex_unlock(&lmu);
	return __atomic_load_n(&started, __ATOMIC_ACQUIRE);
}

/* A span began: the thread ticks (it may be asleep) */
static void lease_kick(void)
{
	__atomic_store_n(&news, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&fast, __ATOMIC_SEQ_CST))
		return;
	pthread_mutex_lock(&lmu);
	__atomic_store_n(&fast, 1, __ATOMIC_SEQ_CST);
	pthread_cond_signal(&lcv);
	pthread_mutex_unlock(&lmu);
}

void alex_span_atfork_child(void)
{
	/* threads do not survive fork: a child starts its own, and the
	 * lock may have been held by the parent's thread at the fork */
	started = refused = fast = news = 0;
	pthread_mutex_init(&lmu, NULL);
	init_lcv();
}

/* a mutex, not a spin: the lease may be preempted inside its calls */
static void busy(struct pdb *db)
{
	alex_mutex_lock(&db->span_mu);
}

static void idle(struct pdb *db)
{
	alex_mutex_unlock(&db->span_mu);
}

/* ALEX's lock call on fd over all of SQLite's bytes: 0, or the error it
 * met (errno kept) */
static int all(int fd, short type, int (*real)(int, int, ...))
{
	struct flock l = { .l_type = type, .l_whence = SEEK_SET,
			   .l_start = SQLITE_PENDING_BYTE, .l_len = SQLITE_LOCK_BYTES };
	int saved = errno, err = alex_locks_own(fd, F_SETLK, &l, real) ? errno : 0;
	errno = saved;
	return err;
}

/* A lock call on the presence byte, through the description of db's
 * directory it is held with */
static int presence(struct pdb *db, int cmd, struct flock *l, short type)
{
	*l = (struct flock){ .l_type = type, .l_whence = SEEK_SET,
			     .l_start = (off_t)(db->ino & ((1ULL << 62) - 1)), .l_len = 1 };
	uint64_t t0 = ALEX_TRACE_T0();
	int r = REAL(fcntl)(db->presence_fd, cmd, l);
	alex_trace_own(ALEX_TROLE_DIR, ALEX_TK_FCNTL, db->presence_fd, t0, (uint64_t)cmd, r, l);
	return r;
}

/* Is the presence descriptor still the directory?  A program's sweep of
 * descriptors (close_range, closefrom, a dup2 onto it) closes it behind
 * ALEX's back, and the number may be another file now (review). */
static int still_ours(struct pdb *db)
{
	if (alex_fd_is(db->presence_fd, db->dir_dev, db->dir_ino))
		return 1;
	db->presence_fd = -2; /* gone: unseen and unseeing from here */
	return 0;
}

/* This process's presence lock, taken once (at its first transaction),
 * whatever the setting: others must see it even if it never takes the
 * span lock.  presence_fd -2 when it could not be (a directory it may not
 * read, a file system without these locks). */
static void be_present(struct pdb *db)
{
	struct flock l;
	int saved = errno;

	if (db->presence_fd != -1 || !db->dir_path)
		return;
	int fd = REAL(open)(db->dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	db->presence_fd = fd < 0 ? -2 : fd;
	if (fd >= 0 && (!still_ours(db) || presence(db, F_OFD_SETLK, &l, F_RDLCK) != 0)) {
		REAL(close)(fd); /* another directory by now, or no such locks */
		db->presence_fd = -2;
	} else if (fd >= 0) {
		alex_kept_fresh(&db->presence_check);
		alex_kept_mark(fd, 1); /* a close of its number through the hooks is seen */
	}
	errno = saved;
}

/* Does another process with ALEX have db open?  In doubt (no presence
 * lock, the query failed), yes.  The descriptor is checked by fstat only
 * when the hooks met its number, or at one query in 64 (pdb.h). */
static int others(struct pdb *db)
{
	struct flock l;

	if (!alex_kept_still(&db->presence_check, db->presence_fd, db->dir_dev, db->dir_ino, 64))
		db->presence_fd = -2; /* gone: unseen and unseeing from here */
	return db->presence_fd < 0 || presence(db, F_OFD_GETLK, &l, F_WRLCK) != 0 ||
	       l.l_type != F_UNLCK;
}

/* Is this process the only one with ALEX that has db's file open?  Asked
 * at one span in 8 (one in 64 while others were there): a process that
 * comes waits at most those spans of this one. */
static int alone(struct pdb *db)
{
	int saved = errno;

	if (!alex_cfg.span_lock)
		return 0;
	/* no thread for a database's first spans: a program that only
	 * opens a database in WAL mode, or puts a new one there, or makes a
	 * transaction or two and exits, stays single-threaded -- glibc then
	 * takes every mutex of the process, SQLite's and malloc's, without
	 * an atomic instruction (docs/LOCKS.md, "Threads") */
	if (db->span_warm < SPAN_WARM) {
		db->span_warm++;
		return 0;
	}
	if (!lease_thread())
		return 0;
#ifdef ALEX_TESTING
	if (alex_cfg.test_span_alone) /* the span lock under contention */
		return 1;
#endif
	if (db->span_n++ % (db->span_alone ? 8 : 64) == 0)
		db->span_alone = !others(db);
	errno = saved;
	return db->span_alone;
}

/* May this process take the span lock at SQLite's first call of a span?
 * Asked without span_mu: what it reads changes only with SQLite's own lock
 * calls, which come one at a time, and with closes (after which the
 * lock call fails or the model is in doubt); the lease acts only on a
 * span already taken. */
static int may_enter(struct pdb *db)
{
	const struct alex_held *h = &db->held;

	if (h->unknown || h->pending || h->reserved || h->shared || db->forked ||
	    db->fork_shared || !alone(db))
		return 0;
	if (db->span_skip) {
		db->span_skip--;
		return 0;
	}
	return 1;
}

/* The span lock instead of SQLite's first call, if it is granted: 1 taken
 * (the call answered). */
static int enter(struct pdb *db, int fd, int (*real)(int, int, ...), int *r)
{
	struct alex_held *h = &db->held;
	int err = all(fd, F_WRLCK, real);

	if (err) {
		/* another process holds a lock: SQLite's own calls, and
		 * theirs, for a while; a descriptor that cannot write-lock
		 * (opened read-only), for good */
		db->span_skip = err == EAGAIN || err == EACCES ? 16 : ~0u;
		ALEX_COUNT(span_refused, 1);
		return 0;
	}
	ALEX_COUNT(span_locks, 1);
	db->span_burst = alex_now_ns() - db->span_end_ns < BURST_US * 1000u;
	h->span = SPAN_HELD;
	h->pending = READ;
	db->span_gen++;
	lease_kick();
	*r = 0;
	return 1;
}

/* The kernel's locks set to the model, one region at a time and only ever
 * weaker (each call replaces the process's lock in place, so no moment is
 * without what the model claims); the span is over.  A call that fails
 * (ENOLCK) leaves more held than SQLite was told: in doubt until its next
 * release of all. */
static void leave(struct alex_held *h, int fd, int (*real)(int, int, ...))
{
	const struct {
		long long start, len;
		short k;
	} part[3] = { { SQLITE_SHARED_FIRST, SQLITE_SHARED_SIZE, h->shared },
		      { SQLITE_RESERVED_BYTE, 1, h->reserved },
		      { SQLITE_PENDING_BYTE, 1, h->pending } };
	int saved = errno;

	for (int i = 0; i < 3; i++) {
		if (part[i].k == WRITE)
			continue;
		struct flock l = { .l_type = part[i].k == READ ? F_RDLCK : F_UNLCK,
				   .l_whence = SEEK_SET, .l_start = part[i].start,
				   .l_len = part[i].len };
		if (alex_locks_own(fd, F_SETLK, &l, real) != 0)
			h->unknown = 1;
	}
	h->span = SPAN_NONE;
	errno = saved;
}

/* Does l lie wholly within SQLite's lock bytes? */
static int within(const struct flock *l)
{
	return l->l_whence == SEEK_SET && l->l_len > 0 && l->l_start >= SQLITE_PENDING_BYTE &&
	       l->l_start + l->l_len <= SQLITE_PENDING_BYTE + SQLITE_LOCK_BYTES;
}

/* A lock call during the span: see alex_span_call. */
static int in_span(struct pdb *db, int fd, int cmd, struct flock *l, int linger,
		   int (*real)(int, int, ...), int *r)
{
	struct alex_held *h = &db->held;

	if (l->l_whence != SEEK_SET) {
		leave(h, fd, real); /* not SQLite's: made as asked, after */
		return 0;
	}
	long long end = l->l_len == 0 ? (long long)(~0ULL >> 1) : l->l_start + l->l_len;
	long long first = SQLITE_PENDING_BYTE, last = SQLITE_PENDING_BYTE + SQLITE_LOCK_BYTES;
	if (end <= first || l->l_start >= last || cmd == F_GETLK)
		return 0; /* other bytes, or a question: the kernel leaves out
			     the process's own locks */
	if (cmd == F_SETLK && l->l_type == F_UNLCK && l->l_start <= first && end >= last) {
		/* the release of all and the span's end (locks.c), both here
		 * under span_mu: a lease between them would take the model's
		 * locks again after the release.  Answered if it may linger */
		*r = linger ? 0 : real(fd, cmd, l);
		if (*r == 0)
			alex_held_apply(h, l);
		db->span_end_ns = alex_now_ns();
		if (linger) {
			h->span = SPAN_LINGER;
			ALEX_COUNT(span_lingers, 1);
		}
		return linger ? 1 : 2;
	}
	struct alex_held next = *h;
	if (within(l) && cmd == F_SETLK &&
	    (l->l_type == F_RDLCK || l->l_type == F_WRLCK || l->l_type == F_UNLCK))
		alex_held_apply(&next, l);
	else
		next.unknown = 1;
	if (next.unknown) { /* not one of SQLite's calls */
		leave(h, fd, real);
		return 0;
	}
	if (h->pending != WRITE && next.pending == WRITE) {
		/* EXCLUSIVE's first step: the write lock over all again, which
		 * also meets a lock lost unseen.  Refused: SQLite's own calls
		 * from here, this one first -- its PENDING, if granted, keeps
		 * others from EXCLUSIVE as it would have (answering the
		 * refusal here held nothing, and another process's last close
		 * removed the log under the open transaction: regress.sh
		 * span-lock-lost) */
		if (all(fd, F_WRLCK, real) != 0) {
			leave(h, fd, real);
			return 0;
		}
	} else if (!next.pending && !next.reserved && !next.shared) {
		/* SQLite holds nothing (a failed SHARED gives PENDING back) */
		all(fd, F_UNLCK, real);
		next.span = SPAN_NONE;
	}
	*h = next;
	*r = 0;
	return 1;
}

/* Is l SQLite's release of everything? */
static int releases_all(int cmd, const struct flock *l)
{
	return cmd == F_SETLK && l->l_type == F_UNLCK && l->l_whence == SEEK_SET &&
	       l->l_start <= SQLITE_PENDING_BYTE &&
	       (l->l_len == 0 || l->l_start + l->l_len >= SQLITE_PENDING_BYTE + SQLITE_LOCK_BYTES);
}

/* The lingering write lock's end: SQLite holds nothing */
static void unlinger(struct pdb *db, int fd, int (*real)(int, int, ...))
{
	all(fd, F_UNLCK, real);
	db->held.span = SPAN_NONE;
}

/* A call while the write lock lingers.  SQLite's next transaction (again)
 * takes it once more, which meets a lock lost unseen; a question passes
 * (the kernel leaves out the process's own locks); anything else ends it
 * first and is made as asked. */
static int lingering(struct pdb *db, int fd, int cmd, int again, int (*real)(int, int, ...),
		     int *r)
{
	if (cmd == F_GETLK)
		return -1;
	db->held.span = SPAN_NONE;
	if (again && enter(db, fd, real, r))
		return 1;
	unlinger(db, fd, real); /* refused: what is left of it goes */
	return -1;
}

int alex_span_call(struct pdb *db, int fd, int cmd, struct flock *l, int first,
		   int (*real)(int, int, ...), int *r)
{
	int how = -1, may = 0, linger = 0, span = __atomic_load_n(&db->held.span, __ATOMIC_RELAXED);

	/* no span_mu for a call that cannot begin a span: SQLite's calls
	 * while other processes use the database take no lock of ALEX's */
	if (span != SPAN_HELD) {
		if (!first && span == SPAN_NONE)
			return -1;
		if (first) {
			be_present(db);
			may = may_enter(db);
		}
		if (!may && span == SPAN_NONE)
			return -1;
	} else if (db->span_burst && releases_all(cmd, l)) {
		/* asked before span_mu: serve.c takes db->mu, which is taken
		 * before span_mu (alex_serve_wal_open) */
		linger = alex_serve_fenced(db);
	}
	busy(db);
	if (db->held.span == SPAN_LINGER)
		how = lingering(db, fd, cmd, first && may, real, r);
	else if (db->held.span == SPAN_HELD)
		how = in_span(db, fd, cmd, l, linger, real, r);
	else if (may && enter(db, fd, real, r))
		how = 1;
	idle(db);
	return how;
}

void alex_span_leave(struct pdb *db)
{
	int fd = db->eng ? alex_db_fd(db->eng) : -1;

	busy(db);
	/* POSIX locks are the process's: any descriptor of the file sets them */
	if (db->held.span == SPAN_LINGER && fd >= 0)
		unlinger(db, fd, REAL(fcntl));
	else if (db->held.span && fd >= 0)
		leave(&db->held, fd, REAL(fcntl));
	idle(db);
}

void alex_span_end(struct pdb *db, int closed)
{
	busy(db);
	if (db->held.span == SPAN_HELD && closed)
		db->held.unknown = 1; /* a lingering lock claimed nothing */
	db->held.span = SPAN_NONE;
	idle(db);
}

int alex_span_lease(struct pdb *db)
{
	struct alex_held *h = &db->held;
	int young = 0;

	if (!__atomic_load_n(&h->span, __ATOMIC_RELAXED) || alex_mutex_trylock(&db->span_mu))
		return __atomic_load_n(&h->span, __ATOMIC_RELAXED); /* none, or next tick */
	int fd = db->eng ? alex_db_fd(db->eng) : -1;
	if (h->span && fd >= 0) {
		if (db->span_seen != db->span_gen) {
			db->span_seen = db->span_gen; /* begun since the last tick */
			young = 1;
		} else if (h->span == SPAN_LINGER) {
			unlinger(db, fd, REAL(fcntl)); /* the burst is over */
		} else {
			leave(h, fd, REAL(fcntl));
			ALEX_COUNT(span_leases, 1);
		}
	}
	idle(db);
	return young;
}

void alex_span_forked(struct pdb *db)
{
	alex_mutex_init(&db->span_mu); /* perhaps held by a thread not here */
	db->held.span = SPAN_NONE; /* POSIX locks are not inherited */
}
