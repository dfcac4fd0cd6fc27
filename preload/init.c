/*
 * init.c - the library's constructor and destructor, and the two facts
 * every hook asks first: is tracking on, and is this a vfork()ed child that
 * shares its parent's tables until it execs.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
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

/* the kernel's answer, not ids.c's: telling a child on our memory from
 * its parent is what that needs */
static pid_t pid_now(void)
{
	return (pid_t)syscall(SYS_getpid);
}

void alex_owner_reset(void)
{
	owner = pid_now();
}

int alex_not_owner(void)
{
	return pid_now() != owner;
}

int alex_vfork_child(void)
{
	/* no vfork yet (vfork.c, or clone: ids.c): no child can share our memory */
	return __atomic_load_n(&alex_vforked, __ATOMIC_RELAXED) && pid_now() != owner;
}

__attribute__((constructor)) static void alex_init(void)
{
	int saved = errno;

	alex_real_init();
	alex_owner_reset();
	alex_config_load();
	if (alex_fd_init())
		alex_cfg.mode = ALEX_MODE_OFF;
	alex_trace_init();
	/* a fork()ed child owns its copies (child handlers run in this order) */
	pthread_atfork(NULL, NULL, alex_owner_reset);
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

	if (alex_active() && !alex_not_owner())
		alex_serve_sync_before_end(); /* databases left open at exit */
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
