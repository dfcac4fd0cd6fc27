/*
 * io_test.c - the real files, with a power switch and a fault injector.
 * FOR TESTS ONLY: libalex.so uses it when ALEX_TEST_POWERCUT or
 * ALEX_TEST_FAULT is set (man/libalex.7), never otherwise.
 *
 * Power cut: every mutating call (pwrite, fdatasync, ftruncate, rename,
 * unlink, directory sync) is numbered from 1 across the process.  Before a
 * pwrite or ftruncate the bytes it replaces are read and kept until the
 * file's next fdatasync.  At call number K, instead of making it, the
 * process puts back what the disk would hold had the power failed there
 * (every unsynced write undone; or all kept but the newest, which is torn
 * at a byte chosen from the seed; or all kept) and exits at once with
 * status ALEX_TEST_CUT_STATUS.  Directory entries count as durable at once,
 * as in io_mem.c; the page cache is not dropped (a later reader of the
 * files sees what was restored, which is what a rebooted machine would).
 *
 * Faults: the Nth call of one class fails with an errno and changes
 * nothing, once.
 *
 * Recording (ALEX_TEST_RECORD): every mutating call that succeeded is
 * appended to a trace (io_test.h), for tests/preload/cutfs to rebuild a
 * disk from at any point after the run.
 */
#include "bytes.h"
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "io_many.h"
#include "io_test.h"

struct undo {
	int fd;
	uint64_t off, old_size;
	size_t len;     /* bytes of data */
	uint8_t *data;  /* what [off, off + len) held; only bytes below old_size matter */
	int trunc;      /* a size change, not a write */
	int out;        /* written out: durable at the next fdatasync of any file */
};

#define MAXFD 1024

static struct {
	pthread_mutex_t mu;
	struct alex_test_cfg cfg;
	uint64_t ops, class_ops[ALEX_TEST_NCLASS];
	struct undo *u;
	size_t n, cap;
	unsigned char is_log[MAXFD];
	int alias[MAXFD]; /* a direct descriptor: its file's other one, + 1 */
	int fault_done;
} T = { .mu = PTHREAD_MUTEX_INITIALIZER };

static const char *const class_name[ALEX_TEST_NCLASS] = { "logwrite", "grow", "logsync",
							  "ckptwrite", "ckptsync" };

const char *alex_test_class_name(enum alex_test_class c)
{
	return c < ALEX_TEST_NCLASS ? class_name[c] : "?";
}

int alex_test_class_parse(const char *s, enum alex_test_class *c)
{
	for (int i = 0; i < ALEX_TEST_NCLASS; i++)
		if (strcmp(s, class_name[i]) == 0) {
			*c = (enum alex_test_class)i;
			return 0;
		}
	return -1;
}

static const struct alex_io_ops *P(void)
{
	return alex_io_posix.ops;
}

