/* The record codec (record.c) beyond test_format's round trips and bit
 * flips: every rule of format.h that a record with correct crcs can still
 * break -- header slot fields, conditional records, the table entries, the
 * padding -- is refused with the reason the scan reports. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "bytes.h"
#include "crc32c.h"
#include "format.h"
#include "helpers.h"

#define EPOCH 4
#define LSN 40
#define PREV 0xabcdu
#define PATH "/data/app.db-mj0011AABB"

static uint8_t rec[3 * BLK];
static struct alex_rec r;

/* A COMMIT record of one raw block (file 1, block 3) and, if cond, the
 * super-journal path after the table; its crcs all correct. */
static void build(int cond)
{
	uint32_t plen = cond ? (uint32_t)strlen(PATH) : 0;
	struct alex_entry e = { 3, ALEX_FILE_JOURNAL, 0, BLK, 0 };

	memset(rec, 0, sizeof rec);
	memset(&r, 0, sizeof r);
	r.nblocks = 1;
	r.cond_len = plen;
	r.hdr_len = ALEX_REC_FIXED + ALEX_REC_ENTRY + plen;
	r.rec_len = (uint32_t)alex_roundup_block(r.hdr_len + BLK);
	r.epoch = EPOCH;
	r.lsn = LSN;
	r.txn = 12;
	r.flags = ALEX_REC_COMMIT | (cond ? ALEX_REC_COND : 0);
	r.prev_crc = PREV;
	for (int f = 0; f < ALEX_NFILES; f++) {
		r.size[f] = 16 * BLK;
		r.trunc[f] = ALEX_NO_TRUNC;
	}
	fill_block(rec + r.hdr_len, 5, 3);
	e.crc = alex_crc32c(0, rec + r.hdr_len, BLK);
	alex_entry_encode(rec + ALEX_REC_FIXED, &e);
	memcpy(rec + ALEX_REC_FIXED + ALEX_REC_ENTRY, PATH, plen);
	r.table_crc = alex_crc32c(0, rec + ALEX_REC_FIXED, ALEX_REC_ENTRY + plen);
	alex_rec_encode(rec, &r);
}

/* Decode and, if the header holds, check the body: the scan's verdict. */
static int verdict(void)
{
	struct alex_rec d;
	int why = alex_rec_decode(rec, sizeof rec, EPOCH, LSN, PREV, &d);
	return why == ALEX_STOP_NONE ? alex_rec_check_body(rec, &d) : why;
}

/* Re-encode after changing r, so only the rule under test is broken. */
static void reencode(void)
{
	alex_rec_encode(rec, &r);
}

/* Re-seal the table after changing an entry or the path. */
static void reseal_table(void)
{
	r.table_crc = alex_crc32c(0, rec + ALEX_REC_FIXED,
				  (size_t)r.nblocks * ALEX_REC_ENTRY + r.cond_len);
	reencode();
}

Test(record, entry_round_trip_clears_reserved_bytes)
{
	struct alex_entry e = { (1ull << 36) - 1, ALEX_FILE_WAL, ALEX_BLK_LZ4, 1234, 0xfeedf00d },
			  d;
	uint8_t buf[ALEX_REC_ENTRY];

	memset(buf, 0xee, sizeof buf);
	alex_entry_encode(buf, &e);
	cr_expect_eq(buf[10], 0);
	cr_expect_eq(buf[11], 0);
	alex_entry_decode(buf, &d);
	cr_expect_eq(d.block, e.block);
	cr_expect_eq(d.file, e.file);
	cr_expect_eq(d.flags, e.flags);
	cr_expect_eq(d.stored_len, e.stored_len);
	cr_expect_eq(d.crc, e.crc);
	cr_expect_eq(alex_get64(buf), e.block, "little-endian at offset 0");
}

/* A conditional commit round trips, path included; the table crc covers
 * the path, so a changed byte of it is a bad table. */
