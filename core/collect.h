/* collect.h - the transaction's block collector (collect.c). */
#ifndef ALEX_COLLECT_H
#define ALEX_COLLECT_H

#include <stdint.h>

#include "map.h"

/* 64 KiB a slab: under malloc's mmap threshold (128 KiB), so a small
 * transaction's slots come from the heap, not from a fresh mapping that
 * costs page faults and, at close, an munmap with its TLB shootdown */
#define ALEX_SLAB_SLOTS 16u

/*
 * The collector: the blocks written since the last record, newest version
 * only.  Slots come from slabs allocated on first need and kept until close,
 * so steady-state writes never call malloc.
 */
struct alex_collect {
	struct alex_map index;   /* key -> slot (loc.off) */
	uint8_t **slabs;         /* nslabs x ALEX_SLAB_SLOTS x 4096 */
	uint8_t **img;           /* each slot's 4096 bytes: in a slab, or a
				  * buffer of the known cache's (swapped at a
				  * commit: known.h, alex_known_take) */
	uint64_t *slot_key;      /* key of each used slot, 0 if dropped */
	uint32_t nslabs, maxslabs;
	uint32_t used, max;      /* slots in use (incl. dropped), capacity */
};

int alex_col_init(struct alex_collect *c, uint32_t max_slots);
/* At close only, with the known cache (known.h: their buffers mix). */
void alex_col_free(struct alex_collect *c);
static inline uint8_t *alex_col_slot(struct alex_collect *c, uint32_t slot)
{
	return c->img[slot];
}
/* The slot's buffer pointer itself, for an exchange (alex_known_take). */
static inline uint8_t **alex_col_slot_ref(struct alex_collect *c, uint32_t slot)
{
	return &c->img[slot];
}
/* The slot holding key, or -1. */
int64_t alex_col_find(struct alex_collect *c, uint64_t key);
/* A fresh slot for key (the caller fills all 4096 bytes), or -1 when full. */
int64_t alex_col_add(struct alex_collect *c, uint64_t key);
void alex_col_trunc(struct alex_collect *c, unsigned file, uint64_t first);
void alex_col_clear(struct alex_collect *c);
uint64_t alex_col_bytes(const struct alex_collect *c);

#endif