static void report(const char *fmt, unsigned long long a, const char *b, unsigned long long c)
{
	char line[256];
	if (!T.cfg.report[0])
		return;
	int n = snprintf(line, sizeof line, fmt, a, b, c);
	long fd = syscall(SYS_openat, AT_FDCWD, T.cfg.report, O_WRONLY | O_CREAT | O_APPEND |
				  O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (syscall(SYS_write, (int)fd, line, (size_t)n) < 0)
		n = 0;
	syscall(SYS_close, (int)fd);
}

/* Undoes a write (or truncation) but for its first keep bytes. */
static void undo_one(const struct undo *u, size_t keep)
{
	uint64_t end = u->off + u->len < u->old_size ? u->off + u->len : u->old_size, cur = 0;
	uint64_t size = keep && u->off + keep > u->old_size ? u->off + keep : u->old_size;

	if (u->off + keep < end)
		P()->pwrite(NULL, u->fd, u->data + keep, (size_t)(end - u->off - keep), u->off + keep);
	if (P()->size(NULL, u->fd, &cur) == 0 && cur != size)
		P()->ftruncate(NULL, u->fd, size);
}

/* The power fails now: put the disk's state back and leave. */
static void cut(const char *what)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	size_t n = T.n;
	if (T.cfg.how == ALEX_CRASH_TEAR && n) { /* as io_mem.c: older writes kept */
		const struct undo *last = &T.u[n - 1];
		uint64_t s = T.cfg.seed ^ T.ops;
		s = (s ^ (s >> 31)) * 0x9e3779b97f4a7c15ull;
		undo_one(last, last->len ? (size_t)((s >> 11) % last->len) : 0);
	} else if (T.cfg.how == ALEX_CRASH_LOSE) {
		while (n--)
			undo_one(&T.u[n], 0);
	}
	report("cut %llu %s %llu\n", (unsigned long long)T.ops, what,
	       (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec);
	syscall(SYS_exit_group, ALEX_TEST_CUT_STATUS);
}

/*
 * Counts a mutating call; cuts the power if it is the chosen one; returns
 * the injected errno if this call is to fail, else 0.  Holds T.mu.
 */
static int before(const char *what, enum alex_test_class cls)
{
	T.ops++;
	if (T.cfg.cut_at && T.ops == T.cfg.cut_at)
		cut(what);
	if (cls >= ALEX_TEST_NCLASS)
		return 0;
	T.class_ops[cls]++;
	if (!T.fault_done && T.cfg.fault_at && cls == T.cfg.fault_class &&
	    T.class_ops[cls] == T.cfg.fault_at) {
		T.fault_done = 1;
		report("fault %llu %s %llu\n", (unsigned long long)T.class_ops[cls], what,
		       (unsigned long long)T.cfg.fault_err);
		return T.cfg.fault_err;
	}
	return 0;
}

static int remember(int fd, uint64_t off, size_t len, int trunc)
{
	struct undo u = { .fd = fd, .off = off, .len = len, .trunc = trunc };
	size_t got = 0;
	int err;

	if (!T.cfg.cut_at)
		return 0;
	if ((err = P()->size(NULL, fd, &u.old_size)))
		return err;
	if (off < u.old_size) {
		size_t want = u.old_size - off < len ? (size_t)(u.old_size - off) : len;
		if (!(u.data = malloc(want ? want : 1)))
			return ENOMEM;
		if ((err = P()->pread(NULL, fd, u.data, want, off, &got))) {
			free(u.data);
			return err;
		}
	}
	if (T.n == T.cap) {
		size_t cap = T.cap ? 2 * T.cap : 256;
		struct undo *nu = realloc(T.u, cap * sizeof *nu);
		if (!nu) {
			free(u.data);
			return ENOMEM;
		}
		T.u = nu;
		T.cap = cap;
	}
	T.u[T.n++] = u;
	return 0;
}

/* A direct descriptor's writes are its file's: numbered, undone and synced
 * with the descriptor it was opened from (log.c: the log's fdatasync). */
static int as_file(int fd)
{
	return fd >= 0 && fd < MAXFD && T.alias[fd] ? T.alias[fd] - 1 : fd;
}

static int t_open_direct(void *ctx, int fd, int *dfd)
{
	if (!P()->open_direct)
		return EOPNOTSUPP;
	int err = P()->open_direct(ctx, fd, dfd);
	if (!err && *dfd >= MAXFD) {
		P()->close(ctx, *dfd);
		return EOPNOTSUPP;
	}
	if (!err) {
		pthread_mutex_lock(&T.mu);
		T.alias[*dfd] = fd + 1;
		pthread_mutex_unlock(&T.mu);
	}
	return err;
}

static int is_log(int fd)
{
	return fd >= 0 && fd < MAXFD && T.is_log[fd];
}

static int t_open(void *ctx, const char *path, int flags, int *fd)
{
	int err = P()->open(ctx, path, flags, fd);
	if (!err && *fd < MAXFD) {
		pthread_mutex_lock(&T.mu);
		T.is_log[*fd] = strstr(path, "-alex") != NULL;
		pthread_mutex_unlock(&T.mu);
	}
	if (!err) {
		alex_test_record(ALEX_TR_NAME, *fd, 0, 0, 0, NULL, path, NULL);
		if (flags & ALEX_O_TRUNC)
			alex_test_record(ALEX_TR_TRUNC, *fd, 0, 0, 0, NULL, NULL, NULL);
	}
	return err;
}

/* A closed file's unsynced writes still die with the power: keep its
 * records, under a duplicate descriptor, since the number may be reused. */
static int t_close(void *ctx, int fd)
{
	pthread_mutex_lock(&T.mu);
	int dup = -1;
	for (size_t i = 0; i < T.n; i++)
		if (T.u[i].fd == fd) {
			if (dup < 0)
				dup = (int)syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, MAXFD);
			T.u[i].fd = dup;
		}
	if (fd >= 0 && fd < MAXFD)
		T.is_log[fd] = T.alias[fd] = 0;
	pthread_mutex_unlock(&T.mu);
	return P()->close(ctx, fd);
}

