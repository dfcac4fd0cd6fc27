/*
 * DELTA blocks rooted at the database file (format 9, format.h): made for
 * a page no record of the epoch holds, refused where they would be wrong
 * (block 0, past a truncation, a log of format 8, a record that names
 * another block), read back by a cold engine, put by the checkpoint, and
 * right after a power cut at every write of that checkpoint -- which
 * leaves each block's sectors any mix of old and new.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "delta.h"
#include "format.h"
#include "helpers.h"

#define NB 16u

static uint8_t want[NB * BLK];

/* A database of NB blocks: page 1 as sqlite_like_file makes it (one ALEX
 * may fence), the others each its own bytes. */
static void base_file(alex_mem *m)
{
	uint8_t page1[BLK];

	sqlite_like_file(m, page1);
	memcpy(want, page1, BLK);
	for (unsigned k = 1; k < NB; k++)
		fill_block(want + k * BLK, 1, k);
	alex_mem_set(m, DB, want, sizeof want);
}

static void put(alex_db *db, unsigned k)
{
	cr_assert_eq(alex_write(db, ALEX_FILE_DB, want + k * BLK, BLK, (uint64_t)k * BLK), 0);
}

/* Commit A: a hundred bytes of each of blocks 2..9 (block 7's across a
 * sector's end), and page 1's counter.  Commit B: blocks 3 and 5 again (a
 * delta in the log over a delta of the file), block 10 all new, block 11
 * eight bytes. */
static void two_commits(alex_db *db)
{
	for (unsigned k = 2; k <= 9; k++) {
		uint32_t at = k == 7 ? 1000 : 300 * k;
		memset(want + k * BLK + at, 0xa0 + k, 100);
		put(db, k);
	}
	want[200]++;
	put(db, 0);
	cr_assert_eq(alex_commit(db), 0);
	memset(want + 3 * BLK + 3000, 0x33, 50);
	memset(want + 5 * BLK + 1490, 0x55, 40); /* over A's run at 1500 */
	fill_block(want + 10 * BLK, 7, 10);
	memset(want + 11 * BLK + 4000, 0xbb, 8);
	want[200]++;
	for (unsigned k = 0; k <= 11; k++)
		if (k == 0 || k == 3 || k == 5 || k == 10 || k == 11)
			put(db, k);
	cr_assert_eq(alex_commit(db), 0);
}

static void reads_as_want_n(alex_db *db, const char *what, unsigned nb)
{
	uint8_t b[BLK];
	size_t got;

	for (unsigned k = 0; k < nb; k++) {
		cr_assert_eq(alex_read(db, ALEX_FILE_DB, b, BLK, (uint64_t)k * BLK, &got), 0,
			     "%s: block %u", what, k);
		cr_assert_eq(got, BLK, "%s: block %u", what, k);
		cr_assert(memcmp(b, want + k * BLK, BLK) == 0, "%s: block %u", what, k);
	}
}

static void reads_as_want(alex_db *db, const char *what)
{
	reads_as_want_n(db, what, NB);
}

/* db's checkpoint with a power cut after every write, each image keeping
 * any subset of the unsynced sectors; every image reads as want (its first
 * nb blocks), and (again) after its own recovered checkpoint.  Closes db
 * and frees m. */
static void checkpoint_cut_everywhere(alex_mem *m, alex_db *db, const struct alex_config *c,
				      int again, unsigned nb)
{
	struct cuts cuts = checkpoint_cuts(m, db);

	for (size_t i = 0; i < cuts.n; i++) {
		struct alex_io iio = alex_mem_io(cuts.img[i]);
		alex_db *r = open_engine(c, &iio);
		char what[32];
		snprintf(what, sizeof what, "image %zu", i);
		reads_as_want_n(r, what, nb);
		if (again) {
			cr_assert_eq(alex_checkpoint(r), 0, "%s", what);
			reads_as_want_n(r, what, nb);
		}
		alex_close(r);
		alex_mem_free(cuts.img[i]);
	}
	free(cuts.img);
	alex_mem_free(m);
}

