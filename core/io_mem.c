/*
 * io_mem.c - files in memory, for tests, crash simulation and fuzzing.
 *
 * Each file keeps an undo record for every change since its last fdatasync,
 * with the bytes the change replaced and the bytes it wrote.  A crash image
 * is cut from the current bytes by undoing all of them (power lost before
 * anything reached the disk), by cutting the newest write short (a torn
 * write), by keeping them all, or by keeping any subset of them, each write
 * whole or in part, in any order (a disk cache that reorders).  Directory
 * operations (create, rename, unlink) are durable at once.
 */
#include "io.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "io_mem_impl.h"
#include "shm.h"

alex_mem *alex_mem_new(void)
{
	alex_mem *m = calloc(1, sizeof(alex_mem));

	if (m)
		m->limit = 1ull << 30;
	return m;
}

void alex_mem_limit(alex_mem *m, uint64_t bytes)
{
	m->limit = bytes;
}

void alex_mem_disk(alex_mem *m, uint64_t bytes)
{
	m->disk = bytes;
}

static void undo_clear(struct mfile *f)
{
	for (size_t i = 0; i < f->nundo; i++) {
		free(f->undo[i].old);
		free(f->undo[i].neu);
	}
	f->nundo = 0;
}

void alex_mem_free(alex_mem *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nfiles; i++) {
		undo_clear(&m->files[i]);
		free(m->files[i].undo);
		free(m->files[i].data);
		free(m->files[i].name);
		free(m->files[i].dname);
	}
	free(m->files);
	for (size_t i = 0; i < m->nshm; i++) {
		free(m->shm[i].name);
		free(m->shm[i].region);
	}
	free(m->shm);
	free(m);
}

static int find(const alex_mem *m, const char *path)
{
	for (size_t i = 0; i < m->nfiles; i++)
		if (m->files[i].name && strcmp(m->files[i].name, path) == 0)
			return (int)i;
	return -1;
}

int alex_mem_add_file(alex_mem *m, const char *path)
{
	if (m->nfiles == m->capfiles) {
		size_t n = m->capfiles ? 2 * m->capfiles : 8;
		struct mfile *nf = realloc(m->files, n * sizeof *nf);
		if (!nf)
			return -1;
		m->files = nf;
		m->capfiles = n;
	}
	memset(&m->files[m->nfiles], 0, sizeof(struct mfile));
	m->files[m->nfiles].name = strdup(path);
	if (!m->files[m->nfiles].name)
		return -1;
	m->files[m->nfiles].mode = 0600;
	return (int)m->nfiles++;
}

int alex_mem_reserve(struct mfile *f, uint64_t size)
{
	if (size <= f->cap)
		return 0;
	uint64_t n = f->cap ? f->cap : 65536;
	while (n < size)
		n *= 2;
	/* a first buffer from calloc: large ones come zeroed from the
	 * kernel, where a memset would touch every page (crash images copy
	 * whole files, test_powerloss.c thousands of times) */
	uint8_t *d = f->data ? realloc(f->data, n) : calloc(1, n);
	if (!d)
		return ENOMEM;
	if (f->data)
		memset(d + f->cap, 0, n - f->cap);
	f->data = d;
	f->cap = n;
	return 0;
}

/* Sets the size; bytes past the old end read as zeros. */
void alex_mem_set_size(struct mfile *f, uint64_t size)
{
	if (size < f->size)
		memset(f->data + size, 0, f->size - size);
	f->size = size;
}

/* Would growing f to size overflow the disk? */
static int disk_full(const alex_mem *m, const struct mfile *f, uint64_t size)
{
	if (!m->disk || size <= f->size)
		return 0;
	uint64_t used = 0;
	for (size_t i = 0; i < m->nfiles; i++)
		if (m->files[i].name)
			used += m->files[i].size;
	return used + (size - f->size) > m->disk;
}

