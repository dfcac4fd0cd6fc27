/* record.c - encode and decode log headers and records (format.h).  Pure:
 * no I/O, no allocation, safe on any input; the fuzzer drives it directly. */
#include "format.h"

#include <string.h>

#include "bytes.h"
#include "crc32c.h"
#include "delta.h"

void alex_loghdr_encode(uint8_t out[ALEX_HDR_SLOT_USED], const struct alex_loghdr *h)
{
	memset(out, 0, ALEX_HDR_SLOT_USED);
	memcpy(out, ALEX_LOG_MAGIC, 8);
	uint32_t v = h->version ? h->version : ALEX_FORMAT_NEW;
	alex_put32(out + 8, v);
	alex_put32(out + 12, ALEX_BLOCK);
	memcpy(out + 16, h->uuid, 16);
	alex_put64(out + 32, h->epoch);
	alex_put64(out + 40, h->start_lsn);
	alex_put32(out + 48, h->salt);
	alex_put32(out + 52, h->flags | ALEX_HDR_BASE);
	memcpy(out + 64, h->base, ALEX_BASE_HDR);
	size_t covered = ALEX_BASE_HDR;
	if (v >= ALEX_FORMAT_VERSION) {
		alex_put64(out + 164, h->data_off ? h->data_off : ALEX_LOG_DATA);
		covered += 8;
	}
	if (alex_format_carry(v)) {
		alex_put64(out + 172, alex_hdr_fence_epoch(h));
		alex_put64(out + 180, h->prev_epoch);
		alex_put64(out + 188, h->prev_off);
		alex_put64(out + 196, h->prev_end);
		alex_put64(out + 204, h->prev_lsn);
		alex_put32(out + 212, h->prev_salt);
		covered += 48;
	}
	alex_put32(out + 56, alex_crc32c(0, out + 64, covered));
	alex_put32(out + 60, alex_crc32c(0, out, 60));
}

static void placeholder(uint8_t out[ALEX_HDR_SLOT_USED], uint32_t version)
{
	memset(out, 0, ALEX_HDR_SLOT_USED);
	memcpy(out, ALEX_LOG_MAGIC, 8);
	alex_put32(out + 8, version);
	alex_put32(out + 60, ~alex_crc32c(0, out, 60));
}

/* An encrypted log's placeholder says 4, as it always did: format 5's
 * readers know it.  A log of format 6 or 7 says its version, so that a
 * reader that does not know it refuses the log by either slot. */
void alex_loghdr_placeholder(uint8_t out[ALEX_HDR_SLOT_USED], uint32_t version)
{
	placeholder(out, version == ALEX_FORMAT_V6 || alex_format_deltas(version)
				 ? version : ALEX_FORMAT_VERSION);
}

/* a log of format 3 made its placeholder with its own version */
int alex_loghdr_is_placeholder(const uint8_t in[ALEX_HDR_SLOT_USED])
{
	uint8_t p[ALEX_HDR_SLOT_USED];
	uint32_t v = alex_get32(in + 8);

	if (v != ALEX_FORMAT_V3 && v != ALEX_FORMAT_VERSION && v != ALEX_FORMAT_V6 &&
	    !alex_format_deltas(v))
		return 0;
	placeholder(p, v);
	return memcmp(in, p, sizeof p) == 0;
}

/* Format 10's fields: a fence no later than the epoch; a carried epoch
 * before it whose records lie apart from this epoch's start (0 if none). */
static int decode_carry(const uint8_t *in, struct alex_loghdr *h)
{
	h->fence_epoch = alex_get64(in + 172);
	h->prev_epoch = alex_get64(in + 180);
	h->prev_off = alex_get64(in + 188);
	h->prev_end = alex_get64(in + 196);
	h->prev_lsn = alex_get64(in + 204);
	h->prev_salt = alex_get32(in + 212);
	if (alex_get32(in + 216) || !h->fence_epoch || h->fence_epoch > h->epoch)
		return 1;
	if (!h->prev_epoch)
		return h->prev_off || h->prev_end || h->prev_lsn || h->prev_salt;
	return h->prev_epoch >= h->epoch || h->prev_epoch < h->fence_epoch ||
	       h->prev_off < ALEX_LOG_DATA || h->prev_off % ALEX_BLOCK ||
	       h->prev_end <= h->prev_off || h->prev_end >= ALEX_MAX_FILE || !h->prev_lsn ||
	       h->prev_lsn >= h->start_lsn ||
	       (h->data_off >= h->prev_off && h->data_off < h->prev_end);
}

