/*
 * trace_io.c - the engine's I/O, recorded (trace.h: ALEX mode with
 * ALEX_TRACE).  A table of the same shape as core/io.h's that times each
 * call of the real table and records it as ALEX's own, under the role of
 * its file: the log, the database (the checkpoint), its directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "trace.h"

/* every engine of a process uses the same table (posix, or the test
 * build's): one is enough */
static struct alex_io inner;

#define IN (inner.ops)
#define CTX (inner.ctx)

/* Records a call of the engine's that returned err (res its result when
 * it worked) on fd, traced under role (0: not traced); returns err. */
static int done(int role, enum alex_tkind kind, int fd, uint64_t t0, uint64_t off, uint64_t n,
		int64_t res, const void *buf, int err)
{
	if (role) {
		errno = err;
		alex_trace_io(role, kind, fd, t0, off, n, err ? -1 : res, buf, ALEX_TF_ALEX);
	}
	return err;
}

/* The same for a call with nothing to say but success. */
static int rec(int fd, enum alex_tkind kind, uint64_t t0, uint64_t off, int err)
{
	return done(alex_trace_fd(fd), kind, fd, t0, off, 0, 0, NULL, err);
}

static int role_of(const char *path)
{
	/* the engine opens the database, and its log under a temporary
	 * name until it is whole */
	int r = alex_trace_path_role(path);
	return r == ALEX_TROLE_DB ? r : ALEX_TROLE_LOG;
}

static int t_open(void *ctx, const char *path, int flags, int *fd)
{
	(void)ctx;
	uint64_t t0 = alex_trace_now();
	int err = IN->open(CTX, path, flags, fd);
	errno = err;
	alex_trace_opened_as(err ? -1 : *fd, path, t0, ALEX_TF_ALEX, role_of(path));
	return err;
}

static int t_close(void *ctx, int fd)
{
	(void)ctx;
	uint64_t t0 = alex_trace_now();
	int role = alex_trace_fd(fd);
	alex_trace_closed(fd);
	return done(role, ALEX_TK_CLOSE, fd, t0, 0, 0, 0, NULL, IN->close(CTX, fd));
}

static int t_pread(void *ctx, int fd, void *buf, size_t n, uint64_t off, size_t *got)
{
	(void)ctx;
	uint64_t t0 = alex_trace_now();
	int err = IN->pread(CTX, fd, buf, n, off, got);
	return done(alex_trace_fd(fd), ALEX_TK_PREAD64, fd, t0, off, n, err ? 0 : (int64_t)*got,
		    buf, err);
}

static int t_pwrite(void *ctx, int fd, const void *buf, size_t n, uint64_t off)
{
	(void)ctx;
	uint64_t t0 = alex_trace_now();
	return done(alex_trace_fd(fd), ALEX_TK_PWRITE64, fd, t0, off, n, (int64_t)n, buf,
		    IN->pwrite(CTX, fd, buf, n, off));
}

static int t_fdatasync(void *ctx, int fd)
{
	(void)ctx;
	uint64_t t0 = alex_trace_now();
	return rec(fd, ALEX_TK_FDATASYNC, t0, 0, IN->fdatasync(CTX, fd));
}

static int t_write_out(void *ctx, int fd, uint64_t off, uint64_t n, int with)
{
	(void)ctx;
	uint64_t t0 = alex_trace_now();
	return done(alex_trace_fd(fd), ALEX_TK_SYNC_FILE_RANGE, fd, t0, off, n, 0, NULL,
		    IN->write_out(CTX, fd, off, n, with));
}

static int t_ftruncate(void *ctx, int fd, uint64_t size)
{
	(void)ctx;
	uint64_t t0 = alex_trace_now();
	return rec(fd, ALEX_TK_FTRUNCATE, t0, size, IN->ftruncate(CTX, fd, size));
}

static int t_allocate(void *ctx, int fd, uint64_t off, uint64_t n)
{
	(void)ctx;
	uint64_t t0 = alex_trace_now();
	return done(alex_trace_fd(fd), ALEX_TK_FALLOCATE, fd, t0, off, n, 0, NULL,
		    IN->allocate ? IN->allocate(CTX, fd, off, n) : EOPNOTSUPP);
}

static int t_size(void *ctx, int fd, uint64_t *size)
{
	(void)ctx;
	uint64_t t0 = alex_trace_now();
	return rec(fd, ALEX_TK_FSTAT, t0, 0, IN->size(CTX, fd, size));
}

static int t_stat(void *ctx, int fd, struct alex_finfo *fi)
{
	(void)ctx;
	uint64_t t0 = alex_trace_now();
	return rec(fd, ALEX_TK_FSTAT, t0, 0, IN->stat(CTX, fd, fi));
}

