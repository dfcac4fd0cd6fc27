/*
 * fuzz_decode - libFuzzer target for the pure record decoder (record.c) and
 * the per-block LZ4 codec (codec.c), without an engine around them.
 *
 * Input: one control byte, then
 *   bits 7 and 3 clear: the bytes of one record.  They are put in a buffer of
 *     exactly `room` bytes (rounded up to a block unless bit 2 is set), so
 *     ASan sees any read past what the log would hold.  Bit 0 repairs the
 *     crcs, lengths and chain fields first (as fuzz_recover does): without it
 *     mutations hardly ever get past hdr_crc.  Bit 1 expects a fixed
 *     epoch/lsn/prev_crc instead of the record's own, for the STALE path.
 *   bit 3 set (7 clear): the used bytes of a header slot (bit 0: make its
 *     crc hold); a slot that decodes must encode back to the same fields.
 *   bit 7 set: one pct byte, one mode byte (compress mode, where a b-tree
 *     header would be, a zero gap carved in, a header naming it), a block
 *     of data: alex_codec_pack must round-trip through alex_codec_unpack,
 *     a GAP block must hold what format.h says, and unpacking the raw input
 *     bytes must fail cleanly (and succeed as GAP exactly when its header
 *     is consistent); the DELTA from the first block to the last must put
 *     the last back, and the input bytes taken as a DELTA that checks must
 *     apply within the block.
 * Beyond "no crash", it checks what format.h promises of a record declared
 * valid: every documented bound holds, the encoders reproduce its bytes,
 * and each block's stored bytes decode (raw ones always).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "crc32c.h"
#include "format.h"
#include "codec.h"
#include "db.h"
#include "delta.h"

#define EPOCH 1u
#define LSN 1u
#define SALT 0x5eedu

#define check(c) do { if (!(c)) abort(); } while (0)

/* Makes the header, table and block crcs and the chain fields hold. */
static void repair(uint8_t *r, size_t len)
{
	if (len < ALEX_BLOCK || alex_get32(r) != ALEX_REC_MAGIC)
		return;
	uint32_t n = alex_get32(r + 12) % 64; /* the table stays in the first block */
	uint32_t hdr_len = ALEX_REC_FIXED + ALEX_REC_ENTRY * n;
	uint32_t rec_len = alex_get32(r + 8);
	uint64_t pos = hdr_len;

	alex_put32(r + 4, hdr_len);
	alex_put32(r + 12, n);
	alex_put64(r + 16, EPOCH);
	alex_put64(r + 24, LSN);
	alex_put32(r + 48, SALT);
	alex_put32(r + 104, 0);
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *e = r + ALEX_REC_FIXED + i * ALEX_REC_ENTRY;
		uint32_t sl = alex_get32(e + 12);
		if (sl == 0 || sl > ALEX_BLOCK || pos + sl > len || pos + sl > rec_len)
			break;
		alex_put32(e + 16, alex_crc32c(0, r + pos, sl));
		pos += sl;
	}
	alex_put32(r + 52, alex_crc32c(0, r + ALEX_REC_FIXED, (size_t)n * ALEX_REC_ENTRY));
	alex_put32(r + 108, alex_crc32c(0, r, 108));
}

/* A GAP block decoded: the stored bytes around a run of zeros where the
 * stored header says (format.h), by the format's words, not the codec's. */
static void check_gap(const uint8_t *in, uint32_t len, const uint8_t *blk)
{
	uint32_t off = (uint32_t)in[0] | (uint32_t)in[1] << 8;
	uint32_t run = (uint32_t)in[2] | (uint32_t)in[3] << 8;
	check(run >= 1 && off + run <= ALEX_BLOCK && len == 4 + ALEX_BLOCK - run);
	check(memcmp(blk, in + 4, off) == 0);
	for (uint32_t i = off; i < off + run; i++)
		check(blk[i] == 0);
	check(memcmp(blk + off + run, in + 4 + off, ALEX_BLOCK - off - run) == 0);
}

