/* alex_convert (convert.c) over the memory backend: a power cut after
 * every call of an encrypt, a decrypt and a rekey leaves at the database's
 * path the old stored bytes or the new ones, never anything else, in every
 * crash model; a failure at every operation leaves the old file and lets
 * the next conversion through; a file that is not what the caller says is
 * refused untouched. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "helpers.h"
#include "io.h"
#include "xts_io.h"

#define CDB "/d/c.db"
#define CTMP CDB ALEX_CONVERT_SUFFIX
#define PG 4096u

/* A database in clear of npages pages: SQLite's magic, then bytes that
 * differ from page to page. */
static uint8_t *plain_db(size_t npages)
{
	uint8_t *p = malloc(npages * PG);
	uint64_t s = npages;

	cr_assert(p);
	for (size_t i = 0; i < npages * PG; i++)
		p[i] = (uint8_t)rnd(&s);
	memcpy(p, "SQLite format 3", 16);
	return p;
}

/* A copy of the bytes stored at path, and their length. */
static uint8_t *stored(const alex_mem *m, const char *path, size_t *len)
{
	const uint8_t *d = alex_mem_get(m, path, len);
	uint8_t *c;

	cr_assert(d, "%s missing", path);
	c = malloc(*len ? *len : 1);
	cr_assert(c);
	memcpy(c, d, *len);
	return c;
}

/* The bytes of path read through x's layer (NULL: as stored). */
static uint8_t *read_as(alex_mem *m, const char *path, struct alex_xts *x, size_t *len)
{
	struct alex_io mi = alex_mem_io(m), io = mi;
	struct alex_xts_io *c = NULL;
	uint8_t *b;
	int fd;

	if (x) {
		cr_assert_eq(alex_xts_io_new(&mi, x, path, 4096, &c), 0);
		io = alex_xts_io(c);
	}
	alex_mem_get(m, path, len);
	b = malloc(*len + 1);
	cr_assert(b);
	cr_assert_eq(io.ops->open(io.ctx, path, 0, &fd), 0);
	size_t got;
	cr_assert_eq(io.ops->pread(io.ctx, fd, b, *len + 1, 0, &got), 0);
	cr_assert_eq(got, *len);
	io.ops->close(io.ctx, fd);
	alex_xts_io_free(c);
	return b;
}

static alex_mem *with_file(const uint8_t *data, size_t len, uint32_t mode)
{
	alex_mem *m = alex_mem_new();
	struct alex_io io = alex_mem_io(m);
	struct alex_finfo fi = { .mode = mode };
	int fd;

	cr_assert_eq(alex_mem_set(m, CDB, data, len), 0);
	cr_assert_eq(io.ops->open(io.ctx, CDB, 0, &fd), 0);
	cr_assert_eq(io.ops->own(io.ctx, fd, &fi), 0);
	return m;
}

static void convert_ok(alex_mem *m, struct alex_xts *from, struct alex_xts *to)
{
	struct alex_io io = alex_mem_io(m);
	char why[200] = "";
	int rc = alex_convert(&io, CDB, from, to, why, sizeof why);
	cr_assert_eq(rc, 0, "alex_convert: %d: %s", rc, why);
}

/*
 * The memory backend counts only writes, syncs and truncations; a rename
 * or a directory sync is a moment a power cut can come too.  So the
 * conversion runs over this pass-through, which cuts crash images after
 * every call that changes anything.
 */
struct cut {
	alex_mem *m;
	const uint8_t *old, *neu; /* the stored bytes before and after */
	size_t oldlen, neulen;
	struct alex_xts *from, *to;
	unsigned points, olds, news, redone;
	int done; /* the conversion returned: only the new file may be left */
};

static const unsigned crash_models[] = {
	ALEX_CRASH_LOSE, ALEX_CRASH_KEEP, ALEX_CRASH_TEAR, ALEX_CRASH_SUBSET,
};

