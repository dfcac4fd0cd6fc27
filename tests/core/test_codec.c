/* Per-block LZ4 (codec.c): what is stored compressed and what raw, the
 * saving threshold, AUTO mode's pause after a run of misses, and the
 * decoder's refusal of anything that is not exactly one block. */
#include <criterion/criterion.h>
#include <lz4.h>
#include <stdlib.h>

#include "codec.h"
#include "db.h"
#include "format.h"
#include "helpers.h"

/* The codec reads only cfg and its own fields of the engine. */
static struct alex_db *db;
static uint8_t blk[BLK], out[BLK], back[BLK];

static void setup(void)
{
	db = calloc(1, sizeof *db);
	cr_assert_not_null(db);
	alex_config_default(&db->cfg);
}
static void teardown(void)
{
	alex_codec_free(db);
	free(db);
}
TestSuite(codec, .init = setup, .fini = teardown);

static void noise(uint8_t *b, uint64_t seed)
{
	for (unsigned i = 0; i < BLK; i += 8) {
		uint64_t v = rnd(&seed);
		memcpy(b + i, &v, 8);
	}
}

/* Text-like content compresses, is flagged, and decodes to the same block. */
Test(codec, compressible_block_round_trips)
{
	int lz4 = -1;

	fill_block(blk, 1, 1); /* (1 + 1) % 3 != 0: text */
	uint32_t n = alex_codec_pack(db, blk, out, &lz4);
	cr_assert_eq(lz4, 1);
	cr_assert_lt(n, BLK);
	cr_assert_gt(n, 0u);
	cr_assert_eq(alex_codec_unpack(out, n, ALEX_BLK_LZ4, back), 0);
	cr_expect_arr_eq(back, blk, BLK);
}

/* Noise does not compress: stored raw, exactly 4096 bytes, unchanged. */
Test(codec, noise_is_stored_raw)
{
	int lz4 = -1;

	noise(blk, 3);
	cr_assert_eq(alex_codec_pack(db, blk, out, &lz4), BLK);
	cr_expect_eq(lz4, 0);
	cr_expect_arr_eq(out, blk, BLK);
	cr_assert_eq(alex_codec_unpack(out, BLK, 0, back), 0);
	cr_expect_arr_eq(back, blk, BLK);
}

/* COMPRESS_OFF never tries, even on a block of zeros. */
Test(codec, off_stores_everything_raw)
{
	int lz4 = -1;

	db->cfg.compress = ALEX_COMPRESS_OFF;
	memset(blk, 0, BLK);
	cr_expect_eq(alex_codec_pack(db, blk, out, &lz4), BLK);
	cr_expect_eq(lz4, 0);
	cr_expect_null(db->lz4, "no LZ4 state is made when nothing is compressed");
}

/* Half noise, half zeros compresses to a little over half a block: kept
 * with a 40 % threshold, refused with 60 %, and never larger than the
 * room the threshold leaves. */
Test(codec, threshold_decides)
{
	int lz4;

	noise(blk, 9);
	memset(blk + BLK / 2, 0, BLK / 2);
	db->cfg.compress = ALEX_COMPRESS_LZ4;
	db->cfg.compress_min_saving_pct = 40;
	uint32_t n = alex_codec_pack(db, blk, out, &lz4);
	cr_expect_eq(lz4, 1);
	cr_expect_leq(n, BLK - BLK * 40 / 100);
	cr_assert_eq(alex_codec_unpack(out, n, ALEX_BLK_LZ4, back), 0);
	cr_expect_arr_eq(back, blk, BLK);

	db->cfg.compress_min_saving_pct = 60;
	cr_expect_eq(alex_codec_pack(db, blk, out, &lz4), BLK);
	cr_expect_eq(lz4, 0);
	cr_expect_arr_eq(out, blk, BLK);
}

/* A saving of 100 % leaves no room: raw, whatever the content. */
Test(codec, full_saving_leaves_no_room)
{
	int lz4;

	db->cfg.compress = ALEX_COMPRESS_LZ4;
	db->cfg.compress_min_saving_pct = 100;
	memset(blk, 0, BLK);
	cr_expect_eq(alex_codec_pack(db, blk, out, &lz4), BLK);
	cr_expect_eq(lz4, 0);
}

/* AUTO: 8 misses in a row pause the attempts for the next 64 blocks --
 * even a block of zeros is then stored raw -- and the 65th is tried again. */
