/*
 * io_many.c - a checkpoint's sector writes, all in flight at once.
 *
 * A direct write waits for the device: some 50 us each on the virtio disk
 * measured here, so the 2 000 scattered sectors of a checkpoint took 100
 * ms one at a time against 12 ms for buffered 4 KiB blocks and their
 * fdatasync; 32 to 128 in flight at once, 11-20 ms.  They go through an
 * io_uring made for the call and closed after it (raw system calls, as the
 * rest of io_posix.c's: no library).  Not Linux AIO, measured first: a
 * process that ever made an AIO context waits an RCU grace period at exit
 * (35 ms here, for every short-lived sqlite3 process that checkpointed at
 * its close) and at io_destroy, and each context holds fs.aio-max-nr
 * slots; an io_uring is torn down asynchronously (0.2 ms at exit).  Where
 * io_uring is refused (kernel.io_uring_disabled, Linux before 5.6), or
 * never asked for (any seccomp filter: one that kills at io_uring_setup
 * killed a sandboxed program at its first checkpoint), the caller is told
 * EOPNOTSUPP and uses the page cache: one
 * by one, direct writes would cost more time than they save bytes.
 *
 * The page cache must show the new bytes afterwards.  The kernel drops a
 * cached page after a direct write of it, but should that drop fail (a
 * racing reader holding the page), the old bytes stay cached -- the kernel
 * then logs "Page cache invalidation failure" and reports EIO at the next
 * fsync -- and every later buffered read returns them.  So after the
 * writes every piece whose pages are cached (cachestat, Linux 6.5) is read
 * back through the page cache; a stale page is dropped and read again,
 * and one that cannot be dropped (inside a large folio, or mapped) gets
 * the bytes written through the cache.  A read that raced the write holds
 * its page in the cache, locked, from before its device read began, so
 * the read-back waits for it and sees what it left; a read that begins
 * after the write completed reads the new bytes from the device.  Without
 * cachestat nothing is written direct.  (Evidence that the case occurs is
 * thin: one stale page in 384 000 writes beside a reader in one run, none
 * in the next run nor in a reviewer's 30 000.)
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "io.h"
#include "io_many.h"
#include "uring.h"

#ifndef SYS_cachestat
#define SYS_cachestat 451 /* Linux 6.5, the same number on every architecture */
#endif

#define DEPTH 128u /* pieces in flight at once */