int alex_loghdr_decode(const uint8_t in[ALEX_HDR_SLOT_USED], struct alex_loghdr *h)
{
	if (memcmp(in, ALEX_LOG_MAGIC, 8) != 0)
		return ALEX_ECORRUPT;
	if (alex_get32(in + 60) != alex_crc32c(0, in, 60))
		return ALEX_ECORRUPT;
	uint32_t version = alex_get32(in + 8), flags = alex_get32(in + 52);
	if (version < ALEX_FORMAT_V1 || version > ALEX_FORMAT_V10)
		return ALEX_EVERSION;
	if (alex_get32(in + 12) != ALEX_BLOCK || alex_get64(in + 32) == 0)
		return ALEX_ECORRUPT;
	if (flags & ~(version == ALEX_FORMAT_V1 ? ALEX_HDR_BASE : ALEX_HDR_BASE | ALEX_HDR_FENCED) &
	    ~(version == ALEX_FORMAT_XTS ? ALEX_HDR_XTS : 0) &
	    ~(alex_format_staged(version) ? ALEX_HDR_STAGED : 0))
		return ALEX_ECORRUPT;
	if ((version == ALEX_FORMAT_XTS) != !!(flags & ALEX_HDR_XTS))
		return ALEX_ECORRUPT; /* format 5 is the encrypted one, and only it */
	h->version = version;
	memcpy(h->uuid, in + 16, 16);
	h->epoch = alex_get64(in + 32);
	h->start_lsn = alex_get64(in + 40);
	h->salt = alex_get32(in + 48);
	h->flags = flags;
	memset(h->base, 0, ALEX_BASE_HDR);
	h->data_off = ALEX_LOG_DATA;
	h->fence_epoch = h->reserved = 0;
	alex_hdr_no_prev(h);
	if (version >= ALEX_FORMAT_VERSION) {
		/* data_off rides under base_crc: a slot of format 4 has BASE;
		 * format 10's carried fields too */
		uint64_t at = alex_get64(in + 164);
		size_t covered = ALEX_BASE_HDR + 8 + (alex_format_carry(version) ? 48 : 0);
		if (!(flags & ALEX_HDR_BASE) ||
		    alex_get32(in + 56) != alex_crc32c(0, in + 64, covered) ||
		    at < ALEX_LOG_DATA || at % ALEX_BLOCK || at >= ALEX_MAX_FILE)
			return ALEX_ECORRUPT;
		h->data_off = at;
		memcpy(h->base, in + 64, ALEX_BASE_HDR);
		if (alex_format_carry(version) ? decode_carry(in, h)
					       : !alex_all_zero(in + 172, ALEX_HDR_SLOT_USED - 172))
			return ALEX_ECORRUPT; /* before format 10, zeros */
	} else if (h->flags & ALEX_HDR_BASE) {
		if (alex_get32(in + 56) != alex_crc32c(0, in + 64, ALEX_BASE_HDR))
			return ALEX_ECORRUPT;
		memcpy(h->base, in + 64, ALEX_BASE_HDR);
	}
	return 0;
}

void alex_entry_encode(uint8_t *out, const struct alex_entry *e)
{
	alex_put64(out, e->block);
	out[8] = e->file;
	out[9] = e->flags;
	out[10] = out[11] = 0;
	alex_put32(out + 12, e->stored_len);
	alex_put32(out + 16, e->crc);
}

void alex_entry_decode(const uint8_t *in, struct alex_entry *e)
{
	e->block = alex_get64(in);
	e->file = in[8];
	e->flags = in[9];
	e->stored_len = alex_get32(in + 12);
	e->crc = alex_get32(in + 16);
}

