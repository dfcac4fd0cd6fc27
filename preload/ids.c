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
 * The effective uid changes by the calls hooks_cred.c passes on, which
 * forget it, as they forget the stat answers watch.c keeps; a raw setuid
 * system call is seen by neither.  It sits in the same page, so a child
 * asks again (clone with CLONE_NEWUSER makes one whose uid is not ours).
 * After unshare or setns the process may be in a user namespace whose
 * uid_map is written later, which changes the uid with no call of ours:
 * from then on every call asks the kernel.
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

/* In a page marked MADV_WIPEONFORK: zeros in every child with memory of
 * its own.  euid: its generation (raised by each forget) above bit 33,
 * KNOWN, the uid in the low 32 bits: a thread's answer from the kernel is
 * kept only if no forget came between (a compare-and-swap). */
struct ids {
	pid_t pid;
	unsigned long long euid;
};
#define KNOWN (1ull << 32)
#define GEN_ONE (1ull << 33)

static struct ids *kept;
static pthread_once_t kept_once = PTHREAD_ONCE_INIT;
static int euid_unkept; /* (atomic) a user namespace may change it unseen */

static void kept_init(void)
{
	void *p = REAL(mmap)(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return;
	if (madvise(p, 4096, MADV_WIPEONFORK) != 0) { /* an old kernel: nothing kept */
		REAL(munmap)(p, 4096);
		return;
	}
	__atomic_store_n(&kept, (struct ids *)p, __ATOMIC_RELEASE);
}

static struct ids *ids(void)
{
	struct ids *k = __atomic_load_n(&kept, __ATOMIC_ACQUIRE);

	if (!k) {
		pthread_once(&kept_once, kept_init);
		k = __atomic_load_n(&kept, __ATOMIC_ACQUIRE);
	}
	return k;
}

ALEX_EXPORT pid_t getpid(void)
{
	struct ids *k;

	if (__atomic_load_n(&alex_vforked, __ATOMIC_RELAXED) || !(k = ids()))
		return (pid_t)syscall(SYS_getpid);
	pid_t pid = __atomic_load_n(&k->pid, __ATOMIC_RELAXED);
	if (!pid) {
		pid = (pid_t)syscall(SYS_getpid);
		__atomic_store_n(&k->pid, pid, __ATOMIC_RELAXED);
	}
	return pid;
}

ALEX_EXPORT uid_t geteuid(void)
{
	struct ids *k;

	/* a child on our memory shares the page: it may have set its own */
	if (__atomic_load_n(&alex_vforked, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&euid_unkept, __ATOMIC_RELAXED) || !(k = ids()))
		return (uid_t)syscall(SYS_geteuid);
	unsigned long long w = __atomic_load_n(&k->euid, __ATOMIC_ACQUIRE);
	if (w & KNOWN)
		return (uid_t)w;
	uid_t u = (uid_t)syscall(SYS_geteuid);
	unsigned long long to = (w & ~(GEN_ONE - 1)) | KNOWN | u;
	__atomic_compare_exchange_n(&k->euid, &w, to, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	return u;
}

void alex_ids_forget(void)
{
	struct ids *k = __atomic_load_n(&kept, __ATOMIC_ACQUIRE);
	unsigned long long w;

	if (!k)
		return;
	w = __atomic_load_n(&k->euid, __ATOMIC_ACQUIRE);
	while (!__atomic_compare_exchange_n(&k->euid, &w, (w & ~(GEN_ONE - 1)) + GEN_ONE, 0,
					    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
}

void alex_ids_namespaced(void)
{
	__atomic_store_n(&euid_unkept, 1, __ATOMIC_RELAXED);
	alex_ids_forget();
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
