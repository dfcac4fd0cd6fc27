/*
 * lockgap.c - a race amplifier for multiproc.sh (MULTIPROC_PRELOAD): loaded
 * in front of libalex.so, it sleeps inside two of SQLite's lock sequences,
 * at points where the scheduler may preempt a process anyway, so that a
 * window a few system calls wide is wide for every process and every run.
 *
 *  reader  after its PENDING read lock from no lock was granted (under ALEX
 *          only asked about, with F_GETLK: preload/locks.c) and before it
 *          read-locks the SHARED range: LOCKGAP_READ_US microseconds, at
 *          one such call in LOCKGAP_READ_EVERY (default 1)
 *  writer  after it lowered EXCLUSIVE to SHARED (a read lock on the SHARED
 *          range where it held the write lock) and before it releases
 *          PENDING and RESERVED: LOCKGAP_WRITE_US microseconds
 *  reserved before its RESERVED lock call, which comes right after its last
 *          read under SHARED: LOCKGAP_RESERVED_US microseconds, in which
 *          libalex.so's flusher may take its merge locks (stage.sh: self)
 *
 * With both, a reader whose question came before a writer's PENDING is
 * given SHARED while the writer sleeps between its two unlock calls: the
 * writer's commit must already be in ALEX's log then (96a1a6a).  On its
 * parent, memory-off and off-off lose updates and corrupt the database in
 * about one run in six of `MULTIPROC_PROCS=4` (docs/RELIABILITY.md).
 * Nothing else changes: every call is passed on as made.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include "sqlite_locks.h"

#define EXPORT __attribute__((visibility("default")))
#define MAXFD 4096

static unsigned read_us, read_every = 1, write_us, reserved_us, reads;
static char excl[MAXFD]; /* this descriptor write-locked the SHARED range */

__attribute__((constructor)) static void init(void)
{
	const char *v;

	if ((v = getenv("LOCKGAP_READ_US")))
		read_us = (unsigned)atoi(v);
	if ((v = getenv("LOCKGAP_READ_EVERY")) && atoi(v) > 0)
		read_every = (unsigned)atoi(v);
	if ((v = getenv("LOCKGAP_WRITE_US")))
		write_us = (unsigned)atoi(v);
	if ((v = getenv("LOCKGAP_RESERVED_US")))
		reserved_us = (unsigned)atoi(v);
}

static int gap(int fd, int cmd, void *arg, int (*real)(int, int, ...))
{
	const struct flock *l = arg;

	if (reserved_us && (cmd == F_SETLK || cmd == F_SETLKW) && l && l->l_whence == SEEK_SET &&
	    l->l_type == F_WRLCK && l->l_start == SQLITE_RESERVED_BYTE && l->l_len == 1)
		usleep(reserved_us);
	int r = real(fd, cmd, arg);

	if (r != 0 || (cmd != F_SETLK && cmd != F_SETLKW) || !l || l->l_whence != SEEK_SET ||
	    fd < 0 || fd >= MAXFD)
		return r;
	long long end = l->l_len == 0 ? (long long)(~0ULL >> 1) : l->l_start + l->l_len;
	if (l->l_start == SQLITE_SHARED_FIRST && l->l_len == SQLITE_SHARED_SIZE) {
		int lowers = l->l_type == F_RDLCK && excl[fd];
		excl[fd] = l->l_type == F_WRLCK;
		if (lowers && write_us)
			usleep(write_us);
	} else if (l->l_start == SQLITE_PENDING_BYTE && l->l_len == 1 && l->l_type == F_RDLCK) {
		if (read_us && ++reads % read_every == 0)
			usleep(read_us);
	} else if (l->l_type == F_UNLCK && l->l_start <= SQLITE_SHARED_FIRST &&
		   end > SQLITE_SHARED_FIRST) {
		excl[fd] = 0;
	}
	return r;
}

#define HOOK(name)                                                                    \
	EXPORT int name(int fd, int cmd, ...)                                         \
	{                                                                             \
		static int (*real)(int, int, ...);                                    \
		va_list ap;                                                           \
		va_start(ap, cmd);                                                    \
		void *arg = va_arg(ap, void *);                                       \
		va_end(ap);                                                           \
		if (!real)                                                            \
			real = (int (*)(int, int, ...))dlsym(RTLD_NEXT, #name);       \
		return gap(fd, cmd, arg, real);                                       \
	}

HOOK(fcntl)
HOOK(fcntl64)