static int push_undo(alex_mem *m, struct mfile *f, uint64_t off, uint64_t len,
		     const void *buf, uint64_t new_size)
{
	struct undo u = { ++m->seq, off, 0, len, NULL, NULL, f->size, new_size, buf != NULL, 0 };

	if (m->untracked)
		return 0;

	if (f->nundo == f->capundo) {
		size_t n = f->capundo ? 2 * f->capundo : 16;
		struct undo *nu = realloc(f->undo, n * sizeof *nu);
		if (!nu)
			return ENOMEM;
		f->undo = nu;
		f->capundo = n;
	}
	if (off < f->size && len) {
		u.len = (off + len > f->size ? f->size : off + len) - off;
		u.old = malloc(u.len);
		if (!u.old)
			return ENOMEM;
		memcpy(u.old, f->data + off, u.len);
	}
	if (buf && len) {
		if (!(u.neu = malloc(len))) {
			free(u.old);
			return ENOMEM;
		}
		memcpy(u.neu, buf, len);
	}
	f->undo[f->nundo++] = u;
	return 0;
}

/* Counts a mutating operation; returns the injected error if this is it. */
static int count_op(alex_mem *m, enum alex_mem_op kind)
{
	m->ops++;
	if (m->fail_index && m->ops == m->fail_index && (m->fail_mask & kind))
		return m->fail_err;
	return 0;
}

static void done_op(alex_mem *m, enum alex_mem_op kind, int fd)
{
	if (m->hook)
		m->hook(m->hook_arg, m->ops, kind, fd);
}

static int valid_fd(const alex_mem *m, int fd)
{
	return fd >= 0 && (size_t)fd < m->nfiles && m->files[fd].name;
}

static int mem_open(void *ctx, const char *path, int flags, int *fd)
{
	alex_mem *m = ctx;
	int i = find(m, path);

	if (i < 0) {
		if (!(flags & ALEX_O_CREAT))
			return ENOENT;
		i = alex_mem_add_file(m, path);
		if (i < 0)
			return ENOMEM;
	}
	if (flags & ALEX_O_TRUNC) {
		struct mfile *f = &m->files[i];
		/* O_TRUNC at open is metadata: durable at once, like creation */
		undo_clear(f);
		alex_mem_set_size(f, 0);
	}
	*fd = i;
	return 0;
}

/* The same file: a descriptor here is the file's index, and direct
 * writes change it as any other write does. */
static int mem_open_direct(void *ctx, int fd, int *dfd)
{
	if (!valid_fd(ctx, fd))
		return EBADF;
	*dfd = fd;
	return 0;
}

static int mem_close(void *ctx, int fd)
{
	return valid_fd(ctx, fd) ? 0 : EBADF;
}

static int mem_pread(void *ctx, int fd, void *buf, size_t n, uint64_t off, size_t *got)
{
	alex_mem *m = ctx;

	if (!valid_fd(m, fd))
		return EBADF;
	struct mfile *f = &m->files[fd];
	size_t k = off >= f->size ? 0 : (f->size - off < n ? (size_t)(f->size - off) : n);
	if (k)
		memcpy(buf, f->data + off, k);
	*got = k;
	return 0;
}

/* Is a change of f made outside alex_log_pwrite/alex_log_truncate?  A log
 * whose counter is live must never change while no engine says it is
 * changing it (shm.c); the tests read the count. */
static void check_counted(alex_mem *m, const struct mfile *f)
{
	size_t k = f->name ? strlen(f->name) : 0;
	for (size_t i = 0; i < m->nshm; i++) {
		const struct alex_shm *s = m->shm[i].region;
		const char *n = m->shm[i].name;
		if (n && strncmp(n, f->name, k) == 0 && strcmp(n + k, "-shm") == 0 &&
		    memcmp(s->magic, ALEX_SHM_MAGIC, 8) == 0 && s->busy == 0)
			m->uncounted++;
	}
}

