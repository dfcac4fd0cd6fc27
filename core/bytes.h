/* bytes.h - little-endian loads and stores for the on-disk format. */
#ifndef ALEX_BYTES_H
#define ALEX_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * On a little-endian host a field is its bytes: one move each way (gcc does
 * not merge the byte loops below, and a record's header and table are
 * dozens of fields at every commit).  The loops are the definition.
 */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ALEX_LE_HOST 1
#else
#define ALEX_LE_HOST 0
#endif

static inline void alex_put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline uint32_t alex_get16(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static inline void alex_put32(uint8_t *p, uint32_t v)
{
	if (ALEX_LE_HOST) {
		memcpy(p, &v, 4);
		return;
	}
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void alex_put64(uint8_t *p, uint64_t v)
{
	if (ALEX_LE_HOST) {
		memcpy(p, &v, 8);
		return;
	}
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t alex_get32(const uint8_t *p)
{
	uint32_t v = 0;
	if (ALEX_LE_HOST) {
		memcpy(&v, p, 4);
		return v;
	}
	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* SQLite's own fields (its header, its journals) are big-endian. */
static inline uint32_t alex_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void alex_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* Are all n bytes zero?  (memcmp against itself, shifted by one: fast.) */
static inline int alex_all_zero(const void *buf, size_t n)
{
	const uint8_t *p = buf;
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

static inline uint64_t alex_get64(const uint8_t *p)
{
	uint64_t v = 0;
	if (ALEX_LE_HOST) {
		memcpy(&v, p, 8);
		return v;
	}
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

#endif
