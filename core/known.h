/*
 * known.h - blocks whose content this engine holds, by their place in the
 * log: what it wrote last, and what it read.  A writer makes a DELTA only
 * against such a block (delta.h), so a delta costs no read; a reader
 * walking a chain stops at one.  Only committed places are kept; such a
 * place is never written again in its epoch, and a new epoch draws a new
 * salt: an entry names its place, its crc and codec, the epoch and the
 * salt, and is right as long as all match.
 * Direct-mapped by place; a miss costs a whole block in the next record.
 */
#ifndef ALEX_KNOWN_H
#define ALEX_KNOWN_H

#include <stdint.h>

#include "db.h"

#define ALEX_KNOWN_SLOTS 32u

struct alex_known {
	struct alex_known_slot {
		struct alex_loc loc; /* codec in flags, no transaction */
		uint32_t salt, depth, used;
	} slot[ALEX_KNOWN_SLOTS];
	uint8_t (*img)[ALEX_BLOCK];
	uint8_t *chain; /* a chain walk's deltas (delta.h) */
};

/* Are deltas written here (a log of format 7 or 8, compression not off)? */
static inline int alex_known_wanted(const alex_db *db)
{
	return alex_format_deltas(db->hdr.version) && db->cfg.compress != ALEX_COMPRESS_OFF;
}

/* The content at l and its depth, or NULL. */
const uint8_t *alex_known_get(alex_db *db, const struct alex_loc *l, uint32_t *depth);
/* Remembers img as the content at l, a committed place of the current
 * epoch (others are not remembered). */
void alex_known_put(alex_db *db, const struct alex_loc *l, const uint8_t *img, uint32_t depth);
/* The walk buffer, made on first use: NULL when memory is short. */
uint8_t *alex_known_chain(alex_db *db);
void alex_known_free(alex_db *db);

#endif