Test(delta_base, made_read_cold_and_checkpointed)
{
	alex_mem *m = alex_mem_new();
	struct alex_io io = alex_mem_io(m);
	struct alex_config c;
	struct alex_stats st;
	size_t n;

	alex_config_default(&c);
	c.checkpoint_on_close = 0;
	base_file(m);
	alex_db *db = open_engine(&c, &io);
	two_commits(db);
	alex_stats(db, &st);
	/* 2..9 and 11; never block 0; 3 and 5 the second time are in the log */
	cr_expect_eq(st.blocks_delta_base, 9, "%llu rooted at the file",
		     (unsigned long long)st.blocks_delta_base);
	cr_expect_lt(st.bytes_logged, 3 * 1024 + 2 * 4096, "%llu bytes logged",
		     (unsigned long long)st.bytes_logged);
	reads_as_want(db, "the writer");
	alex_close(db);

	alex_mem *img = alex_mem_crash(m, ALEX_CRASH_KEEP, 0);
	struct alex_io io2 = alex_mem_io(img);
	db = open_engine(&c, &io2);
	reads_as_want(db, "a cold engine");
	cr_assert_eq(alex_checkpoint(db), 0);
	alex_close(db);
	const uint8_t *base = alex_mem_get(img, DB, &n);
	cr_assert_eq(n, sizeof want);
	cr_assert(memcmp(base + BLK, want + BLK, sizeof want - BLK) == 0, "the checkpoint");
	alex_mem_free(img);
	alex_mem_free(m);
}

/* The checkpoint cut by a power loss after every write, each image
 * keeping any subset of the unsynced sectors: each block's root is then
 * old in some sectors and new in others, and it reads the same. */
Test(delta_base, power_cut_at_every_write_of_the_checkpoint)
{
	alex_mem *m = alex_mem_new();
	struct alex_io io = alex_mem_io(m);
	struct alex_config c;

	alex_config_default(&c);
	c.checkpoint_on_close = 0;
	base_file(m);
	alex_db *db = open_engine(&c, &io);
	two_commits(db);
	checkpoint_cut_everywhere(m, db, &c, 1, NB);
}

/* A block past a truncation of the epoch no longer comes from the file:
 * grown back nearly as it was, it must still go whole.  The checkpoint
 * zeros the cut-off part of the file before it writes the block again,
 * so a power cut between the two would leave a root of zeros under a
 * delta made against the old bytes. */
Test(delta_base, none_past_a_truncation)
{
	alex_mem *m = alex_mem_new();
	struct alex_io io = alex_mem_io(m);
	struct alex_config c;
	struct alex_stats st;

	alex_config_default(&c);
	c.checkpoint_on_close = 0;
	base_file(m);
	alex_db *db = open_engine(&c, &io);
	cr_assert_eq(alex_truncate(db, ALEX_FILE_DB, 6 * BLK), 0);
	cr_assert_eq(alex_commit(db), 0);
	memset(want + 6 * BLK, 0, 2 * BLK);
	memset(want + 8 * BLK + 500, 0x77, 100);
	for (unsigned k = 6; k < NB; k++)
		put(db, k);
	cr_assert_eq(alex_commit(db), 0);
	alex_stats(db, &st);
	cr_expect_eq(st.blocks_delta_base, 0, "%llu rooted at the file",
		     (unsigned long long)st.blocks_delta_base);
	checkpoint_cut_everywhere(m, db, &c, 0, NB);
}

/* A page size of 1024: block 5 logged as a delta of the file, then, in
 * one transaction, the file cut inside block 5 and its tail written back
 * as it was.  The checkpoint cuts the file before it copies, so a delta
 * over the root would leave those bytes in no run: zeros (review: 3 057
 * bytes wrong after a cold checkpoint, 6 of 28 power-cut images wrong). */
static alex_db *cut_inside_a_rooted_block(alex_mem *m, const struct alex_config *c)
{
	struct alex_io io = alex_mem_io(m);
	struct alex_stats st;

	base_file(m);
	alex_db *db = open_engine(c, &io);
	memset(want + 5 * BLK + 10, 0x55, 20);
	put(db, 5);
	cr_assert_eq(alex_commit(db), 0);
	alex_stats(db, &st);
	cr_assert_eq(st.blocks_delta_base, 1);
	cr_assert_eq(alex_truncate(db, ALEX_FILE_DB, 5 * BLK + 1024), 0);
	cr_assert_eq(alex_write(db, ALEX_FILE_DB, want + 5 * BLK + 1024, 3 * 1024, 5 * BLK + 1024),
		     0);
	cr_assert_eq(alex_commit(db), 0);
	memset(want + 6 * BLK, 0, (NB - 6) * BLK); /* cut, never grown back */
	return db;
}

