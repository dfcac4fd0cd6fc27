/*
 * A checkpoint writes only what changed (ckpt.c): a block the base holds
 * already not at all, a block with a few sectors changed by those sectors
 * through the direct descriptor, the rest whole.  Checked by the bytes of
 * the base file afterwards, by the counts, on a file system that refuses
 * small direct writes, and at a power cut after every write of the copy.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

#define NBLK 10u /* the file after the commit: sqlite_like_file's 8, and 2 */

static uint8_t page1[BLK];
static uint8_t want[NBLK * BLK];

/* One commit over sqlite_like_file's blocks (0x11): page 1's byte 200;
 * block 2: bytes [2000, 2100), two sectors; block 3: as it was; block 4:
 * all new; block 5: seven sectors; block 6: its sector 5; block 9, past
 * the end: its first 100 bytes (block 8 stays a hole: zeros).  Three
 * pieces: more than FEW, so they go direct.  Its image into want. */
static void small_changes(alex_db *db)
{
	uint8_t b[BLK];

	memset(want, 0, sizeof want);
	memset(want, 0x11, 8 * BLK);
	memcpy(want, page1, BLK);
	want[200] = 0x5a;
	memset(want + 2 * BLK + 2000, 0x22, 100);
	memset(want + 4 * BLK, 0x44, BLK);
	memset(want + 5 * BLK, 0x55, 7 * 512);
	memset(want + 6 * BLK + 5 * 512 + 10, 0x66, 20);
	memset(want + 9 * BLK, 0x99, 100);
	for (unsigned k = 0; k < NBLK; k++) {
		if (k == 1 || k == 7 || k == 8)
			continue;
		memcpy(b, want + k * BLK, BLK);
		cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, (uint64_t)k * BLK), 0);
	}
	cr_assert_eq(alex_commit(db), 0);
}

static void base_is(alex_mem *m, const char *what)
{
	size_t len;
	const uint8_t *d = alex_mem_get(m, DB, &len);

	cr_assert_eq(len, sizeof want, "%s: base %zu bytes", what, len);
	for (size_t i = 0; i < len; i++)
		cr_assert_eq(d[i], want[i], "%s: base byte %zu is %02x, want %02x", what, i, d[i],
			     want[i]);
}

/* small_changes checkpointed by alex_checkpoint, or in_commit: by the
 * commit itself, which finds its log past checkpoint_bytes. */
static void run_as(int direct, const struct alex_io_ops *ops, int in_commit,
		   struct alex_stats *st)
{
	alex_mem *m = alex_mem_new();
	struct alex_io io = alex_mem_io(m);
	struct alex_config c;

	if (ops)
		io.ops = ops;
	alex_config_default(&c);
	c.ckpt_direct = direct;
	c.ckpt_carry = 0; /* the checkpoint a commit runs, not a carry */
	if (in_commit)
		c.checkpoint_bytes = BLK;
	sqlite_like_file(m, page1);
	alex_db *db = open_engine(&c, &io);
	small_changes(db);
	if (!in_commit)
		cr_assert_eq(alex_checkpoint(db), 0);
	alex_stats(db, st);
	cr_assert_eq(st->checkpoints, 1, "checkpoints %lu", (unsigned long)st->checkpoints);
	base_is(m, in_commit ? "in a commit" : direct ? "direct" : "buffered");
	alex_close(db);
	alex_mem_free(m);
}

static void run(int direct, const struct alex_io_ops *ops, struct alex_stats *st)
{
	run_as(direct, ops, 0, st);
}

Test(ckpt_sectors, only_the_changed_sectors)
{
	struct alex_stats st;

	run(1, NULL, &st);
	/* block 2's two sectors, block 6's and block 9's one; blocks 0 (the
	 * mark), 4 and 5 whole; block 3 not at all */
	cr_expect_eq(st.checkpoint_sectors, 4, "sectors %lu", (unsigned long)st.checkpoint_sectors);
	cr_expect_eq(st.checkpoint_blocks, 6, "blocks %lu", (unsigned long)st.checkpoint_blocks);
	cr_expect_eq(st.ckpt_direct_refused, 0);
}

Test(ckpt_sectors, off_writes_whole_blocks)
{
	struct alex_stats st;

	run(0, NULL, &st);
	cr_expect_eq(st.checkpoint_sectors, 0);
	cr_expect_eq(st.checkpoint_blocks, 7, "blocks %lu", (unsigned long)st.checkpoint_blocks);
}

/* A checkpoint that a commit runs, and waits for, writes a copy of a
 * few pieces through the page cache: direct writes wait for the device.
 * The same pieces from alex_checkpoint go direct (above). */
Test(ckpt_sectors, a_commits_small_checkpoint_uses_the_page_cache)
{
	struct alex_stats st;

	run_as(1, NULL, 1, &st);
	cr_expect_eq(st.checkpoint_sectors, 0, "sectors %lu", (unsigned long)st.checkpoint_sectors);
	/* still compared: block 3 not written */
	cr_expect_eq(st.checkpoint_blocks, 6, "blocks %lu", (unsigned long)st.checkpoint_blocks);
}

