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

struct undo {
	uint64_t seq;      /* global order, to find the newest write */
	uint64_t off, len; /* bytes that were replaced ... */
	uint64_t wlen;     /* length of the write (len counts only old bytes) */
	uint8_t *old;      /* ... and what they held (NULL: nothing) */
	uint8_t *neu;      /* what the write put there (wlen bytes) */
	uint64_t old_size; /* file size before the change */
	uint64_t new_size; /* and after it */
	int is_write;
};

struct mfile {
	char *name;
	uint8_t *data;
	uint64_t size, cap;
	uint32_t mode;
	struct undo *undo;
	size_t nundo, capundo;
};

struct alex_mem {
	struct mfile *files;
	size_t nfiles, capfiles;
	uint64_t ops, seq;
	uint64_t fail_index;
	unsigned fail_mask;
	int fail_err;
	int untracked; /* no undo records: faster, but no crash images */
	uint64_t limit; /* largest file size; past it EFBIG, like a filesystem */
	uint64_t disk;  /* all live files together; past it ENOSPC (0: none) */
	void (*hook)(void *, uint64_t, enum alex_mem_op, int);
	void *hook_arg;
};

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
	}
	free(m->files);
	free(m);
}

static int find(const alex_mem *m, const char *path)
{
	for (size_t i = 0; i < m->nfiles; i++)
		if (m->files[i].name && strcmp(m->files[i].name, path) == 0)
			return (int)i;
	return -1;
}

static int add_file(alex_mem *m, const char *path)
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

static int reserve(struct mfile *f, uint64_t size)
{
	if (size <= f->cap)
		return 0;
	uint64_t n = f->cap ? f->cap : 65536;
	while (n < size)
		n *= 2;
	uint8_t *d = realloc(f->data, n);
	if (!d)
		return ENOMEM;
	memset(d + f->cap, 0, n - f->cap);
	f->data = d;
	f->cap = n;
	return 0;
}

/* Sets the size; bytes past the old end read as zeros. */
static void set_size(struct mfile *f, uint64_t size)
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
	struct undo u = { ++m->seq, off, 0, len, NULL, NULL, f->size, new_size, buf != NULL };

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
		i = add_file(m, path);
		if (i < 0)
			return ENOMEM;
	}
	if (flags & ALEX_O_TRUNC) {
		struct mfile *f = &m->files[i];
		/* O_TRUNC at open is metadata: durable at once, like creation */
		undo_clear(f);
		set_size(f, 0);
	}
	*fd = i;
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

static int mem_pwrite(void *ctx, int fd, const void *buf, size_t n, uint64_t off)
{
	alex_mem *m = ctx;
	int err;

	if (!valid_fd(m, fd))
		return EBADF;
	if ((err = count_op(m, ALEX_MEM_WRITE)))
		return err;
	struct mfile *f = &m->files[fd];
	if (off + n > m->limit)
		return EFBIG;
	if (disk_full(m, f, off + n))
		return ENOSPC;
	uint64_t end = off + n > f->size ? off + n : f->size;
	if ((err = reserve(f, off + n)) || (err = push_undo(m, f, off, n, buf, end)))
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
	done_op(m, ALEX_MEM_SYNC, fd);
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
	if ((err = reserve(f, size)))
		return err;
	if (size < f->size)
		err = push_undo(m, f, size, f->size - size, NULL, size);
	else
		err = push_undo(m, f, f->size, 0, NULL, size);
	if (err)
		return err;
	set_size(f, size);
	done_op(m, kind, fd);
	return 0;
}

static int mem_ftruncate(void *ctx, int fd, uint64_t size)
{
	return mem_resize(ctx, fd, size, ALEX_MEM_TRUNC);
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

	if (i < 0)
		return ENOENT;
	free(m->files[i].name); /* as a replaced file: its handle number stays dead */
	m->files[i].name = NULL;
	return 0;
}

static int mem_sync_dir(void *ctx, const char *path)
{
	(void)ctx;
	(void)path;
	return 0;
}

static int mem_lock(void *ctx, int fd, uint64_t byte, int mode)
{
	(void)byte;
	(void)mode;
	return valid_fd(ctx, fd) ? 0 : EBADF; /* one process: nothing to exclude */
}

