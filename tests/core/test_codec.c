/* How a block is stored (codec.c): LZ4 -- what is stored compressed and
 * what raw, the saving threshold, AUTO mode's pause after a run of misses,
 * the decoder's refusal of anything that is not exactly one block -- and
 * GAP, a b-tree page without its zero gap (the tests at the end). */
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

/* Packs n blocks of noise (seeds seed, seed + 1, ...): each stored raw. */
static void pack_noise(int n, uint64_t seed)
{
	uint32_t lz4;

	for (int i = 0; i < n; i++) {
		noise(blk, seed + (uint64_t)i);
		alex_codec_pack(db, blk, -1, out, &lz4);
		cr_assert_eq(lz4, 0, "noise block %d", i);
	}
}

/* Text-like content compresses, is flagged, and decodes to the same block. */
Test(codec, compressible_block_round_trips)
{
	uint32_t lz4 = 99;

	fill_block(blk, 1, 1); /* (1 + 1) % 3 != 0: text */
	uint32_t n = alex_codec_pack(db, blk, -1, out, &lz4);
	cr_assert_eq(lz4, ALEX_BLK_LZ4);
	cr_assert_lt(n, BLK);
	cr_assert_gt(n, 0u);
	cr_assert_eq(alex_codec_unpack(out, n, ALEX_BLK_LZ4, back), 0);
	cr_expect_arr_eq(back, blk, BLK);
}

/* Noise does not compress: stored raw, exactly 4096 bytes, unchanged. */
Test(codec, noise_is_stored_raw)
{
	uint32_t lz4 = 99;

	noise(blk, 3);
	cr_assert_eq(alex_codec_pack(db, blk, -1, out, &lz4), BLK);
	cr_expect_eq(lz4, 0);
	cr_expect_arr_eq(out, blk, BLK);
	cr_assert_eq(alex_codec_unpack(out, BLK, 0, back), 0);
	cr_expect_arr_eq(back, blk, BLK);
}

/* COMPRESS_OFF never tries, even on a block of zeros. */
Test(codec, off_stores_everything_raw)
{
	uint32_t lz4 = 99;

	db->cfg.compress = ALEX_COMPRESS_OFF;
	memset(blk, 0, BLK);
	cr_expect_eq(alex_codec_pack(db, blk, -1, out, &lz4), BLK);
	cr_expect_eq(lz4, 0);
	cr_expect_null(db->lz4, "no LZ4 state is made when nothing is compressed");
}

/* Half noise, half zeros compresses to a little over half a block: kept
 * with a 40 % threshold, refused with 60 %, and never larger than the
 * room the threshold leaves. */
Test(codec, threshold_decides)
{
	uint32_t lz4;

	noise(blk, 9);
	memset(blk + BLK / 2, 0, BLK / 2);
	db->cfg.compress = ALEX_COMPRESS_LZ4;
	db->cfg.compress_min_saving_pct = 40;
	uint32_t n = alex_codec_pack(db, blk, -1, out, &lz4);
	cr_expect_eq(lz4, ALEX_BLK_LZ4);
	cr_expect_leq(n, BLK - BLK * 40 / 100);
	cr_assert_eq(alex_codec_unpack(out, n, ALEX_BLK_LZ4, back), 0);
	cr_expect_arr_eq(back, blk, BLK);

	db->cfg.compress_min_saving_pct = 60;
	cr_expect_eq(alex_codec_pack(db, blk, -1, out, &lz4), BLK);
	cr_expect_eq(lz4, 0);
	cr_expect_arr_eq(out, blk, BLK);
}

/* A saving of 100 % leaves no room: raw, whatever the content. */
Test(codec, full_saving_leaves_no_room)
{
	uint32_t lz4;

	db->cfg.compress = ALEX_COMPRESS_LZ4;
	db->cfg.compress_min_saving_pct = 100;
	memset(blk, 0, BLK);
	cr_expect_eq(alex_codec_pack(db, blk, -1, out, &lz4), BLK);
	cr_expect_eq(lz4, 0);
}

