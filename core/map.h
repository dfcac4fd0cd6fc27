/*
 * map.h - the block map: (file, block) -> where the newest committed copy of
 * the block lives in the log.  Open addressing with linear probing and
 * backward-shift deletion, so there are no tombstones to clean up.  The same
 * table indexes the collector (loc.off is then a slot number).
 */
#ifndef ALEX_MAP_H
#define ALEX_MAP_H

#include <stddef.h>
#include <stdint.h>

struct alex_loc {
	uint64_t off;    /* byte offset of the stored bytes in the log */
	uint32_t len;    /* stored length */
	uint32_t crc;    /* crc32c of the stored bytes */
	uint32_t flags;  /* ALEX_BLK_* in bits 0..7; the record's transaction id,
			    low 24 bits, above (alex_loc_flags) */
	uint32_t epoch;  /* the record's epoch, low 32 bits */
};

/* With the epoch, what an encrypted block's tweak needs (log_xts.c):
 * no two versions of the bytes at one offset share it. */
static inline uint32_t alex_loc_flags(uint32_t codec, uint64_t txn)
{
	return codec | (uint32_t)(txn & 0xffffff) << 8;
}

static inline uint32_t alex_loc_codec(const struct alex_loc *l)
{
	return l->flags & 0xff;
}

struct alex_map {
	uint64_t *keys; /* 0 = empty */
	struct alex_loc *vals;
	size_t cap, n;  /* cap is a power of two */
};

/* Keys order by (file, block); 0 is never a key. */
static inline uint64_t alex_key(unsigned file, uint64_t block)
{
	return (((uint64_t)file << 56) | block) + 1;
}
static inline unsigned alex_key_file(uint64_t key)
{
	return (unsigned)((key - 1) >> 56);
}
static inline uint64_t alex_key_block(uint64_t key)
{
	return (key - 1) & ((1ull << 56) - 1);
}

/* cap_hint entries fit without growing.  0 or ALEX_ENOMEM. */
int alex_map_init(struct alex_map *m, size_t cap_hint);
void alex_map_free(struct alex_map *m);

struct alex_loc *alex_map_get(const struct alex_map *m, uint64_t key);
/* Inserts or replaces; grows at half load.  0 or ALEX_ENOMEM. */
int alex_map_put(struct alex_map *m, uint64_t key, const struct alex_loc *v);
int alex_map_del(struct alex_map *m, uint64_t key);
/* Deletes every key of file at or past block first. */
void alex_map_trunc(struct alex_map *m, unsigned file, uint64_t first);
/* Empties the table in O(cap). */
void alex_map_clear(struct alex_map *m);
size_t alex_map_bytes(const struct alex_map *m);
/* Every key, in ascending order, in a block of the heap (the caller frees
 * it); *n of them.  NULL: no memory. */
uint64_t *alex_map_sorted_keys(const struct alex_map *m, size_t *n);

#endif
