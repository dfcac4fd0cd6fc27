/*
 * xts_io.c - the encrypted database file (xts_io.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "xts_io.h"

#define U ALEX_XTS_UNIT
#define MAX_FDS 4
#define KCV_KEPT 6 /* of the check value's bytes, in the marker */

static const char marker_magic[6] = { 'A', 'L', 'X', 'X', 'T', 'S' };
static const uint8_t zeros16[16];

struct alex_xts_io {
	struct alex_io inner;
	struct alex_xts *x;
	char *path;
	int fds[MAX_FDS];  /* descriptors of the database file, -1 free */
	uint8_t kcv[ALEX_KCV_BYTES];
	uint8_t *bounce;
	size_t cap;        /* bytes in bounce, whole units */
};

enum alex_xts_probe alex_xts_probe(const uint8_t *head, size_t got,
				   const uint8_t kcv[ALEX_KCV_BYTES])
{
	if (got < ALEX_XTS_MARKER || memcmp(head, marker_magic, 6) != 0 || head[7] != '1')
		return ALEX_XTS_NOT;
	return memcmp(head + 8, kcv, KCV_KEPT) == 0 ? ALEX_XTS_OURS : ALEX_XTS_OTHER;
}

/* A file under one unit is stored as a whole unit, its size in the marker
 * (xts_io.h); 0: the file's own size counts. */
static unsigned marker_size(const uint8_t *stored)
{
	return (unsigned)stored[14] | (unsigned)stored[15] << 8;
}

static unsigned marker_small(const uint8_t *stored)
{
	unsigned v = marker_size(stored);
	return v < U ? v : 0; /* more is damage, which decode refuses */
}

static int is_db(const struct alex_xts_io *c, int fd)
{
	for (int i = 0; i < MAX_FDS; i++)
		if (c->fds[i] == fd)
			return 1;
	return 0;
}

/* Unit u, len bytes at p, from stored to plain in place. */
static int decode(struct alex_xts_io *c, uint64_t u, uint8_t *p, size_t len)
{
	uint8_t t[16];
	int err;

	if (alex_all_zero(p, len))
		return 0; /* never written: reads as zeros, as it would in clear */
	if (u) {
		if (len < ALEX_XTS_MIN)
			return EIO;
		alex_xts_tweak(t, ALEX_XTS_DB, u, 0, 0);
		return alex_xts_crypt(c->x, 0, t, p, p, len);
	}
	if (len < ALEX_XTS_MARKER || alex_xts_probe(p, len, c->kcv) != ALEX_XTS_OURS ||
	    (len > ALEX_XTS_MARKER && len < ALEX_XTS_MARKER + ALEX_XTS_MIN))
		return EIO; /* not ours, or another key's: never garbage to SQLite */
	if (marker_size(p) >= U)
		return EIO;
	switch (p[6]) {
	case 'S': memcpy(p, ALEX_SQLITE_MAGIC, 16); break;
	case 'P': memcpy(p, ALEX_PLACEHOLDER, 16); break;
	case 'Z': memset(p, 0, 16); break;
	default: return EIO;
	}
	if (len == ALEX_XTS_MARKER)
		return 0;
	alex_xts_tweak(t, ALEX_XTS_DB, 0, 0, 0);
	if ((err = alex_xts_crypt(c->x, 0, t, p + 16, p + 16, len - 16)))
		return err;
	return 0;
}

/* The same from plain to stored; small: unit 0's marker field. */
static int encode(struct alex_xts_io *c, uint64_t u, uint8_t *p, size_t len, unsigned small)
{
	uint8_t t[16];
	char kind;

	if (u) {
		if (len < ALEX_XTS_MIN)
			return EIO;
		alex_xts_tweak(t, ALEX_XTS_DB, u, 0, 0);
		return alex_xts_crypt(c->x, 1, t, p, p, len);
	}
	if (len < ALEX_XTS_MARKER || (len > ALEX_XTS_MARKER && len < ALEX_XTS_MARKER + ALEX_XTS_MIN))
		return EIO;
	if (memcmp(p, ALEX_SQLITE_MAGIC, 16) == 0)
		kind = 'S';
	else if (memcmp(p, ALEX_PLACEHOLDER, 16) == 0)
		kind = 'P';
	else if (memcmp(p, zeros16, 16) == 0)
		kind = 'Z';
	else
		return EIO; /* nothing else begins a database: cannot be kept */
	if (len > ALEX_XTS_MARKER) {
		alex_xts_tweak(t, ALEX_XTS_DB, 0, 0, 0);
		int err = alex_xts_crypt(c->x, 1, t, p + 16, p + 16, len - 16);
		if (err)
			return err;
	}
	memcpy(p, marker_magic, 6);
	p[6] = (uint8_t)kind;
	p[7] = '1';
	memcpy(p + 8, c->kcv, KCV_KEPT);
	p[14] = (uint8_t)small;
	p[15] = (uint8_t)(small >> 8);
	return 0;
}

