/* known.c - blocks whose content this engine holds (known.h). */
#include "known.h"

#include <stdlib.h>
#include <string.h>

static int make(alex_db *db)
{
	struct alex_known *k;

	if (db->known)
		return 1;
	if (!(k = calloc(1, sizeof *k)))
		return 0;
	/* FULL mode checkpoints early, when the log holds at most 64
	 * blocks, and reads them back from the device (log.c) */
	k->sets = db->cfg.sync == ALEX_SYNC_FULL ? ALEX_KNOWN_SETS_FULL : ALEX_KNOWN_SETS;
	size_t n = (size_t)k->sets * ALEX_KNOWN_WAYS;
	k->slot = calloc(n, sizeof *k->slot);
	k->img = aligned_alloc(ALEX_BLOCK, n * ALEX_BLOCK);
	k->at = malloc(n * sizeof *k->at);
	k->chain = malloc((size_t)ALEX_DELTA_DEPTH * ALEX_DELTA_MAX);
	if (!k->slot || !k->img || !k->at || !k->chain) {
		free(k->slot);
		free(k->img);
		free(k->at);
		free(k->chain);
		free(k);
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		k->at[i] = k->img[i];
	db->known = k;
	return 1;
}

/* The first way of key's set: the top bits of a Fibonacci hash, which
 * spread a run of consecutive blocks evenly over the sets. */
static uint32_t set_of(const struct alex_known *k, uint64_t key)
{
	uint64_t h = (key * 0x9e3779b97f4a7c15ull) >> 32;
	return (uint32_t)(h * k->sets >> 32) * ALEX_KNOWN_WAYS;
}

static int same(const struct alex_known_slot *s, uint64_t key, const struct alex_loc *l,
		uint32_t salt)
{
	return s->stamp && s->key == key && s->loc.off == l->off && s->loc.len == l->len &&
	       s->loc.crc == l->crc && s->loc.flags == alex_loc_codec(l) &&
	       s->loc.epoch == l->epoch && s->salt == salt;
}

/* The salt of the epoch a place is of: this one's, or the carried one's
 * (carry.c), whose blocks the copy reads after the carry. */
static uint32_t salt_of(const alex_db *db, const struct alex_loc *l)
{
	if (db->hdr.prev_epoch && l->epoch == (uint32_t)db->hdr.prev_epoch)
		return db->hdr.prev_salt;
	return db->hdr.salt;
}

const uint8_t *alex_known_get(alex_db *db, uint64_t key, const struct alex_loc *l,
			      uint32_t *depth)
{
	struct alex_known *k = db->known;

	if (!k)
		return NULL;
	uint32_t salt = salt_of(db, l);
	for (uint32_t i = set_of(k, key), w = 0; w < ALEX_KNOWN_WAYS; w++, i++) {
		if (!same(&k->slot[i], key, l, salt))
			continue;
		if (depth)
			*depth = k->slot[i].depth;
		return k->at[i];
	}
	return NULL;
}

/* The way key's block at l goes to, its entry filled; NULL when none
 * (not this epoch's place, or no memory for the cache). */
static uint8_t **way_for(alex_db *db, uint64_t key, const struct alex_loc *l, uint32_t depth)
{
	if (l->epoch != (uint32_t)db->hdr.epoch || !make(db))
		return NULL;
	struct alex_known *k = db->known;
	uint32_t first = set_of(k, key), i = first;
	/* the block's own way (its older version is of no more use), else
	 * the one put longest ago; an unused way has stamp 0 */
	for (uint32_t w = 0; w < ALEX_KNOWN_WAYS; w++) {
		struct alex_known_slot *s = &k->slot[first + w];
		if (s->stamp && s->key == key) {
			i = first + w;
			break;
		}
		if (s->stamp < k->slot[i].stamp)
			i = first + w;
	}
	struct alex_known_slot *s = &k->slot[i];
	s->key = key;
	s->loc = *l;
	s->loc.flags = alex_loc_codec(l);
	s->salt = db->hdr.salt;
	s->depth = depth;
	s->stamp = ++k->tick;
	return &k->at[i];
}

void alex_known_put(alex_db *db, uint64_t key, const struct alex_loc *l, const uint8_t *img,
		    uint32_t depth)
{
	uint8_t **way = way_for(db, key, l, depth);
	if (way)
		memcpy(*way, img, ALEX_BLOCK);
}

void alex_known_take(alex_db *db, uint64_t key, const struct alex_loc *l, uint8_t **img,
		     uint32_t depth)
{
	uint8_t **way = way_for(db, key, l, depth);
	if (way) {
		uint8_t *old = *way;
		*way = *img;
		*img = old;
	}
}

uint8_t *alex_known_chain(alex_db *db)
{
	return make(db) ? db->known->chain : NULL;
}

void alex_known_free(alex_db *db)
{
	if (db->known) {
		free(db->known->slot);
		free(db->known->img);
		free(db->known->at);
		free(db->known->chain);
		free(db->known);
		db->known = NULL;
	}
}
