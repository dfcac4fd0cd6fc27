/*
 * collect.c - the collector: blocks of the open transaction, one copy each
 * (the paper's in-memory dedup).  A slot is 4096 bytes in a slab; the index
 * maps a block key to its slot.  Clearing deletes only the used keys, so a
 * commit costs O(blocks), not O(capacity).
 */
#include <stdlib.h>
#include <string.h>

#include "db.h"

int alex_col_init(struct alex_collect *c, uint32_t max_slots)
{
	memset(c, 0, sizeof *c);
	c->max = max_slots;
	c->maxslabs = (max_slots + ALEX_SLAB_SLOTS - 1) / ALEX_SLAB_SLOTS;
	c->slabs = calloc(c->maxslabs, sizeof *c->slabs);
	/* the index and the slots' keys grow with the slabs: a short
	 * process's one small transaction does not zero (and fault in) tables
	 * sized for the whole budget */
	if (!c->slabs || alex_map_init(&c->index, ALEX_SLAB_SLOTS)) {
		alex_col_free(c);
		return ALEX_ENOMEM;
	}
	return 0;
}

void alex_col_free(struct alex_collect *c)
{
	if (c->slabs)
		for (uint32_t i = 0; i < c->nslabs; i++)
			free(c->slabs[i]);
	free(c->slabs);
	free(c->slot_key);
	free(c->img);
	alex_map_free(&c->index);
	memset(c, 0, sizeof *c);
}

int64_t alex_col_find(struct alex_collect *c, uint64_t key)
{
	struct alex_loc *l = alex_map_get(&c->index, key);
	return l ? (int64_t)l->off : -1;
}

int64_t alex_col_add(struct alex_collect *c, uint64_t key)
{
	uint32_t slot = c->used;
	struct alex_loc l = { slot, 0, 0, 0, 0 };

	if (slot >= c->max)
		return -1;
	if (slot / ALEX_SLAB_SLOTS >= c->nslabs) {
		/* one allocation per slab (fewer blocks for the last one of a
		 * small budget), kept until close */
		uint32_t n = c->max - slot < ALEX_SLAB_SLOTS ? c->max - slot : ALEX_SLAB_SLOTS;
		uint64_t *keys = realloc(c->slot_key, (size_t)(slot + n) * sizeof *keys);
		if (!keys)
			return -1;
		c->slot_key = keys;
		uint8_t **img = realloc(c->img, (size_t)(slot + n) * sizeof *img);
		if (!img)
			return -1;
		c->img = img;
		uint8_t *s = aligned_alloc(ALEX_BLOCK, (size_t)n * ALEX_BLOCK);
		if (!s)
			return -1;
		c->slabs[c->nslabs++] = s;
		for (uint32_t i = 0; i < n; i++)
			img[slot + i] = s + (size_t)i * ALEX_BLOCK;
	}
	if (alex_map_put(&c->index, key, &l))
		return -1; /* no memory to grow the index */
	c->slot_key[slot] = key;
	c->used++;
	return slot;
}

void alex_col_trunc(struct alex_collect *c, unsigned file, uint64_t first)
{
	for (uint32_t i = 0; i < c->used; i++) {
		uint64_t k = c->slot_key[i];
		if (k && alex_key_file(k) == file && alex_key_block(k) >= first) {
			alex_map_del(&c->index, k);
			c->slot_key[i] = 0;
		}
	}
}

void alex_col_clear(struct alex_collect *c)
{
	for (uint32_t i = 0; i < c->used; i++)
		if (c->slot_key[i])
			alex_map_del(&c->index, c->slot_key[i]);
	c->used = 0;
}

uint64_t alex_col_bytes(const struct alex_collect *c)
{
	uint64_t slots = (uint64_t)c->nslabs * ALEX_SLAB_SLOTS;
	if (slots > c->max)
		slots = c->max;
	return slots * (ALEX_BLOCK + sizeof *c->slot_key + sizeof *c->img) + alex_map_bytes(&c->index);
}