/* The body of a record alex_rec_check_body accepted, entry by entry. */
static void check_blocks(const uint8_t *rec, const struct alex_rec *r)
{
	uint8_t blk[ALEX_BLOCK], enc[ALEX_REC_ENTRY];
	uint64_t pos = r->hdr_len;

	for (uint32_t i = 0; i < r->nblocks; i++) {
		const uint8_t *raw = rec + ALEX_REC_FIXED + (size_t)i * ALEX_REC_ENTRY;
		struct alex_entry e;
		alex_entry_decode(raw, &e);
		alex_entry_encode(enc, &e);
		check(memcmp(enc, raw, sizeof enc) == 0);
		check(e.file < ALEX_NFILES && e.block < (ALEX_MAX_FILE >> ALEX_BLOCK_SHIFT));
		check(e.stored_len >= 1 && e.stored_len <= ALEX_BLOCK);
		check(pos + e.stored_len <= r->rec_len);
		check(alex_crc32c(0, rec + pos, e.stored_len) == e.crc);
		/* a crc-valid LZ4 block may still be garbage: that is a read
		 * error (EBADBLOCK), never anything worse */
		uint8_t *in = malloc(e.stored_len); /* exact: catches over-reads */
		check(in);
		memcpy(in, rec + pos, e.stored_len);
		if (e.flags == ALEX_BLK_DELTA) {
			/* its prev is read when the block is; the runs fit */
			struct alex_loc prev;
			uint32_t depth;
			check(alex_delta_check(in, e.stored_len, &prev, &depth));
			check(depth >= 1 && depth <= ALEX_DELTA_DEPTH && prev.len <= ALEX_BLOCK);
			memset(blk, 0, sizeof blk);
			alex_delta_apply(in, e.stored_len, blk);
			free(in);
			pos += e.stored_len;
			continue;
		}
		int rc = alex_codec_unpack(in, e.stored_len, e.flags, blk);
		check(rc == 0 || (e.flags == ALEX_BLK_LZ4 && rc == ALEX_EBADBLOCK));
		if (!e.flags)
			check(memcmp(blk, in, ALEX_BLOCK) == 0);
		if (e.flags == ALEX_BLK_GAP)
			check_gap(in, e.stored_len, blk);
		free(in);
		pos += e.stored_len;
	}
	for (; pos < r->rec_len; pos++)
		check(rec[pos] == 0);
}

static void fuzz_record(uint8_t ctl, const uint8_t *data, size_t size)
{
	uint64_t room = ctl & 4 ? size : alex_roundup_block(size);
	uint8_t *buf = calloc(1, room ? room : 1);
	struct alex_rec r;
	uint8_t enc[ALEX_REC_FIXED];

	check(buf);
	memcpy(buf, data, size);
	if (ctl & 1)
		repair(buf, room);
	uint64_t epoch = EPOCH, lsn = LSN;
	uint32_t prev = SALT;
	if (!(ctl & 2) && room >= ALEX_REC_FIXED) {
		epoch = alex_get64(buf + 16);
		lsn = alex_get64(buf + 24);
		prev = alex_get32(buf + 48);
	}
	int v = alex_rec_decode(buf, room, epoch, lsn, prev, &r);
	check(v == ALEX_STOP_NONE || (v >= ALEX_STOP_END && v <= ALEX_STOP_TRUNCATED));
	if (v != ALEX_STOP_NONE)
		goto out;
	check(r.epoch == epoch && r.lsn == lsn && r.prev_crc == prev);
	check(r.nblocks <= ALEX_REC_MAX_BLOCKS);
	check(r.cond_len <= ALEX_COND_MAX);
	check(r.hdr_len == ALEX_REC_FIXED + ALEX_REC_ENTRY * r.nblocks + r.cond_len);
	/* a condition only on a commit, and only with its path */
	check(!(r.flags & ALEX_REC_COND) == !r.cond_len);
	check(!(r.flags & ALEX_REC_COND) || (r.flags & ALEX_REC_COMMIT));
	check(r.rec_len % ALEX_SECTOR == 0 && r.rec_len >= r.hdr_len);
	check(r.rec_len <= ALEX_REC_MAX && r.rec_len <= room);
	check((r.flags & ~(ALEX_REC_COMMIT | ALEX_REC_COND | ALEX_REC_CARRY)) == 0);
	for (int f = 0; f < ALEX_NFILES; f++)
		check(r.size[f] <= ALEX_MAX_FILE &&
		      (r.trunc[f] == ALEX_NO_TRUNC || r.trunc[f] <= ALEX_MAX_FILE));
	uint32_t crc = r.hdr_crc;
	alex_rec_encode(enc, &r);
	check(r.hdr_crc == crc && memcmp(enc, buf, sizeof enc) == 0);

	/* recovery hands check_body a buffer of at least rec_len bytes; give
	 * it exactly that, so nothing past the record can be read or matter */
	uint8_t *rec = malloc(r.rec_len);
	check(rec);
	memcpy(rec, buf, r.rec_len);
	check(alex_rec_decode(rec, r.rec_len, epoch, lsn, prev, &r) == ALEX_STOP_NONE);
	v = alex_rec_check_body(rec, &r);
	check(v == ALEX_STOP_NONE || (v >= ALEX_STOP_BAD_TABLE && v <= ALEX_STOP_BAD_PADDING));
	if (v == ALEX_STOP_NONE)
		check_blocks(rec, &r);
	free(rec);
out:
	free(buf);
}