static void cut_here(struct cut *k, const char *what)
{
	k->points++;
	for (unsigned d = 0; d < 2; d++)
		for (unsigned i = 0; i < sizeof crash_models / sizeof *crash_models; i++)
			for (uint64_t seed = 0; seed < (crash_models[i] == ALEX_CRASH_SUBSET ? 6u : 1u);
			     seed++) {
				unsigned how = crash_models[i] | (d ? ALEX_CRASH_DIRS_LOST : 0);
				alex_mem *c = alex_mem_crash(k->m, how, seed * 7919 + k->points);
				size_t len;
				cr_assert(c);
				const uint8_t *got = alex_mem_get(c, CDB, &len);
				cr_assert(got, "after %s (point %u, crash %#x): no file", what,
					  k->points, how);
				int is_old = len == k->oldlen && memcmp(got, k->old, len) == 0;
				int is_new = len == k->neulen && memcmp(got, k->neu, len) == 0;
				cr_assert(is_new || !k->done, "after it returned (crash %#x): "
					  "not the new file", how);
				cr_assert(is_old || is_new,
					  "after %s (point %u, crash %#x, seed %lu): %zu bytes, "
					  "neither the old file nor the new", what, k->points, how,
					  (unsigned long)seed, len);
				if (is_old) {
					/* what is left is converted again, the stale
					 * new file removed first */
					k->olds++;
					convert_ok(c, k->from, k->to);
					got = alex_mem_get(c, CDB, &len);
					cr_assert(len == k->neulen && memcmp(got, k->neu, len) == 0,
						  "after %s: the conversion again differs", what);
					cr_assert_null(alex_mem_get(c, CTMP, &len));
					k->redone++;
				} else {
					k->news++;
				}
				alex_mem_free(c);
			}
}

static struct cut *cutting;

static int c_open(void *ctx, const char *path, int flags, int *fd)
{
	struct alex_io *in = ctx;
	int err = in->ops->open(in->ctx, path, flags, fd);
	if (flags & ALEX_O_CREAT)
		cut_here(cutting, "open");
	return err;
}
static int c_close(void *ctx, int fd)
{
	struct alex_io *in = ctx;
	return in->ops->close(in->ctx, fd);
}
static int c_pread(void *ctx, int fd, void *buf, size_t n, uint64_t off, size_t *got)
{
	struct alex_io *in = ctx;
	return in->ops->pread(in->ctx, fd, buf, n, off, got);
}
static int c_pwrite(void *ctx, int fd, const void *buf, size_t n, uint64_t off)
{
	struct alex_io *in = ctx;
	int err = in->ops->pwrite(in->ctx, fd, buf, n, off);
	cut_here(cutting, "pwrite");
	return err;
}
static int c_fdatasync(void *ctx, int fd)
{
	struct alex_io *in = ctx;
	int err = in->ops->fdatasync(in->ctx, fd);
	cut_here(cutting, "fdatasync");
	return err;
}
static int c_write_out(void *ctx, int fd, uint64_t off, uint64_t n, int with)
{
	struct alex_io *in = ctx;
	int err = in->ops->write_out(in->ctx, fd, off, n, with);
	cut_here(cutting, "write_out");
	return err;
}
static int c_ftruncate(void *ctx, int fd, uint64_t size)
{
	struct alex_io *in = ctx;
	int err = in->ops->ftruncate(in->ctx, fd, size);
	cut_here(cutting, "ftruncate");
	return err;
}
static int c_allocate(void *ctx, int fd, uint64_t off, uint64_t n)
{
	struct alex_io *in = ctx;
	int err = in->ops->allocate(in->ctx, fd, off, n);
	cut_here(cutting, "allocate");
	return err;
}
static int c_size(void *ctx, int fd, uint64_t *size)
{
	struct alex_io *in = ctx;
	return in->ops->size(in->ctx, fd, size);
}
static int c_stat(void *ctx, int fd, struct alex_finfo *fi)
{
	struct alex_io *in = ctx;
	return in->ops->stat(in->ctx, fd, fi);
}
static int c_own(void *ctx, int fd, const struct alex_finfo *like)
{
	struct alex_io *in = ctx;
	int err = in->ops->own(in->ctx, fd, like);
	cut_here(cutting, "own");
	return err;
}
static int c_space(void *ctx, int fd, uint64_t *avail)
{
	struct alex_io *in = ctx;
	return in->ops->space(in->ctx, fd, avail);
}
static int c_exists(void *ctx, const char *path, int *yes)
{
	struct alex_io *in = ctx;
	return in->ops->exists(in->ctx, path, yes);
}
static int c_stat_path(void *ctx, const char *path, struct alex_finfo *fi)
{
	struct alex_io *in = ctx;
	return in->ops->stat_path(in->ctx, path, fi);
}
static int c_rename(void *ctx, const char *from, const char *to, int noreplace)
{
	struct alex_io *in = ctx;
	int err = in->ops->rename(in->ctx, from, to, noreplace);
	cut_here(cutting, "rename");
	return err;
}
static int c_unlink(void *ctx, const char *path)
{
	struct alex_io *in = ctx;
	int err = in->ops->unlink(in->ctx, path);
	cut_here(cutting, "unlink");
	return err;
}
static int c_sync_dir(void *ctx, const char *path)
{
	struct alex_io *in = ctx;
	int err = in->ops->sync_dir(in->ctx, path);
	cut_here(cutting, "sync_dir");
	return err;
}
static int c_lock(void *ctx, int fd, uint64_t byte, int mode)
{
	struct alex_io *in = ctx;
	return in->ops->lock(in->ctx, fd, byte, mode);
}