static int mem_pwrite(void *ctx, int fd, const void *buf, size_t n, uint64_t off)
{
	alex_mem *m = ctx;
	int err;

	if (!valid_fd(m, fd))
		return EBADF;
	if ((err = count_op(m, ALEX_MEM_WRITE)))
		return err;
	struct mfile *f = &m->files[fd];
	check_counted(m, f);
	if (off + n > m->limit)
		return EFBIG;
	if (disk_full(m, f, off + n))
		return ENOSPC;
	uint64_t end = off + n > f->size ? off + n : f->size;
	if ((err = alex_mem_reserve(f, off + n)) || (err = push_undo(m, f, off, n, buf, end)))
		return err;
	memcpy(f->data + off, buf, n);
	if (off + n > f->size)
		f->size = off + n;
	done_op(m, ALEX_MEM_WRITE, fd);
	return 0;
}

static int mem_fdatasync(void *ctx, int fd)
{
	alex_mem *m = ctx;
	int err;

	if (!valid_fd(m, fd))
		return EBADF;
	if ((err = count_op(m, ALEX_MEM_SYNC)))
		return err;
	undo_clear(&m->files[fd]);
	/* the device's cache flush takes every file's written-out writes */
	for (size_t i = 0; i < m->nfiles; i++) {
		struct mfile *f = &m->files[i];
		size_t k = 0;
		for (size_t j = 0; j < f->nundo; j++) {
			if (f->undo[j].out) {
				free(f->undo[j].old);
				free(f->undo[j].neu);
			} else {
				f->undo[k++] = f->undo[j];
			}
		}
		f->nundo = k;
	}
	done_op(m, ALEX_MEM_SYNC, fd);
	return 0;
}

/* The unsynced writes inside the range's pages become durable with the
 * next sync of any file.  A write across the range's edge, or a size
 * change, leaves the model unsure: then nothing is marked, which only
 * makes its crash images more pessimistic than a disk. */
static int mem_write_out(void *ctx, int fd, uint64_t off, uint64_t n, int with)
{
	alex_mem *m = ctx;

	(void)with; /* one device: any file's sync flushes it */

	if (!valid_fd(m, fd))
		return EBADF;
	struct mfile *f = &m->files[fd];
	for (size_t j = 0; j < f->nundo; j++)
		if (!f->undo[j].is_write ||
		    alex_io_out_covers(off, n, f->undo[j].off, f->undo[j].wlen) < 0)
			return 0;
	for (size_t j = 0; j < f->nundo; j++)
		if (alex_io_out_covers(off, n, f->undo[j].off, f->undo[j].wlen) > 0)
			f->undo[j].out = 1;
	return 0;
}

static int mem_resize(alex_mem *m, int fd, uint64_t size, enum alex_mem_op kind)
{
	int err;

	if (!valid_fd(m, fd))
		return EBADF;
	if ((err = count_op(m, kind)))
		return err;
	struct mfile *f = &m->files[fd];
	if (size > m->limit)
		return EFBIG;
	if (disk_full(m, f, size))
		return ENOSPC;
	if ((err = alex_mem_reserve(f, size)))
		return err;
	if (size < f->size)
		err = push_undo(m, f, size, f->size - size, NULL, size);
	else
		err = push_undo(m, f, f->size, 0, NULL, size);
	if (err)
		return err;
	alex_mem_set_size(f, size);
	done_op(m, kind, fd);
	return 0;
}

static int mem_ftruncate(void *ctx, int fd, uint64_t size)
{
	if (valid_fd(ctx, fd))
		check_counted(ctx, &((alex_mem *)ctx)->files[fd]);
	return mem_resize(ctx, fd, size, ALEX_MEM_TRUNC);
}

/* The model keeps no holes: the reserved range is zeros, as a file
 * system's unwritten extents read; a full disk refuses it. */
static int mem_allocate(void *ctx, int fd, uint64_t off, uint64_t n)
{
	alex_mem *m = ctx;

	if (!valid_fd(m, fd))
		return EBADF;
	check_counted(m, &m->files[fd]);
	if (off + n <= m->files[fd].size) {
		(void)count_op(m, ALEX_MEM_TRUNC);
		return 0;
	}
	return mem_resize(m, fd, off + n, ALEX_MEM_TRUNC);
}