static const struct alex_io_ops mem_ops = {
	.open = mem_open,
	.close = mem_close,
	.pread = mem_pread,
	.pwrite = mem_pwrite,
	.fdatasync = mem_fdatasync,
	.ftruncate = mem_ftruncate,
	.size = mem_size,
	.stat = mem_stat,
	.own = mem_own,
	.space = mem_space,
	.exists = mem_exists,
	.rename = mem_rename,
	.unlink = mem_unlink,
	.sync_dir = mem_sync_dir,
	.lock = mem_lock,
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

static void apply_undo(struct mfile *f, const struct undo *u, uint64_t from)
{
	/* restore old bytes [off+from, off+len) that still lie within the file */
	if (u->old && from < u->len) {
		uint64_t end = u->off + u->len;
		if (end > f->size)
			end = f->size;
		if (u->off + from < end)
			memcpy(f->data + u->off + from, u->old + from, end - u->off - from);
	}
}

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static alex_mem *crash(const alex_mem *m, enum alex_crash how, uint64_t seed, int64_t cut_at);

alex_mem *alex_mem_crash(const alex_mem *m, enum alex_crash how, uint64_t seed)
{
	return crash(m, how, seed, -1);
}

alex_mem *alex_mem_crash_cut(const alex_mem *m, uint64_t cut)
{
	return crash(m, ALEX_CRASH_TEAR, 0, (int64_t)cut);
}

/* Puts file d back to its state at its last fdatasync. */
static int undo_all(struct mfile *d, const struct mfile *s)
{
	for (size_t k = s->nundo; k-- > 0;) {
		const struct undo *u = &s->undo[k];
		/* bytes past the shorter size were zeroed */
		if (u->old_size > d->size && reserve(d, u->old_size))
			return ENOMEM;
		set_size(d, u->old_size > d->size ? d->size : u->old_size);
		d->size = u->old_size;
		apply_undo(d, u, 0);
	}
	return 0;
}

/*
 * From the synced state, replays each unsynced change of s with what a
 * reordering disk may have kept of it: nothing, all of it, or any subset
 * of its 512-byte sectors.  A size change is kept or lost as a whole; a
 * write that is lost does not extend the file.
 */
static int redo_subset(struct mfile *d, const struct mfile *s, uint64_t *rng)
{
	for (size_t k = 0; k < s->nundo; k++) {
		const struct undo *u = &s->undo[k];
		uint64_t r = splitmix(rng) % 8;
		if (r < 3)
			continue; /* lost */
		if (!u->is_write) {
			if (reserve(d, u->new_size))
				return ENOMEM;
			set_size(d, u->new_size > d->size ? d->size : u->new_size);
			d->size = u->new_size;
			continue;
		}
		if (reserve(d, u->off + u->wlen))
			return ENOMEM;
		uint64_t first = u->off & ~511ull, kept_end = 0;
		for (uint64_t sec = first; sec < u->off + u->wlen; sec += 512) {
			uint64_t a = sec < u->off ? u->off : sec;
			uint64_t b = sec + 512 < u->off + u->wlen ? sec + 512 : u->off + u->wlen;
			if (r < 6 || splitmix(rng) % 2) { /* whole write, or this sector */
				memcpy(d->data + a, u->neu + (a - u->off), b - a);
				kept_end = b;
			}
		}
		if (kept_end > d->size)
			d->size = u->off + u->wlen; /* what was not kept reads as zeros */
	}
	return 0;
}

static alex_mem *crash(const alex_mem *m, enum alex_crash how, uint64_t seed, int64_t cut_at)
{
	alex_mem *c = alex_mem_new();
	struct mfile *torn = NULL;
	const struct undo *tu = NULL;
	uint64_t rng = seed;

	if (!c)
		return NULL;
	for (size_t i = 0; i < m->nfiles; i++) {
		const struct mfile *s = &m->files[i];
		int j = add_file(c, s->name ? s->name : "");
		if (j < 0 || reserve(&c->files[j], s->size)) {
			alex_mem_free(c);
			return NULL;
		}
		if (!s->name) { /* keep handle numbers aligned; the file is dead */
			free(c->files[j].name);
			c->files[j].name = NULL;
		}
		struct mfile *d = &c->files[j];
		d->mode = s->mode;
		if (s->size)
			memcpy(d->data, s->data, s->size);
		d->size = s->size;
		if ((how == ALEX_CRASH_LOSE || how == ALEX_CRASH_SUBSET) &&
		    (undo_all(d, s) || (how == ALEX_CRASH_SUBSET && redo_subset(d, s, &rng)))) {
			alex_mem_free(c);
			return NULL;
		} else if (how == ALEX_CRASH_TEAR) {
			for (size_t k = 0; k < s->nundo; k++)
				if (s->undo[k].is_write && (!tu || s->undo[k].seq > tu->seq)) {
					tu = &s->undo[k];
					torn = d;
				}
		}
	}
	if (tu && tu->wlen) {
		uint64_t s = seed, cut = splitmix(&s) % tu->wlen;
		if (cut_at >= 0)
			cut = (uint64_t)cut_at < tu->wlen ? (uint64_t)cut_at : tu->wlen;
		apply_undo(torn, tu, cut);
		/* new bytes past the old end of file: the torn part reads as zeros */
		uint64_t z = cut > tu->len ? cut : tu->len;
		uint64_t end = tu->off + tu->wlen > torn->size ? torn->size : tu->off + tu->wlen;
		if (tu->off + z < end)
			memset(torn->data + tu->off + z, 0, end - tu->off - z);
	}
	return c;
}

int alex_mem_set(alex_mem *m, const char *path, const void *data, size_t len)
{
	int i = find(m, path);

	if (i < 0 && (i = add_file(m, path)) < 0)
		return ENOMEM;
	struct mfile *f = &m->files[i];
	if (reserve(f, len))
		return ENOMEM;
	undo_clear(f);
	set_size(f, 0);
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