void alex_rec_encode(uint8_t *out, struct alex_rec *r)
{
	alex_put32(out, ALEX_REC_MAGIC);
	alex_put32(out + 4, r->hdr_len);
	alex_put32(out + 8, r->rec_len);
	alex_put32(out + 12, r->nblocks);
	alex_put64(out + 16, r->epoch);
	alex_put64(out + 24, r->lsn);
	alex_put64(out + 32, r->txn);
	alex_put32(out + 40, r->flags);
	alex_put32(out + 44, r->nonce);
	alex_put32(out + 48, r->prev_crc);
	alex_put32(out + 52, r->table_crc);
	for (int f = 0; f < ALEX_NFILES; f++) {
		alex_put64(out + 56 + 8 * f, r->size[f]);
		alex_put64(out + 80 + 8 * f, r->trunc[f]);
	}
	alex_put32(out + 104, r->cond_len);
	r->hdr_crc = alex_crc32c(0, out, 108);
	alex_put32(out + 108, r->hdr_crc);
}

enum alex_stop alex_rec_decode(const uint8_t *buf, uint64_t room, uint64_t epoch,
			       uint64_t lsn, uint32_t prev_crc, struct alex_rec *r)
{
	if (room < ALEX_SECTOR)
		return room == 0 ? ALEX_STOP_END : ALEX_STOP_TRUNCATED;
	if (alex_get32(buf) != ALEX_REC_MAGIC) {
		/* Zeros, or the middle of an older epoch's record: the log ends
		 * here.  Only a header that would be the expected record but for
		 * its magic is a damaged record. */
		uint8_t h[108];
		memcpy(h, buf, sizeof h);
		alex_put32(h, ALEX_REC_MAGIC);
		if (alex_crc32c(0, h, sizeof h) == alex_get32(buf + 108) &&
		    alex_get64(buf + 16) == epoch && alex_get64(buf + 24) == lsn)
			return ALEX_STOP_BAD_MAGIC;
		return ALEX_STOP_END;
	}
	if (!alex_rec_peek(buf, r))
		return ALEX_STOP_BAD_HEADER;
	/* A header from an earlier epoch or an abandoned chain is a clean end,
	 * not damage: its crc is fine, it just is not the next record. */
	if (r->epoch != epoch || r->lsn != lsn || r->prev_crc != prev_crc)
		return ALEX_STOP_STALE;
	for (int f = 0; f < ALEX_NFILES; f++)
		if (r->size[f] > ALEX_MAX_FILE ||
		    (r->trunc[f] != ALEX_NO_TRUNC && r->trunc[f] > ALEX_MAX_FILE))
			return ALEX_STOP_BAD_HEADER;
	if (r->nblocks > ALEX_REC_MAX_BLOCKS ||
	    r->cond_len > ALEX_COND_MAX ||
	    r->hdr_len != ALEX_REC_FIXED + ALEX_REC_ENTRY * r->nblocks + r->cond_len ||
	    r->rec_len % ALEX_SECTOR != 0 || r->rec_len > ALEX_REC_MAX ||
	    r->rec_len < r->hdr_len || (r->flags & ~(ALEX_REC_COMMIT | ALEX_REC_COND | ALEX_REC_CARRY)) != 0 ||
	    !(r->flags & ALEX_REC_COND) != !r->cond_len ||
	    ((r->flags & ALEX_REC_COND) && !(r->flags & ALEX_REC_COMMIT)))
		return ALEX_STOP_BAD_HEADER;
	if (r->rec_len > room)
		return ALEX_STOP_TRUNCATED;
	return ALEX_STOP_NONE;
}