static int mem_size(void *ctx, int fd, uint64_t *size)
{
	alex_mem *m = ctx;

	if (!valid_fd(m, fd))
		return EBADF;
	*size = m->files[fd].size;
	return 0;
}

static int mem_stat(void *ctx, int fd, struct alex_finfo *fi)
{
	alex_mem *m = ctx;

	if (!valid_fd(m, fd))
		return EBADF;
	memset(fi, 0, sizeof *fi);
	fi->size = m->files[fd].size;
	fi->mode = m->files[fd].mode;
	fi->nlink = 1;
	fi->ino = (uint64_t)fd + 1; /* a descriptor is the file's slot */
	return 0;
}

static int mem_own(void *ctx, int fd, const struct alex_finfo *like)
{
	alex_mem *m = ctx;

	if (!valid_fd(m, fd))
		return EBADF;
	m->files[fd].mode = like->mode & 0777;
	return 0;
}

static int mem_space(void *ctx, int fd, uint64_t *avail)
{
	alex_mem *m = ctx;
	uint64_t used = 0;

	if (!valid_fd(m, fd))
		return EBADF;
	for (size_t i = 0; i < m->nfiles; i++)
		if (m->files[i].name)
			used += m->files[i].size;
	*avail = !m->disk ? 1ull << 40 : used < m->disk ? m->disk - used : 0;
	return 0;
}

static int mem_exists(void *ctx, const char *path, int *yes)
{
	*yes = find(ctx, path) >= 0;
	return 0;
}

static int mem_stat_path(void *ctx, const char *path, struct alex_finfo *fi)
{
	int i = find(ctx, path);

	return i < 0 ? ENOENT : mem_stat(ctx, i, fi); /* a descriptor is the slot */
}

static int mem_rename(void *ctx, const char *from, const char *to, int noreplace)
{
	alex_mem *m = ctx;
	int i = find(m, from), j = find(m, to);
	char *name;

	if (i < 0)
		return ENOENT;
	if (i == j)
		return 0;
	if (j >= 0 && noreplace)
		return EEXIST;
	if (!(name = strdup(to)))
		return ENOMEM;
	if (j >= 0) {
		/* the replaced file's handle number stays dead */
		free(m->files[j].name);
		m->files[j].name = NULL;
	}
	free(m->files[i].name);
	m->files[i].name = name;
	return 0;
}

static int mem_unlink(void *ctx, const char *path)
{
	alex_mem *m = ctx;
	int i = find(m, path);

	for (size_t k = 0; k < m->nshm; k++)
		if (m->shm[k].name && strcmp(m->shm[k].name, path) == 0) {
			free(m->shm[k].name);
			m->shm[k].name = NULL;
			return 0;
		}
	if (i < 0)
		return ENOENT;
	free(m->files[i].name); /* as a replaced file: its handle number stays dead */
	m->files[i].name = NULL;
	return 0;
}

/* The length of path's directory part (up to its last '/'). */
static size_t dir_len(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? (size_t)(slash - path) : 0;
}

static int same_dir(const char *a, const char *b)
{
	size_t n = dir_len(a);
	return n == dir_len(b) && strncmp(a, b, n) == 0;
}

/* Every name change in path's directory becomes durable: what a crash
 * image with ALEX_CRASH_DIRS_LOST keeps. */
static int mem_sync_dir(void *ctx, const char *path)
{
	alex_mem *m = ctx;

	for (size_t i = 0; i < m->nfiles; i++) {
		struct mfile *f = &m->files[i];
		int here = f->name && same_dir(f->name, path);
		if (!here && !(f->dname && same_dir(f->dname, path)))
			continue;
		char *d = here ? strdup(f->name) : NULL;
		if (here && !d)
			return ENOMEM;
		free(f->dname);
		f->dname = d;
	}
	return 0;
}

static int mem_lock(void *ctx, int fd, uint64_t byte, int mode)
{
	(void)byte;
	(void)mode;
	return valid_fd(ctx, fd) ? 0 : EBADF; /* one process: nothing to exclude */
}

