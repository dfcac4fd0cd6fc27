/*
 * DELTA blocks (format 7, delta.h): the diff and its check, the walk of a
 * chain over a log of blobs, and the engine writing chains that another
 * engine -- with nothing in memory -- reads back, recovers and checkpoints.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "delta.h"
#include "format.h"
#include "helpers.h"

static const struct alex_loc prev0 = { 8192, BLK, 0x1234, 0, 1 };

static void mutate(uint8_t *b, uint64_t *s, int runs)
{
	for (int i = 0; i < runs; i++) {
		uint32_t at = (uint32_t)(rnd(s) % BLK), n = 1 + (uint32_t)(rnd(s) % 40);
		for (uint32_t j = 0; j < n && at + j < BLK; j++)
			b[at + j] = (uint8_t)rnd(s);
	}
}

Test(delta, make_and_apply_round_trip)
{
	static uint8_t old[BLK], img[BLK], back[BLK], out[ALEX_DELTA_MAX];
	uint64_t s = 7;

	for (int round = 0; round < 2000; round++) {
		fill_block(old, (uint32_t)round + 1, 3);
		memcpy(img, old, BLK);
		mutate(img, &s, (int)(rnd(&s) % 12));
		uint32_t n = alex_delta_make(old, img, &prev0, 1, out);
		if (!n) {
			for (uint32_t i = 0; i < ALEX_DELTA_MAX; i++)
				cr_assert_eq(out[i], 0, "round %d: a delta that does not fit leaves zeros",
					     round);
			continue;
		}
		struct alex_loc p;
		uint32_t depth;
		cr_assert(alex_delta_check(out, n, &p, &depth), "round %d", round);
		cr_assert_eq(p.off, prev0.off);
		cr_assert_eq(p.crc, prev0.crc);
		cr_assert_eq(depth, 1);
		memcpy(back, old, BLK);
		alex_delta_apply(out, n, back);
		cr_assert_arr_eq(back, img, BLK, "round %d", round);
	}
}

Test(delta, small_change_small_delta)
{
	static uint8_t old[BLK], img[BLK], out[ALEX_DELTA_MAX];

	fill_block(old, 5, 5);
	memcpy(img, old, BLK);
	cr_expect_eq(alex_delta_make(old, img, &prev0, 1, out), ALEX_DELTA_HDR, "no change");
	img[24] ^= 1; /* a change counter and a new cell */
	memset(img + 3000, 0x77, 110);
	uint32_t n = alex_delta_make(old, img, &prev0, 1, out);
	cr_expect_leq(n, ALEX_DELTA_HDR + 2 * ALEX_DELTA_RUN + 1 + 110 + 14, "%u bytes", n);
	fill_block(img, 6, 6); /* another page altogether */
	cr_expect_eq(alex_delta_make(old, img, &prev0, 1, out), 0);
}

/* The vector skip (AVX2) and the portable one make the same bytes: runs
 * at the block's edges, at and across every 8-, 128- and 256-byte
 * boundary, and random ones. */
Test(delta, vector_and_portable_skips_agree)
{
	static uint8_t old[BLK], img[BLK], a[ALEX_DELTA_MAX], b[ALEX_DELTA_MAX];
	uint64_t s = 11;
	int edges = 0;

	cr_log_info("alex_delta_make uses %s", alex_delta_vector() ? "AVX2" : "memcmp");
	for (int round = 0; round < 20000; round++) {
		fill_block(old, (uint32_t)round + 1, 3);
		memcpy(img, old, BLK);
		if (round < 4096) { /* one byte changed at each offset in turn */
			img[round] ^= (uint8_t)(1 + round % 255);
			edges++;
		} else {
			mutate(img, &s, (int)(rnd(&s) % 12));
		}
		memset(a, 0, sizeof a);
		memset(b, 0, sizeof b);
		uint32_t na = alex_delta_make(old, img, &prev0, 1, a);
		uint32_t nb = alex_delta_make_sw(old, img, &prev0, 1, b);
		cr_assert_eq(na, nb, "round %d: %u against %u bytes", round, na, nb);
		cr_assert_arr_eq(a, b, ALEX_DELTA_MAX, "round %d", round);
		if (round < 4096)
			cr_assert_eq(na, ALEX_DELTA_HDR + ALEX_DELTA_RUN + 1, "round %d", round);
	}
	cr_assert_eq(edges, BLK);
}

