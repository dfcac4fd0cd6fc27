/*
 * flusher.c - ALEX_SYNC=normal promises durability within ALEX_SYNC_MS (and
 * ALEX_EXTENT_KB) even when the program stops committing, and its commits
 * should not wait for the syncs that keep that promise.  A thread, started
 * at the first commit that asks (below), syncs what is due without holding the database's
 * lock (serve.c: alex_serve_sync_start, alex_serve_sync_end).  It looks
 * every eighth of a window while commits wait, and when a commit asks
 * (alex_flusher_kick: half the window's bytes, or the first unsynced
 * commit -- a window's clock starting -- if it is not looking by the tick
 * anyway); it goes on looking by the tick for IDLE_TICKS after the last
 * commit it saw waiting, then sleeps, so an idle program is not woken.
 * After fork() the child starts its own (its syncs, like its inline ones,
 * are of descriptions it shares with its parent).
 *
 * Why not wake it at every window's start: a wake of a thread that sleeps
 * is a system call that, on a virtual machine, waits for an idle CPU to be
 * woken -- 10-25 us inside the commit that started a window, once a
 * window, and the thread woken then took the registry's lock in the
 * committing thread's way (docs/BENCHMARKS.md, fortieth session).
 *
 * The thread is made at the first commit that asks, not at an open; a
 * commit that puts its database in WAL mode is synced inline instead
 * (serve.c), the database's last through the log.  A program that opens a
 * database in WAL mode, or puts a new one there, then never has a second
 * thread, and glibc takes every mutex of a process with one thread --
 * SQLite's, malloc's -- without an atomic instruction: 2-5 % of plain
 * SQLite's insert rate (docs/LOCKS.md, "Threads").
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>

#include "config.h"
#include "flush.h"
#include "flusher.h"
#include "pdb.h"
#include "serve.h"

static int started;
static int refused; /* pthread_create failed: said once, not tried again */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;
static pthread_once_t cv_once = PTHREAD_ONCE_INIT;
static int kicked;
/* the thread looks every tick, without being woken (see the top) */
static int ticking;

/* Ticks looked at with nothing waiting before the thread sleeps: eight
 * windows (800 ms by default). */
#define IDLE_TICKS 64

static void init_cv(void);

/* The databases whose sync began, found under the registry's lock; each
 * stays open until its sync ends (alex_serve_close waits), so the syncs run
 * with no lock held. */
struct due {
	struct pdb *db[64];
	int n;
	int waiting; /* some database still has unsynced commits */
	uint64_t next; /* the first moment one is due by time alone */
};

static void start_one(struct pdb *db, void *arg)
{
	struct due *d = arg;
	int more = 0;
	uint64_t at = UINT64_MAX;
	if (d->n < 64 && alex_serve_sync_start(db, &more, &at))
		d->db[d->n++] = db;
	d->waiting |= more;
	if (at < d->next)
		d->next = at;
}

/* Until the monotonic time until (0: no limit) or a commit asks. */
static void wait_until(uint64_t until)
{
	struct timespec at = { .tv_sec = (time_t)(until / 1000000000u),
			       .tv_nsec = (long)(until % 1000000000u) };

	pthread_mutex_lock(&mu);
	while (!kicked && (until ? pthread_cond_timedwait(&cv, &mu, &at) == 0
				 : pthread_cond_wait(&cv, &mu) == 0))
		;
	kicked = 0;
	pthread_mutex_unlock(&mu);
}

/* One look at every database: the syncs that are due.  Nonzero while
 * something still waits (what the syncs did not cover, commits made
 * meanwhile, is looked at again a tick on, or when it is due: *next). */
static int look(uint64_t *next)
{
	struct due d = { .n = 0, .waiting = 0, .next = UINT64_MAX };

	alex_pdb_scan(start_one, &d);
	for (int i = 0; i < d.n; i++)
		alex_serve_sync_end(d.db[i]);
	*next = d.next;
	return d.waiting || d.n;
}