static int t_pread(void *ctx, int fd, void *buf, size_t n, uint64_t off, size_t *got)
{
	return P()->pread(ctx, fd, buf, n, off, got);
}

static int t_pwrite(void *ctx, int fd, const void *buf, size_t n, uint64_t off)
{
	pthread_mutex_lock(&T.mu);
	int f = as_file(fd);
	enum alex_test_class c = !is_log(f) ? ALEX_TEST_CKPTWRITE
				 : alex_all_zero(buf, n) ? ALEX_TEST_GROW : ALEX_TEST_LOGWRITE;
	int err = before("pwrite", c);
	if (!err)
		err = remember(f, off, n, 0);
	if (!err)
		err = P()->pwrite(ctx, fd, buf, n, off);
	if (!err)
		alex_test_record(ALEX_TR_WRITE, f, 0, off, n, buf, NULL, NULL);
	pthread_mutex_unlock(&T.mu);
	return err;
}

/* Numbered and undone one by one like any write, then the real
 * backend's check of the page cache (io_many.c). */
static int t_pwrite_many(void *ctx, int dfd, int fd, const struct alex_piece *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int err = t_pwrite(ctx, dfd, p[i].buf, p[i].n, p[i].off);
		if (err)
			return err;
	}
	return alex_io_direct_settle(fd, p, n);
}

static void t_forget(void *ctx, int fd)
{
	if (P()->forget)
		P()->forget(ctx, fd);
}

static int t_fdatasync(void *ctx, int fd)
{
	pthread_mutex_lock(&T.mu);
	int err = before("fdatasync", is_log(fd) ? ALEX_TEST_LOGSYNC : ALEX_TEST_CKPTSYNC);
	if (!err)
		err = P()->fdatasync(ctx, fd);
	if (!err)
		alex_test_record(ALEX_TR_SYNC, fd, 0, 0, 0, NULL, NULL, NULL);
	if (!err) { /* durable now: forget how to undo it */
		size_t k = 0;
		for (size_t i = 0; i < T.n; i++) {
			if (T.u[i].fd == fd || T.u[i].out) /* the cache flush takes all written-out writes */
				free(T.u[i].data);
			else
				T.u[k++] = T.u[i];
		}
		T.n = k;
	}
	pthread_mutex_unlock(&T.mu);
	return err;
}

/* As io_mem.c: the file's writes inside the range's pages become durable
 * with the next fdatasync of any file; when one crosses the range's edge,
 * or a size change is pending, none is marked (a more pessimistic disk). */
static int t_write_out(void *ctx, int fd, uint64_t off, uint64_t n, int with)
{
	pthread_mutex_lock(&T.mu);
	int err = P()->write_out(ctx, fd, off, n, with), sure = 1;
	for (size_t i = 0; !err && i < T.n; i++)
		if (T.u[i].fd == fd &&
		    (T.u[i].trunc || alex_io_out_covers(off, n, T.u[i].off, T.u[i].len) < 0))
			sure = 0;
	for (size_t i = 0; !err && sure && i < T.n; i++)
		if (T.u[i].fd == fd && alex_io_out_covers(off, n, T.u[i].off, T.u[i].len) > 0)
			T.u[i].out = 1;
	if (!err)
		alex_test_record(ALEX_TR_WRITEOUT, fd, 0, off, n, NULL, NULL, NULL);
	pthread_mutex_unlock(&T.mu);
	return err;
}

static int t_ftruncate(void *ctx, int fd, uint64_t size)
{
	pthread_mutex_lock(&T.mu);
	uint64_t cur = 0;
	int err = before("ftruncate", ALEX_TEST_NCLASS);
	if (!err && !(err = P()->size(ctx, fd, &cur)) && size < cur)
		err = remember(fd, size, (size_t)(cur - size), 1);
	else if (!err && size > cur)
		err = remember(fd, cur, 0, 1);
	if (!err)
		err = P()->ftruncate(ctx, fd, size);
	if (!err)
		alex_test_record(ALEX_TR_TRUNC, fd, 0, size, 0, NULL, NULL, NULL);
	pthread_mutex_unlock(&T.mu);
	return err;
}

/* Like a growing ftruncate: a power cut may lose the size change. */
static int t_allocate(void *ctx, int fd, uint64_t off, uint64_t n)
{
	pthread_mutex_lock(&T.mu);
	uint64_t cur = 0;
	int err = before("fallocate", ALEX_TEST_NCLASS);
	if (!err && !(err = P()->size(ctx, fd, &cur)) && off + n > cur)
		err = remember(fd, cur, 0, 1);
	if (!err)
		err = P()->allocate(ctx, fd, off, n);
	if (!err && off + n > cur)
		alex_test_record(ALEX_TR_TRUNC, fd, 0, off + n, 0, NULL, NULL, NULL);
	pthread_mutex_unlock(&T.mu);
	return err;
}