static uint8_t good[ALEX_DELTA_MAX];
static uint32_t good_len;

static void make_good(void)
{
	good_len = ALEX_DELTA_HDR;
	alex_put64(good, 8192);
	alex_put32(good + 8, 100);
	alex_put32(good + 12, 7);
	good[16] = ALEX_BLK_GAP;
	good[17] = 1;
	good[18] = good[19] = 0;
	uint16_t runs[][2] = { { 10, 4 }, { 14, 2 }, { 4000, 96 } };
	for (int i = 0; i < 3; i++) {
		alex_put16(good + good_len, runs[i][0]);
		alex_put16(good + good_len + 2, runs[i][1]);
		memset(good + good_len + 4, 0xc0 + i, runs[i][1]);
		good_len += 4 + runs[i][1];
	}
}

Test(delta, check_rules)
{
	static uint8_t b[ALEX_DELTA_MAX];
	struct alex_loc p;
	uint32_t d;

	make_good();
	cr_assert(alex_delta_check(good, good_len, &p, &d));
	/* each line: one rule broken */
#define BAD(stmt, len, why)                                                     \
	do {                                                                    \
		memcpy(b, good, good_len);                                      \
		stmt;                                                           \
		cr_expect(!alex_delta_check(b, len, &p, &d), why);              \
	} while (0)
	BAD((void)0, good_len - 1, "a run cut short");
	BAD((void)0, ALEX_DELTA_HDR - 1, "shorter than the header");
	BAD(b[16] = 3, good_len, "prev both LZ4 and GAP");
	BAD(b[16] = 8, good_len, "prev of an unknown codec");
	BAD(b[16] = 0, good_len, "a raw prev of 100 bytes");
	BAD(b[17] = 0, good_len, "depth 0");
	BAD(b[17] = 2, good_len, "depth 2 over a whole block");
	BAD((b[16] = ALEX_BLK_DELTA, b[17] = 1), good_len, "depth 1 over a delta");
	BAD((b[16] = ALEX_BLK_DELTA, b[17] = ALEX_DELTA_DEPTH + 1), good_len, "too deep");
	BAD(b[18] = 1, good_len, "reserved byte");
	BAD(alex_put32(b + 8, 0), good_len, "prev of no bytes");
	BAD(alex_put32(b + 8, BLK + 1), good_len, "prev longer than a block");
	BAD(alex_put64(b, ALEX_MAX_FILE + 1), good_len, "prev past any log");
	BAD(alex_put16(b + ALEX_DELTA_HDR + 8, 12), good_len, "runs overlap");
	BAD(alex_put16(b + ALEX_DELTA_HDR + 10, 0), good_len, "a run of no bytes");
	BAD(alex_put16(b + good_len - 100, 4001), good_len, "a run past the block");
	BAD((void)0, ALEX_DELTA_MAX + 1, "longer than a delta may be");
	/* and a delta over a delta, at depth 2, is fine */
	memcpy(b, good, good_len);
	b[16] = ALEX_BLK_DELTA;
	b[17] = 2;
	cr_expect(alex_delta_check(b, good_len, &p, &d));
	cr_expect_eq(d, 2);
#undef BAD
}

/* A log in memory: the chain's blobs at their places. */
static uint8_t mlog[1 << 20];
static int reads, whole_reads;

static int m_stored(void *ctx, const struct alex_loc *l, uint8_t *buf)
{
	(void)ctx;
	reads++;
	if (l->off + l->len > sizeof mlog || alex_crc32c(0, mlog + l->off, l->len) != l->crc)
		return ALEX_EBADBLOCK;
	memcpy(buf, mlog + l->off, l->len);
	return 0;
}

static int m_whole(void *ctx, const struct alex_loc *l, uint8_t *blk)
{
	whole_reads++;
	if (l->len != BLK || alex_loc_codec(l) != 0)
		return ALEX_EBADBLOCK;
	return m_stored(ctx, l, blk);
}