static int refuse(void *ctx, int dfd, int fd, const struct alex_piece *p, size_t n)
{
	(void)ctx, (void)dfd, (void)fd, (void)p, (void)n;
	return EINVAL; /* a disk of 4096-byte sectors */
}

Test(ckpt_sectors, refused_goes_through_the_page_cache)
{
	alex_mem *probe = alex_mem_new();
	static struct alex_io_ops ops;
	struct alex_stats st;

	ops = *alex_mem_io(probe).ops;
	ops.pwrite_many = refuse;
	run(1, &ops, &st);
	alex_mem_free(probe);
	cr_expect_eq(st.ckpt_direct_refused, EINVAL);
	cr_expect_eq(st.checkpoint_sectors, 0);
}

/* A power cut after every write of the checkpoint, each keeping any
 * subset of the unsynced sectors: the database reads as committed. */
Test(ckpt_sectors, power_cut_in_the_copy)
{
	alex_mem *m = alex_mem_new();
	struct alex_io io = alex_mem_io(m);
	struct alex_config c;
	uint8_t b[BLK];
	size_t got;

	alex_config_default(&c);
	c.checkpoint_on_close = 0;
	sqlite_like_file(m, page1);
	alex_db *db = open_engine(&c, &io);
	small_changes(db);
	struct cuts cuts = checkpoint_cuts(m, db);
	for (size_t i = 0; i < cuts.n; i++) {
		struct alex_io iio = alex_mem_io(cuts.img[i]);
		alex_db *r = open_engine(&c, &iio);
		for (unsigned k = 1; k < NBLK; k++) {
			cr_assert_eq(alex_read(r, ALEX_FILE_DB, b, BLK, (uint64_t)k * BLK, &got), 0);
			cr_assert_eq(got, BLK, "image %zu block %u: %zu bytes", i, k, got);
			cr_assert(memcmp(b, want + k * BLK, BLK) == 0, "image %zu: block %u", i, k);
		}
		cr_assert_eq(alex_read(r, ALEX_FILE_DB, b, BLK, 0, &got), 0);
		cr_assert_eq(b[200], 0x5a, "image %zu: page 1", i);
		alex_close(r);
		alex_mem_free(cuts.img[i]);
	}
	free(cuts.img);
	alex_mem_free(m);
}

/* A checkpoint whose base sync failed is retried whole: on Linux a failed
 * write-back leaves its pages clean in the cache, showing bytes the disk
 * lacks, and reports the error once, so a retry that compared with them
 * would skip what never reached the disk (review).  The first sync of the
 * checkpoint fails with EIO; the retry writes every block, compares with
 * nothing, and succeeds. */
Test(ckpt_sectors, retry_after_a_failed_sync_copies_whole)
{
	for (uint64_t k = 1; k < 40; k++) {
		alex_mem *m = alex_mem_new();
		struct alex_io io = alex_mem_io(m);
		struct alex_config c;
		struct alex_stats st;

		alex_config_default(&c);
		sqlite_like_file(m, page1);
		alex_db *db = open_engine(&c, &io);
		small_changes(db);
		alex_mem_fail_at(m, alex_mem_ops(m) + k, ALEX_MEM_SYNC, EIO);
		int rc = alex_checkpoint(db);
		alex_stats(db, &st);
		uint64_t blocks = st.checkpoint_blocks, sectors = st.checkpoint_sectors;
		if (rc == 0 || st.checkpoints) { /* op k was not the copy's sync */
			alex_close(db);
			alex_mem_free(m);
			continue;
		}
		cr_assert_eq(rc, EIO, "the failed checkpoint: %s", alex_strerror(rc));
		alex_mem_fail_at(m, 0, 0, 0);
		cr_assert_eq(alex_checkpoint(db), 0);
		alex_stats(db, &st);
		cr_expect_eq(st.checkpoint_blocks - blocks, 7, "the retry wrote %lu blocks, want all 7",
			     (unsigned long)(st.checkpoint_blocks - blocks));
		cr_expect_eq(st.checkpoint_sectors, sectors, "the retry wrote sectors direct");
		base_is(m, "retry");
		/* and once one succeeded, the next compares again */
		uint8_t b[BLK];
		for (unsigned k = 2; k <= 6; k += 2) { /* one sector in each of three */
			memcpy(b, want + k * BLK, BLK);
			b[3000] ^= 0xff;
			cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, (uint64_t)k * BLK), 0);
		}
		cr_assert_eq(alex_commit(db), 0);
		cr_assert_eq(alex_checkpoint(db), 0);
		alex_stats(db, &st);
		cr_expect_eq(st.checkpoint_sectors, sectors + 3, "after the retry: sectors %lu",
			     (unsigned long)st.checkpoint_sectors);
		alex_close(db);
		alex_mem_free(m);
		return;
	}
	cr_assert_fail("no sync of the checkpoint's copy among its first 40 operations");
}