static void fuzz_slot(uint8_t ctl, const uint8_t *data, size_t size)
{
	uint8_t in[ALEX_HDR_SLOT_USED] = { 0 }, out[ALEX_HDR_SLOT_USED];
	struct alex_loghdr h;

	memcpy(in, data, size < sizeof in ? size : sizeof in);
	if (ctl & 1)
		alex_put32(in + 60, alex_crc32c(0, in, 60));
	int rc = alex_loghdr_decode(in, &h);
	check(rc == 0 || rc == ALEX_ECORRUPT || rc == ALEX_EVERSION);
	if (rc)
		return;
	check(h.epoch != 0 && h.flags == alex_get32(in + 52));
	alex_loghdr_encode(out, &h);
	/* the fields before the flags come back as they were; the encoder may
	 * add flag bits (the base copy), and when all of them were set already
	 * the whole slot must come back */
	check(memcmp(out, in, 52) == 0);
	uint32_t fin = alex_get32(in + 52), fout = alex_get32(out + 52);
	check((fout & fin) == fin);
#ifdef ALEX_HDR_BASE /* before it, bytes 56..59 were an unchecked reserved word */
	if (fout == fin)
		check(memcmp(out, in, sizeof in) == 0);
#endif
}

static void fuzz_codec(const uint8_t *data, size_t size)
{
	if (size < 2)
		return;
	struct alex_db *db = calloc(1, sizeof *db);
	uint8_t blk[ALEX_BLOCK] = { 0 }, back[ALEX_BLOCK];
	uint8_t *out = malloc(ALEX_BLOCK);
	size_t n = size - 2 < ALEX_BLOCK ? size - 2 : ALEX_BLOCK;

	check(db && out);
	alex_config_default(&db->cfg);
	db->cfg.compress_min_saving_pct = data[0] % 91; /* what alex_open accepts */
	db->cfg.compress = (enum alex_compress)(data[1] % 3);
	int room = (int)(ALEX_BLOCK - ALEX_BLOCK * db->cfg.compress_min_saving_pct / 100);
	memcpy(blk, data + 2, n);
	/* several packs, so AUTO's miss counting and skipping run too */
	/* where a b-tree header would be: none, a page's start, page 1's */
	int hdr_at = (int)(data[1] / 3 % 3) - 1;
	hdr_at = hdr_at > 0 ? 100 : hdr_at;
	if (data[1] / 9 % 2 && n >= 6) {
		/* a zero gap, and (bit 5) a b-tree leaf header that names it:
		 * random bytes hardly ever make either */
		uint32_t s = alex_get16(data + 2) % ALEX_BLOCK;
		uint32_t e = s + alex_get16(data + 4) % (ALEX_BLOCK - s + 1);
		memset(blk + s, 0, e - s);
		uint32_t h = hdr_at > 0 ? 100 : 0;
		if (data[1] & 32 && s >= h + 8) {
			blk[h] = 13;
			blk[h + 3] = (uint8_t)((s - h - 8) / 2 >> 8);
			blk[h + 4] = (uint8_t)((s - h - 8) / 2);
			blk[h + 5] = (uint8_t)(e >> 8);
			blk[h + 6] = (uint8_t)e;
		}
	}
	uint8_t first[ALEX_BLOCK], *delta = malloc(ALEX_DELTA_MAX);
	check(delta);
	memcpy(first, blk, ALEX_BLOCK);
	for (int k = 0; k < 12; k++) {
		uint32_t how;
		if (k)
			blk[(k * 997) % ALEX_BLOCK] ^= (uint8_t)k;
		uint32_t len = alex_codec_pack(db, blk, hdr_at, out, &how);
		check(len >= 1 && len <= ALEX_BLOCK);
		if (how)
			check(db->cfg.compress != ALEX_COMPRESS_OFF && (int)len <= room);
		else
			check(len == ALEX_BLOCK && memcmp(out, blk, ALEX_BLOCK) == 0);
		check(how == 0 || how == ALEX_BLK_LZ4 || (how == ALEX_BLK_GAP && hdr_at >= 0));
		check(alex_codec_unpack(out, len, how, back) == 0);
		check(memcmp(back, blk, ALEX_BLOCK) == 0);
		if (how == ALEX_BLK_GAP)
			check_gap(out, len, back);
	}
	/* the delta from the first block to the last puts the last back, or
	 * does not fit and leaves zeros */
	static const struct alex_loc prev = { ALEX_LOG_DATA, 100, 7, ALEX_BLK_GAP, 1 };
	uint32_t dl = alex_delta_make(first, blk, &prev, 1, delta);
	if (dl) {
		struct alex_loc p;
		uint32_t depth;
		check(dl >= ALEX_DELTA_HDR && dl <= ALEX_DELTA_MAX);
		check(alex_delta_check(delta, dl, &p, &depth) && depth == 1 && p.off == prev.off);
		memcpy(back, first, ALEX_BLOCK);
		alex_delta_apply(delta, dl, back);
		check(memcmp(back, blk, ALEX_BLOCK) == 0);
	} else {
		for (uint32_t i = 0; i < ALEX_DELTA_MAX; i++)
			check(delta[i] == 0);
	}
	/* ... and rooted at the database file's block (format 9) */
	static const struct alex_loc root = { 5 * ALEX_BLOCK, ALEX_BLOCK, 0, ALEX_DELTA_BASE, 0 };
	if ((dl = alex_delta_make(first, blk, &root, 1, delta))) {
		struct alex_loc p;
		uint32_t depth;
		check(alex_delta_check(delta, dl, &p, &depth) && depth == 1 &&
		      p.flags == ALEX_DELTA_BASE && p.off == root.off && p.len == ALEX_BLOCK);
		memcpy(back, first, ALEX_BLOCK);
		alex_delta_apply(delta, dl, back);
		check(memcmp(back, blk, ALEX_BLOCK) == 0);
		memset(delta, 0, ALEX_DELTA_MAX);
	}
	free(delta);
	/* arbitrary stored bytes, as a block entry could name them (1..4096,
	 * copied to an exact buffer so an over-read shows) */
	uint8_t *in = malloc(n ? n : 1);
	check(in);
	memcpy(in, data + 2, n);
	for (uint32_t flags = 0; n && flags <= ALEX_BLK_GAP + 1; flags++) {
		int rc = alex_codec_unpack(in, (uint32_t)n, flags, back);
		check(rc == 0 || rc == ALEX_EBADBLOCK);
		if (!flags)
			check(rc == (n == ALEX_BLOCK ? 0 : ALEX_EBADBLOCK));
		if (flags > ALEX_BLK_GAP)
			check(rc == ALEX_EBADBLOCK);
		if (flags == ALEX_BLK_GAP && rc == 0)
			check_gap(in, (uint32_t)n, back);
		if (flags == ALEX_BLK_GAP + 1) { /* and as a delta: runs stay in the block */
			struct alex_loc p;
			uint32_t depth;
			if (alex_delta_check(in, (uint32_t)n, &p, &depth))
				alex_delta_apply(in, (uint32_t)n, back);
		}
		if (flags == ALEX_BLK_GAP && n >= 4) {
			uint32_t run = (uint32_t)in[2] | (uint32_t)in[3] << 8;
			uint32_t off = (uint32_t)in[0] | (uint32_t)in[1] << 8;
			check((rc == 0) == (run >= 1 && off + run <= ALEX_BLOCK &&
					    n == 4 + ALEX_BLOCK - run));
		}
	}
	free(in);
	alex_codec_free(db);
	free(out);
	free(db);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > (8u << 20))
		return 0;
	if (data[0] & 0x80)
		fuzz_codec(data + 1, size - 1);
	else if (data[0] & 8)
		fuzz_slot(data[0], data + 1, size - 1);
	else
		fuzz_record(data[0], data + 1, size - 1);
	return 0;
}