/* Decodes the units of [a, a + n), a unit-aligned span as read (the file
 * ends at a + n when n is not whole units). */
static int decode_span(struct alex_xts_io *c, uint64_t a, uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i += U) {
		int err = decode(c, (a + i) / U, p + i, n - i < U ? n - i : U);
		if (err)
			return err;
	}
	return 0;
}

static int x_open(void *ctx, const char *path, int flags, int *fd)
{
	struct alex_xts_io *c = ctx;
	int err = c->inner.ops->open(c->inner.ctx, path, flags, fd);

	if (err || strcmp(path, c->path) != 0)
		return err;
	for (int i = 0; i < MAX_FDS; i++)
		if (c->fds[i] < 0) {
			c->fds[i] = *fd;
			return 0;
		}
	c->inner.ops->close(c->inner.ctx, *fd);
	return EMFILE;
}

static int x_close(void *ctx, int fd)
{
	struct alex_xts_io *c = ctx;

	for (int i = 0; i < MAX_FDS; i++)
		if (c->fds[i] == fd)
			c->fds[i] = -1;
	return c->inner.ops->close(c->inner.ctx, fd);
}

static int x_pread(void *ctx, int fd, void *buf, size_t n, uint64_t off, size_t *got)
{
	struct alex_xts_io *c = ctx;
	uint8_t *dst = buf;
	int err;

	if (!is_db(c, fd))
		return c->inner.ops->pread(c->inner.ctx, fd, buf, n, off, got);
	*got = 0;
	/* A read from 0 that ends at 512 cannot tell a file of one unit (whose
	 * size may be the marker's) from a longer one: it goes the long way,
	 * which reads two units. */
	if (off % U == 0 && n % U == 0 && !(off == 0 && n == U)) {
		/* whole units (the engine's block reads): in place */
		if ((err = c->inner.ops->pread(c->inner.ctx, fd, buf, n, off, got)))
			return err;
		size_t small = off == 0 && *got == U ? marker_small(buf) : 0;
		if ((err = decode_span(c, off, buf, *got)))
			return err;
		if (small)
			*got = small;
		return 0;
	}
	uint64_t pos = off, end = off + n;
	while (pos < end) {
		uint64_t a = pos - pos % U, b = (end + U - 1) / U * U;
		size_t want = b - a < c->cap ? (size_t)(b - a) : c->cap, g;
		if (a == 0 && want < 2 * U)
			want = 2 * U;
		if ((err = c->inner.ops->pread(c->inner.ctx, fd, c->bounce, want, a, &g)))
			return err;
		size_t small = a == 0 && g == U ? marker_small(c->bounce) : 0;
		if ((err = decode_span(c, a, c->bounce, g)))
			return err;
		if (small)
			g = small;
		if (a + g <= pos)
			break; /* the file ends */
		size_t take = (size_t)((a + g < end ? a + g : end) - pos);
		memcpy(dst + (pos - off), c->bounce + (pos - a), take);
		pos += take;
		*got += take;
		if (g < want)
			break;
	}
	return 0;
}

/* Unit u of a file of `size` bytes, decoded into out (zeros past the
 * end); its stored length in *len. */
static int read_unit(struct alex_xts_io *c, int fd, uint64_t u, uint64_t size, uint8_t *out,
		     size_t *len)
{
	uint64_t a = u * U;
	size_t g = 0;
	int err;

	memset(out, 0, U);
	*len = a < size ? (size_t)(size - a < U ? size - a : U) : 0;
	if (!*len)
		return 0;
	if ((err = c->inner.ops->pread(c->inner.ctx, fd, out, *len, a, &g)))
		return err;
	if (g != *len)
		return EIO;
	return decode(c, u, out, *len);
}