static const struct alex_io_ops cut_ops = {
	.open = c_open, .close = c_close, .pread = c_pread, .pwrite = c_pwrite,
	.fdatasync = c_fdatasync, .write_out = c_write_out, .ftruncate = c_ftruncate,
	.allocate = c_allocate, .size = c_size, .stat = c_stat, .own = c_own,
	.space = c_space, .exists = c_exists, .stat_path = c_stat_path, .rename = c_rename, .unlink = c_unlink,
	.sync_dir = c_sync_dir, .lock = c_lock,
};

/* The source, npages of plaintext stored as src (NULL: in clear), is
 * converted to dst (NULL: in clear): with a power cut after every call,
 * with a failure at every operation, then whole. */
static void every_cut(size_t npages, struct alex_xts *src, struct alex_xts *dst)
{
	uint8_t *plain = plain_db(npages);
	size_t len, oldlen, neulen;
	alex_mem *m = with_file(plain, npages * PG, 0640);
	char why[200];

	/* the source as stored, and what a conversion without a cut stores */
	if (src)
		convert_ok(m, NULL, src);
	uint8_t *old = stored(m, CDB, &oldlen);
	alex_mem_free(m);
	m = with_file(old, oldlen, 0640);
	alex_mem *ref = with_file(old, oldlen, 0640);
	uint64_t ops0 = alex_mem_ops(ref);
	convert_ok(ref, src, dst);
	uint64_t nops = alex_mem_ops(ref) - ops0;
	uint8_t *neu = stored(ref, CDB, &neulen);
	cr_assert_null(alex_mem_get(ref, CTMP, &len), "the new file is left beside it");
	/* the new file reads as the plaintext, with the old file's mode */
	uint8_t *back = read_as(ref, CDB, dst, &len);
	cr_assert_eq(len, npages * PG);
	cr_assert_eq(memcmp(back, plain, len), 0, "the conversion changed the database");
	free(back);
	struct alex_io ri = alex_mem_io(ref);
	struct alex_finfo fi;
	int fd;
	cr_assert_eq(ri.ops->open(ri.ctx, CDB, 0, &fd), 0);
	cr_assert_eq(ri.ops->stat(ri.ctx, fd, &fi), 0);
	cr_expect_eq(fi.mode, 0640);
	if (dst)
		cr_assert(memmem(neu, neulen, plain + PG, PG) == NULL, "a page in clear");
	alex_mem_free(ref);

	/* a power cut after every call */
	struct cut k = { .m = m, .old = old, .neu = neu, .oldlen = oldlen, .neulen = neulen,
			 .from = src, .to = dst };
	struct alex_io mi = alex_mem_io(m), ci = { &cut_ops, &mi };
	cutting = &k;
	cr_assert_eq(alex_convert(&ci, CDB, src, dst, why, sizeof why), 0, "%s", why);
	k.done = 1;
	cut_here(&k, "the end");
	cr_assert_geq(k.points, 4, "only %u points", k.points);
	cr_assert_gt(k.olds, 0);
	cr_assert_gt(k.news, 0);
	cr_assert_gt(k.redone, 0);
	alex_mem_free(m);

	/* a failure at every operation: the error, the old file, no new
	 * one; and the next conversion goes through */
	cr_assert_geq(nops, 2, "%lu operations", (unsigned long)nops);
	for (uint64_t i = 1; i <= nops; i++) {
		m = with_file(old, oldlen, 0640);
		struct alex_io io = alex_mem_io(m);
		alex_mem_fail_at(m, alex_mem_ops(m) + i, ALEX_MEM_WRITE | ALEX_MEM_SYNC | ALEX_MEM_TRUNC,
				 EIO);
		cr_assert_eq(alex_convert(&io, CDB, src, dst, why, sizeof why), EIO, "op %lu",
			     (unsigned long)i);
		cr_assert(strstr(why, "Input/output error"), "%s", why);
		const uint8_t *got = alex_mem_get(m, CDB, &len);
		cr_assert(len == oldlen && memcmp(got, old, len) == 0, "op %lu: changed",
			  (unsigned long)i);
		cr_assert_null(alex_mem_get(m, CTMP, &len));
		alex_mem_fail_at(m, 0, 0, 0);
		convert_ok(m, src, dst);
		got = alex_mem_get(m, CDB, &len);
		cr_assert(len == neulen && memcmp(got, neu, len) == 0);
		alex_mem_free(m);
	}
	free(plain);
	free(old);
	free(neu);
}