Test(delta_base, cut_inside_a_rooted_block_cold_checkpoint)
{
	alex_mem *m = alex_mem_new();
	struct alex_config c;
	size_t n;

	alex_config_default(&c);
	c.checkpoint_on_close = 0;
	alex_close(cut_inside_a_rooted_block(m, &c));
	alex_mem *img = alex_mem_crash(m, ALEX_CRASH_KEEP, 0);
	struct alex_io io = alex_mem_io(img);
	alex_db *db = open_engine(&c, &io); /* nothing known: the chain is walked */
	cr_assert_eq(alex_checkpoint(db), 0);
	alex_close(db);
	const uint8_t *base = alex_mem_get(img, DB, &n);
	cr_assert_eq(n, 6 * BLK);
	cr_assert(memcmp(base + BLK, want + BLK, 5 * BLK) == 0, "the file after the checkpoint");
	alex_mem_free(img);
	alex_mem_free(m);
}

Test(delta_base, cut_inside_a_rooted_block_power_cut)
{
	alex_mem *m = alex_mem_new();
	struct alex_config c;

	alex_config_default(&c);
	c.checkpoint_on_close = 0;
	alex_db *db = cut_inside_a_rooted_block(m, &c);
	checkpoint_cut_everywhere(m, db, &c, 0, 6);
}

/* Off, and in a log of format 8, pages go whole. */
Test(delta_base, none_when_off_or_in_format_8)
{
	for (int way = 0; way < 2; way++) {
		alex_mem *m = alex_mem_new();
		struct alex_io io = alex_mem_io(m);
		struct alex_config c;
		struct alex_stats st;

		alex_config_default(&c);
		c.checkpoint_on_close = 0;
		c.base_deltas = way;
		base_file(m);
		alex_db *db = open_engine(&c, &io);
		want[200]++;
		put(db, 0);
		cr_assert_eq(alex_commit(db), 0);
		alex_close(db);
		if (way) /* both slots say 8 */
			log_make_version(m, ALEX_FORMAT_V8);
		db = open_engine(&c, &io);
		two_commits(db);
		alex_stats(db, &st);
		cr_expect_eq(st.blocks_delta_base, 0, "way %d", way);
		reads_as_want(db, way ? "format 8" : "off");
		alex_close(db);
		alex_mem_free(m);
	}
}

/* The record's check: a root is the block's own, in the database file,
 * past block 0, and only in format 9. */
Test(delta_base, a_record_naming_another_root_is_damage)
{
	alex_mem *m = alex_mem_new();
	struct alex_io io = alex_mem_io(m);
	struct alex_config c;
	struct alex_rec r;
	size_t len;

	alex_config_default(&c);
	c.checkpoint_on_close = 0;
	base_file(m);
	alex_db *db = open_engine(&c, &io);
	memset(want + 4 * BLK + 100, 0x44, 10);
	put(db, 4);
	cr_assert_eq(alex_commit(db), 0);
	alex_close(db);
	uint8_t *log = log_copy(m, &len);
	struct alex_loghdr h;
	cr_assert_eq(alex_loghdr_decode(log + BLK, &h), 0);
	uint8_t *rec = log + h.data_off;
	cr_assert_eq(alex_rec_peek(rec, &r), 1);
	cr_assert_eq(alex_rec_check_in(rec, &r, ALEX_FORMAT_V9), ALEX_STOP_NONE);
	cr_expect_eq(alex_rec_check_in(rec, &r, ALEX_FORMAT_V8), ALEX_STOP_BAD_BLOCK);
	/* block 4's delta says block 5's root: its crc made right, still damage */
	struct alex_entry e;
	uint32_t at = r.hdr_len, i;
	for (i = 0; i < r.nblocks; i++) {
		alex_entry_decode(rec + ALEX_REC_FIXED + i * ALEX_REC_ENTRY, &e);
		if (e.block == 4)
			break;
		at += e.stored_len;
	}
	cr_assert_lt(i, r.nblocks, "block 4 in the first record");
	uint8_t *d = rec + at;
	cr_assert_eq(e.flags, ALEX_BLK_DELTA);
	cr_assert_eq(d[16], ALEX_DELTA_BASE);
	cr_assert_eq(alex_get64(d), 4 * BLK);
	alex_put64(d, 5 * BLK);
	e.crc = alex_crc32c(0, d, e.stored_len);
	alex_entry_encode(rec + ALEX_REC_FIXED + i * ALEX_REC_ENTRY, &e);
	r.table_crc = alex_crc32c(0, rec + ALEX_REC_FIXED, (size_t)r.nblocks * ALEX_REC_ENTRY);
	cr_expect_eq(alex_rec_check_in(rec, &r, ALEX_FORMAT_V9), ALEX_STOP_BAD_BLOCK);
	free(log);
	alex_mem_free(m);
}