/* Writes part of one unit: the rest of it as it was. */
static int write_part(struct alex_xts_io *c, int fd, const uint8_t *src, size_t n, uint64_t off,
		      uint64_t size)
{
	uint64_t u = off / U, a = u * U, end = off + n > size ? off + n : size;
	size_t len, nlen = (size_t)(end - a < U ? end - a : U);
	uint8_t *p = c->bounce;
	int err;

	if ((err = read_unit(c, fd, u, size, p, &len)))
		return err;
	memcpy(p + (off - a), src, n);
	if ((err = encode(c, u, p, nlen, 0)))
		return err;
	return c->inner.ops->pwrite(c->inner.ctx, fd, p, nlen, a);
}

/* The unit u of a file growing or shrinking from size to nsize, written
 * again for its new length. */
static int relength(struct alex_xts_io *c, int fd, uint64_t u, uint64_t size, uint64_t nsize)
{
	uint64_t a = u * U;
	size_t len, nlen = (size_t)(nsize - a < U ? nsize - a : U);
	uint8_t *p = c->bounce;
	int err;

	if ((err = read_unit(c, fd, u, size, p, &len)))
		return err;
	if (nlen < len)
		memset(p + nlen, 0, U - nlen);
	if ((err = encode(c, u, p, nlen, 0)))
		return err;
	return c->inner.ops->pwrite(c->inner.ctx, fd, p, nlen, a);
}

/* The file's size: a file stored as one unit may say a smaller one. */
static int logical_size(struct alex_xts_io *c, int fd, uint64_t *size)
{
	uint8_t head[ALEX_XTS_MARKER];
	size_t g;
	int err;

	if ((err = c->inner.ops->size(c->inner.ctx, fd, size)) || *size != U)
		return err;
	if ((err = c->inner.ops->pread(c->inner.ctx, fd, head, sizeof head, 0, &g)))
		return err;
	if (g == sizeof head && alex_xts_probe(head, g, c->kcv) == ALEX_XTS_OURS &&
	    marker_small(head))
		*size = marker_small(head);
	return 0;
}

/* Unit 0 of a file of size bytes, decoded into out, zeros past size. */
static int unit0_plain(struct alex_xts_io *c, int fd, uint64_t size, uint8_t *out)
{
	size_t len;
	int err;

	if ((err = read_unit(c, fd, 0, size < U ? U : size, out, &len)))
		return err;
	if (size < U)
		memset(out + size, 0, U - size);
	return 0;
}

/* Unit 0 written whole from the plaintext at p (encrypted in place), for
 * a file of small bytes (0: of its own size). */
static int put_unit0(struct alex_xts_io *c, int fd, uint8_t *p, unsigned small)
{
	int err = encode(c, 0, p, U, small);
	return err ? err : c->inner.ops->pwrite(c->inner.ctx, fd, p, U, 0);
}

/* A file of size bytes under one unit becomes a file of one whole unit,
 * before anything makes it longer: a crash that keeps the later write
 * and not this one leaves what the file would hold in clear -- its bytes,
 * then zeros (xts_io.h). */
static int leave_small(struct alex_xts_io *c, int fd, uint64_t size)
{
	int err = unit0_plain(c, fd, size, c->bounce);
	return err ? err : put_unit0(c, fd, c->bounce, 0);
}

static int x_pwrite(void *ctx, int fd, const void *buf, size_t n, uint64_t off)
{
	struct alex_xts_io *c = ctx;
	const uint8_t *src = buf;
	uint64_t size = 0;
	int err;

	if (!is_db(c, fd))
		return c->inner.ops->pwrite(c->inner.ctx, fd, buf, n, off);
	if (!n)
		return 0; /* as in clear: no byte written, the size unchanged */
	if ((err = logical_size(c, fd, &size)))
		return err;
	if (off + n < U && size < U) {
		/* a file that stays under one unit: one whole unit, its size
		 * in the marker */
		uint8_t *p = c->bounce;
		if (size)
			err = unit0_plain(c, fd, size, p);
		else
			memset(p, 0, U);
		if (err)
			return err;
		memcpy(p + off, src, n);
		return put_unit0(c, fd, p, (unsigned)(off + n > size ? off + n : size));
	}
	if (size && size < U) {
		if ((err = leave_small(c, fd, size)))
			return err;
		size = U;
	}
	/* a short last unit that the write passes by is a whole one after it */
	if (size % U && off >= size - size % U + U) {
		if ((err = relength(c, fd, size / U, size, off + n)))
			return err;
		size += U - size % U;
	}
	while (n) {
		uint64_t u0 = off - off % U;
		uint64_t end = off + n > size ? off + n : size;
		size_t ulen = (size_t)(end - u0 < U ? end - u0 : U);
		if (off != u0 || n < ulen) {
			/* part of a unit: the head or the tail of the write */
			size_t k = (size_t)(u0 + U - off) < n ? (size_t)(u0 + U - off) : n;
			if ((err = write_part(c, fd, src, k, off, size)))
				return err;
			if (off + k > size)
				size = off + k;
			src += k, off += k, n -= k;
			continue;
		}
		/* whole units, through the bounce buffer */
		size_t k = n - n % U < c->cap ? n - n % U : c->cap;
		if (!k)
			k = n; /* the file's last, short unit, written whole */
		memcpy(c->bounce, src, k);
		for (size_t i = 0; i < k; i += U)
			if ((err = encode(c, (off + i) / U, c->bounce + i, k - i < U ? k - i : U, 0)))
				return err;
		if ((err = c->inner.ops->pwrite(c->inner.ctx, fd, c->bounce, k, off)))
			return err;
		if (off + k > size)
			size = off + k;
		src += k, off += k, n -= k;
	}
	return 0;
}

