/*
 * delta.c - DELTA blocks (delta.h).  The diff works a word at a time: two
 * runs are split only by eight or more equal bytes, which cost more to
 * store than a run's four-byte header saves.  Equal stretches are skipped
 * a chunk at a time by memcmp (vectorised in libc): a one-row INSERT
 * changes two or three places of a page, and a word loop over all of it
 * cost some 5 000 instructions per block.
 */
#include "delta.h"

#include <string.h>

#include "alex.h"
#include "bytes.h"

#define CHUNK 256u

static uint64_t word(const uint8_t *p)
{
	uint64_t w;
	memcpy(&w, p, sizeof w);
	return w;
}

uint32_t alex_delta_make(const uint8_t *old, const uint8_t *img, const struct alex_loc *prev,
			 uint32_t depth, uint8_t *out)
{
	uint32_t pos = ALEX_DELTA_HDR, i = 0;

	alex_put64(out, prev->off);
	alex_put32(out + 8, prev->len);
	alex_put32(out + 12, prev->crc);
	out[16] = (uint8_t)alex_loc_codec(prev);
	out[17] = (uint8_t)depth;
	out[18] = out[19] = 0;
	for (;;) {
		while (i < ALEX_BLOCK) {
			if (!(i & (CHUNK - 1)) && !memcmp(old + i, img + i, CHUNK))
				i += CHUNK;
			else if (word(old + i) == word(img + i))
				i += 8;
			else
				break;
		}
		if (i == ALEX_BLOCK)
			return pos;
		uint32_t start = i, end = i + 8;
		while (old[start] == img[start])
			start++;
		while (end < ALEX_BLOCK && word(old + end) != word(img + end))
			end += 8;
		i = end; /* a word that is equal, or the block's end */
		while (old[end - 1] == img[end - 1])
			end--;
		uint32_t n = end - start;
		if (pos + ALEX_DELTA_RUN + n > ALEX_DELTA_MAX) {
			memset(out, 0, pos);
			return 0;
		}
		alex_put16(out + pos, start);
		alex_put16(out + pos + 2, n);
		memcpy(out + pos + ALEX_DELTA_RUN, img + start, n);
		pos += ALEX_DELTA_RUN + n;
	}
}

/* prev in the log: a block of any codec, as long as its kind allows */
static int prev_ok(const struct alex_loc *prev, uint32_t depth)
{
	if (prev->flags != 0 && prev->flags != ALEX_BLK_LZ4 && prev->flags != ALEX_BLK_GAP &&
	    prev->flags != ALEX_BLK_DELTA)
		return 0;
	if (prev->len == 0 || prev->len > ALEX_BLOCK || (!prev->flags && prev->len != ALEX_BLOCK) ||
	    (prev->flags == ALEX_BLK_DELTA && prev->len > ALEX_DELTA_MAX) ||
	    prev->off > ALEX_MAX_FILE)
		return 0;
	return depth >= 1 && depth <= ALEX_DELTA_DEPTH &&
	       (depth == 1) == (prev->flags != ALEX_BLK_DELTA);
}

/* the database file's block (format 9): past block 0, whole, no crc */
static int root_ok(const struct alex_loc *prev, uint32_t depth)
{
	return prev->len == ALEX_BLOCK && !prev->crc && depth == 1 && prev->off &&
	       prev->off % ALEX_BLOCK == 0 && prev->off < ALEX_MAX_FILE;
}

int alex_delta_check(const uint8_t *in, uint32_t len, struct alex_loc *prev, uint32_t *depth)
{
	if (len < ALEX_DELTA_HDR || len > ALEX_DELTA_MAX)
		return 0;
	memset(prev, 0, sizeof *prev);
	prev->off = alex_get64(in);
	prev->len = alex_get32(in + 8);
	prev->crc = alex_get32(in + 12);
	prev->flags = in[16];
	*depth = alex_delta_depth(in);
	if (in[18] || in[19] || !(prev->flags == ALEX_DELTA_BASE ? root_ok(prev, *depth)
								 : prev_ok(prev, *depth)))
		return 0;
	uint32_t pos = ALEX_DELTA_HDR, end = 0;
	while (pos < len) {
		if (len - pos < ALEX_DELTA_RUN)
			return 0;
		uint32_t off = alex_get16(in + pos), n = alex_get16(in + pos + 2);
		if (n == 0 || off < end || off + n > ALEX_BLOCK || n > len - pos - ALEX_DELTA_RUN)
			return 0;
		end = off + n;
		pos += ALEX_DELTA_RUN + n;
	}
	return 1;
}

void alex_delta_apply(const uint8_t *in, uint32_t len, uint8_t *blk)
{
	for (uint32_t pos = ALEX_DELTA_HDR; pos < len;) {
		uint32_t off = alex_get16(in + pos), n = alex_get16(in + pos + 2);
		memcpy(blk + off, in + pos + ALEX_DELTA_RUN, n);
		pos += ALEX_DELTA_RUN + n;
	}
}

int alex_delta_load(const struct alex_delta_src *src, const struct alex_loc *loc, uint8_t *blk,
		    uint32_t *depth)
{
	uint32_t lens[ALEX_DELTA_DEPTH], n = 0, want = 0, d;
	struct alex_loc cur = *loc, prev;
	const uint8_t *img;
	int err;

	if (depth)
		*depth = 0;
	for (;;) {
		if (alex_loc_codec(&cur) == ALEX_DELTA_BASE) {
			/* only ever a delta's prev (n > 0): a map never holds one */
			if (!n || !src->base)
				return ALEX_EBADBLOCK;
			if ((err = src->base(src->ctx, &cur, blk)))
				return err;
			break;
		}
		if (n && src->known && (img = src->known(src->ctx, src->key, &cur))) {
			memcpy(blk, img, ALEX_BLOCK);
			break;
		}
		if (alex_loc_codec(&cur) != ALEX_BLK_DELTA) {
			if ((err = src->whole(src->ctx, &cur, blk)))
				return err;
			break;
		}
		if (n == ALEX_DELTA_DEPTH || cur.len > ALEX_DELTA_MAX)
			return ALEX_EBADBLOCK;
		uint8_t *in = src->chain + (size_t)n * ALEX_DELTA_MAX;
		if ((err = src->stored(src->ctx, &cur, in)))
			return err;
		/* each step goes back in the log: the walk ends */
		if (!alex_delta_check(in, cur.len, &prev, &d) || (n && d != want) ||
		    (alex_loc_codec(&prev) != ALEX_DELTA_BASE && prev.off + prev.len > cur.off))
			return ALEX_EBADBLOCK;
		if (!n && depth)
			*depth = d;
		prev.epoch = cur.epoch; /* a chain stays in its epoch */
		lens[n++] = cur.len;
		want = d - 1;
		cur = prev;
	}
	while (n--)
		alex_delta_apply(src->chain + (size_t)n * ALEX_DELTA_MAX, lens[n], blk);
	return 0;
}