Test(codec, auto_pauses_after_a_run_of_misses)
{
	uint8_t zeros[BLK] = { 0 };
	int lz4;

	db->cfg.compress = ALEX_COMPRESS_AUTO;
	for (int i = 0; i < 8; i++) {
		noise(blk, 100 + (uint64_t)i);
		alex_codec_pack(db, blk, out, &lz4);
		cr_assert_eq(lz4, 0);
	}
	for (int i = 0; i < 64; i++) {
		cr_assert_eq(alex_codec_pack(db, zeros, out, &lz4), BLK, "skipped block %d", i);
		cr_assert_eq(lz4, 0);
	}
	cr_expect_lt(alex_codec_pack(db, zeros, out, &lz4), BLK);
	cr_expect_eq(lz4, 1);
}

/* A hit resets the run: 7 misses, a hit, 7 more misses never pause. */
Test(codec, a_hit_resets_the_miss_count)
{
	uint8_t zeros[BLK] = { 0 };
	int lz4;

	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 7; i++) {
			noise(blk, 200 + (uint64_t)(round * 10 + i));
			alex_codec_pack(db, blk, out, &lz4);
			cr_assert_eq(lz4, 0);
		}
		alex_codec_pack(db, zeros, out, &lz4);
		cr_assert_eq(lz4, 1, "round %d", round);
	}
}

/* COMPRESS_LZ4 tries every block: no pause after any number of misses. */
Test(codec, lz4_mode_never_pauses)
{
	uint8_t zeros[BLK] = { 0 };
	int lz4;

	db->cfg.compress = ALEX_COMPRESS_LZ4;
	for (int i = 0; i < 20; i++) {
		noise(blk, 300 + (uint64_t)i);
		alex_codec_pack(db, blk, out, &lz4);
	}
	alex_codec_pack(db, zeros, out, &lz4);
	cr_expect_eq(lz4, 1);
}

/* A raw block is exactly 4096 bytes: any other stored length is damage. */
Test(codec, raw_of_wrong_length_is_a_bad_block)
{
	cr_expect_eq(alex_codec_unpack(blk, BLK - 1, 0, back), ALEX_EBADBLOCK);
	cr_expect_eq(alex_codec_unpack(blk, 1, 0, back), ALEX_EBADBLOCK);
	cr_expect_eq(alex_codec_unpack(blk, 0, 0, back), ALEX_EBADBLOCK);
}

/* LZ4 bytes must decode to exactly one block: cut short, garbage, or a
 * valid stream of fewer bytes are all refused. */
Test(codec, lz4_that_is_not_one_block_is_a_bad_block)
{
	static char half[BLK / 2], small[BLK];
	int lz4;

	memset(blk, 0, BLK);
	blk[100] = 1;
	uint32_t n = alex_codec_pack(db, blk, out, &lz4);
	cr_assert_eq(lz4, 1);
	cr_expect_eq(alex_codec_unpack(out, n - 1, ALEX_BLK_LZ4, back), ALEX_EBADBLOCK);
	cr_expect_eq(alex_codec_unpack(out, 1, ALEX_BLK_LZ4, back), ALEX_EBADBLOCK);
	noise(blk, 5);
	cr_expect_eq(alex_codec_unpack(blk, 64, ALEX_BLK_LZ4, back), ALEX_EBADBLOCK);
	int m = LZ4_compress_default(half, small, sizeof half, sizeof small);
	cr_assert_gt(m, 0);
	cr_expect_eq(alex_codec_unpack((uint8_t *)small, (uint32_t)m, ALEX_BLK_LZ4, back),
		     ALEX_EBADBLOCK);
}

/* The stream is reused from block to block, but no dictionary is carried
 * over: the same block packed twice (where a dictionary would make the
 * second a tiny back-reference) still decodes on its own.  free releases
 * the stream and may run twice. */
Test(codec, state_is_reused_and_freed)
{
	int lz4;

	fill_block(blk, 2, 2);
	uint32_t n1 = alex_codec_pack(db, blk, out, &lz4);
	void *state = db->lz4;
	cr_assert_not_null(state);
	uint32_t n2 = alex_codec_pack(db, blk, out, &lz4);
	cr_expect_eq(db->lz4, state);
	cr_expect_gt(n2, n1 / 2, "the second block looks encoded against the first");
	cr_assert_eq(alex_codec_unpack(out, n2, ALEX_BLK_LZ4, back), 0);
	cr_expect_arr_eq(back, blk, BLK);
	alex_codec_free(db);
	cr_expect_null(db->lz4);
	alex_codec_free(db);
}