struct cs_range {
	uint64_t off, len;
};
struct cs_counts {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

int alex_io_pwrite_all(int fd, const void *buf, size_t n, uint64_t off)
{
	size_t done = 0;

	while (done < n) {
		long r = syscall(SYS_pwrite64, fd, (const char *)buf + done, n - done,
				 (off_t)(off + done));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (r == 0)
			return ENOSPC;
		done += (size_t)r;
	}
	return 0;
}

/* An io_uring of DEPTH entries, its rings mapped. */
static int ring_open(struct alex_uring *r)
{
	struct io_uring_params p;

	memset(&p, 0, sizeof p);
	if (alex_uring_open(r, DEPTH, &p))
		return EOPNOTSUPP;
	if (p.sq_entries < DEPTH) {
		alex_uring_close(r);
		return EOPNOTSUPP;
	}
	return 0;
}

/* Up to DEPTH pieces: queued, submitted, and every one waited for (the
 * buffers are the caller's: none may still be in flight at return).  A
 * piece that failed or came back short is written again the plain way,
 * which says its errno. */
static int chunk(struct alex_uring *r, int dfd, const struct alex_piece *p, unsigned k)
{
	unsigned tail = *r->sq_tail, mask = *r->sq_mask, done = 0, sub = 0;
	int res[DEPTH];

	for (unsigned j = 0; j < k; j++) {
		unsigned i = (tail + j) & mask;
		struct io_uring_sqe *s = &r->sqes[i];
		memset(s, 0, sizeof *s);
		s->opcode = IORING_OP_WRITE;
		s->fd = dfd;
		s->addr = (uint64_t)(uintptr_t)p[j].buf;
		s->len = (uint32_t)p[j].n;
		s->off = p[j].off;
		s->user_data = j;
		r->sq_array[i] = i;
		res[j] = 1; /* not yet come back */
	}
	__atomic_store_n(r->sq_tail, tail + k, __ATOMIC_RELEASE);
	/* the ring takes entries in order: the first sub went out */
	for (int stop = 0, busy = 0; done < sub || (!stop && sub < k);) {
		unsigned want = stop ? 0 : k - sub;
		/* wait for every write known to be out (never for more: one
		 * not taken would never come back) */
		long e = syscall(SYS_io_uring_enter, r->fd, want, sub - done,
				 IORING_ENTER_GETEVENTS, NULL, 0);
		if (e >= 0) {
			sub += (unsigned)e;
		} else if (errno == EAGAIN || errno == EBUSY) {
			if (++busy > 1000)
				stop = 1;
			sched_yield(); /* completions to reap first */
		} else if (errno != EINTR) {
			stop = 1; /* wait for what went out; the rest the plain way */
		}
		if (stop && !sub)
			return EOPNOTSUPP; /* nothing went out: the page cache */
		unsigned head = *r->cq_head, ctail = __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE);
		for (; head != ctail; head++) {
			const struct io_uring_cqe *c = &r->cqes[head & *r->cq_mask];
			unsigned j = (unsigned)c->user_data;
			if (j < k && res[j] == 1) {
				res[j] = c->res < 0 ? -c->res : (size_t)c->res == p[j].n ? 0 : -1;
				done++;
			}
		}
		__atomic_store_n(r->cq_head, head, __ATOMIC_RELEASE);
	}
	for (unsigned j = sub; j < k; j++)
		res[j] = -1;
	for (unsigned j = 0; j < k; j++) {
		if (res[j] == -1)
			res[j] = alex_io_pwrite_all(dfd, p[j].buf, p[j].n, p[j].off);
		if (res[j])
			return res[j];
	}
	return 0;
}

/* One sector of a piece: the page cache shows it, or is made to. */
static int settle_sector(int fd, const uint8_t *want, uint64_t off)
{
	uint8_t got[512];

	for (int round = 0; round < 2; round++) {
		long r;
		do
			r = syscall(SYS_pread64, fd, got, sizeof got, (off_t)off);
		while (r < 0 && errno == EINTR);
		if (r < 0)
			return errno;
		if (r == (long)sizeof got && memcmp(got, want, sizeof got) == 0)
			return 0;
		if (round == 0) /* a stale page: drop it, if it is clean, unlocked
				   and a page of its own (not in a large folio) */
			syscall(SYS_fadvise64, fd, (off_t)(off & ~(uint64_t)4095), (off_t)4096,
				POSIX_FADV_DONTNEED);
	}
	/* still stale: through the page cache, whose write then goes out
	 * whole with the sync that follows */
	return alex_io_pwrite_all(fd, want, sizeof got, off);
}

int alex_io_direct_settle(int fd, const struct alex_piece *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct cs_range r = { p[i].off, p[i].n };
		struct cs_counts c;
		if (syscall(SYS_cachestat, fd, &r, &c, 0) < 0)
			return errno;
		if (!c.nr_cache)
			continue; /* the next read comes from the device */
		for (size_t k = 0; k < p[i].n; k += 512) {
			int err = settle_sector(fd, (const uint8_t *)p[i].buf + k, p[i].off + k);
			if (err)
				return err;
		}
	}
	return 0;
}

int alex_io_pwrite_many(int dfd, int fd, const struct alex_piece *p, size_t n)
{
	struct cs_range cr = { 0, 4096 };
	struct cs_counts cc;
	struct alex_uring r;
	int err = 0;

	if (syscall(SYS_cachestat, fd, &cr, &cc, 0) < 0)
		return EOPNOTSUPP; /* before Linux 6.5: no way to check */
	if (ring_open(&r))
		return EOPNOTSUPP;
	for (size_t i = 0; i < n && !err; i += DEPTH)
		err = chunk(&r, dfd, p + i, (unsigned)(n - i < DEPTH ? n - i : DEPTH));
	alex_uring_close(&r);
	return err ? err : alex_io_direct_settle(fd, p, n);
}
