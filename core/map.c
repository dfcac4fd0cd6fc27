/* map.c - the open-addressing block map (map.h). */
#include "map.h"

#include <stdlib.h>
#include <string.h>

#include "alex.h"

static size_t slot_of(uint64_t key, size_t cap)
{
	/* blocks are dense small integers: mix them before masking */
	uint64_t h = key * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 32) & (cap - 1);
}

static int alloc_table(struct alex_map *m, size_t cap)
{
	m->keys = calloc(cap, sizeof *m->keys);
	m->vals = malloc(cap * sizeof *m->vals);
	if (!m->keys || !m->vals) {
		free(m->keys);
		free(m->vals);
		m->keys = NULL;
		m->vals = NULL;
		return ALEX_ENOMEM;
	}
	m->cap = cap;
	m->n = 0;
	return 0;
}

int alex_map_init(struct alex_map *m, size_t cap_hint)
{
	size_t cap = 16;

	while (cap < 2 * cap_hint)
		cap *= 2;
	return alloc_table(m, cap);
}

void alex_map_free(struct alex_map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof *m);
}

struct alex_loc *alex_map_get(const struct alex_map *m, uint64_t key)
{
	size_t i = slot_of(key, m->cap);

	for (;;) {
		if (m->keys[i] == key)
			return &m->vals[i];
		if (m->keys[i] == 0)
			return NULL;
		i = (i + 1) & (m->cap - 1);
	}
}

static void insert_new(struct alex_map *m, uint64_t key, const struct alex_loc *v)
{
	size_t i = slot_of(key, m->cap);

	while (m->keys[i])
		i = (i + 1) & (m->cap - 1);
	m->keys[i] = key;
	m->vals[i] = *v;
	m->n++;
}

static int grow(struct alex_map *m)
{
	struct alex_map old = *m;

	if (alloc_table(m, old.cap * 2)) {
		*m = old;
		return ALEX_ENOMEM;
	}
	for (size_t i = 0; i < old.cap; i++)
		if (old.keys[i])
			insert_new(m, old.keys[i], &old.vals[i]);
	free(old.keys);
	free(old.vals);
	return 0;
}

int alex_map_put(struct alex_map *m, uint64_t key, const struct alex_loc *v)
{
	struct alex_loc *cur = alex_map_get(m, key);

	if (cur) {
		*cur = *v;
		return 0;
	}
	if (2 * (m->n + 1) > m->cap && grow(m))
		return ALEX_ENOMEM;
	insert_new(m, key, v);
	return 0;
}

/* Empties slot i and pulls later members of its cluster back so that every
 * key stays reachable from its home slot. */
static void remove_at(struct alex_map *m, size_t i)
{
	size_t mask = m->cap - 1, j = i;

	m->keys[i] = 0;
	m->n--;
	for (;;) {
		j = (j + 1) & mask;
		if (!m->keys[j])
			return;
		size_t home = slot_of(m->keys[j], m->cap);
		/* move j to the hole i unless home lies cyclically in (i, j] */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->keys[i] = m->keys[j];
			m->vals[i] = m->vals[j];
			m->keys[j] = 0;
			i = j;
		}
	}
}

int alex_map_del(struct alex_map *m, uint64_t key)
{
	size_t i = slot_of(key, m->cap);

	for (;;) {
		if (m->keys[i] == key) {
			remove_at(m, i);
			return 1;
		}
		if (m->keys[i] == 0)
			return 0;
		i = (i + 1) & (m->cap - 1);
	}
}

void alex_map_trunc(struct alex_map *m, unsigned file, uint64_t first)
{
	if (!m->n)
		return;
	for (size_t i = 0; i < m->cap;) {
		uint64_t k = m->keys[i];
		if (k && alex_key_file(k) == file && alex_key_block(k) >= first)
			remove_at(m, i); /* slot i may now hold a moved key: look again */
		else
			i++;
	}
}

void alex_map_clear(struct alex_map *m)
{
	memset(m->keys, 0, m->cap * sizeof *m->keys);
	m->n = 0;
}

size_t alex_map_bytes(const struct alex_map *m)
{
	return m->cap * (sizeof *m->keys + sizeof *m->vals);
}

static int key_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/*
 * In order by their bytes, least significant first (LSD radix), over only
 * the bytes in which they differ: a block number and a file in its top
 * byte make four passes.  A checkpoint's copy begins with every key of the
 * map, 15 000 for a large database's random pages, which qsort took 1.2-3.5
 * ms to put in order inside the commit that begins the copy.
 */
static void radix_sort(uint64_t *a, size_t n, uint64_t *tmp)
{
	uint64_t vary = 0, *src = a, *dst = tmp;

	for (size_t i = 1; i < n; i++)
		vary |= a[i] ^ a[0];
	for (unsigned shift = 0; shift < 64; shift += 8) {
		size_t at[256] = { 0 }, sum = 0;
		if (!((vary >> shift) & 0xff))
			continue;
		for (size_t i = 0; i < n; i++)
			at[(src[i] >> shift) & 0xff]++;
		for (unsigned b = 0; b < 256; b++) {
			size_t c = at[b];
			at[b] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[at[(src[i] >> shift) & 0xff]++] = src[i];
		uint64_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * sizeof *a);
}

uint64_t *alex_map_sorted_keys(const struct alex_map *m, size_t *n)
{
	size_t cap = m->n ? m->n : 1;
	uint64_t *keys = malloc(cap * sizeof *keys), *tmp;

	*n = 0;
	if (!keys)
		return NULL;
	for (size_t i = 0; i < m->cap; i++)
		if (m->keys[i])
			keys[(*n)++] = m->keys[i];
	/* its scratch freed at once: the keys are kept for a whole copy
	 * (carry.c); without it, the slower sort in place */
	if ((tmp = malloc(cap * sizeof *tmp))) {
		radix_sort(keys, *n, tmp);
		free(tmp);
	} else {
		qsort(keys, *n, sizeof *keys, key_cmp);
	}
	return keys;
}