/* AUTO: 8 misses in a row pause the attempts for the next 64 blocks --
 * even a block of zeros is then stored raw -- and the 65th is tried again. */
Test(codec, auto_pauses_after_a_run_of_misses)
{
	uint8_t zeros[BLK] = { 0 };
	uint32_t lz4;

	db->cfg.compress = ALEX_COMPRESS_AUTO;
	pack_noise(8, 100);
	for (int i = 0; i < 64; i++) {
		cr_assert_eq(alex_codec_pack(db, zeros, -1, out, &lz4), BLK, "skipped block %d", i);
		cr_assert_eq(lz4, 0);
	}
	cr_expect_lt(alex_codec_pack(db, zeros, -1, out, &lz4), BLK);
	cr_expect_eq(lz4, ALEX_BLK_LZ4);
}

/* A hit resets the run: 7 misses, a hit, 7 more misses never pause. */
Test(codec, a_hit_resets_the_miss_count)
{
	uint8_t zeros[BLK] = { 0 };
	uint32_t lz4;

	for (int round = 0; round < 2; round++) {
		pack_noise(7, 200 + (uint64_t)round * 10);
		alex_codec_pack(db, zeros, -1, out, &lz4);
		cr_assert_eq(lz4, ALEX_BLK_LZ4, "round %d", round);
	}
}

/* COMPRESS_LZ4 tries every block: no pause after any number of misses. */
Test(codec, lz4_mode_never_pauses)
{
	uint8_t zeros[BLK] = { 0 };
	uint32_t lz4;

	db->cfg.compress = ALEX_COMPRESS_LZ4;
	for (int i = 0; i < 20; i++) {
		noise(blk, 300 + (uint64_t)i);
		alex_codec_pack(db, blk, -1, out, &lz4);
	}
	alex_codec_pack(db, zeros, -1, out, &lz4);
	cr_expect_eq(lz4, ALEX_BLK_LZ4);
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
	uint32_t lz4;

	memset(blk, 0, BLK);
	blk[100] = 1;
	uint32_t n = alex_codec_pack(db, blk, -1, out, &lz4);
	cr_assert_eq(lz4, ALEX_BLK_LZ4);
	cr_expect_eq(alex_codec_unpack(out, n - 1, ALEX_BLK_LZ4, back), ALEX_EBADBLOCK);
	cr_expect_eq(alex_codec_unpack(out, 1, ALEX_BLK_LZ4, back), ALEX_EBADBLOCK);
	noise(blk, 5);
	cr_expect_eq(alex_codec_unpack(blk, 64, ALEX_BLK_LZ4, back), ALEX_EBADBLOCK);
	int m = LZ4_compress_default(half, small, sizeof half, sizeof small);
	cr_assert_gt(m, 0);
	cr_expect_eq(alex_codec_unpack((uint8_t *)small, (uint32_t)m, ALEX_BLK_LZ4, back),
		     ALEX_EBADBLOCK);
}

/* AUTO, where bytes are cheap (NORMAL): a block of random bytes is not
 * handed to LZ4 at all (no stream is made for it), and is no miss; LZ4
 * mode still tries it, and so does FULL mode. */
Test(codec, auto_does_not_try_random_bytes)
{
	uint32_t lz4;

	db->cfg.sync = ALEX_SYNC_NORMAL;
	noise(blk, 11);
	cr_assert_eq(alex_codec_pack(db, blk, -1, out, &lz4), BLK);
	cr_expect_eq(lz4, 0);
	cr_expect_arr_eq(out, blk, BLK);
	cr_expect_null(db->lz4, "no attempt was made");
	cr_expect_eq(db->lz4_misses, 0u);
	db->cfg.compress = ALEX_COMPRESS_LZ4;
	cr_assert_eq(alex_codec_pack(db, blk, -1, out, &lz4), BLK);
	cr_expect_not_null(db->lz4, "LZ4 mode tries every block");
	alex_codec_free(db);
	db->cfg.compress = ALEX_COMPRESS_AUTO;
	db->cfg.sync = ALEX_SYNC_FULL;
	cr_assert_eq(alex_codec_pack(db, blk, -1, out, &lz4), BLK);
	cr_expect_not_null(db->lz4, "FULL mode tries every block");
}