static const struct alex_loc *known_loc;
static const uint8_t *known_img;

static const uint8_t *m_known(void *ctx, uint64_t key, const struct alex_loc *l)
{
	(void)ctx, (void)key;
	return known_loc && known_loc->off == l->off && known_loc->crc == l->crc ? known_img : NULL;
}

/* Writes a chain of n deltas over a raw block at 0; versions[i] is what
 * the block at locs[i] holds.  Returns the newest place. */
static uint8_t versions[40][BLK];
static struct alex_loc locs[40];

static void build_chain(int n)
{
	uint64_t s = 99, at = BLK;
	fill_block(versions[0], 1, 1);
	memcpy(mlog, versions[0], BLK);
	locs[0] = (struct alex_loc){ 0, BLK, alex_crc32c(0, mlog, BLK), 0, 1 };
	for (int i = 1; i <= n; i++) {
		memcpy(versions[i], versions[i - 1], BLK);
		mutate(versions[i], &s, 3);
		uint32_t len = alex_delta_make(versions[i - 1], versions[i], &locs[i - 1],
					       (uint32_t)i, mlog + at);
		cr_assert_gt(len, 0);
		locs[i] = (struct alex_loc){ at, len, alex_crc32c(0, mlog + at, len),
					     ALEX_BLK_DELTA, 1 };
		at += len;
	}
}

Test(delta, a_chain_is_walked_back_and_put_on_in_order)
{
	static uint8_t chain[ALEX_DELTA_DEPTH * ALEX_DELTA_MAX], blk[BLK];
	struct alex_delta_src src = { NULL, m_stored, m_whole, m_known, chain, NULL, 0 };
	uint32_t depth;

	build_chain(ALEX_DELTA_DEPTH);
	for (int i = 0; i <= (int)ALEX_DELTA_DEPTH; i++) {
		cr_assert_eq(alex_delta_load(&src, &locs[i], blk, &depth), 0, "version %d", i);
		cr_assert_arr_eq(blk, versions[i], BLK, "version %d", i);
		cr_assert_eq(depth, (uint32_t)i);
	}
	/* a known version in the middle ends the walk there */
	known_loc = &locs[10];
	known_img = versions[10];
	reads = whole_reads = 0;
	cr_assert_eq(alex_delta_load(&src, &locs[ALEX_DELTA_DEPTH], blk, NULL), 0);
	cr_assert_arr_eq(blk, versions[ALEX_DELTA_DEPTH], BLK);
	cr_expect_eq(reads, ALEX_DELTA_DEPTH - 10, "one read per delta above the known one");
	cr_expect_eq(whole_reads, 0);
	known_loc = NULL;
	/* damage in the middle of the chain is found, not put on */
	mlog[locs[5].off + ALEX_DELTA_HDR + 1] ^= 1;
	cr_expect_eq(alex_delta_load(&src, &locs[ALEX_DELTA_DEPTH], blk, NULL), ALEX_EBADBLOCK);
}

Test(delta, a_chain_that_goes_forward_or_lies_about_its_depth_is_damage)
{
	static uint8_t chain[ALEX_DELTA_DEPTH * ALEX_DELTA_MAX], blk[BLK];
	struct alex_delta_src src = { NULL, m_stored, m_whole, NULL, chain, NULL, 0 };

	build_chain(3);
	/* version 2 says its prev is version 3, which lies after it */
	uint8_t *d = mlog + locs[2].off;
	alex_put64(d, locs[3].off);
	alex_put32(d + 8, locs[3].len);
	alex_put32(d + 12, locs[3].crc);
	d[16] = ALEX_BLK_DELTA;
	d[17] = 4;
	struct alex_loc l2 = locs[2];
	l2.crc = alex_crc32c(0, d, l2.len);
	cr_expect_eq(alex_delta_load(&src, &l2, blk, NULL), ALEX_EBADBLOCK, "forward");
	/* version 3 says depth 3 over version 2, which says 1 */
	build_chain(3);
	d = mlog + locs[2].off;
	d[17] = 1;
	d[16] = 0; /* "a whole block" -- but locs[1] is a delta */
	alex_put64(d, locs[0].off);
	alex_put32(d + 8, locs[0].len);
	alex_put32(d + 12, locs[0].crc);
	uint32_t c2 = alex_crc32c(0, d, locs[2].len);
	uint8_t *d3 = mlog + locs[3].off;
	alex_put32(d3 + 12, c2);
	struct alex_loc l3 = locs[3];
	l3.crc = alex_crc32c(0, d3, l3.len);
	cr_expect_eq(alex_delta_load(&src, &l3, blk, NULL), ALEX_EBADBLOCK, "depths disagree");
}