static int x_ftruncate(void *ctx, int fd, uint64_t nsize)
{
	struct alex_xts_io *c = ctx;
	uint64_t size;
	int err;

	if (!is_db(c, fd))
		return c->inner.ops->ftruncate(c->inner.ctx, fd, nsize);
	if ((err = logical_size(c, fd, &size)))
		return err;
	if (nsize && nsize < U) {
		/* under one unit: one whole unit, the size in its marker */
		if (nsize == size)
			return 0;
		if ((err = unit0_plain(c, fd, size, c->bounce)))
			return err;
		memset(c->bounce + nsize, 0, U - nsize);
		if ((err = put_unit0(c, fd, c->bounce, (unsigned)nsize)))
			return err;
		return c->inner.ops->ftruncate(c->inner.ctx, fd, U);
	}
	if (nsize && size && size < U) {
		if ((err = leave_small(c, fd, size)))
			return err;
		size = U;
	}
	/* a short last unit that stays or becomes one is encrypted for its
	 * new length; SQLite's sizes are whole pages, so this is only the
	 * placeholder's and a damaged file's case */
	if (size % U && size < nsize && (err = relength(c, fd, size / U, size, nsize)))
		return err;
	if (nsize % U && nsize < size && (err = relength(c, fd, nsize / U, size, nsize)))
		return err;
	return c->inner.ops->ftruncate(c->inner.ctx, fd, nsize);
}

static int x_fdatasync(void *ctx, int fd)
{
	struct alex_xts_io *c = ctx;
	return c->inner.ops->fdatasync(c->inner.ctx, fd);
}

static int x_write_out(void *ctx, int fd, uint64_t off, uint64_t n, int with)
{
	struct alex_xts_io *c = ctx;

	if (is_db(c, fd)) {
		uint64_t a = off - off % U;
		n = (off + n + U - 1) / U * U - a;
		off = a;
	}
	return c->inner.ops->write_out(c->inner.ctx, fd, off, n, with);
}

static int x_allocate(void *ctx, int fd, uint64_t off, uint64_t n)
{
	struct alex_xts_io *c = ctx;
	uint64_t size;
	int err;

	/* reserved space reads as zeros, and zeros decode as zeros; a short
	 * last unit the space extends is first encrypted for its new length */
	if (!c->inner.ops->allocate)
		return EOPNOTSUPP;
	if (is_db(c, fd) && n) {
		if ((err = logical_size(c, fd, &size)))
			return err;
		if (size < U && off + n > size) {
			/* the file grows: as a write of zeros would make it */
			if (off + n < U) {
				if ((err = unit0_plain(c, fd, size, c->bounce)))
					return err;
				return put_unit0(c, fd, c->bounce, (unsigned)(off + n));
			}
			if (size && (err = leave_small(c, fd, size)))
				return err;
			size = U;
		}
		if (size % U && off + n > size && (err = relength(c, fd, size / U, size, off + n)))
			return err;
	}
	return c->inner.ops->allocate(c->inner.ctx, fd, off, n);
}

static int x_size(void *ctx, int fd, uint64_t *size)
{
	struct alex_xts_io *c = ctx;

	if (!is_db(c, fd))
		return c->inner.ops->size(c->inner.ctx, fd, size);
	return logical_size(c, fd, size);
}