/* Blocks turned away as random never pause LZ4 for the blocks after them:
 * a compressible block after 20 of them is compressed (a review: hashes
 * with repeated short columns look random, and JSON pages after them went
 * raw). */
Test(codec, random_looking_blocks_never_pause_lz4)
{
	uint8_t zeros[BLK] = { 0 };
	uint32_t lz4;

	db->cfg.sync = ALEX_SYNC_NORMAL;
	pack_noise(20, 400);
	cr_expect_lt(alex_codec_pack(db, zeros, -1, out, &lz4), BLK);
	cr_expect_eq(lz4, ALEX_BLK_LZ4);
}

/* Bytes that are not random are tried, however LZ4 then fares: half a
 * block of noise and half of zeros is tried and kept (30 % threshold);
 * noise over only 64 byte values is tried and, with nothing repeated,
 * stored raw. */
Test(codec, auto_tries_what_is_not_random)
{
	uint32_t lz4;

	db->cfg.sync = ALEX_SYNC_NORMAL;
	noise(blk, 12);
	memset(blk + BLK / 2, 0, BLK / 2);
	db->cfg.compress_min_saving_pct = 30;
	uint32_t n = alex_codec_pack(db, blk, -1, out, &lz4);
	cr_expect_eq(lz4, ALEX_BLK_LZ4);
	cr_assert_eq(alex_codec_unpack(out, n, ALEX_BLK_LZ4, back), 0);
	cr_expect_arr_eq(back, blk, BLK);
	alex_codec_free(db);

	noise(blk, 13);
	for (unsigned i = 0; i < BLK; i++)
		blk[i] &= 63;
	cr_expect_eq(alex_codec_pack(db, blk, -1, out, &lz4), BLK);
	cr_expect_not_null(db->lz4, "tried");
}

/* Both accelerations give blocks the one decoder reads back; FULL mode's
 * (1) stores prose-like content in fewer bytes than NORMAL's. */
Test(codec, both_accelerations_round_trip)
{
	uint32_t lz4, n[2];
	enum alex_sync modes[2] = { ALEX_SYNC_FULL, ALEX_SYNC_NORMAL };

	uint64_t seed = 21;
	static const char *words[] = { "page ", "log ", "extent ", "commit ", "the ", "of ",
				       "sqlite ", "block ", "sync ", "record " };
	for (unsigned i = 0; i < BLK;) {
		const char *w = words[rnd(&seed) % 10];
		for (; *w && i < BLK; w++)
			blk[i++] = (uint8_t)*w;
	}
	for (int m = 0; m < 2; m++) {
		db->cfg.sync = modes[m];
		n[m] = alex_codec_pack(db, blk, -1, out, &lz4);
		cr_assert_eq(lz4, ALEX_BLK_LZ4, "mode %d", m);
		cr_assert_eq(alex_codec_unpack(out, n[m], ALEX_BLK_LZ4, back), 0);
		cr_expect_arr_eq(back, blk, BLK);
	}
	cr_expect_lt(n[0], n[1], "FULL %u bytes, NORMAL %u", n[0], n[1]);
}

/* The stream is reused from block to block, but no dictionary is carried
 * over: the same block packed twice (where a dictionary would make the
 * second a tiny back-reference) still decodes on its own.  free releases
 * the stream and may run twice. */
Test(codec, state_is_reused_and_freed)
{
	uint32_t lz4;

	fill_block(blk, 2, 2);
	uint32_t n1 = alex_codec_pack(db, blk, -1, out, &lz4);
	void *state = db->lz4;
	cr_assert_not_null(state);
	uint32_t n2 = alex_codec_pack(db, blk, -1, out, &lz4);
	cr_expect_eq(db->lz4, state);
	cr_expect_gt(n2, n1 / 2, "the second block looks encoded against the first");
	cr_assert_eq(alex_codec_unpack(out, n2, ALEX_BLK_LZ4, back), 0);
	cr_expect_arr_eq(back, blk, BLK);
	alex_codec_free(db);
	cr_expect_null(db->lz4);
	alex_codec_free(db);
}