/* A database of five pages, and one of more than one chunk (the new file
 * written in three). */
static void every_cut_sizes(struct alex_xts *from, struct alex_xts *to)
{
	every_cut(5, from, to);
	every_cut(2 * ALEX_CONVERT_CHUNK / PG + 3, from, to);
}

Test(convert, encrypt_every_cut, .timeout = 120)
{
	struct alex_key *k;
	struct alex_xts *x = xts_for(1, &k);

	every_cut_sizes(NULL, x);
	alex_xts_free(x);
	alex_key_free(k);
}

Test(convert, decrypt_every_cut, .timeout = 120)
{
	struct alex_key *k;
	struct alex_xts *x = xts_for(1, &k);

	every_cut_sizes(x, NULL);
	alex_xts_free(x);
	alex_key_free(k);
}

Test(convert, rekey_every_cut, .timeout = 120)
{
	struct alex_key *k1, *k2;
	struct alex_xts *x1 = xts_for(1, &k1), *x2 = xts_for(2, &k2);

	every_cut_sizes(x1, x2);
	alex_xts_free(x1);
	alex_xts_free(x2);
	alex_key_free(k1);
	alex_key_free(k2);
}

/* Refused with EINVAL and a reason containing expect; nothing written. */
static void refused(alex_mem *m, struct alex_xts *from, struct alex_xts *to, const char *expect)
{
	struct alex_io io = alex_mem_io(m);
	size_t len, len2;
	uint8_t *before = stored(m, CDB, &len);
	uint64_t ops = alex_mem_ops(m);
	char why[200] = "";

	cr_assert_eq(alex_convert(&io, CDB, from, to, why, sizeof why), EINVAL, "%s", why);
	cr_expect(strstr(why, expect), "why: \"%s\", not \"%s\"", why, expect);
	cr_expect_eq(alex_mem_ops(m), ops, "written to");
	cr_expect_null(alex_mem_get(m, CTMP, &len2));
	const uint8_t *after = alex_mem_get(m, CDB, &len2);
	cr_expect(len2 == len && memcmp(after, before, len) == 0, "changed");
	free(before);
}