/* One region per name, shared by every engine on this memory (each stands
 * for a process); one thread, so no lock. */
static int mem_shm_map(void *ctx, const char *path, const struct alex_finfo *like,
		       int (*init)(void *region, void *arg, int may_change), void *arg, void **region,
		       uint32_t *wrote)
{
	alex_mem *m = ctx;
	struct mshm *s = NULL;
	int err;

	(void)like;
	*region = NULL;
	*wrote = 0;
	for (size_t i = 0; i < m->nshm && !s; i++)
		if (m->shm[i].name && strcmp(m->shm[i].name, path) == 0)
			s = &m->shm[i];
	if (!s) {
		struct mshm *n = realloc(m->shm, (m->nshm + 1) * sizeof *n);
		if (!n)
			return ENOMEM;
		m->shm = n;
		s = &m->shm[m->nshm];
		s->name = strdup(path);
		s->region = calloc(1, ALEX_SHM_SIZE);
		if (!s->name || !s->region) {
			free(s->name);
			free(s->region);
			return ENOMEM;
		}
		m->nshm++;
	}
	if ((err = init(s->region, arg, 1)))
		return err;
	*region = s->region;
	return 0;
}

static void mem_shm_unmap(void *ctx, void *region)
{
	(void)ctx;
	(void)region; /* freed with the memory */
}

uint64_t alex_mem_uncounted(const alex_mem *m)
{
	return m->uncounted;
}

void *alex_mem_shm(alex_mem *m, const char *path)
{
	for (size_t i = 0; i < m->nshm; i++)
		if (m->shm[i].name && strcmp(m->shm[i].name, path) == 0)
			return m->shm[i].region;
	return NULL;
}

static const struct alex_io_ops mem_ops = {
	.open = mem_open,
	.close = mem_close,
	.pread = mem_pread,
	.pwrite = mem_pwrite,
	.open_direct = mem_open_direct,
	.fdatasync = mem_fdatasync,
	.write_out = mem_write_out,
	.ftruncate = mem_ftruncate,
	.allocate = mem_allocate,
	.size = mem_size,
	.stat = mem_stat,
	.own = mem_own,
	.space = mem_space,
	.exists = mem_exists,
	.stat_path = mem_stat_path,
	.rename = mem_rename,
	.unlink = mem_unlink,
	.sync_dir = mem_sync_dir,
	.lock = mem_lock,
	.shm_map = mem_shm_map,
	.shm_unmap = mem_shm_unmap,
};

struct alex_io alex_mem_io(alex_mem *m)
{
	struct alex_io io = { &mem_ops, m };
	return io;
}

void alex_mem_untracked(alex_mem *m)
{
	m->untracked = 1;
}

uint64_t alex_mem_ops(const alex_mem *m)
{
	return m->ops;
}

void alex_mem_fail_at(alex_mem *m, uint64_t op_index, unsigned mask, int err)
{
	m->fail_index = op_index;
	m->fail_mask = mask;
	m->fail_err = err;
}

void alex_mem_on_op(alex_mem *m, void (*fn)(void *, uint64_t, enum alex_mem_op, int), void *arg)
{
	m->hook = fn;
	m->hook_arg = arg;
}

int alex_mem_set(alex_mem *m, const char *path, const void *data, size_t len)
{
	int i = find(m, path);

	if (i < 0 && (i = alex_mem_add_file(m, path)) < 0)
		return ENOMEM;
	struct mfile *f = &m->files[i];
	if (alex_mem_reserve(f, len))
		return ENOMEM;
	if (!f->dname && !(f->dname = strdup(path))) /* on the disk, name and all */
		return ENOMEM;
	undo_clear(f);
	alex_mem_set_size(f, 0);
	if (len)
		memcpy(f->data, data, len);
	f->size = len;
	return 0;
}

const uint8_t *alex_mem_get(const alex_mem *m, const char *path, size_t *len)
{
	int i = find(m, path);

	if (i < 0)
		return NULL;
	*len = m->files[i].size;
	return m->files[i].data;
}