static int x_stat(void *ctx, int fd, struct alex_finfo *fi)
{
	struct alex_xts_io *c = ctx;
	int err = c->inner.ops->stat(c->inner.ctx, fd, fi);

	if (err || !is_db(c, fd) || fi->size != U)
		return err;
	return logical_size(c, fd, &fi->size);
}

static int x_own(void *ctx, int fd, const struct alex_finfo *like)
{
	struct alex_xts_io *c = ctx;
	return c->inner.ops->own(c->inner.ctx, fd, like);
}

static int x_space(void *ctx, int fd, uint64_t *avail)
{
	struct alex_xts_io *c = ctx;
	return c->inner.ops->space(c->inner.ctx, fd, avail);
}

static int x_stat_path(void *ctx, const char *path, struct alex_finfo *fi)
{
	struct alex_xts_io *c = ctx;
	return c->inner.ops->stat_path(c->inner.ctx, path, fi); /* the size as stored */
}

static int x_exists(void *ctx, const char *path, int *yes)
{
	struct alex_xts_io *c = ctx;
	return c->inner.ops->exists(c->inner.ctx, path, yes);
}

static int x_rename(void *ctx, const char *from, const char *to, int noreplace)
{
	struct alex_xts_io *c = ctx;
	return c->inner.ops->rename(c->inner.ctx, from, to, noreplace);
}

static int x_unlink(void *ctx, const char *path)
{
	struct alex_xts_io *c = ctx;
	return c->inner.ops->unlink(c->inner.ctx, path);
}

static int x_sync_dir(void *ctx, const char *path)
{
	struct alex_xts_io *c = ctx;
	return c->inner.ops->sync_dir(c->inner.ctx, path);
}

static int x_lock(void *ctx, int fd, uint64_t byte, int mode)
{
	struct alex_xts_io *c = ctx;
	return c->inner.ops->lock(c->inner.ctx, fd, byte, mode);
}

static int x_shm_map(void *ctx, const char *path, const struct alex_finfo *like,
		     int (*init)(void *region, void *arg, int may_change), void *arg,
		     void **region, uint32_t *wrote)
{
	struct alex_xts_io *c = ctx;
	if (!c->inner.ops->shm_map)
		return EOPNOTSUPP;
	return c->inner.ops->shm_map(c->inner.ctx, path, like, init, arg, region, wrote);
}

static void x_shm_unmap(void *ctx, void *region)
{
	struct alex_xts_io *c = ctx;
	c->inner.ops->shm_unmap(c->inner.ctx, region);
}

static const struct alex_io_ops xts_ops = {
	.open = x_open, .close = x_close, .pread = x_pread, .pwrite = x_pwrite,
	.fdatasync = x_fdatasync, .write_out = x_write_out, .ftruncate = x_ftruncate,
	.allocate = x_allocate, .size = x_size, .stat = x_stat, .own = x_own,
	.space = x_space, .exists = x_exists, .stat_path = x_stat_path, .rename = x_rename, .unlink = x_unlink,
	.sync_dir = x_sync_dir, .lock = x_lock, .shm_map = x_shm_map, .shm_unmap = x_shm_unmap,
};

int alex_xts_io_new(const struct alex_io *inner, struct alex_xts *x, const char *db_path,
		    size_t bounce_bytes, struct alex_xts_io **out)
{
	struct alex_xts_io *c = calloc(1, sizeof *c);
	int err = ENOMEM;

	*out = NULL;
	if (!c)
		return ENOMEM;
	c->inner = *inner;
	c->x = x;
	c->cap = bounce_bytes < 4096 ? 4096 : bounce_bytes - bounce_bytes % U;
	for (int i = 0; i < MAX_FDS; i++)
		c->fds[i] = -1;
	if (!(c->path = strdup(db_path)) || !(c->bounce = malloc(c->cap)) ||
	    (err = alex_xts_kcv(x, c->kcv))) {
		alex_xts_io_free(c);
		return err;
	}
	*out = c;
	return 0;
}

void alex_xts_io_free(struct alex_xts_io *c)
{
	if (!c)
		return;
	if (c->bounce)
		explicit_bzero(c->bounce, c->cap); /* the last plaintext it held */
	free(c->bounce);
	free(c->path);
	free(c);
}

struct alex_io alex_xts_io(struct alex_xts_io *c)
{
	return (struct alex_io){ &xts_ops, c };
}
