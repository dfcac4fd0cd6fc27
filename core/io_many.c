/*
 * io_many.c - a checkpoint's sector writes, all in flight at once.
 *
 * A direct write waits for the device: some 50 us each on the virtio disk
 * measured here, so the 2 000 scattered sectors of a checkpoint took 100
 * ms one at a time against 12 ms for buffered 4 KiB blocks and their
 * fdatasync.  Submitted together through Linux AIO (io_submit, which is
 * truly asynchronous for O_DIRECT overwrites on ext4 and xfs) they took
 * 11-14 ms.  No library: the four system calls are raw, as the rest of
 * io_posix.c's are.  Where AIO is missing (ENOSYS under a seccomp filter,
 * EAGAIN past fs.aio-max-nr) the pieces go one by one.
 *
 * The page cache must show the new bytes afterwards, and the kernel does
 * not promise that: a buffered read of the same page racing the direct
 * write (another process's, or its readahead around a page it wanted) can
 * leave the old bytes cached, and every later buffered read then returns
 * them.  Measured here: 1 of 384 000 sector writes beside a process
 * reading the file at random; the stage_chaos campaign, many processes on
 * one database, got "database disk image is malformed".  So after the
 * writes every piece whose pages are cached (cachestat, Linux 6.5) is read
 * back through the page cache; a stale page is dropped and read again,
 * and one that cannot be dropped gets the bytes written through the cache.
 * A read that raced the write holds its page in the cache, locked, from
 * before its device read began, so the read-back waits for it and sees
 * what it left; a read that begins after the write completed reads the
 * new bytes from the device.  Without cachestat nothing is written direct.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "io.h"
#include "io_many.h"

#ifndef SYS_cachestat
#define SYS_cachestat 451 /* Linux 6.5, the same number on every architecture */
#endif

struct cs_range {
	uint64_t off, len;
};
struct cs_counts {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

#define DEPTH 128u /* pieces in flight at once */

static int one(int dfd, const struct alex_piece *p)
{
	size_t done = 0;

	while (done < p->n) {
		long r = syscall(SYS_pwrite64, dfd, (const char *)p->buf + done, p->n - done,
				 (off_t)(p->off + done));
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

static int one_by_one(int dfd, const struct alex_piece *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int err = one(dfd, &p[i]);
		if (err)
			return err;
	}
	return 0;
}

/* One context per process, made at its first use and never destroyed:
 * io_destroy waits for an RCU grace period (30 ms measured here, inside
 * a checkpoint inside a commit); the kernel frees it at exit.  A forked
 * child has none of its parent's contexts (their ring is not copied), so
 * it makes its own.  Taken with trylock: a thread already writing, or a
 * child forked while one was, writes one by one instead of waiting. */
static pthread_mutex_t ctx_mu = PTHREAD_MUTEX_INITIALIZER;
static aio_context_t ctx_id;
static long ctx_pid;

/* Waits for the k pieces submitted from p; each one's outcome goes to
 * res[] by its index (aio_data): 0, an errno, or -1 for a short write. */
static int reap(aio_context_t ctx, const struct alex_piece *p, size_t k, int *res)
{
	struct io_event ev[DEPTH];

	for (size_t got = 0; got < k;) {
		long r = syscall(SYS_io_getevents, ctx, 1L, (long)(k - got), ev, NULL);
		if (r < 0) {
			int e = errno;
			if (e == EINTR)
				continue;
			/* never expected: wait for what is still in flight
			 * (the buffers are the caller's), and start again */
			syscall(SYS_io_destroy, ctx);
			ctx_pid = 0;
			return e;
		}
		for (long e = 0; e < r; e++) {
			size_t i = (size_t)ev[e].data;
			if (ev[e].res < 0)
				res[i] = (int)-ev[e].res;
			else if ((size_t)ev[e].res != p[i].n)
				res[i] = -1;
		}
		got += (size_t)r;
	}
	return 0;
}

/* Up to DEPTH pieces: submitted together, reaped, and whatever was not
 * submitted or came back short written the plain way. */
static int chunk(aio_context_t ctx, int dfd, const struct alex_piece *p, size_t k)
{
	struct iocb cb[DEPTH], *cp[DEPTH];
	int res[DEPTH], err;
	size_t sub = 0;

	memset(cb, 0, k * sizeof cb[0]);
	for (size_t j = 0; j < k; j++) {
		cb[j].aio_data = j;
		cb[j].aio_fildes = (uint32_t)dfd;
		cb[j].aio_lio_opcode = IOCB_CMD_PWRITE;
		cb[j].aio_buf = (uint64_t)(uintptr_t)p[j].buf;
		cb[j].aio_nbytes = p[j].n;
		cb[j].aio_offset = (int64_t)p[j].off;
		cp[j] = &cb[j];
		res[j] = 0;
	}
	while (sub < k) {
		long r = syscall(SYS_io_submit, ctx, (long)(k - sub), cp + sub);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break; /* EAGAIN and the like: the rest one by one */
		sub += (size_t)r;
	}
	if ((err = reap(ctx, p, sub, res)))
		return err;
	for (size_t j = 0; j < k; j++) {
		if (j >= sub || res[j] == -1)
			res[j] = one(dfd, &p[j]);
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
		if (r == (long)sizeof got && memcmp(got, want, sizeof got) == 0)
			return 0;
		if (round == 0) /* a stale page: drop it (clean and unlocked) */
			syscall(SYS_fadvise64, fd, (off_t)(off & ~(uint64_t)4095), (off_t)4096,
				POSIX_FADV_DONTNEED);
	}
	/* still stale (mapped, say): through the page cache, whose write
	 * then goes out whole with the sync that follows */
	return one(fd, &(struct alex_piece){ want, 512, off });
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

static int write_all(int dfd, const struct alex_piece *p, size_t n)
{
	int err = 0;

	if (n < 2 || pthread_mutex_trylock(&ctx_mu))
		return one_by_one(dfd, p, n);
	long pid = syscall(SYS_getpid);
	if (ctx_pid != pid) {
		ctx_id = 0;
		if (syscall(SYS_io_setup, DEPTH, &ctx_id) < 0) {
			ctx_id = 0;
			pthread_mutex_unlock(&ctx_mu);
			return one_by_one(dfd, p, n);
		}
		ctx_pid = pid;
	}
	for (size_t i = 0; i < n && !err; i += DEPTH)
		err = chunk(ctx_id, dfd, p + i, n - i < DEPTH ? n - i : DEPTH);
	pthread_mutex_unlock(&ctx_mu);
	return err;
}

int alex_io_pwrite_many(int dfd, int fd, const struct alex_piece *p, size_t n)
{
	struct cs_range r = { 0, 4096 };
	struct cs_counts c;

	if (syscall(SYS_cachestat, fd, &r, &c, 0) < 0)
		return EOPNOTSUPP; /* before Linux 6.5: no way to check */
	int err = write_all(dfd, p, n);

	return err ? err : alex_io_direct_settle(fd, p, n);
}