/* The engine: a page changed by many small commits is logged as chains
 * of small deltas, and an engine that holds none of them reads, recovers
 * and checkpoints the same bytes. */
Test(delta, engine_chains_read_back_by_a_cold_engine)
{
	alex_mem *m = alex_mem_new();
	struct alex_io io = alex_mem_io(m);
	struct alex_config c;
	struct alex_stats st;
	static uint8_t page1[BLK], leaf[BLK], got[BLK];
	alex_db *db;
	size_t n;

	alex_config_default(&c);
	c.checkpoint_on_close = 0;
	sqlite_like_file(m, page1);
	memset(leaf, 0, BLK);
	cr_assert_eq(alex_open(DB, &c, &io, &db), 0);
	for (int i = 0; i < 100; i++) {
		page1[24] = (uint8_t)i; /* the change counter */
		leaf[3] = (uint8_t)(i + 1);
		memset(leaf + BLK - 40 * (i + 1), 'a' + i % 26, 40); /* a new cell */
		cr_assert_eq(alex_write(db, ALEX_FILE_DB, leaf, BLK, 2 * BLK), 0);
		cr_assert_eq(alex_write(db, ALEX_FILE_DB, page1, BLK, 0), 0);
		cr_assert_eq(alex_commit(db), 0);
	}
	alex_stats(db, &st);
	cr_expect_gt(st.blocks_delta, 150, "%llu of 200 blocks as deltas",
		     (unsigned long long)st.blocks_delta);
	cr_expect_lt(st.bytes_logged, 100 * 1024, "%llu bytes for 100 small commits",
		     (unsigned long long)st.bytes_logged);
	alex_close(db);

	/* a crash image, opened cold: recovery maps the chains, reads walk them */
	alex_mem *img = alex_mem_crash(m, ALEX_CRASH_KEEP, 0);
	struct alex_io io2 = alex_mem_io(img);
	cr_assert_eq(alex_open(DB, &c, &io2, &db), 0);
	cr_assert_eq(alex_read(db, ALEX_FILE_DB, got, BLK, 2 * BLK, &n), 0);
	cr_assert_arr_eq(got, leaf, BLK, "the leaf after 100 deltas");
	cr_assert_eq(alex_read(db, ALEX_FILE_DB, got, BLK, 0, &n), 0);
	cr_assert_arr_eq(got, page1, BLK, "page 1 after 100 deltas");
	/* a commit over what the cold engine read: a delta again, read back */
	leaf[100] = 0xee;
	cr_assert_eq(alex_write(db, ALEX_FILE_DB, leaf, BLK, 2 * BLK), 0);
	cr_assert_eq(alex_commit(db), 0);
	alex_stats(db, &st);
	cr_expect_eq(st.blocks_delta, 1, "a block read from a chain is known");
	cr_assert_eq(alex_checkpoint(db), 0);
	alex_close(db);
	const uint8_t *base = alex_mem_get(img, DB, &n);
	cr_assert_geq(n, 3 * BLK);
	cr_assert_arr_eq(base + 2 * BLK, leaf, BLK, "the checkpoint put the chain's end");
	alex_mem_free(img);
	alex_mem_free(m);
}