Test(record, cond_record_round_trips)
{
	struct alex_rec d;

	build(1);
	cr_assert_eq(alex_rec_decode(rec, sizeof rec, EPOCH, LSN, PREV, &d), ALEX_STOP_NONE);
	cr_expect_eq(d.cond_len, strlen(PATH));
	cr_expect_eq(d.flags, ALEX_REC_COMMIT | ALEX_REC_COND);
	cr_expect_eq(alex_rec_check_body(rec, &d), ALEX_STOP_NONE);
	cr_expect_arr_eq(rec + d.hdr_len - d.cond_len, PATH, d.cond_len);
	rec[ALEX_REC_FIXED + ALEX_REC_ENTRY + 3] ^= 1;
	cr_expect_eq(verdict(), ALEX_STOP_BAD_TABLE);
}

/* COND needs COMMIT and a path; a path needs COND; a path is at most
 * ALEX_COND_MAX bytes. */
Test(record, cond_rules)
{
	build(1);
	r.flags = ALEX_REC_COND;
	reencode();
	cr_expect_eq(verdict(), ALEX_STOP_BAD_HEADER, "COND without COMMIT");
	build(1);
	r.flags = ALEX_REC_COMMIT;
	reencode();
	cr_expect_eq(verdict(), ALEX_STOP_BAD_HEADER, "a path without COND");
	build(0);
	r.flags = ALEX_REC_COMMIT | ALEX_REC_COND;
	reencode();
	cr_expect_eq(verdict(), ALEX_STOP_BAD_HEADER, "COND without a path");
	build(1);
	r.cond_len = ALEX_COND_MAX + 1;
	r.hdr_len = ALEX_REC_FIXED + ALEX_REC_ENTRY + r.cond_len;
	r.rec_len = (uint32_t)alex_roundup_block(r.hdr_len + BLK);
	reencode();
	cr_expect_eq(alex_rec_decode(rec, 1 << 20, EPOCH, LSN, PREV, &(struct alex_rec){ 0 }),
		     ALEX_STOP_BAD_HEADER, "path too long");
}

/* Sizes up to 2^48 are valid; one more, in size or trunc, is not;
 * ALEX_NO_TRUNC is the one value above it that is. */
Test(record, file_size_limits)
{
	build(0);
	r.size[0] = ALEX_MAX_FILE;
	r.trunc[2] = ALEX_MAX_FILE;
	reencode();
	cr_expect_eq(verdict(), ALEX_STOP_NONE);
	r.size[0] = ALEX_MAX_FILE + 1;
	reencode();
	cr_expect_eq(verdict(), ALEX_STOP_BAD_HEADER);
	r.size[0] = 0;
	r.trunc[1] = ALEX_MAX_FILE + 1;
	reencode();
	cr_expect_eq(verdict(), ALEX_STOP_BAD_HEADER);
}

/* Where a record ends: less than a block of log left is a truncated
 * record, a damaged magic on an otherwise expected header is named as
 * such, and other bytes (zeros, noise) are the clean end of the log. */
Test(record, end_truncation_and_bad_magic)
{
	struct alex_rec d;

	build(0);
	cr_expect_eq(alex_rec_decode(rec, BLK - 1, EPOCH, LSN, PREV, &d), ALEX_STOP_TRUNCATED);
	cr_expect_eq(alex_rec_decode(rec, 1, EPOCH, LSN, PREV, &d), ALEX_STOP_TRUNCATED);
	rec[0] ^= 0x40;
	cr_expect_eq(verdict(), ALEX_STOP_BAD_MAGIC);
	/* the same damage on a record that is not the expected next one */
	cr_expect_eq(alex_rec_decode(rec, sizeof rec, EPOCH, LSN + 1, PREV, &d), ALEX_STOP_END);
	fill_block(rec, 7, 0);
	cr_expect_eq(verdict(), ALEX_STOP_END);
}

/* A table entry that breaks a rule, with the table crc made right again:
 * the offset of the field in the entry, the value, and the reason. */
