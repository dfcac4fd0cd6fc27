/*
 * init.c - the library's constructor and destructor, and the two facts
 * every hook asks first: is tracking on, and is this a vfork()ed child that
 * shares its parent's tables until it execs.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "dirsync.h"
#include "fdtable.h"
#include "flusher.h"
#include "hooks.h"
#include "mmap.h"
#include "span.h"
#include "pdb.h"
#include "real.h"
#include "serve.h"
#include "stats.h"
#include "trace.h"
#include "watch.h"

static int ready;
static pid_t owner; /* the process whose tables these are */

/* A word on a page the kernel empties in every child that gets a copy of
 * this memory (MADV_WIPEONFORK, Linux 4.14): fork's handler sets it again,
 * so an empty one is a child made without the handlers (a raw clone
 * system call, _Fork), which holds none of its parent's POSIX locks and
 * shares its inotify queue.  No such page: never this process, as far
 * as its users can tell (they then ask the kernel). */
static volatile int *self_mark;

int alex_same_process(void)
{
	return self_mark && *self_mark;
}

static void mark_self(void)
{
	if (self_mark)
		*self_mark = 1;
}

static void self_mark_init(void)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p = REAL(mmap)(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			     -1, 0);

	if (p == MAP_FAILED)
		return;
	if (madvise(p, (size_t)page, MADV_WIPEONFORK) != 0) {
		REAL(munmap)(p, (size_t)page);
		return;
	}
	self_mark = p;
	mark_self();
}

void alex_owner_reset(void)
{
	owner = getpid();
}

int alex_vfork_child(void)
{
	/* no vfork yet (vfork.c): no child can share our memory */
	return __atomic_load_n(&alex_vforked, __ATOMIC_RELAXED) && getpid() != owner;
}

__attribute__((constructor)) static void alex_init(void)
{
	int saved = errno;

	alex_real_init();
	alex_owner_reset();
	self_mark_init();
	alex_config_load();
	if (alex_fd_init())
		alex_cfg.mode = ALEX_MODE_OFF;
	alex_trace_init();
	/* a fork()ed child owns its copies (child handlers run in this order) */
	pthread_atfork(NULL, NULL, alex_owner_reset);
	pthread_atfork(NULL, NULL, mark_self);
	pthread_atfork(NULL, NULL, alex_dirsync_forked);
	pthread_atfork(NULL, NULL, alex_flusher_forked);
	pthread_atfork(NULL, NULL, alex_span_atfork_child);
	alex_watch_atfork();
	alex_pdb_atfork();
	alex_mmap_atfork(); /* its prepare runs first: the table before the databases */
	ready = 1;
	errno = saved;
}

static void sum_live(struct pdb *db, void *arg)
{
	alex_serve_stats(db, arg);
}

__attribute__((destructor)) static void alex_fini(void)
{
	int saved = errno;

	if (ready && alex_cfg.stats_path[0]) {
		struct alex_stats live;
		memset(&live, 0, sizeof live);
		alex_pdb_scan(sum_live, &live);
		alex_stats_write(&live);
	}
	alex_trace_exit();
	errno = saved;
}

int alex_active(void)
{
	return ready && alex_cfg.mode == ALEX_MODE_ON;
}

int alex_refusing(void)
{
	return ready && alex_cfg.bad;
}