/* A log of format 6 stays format 6 and writes no delta. */
Test(delta, a_format_6_log_writes_no_delta)
{
	alex_mem *m = alex_mem_new();
	struct alex_io io = alex_mem_io(m);
	struct alex_config c;
	struct alex_stats st;
	static uint8_t page1[BLK];
	alex_db *db;

	alex_config_default(&c);
	c.checkpoint_on_close = 0;
	sqlite_like_file(m, page1);
	cr_assert_eq(alex_open(DB, &c, &io, &db), 0);
	sqlite_like_commit(db, page1, 1);
	alex_close(db);
	/* make it a log of format 6: both slots say 6 (the placeholder, too) */
	log_make_version(m, ALEX_FORMAT_V6);
	cr_assert_eq(alex_open(DB, &c, &io, &db), 0);
	for (uint8_t v = 2; v < 10; v++)
		sqlite_like_commit(db, page1, v);
	alex_stats(db, &st);
	cr_expect_eq(st.blocks_delta, 0);
	alex_close(db);
	uint8_t v = 0;
	cr_assert_eq(image_byte(m, BLK, &v, NULL), 0);
	cr_expect_eq(v, 9);
	alex_mem_free(m);
}

/* Two engines on one log take turns changing a few bytes of two blocks,
 * with checkpoints between: each writes deltas over what the other wrote
 * and it read (a chain across engines), reads the other's after a catch-up,
 * and a cold engine on a crash image reads the last of it. */
Test(delta, two_engines_chain_over_each_other)
{
	alex_mem *m = alex_mem_new();
	struct alex_io io = alex_mem_io(m);
	struct alex_config c;
	static uint8_t page1[BLK], blk[BLK], got[BLK];
	struct alex_stats sa, sb;
	size_t n;

	small_config(&c);
	sqlite_like_file(m, page1);
	alex_db *e[2] = { open_engine(&c, &io), open_engine(&c, &io) };
	memset(blk, 0x11, BLK); /* as sqlite_like_file made it */
	for (int t = 0; t < 120; t++) {
		alex_db *w = e[t % 2], *r = e[(t + 1) % 2];
		cr_assert_eq(alex_refresh(w, 1), 0);
		/* the writer reads what it changes, as SQLite does */
		cr_assert_eq(alex_read(w, ALEX_FILE_DB, got, BLK, 3 * BLK, &n), 0);
		cr_assert_arr_eq(got, blk, BLK, "txn %d: the writer's read", t);
		cr_assert_eq(alex_read(w, ALEX_FILE_DB, got, BLK, 0, &n), 0);
		cr_assert_arr_eq(got, page1, BLK, "txn %d: the writer's page 1", t);
		blk[(t * 37) % BLK] = (uint8_t)t;
		page1[24] = (uint8_t)t;
		cr_assert_eq(alex_write(w, ALEX_FILE_DB, blk, BLK, 3 * BLK), 0);
		cr_assert_eq(alex_write(w, ALEX_FILE_DB, page1, BLK, 0), 0);
		cr_assert_eq(alex_commit(w), 0);
		cr_assert_eq(alex_refresh(r, 1), 0);
		cr_assert_eq(alex_read(r, ALEX_FILE_DB, got, BLK, 3 * BLK, &n), 0);
		cr_assert_arr_eq(got, blk, BLK, "txn %d: the other engine's read", t);
		if (t % 50 == 49)
			cr_assert_eq(alex_checkpoint(w), 0);
	}
	alex_stats(e[0], &sa);
	alex_stats(e[1], &sb);
	cr_expect_gt(sa.blocks_delta + sb.blocks_delta, 200, "%llu + %llu deltas of 240 blocks",
		     (unsigned long long)sa.blocks_delta, (unsigned long long)sb.blocks_delta);
	cr_expect_gt(sa.blocks_delta, 40, "engine a wrote deltas over b's versions");
	cr_expect_gt(sb.blocks_delta, 40, "engine b wrote deltas over a's versions");
	alex_mem *img = alex_mem_crash(m, ALEX_CRASH_LOSE, 0);
	alex_close(e[0]);
	alex_close(e[1]);
	struct alex_io io2 = alex_mem_io(img);
	alex_db *cold = open_engine(&c, &io2);
	cr_assert_eq(alex_read(cold, ALEX_FILE_DB, got, BLK, 3 * BLK, &n), 0);
	cr_assert_arr_eq(got, blk, BLK, "a cold engine after the crash");
	cr_assert_eq(alex_read(cold, ALEX_FILE_DB, got, BLK, 0, &n), 0);
	cr_expect_eq(got[24], page1[24]);
	alex_close(cold);
	alex_mem_free(img);
	alex_mem_free(m);
}
