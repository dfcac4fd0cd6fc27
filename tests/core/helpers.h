/* helpers.h - shared by the core test suites: engines on the memory
 * backend, deterministic block contents, a seeded generator. */
#ifndef ALEX_TEST_HELPERS_H
#define ALEX_TEST_HELPERS_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alex.h"
#include "crc32c.h"
#include "format.h"
#include "io.h"
#include "xts.h"
#include "xts_io.h"

#define DB "/mem/t.db"
#define LOG "/mem/t.db-alex"
#define BLK 4096u

static inline uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Block content written by transaction txn to block blk: an identifying
 * header, then either compressible text or noise.  txn 0 means zeros. */
static inline void fill_block(uint8_t *b, uint32_t txn, uint32_t blk)
{
	if (!txn) {
		memset(b, 0, BLK);
		return;
	}
	uint64_t s = (uint64_t)txn * 1000003u + blk;
	memcpy(b, &txn, 4);
	memcpy(b + 4, &blk, 4);
	if ((txn + blk) % 3 == 0) {
		for (unsigned i = 8; i < BLK; i += 8) {
			uint64_t v = rnd(&s);
			memcpy(b + i, &v, 8);
		}
	} else { /* b[i] = text[(i + txn) % 21] + i / 512 (txn < 2^32 - 4096), no division per byte */
		static const char text[] = "row-%u value payload ";
		unsigned k = (8 + txn) % 21;
		for (unsigned i = 8; i < BLK; i++) {
			b[i] = (uint8_t)(text[k] + (i / 512));
			k = k == 20 ? 0 : k + 1;
		}
	}
}

/* An 8-block database file whose page 1 is one ALEX may fence (bytes
 * 18/19 equal, 72..91 zero, the change counter copied to 92..95), the
 * rest 0x11; its page 1 also into page1 (BLK bytes). */
static inline void sqlite_like_file(alex_mem *m, uint8_t *page1)
{
	static uint8_t d[8 * BLK];

	memset(d, 0x11, sizeof d);
	memcpy(d, "SQLite format 3", 16);
	d[18] = d[19] = 1;
	memset(d + 72, 0, 20);
	memcpy(d + 92, d + 24, 4);
	memcpy(page1, d, BLK);
	alex_mem_set(m, DB, d, sizeof d);
}

/* A commit as SQLite makes one: block 1 all v, and page 1 (the file's,
 * from sqlite_like_file) with v at byte 200. */
static inline void sqlite_like_commit(alex_db *db, uint8_t *page1, uint8_t v)
{
	static uint8_t b[BLK];

	memset(b, v, BLK);
	cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, BLK), 0);
	page1[200] = v;
	cr_assert_eq(alex_write(db, ALEX_FILE_DB, page1, BLK, 0), 0);
	cr_assert_eq(alex_commit(db), 0);
}

/* A copy of the log of image img (its length into *len), to damage and
 * put back with alex_mem_set; free it. */
static inline uint8_t *log_copy(alex_mem *img, size_t *len)
{
	const uint8_t *lg = alex_mem_get(img, LOG, len);
	uint8_t *log = malloc(*len);

	cr_assert_not_null(log);
	memcpy(log, lg, *len);
	return log;
}

/* Makes m's log, a new one (its first epoch in slot 1, slot 0 the
 * placeholder), one of version v, as an older ALEX would have made it. */
static inline void log_make_version(alex_mem *m, uint32_t v)
{
	size_t len;
	uint8_t *log = log_copy(m, &len);
	struct alex_loghdr h;

	cr_assert_eq(alex_loghdr_decode(log + BLK, &h), 0);
	cr_assert_eq(h.version, ALEX_FORMAT_NEW, "a new log is format %u", ALEX_FORMAT_NEW);
	h.version = v;
	alex_loghdr_encode(log + BLK, &h);
	alex_loghdr_placeholder(log, v);
	alex_mem_set(m, LOG, log, len);
	free(log);
}

/* Opens the database of a (crash) image without checkpointing it at
 * close, and puts the first byte of its block at offset at into *v, and
 * its statistics into *st if st; 0, or alex_open's error. */
static inline int image_byte(alex_mem *m, uint64_t at, uint8_t *v, struct alex_stats *st)
{
	static uint8_t b[BLK];
	struct alex_io io = alex_mem_io(m);
	struct alex_config c;
	alex_db *db;
	size_t n;

	alex_config_default(&c);
	c.checkpoint_on_close = 0;
	int rc = alex_open(DB, &c, &io, &db);
	if (rc)
		return rc;
	cr_assert_eq(alex_read(db, ALEX_FILE_DB, b, BLK, at, &n), 0);
	*v = b[0];
	if (st)
		alex_stats(db, st);
	alex_close(db);
	return 0;
}

/* Puts on a true SQLite page 1 the mark a log named by uuid left for
 * epoch (protect.c): what a base keeps when that log's last unmark was
 * lost with the power and the log is gone. */