/*
 * The next look: a tick after the last one began, or at the moment a
 * database is due, if that comes first -- a staging window at seven
 * eighths, a NORMAL engine at three quarters.  The ticks find windows
 * begun since (a window's start does not wake a ticking thread); the due
 * moment keeps the margin those fractions were chosen for, which ticks
 * alone, not lined up with the window, spent (review: syncs up to 1 ms
 * past ALEX_SYNC_MS).  Never sooner than an eighth of a tick: a due moment
 * that passed without a sync beginning (one under way) is not a loop.
 */
static uint64_t next_look(uint64_t last, uint64_t next)
{
	uint64_t tick = (uint64_t)alex_cfg.engine.sync_ms * 125000u, until = last + tick;

	if (next < until)
		until = next > last + tick / 8 ? next : last + tick / 8;
	return until ? until : 1;
}

static void *flusher(void *arg)
{
	unsigned idle = 0;
	uint64_t last = alex_now_ns(), next = UINT64_MAX;

	(void)arg;
	for (;;) {
		wait_until(idle < IDLE_TICKS ? next_look(last, next) : 0);
		last = alex_now_ns();
		if (look(&next)) {
			idle = 0;
			__atomic_store_n(&ticking, 1, __ATOMIC_SEQ_CST);
		} else if (++idle == IDLE_TICKS) {
			/* said before the last look: a commit that started a
			 * clock before it is seen by that look (start_one reads
			 * it under the database's lock, which the commit held),
			 * one after it reads 0 here and wakes the thread */
			__atomic_store_n(&ticking, 0, __ATOMIC_SEQ_CST);
			if (look(&next)) {
				idle = 0;
				__atomic_store_n(&ticking, 1, __ATOMIC_SEQ_CST);
			}
		}
	}
	return NULL;
}

void alex_flusher_kick(int want)
{
	/* a forked child, or a process whose thread could not be made, has
	 * none yet: commits made on what it already has open still need one */
	if (!__atomic_load_n(&started, __ATOMIC_ACQUIRE))
		alex_flusher_start();
	else if (want == ALEX_WANT_CLOCK && __atomic_load_n(&ticking, __ATOMIC_SEQ_CST))
		return; /* it looks within a tick anyway */
	pthread_once(&cv_once, init_cv);
	pthread_mutex_lock(&mu);
	kicked = 1;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
}

/* the monotonic clock: a step of the wall clock neither stalls nor hurries it */
static void init_cv(void)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&cv, &a);
	pthread_condattr_destroy(&a);
}

void alex_flusher_forked(void)
{
	/* threads do not survive fork: a child starts its own, and the lock
	 * may have been held by the parent's at the moment of the fork */
	started = 0;
	refused = 0;
	ticking = 0;
	pthread_mutex_init(&mu, NULL);
	init_cv();
	kicked = 0;
}

int alex_flusher_running(void)
{
	return __atomic_load_n(&started, __ATOMIC_ACQUIRE);
}

void alex_flusher_start(void)
{
	pthread_t t;
	pthread_attr_t a;
	sigset_t all, old;

	/* NORMAL's syncs; FULL's only for a carried epoch's copy (carry.c) */
	int wanted = alex_cfg.engine.sync == ALEX_SYNC_NORMAL ||
		     (alex_cfg.engine.sync == ALEX_SYNC_FULL && alex_cfg.engine.ckpt_carry);
	if (!wanted || __atomic_load_n(&refused, __ATOMIC_ACQUIRE) ||
	    __atomic_exchange_n(&started, 1, __ATOMIC_ACQ_REL))
		return;
	pthread_once(&cv_once, init_cv);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	/* signals are the program's business, not this thread's */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&t, &a, flusher, NULL) != 0) {
		__atomic_store_n(&refused, 1, __ATOMIC_RELEASE);
		__atomic_store_n(&started, 0, __ATOMIC_RELEASE);
		alex_msg(ALEX_MSG_ERROR, "ALEX_SYNC=normal: no background sync thread; "
					 "commits are synced only when the next one comes");
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
}