/* A SQLite table leaf: header at h, ncells cells of csize bytes at the
 * end of the block, the cell pointers after the header, zeros between. */
static uint32_t leaf(uint8_t *b, uint32_t h, uint32_t ncells, uint32_t csize)
{
	uint32_t content = BLK - ncells * csize;

	memset(b, 0, BLK);
	if (h)
		memset(b, 'S', h); /* page 1: the database header before it */
	b[h] = 13;
	b[h + 3] = (uint8_t)(ncells >> 8);
	b[h + 4] = (uint8_t)ncells;
	b[h + 5] = (uint8_t)(content >> 8);
	b[h + 6] = (uint8_t)content;
	for (uint32_t i = 0; i < ncells; i++) {
		uint32_t at = content + i * csize;
		b[h + 8 + 2 * i] = (uint8_t)(at >> 8);
		b[h + 9 + 2 * i] = (uint8_t)at;
		uint64_t seed = at;
		for (uint32_t j = 0; j < csize; j++) /* cells: incompressible, no zero */
			b[at + j] = (uint8_t)(rnd(&seed) | 1);
	}
	return content - (h + 8 + 2 * ncells); /* the gap */
}

/* A leaf that grows by inserts: stored without its gap, in every mode
 * that compresses, and decoded to the same bytes.  LZ4 is not even made. */
Test(codec, btree_leaf_is_stored_without_its_gap)
{
	enum alex_compress modes[] = { ALEX_COMPRESS_AUTO, ALEX_COMPRESS_LZ4 };
	uint32_t how;

	for (int m = 0; m < 2; m++) {
		db->cfg.compress = modes[m];
		uint32_t gap = leaf(blk, 0, 10, 110);
		uint32_t n = alex_codec_pack(db, blk, 0, out, &how);
		cr_assert_eq(how, ALEX_BLK_GAP, "mode %d", m);
		cr_expect_eq(n, ALEX_GAP_HDR + BLK - gap);
		cr_assert_eq(alex_codec_unpack(out, n, ALEX_BLK_GAP, back), 0);
		cr_expect_arr_eq(back, blk, BLK);
	}
	cr_expect_null(db->lz4, "no LZ4 for a block the gap made small");
}

/* Page 1: its b-tree header follows the 100-byte database header. */
Test(codec, page_one_gap_is_found_after_the_database_header)
{
	uint32_t how;

	uint32_t gap = leaf(blk, 100, 3, 300);
	uint32_t n = alex_codec_pack(db, blk, 100, out, &how);
	cr_assert_eq(how, ALEX_BLK_GAP);
	cr_expect_eq(n, ALEX_GAP_HDR + BLK - gap);
	cr_assert_eq(alex_codec_unpack(out, n, how, back), 0);
	cr_expect_arr_eq(back, blk, BLK);
}

/* The header is a hint, not a promise: a gap holding old bytes (SQLite
 * does not clear freed space) is not left out; the block goes to LZ4 or
 * raw, and every byte comes back.  A header that names a gap past the
 * block, or none at all, is no reason to lose a byte either. */
Test(codec, a_gap_that_is_not_zero_is_kept)
{
	uint32_t how;

	leaf(blk, 0, 10, 110);
	blk[2000] = 0x77; /* a stale byte in the gap */
	uint32_t n = alex_codec_pack(db, blk, 0, out, &how);
	cr_expect_neq(how, ALEX_BLK_GAP);
	cr_assert_eq(alex_codec_unpack(out, n, how, back), 0);
	cr_expect_arr_eq(back, blk, BLK);

	leaf(blk, 0, 10, 110);
	blk[5] = 0xff; /* content "starts" at 65 280: past the block */
	blk[6] = 0x00;
	n = alex_codec_pack(db, blk, 0, out, &how);
	cr_assert_eq(alex_codec_unpack(out, n, how, back), 0);
	cr_expect_arr_eq(back, blk, BLK);
}