struct bad_entry {
	unsigned at, width;
	uint64_t value;
	int why;
};
ParameterizedTestParameters(record, bad_entries)
{
	static struct bad_entry cases[] = {
		{ 8, 1, ALEX_NFILES, ALEX_STOP_BAD_TABLE },           /* no such file */
		{ 9, 1, 8, ALEX_STOP_BAD_TABLE },                     /* unknown block flag */
		{ 9, 1, 4, ALEX_STOP_BAD_TABLE },                     /* a DELTA of 4096 bytes */
		{ 9, 1, 5, ALEX_STOP_BAD_TABLE },                     /* both DELTA and LZ4 */
		{ 9, 1, 3, ALEX_STOP_BAD_TABLE },                     /* both LZ4 and GAP */
		{ 10, 1, 1, ALEX_STOP_BAD_TABLE },                    /* reserved byte */
		{ 11, 1, 1, ALEX_STOP_BAD_TABLE },                    /* reserved byte */
		{ 12, 4, 0, ALEX_STOP_BAD_TABLE },                    /* empty block */
		{ 12, 4, BLK - 1, ALEX_STOP_BAD_TABLE },              /* raw but short */
		{ 12, 4, BLK + 1, ALEX_STOP_BAD_TABLE },              /* longer than a block */
		{ 0, 8, ALEX_MAX_FILE / BLK, ALEX_STOP_BAD_TABLE },   /* past 2^48 */
		{ 16, 4, 0, ALEX_STOP_BAD_BLOCK },                    /* wrong crc */
	};
	return cr_make_param_array(struct bad_entry, cases, sizeof cases / sizeof cases[0]);
}
ParameterizedTest(struct bad_entry *c, record, bad_entries)
{
	uint8_t *e = rec + ALEX_REC_FIXED;

	build(0);
	cr_assert_eq(verdict(), ALEX_STOP_NONE);
	if (c->width == 1)
		e[c->at] = (uint8_t)c->value;
	else if (c->width == 4)
		alex_put32(e + c->at, (uint32_t)c->value);
	else
		alex_put64(e + c->at, c->value);
	reseal_table();
	cr_expect_eq(verdict(), c->why, "entry byte %u = %llu", c->at,
		     (unsigned long long)c->value);
}

/* The last block below 2^48 is valid: the limit is not off by one. */
Test(record, last_block_below_the_limit_is_valid)
{
	build(0);
	alex_put64(rec + ALEX_REC_FIXED, ALEX_MAX_FILE / BLK - 1);
	reseal_table();
	cr_expect_eq(verdict(), ALEX_STOP_NONE);
}

/* A block's stored bytes may not run past the record; every byte
 * after the payload must be zero. */
Test(record, payload_bounds_and_padding)
{
	build(0);
	r.rec_len = BLK; /* the raw block no longer fits */
	reencode();
	struct alex_rec d;
	cr_assert_eq(alex_rec_decode(rec, sizeof rec, EPOCH, LSN, PREV, &d), ALEX_STOP_NONE);
	cr_expect_eq(alex_rec_check_body(rec, &d), ALEX_STOP_BAD_TABLE);

	build(0);
	rec[r.rec_len - 1] = 1;
	cr_expect_eq(verdict(), ALEX_STOP_BAD_PADDING);
	rec[r.rec_len - 1] = 0;
	rec[r.hdr_len + BLK] = 1; /* first padding byte */
	cr_expect_eq(verdict(), ALEX_STOP_BAD_PADDING);
}

/* Header slots: each field the decoder checks, with the crc made right,
 * is refused on its own. */
static void slot(uint8_t *buf, uint32_t version, uint32_t flags)
{
	struct alex_loghdr h = { { 1, 2, 3 }, 9, 100, 0x5a5a, flags, { 0 }, version, 0, 0, 0, 0, 0, 0, 0, 0 };
	alex_loghdr_encode(buf, &h);
}
static void reseal_slot(uint8_t *buf)
{
	alex_put32(buf + 60, alex_crc32c(0, buf, 60));
}