int alex_rec_peek(const uint8_t *buf, struct alex_rec *r)
{
	if (alex_get32(buf) != ALEX_REC_MAGIC)
		return 0;
	r->hdr_crc = alex_get32(buf + 108);
	if (r->hdr_crc != alex_crc32c(0, buf, 108))
		return 0;
	r->cond_len = alex_get32(buf + 104);
	r->hdr_len = alex_get32(buf + 4);
	r->rec_len = alex_get32(buf + 8);
	r->nblocks = alex_get32(buf + 12);
	r->epoch = alex_get64(buf + 16);
	r->lsn = alex_get64(buf + 24);
	r->txn = alex_get64(buf + 32);
	r->flags = alex_get32(buf + 40);
	r->nonce = alex_get32(buf + 44);
	r->prev_crc = alex_get32(buf + 48);
	r->table_crc = alex_get32(buf + 52);
	for (int f = 0; f < ALEX_NFILES; f++) {
		r->size[f] = alex_get64(buf + 56 + 8 * f);
		r->trunc[f] = alex_get64(buf + 80 + 8 * f);
	}
	return 1;
}

enum alex_stop alex_rec_check_body(const uint8_t *rec, const struct alex_rec *r)
{
	return alex_rec_check_in(rec, r, ALEX_FORMAT_NEW);
}

enum alex_stop alex_rec_check_in(const uint8_t *rec, const struct alex_rec *r, uint32_t version)
{
	if (!version)
		version = ALEX_FORMAT_NEW; /* as the slot encoder reads 0 */
	int sealed = version == ALEX_FORMAT_XTS, deltas = version >= ALEX_FORMAT_V7;
	const uint8_t *tab = rec + ALEX_REC_FIXED;
	uint64_t pos = r->hdr_len;

	if ((r->flags & ALEX_REC_CARRY) && !alex_format_carry(version))
		return ALEX_STOP_BAD_HEADER;
	if (alex_crc32c(0, tab, (size_t)r->nblocks * ALEX_REC_ENTRY + r->cond_len) != r->table_crc)
		return ALEX_STOP_BAD_TABLE;
	for (uint32_t i = 0; i < r->nblocks; i++) {
		struct alex_entry e;
		alex_entry_decode(tab + (size_t)i * ALEX_REC_ENTRY, &e);
		if (e.file >= ALEX_NFILES ||
		    (e.flags > ALEX_BLK_GAP && (e.flags != ALEX_BLK_DELTA || !deltas)) ||
		    e.stored_len == 0 || e.stored_len > ALEX_BLOCK ||
		    (!e.flags && e.stored_len != ALEX_BLOCK) ||
		    (e.flags == ALEX_BLK_DELTA &&
		     (e.stored_len < ALEX_DELTA_HDR || e.stored_len > ALEX_DELTA_MAX)) ||
		    e.block >= (ALEX_MAX_FILE >> ALEX_BLOCK_SHIFT) ||
		    tab[(size_t)i * ALEX_REC_ENTRY + 10] || tab[(size_t)i * ALEX_REC_ENTRY + 11])
			return ALEX_STOP_BAD_TABLE;
		if (pos + e.stored_len > r->rec_len)
			return ALEX_STOP_BAD_TABLE;
		if (alex_crc32c(0, rec + pos, e.stored_len) != e.crc)
			return ALEX_STOP_BAD_BLOCK;
		uint32_t off, run; /* the crc holds: bytes a GAP block cannot have */
		if (e.flags == ALEX_BLK_GAP && !sealed &&
		    !alex_gap_decode(rec + pos, e.stored_len, &off, &run))
			return ALEX_STOP_BAD_BLOCK;
		struct alex_loc prev; /* ... or a DELTA; its prev is checked when read */
		if (e.flags == ALEX_BLK_DELTA && !alex_delta_check(rec + pos, e.stored_len, &prev, &run))
			return ALEX_STOP_BAD_BLOCK;
		/* a root in the database file: its own block, never block 0 */
		if (e.flags == ALEX_BLK_DELTA && alex_loc_codec(&prev) == ALEX_DELTA_BASE &&
		    (!alex_format_base_deltas(version) || e.file != ALEX_FILE_DB || e.block == 0 ||
		     prev.off != e.block << ALEX_BLOCK_SHIFT))
			return ALEX_STOP_BAD_BLOCK;
		pos += e.stored_len;
	}
	if (!alex_all_zero(rec + pos, r->rec_len - pos))
		return ALEX_STOP_BAD_PADDING;
	return ALEX_STOP_NONE;
}