/* Without a b-tree header, a zero tail is left out (a new page, the last
 * overflow page); hdr_at -1 (journal, WAL, an older format's epoch) never
 * leaves anything out, even a block of zeros. */
Test(codec, zero_tail_and_no_gap_where_none_may_be)
{
	uint32_t how;

	noise(blk, 11);
	memset(blk + 1000, 0, BLK - 1000);
	uint32_t n = alex_codec_pack(db, blk, 0, out, &how);
	cr_assert_eq(how, ALEX_BLK_GAP);
	cr_expect_eq(n, ALEX_GAP_HDR + 1000);
	cr_assert_eq(alex_codec_unpack(out, n, how, back), 0);
	cr_expect_arr_eq(back, blk, BLK);

	memset(blk, 0, BLK);
	n = alex_codec_pack(db, blk, -1, out, &how);
	cr_expect_eq(how, ALEX_BLK_LZ4);
	db->cfg.compress = ALEX_COMPRESS_OFF;
	cr_expect_eq(alex_codec_pack(db, blk, 0, out, &how), BLK, "OFF: raw, gap or not");
	cr_expect_eq(how, 0);
}

/* The gap must save what LZ4 must save (compress_min_saving_pct): a nearly
 * full page goes on to LZ4 (here: raw, its cells being noise). */
Test(codec, a_small_gap_is_not_worth_a_gap_block)
{
	uint32_t how;

	uint32_t gap = leaf(blk, 0, 36, 110); /* 4096 - 8 - 72 - 3960 = 56 */
	cr_assert_lt(gap, BLK / 10);
	cr_expect_eq(alex_codec_pack(db, blk, 0, out, &how), BLK);
	cr_expect_eq(how, 0);
	cr_expect_arr_eq(out, blk, BLK);
}

/* AUTO's pause is LZ4's: a gap is still left out while LZ4 pauses. */
Test(codec, gap_is_left_out_while_lz4_pauses)
{
	uint32_t how;

	for (int i = 0; i < 8; i++) {
		noise(blk, 400 + (uint64_t)i);
		alex_codec_pack(db, blk, 0, out, &how);
		cr_assert_eq(how, 0);
	}
	leaf(blk, 0, 2, 200);
	alex_codec_pack(db, blk, 0, out, &how);
	cr_expect_eq(how, ALEX_BLK_GAP);
}

/* GAP bytes are checked before they are trusted: a run past the block, an
 * empty run, a stored length that does not match the run, both flags. */
Test(codec, gap_that_does_not_add_up_is_a_bad_block)
{
	uint8_t in[BLK] = { 0 };

	alex_put16(in, 4000);
	alex_put16(in + 2, 97); /* 4000 + 97 > 4096 */
	cr_expect_eq(alex_codec_unpack(in, ALEX_GAP_HDR + BLK - 97, ALEX_BLK_GAP, back),
		     ALEX_EBADBLOCK);
	alex_put16(in, 0);
	alex_put16(in + 2, 0);
	cr_expect_eq(alex_codec_unpack(in, ALEX_GAP_HDR + BLK, ALEX_BLK_GAP, back), ALEX_EBADBLOCK);
	alex_put16(in + 2, 100);
	cr_expect_eq(alex_codec_unpack(in, ALEX_GAP_HDR + BLK - 99, ALEX_BLK_GAP, back),
		     ALEX_EBADBLOCK);
	cr_expect_eq(alex_codec_unpack(in, 3, ALEX_BLK_GAP, back), ALEX_EBADBLOCK);
	cr_expect_eq(alex_codec_unpack(in, ALEX_GAP_HDR + BLK - 100, ALEX_BLK_GAP, back), 0);
	cr_expect_eq(alex_codec_unpack(in, ALEX_GAP_HDR + BLK - 100, ALEX_BLK_GAP | ALEX_BLK_LZ4,
				       back), ALEX_EBADBLOCK);
}