Test(convert, wrong_key_or_direction_refused)
{
	struct alex_key *k1, *k2;
	struct alex_xts *x1 = xts_for(1, &k1), *x2 = xts_for(2, &k2);
	uint8_t *plain = plain_db(5);
	alex_mem *m = with_file(plain, 5 * PG, 0600);

	refused(m, x1, NULL, "not encrypted (an SQLite database in clear)"); /* decrypt */
	refused(m, x1, x2, "not encrypted");                                 /* rekey */
	convert_ok(m, NULL, x1);
	refused(m, NULL, x1, "encrypted already"); /* encrypt twice */
	refused(m, NULL, x2, "encrypted already");
	refused(m, x2, NULL, "encrypted with another key"); /* decrypt, wrong key */
	refused(m, x2, x1, "encrypted with another key");   /* rekey, wrong key */
	convert_ok(m, x1, NULL);
	size_t len;
	const uint8_t *got = alex_mem_get(m, CDB, &len);
	cr_assert(len == 5 * PG && memcmp(got, plain, len) == 0);
	alex_mem_free(m);

	/* not a database; ALEX's placeholder; too short to be one */
	memcpy(plain, "not a database!!", 16);
	m = with_file(plain, 5 * PG, 0600);
	refused(m, NULL, x1, "not an SQLite database");
	refused(m, x1, NULL, "not encrypted by ALEX, nor an SQLite database");
	alex_mem_free(m);
	memcpy(plain, "ALEX-log-pending", 16);
	m = with_file(plain, 100, 0600);
	refused(m, NULL, x1, "alex checkpoint first");
	alex_mem_free(m);
	m = with_file(plain, 10, 0600);
	refused(m, NULL, x1, "not an SQLite database");
	alex_mem_free(m);

	free(plain);
	alex_xts_free(x1);
	alex_xts_free(x2);
	alex_key_free(k1);
	alex_key_free(k2);
}

Test(convert, empty_file_and_stale_new_file)
{
	struct alex_key *k;
	struct alex_xts *x = xts_for(1, &k);
	alex_mem *m = with_file(NULL, 0, 0600);
	size_t len;

	struct alex_io io = alex_mem_io(m);
	int yes = 0;
	convert_ok(m, NULL, x);
	cr_assert_eq(io.ops->exists(io.ctx, CDB, &yes), 0);
	cr_assert(yes);
	alex_mem_get(m, CDB, &len);
	cr_expect_eq(len, 0);
	convert_ok(m, x, NULL);
	alex_mem_free(m);

	/* a stale new file, longer and in the way, goes first */
	uint8_t *plain = plain_db(3);
	static uint8_t junk[8 * PG];
	memset(junk, 0x5a, sizeof junk);
	m = with_file(plain, 3 * PG, 0600);
	cr_assert_eq(alex_mem_set(m, CTMP, junk, sizeof junk), 0);
	convert_ok(m, NULL, x);
	cr_assert_null(alex_mem_get(m, CTMP, &len));
	uint8_t *back = read_as(m, CDB, x, &len);
	cr_assert(len == 3 * PG && memcmp(back, plain, len) == 0);
	free(back);
	free(plain);
	alex_mem_free(m);
	alex_xts_free(x);
	alex_key_free(k);
}
