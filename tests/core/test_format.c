/* Round trips of the log header and records, and each way decoding refuses
 * bytes that are not the next valid record. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "bytes.h"
#include "crc32c.h"
#include "format.h"
#include "helpers.h"

Test(format, header_round_trip)
{
	struct alex_loghdr h = { { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 },
				 7, 1234, 0xdeadbeef, 0, { 0 }, 0, 5 * BLK, 0, 0, 0, 0, 0, 0, 0 },
			   g;
	uint8_t buf[ALEX_HDR_SLOT_USED];

	memcpy(h.base, "SQLite format 3", 16); /* the base copy is checked too */
	h.base[99] = 7;
	alex_loghdr_encode(buf, &h);
	cr_assert_eq(alex_loghdr_decode(buf, &g), 0);
	cr_expect_arr_eq(g.uuid, h.uuid, 16);
	cr_expect_eq(g.epoch, 7);
	cr_expect_eq(g.start_lsn, 1234);
	cr_expect_eq(g.salt, 0xdeadbeefu);
	cr_expect(g.flags & ALEX_HDR_BASE);
	cr_expect_arr_eq(g.base, h.base, ALEX_BASE_HDR);
	cr_expect_eq(g.data_off, 5 * BLK);
	cr_expect_eq(g.version, ALEX_FORMAT_NEW);
	for (size_t i = 0; i < sizeof buf; i++)
		for (int bit = 0; bit < 8; bit++) {
			buf[i] ^= (uint8_t)(1 << bit);
			cr_assert_neq(alex_loghdr_decode(buf, &g), 0, "byte %zu bit %d", i, bit);
			buf[i] ^= (uint8_t)(1 << bit);
		}
}

Test(format, header_other_version_is_named)
{
	struct alex_loghdr h = { { 0 }, 1, 1, 1, 0, { 0 }, 0, 0, 0, 0, 0, 0, 0, 0, 0 }, g;
	uint8_t buf[ALEX_HDR_SLOT_USED];

	alex_loghdr_encode(buf, &h);
	alex_put32(buf + 8, 99);
	alex_put32(buf + 60, alex_crc32c(0, buf, 60));
	cr_expect_eq(alex_loghdr_decode(buf, &g), ALEX_EVERSION);
}

/* Format 4's data_off: covered by base_crc, a block multiple past the
 * header slots; a format-3 slot has none, and its epoch starts at 8192. */
Test(format, header_data_off)
{
	struct alex_loghdr h = { { 4 }, 2, 1, 1, 0, { 0 }, 0, 3 * BLK, 0, 0, 0, 0, 0, 0, 0 }, g;
	uint8_t buf[ALEX_HDR_SLOT_USED];
	static const uint64_t bad[] = { 0, BLK, 3 * BLK + 512, 1ull << 48 };

	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		alex_loghdr_encode(buf, &h);
		alex_put64(buf + 164, bad[i]);
		alex_put32(buf + 56, alex_crc32c(0, buf + 64, ALEX_BASE_HDR + 8));
		alex_put32(buf + 60, alex_crc32c(0, buf, 60));
		cr_expect_eq(alex_loghdr_decode(buf, &g), ALEX_ECORRUPT, "data_off %llu",
			     (unsigned long long)bad[i]);
	}
	h.version = ALEX_FORMAT_V3;
	alex_loghdr_encode(buf, &h);
	for (int i = 164; i < 172; i++)
		cr_expect_eq(buf[i], 0, "a format-3 slot ends at 164");
	cr_assert_eq(alex_loghdr_decode(buf, &g), 0);
	cr_expect_eq(g.version, ALEX_FORMAT_V3);
	cr_expect_eq(g.data_off, ALEX_LOG_DATA);
}

/* A two-block record: one compressed-looking, one raw. */
static uint32_t build(uint8_t *rec, struct alex_rec *r)
{
	struct alex_entry e[2] = { { 5, 0, ALEX_BLK_LZ4, 100, 0 }, { 9, 2, 0, BLK, 0 } };
	uint32_t pos = ALEX_REC_FIXED + 2 * ALEX_REC_ENTRY;

	memset(rec, 0, 3 * BLK);
	for (int i = 0; i < 2; i++) {
		memset(rec + pos, 'a' + i, e[i].stored_len);
		e[i].crc = alex_crc32c(0, rec + pos, e[i].stored_len);
		alex_entry_encode(rec + ALEX_REC_FIXED + i * ALEX_REC_ENTRY, &e[i]);
		pos += e[i].stored_len;
	}
	memset(r, 0, sizeof *r);
	r->hdr_len = ALEX_REC_FIXED + 2 * ALEX_REC_ENTRY;
	r->rec_len = (uint32_t)alex_roundup_block(pos);
	r->nblocks = 2;
	r->epoch = 3;
	r->lsn = 17;
	r->txn = 8;
	r->flags = ALEX_REC_COMMIT;
	r->nonce = 99;
	r->prev_crc = 0x1234;
	r->table_crc = alex_crc32c(0, rec + ALEX_REC_FIXED, 2 * ALEX_REC_ENTRY);
	for (int f = 0; f < ALEX_NFILES; f++) {
		r->size[f] = 1000u * (unsigned)f;
		r->trunc[f] = f == 1 ? 50 : ALEX_NO_TRUNC;
	}
	alex_rec_encode(rec, r);
	return r->rec_len;
}

