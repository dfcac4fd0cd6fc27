/*
 * delta.h - DELTA blocks (format.h, format 7): a block stored as the byte
 * runs that changed since an earlier version of it in the same log, or
 * (format 9) since the database file's own block.  Pure:
 * no I/O and no allocation; the reader of the log is passed in, so that
 * the engine, the inspector and the fuzzer share one walk of a chain.
 */
#ifndef ALEX_DELTA_H
#define ALEX_DELTA_H

#include <stdint.h>

#include "format.h"
#include "map.h"

/*
 * Writes into out (ALEX_DELTA_MAX bytes) the delta that makes img from
 * old, the content at prev, and returns its length; 0 when it would not
 * fit, with the bytes it wrote zeros again (out is a record's buffer, whose
 * padding the stager keeps zero).  depth is the new delta's (prev's + 1).
 */
uint32_t alex_delta_make(const uint8_t *old, const uint8_t *img, const struct alex_loc *prev,
			 uint32_t depth, uint8_t *out);

/* The same with the portable skip alone, so tests can compare the two on
 * any CPU; and 1 when alex_delta_make uses the CPU's vectors (AVX2). */
uint32_t alex_delta_make_sw(const uint8_t *old, const uint8_t *img, const struct alex_loc *prev,
			    uint32_t depth, uint8_t *out);
int alex_delta_vector(void);

/* Are in's len bytes a well-formed delta?  Fills its prev (codec, place,
 * length, crc; epoch and transaction left 0) and depth.  A root in the
 * database file (ALEX_DELTA_BASE) passes here in any version; whether the
 * record's version and block allow it is the record's check (record.c). */
int alex_delta_check(const uint8_t *in, uint32_t len, struct alex_loc *prev, uint32_t *depth);

/* The depth a well-formed delta's stored bytes say (format.h). */
static inline uint32_t alex_delta_depth(const uint8_t *in)
{
	return in[17];
}

/* Puts a checked delta's runs into blk, which holds prev's content. */
void alex_delta_apply(const uint8_t *in, uint32_t len, uint8_t *blk);

struct alex_delta_src {
	void *ctx;
	/* l's stored bytes into buf (l->len of them), crc checked: 0 or ALEX_E* */
	int (*stored)(void *ctx, const struct alex_loc *l, uint8_t *buf);
	/* the content of a block that is not a DELTA: 0 or ALEX_E* */
	int (*whole)(void *ctx, const struct alex_loc *l, uint8_t *blk);
	/* the content of block key at l when it is known without reading
	 * (may be NULL) */
	const uint8_t *(*known)(void *ctx, uint64_t key, const struct alex_loc *l);
	uint8_t *chain; /* ALEX_DELTA_DEPTH * ALEX_DELTA_MAX bytes */
	/* the database file's block at root->off, for a chain rooted there
	 * (format 9): 0 or ALEX_E*; NULL takes such a chain for damage */
	int (*base)(void *ctx, const struct alex_loc *root, uint8_t *blk);
	uint64_t key; /* the block's, for known */
};

/*
 * The content of the block at loc, any codec: the chain is walked back to
 * a whole block (or a known one, or its root in the database file) and
 * its deltas put on it in order.  A
 * chain that is longer than ALEX_DELTA_DEPTH, goes forward in the log, or
 * whose depths disagree is damage: ALEX_EBADBLOCK.  *depth (may be NULL)
 * gets loc's depth, 0 for a whole block.
 */
int alex_delta_load(const struct alex_delta_src *src, const struct alex_loc *loc, uint8_t *blk,
		    uint32_t *depth);

#endif