static int bases;

static int m_base(void *ctx, const struct alex_loc *root, uint8_t *blk)
{
	(void)ctx;
	bases++;
	memcpy(blk, want + root->off, BLK);
	return 0;
}

static int m_fail(void *ctx, const struct alex_loc *l, uint8_t *blk)
{
	(void)ctx, (void)l, (void)blk;
	return ALEX_EBADBLOCK;
}

static uint8_t stored[ALEX_DELTA_MAX];

static int m_stored1(void *ctx, const struct alex_loc *l, uint8_t *buf)
{
	(void)ctx;
	memcpy(buf, stored, l->len);
	return 0;
}

/* The walk: a root ends it with one read of the file; a walk with no way
 * to read the file, or a root where a block should be, is damage. */
Test(delta_base, a_chain_ends_at_its_root)
{
	static uint8_t chain[ALEX_DELTA_DEPTH * ALEX_DELTA_MAX], img[BLK], blk[BLK];
	struct alex_delta_src src = { NULL, m_stored1, m_fail, NULL, chain, m_base, 0 };
	struct alex_loc root = { 6 * BLK, BLK, 0, ALEX_DELTA_BASE, 0 }, p;
	uint32_t depth;

	for (unsigned k = 1; k < NB; k++)
		fill_block(want + k * BLK, 1, k);
	memcpy(img, want + 6 * BLK, BLK);
	memset(img + 10, 0x99, 30);
	uint32_t n = alex_delta_make(want + 6 * BLK, img, &root, 1, stored);
	cr_assert_gt(n, 0);
	cr_assert(alex_delta_check(stored, n, &p, &depth));
	cr_expect_eq(p.flags, ALEX_DELTA_BASE);
	cr_expect_eq(p.off, 6 * BLK);
	struct alex_loc at = { 65536, n, 0, ALEX_BLK_DELTA, 1 };
	cr_assert_eq(alex_delta_load(&src, &at, blk, &depth), 0);
	cr_assert_arr_eq(blk, img, BLK);
	cr_expect_eq(bases, 1);
	cr_expect_eq(depth, 1);
	src.base = NULL;
	cr_expect_eq(alex_delta_load(&src, &at, blk, NULL), ALEX_EBADBLOCK, "no way to the file");
	src.base = m_base;
	cr_expect_eq(alex_delta_load(&src, &root, blk, NULL), ALEX_EBADBLOCK, "a root in a map");
	/* what a root may not say */
	static const struct { unsigned at; uint8_t v; const char *why; } bad[] = {
		{ 0, 0x01, "not on a block" }, { 9, 0x0f, "not a whole block" },
		{ 12, 0x01, "a crc" }, { 17, 2, "depth 2" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		uint8_t b[ALEX_DELTA_MAX];
		memcpy(b, stored, n);
		b[bad[i].at] = bad[i].v;
		cr_expect(!alex_delta_check(b, n, &p, &depth), "%s", bad[i].why);
	}
	uint8_t b0[ALEX_DELTA_MAX];
	memcpy(b0, stored, n);
	alex_put64(b0, 0);
	cr_expect(!alex_delta_check(b0, n, &p, &depth), "block 0");
}
