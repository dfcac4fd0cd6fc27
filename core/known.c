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
	k->img = aligned_alloc(ALEX_BLOCK, (size_t)ALEX_KNOWN_SLOTS * ALEX_BLOCK);
	k->chain = malloc((size_t)ALEX_DELTA_DEPTH * ALEX_DELTA_MAX);
	if (!k->img || !k->chain) {
		free(k->img);
		free(k->chain);
		free(k);
		return 0;
	}
	db->known = k;
	return 1;
}

static uint32_t slot_of(const struct alex_loc *l)
{
	/* places are sector multiples: mix before masking */
	return (uint32_t)((l->off * 0x9e3779b97f4a7c15ull) >> 40) & (ALEX_KNOWN_SLOTS - 1);
}

static int same(const struct alex_known_slot *s, const struct alex_loc *l, uint32_t salt)
{
	return s->used && s->loc.off == l->off && s->loc.len == l->len && s->loc.crc == l->crc &&
	       s->loc.flags == alex_loc_codec(l) && s->loc.epoch == l->epoch && s->salt == salt;
}

const uint8_t *alex_known_get(alex_db *db, const struct alex_loc *l, uint32_t *depth)
{
	if (!db->known)
		return NULL;
	uint32_t i = slot_of(l);
	const struct alex_known_slot *s = &db->known->slot[i];
	if (!same(s, l, db->hdr.salt))
		return NULL;
	if (depth)
		*depth = s->depth;
	return db->known->img[i];
}

void alex_known_put(alex_db *db, const struct alex_loc *l, const uint8_t *img, uint32_t depth)
{
	if (l->epoch != (uint32_t)db->hdr.epoch || !make(db))
		return;
	uint32_t i = slot_of(l);
	struct alex_known_slot *s = &db->known->slot[i];
	s->loc = *l;
	s->loc.flags = alex_loc_codec(l);
	s->salt = db->hdr.salt;
	s->depth = depth;
	s->used = 1;
	memcpy(db->known->img[i], img, ALEX_BLOCK);
}

uint8_t *alex_known_chain(alex_db *db)
{
	return make(db) ? db->known->chain : NULL;
}

void alex_known_free(alex_db *db)
{
	if (db->known) {
		free(db->known->img);
		free(db->known->chain);
		free(db->known);
		db->known = NULL;
	}
}