Test(record, header_slot_rules)
{
	uint8_t buf[ALEX_HDR_SLOT_USED];
	struct alex_loghdr g;

	slot(buf, 0, ALEX_HDR_FENCED);
	cr_assert_eq(alex_loghdr_decode(buf, &g), 0);
	cr_expect_eq(g.version, ALEX_FORMAT_NEW, "0 encodes as the current version");
	cr_expect_eq(g.flags, ALEX_HDR_BASE | ALEX_HDR_FENCED);

	slot(buf, ALEX_FORMAT_V1, 0);
	cr_assert_eq(alex_loghdr_decode(buf, &g), 0);
	cr_expect_eq(g.version, ALEX_FORMAT_V1, "format 1 is read and kept");
	slot(buf, ALEX_FORMAT_V1, ALEX_HDR_FENCED);
	cr_expect_eq(alex_loghdr_decode(buf, &g), ALEX_ECORRUPT, "format 1 is never fenced");

	slot(buf, 0, 4);
	cr_expect_eq(alex_loghdr_decode(buf, &g), ALEX_ECORRUPT, "unknown flag");
	slot(buf, 0, 0);
	alex_put32(buf + 12, 8192);
	reseal_slot(buf);
	cr_expect_eq(alex_loghdr_decode(buf, &g), ALEX_ECORRUPT, "another block size");
	slot(buf, 0, 0);
	alex_put64(buf + 32, 0);
	reseal_slot(buf);
	cr_expect_eq(alex_loghdr_decode(buf, &g), ALEX_ECORRUPT, "epoch 0");
	slot(buf, 0, 0);
	buf[64 + 50] ^= 1;
	cr_expect_eq(alex_loghdr_decode(buf, &g), ALEX_ECORRUPT, "base copy vs base_crc");
	slot(buf, 0, 0);
	buf[7] = '!';
	reseal_slot(buf);
	cr_expect_eq(alex_loghdr_decode(buf, &g), ALEX_ECORRUPT, "magic");
	slot(buf, ALEX_FORMAT_V2, ALEX_HDR_FENCED);
	cr_assert_eq(alex_loghdr_decode(buf, &g), 0);
	cr_expect_eq(g.version, ALEX_FORMAT_V2, "format 2 (no GAP blocks) is read and kept");
	slot(buf, ALEX_FORMAT_MAX + 1, 0);
	cr_expect_eq(alex_loghdr_decode(buf, &g), ALEX_EVERSION);
	/* format 5 is the encrypted one, and only it says so */
	slot(buf, ALEX_FORMAT_XTS, ALEX_HDR_XTS);
	cr_assert_eq(alex_loghdr_decode(buf, &g), 0);
	cr_expect_eq(g.version, ALEX_FORMAT_XTS);
	cr_expect(g.flags & ALEX_HDR_XTS);
	slot(buf, ALEX_FORMAT_XTS, 0);
	cr_expect_eq(alex_loghdr_decode(buf, &g), ALEX_ECORRUPT, "format 5 in clear");
	slot(buf, ALEX_FORMAT_VERSION, ALEX_HDR_XTS);
	cr_expect_eq(alex_loghdr_decode(buf, &g), ALEX_ECORRUPT, "format 4 encrypted");
	slot(buf, ALEX_FORMAT_V6, ALEX_HDR_XTS);
	cr_expect_eq(alex_loghdr_decode(buf, &g), ALEX_ECORRUPT, "format 6 encrypted");
	slot(buf, ALEX_FORMAT_V6, ALEX_HDR_FENCED);
	cr_assert_eq(alex_loghdr_decode(buf, &g), 0);
	cr_expect_eq(g.version, ALEX_FORMAT_V6, "format 6: records on sectors");
}

/* A GAP entry passes the body check only when its stored header adds up:
 * the block crc holds either way, so the check is the format's own. */
Test(record, gap_block_must_add_up)
{
	uint8_t rec[ALEX_BLOCK] = { 0 };
	struct alex_rec r = { 0 };
	struct alex_entry e = { 3, ALEX_FILE_DB, ALEX_BLK_GAP, ALEX_GAP_HDR + 96, 0 };
	uint32_t hdr_len = ALEX_REC_FIXED + ALEX_REC_ENTRY;

	for (int bad = 0; bad < 3; bad++) {
		memset(rec, 0, sizeof rec);
		alex_put16(rec + hdr_len, bad == 1 ? 100 : 50);   /* off */
		alex_put16(rec + hdr_len + 2, bad == 2 ? 4001 : 4000); /* run */
		for (int i = 0; i < 96; i++)
			rec[hdr_len + ALEX_GAP_HDR + i] = (uint8_t)(i + 1);
		e.crc = alex_crc32c(0, rec + hdr_len, e.stored_len);
		alex_entry_encode(rec + ALEX_REC_FIXED, &e);
		r = (struct alex_rec){ .hdr_len = hdr_len, .rec_len = ALEX_BLOCK, .nblocks = 1 };
		r.table_crc = alex_crc32c(0, rec + ALEX_REC_FIXED, ALEX_REC_ENTRY);
		enum alex_stop want = bad ? ALEX_STOP_BAD_BLOCK : ALEX_STOP_NONE;
		cr_expect_eq(alex_rec_check_body(rec, &r), want, "case %d", bad);
	}
	rec[ALEX_REC_FIXED + 9] = ALEX_BLK_GAP | ALEX_BLK_LZ4;
	r.table_crc = alex_crc32c(0, rec + ALEX_REC_FIXED, ALEX_REC_ENTRY);
	cr_expect_eq(alex_rec_check_body(rec, &r), ALEX_STOP_BAD_TABLE, "both flags");
}