static inline void foreign_mark(uint8_t *page, const char uuid[16], uint64_t epoch)
{
	uint64_t fence = (uint64_t)alex_crc32c(0, uuid, 16) | epoch << 32;

	page[19] = 0xa1;
	for (int i = 0; i < 4; i++)
		page[24 + i] ^= 0xff;
	memcpy(page + 72, "ALXF", 4);
	for (int i = 0; i < 8; i++)
		page[84 + i] = (uint8_t)(fence >> (8 * i));
}

static inline void small_config(struct alex_config *c)
{
	alex_config_default(c);
	c->memory_bytes = 64u << 10; /* 7 slots: transactions spill often */
	c->prealloc_bytes = 256u << 10;
	c->checkpoint_bytes = 1u << 20;
	c->checkpoint_on_close = 0;
}

/* An engine on DB with cfg over on; the test fails if it does not open. */
static inline alex_db *open_engine(const struct alex_config *cfg, struct alex_io *on)
{
	alex_db *db;
	int rc = alex_open(DB, cfg, on, &db);
	cr_assert_eq(rc, 0, "alex_open: %s", alex_strerror(rc));
	return db;
}

/* Writes blocks 0..n-1 of the database with txn's content. */
static inline void put_txn(alex_db *db, uint32_t txn, uint32_t n)
{
	uint8_t b[BLK];
	for (uint32_t i = 0; i < n; i++) {
		fill_block(b, txn, i);
		cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, (uint64_t)i * BLK), 0);
	}
}

/* A key made from seed, and one engine's cipher for it (the XTS suites). */
static inline struct alex_xts *xts_for(uint8_t seed, struct alex_key **k)
{
	uint8_t raw[64];
	char why[128];
	struct alex_xts *x;

	for (int i = 0; i < 64; i++)
		raw[i] = (uint8_t)(seed + i * 13);
	cr_assert_eq(alex_key_from(raw, k, why, sizeof why), 0, "%s", why);
	cr_assert_eq(alex_xts_new(*k, &x), 0);
	return x;
}

/* An encrypted file at path on the memory backend, opened through the
 * layer (the XTS suites). */
struct xts_rig {
	alex_mem *m;
	struct alex_io mi, io;
	struct alex_key *k;
	struct alex_xts *x;
	struct alex_xts_io *c;
	int fd;
};

static inline void xts_rig_open(struct xts_rig *r, uint8_t seed, const char *path, size_t cap)
{
	r->m = alex_mem_new();
	r->mi = alex_mem_io(r->m);
	r->x = xts_for(seed, &r->k);
	cr_assert_eq(alex_xts_io_new(&r->mi, r->x, path, cap, &r->c), 0);
	r->io = alex_xts_io(r->c);
	cr_assert_eq(r->io.ops->open(r->io.ctx, path, ALEX_O_CREAT, &r->fd), 0);
}

static inline void xts_rig_close(struct xts_rig *r)
{
	alex_xts_io_free(r->c);
	alex_xts_free(r->x);
	alex_key_free(r->k);
	alex_mem_free(r->m);
}

/* A read of n at off through io gives exactly what ref (a file of size
 * bytes) holds there; op names the step in a failure. */
static inline void xts_check_read(const struct alex_io *io, int fd, uint8_t *buf, uint64_t n,
				  uint64_t off, const uint8_t *ref, uint64_t size, int op)
{
	size_t got;

	cr_assert_eq(io->ops->pread(io->ctx, fd, buf, n, off, &got), 0, "op %d", op);
	uint64_t want = off >= size ? 0 : (off + n > size ? size - off : n);
	cr_assert_eq(got, want, "op %d: got %zu of %lu at %lu (size %lu)", op, got,
		     (unsigned long)want, (unsigned long)off, (unsigned long)size);
	cr_assert_eq(memcmp(buf, ref + off, got), 0, "op %d at %lu", op, (unsigned long)off);
}

/* Power-cut images at every mutating I/O: alex_mem_on_op(m, cut_every_io,
 * &cuts) keeps four images of m per operation (any subset of the unsynced
 * writes kept), up to cap; free each with alex_mem_free. */
struct cuts {
	alex_mem *m;
	alex_mem **img;
	size_t n, cap;
};

static inline void cut_every_io(void *arg, uint64_t op, enum alex_mem_op kind, int fd)
{
	struct cuts *c = arg;

	(void)kind, (void)fd;
	for (uint64_t seed = 0; seed < 4 && c->n < c->cap; seed++)
		c->img[c->n++] = alex_mem_crash(c->m, ALEX_CRASH_SUBSET, op * 4 + seed);
}

/* db (on m) synced, then checkpointed with images cut at every I/O of the
 * checkpoint, and closed: more than 8 of them; free each, and img. */
static inline struct cuts checkpoint_cuts(alex_mem *m, alex_db *db)
{
	struct cuts cuts = { m, calloc(4096, sizeof(alex_mem *)), 0, 4096 };

	cr_assert_eq(alex_sync(db), 0);
	alex_mem_on_op(m, cut_every_io, &cuts);
	cr_assert_eq(alex_checkpoint(db), 0);
	alex_mem_on_op(m, NULL, NULL);
	alex_close(db);
	cr_assert_gt(cuts.n, 8, "images: %zu", cuts.n);
	return cuts;
}

#endif