Test(format, record_round_trip)
{
	static uint8_t rec[3 * BLK];
	struct alex_rec r, d;
	uint32_t len = build(rec, &r);

	cr_assert_eq(len, 2 * BLK);
	cr_assert_eq(alex_rec_decode(rec, len, 3, 17, 0x1234, &d), ALEX_STOP_NONE);
	cr_expect_eq(d.nblocks, 2);
	cr_expect_eq(d.txn, 8);
	cr_expect_eq(d.flags, ALEX_REC_COMMIT);
	cr_expect_eq(d.size[2], 2000);
	cr_expect_eq(d.trunc[1], 50);
	cr_expect_eq(d.trunc[0], ALEX_NO_TRUNC);
	cr_expect_eq(d.hdr_crc, r.hdr_crc);
	cr_expect_eq(alex_rec_check_body(rec, &d), ALEX_STOP_NONE);
	struct alex_entry e;
	alex_entry_decode(rec + ALEX_REC_FIXED + ALEX_REC_ENTRY, &e);
	cr_expect_eq(e.block, 9);
	cr_expect_eq(e.file, 2);
	cr_expect_eq(e.stored_len, BLK);
}

Test(format, continuity_is_checked)
{
	static uint8_t rec[3 * BLK];
	struct alex_rec r, d;
	uint32_t len = build(rec, &r);

	cr_expect_eq(alex_rec_decode(rec, len, 4, 17, 0x1234, &d), ALEX_STOP_STALE);
	cr_expect_eq(alex_rec_decode(rec, len, 3, 18, 0x1234, &d), ALEX_STOP_STALE);
	cr_expect_eq(alex_rec_decode(rec, len, 3, 17, 0x1235, &d), ALEX_STOP_STALE);
	cr_expect_eq(alex_rec_decode(rec, len - 1, 3, 17, 0x1234, &d), ALEX_STOP_TRUNCATED);
	cr_expect_eq(alex_rec_decode(rec, 0, 3, 17, 0x1234, &d), ALEX_STOP_END);
	memset(rec, 0, BLK);
	cr_expect_eq(alex_rec_decode(rec, len, 3, 17, 0x1234, &d), ALEX_STOP_END);
}

/* Every single-bit flip anywhere in the record is caught by decode or by
 * the body check, and never read as a valid record. */
Test(format, every_bit_flip_is_detected)
{
	static uint8_t rec[3 * BLK];
	struct alex_rec r, d;
	uint32_t len = build(rec, &r);

	for (uint32_t i = 0; i < len; i++)
		for (int bit = 0; bit < 8; bit++) {
			rec[i] ^= (uint8_t)(1 << bit);
			int why = alex_rec_decode(rec, len, 3, 17, 0x1234, &d);
			if (why == ALEX_STOP_NONE)
				why = alex_rec_check_body(rec, &d);
			cr_assert(why > ALEX_STOP_STALE, "flip at byte %u bit %d read as %s", i, bit,
				  why == ALEX_STOP_NONE ? "valid" : alex_stop_name((enum alex_stop)why));
			rec[i] ^= (uint8_t)(1 << bit);
		}
}

/* Headers whose crc is right but whose lengths are impossible. */
struct bad_len { uint32_t off, value; };
ParameterizedTestParameters(format, impossible_lengths)
{
	static struct bad_len cases[] = {
		{ 4, 0 },                     /* hdr_len too small */
		{ 4, 1u << 30 },              /* hdr_len huge */
		{ 8, 4095 },                  /* rec_len not block aligned */
		{ 8, 0xfffff000u },           /* rec_len beyond ALEX_REC_MAX */
		{ 12, 0xffffffffu },          /* nblocks absurd */
		{ 40, 2 },                    /* unknown flag */
	};
	return cr_make_param_array(struct bad_len, cases, sizeof cases / sizeof cases[0]);
}
ParameterizedTest(struct bad_len *c, format, impossible_lengths)
{
	static uint8_t rec[3 * BLK];
	struct alex_rec r, d;
	uint32_t len = build(rec, &r);

	alex_put32(rec + c->off, c->value);
	alex_put32(rec + 108, alex_crc32c(0, rec, 108));
	cr_expect_eq(alex_rec_decode(rec, 1ull << 40, 3, 17, 0x1234, &d), ALEX_STOP_BAD_HEADER,
		     "field at %u = %u", c->off, c->value);
	(void)len;
}

/* Logs from before the base copy: flags 0, bytes 56..63 and the rest zero
 * but the crc; they decode, with no base to check against. */
Test(format, header_without_base_copy_decodes)
{
	struct alex_loghdr h = { { 9 }, 3, 5, 8, 0, { 0 }, ALEX_FORMAT_V2, 0, 0, 0, 0, 0, 0, 0, 0 }, g;
	uint8_t buf[ALEX_HDR_SLOT_USED];

	alex_loghdr_encode(buf, &h);
	memset(buf + 52, 0, ALEX_HDR_SLOT_USED - 52);
	alex_put32(buf + 60, alex_crc32c(0, buf, 60));
	cr_assert_eq(alex_loghdr_decode(buf, &g), 0);
	cr_expect_eq(g.flags & ALEX_HDR_BASE, 0u);
	cr_expect_eq(g.epoch, 3);
}