static int t_own(void *ctx, int fd, const struct alex_finfo *like)
{
	(void)ctx;
	uint64_t t0 = alex_trace_now();
	return rec(fd, ALEX_TK_FCHMOD, t0, 0, IN->own(CTX, fd, like));
}

static int t_space(void *ctx, int fd, uint64_t *avail)
{
	(void)ctx;
	uint64_t t0 = alex_trace_now();
	return rec(fd, ALEX_TK_FSTATFS, t0, 0, IN->space(CTX, fd, avail));
}

static int t_lock(void *ctx, int fd, uint64_t byte, int mode)
{
	(void)ctx;
	uint64_t t0 = alex_trace_now();
	int err = IN->lock(CTX, fd, byte, mode);
	int role = alex_trace_fd(fd);
	if (role) {
		unsigned t = mode == ALEX_UNLOCK ? ALEX_TLT_UN : mode == ALEX_SHARED ? ALEX_TLT_RD
										   : ALEX_TLT_WR;
		struct alex_tcall c = { .start = t0, .off = byte, .len = 1, .res = err ? -1 : 0,
					.fd = fd, .kind = ALEX_TK_FCNTL, .role = (uint8_t)role,
					.flags = ALEX_TF_ALEX,
					.lock = (uint8_t)(t << 6 | ALEX_TL_OTHER) };
		errno = err;
		alex_trace_put(&c, NULL);
	}
	return err;
}

/* calls by name */
static int named(enum alex_tkind kind, int role, uint64_t t0, const char *path, int err)
{
	errno = err;
	if (alex_tracing)
		alex_trace_named(role, kind, t0, err ? -1 : 0, path, ALEX_TF_ALEX);
	return err;
}

static int t_stat_path(void *ctx, const char *path, struct alex_finfo *fi)
{
	(void)ctx;
	uint64_t t0 = alex_trace_now();
	return named(ALEX_TK_STAT, role_of(path), t0, path, IN->stat_path(CTX, path, fi));
}

static int t_exists(void *ctx, const char *path, int *yes)
{
	(void)ctx;
	uint64_t t0 = alex_trace_now();
	return named(ALEX_TK_FACCESSAT, role_of(path), t0, path, IN->exists(CTX, path, yes));
}

static int t_rename(void *ctx, const char *from, const char *to, int noreplace)
{
	(void)ctx;
	uint64_t t0 = alex_trace_now();
	return named(ALEX_TK_RENAME, role_of(from), t0, from,
		     IN->rename(CTX, from, to, noreplace));
}

static int t_unlink(void *ctx, const char *path)
{
	(void)ctx;
	uint64_t t0 = alex_trace_now();
	return named(ALEX_TK_UNLINKAT, role_of(path), t0, path, IN->unlink(CTX, path));
}

/* the directory sync: an open, an fsync and a close, recorded as the fsync */
static int t_sync_dir(void *ctx, const char *path)
{
	(void)ctx;
	uint64_t t0 = alex_trace_now();
	return named(ALEX_TK_FSYNC, ALEX_TROLE_DIR, t0, path, IN->sync_dir(CTX, path));
}

/* The change counter: a mapping, whose calls are not recorded but for the
 * write that makes a new one (strace counts it among ALEX's writes). */
static int t_shm_map(void *ctx, const char *path, const struct alex_finfo *like,
		     int (*init)(void *region, void *arg, int may_change), void *arg, void **region,
		     uint32_t *wrote)
{
	(void)ctx;
	*wrote = 0;
	if (!IN->shm_map)
		return 0;
	uint64_t t0 = alex_trace_now();
	int err = IN->shm_map(CTX, path, like, init, arg, region, wrote);
	if (*wrote)
		done(role_of(path), ALEX_TK_PWRITE64, -1, t0, 0, *wrote, (int64_t)*wrote, NULL, 0);
	return err;
}

static void t_shm_unmap(void *ctx, void *region)
{
	(void)ctx;
	IN->shm_unmap(CTX, region);
}

static const struct alex_io_ops traced_ops = {
	.open = t_open, .close = t_close, .pread = t_pread, .pwrite = t_pwrite,
	.fdatasync = t_fdatasync, .write_out = t_write_out, .ftruncate = t_ftruncate,
	.allocate = t_allocate, .size = t_size, .stat = t_stat,
	.own = t_own, .space = t_space, .exists = t_exists, .stat_path = t_stat_path, .rename = t_rename,
	.unlink = t_unlink, .sync_dir = t_sync_dir, .lock = t_lock,
	.shm_map = t_shm_map, .shm_unmap = t_shm_unmap,
};

static const struct alex_io traced = { &traced_ops, NULL };

const struct alex_io *alex_trace_wrap_io(const struct alex_io *in)
{
	if (!alex_tracing)
		return in;
	inner = in ? *in : alex_io_posix;
	return &traced;
}
