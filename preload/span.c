/*
 * span.c - the span lock: SQLite's lock calls of one transaction answered
 * under one lock of ALEX's, while no other process with ALEX has the
 * database open (docs/LOCKS.md, "The span lock", "The span lock on a
 * description of its own").
 *
 * SQLite makes eight lock calls for an autocommit write and three for a
 * read (with locks.c's question at PENDING); each costs about its kernel
 * time again in the code around it.  At SQLite's first call of a span (its
 * read lock on PENDING, holding nothing) this process takes instead one
 * write lock over all of SQLite's lock bytes, answers the span's calls
 * from the model (locks.c) under it, and lets it go at SQLite's release of
 * everything: a transaction in two calls.
 *
 * The lock is an open-file-description lock, on a description of the file
 * that is the span's own (own_fd).  The process's POSIX locks go at any
 * close of any descriptor of the file, and some closes pass no hook (a raw
 * close system call, a descriptor of the file under another name): a span
 * held by them had to take its lock again at each transaction and at
 * EXCLUSIVE to meet a loss (thirty-fifth session: a commit beside another
 * process's reader when it did not).  This lock goes only by the span's
 * own unlock, or when the description ends, which a mapping of it keeps
 * from happening while the process lives.  An OFD lock and a POSIX lock of
 * one process meet like two owners' locks, so a span never mixes them:
 * SQLite's calls of a span are made on the span's description to its end,
 * and the span passes to POSIX locks only where no moment without a lock
 * comes of it (reads: to_posix).
 *
 * Whenever a call is answered from the model, the kernel holds at least
 * what SQLite was told, and nobody else holds anything.  The cost is to
 * others: a reader of another process is refused where SQLite would let it
 * share.  So the write lock is a lease: a thread of its own (started with
 * the first span, never behind a sync: review) ticks every LEASE_MS while
 * spans are taken, and a span it saw at one tick and finds at the next is
 * given exactly what the model says, each region replaced in place on the
 * description, where SQLite's later calls of the span are made (span 3).
 * Without that thread there is no span lock.  A
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
 * the write lock kept (span 2): the next transaction's first call is
 * answered under it, with no call at all.  Any other call on SQLite's
 * bytes ends the lingering first (the lock made as it would be without
 * it), and so does the lease, at its second quiet tick: after a burst the
 * lock stays 2-4 ms, no longer.  A transaction after a pause releases as
 * SQLite asks.
 *
 * The span's state is changed by SQLite's lock calls, by the lease and by
 * the last close, one at a time (span_mu); SQLite's own calls come one at
 * a time already (its inode mutex).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
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
enum { SPAN_NONE = 0, SPAN_HELD = 1, SPAN_LINGER = 2, SPAN_REAL = 3 };

/* A transaction that begins within this of the last one's end is in a
 * burst: its release lingers */
#define BURST_US 1000

/* A database's first spans go without the span lock */
#define SPAN_WARM 8

/* A span holds the write lock for one to two of these at most */
#define LEASE_MS 2

/* A process alone with a database asks the kernel whether it still is at
 * least this often, whatever the log's arrivals say (alone) */
#define ALONE_ASK_MS 4

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

static int *self_word; /* below */

