/*
 * flusher.c - ALEX_SYNC=normal promises durability within ALEX_SYNC_MS even
 * when the program stops committing.  A thread, started with the first
 * engine, wakes every half window and syncs what is due.  It holds no lock
 * while it sleeps; after fork() the child starts its own when it opens a
 * database again.
 */
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "config.h"
#include "flusher.h"
#include "pdb.h"
#include "serve.h"

static int started;

static void sync_one(struct pdb *db, void *arg)
{
	(void)arg;
	alex_serve_sync_due(db);
}

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
		alex_pdb_scan(sync_one, NULL);
	}
	return NULL;
}

void alex_flusher_forked(void)
{
	started = 0; /* threads do not survive fork: a child starts its own */
}

void alex_flusher_start(void)
{
	pthread_t t;
	pthread_attr_t a;
	sigset_t all, old;

	if (alex_cfg.engine.sync != ALEX_SYNC_NORMAL ||
	    __atomic_exchange_n(&started, 1, __ATOMIC_ACQ_REL))
		return;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	/* signals are the program's business, not this thread's */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&t, &a, flusher, NULL) != 0) {
		__atomic_store_n(&started, 0, __ATOMIC_RELEASE);
		alex_msg(ALEX_MSG_ERROR, "ALEX_SYNC=normal: no background sync thread; "
					 "commits are synced only when the next one comes");
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
}

