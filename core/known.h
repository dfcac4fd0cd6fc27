/*
 * known.h - blocks whose content this engine holds, by their place in the
 * log: what it wrote last, and what it read.  A writer makes a DELTA only
 * against such a block (delta.h), so a delta costs no read; a reader
 * walking a chain stops at one, and so does a checkpoint.  Only committed
 * places are kept; such a place is never written again in its epoch, and
 * a new epoch draws a new salt: an entry names its block, its place, its
 * crc and codec, the epoch and the salt, and is right as long as all match.
 *
 * Set-associative by block, so that a block's newer version takes its
 * older one's way, and the last version of each block written lately is
 * what stays: in FULL mode the log is written past the page cache, and a
 * checkpoint's miss is a read from the device (some 50 us a place, a
 * chain of them per block: it was most of an early checkpoint's 2.4 ms).
 * A miss costs a whole block in the next record, or a chain walk.
 */
#ifndef ALEX_KNOWN_H
#define ALEX_KNOWN_H

#include <stdint.h>

#include "db.h"

#define ALEX_KNOWN_WAYS 8u
#define ALEX_KNOWN_SETS 4u       /* 32 blocks, 128 KiB */
#define ALEX_KNOWN_SETS_FULL 16u /* 128: an early checkpoint's 64 blocks (commit.c) */

struct alex_known {
	struct alex_known_slot {
		uint64_t key;
		struct alex_loc loc; /* codec in flags, no transaction */
		uint32_t salt, depth;
		uint64_t stamp; /* of its last put; 0: unused */
	} *slot;
	uint32_t sets;
	uint64_t tick;
	uint8_t (*img)[ALEX_BLOCK]; /* the buffers made with the cache, */
	uint8_t **at;               /* and each way's: one of them, or the
				     * collector's (alex_known_take) */
	uint8_t *chain; /* a chain walk's deltas (delta.h) */
};

/* Are deltas written here (a log of format 7 or 8, compression not off)? */
static inline int alex_known_wanted(const alex_db *db)
{
	return alex_format_deltas(db->hdr.version) && db->cfg.compress != ALEX_COMPRESS_OFF;
}

/* The content of block key at l and its depth, or NULL. */
const uint8_t *alex_known_get(alex_db *db, uint64_t key, const struct alex_loc *l,
			      uint32_t *depth);
/* Remembers img as the content of block key at l, a committed place of
 * the current epoch (others are not remembered). */
void alex_known_put(alex_db *db, uint64_t key, const struct alex_loc *l, const uint8_t *img,
		    uint32_t depth);
/* The same, taking the 4096 bytes at *img as they are: *img is given
 * another buffer in exchange, whose content is undefined.  A commit's
 * blocks stay where the collector put them (no copy); the buffers of both
 * are freed at close, each by the one that made it. */
void alex_known_take(alex_db *db, uint64_t key, const struct alex_loc *l, uint8_t **img,
		     uint32_t depth);
/* The walk buffer, made on first use: NULL when memory is short. */
uint8_t *alex_known_chain(alex_db *db);
/* At close only, with the collector (alex_known_take: their buffers mix). */
void alex_known_free(alex_db *db);

#endif
