/* The encrypted database file (xts_io.c) over the memory backend, against a
 * plain array: random writes of any size and alignment, truncations both
 * ways, holes; the stored bytes never hold the plaintext, the marker names
 * the key, and another key reads nothing. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "io.h"
#include "xts_io.h"

#define XDB "/d/x.db"
#define MAXF (64 * 1024)

static void page1(uint8_t *p, size_t n)
{
	static const char magic[16] = "SQLite format 3";
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)('a' + i % 26);
	memcpy(p, magic, n < 16 ? n : 16);
}

Test(xts_io, random_writes_match_plain)
{
	alex_mem *m = alex_mem_new();
	struct alex_io mi = alex_mem_io(m), io;
	struct alex_key *k;
	struct alex_xts *x = xts_for(1, &k);
	struct alex_xts_io *c;
	static uint8_t ref[MAXF], buf[MAXF], chunk[MAXF];
	uint64_t size = 0, s = 7;
	int fd, other;

	cr_assert_eq(alex_xts_io_new(&mi, x, XDB, 8192, &c), 0);
	io = alex_xts_io(c);
	cr_assert_eq(io.ops->open(io.ctx, XDB, ALEX_O_CREAT, &fd), 0);
	cr_assert_eq(io.ops->open(io.ctx, "/d/x.db-alex", ALEX_O_CREAT, &other), 0);
	/* page 1 first, as SQLite and the placeholder begin */
	page1(ref, 4096);
	cr_assert_eq(io.ops->pwrite(io.ctx, fd, ref, 4096, 0), 0);
	size = 4096;
	for (int i = 0; i < 3000; i++) {
		unsigned op = rnd(&s) % 100;
		if (op < 70) {
			uint64_t off = rnd(&s) % (MAXF - 4096), n = 1 + rnd(&s) % 9000;
			if (rnd(&s) % 2) /* whole blocks, as a checkpoint writes */
				off &= ~4095ull, n = 4096 * (1 + rnd(&s) % 2);
			if (off < 16)
				off = 16; /* bytes 0..15 are SQLite's magic, always */
			if (off + n > MAXF)
				n = MAXF - off;
			/* no unit may end up shorter than 16 bytes (a database's
			 * never is): keep every size at whole 32-byte steps */
			if ((off + n) % 32)
				n += 32 - (off + n) % 32;
			if (off + n > MAXF)
				continue;
			for (uint64_t j = 0; j < n; j++)
				chunk[j] = (uint8_t)rnd(&s);
			if (off > size)
				memset(ref + size, 0, off - size);
			memcpy(ref + off, chunk, n);
			cr_assert_eq(io.ops->pwrite(io.ctx, fd, chunk, n, off), 0, "op %d", i);
			if (off + n > size)
				size = off + n;
		} else if (op < 80) {
			uint64_t ns = 512 + (rnd(&s) % (MAXF - 512)) / 32 * 32;
			if (ns > size)
				memset(ref + size, 0, ns - size);
			cr_assert_eq(io.ops->ftruncate(io.ctx, fd, ns), 0, "op %d", i);
			size = ns;
		} else {
			uint64_t off = rnd(&s) % MAXF, n = 1 + rnd(&s) % 6000;
			if (off + n > MAXF)
				n = MAXF - off;
			xts_check_read(&io, fd, buf, n, off, ref, size, i);
		}
	}
	/* what is stored: the marker, then nothing of the plaintext */
	size_t len;
	const uint8_t *raw = alex_mem_get(m, XDB, &len);
	cr_assert_eq(len, size);
	uint8_t kcv[8];
	cr_assert_eq(alex_xts_kcv(x, kcv), 0);
	cr_expect_eq(alex_xts_probe(raw, len, kcv), ALEX_XTS_OURS);
	cr_expect_neq(memcmp(raw, "SQLite format 3", 15), 0);
	static const uint8_t z[16];
	for (size_t u = 1; u < len / 512; u++)
		if (memcmp(ref + u * 512, z, 16)) /* a hole is zeros either way */
			cr_expect_neq(memcmp(raw + u * 512, ref + u * 512, 16), 0,
				      "unit %zu in clear", u);
	/* the log's file passes through as it is */
	cr_assert_eq(io.ops->pwrite(io.ctx, other, "plain", 5, 0), 0);
	raw = alex_mem_get(m, "/d/x.db-alex", &len);
	cr_expect_eq(memcmp(raw, "plain", 5), 0);

	/* another key: the marker says so, and no read returns its bytes */
	struct alex_key *k2;
	struct alex_xts *x2 = xts_for(2, &k2);
	struct alex_xts_io *c2;
	uint8_t kcv2[8];
	size_t got;
	int fd2;
	cr_assert_eq(alex_xts_kcv(x2, kcv2), 0);
	raw = alex_mem_get(m, XDB, &len);
	cr_expect_eq(alex_xts_probe(raw, len, kcv2), ALEX_XTS_OTHER);
	cr_assert_eq(alex_xts_io_new(&mi, x2, XDB, 4096, &c2), 0);
	struct alex_io io2 = alex_xts_io(c2);
	cr_assert_eq(io2.ops->open(io2.ctx, XDB, 0, &fd2), 0);
	cr_expect_eq(io2.ops->pread(io2.ctx, fd2, buf, 100, 0, &got), EIO);
	alex_xts_io_free(c2);
	alex_xts_free(x2);
	alex_key_free(k2);

	alex_xts_io_free(c);
	alex_xts_free(x);
	alex_key_free(k);
	alex_mem_free(m);
}

