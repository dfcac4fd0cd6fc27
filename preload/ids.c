/*
 * ids.c - getpid(2) and geteuid(2) answered from memory.
 *
 * SQLite asks both at every open of a journal: getpid to see whether it
 * runs in a new child that must reseed its randomness (unixOpen), geteuid
 * to decide whether to give the new file the database's owner
 * (robustFchown).  In rollback mode that is every write transaction, and
 * they were two of the three system calls of an autocommit INSERT under
 * ALEX (the third: its record).
 *
 * The pid is kept in a page marked MADV_WIPEONFORK: a child with memory of
 * its own -- made by fork, by clone without CLONE_VM, by a raw system
 * call -- reads zeros there and asks the kernel.  A child that shares our
 * memory would read its parent's pid: once the process has made one
 * (vfork.c's stub, or clone with CLONE_VM and without CLONE_THREAD, below)
 * every call goes to the kernel, as before.  Threads share the pid.
 * posix_spawn and system() make their child inside glibc, whose own calls
 * of getpid do not come here.
 *
 * The effective uid changes only by the calls hooks_cred.c passes on,
 * which forget it, as they forget the stat answers watch.c keeps; a raw
 * setuid system call is seen by neither.  A child inherits it.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hooks.h"
#include "ids.h"
#include "real.h"

static pid_t *pid_slot;
static pthread_once_t pid_once = PTHREAD_ONCE_INIT;
/* (atomic) the uid with KNOWN set, or 0: ask the kernel */
#define KNOWN (1ull << 32)
static unsigned long long euid_kept;

static void pid_init(void)
{
	void *p = REAL(mmap)(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return;
	if (madvise(p, 4096, MADV_WIPEONFORK) != 0) { /* an old kernel: no cache */
		REAL(munmap)(p, 4096);
		return;
	}
	__atomic_store_n(&pid_slot, (pid_t *)p, __ATOMIC_RELEASE);
}

ALEX_EXPORT pid_t getpid(void)
{
	if (__atomic_load_n(&alex_vforked, __ATOMIC_RELAXED))
		return (pid_t)syscall(SYS_getpid);
	pid_t *slot = __atomic_load_n(&pid_slot, __ATOMIC_ACQUIRE);
	if (!slot) {
		pthread_once(&pid_once, pid_init);
		if (!(slot = __atomic_load_n(&pid_slot, __ATOMIC_ACQUIRE)))
			return (pid_t)syscall(SYS_getpid);
	}
	pid_t pid = __atomic_load_n(slot, __ATOMIC_RELAXED);
	if (!pid) {
		pid = (pid_t)syscall(SYS_getpid);
		__atomic_store_n(slot, pid, __ATOMIC_RELAXED);
	}
	return pid;
}

ALEX_EXPORT uid_t geteuid(void)
{
	unsigned long long u = __atomic_load_n(&euid_kept, __ATOMIC_RELAXED);

	if (!u) {
		u = KNOWN | (uid_t)syscall(SYS_geteuid);
		__atomic_store_n(&euid_kept, u, __ATOMIC_RELAXED);
	}
	return (uid_t)u;
}

void alex_ids_forget(void)
{
	__atomic_store_n(&euid_kept, 0ull, __ATOMIC_RELAXED);
}

/* A child on our memory that is not a thread: from now on nothing is
 * answered from memory that such a child would find wrong (init.c:
 * alex_vfork_child too).  The arguments after arg are passed on as they
 * came: clone reads them only when flags ask for them. */
ALEX_EXPORT int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)
{
	va_list ap;

	va_start(ap, arg);
	pid_t *ptid = va_arg(ap, pid_t *);
	void *tls = va_arg(ap, void *);
	pid_t *ctid = va_arg(ap, pid_t *);
	va_end(ap);
	if ((flags & CLONE_VM) && !(flags & CLONE_THREAD))
		__atomic_store_n(&alex_vforked, 1, __ATOMIC_SEQ_CST);
	return REAL(clone)(fn, stack, flags, arg, ptid, tls, ctid);
}