/* A slot encodes the same bytes it decodes from (tools rewrite slots). */
Test(record, header_slot_decode_encode_is_stable)
{
	uint8_t a[ALEX_HDR_SLOT_USED], b[ALEX_HDR_SLOT_USED];
	struct alex_loghdr g;

	slot(a, ALEX_FORMAT_V1, 0);
	memcpy(a + 64, "SQLite format 3", 16);
	alex_put32(a + 56, alex_crc32c(0, a + 64, ALEX_BASE_HDR));
	reseal_slot(a);
	cr_assert_eq(alex_loghdr_decode(a, &g), 0);
	alex_loghdr_encode(b, &g);
	cr_expect_arr_eq(a, b, sizeof a);
}

/* A DELTA entry is a format-7 one: in a log of an older version, or an
 * encrypted one, the same bytes are a bad table, not a block. */
Test(record, delta_block_only_in_format_7)
{
	uint8_t rec[ALEX_BLOCK] = { 0 };
	uint32_t hdr_len = ALEX_REC_FIXED + ALEX_REC_ENTRY, len = ALEX_DELTA_HDR + 4 + 8;
	struct alex_entry e = { 3, ALEX_FILE_DB, ALEX_BLK_DELTA, len, 0 };
	uint8_t *d = rec + hdr_len;

	alex_put64(d, ALEX_LOG_DATA);
	alex_put32(d + 8, 100);
	alex_put32(d + 12, 7);
	d[16] = ALEX_BLK_GAP;
	d[17] = 1;
	alex_put16(d + ALEX_DELTA_HDR, 24);
	alex_put16(d + ALEX_DELTA_HDR + 2, 8);
	memset(d + ALEX_DELTA_HDR + 4, 0xab, 8);
	e.crc = alex_crc32c(0, d, len);
	alex_entry_encode(rec + ALEX_REC_FIXED, &e);
	struct alex_rec r = { .hdr_len = hdr_len, .rec_len = ALEX_SECTOR, .nblocks = 1 };
	r.table_crc = alex_crc32c(0, rec + ALEX_REC_FIXED, ALEX_REC_ENTRY);
	cr_expect_eq(alex_rec_check_in(rec, &r, ALEX_FORMAT_V7), ALEX_STOP_NONE);
	cr_expect_eq(alex_rec_check_body(rec, &r), ALEX_STOP_NONE, "the current version");
	cr_expect_eq(alex_rec_check_in(rec, &r, ALEX_FORMAT_V6), ALEX_STOP_BAD_TABLE);
	cr_expect_eq(alex_rec_check_in(rec, &r, ALEX_FORMAT_V3), ALEX_STOP_BAD_TABLE);
	cr_expect_eq(alex_rec_check_in(rec, &r, ALEX_FORMAT_XTS), ALEX_STOP_BAD_TABLE);
	d[17] = 2; /* depth 2 over a whole block: the crc holds, the form does not */
	e.crc = alex_crc32c(0, d, len);
	alex_entry_encode(rec + ALEX_REC_FIXED, &e);
	r.table_crc = alex_crc32c(0, rec + ALEX_REC_FIXED, ALEX_REC_ENTRY);
	cr_expect_eq(alex_rec_check_in(rec, &r, ALEX_FORMAT_V7), ALEX_STOP_BAD_BLOCK);
}