Test(xts_io, placeholder_fence_holes_and_what_it_refuses)
{
	struct xts_rig rig;
	uint8_t b[8192], r[8192];
	size_t got;

	xts_rig_open(&rig, 3, XDB, 4096);
	struct alex_io io = rig.io;
	int fd = rig.fd;
	/* the 100-byte placeholder of an empty database, then its fence
	 * patched in place, then the checkpoint's truncate to nothing */
	memset(b, 0, sizeof b);
	memcpy(b, "ALEX-log-pending", 16);
	memcpy(b + 72, "ALXF", 4);
	cr_assert_eq(io.ops->pwrite(io.ctx, fd, b, 100, 0), 0);
	cr_assert_eq(io.ops->pwrite(io.ctx, fd, "\x01\x02\x03\x04", 4, 84), 0);
	memcpy(b + 84, "\x01\x02\x03\x04", 4);
	cr_assert_eq(io.ops->pread(io.ctx, fd, r, 4096, 0, &got), 0);
	cr_assert_eq(got, 100);
	cr_expect_eq(memcmp(r, b, 100), 0);
	cr_assert_eq(io.ops->ftruncate(io.ctx, fd, 0), 0);
	/* page 2 written before page 1 leaves a hole that reads as zeros */
	page1(b, 8192);
	cr_assert_eq(io.ops->pwrite(io.ctx, fd, b + 4096, 4096, 4096), 0);
	cr_assert_eq(io.ops->pread(io.ctx, fd, r, 8192, 0, &got), 0);
	cr_assert_eq(got, 8192);
	for (int i = 0; i < 4096; i++)
		cr_assert_eq(r[i], 0);
	cr_expect_eq(memcmp(r + 4096, b + 4096, 4096), 0);
	/* a page 1 that does not begin a database cannot be stored */
	b[0] = 'X';
	cr_expect_eq(io.ops->pwrite(io.ctx, fd, b, 4096, 0), EIO);
	/* a short read of the header: SQLite's 100 bytes at 0 */
	b[0] = 'S';
	cr_assert_eq(io.ops->pwrite(io.ctx, fd, b, 4096, 0), 0);
	cr_assert_eq(io.ops->pread(io.ctx, fd, r, 100, 0, &got), 0);
	cr_expect_eq(got, 100);
	cr_expect_eq(memcmp(r, b, 100), 0);
	/* the change counter's 16 bytes at 24, through the tail of a unit */
	cr_assert_eq(io.ops->pread(io.ctx, fd, r, 16, 24, &got), 0);
	cr_expect_eq(memcmp(r, b + 24, 16), 0);
	xts_rig_close(&rig);
}