void alex_span_atfork_child(void)
{
	/* threads do not survive fork: a child starts its own, and the
	 * lock may have been held by the parent's thread at the fork */
	started = refused = fast = news = 0;
	pthread_mutex_init(&lmu, NULL);
	init_lcv();
	if (self_word)
		*(volatile int *)self_word = 1; /* wiped by the fork: this child is known */
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

/*
 * One word on a page a child made without fork's handlers (a raw clone,
 * _Fork) gets zeroed: its copy of this memory says spans are held, on a
 * description it shares with its parent, and it must not answer from them
 * (tests/preload/rawclone.c).  No word (an old kernel): no spans.
 */
static int *self_word;
static pthread_once_t self_once = PTHREAD_ONCE_INIT;

static void self_init(void)
{
	void *p = REAL(mmap)(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return;
	if (madvise(p, 4096, MADV_WIPEONFORK) != 0) {
		REAL(munmap)(p, 4096);
		return;
	}
	*(volatile int *)p = 1;
	__atomic_store_n(&self_word, (int *)p, __ATOMIC_RELEASE);
}

/* Is the spans' state in memory this process's own? */
static int ours(void)
{
	int *w = __atomic_load_n(&self_word, __ATOMIC_ACQUIRE);
	return w && *(volatile int *)w;
}

/* ... the word made first, if it is not there yet */
static int ours_made(void)
{
	if (!__atomic_load_n(&self_word, __ATOMIC_ACQUIRE))
		pthread_once(&self_once, self_init);
	return ours();
}

/*
 * The span's description is opened with flags that no other open of a
 * file in the process is likely to have all of (a write-through, appending,
 * non-blocking read-write open -- none matters to a description that is
 * never read or written), and is known by them: one F_GETFL before every
 * call made through its number.  A program's sweep of descriptors may have
 * closed the number and the kernel given it to another open -- SQLite's own
 * of the same file, a pipe -- which must not be locked, unlocked or closed
 * instead (review: a lock taken on SQLite's description went with its
 * close, and a commit followed beside another process's reader).
 */
#define MARK_FLAGS (O_RDWR | O_APPEND | O_DSYNC | O_NONBLOCK)
#define MARK_MASK (O_ACCMODE | O_APPEND | O_SYNC | O_NONBLOCK | O_ASYNC | O_DIRECT)

/*
 * Every database's span description carries the mark, so the mark alone
 * cannot tell one from another (review: a number one database lost and
 * another's span then opened passed, and the first database locked the
 * second's file).  Each number's owner is kept here: the kernel hands out
 * only a free number, so an owner that is not this pdb proves the number
 * lost.  The owner is set before the mark is complete (O_NONBLOCK, set by
 * F_SETFL after), and read on both sides of the F_GETFL, so that a check
 * racing a new owner's open sees either the other owner or no mark.
 */
#define OWNERS 65536
static struct pdb *owners[OWNERS];

static int owned(const struct pdb *db)
{
	return __atomic_load_n(&owners[db->span_fd], __ATOMIC_ACQUIRE) == db;
}

/* Is the span's number still its description? */
static int mine(const struct pdb *db)
{
	if (db->span_fd < 0 || db->span_fd >= OWNERS || !owned(db))
		return 0;
	int saved = errno;
	uint64_t t0 = ALEX_TRACE_T0();
	int fl = REAL(fcntl)(db->span_fd, F_GETFL);
	alex_trace_own(ALEX_TROLE_DB, ALEX_TK_FCNTL, db->span_fd, t0, F_GETFL, fl, NULL);
	errno = saved;
	return fl >= 0 && (fl & MARK_MASK) == MARK_FLAGS && owned(db);
}

/* The number is no longer db's (closed, or found another's) */
static void disown_fd(int fd, struct pdb *db)
{
	if (fd >= 0 && fd < OWNERS)
		__atomic_compare_exchange_n(&owners[fd], &db, NULL, 0, __ATOMIC_ACQ_REL,
					    __ATOMIC_RELAXED);
}

static void disown(struct pdb *db)
{
	disown_fd(db->span_fd, db);
}

/* Is fd on a file system shared over a network?  A lock there is the
 * server's, which may lose it (a lease expired, a partition) and tell only
 * I/O under it; a span answered from memory does none. */
static int remote(int fd)
{
	static const long kinds[] = {
		0x6969,	    /* NFS */
		0x517b,	    /* SMB */
		0xff534d42, /* CIFS */
		0xfe534d42, /* SMB2 */
		0x00c36400, /* Ceph */
		0x65735546, /* FUSE */
		0x01021997, /* 9P */
		0x5346414f, /* AFS */
		0x7461636f, /* OCFS2 */
		0x01161970, /* GFS2 */
		0x0bd00bd0, /* Lustre */
		0x47504653, /* GPFS */
	};
	struct statfs sf;

	if (fstatfs(fd, &sf) != 0)
		return 1;
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if ((long)(unsigned)sf.f_type == kinds[i])
			return 1;
	return 0;
}

/* The span's description and its pin go: its number is closed only while
 * it is still the description (else it is the program's now), and the pin
 * is let go, which ends the description -- and any lock on it -- when a
 * sweep closed the number. */
static void unpin(struct pdb *db)
{
	if (db->span_fd >= 0) {
		alex_kept_mark(db->span_fd, 0);
		int was = mine(db);
		disown(db);
		if (was)
			REAL(close)(db->span_fd);
	}
	if (db->span_pin)
		REAL(munmap)(db->span_pin, 4096);
	db->span_fd = -1;
	db->span_pin = NULL;
}

/*
 * The span's own open file description of db's file, opened once: its
 * locks are open-file-description locks, which only its own unlock or the
 * end of the description lets go -- no close of the program's descriptors
 * drops them, unlike the process's POSIX locks.  It is reopened through
 * the engine's descriptor (the same inode after a rename), for writing
 * (a write lock needs it), and mapped (MADV_DONTFORK: not into children),
 * so that a sweep of descriptors that closes its number leaves it, and
 * its locks, in place until the span lets the mapping go.  -1 when there
 * is none.
 */
static int own_fd(struct pdb *db)
{
	char proc[40];

	if (db->span_fd >= 0 && mine(db))
		return db->span_fd;
	if (db->span_fd >= 0)
		unpin(db); /* another open's number now: no span holds it */
	if (db->span_fd == -2 || !db->eng)
		return -1;
	db->span_fd = -2;
	if (!ours_made())
		return -1;
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", alex_db_fd(db->eng));
	/* the mark's last flag only once the number is owned (above) */
	int flags = (MARK_FLAGS & ~O_NONBLOCK) | O_CLOEXEC | O_NOCTTY;
	int fd = REAL(open)(proc, flags);
	if (fd < 0)
		fd = REAL(open)(db->path, flags);
	if (fd < 0)
		return -1;
	if (fd >= OWNERS) {
		REAL(close)(fd);
		return -1;
	}
	__atomic_store_n(&owners[fd], db, __ATOMIC_RELEASE);
	uint64_t t0 = ALEX_TRACE_T0();
	int r = REAL(fcntl)(fd, F_SETFL, MARK_FLAGS & ~O_ACCMODE);
	alex_trace_own(ALEX_TROLE_DB, ALEX_TK_FCNTL, fd, t0, F_SETFL, r, NULL);
	if (r != 0) {
		disown_fd(fd, db);
		REAL(close)(fd);
		return -1;
	}
	void *pin = MAP_FAILED;
	if (alex_fd_is(fd, db->dev, db->ino) && !remote(fd))
		pin = REAL(mmap)(NULL, 4096, PROT_NONE, MAP_SHARED, fd, 0);
	if (pin != MAP_FAILED && madvise(pin, 4096, MADV_DONTFORK) != 0) {
		REAL(munmap)(pin, 4096);
		pin = MAP_FAILED;
	}
	if (pin == MAP_FAILED) {
		disown_fd(fd, db);
		REAL(close)(fd);
		return -1;
	}
	db->span_fd = fd;
	db->span_pin = pin;
	if (!mine(db)) { /* flags this kernel does not keep */
		unpin(db);
		db->span_fd = -2;
		return -1;
	}
	alex_kept_mark(fd, 1);
	return fd;
}

/* ALEX's lock call on the span's description: 0, or the error it met
 * (errno kept) */
static int own_lock(struct pdb *db, int cmd, struct flock *l)
{
	int saved = errno;
	uint64_t t0 = ALEX_TRACE_T0();

	l->l_pid = 0; /* F_OFD_* refuses any other */
	int r = REAL(fcntl)(db->span_fd, cmd, l), err = r ? errno : 0;
	alex_trace_own(ALEX_TROLE_DB, ALEX_TK_FCNTL, db->span_fd, t0, (uint64_t)cmd, r, l);
	errno = saved;
	return err;
}

/* ... of one kind over [start, start + len) */
static int own_set(struct pdb *db, short type, long long start, long long len)
{
	struct flock l = { .l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len };
	return own_lock(db, F_OFD_SETLK, &l);
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
		/* after the lock: a process that reads the count before this
		 * raise asks the kernel next, which finds the lock */
		alex_serve_arrive(db);
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

/* Ask the kernel (others), and note what the log's arrivals were before. */
/* Ask the kernel (others); arrivals is the log's count read before (ok: there
 * was a region to read it from). */
static void ask(struct pdb *db, int ok, uint64_t arrivals)
{
	db->span_arrivals_ok = ok;
	db->span_arrivals = arrivals;
	db->span_alone = !others(db);
	db->span_asked_ns = alex_now_ns();
	db->span_n = 1;
}

/*
 * Is this process the only one with ALEX that has db's file open?  While it
 * is, the kernel is asked again when the log's shared region counts a new
 * arrival (alex_serve_arrive, after the newcomer's presence lock), and
 * otherwise only after both 8 spans and ALONE_ASK_MS since the last
 * question: a newcomer that counted itself waits one span of this process;
 * one that could not (no log open yet, an older ALEX) at most the longer
 * of the two -- and no more calls are made than at one span in 8, however
 * far apart the spans are.  Where this process has no region to read (a
 * read-only engine), at one span in 8.  While others were there, at one
 * span in 64: one that leaves is noticed that late.  Only on a fenced
 * file: no span is taken elsewhere, so nothing is asked there.
 */
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
	uint64_t seen = 0;
	int look = alex_serve_span_look(db, &seen);
	if (look < 0)
		return 0;
#ifdef ALEX_TESTING
	if (alex_cfg.test_span_alone) /* the span lock under contention */
		return 1;
#endif
	unsigned n = db->span_n++; /* spans since the last question, from 1 */
	if (!db->span_alone ? n % 64 == 0
	    : look != 0 || !db->span_arrivals_ok ? n % 8 == 0
	    : seen != db->span_arrivals ||
		      (n >= 8 && alex_now_ns() - db->span_asked_ns >= ALONE_ASK_MS * 1000000u))
		ask(db, look == 0, seen);
	errno = saved;
	return db->span_alone;
}

/* May this process take the span lock at SQLite's first call of a span?
 * Asked without span_mu: what it reads changes only with SQLite's own lock
 * calls, which come one at a time; the lease acts only on a span already
 * taken.  Only on a fenced file (alone looks): elsewhere nothing lingers
 * (a program without ALEX may write the file between transactions), and a
 * span of its own costs four calls (the description's mark asked at its
 * start and end) against SQLite's three for a read. */
static int may_enter(struct pdb *db)
{
	const struct alex_held *h = &db->held;

	if (h->unknown || h->pending || h->reserved || h->shared || db->forked ||
	    db->fork_shared || !alone(db) || !ours_made())
		return 0;
	if (db->span_skip) {
		db->span_skip--;
		return 0;
	}
	return 1;
}

/* SQLite's first call of a span, answered: it holds PENDING's read lock */
static void begin(struct pdb *db)
{
	struct alex_held *h = &db->held;

	db->span_burst = alex_now_ns() - db->span_end_ns < BURST_US * 1000u;
	h->span = SPAN_HELD;
	h->pending = READ;
	db->span_gen++;
	lease_kick();
}

/* The span lock instead of SQLite's first call, if it is granted: 1 taken
 * (the call answered). */
static int enter(struct pdb *db, int *r)
{
	int saved = errno, fd = own_fd(db); /* its opens may fail on the way */
	errno = saved;
	int err = fd < 0 ? EBADF : own_set(db, F_WRLCK, SQLITE_PENDING_BYTE, SQLITE_LOCK_BYTES);

	if (err) {
		/* another process holds a lock (or this one does, as POSIX
		 * locks of its own: a program's): SQLite's own calls, and
		 * theirs, for a while; no description of its own, for good */
		db->span_skip = err == EAGAIN || err == EACCES ? 16 : ~0u;
		ALEX_COUNT(span_refused, 1);
		return 0;
	}
	ALEX_COUNT(span_locks, 1);
	begin(db);
	*r = 0;
	return 1;
}

/* The span's locks all let go; the span is over.  A number that is no
 * longer the description, or an unlock that fails, lets the pin go
 * instead, and the description's locks with it. */
static void release(struct pdb *db)
{
	if (!mine(db) || own_set(db, F_UNLCK, SQLITE_PENDING_BYTE, SQLITE_LOCK_BYTES) != 0)
		unpin(db);
	db->held.span = SPAN_NONE;
}

/* SQLite's three regions and what the model says of each */
struct region {
	long long start, len;
	short k;
};

static void regions(const struct alex_held *h, struct region part[3])
{
	part[0] = (struct region){ SQLITE_SHARED_FIRST, SQLITE_SHARED_SIZE, h->shared };
	part[1] = (struct region){ SQLITE_RESERVED_BYTE, 1, h->reserved };
	part[2] = (struct region){ SQLITE_PENDING_BYTE, 1, h->pending };
}

/* The description's locks set to the model, in place and only ever weaker
 * (no moment without what SQLite was told); SQLite's calls are made on it
 * from here (SPAN_REAL).  A call that fails (ENOLCK) leaves more held than
 * SQLite was told: in doubt until its release of all.  The number is the
 * description's (mine). */
static void set_model(struct pdb *db)
{
	struct alex_held *h = &db->held;
	struct region part[3];

	regions(h, part);
	for (int i = 0; h->span == SPAN_HELD && i < 3; i++)
		if (part[i].k != WRITE &&
		    own_set(db, part[i].k == READ ? F_RDLCK : F_UNLCK, part[i].start, part[i].len))
			h->unknown = 1;
	h->span = SPAN_REAL;
}

/* The lease's hand-over.  A number that is no longer the description
 * leaves the span as it is: the pin holds the write lock over all, and
 * SQLite's release of all lets the pin go. */
static void to_model(struct pdb *db)
{
	if (mine(db))
		set_model(db);
}

/* The span given up for the process's own POSIX locks, which are then what
 * SQLite was told: 0 done.  Only reads can pass from one kind to the other
 * with no moment in which nothing holds them (a POSIX read and an OFD read
 * of one process coexist; a write of either kind refuses the other): while
 * SQLite holds a write lock the span stays, on its description (-1). */
static int to_posix(struct pdb *db, int fd, int (*real)(int, int, ...))
{
	struct alex_held *h = &db->held;

	if (h->span == SPAN_LINGER) {
		release(db);
		return 0;
	}
	if (!mine(db))
		return -1; /* the pin holds it until SQLite lets go */
	set_model(db);
	if (h->pending == WRITE || h->reserved == WRITE || h->shared == WRITE || fd < 0)
		return -1;
	struct region part[3];
	regions(h, part);
	for (int i = 0; i < 3; i++) {
		struct flock l = { .l_type = F_RDLCK, .l_whence = SEEK_SET,
				   .l_start = part[i].start, .l_len = part[i].len };
		if (part[i].k == READ && alex_locks_own(fd, F_SETLK, &l, real) != 0)
			h->unknown = 1;
	}
	release(db);
	return 0;
}

/* Does l lie wholly within SQLite's lock bytes? */
static int within(const struct flock *l)
{
	return l->l_whence == SEEK_SET && l->l_len > 0 && l->l_start >= SQLITE_PENDING_BYTE &&
	       l->l_start + l->l_len <= SQLITE_PENDING_BYTE + SQLITE_LOCK_BYTES;
}

/* Does l touch SQLite's lock bytes at all? */
static int touches(const struct flock *l)
{
	long long end = l->l_len <= 0 ? (long long)(~0ULL >> 1) : l->l_start + l->l_len;
	return l->l_whence != SEEK_SET ||
	       (end > SQLITE_PENDING_BYTE && l->l_start < SQLITE_PENDING_BYTE + SQLITE_LOCK_BYTES);
}

/* Is l SQLite's release of everything? */
static int releases_all(int cmd, const struct flock *l)
{
	return cmd == F_SETLK && l->l_type == F_UNLCK && l->l_whence == SEEK_SET &&
	       l->l_start <= SQLITE_PENDING_BYTE &&
	       (l->l_len == 0 || l->l_start + l->l_len >= SQLITE_PENDING_BYTE + SQLITE_LOCK_BYTES);
}

/* Is l one of SQLite's own lock calls on its bytes? */
static int sqlites(int cmd, const struct flock *l)
{
	return cmd == F_SETLK && within(l) &&
	       (l->l_type == F_RDLCK || l->l_type == F_WRLCK || l->l_type == F_UNLCK);
}

/* A lock call refused as another owner's lock would refuse it -- never
 * left to wait for this process itself */
static int refuse(int cmd, int *r)
{
	*r = -1;
	errno = cmd == F_SETLKW || cmd == F_OFD_SETLKW ? EDEADLK : EAGAIN;
	return 1;
}

/* A call on SQLite's bytes that is not SQLite's (another shape, a blocking
 * call, a program's own): the span ends first where it can, and the call
 * is made as asked (0); while SQLite holds a write lock on the span's
 * description the call is refused as another owner's lock would refuse
 * it, never left to wait for this process itself (1). */
static int foreign(struct pdb *db, int fd, int cmd, int (*real)(int, int, ...), int *r)
{
	return to_posix(db, fd, real) == 0 ? 0 : refuse(cmd, r);
}

/* A lock call during the span, under the write lock: see alex_span_call. */
static int in_span(struct pdb *db, int fd, int cmd, struct flock *l, int linger,
		   int (*real)(int, int, ...), int *r)
{
	struct alex_held *h = &db->held;

	if (!touches(l))
		return 0; /* other bytes: the span's lock is not there */
	if (cmd == F_GETLK && within(l)) {
		l->l_type = F_UNLCK; /* nobody else holds anything there */
		*r = 0;
		return 1;
	}
	if (releases_all(cmd, l)) {
		alex_held_apply(h, l);
		db->span_end_ns = alex_now_ns();
		if (linger) {
			h->span = SPAN_LINGER;
			ALEX_COUNT(span_lingers, 1);
		} else {
			release(db);
		}
		*r = 0;
		return 1;
	}
	if (!sqlites(cmd, l))
		return foreign(db, fd, cmd, real, r);
	/* EXCLUSIVE's steps too: the write lock over all is still there --
	 * nothing but this process's own unlock on its description takes it */
	alex_held_apply(h, l);
	if (!h->pending && !h->reserved && !h->shared && !h->unknown)
		release(db); /* SQLite holds nothing (a failed SHARED gives PENDING back) */
	*r = 0;
	return 1;
}

/* After the lease: SQLite let go of everything (answered). */
static int let_go(struct pdb *db, const struct flock *l, int *r)
{
	alex_held_apply(&db->held, l);
	release(db);
	*r = 0;
	return 1;
}

/* A call after the lease whose number is no longer the description: the
 * pin holds what SQLite was told and nothing can be added to it.  A
 * release is answered (more stays held until SQLite releases everything,
 * which lets the pin go), a request for more refused as busy; a question
 * goes to the kernel, which reports the description's locks too -- only
 * ever SQLite's own, which it asks about only where it holds none. */
static int orphan(struct pdb *db, int cmd, struct flock *l, int *r)
{
	struct alex_held *h = &db->held, next = *h;

	if (cmd == F_GETLK)
		return 0;
	if (releases_all(cmd, l))
		return let_go(db, l, r);
	if (!sqlites(cmd, l))
		return refuse(cmd, r);
	alex_held_apply(&next, l);
	if (next.pending > h->pending || next.reserved > h->reserved || next.shared > h->shared)
		return refuse(cmd, r); /* F_SETLK: EAGAIN */
	*h = next;
	*r = 0;
	return 1;
}

/* A call after the lease (SPAN_REAL): made on the span's description, as
 * SQLite asked it, until SQLite releases everything.  Answered (1): the
 * kernel saw ALEX's own call on the description (traced as ALEX's), not
 * SQLite's on its descriptor. */
static int on_own(struct pdb *db, int fd, int cmd, struct flock *l, int (*real)(int, int, ...),
		  int *r)
{
	struct alex_held *h = &db->held;

	if (!touches(l))
		return 0;
	if (!mine(db))
		return orphan(db, cmd, l, r);
	if (cmd == F_GETLK && within(l)) {
		/* the kernel leaves out the description's own locks, as it
		 * leaves out a process's own POSIX locks from F_GETLK */
		struct flock q = *l;
		int err = own_lock(db, F_OFD_GETLK, &q);
		if (!err)
			*l = q;
		*r = err ? -1 : 0;
		if (err)
			errno = err;
		return 1;
	}
	if (releases_all(cmd, l))
		return let_go(db, l, r);
	if (!sqlites(cmd, l))
		return foreign(db, fd, cmd, real, r);
	struct flock q = *l;
	int err = own_lock(db, F_OFD_SETLK, &q);
	*r = err ? -1 : 0;
	if (err)
		errno = err == EACCES ? EAGAIN : err;
	else
		alex_held_apply(h, l);
	if (!err && !h->pending && !h->reserved && !h->shared && !h->unknown)
		release(db);
	return 1;
}

/* A call while the write lock lingers (SQLite holds nothing).  SQLite's
 * next transaction is answered under it; a question on SQLite's bytes is
 * answered (nobody else holds anything there); anything else ends it
 * first and is made as asked. */
static int lingering(struct pdb *db, int cmd, struct flock *l, int again, int *r)
{
	if (!touches(l))
		return -1;
	if (cmd == F_GETLK && within(l)) {
		l->l_type = F_UNLCK;
		*r = 0;
		return 1;
	}
	if (again) {
		ALEX_COUNT(span_locks, 1);
		begin(db);
		*r = 0;
		return 1;
	}
	release(db);
	return -1;
}

/* This process is a child made without fork's handlers: the spans in its
 * memory are its parent's, on a description they share.  Forgotten, never
 * let go (that would be the parent's lock); the model is in doubt. */
static void not_ours(struct pdb *db)
{
	__atomic_store_n(&db->held.span, SPAN_NONE, __ATOMIC_RELAXED);
	db->held.unknown = 1;
	db->span_fd = -2;
	db->span_pin = NULL;
}

int alex_span_call(struct pdb *db, int fd, int cmd, struct flock *l, int first,
		   int (*real)(int, int, ...), int *r)
{
	int how = -1, may = 0, linger = 0, span = __atomic_load_n(&db->held.span, __ATOMIC_RELAXED);

	if (span != SPAN_NONE && !ours()) {
		not_ours(db);
		return -1;
	}
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
		how = lingering(db, cmd, l, first && may, r);
	else if (db->held.span == SPAN_HELD)
		how = in_span(db, fd, cmd, l, linger, real, r);
	else if (db->held.span == SPAN_REAL)
		how = on_own(db, fd, cmd, l, real, r);
	else if (may && enter(db, r))
		how = 1;
	idle(db);
	return how;
}

int alex_span_leave(struct pdb *db)
{
	/* POSIX locks are the process's: any descriptor of the file sets them */
	int fd = db->eng ? alex_db_fd(db->eng) : -1, stays = 0;

	if (!__atomic_load_n(&db->held.span, __ATOMIC_RELAXED))
		return 0;
	if (!ours()) {
		not_ours(db);
		return 0;
	}
	busy(db);
	if (db->held.span)
		stays = to_posix(db, fd, REAL(fcntl)) != 0;
	idle(db);
	return stays;
}

int alex_span_getlk(struct pdb *db, struct flock *l)
{
	int done = 0;

	if (!__atomic_load_n(&db->held.span, __ATOMIC_RELAXED) || !ours())
		return 0;
	busy(db);
	if (db->held.span && mine(db) && own_lock(db, F_OFD_GETLK, l) == 0)
		done = 1;
	idle(db);
	return done;
}

int alex_span_stands(struct pdb *db)
{
	return ours() && __atomic_load_n(&db->held.span, __ATOMIC_RELAXED) != SPAN_NONE;
}

void alex_span_close(struct pdb *db)
{
	if (!__atomic_load_n(&db->held.span, __ATOMIC_RELAXED))
		return;
	if (!ours()) {
		not_ours(db);
		return;
	}
	busy(db);
	if (db->held.span) {
		release(db);
		db->held.pending = db->held.reserved = db->held.shared = NONE;
	}
	idle(db);
}

void alex_span_free(struct pdb *db)
{
	if (ours())
		unpin(db);
}

int alex_span_lease(struct pdb *db)
{
	struct alex_held *h = &db->held;
	int young = 0, span = __atomic_load_n(&h->span, __ATOMIC_RELAXED);

	/* none, or after the lease already (it stays until SQLite lets go),
	 * or the next tick */
	if ((span != SPAN_HELD && span != SPAN_LINGER) || alex_mutex_trylock(&db->span_mu))
		return span == SPAN_HELD || span == SPAN_LINGER;
	if (h->span == SPAN_HELD || h->span == SPAN_LINGER) {
		if (db->span_seen != db->span_gen) {
			db->span_seen = db->span_gen; /* begun since the last tick */
			young = 1;
		} else if (h->span == SPAN_LINGER) {
			release(db); /* the burst is over */
		} else {
			to_model(db);
			ALEX_COUNT(span_leases, 1);
		}
	}
	idle(db);
	return young;
}

void alex_span_forked(struct pdb *db)
{
	alex_mutex_init(&db->span_mu); /* perhaps held by a thread not here */
	db->held.span = SPAN_NONE; /* the parent's, on the description shared */
	/* the child's copy of the descriptor goes (it drops no lock: the
	 * parent's copy and its pin keep the description); the pin was not
	 * copied (MADV_DONTFORK) */
	db->span_pin = NULL;
	unpin(db);
}
