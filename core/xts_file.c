/*
 * xts_file.c - a private scratch file stored encrypted (xts_file.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "log.h"
#include "xts_file.h"

#define U 512u

struct alex_xts_file {
	pthread_mutex_t mu; /* a descriptor may be shared by threads */
	struct alex_io io;
	int fd;
	struct alex_xts *x;
	uint32_t id_lo, id_hi; /* the tweak's aux and index: 56 random bits */
	uint64_t size;         /* logical */
	int broken;            /* a failed write could not be undone: EIO */
	size_t cap;            /* bounce buffer, whole units */
	uint8_t *bounce;
};

int alex_xts_file_new(const struct alex_io *io, int fd, const struct alex_key *key,
		      size_t bounce_bytes, struct alex_xts_file **out)
{
	struct alex_xts_file *f = calloc(1, sizeof *f);
	int err = ENOMEM;

	if (!f)
		return ENOMEM;
	f->cap = bounce_bytes < 4096 ? 4096 : bounce_bytes / U * U;
	if (!(f->bounce = malloc(f->cap)) || (err = alex_xts_new(key, &f->x))) {
		free(f->bounce);
		free(f);
		return err;
	}
	pthread_mutex_init(&f->mu, NULL);
	f->io = *io;
	f->fd = fd;
	f->id_lo = alex_random32();
	f->id_hi = alex_random32() & 0xffffffu;
	*out = f;
	return 0;
}

void alex_xts_file_free(struct alex_xts_file *f)
{
	if (!f)
		return;
	alex_xts_free(f->x);
	explicit_bzero(f->bounce, f->cap); /* it held plaintext */
	free(f->bounce);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

/* n whole units at p, unit u first, in place: enc 1 to stored, 0 to plain */
static int crypt_units(struct alex_xts_file *f, int enc, uint64_t u, uint8_t *p, size_t n)
{
	uint8_t t[16];

	for (size_t i = 0; i < n; i += U) {
		if (!enc && alex_all_zero(p + i, U))
			continue; /* never written */
		alex_xts_tweak(t, ALEX_XTS_TEMP, u + i / U, f->id_lo, f->id_hi);
		int err = alex_xts_crypt(f->x, enc, t, p + i, p + i, U);
		if (err)
			return err;
	}
	return 0;
}

/* Reads n whole units from unit u into p as plaintext: what the file does
 * not hold reads as zeros, and so does everything at or past the size. */
static int read_units(struct alex_xts_file *f, uint64_t u, uint8_t *p, size_t n)
{
	size_t got = 0;
	int err = f->io.ops->pread(f->io.ctx, f->fd, p, n, u * U, &got);

	if (err)
		return err;
	memset(p + got / U * U, 0, n - got / U * U); /* a short unit: never whole, zeros */
	if ((err = crypt_units(f, 0, u, p, got / U * U)))
		return err;
	if (u * U + n > f->size) {
		uint64_t keep = f->size > u * U ? f->size - u * U : 0;
		memset(p + keep, 0, n - keep);
	}
	return 0;
}

/* The next piece of n bytes that begin skip bytes into a unit: the units
 * it touches (*span bytes, at most the bounce buffer) and its length. */
static size_t chunk(const struct alex_xts_file *f, uint64_t skip, size_t n, size_t *span)
{
	*span = (size_t)((skip + n + U - 1) / U * U);
	if (*span > f->cap)
		*span = f->cap;
	return *span - skip < n ? *span - skip : n;
}

int alex_xts_file_pread(struct alex_xts_file *f, void *buf, size_t n, uint64_t off, size_t *got)
{
	uint8_t *out = buf;
	int err = 0;

	pthread_mutex_lock(&f->mu);
	if (f->broken)
		err = EIO, n = 0;
	else if (off >= f->size)
		n = 0;
	else if (n > f->size - off)
		n = (size_t)(f->size - off);
	*got = 0;
	while (n && !err) {
		uint64_t u = off / U, skip = off % U;
		size_t span, take = chunk(f, skip, n, &span);
		if ((err = read_units(f, u, f->bounce, span)))
			break;
		memcpy(out, f->bounce + skip, take);
		out += take, off += take, n -= take, *got += take;
	}
	pthread_mutex_unlock(&f->mu);
	return err;
}

/* The unit that holds byte size - 1, stored again with zeros past size
 * (size not a whole number of units), and the file cut after it: so that
 * growing it later shows zeros there. */
static int cut_at(struct alex_xts_file *f, uint64_t size)
{
	uint64_t u = size / U;
	int err = 0;

	if (size % U && !(err = read_units(f, u, f->bounce, U))) {
		memset(f->bounce + size % U, 0, U - size % U);
		if (!(err = crypt_units(f, 1, u, f->bounce, U)))
			err = f->io.ops->pwrite(f->io.ctx, f->fd, f->bounce, U, u * U);
	}
	return err ? err : f->io.ops->ftruncate(f->io.ctx, f->fd, (size + U - 1) / U * U);
}

int alex_xts_file_pwrite(struct alex_xts_file *f, const void *buf, size_t n, uint64_t off,
			 size_t *done)
{
	const uint8_t *in = buf;
	size_t did = 0;
	int err = 0;

	pthread_mutex_lock(&f->mu);
	if (f->broken)
		err = EIO;
	while (n && !err) {
		uint64_t u = off / U, skip = off % U;
		size_t span, take = chunk(f, skip, n, &span);
		/* a unit written in part keeps the rest of what it held */
		if (skip && (err = read_units(f, u, f->bounce, U)))
			break;
		if ((skip + take) % U && (skip + take > U || !skip) &&
		    (err = read_units(f, u + (skip + take) / U, f->bounce + (skip + take) / U * U, U)))
			break;
		memcpy(f->bounce + skip, in, take);
		if (!(err = crypt_units(f, 1, u, f->bounce, span)))
			err = f->io.ops->pwrite(f->io.ctx, f->fd, f->bounce, span, u * U);
		if (err) {
			/* what the failed piece left past the size goes again;
			 * if even that fails, the file answers EIO from now on */
			f->broken = cut_at(f, f->size) != 0;
			break;
		}
		if (off + take > f->size)
			f->size = off + take;
		in += take, off += take, n -= take, did += take;
	}
	pthread_mutex_unlock(&f->mu);
	if (done)
		*done = did;
	return err;
}

/* Whatever the last unit holds past the logical size is stored as zeros,
 * so that the file may grow over it (a write past the end, ftruncate). */
int alex_xts_file_truncate(struct alex_xts_file *f, uint64_t size)
{
	int err = 0;

	pthread_mutex_lock(&f->mu);
	if (f->broken)
		err = EIO;
	else if (size < f->size)
		err = cut_at(f, size);
	else /* growing: the tail past the old size is zeros already */
		err = f->io.ops->ftruncate(f->io.ctx, f->fd, (size + U - 1) / U * U);
	if (!err)
		f->size = size;
	pthread_mutex_unlock(&f->mu);
	return err;
}

uint64_t alex_xts_file_size(struct alex_xts_file *f)
{
	pthread_mutex_lock(&f->mu);
	uint64_t size = f->size;
	pthread_mutex_unlock(&f->mu);
	return size;
}