static int t_size(void *ctx, int fd, uint64_t *size)
{
	return P()->size(ctx, fd, size);
}

static int t_stat(void *ctx, int fd, struct alex_finfo *fi)
{
	return P()->stat(ctx, fd, fi);
}

/* Metadata that no power cut can tear: passed through, not numbered. */
static int t_own(void *ctx, int fd, const struct alex_finfo *like)
{
	return P()->own(ctx, fd, like);
}

static int t_space(void *ctx, int fd, uint64_t *avail)
{
	return P()->space(ctx, fd, avail);
}

static int t_stat_path(void *ctx, const char *path, struct alex_finfo *fi)
{
	return P()->stat_path(ctx, path, fi);
}

static int t_exists(void *ctx, const char *path, int *yes)
{
	return P()->exists(ctx, path, yes);
}

/* A directory operation: numbered (and perhaps cut at), nothing to undo. */
static int counted(const char *what)
{
	pthread_mutex_lock(&T.mu);
	int err = before(what, ALEX_TEST_NCLASS);
	pthread_mutex_unlock(&T.mu);
	return err;
}

static int t_rename(void *ctx, const char *from, const char *to, int noreplace)
{
	int err = counted("rename");
	if (!err && !(err = P()->rename(ctx, from, to, noreplace)))
		alex_test_record(ALEX_TR_RENAME, -1, 0, 0, 0, NULL, from, to);
	return err;
}

static int t_unlink(void *ctx, const char *path)
{
	int err = counted("unlink");
	if (!err && !(err = P()->unlink(ctx, path)))
		alex_test_record(ALEX_TR_UNLINK, -1, 0, 0, 0, NULL, path, NULL);
	return err;
}

static int t_sync_dir(void *ctx, const char *path)
{
	int err = counted("sync_dir");
	if (!err && !(err = P()->sync_dir(ctx, path)))
		alex_test_record(ALEX_TR_DIRSYNC, -1, 0, 0, 0, NULL, NULL, NULL);
	return err;
}

static int t_lock(void *ctx, int fd, uint64_t byte, int mode)
{
	return P()->lock(ctx, fd, byte, mode);
}

/* The change counter is no part of what a power cut or a fault takes:
 * nothing reads it back, and a count it loses only makes a catch-up read
 * the log (shm.c). */
static int t_shm_map(void *ctx, const char *path, const struct alex_finfo *like,
		     int (*init)(void *region, void *arg, int may_change), void *arg, void **region,
		     uint32_t *wrote)
{
	return P()->shm_map(ctx, path, like, init, arg, region, wrote);
}

static void t_shm_unmap(void *ctx, void *region)
{
	P()->shm_unmap(ctx, region);
}

static const struct alex_io_ops test_ops = {
	.open = t_open,
	.close = t_close,
	.open_direct = t_open_direct,
	.pwrite_many = t_pwrite_many,
	.forget = t_forget,
	.pread = t_pread,
	.pwrite = t_pwrite,
	.fdatasync = t_fdatasync,
	.write_out = t_write_out,
	.ftruncate = t_ftruncate,
	.allocate = t_allocate,
	.size = t_size,
	.stat = t_stat,
	.own = t_own,
	.space = t_space,
	.exists = t_exists,
	.stat_path = t_stat_path,
	.rename = t_rename,
	.unlink = t_unlink,
	.sync_dir = t_sync_dir,
	.lock = t_lock,
	.shm_map = t_shm_map,
	.shm_unmap = t_shm_unmap,
};

static const struct alex_io test_io = { &test_ops, NULL };

const struct alex_io *alex_test_io(const struct alex_test_cfg *cfg)
{
	pthread_mutex_lock(&T.mu);
	T.cfg = *cfg;
	alex_test_record_open(T.cfg.record);
	pthread_mutex_unlock(&T.mu);
	return &test_io;
}

void alex_test_counts(uint64_t *ops, uint64_t class_ops[ALEX_TEST_NCLASS])
{
	pthread_mutex_lock(&T.mu);
	*ops = T.ops;
	memcpy(class_ops, T.class_ops, sizeof T.class_ops);
	pthread_mutex_unlock(&T.mu);
}
