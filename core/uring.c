/*
 * uring.c - an io_uring made and mapped by raw system calls, no library:
 * the two users (io_many.c, preload/ring.c) each need a few operations,
 * and liburing would be one more library in every host process.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "uring.h"

int alex_uring_allowed(void)
{
	static int filtered; /* (atomic) seen in some thread: then in doubt for all */
	char buf[8192];

	if (__atomic_load_n(&filtered, __ATOMIC_RELAXED))
		return 0;
	int saved = errno;
	/* the calling thread's: a filter may be one thread's (no TSYNC) */
	long fd = syscall(SYS_openat, AT_FDCWD, "/proc/thread-self/status", O_RDONLY | O_CLOEXEC);
	long n = fd >= 0 ? syscall(SYS_read, fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		syscall(SYS_close, fd);
	errno = saved;
	if (n <= 0)
		return 0; /* no /proc: in doubt, no */
	buf[n] = 0;
	const char *s = strstr(buf, "\nSeccomp:");
	if (s && strncmp(s + 9, "\t0\n", 3) == 0)
		return 1;
	if (s) /* mode 1 or 2: for good */
		__atomic_store_n(&filtered, 1, __ATOMIC_RELAXED);
	return 0;
}

void alex_uring_unmap(struct alex_uring *u)
{
	/* raw calls, past the interposer's mmap hooks (preload/mmap.c) */
	if (u->sqes)
		syscall(SYS_munmap, u->sqes, u->sqes_len);
	if (u->cq && u->cq != u->sq)
		syscall(SYS_munmap, u->cq, u->cq_len);
	if (u->sq)
		syscall(SYS_munmap, u->sq, u->sq_len);
	u->sqes = NULL;
	u->sq = u->cq = NULL;
}

void alex_uring_close(struct alex_uring *u)
{
	alex_uring_unmap(u);
	if (u->fd >= 0)
		syscall(SYS_close, u->fd);
	u->fd = -1;
}

static void *map(struct alex_uring *u, size_t len, off_t what)
{
	long m = syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, u->fd, what);
	return m == -1 ? NULL : (void *)m;
}

int alex_uring_open(struct alex_uring *u, unsigned entries, struct io_uring_params *p)
{
	memset(u, 0, sizeof *u);
	u->fd = -1;
	if (!alex_uring_allowed())
		return EOPNOTSUPP;
	long fd = syscall(SYS_io_uring_setup, entries, p);
	if (fd < 0)
		return errno;
	u->fd = (int)fd;
	u->sq_len = p->sq_off.array + p->sq_entries * sizeof(unsigned);
	u->cq_len = p->cq_off.cqes + p->cq_entries * sizeof(struct io_uring_cqe);
	if (p->features & IORING_FEAT_SINGLE_MMAP)
		u->sq_len = u->cq_len = u->sq_len > u->cq_len ? u->sq_len : u->cq_len;
	u->sqes_len = p->sq_entries * sizeof(struct io_uring_sqe);
	u->sq = map(u, u->sq_len, IORING_OFF_SQ_RING);
	if (u->sq)
		u->cq = p->features & IORING_FEAT_SINGLE_MMAP ? u->sq : map(u, u->cq_len, IORING_OFF_CQ_RING);
	if (u->cq)
		u->sqes = map(u, u->sqes_len, IORING_OFF_SQES);
	if (!u->sqes) {
		alex_uring_close(u);
		return EOPNOTSUPP;
	}
	u->sq_tail = (unsigned *)(u->sq + p->sq_off.tail);
	u->sq_mask = (unsigned *)(u->sq + p->sq_off.ring_mask);
	u->sq_array = (unsigned *)(u->sq + p->sq_off.array);
	u->sq_flags = (unsigned *)(u->sq + p->sq_off.flags);
	u->cq_head = (unsigned *)(u->cq + p->cq_off.head);
	u->cq_tail = (unsigned *)(u->cq + p->cq_off.tail);
	u->cq_mask = (unsigned *)(u->cq + p->cq_off.ring_mask);
	u->cq_overflow = (unsigned *)(u->cq + p->cq_off.overflow);
	u->cqes = (struct io_uring_cqe *)(u->cq + p->cq_off.cqes);
	return 0;
}
