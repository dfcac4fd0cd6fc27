/*
 * delta.c - DELTA blocks (delta.h).  The diff works a word at a time: two
 * runs are split only by eight or more equal bytes, which cost more to
 * store than a run's four-byte header saves.  Equal stretches are skipped
 * 128 bytes a step with AVX2 where the CPU has it, else a chunk at a time
 * by memcmp (vectorised in libc): a one-row INSERT changes two or three
 * places of a page, and a word loop over all of it cost some 5 000
 * instructions per block, the memcmp chunks about 1 800, AVX2 about 700.
 */
#include "delta.h"

#include <string.h>

#include "alex.h"
#include "bytes.h"

#define CHUNK 256u

static uint64_t word(const uint8_t *p)
{
	uint64_t w;
	memcpy(&w, p, sizeof w);
	return w;
}

/* The first word from i (a multiple of 8) on that differs, or ALEX_BLOCK. */
static uint32_t skip_sw(const uint8_t *old, const uint8_t *img, uint32_t i)
{
	while (i < ALEX_BLOCK) {
		if (!(i & (CHUNK - 1)) && !memcmp(old + i, img + i, CHUNK))
			i += CHUNK;
		else if (word(old + i) == word(img + i))
			i += 8;
		else
			break;
	}
	return i;
}

#if defined(__x86_64__)
#include <immintrin.h>
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
#include <sys/platform/x86.h>
#endif

__attribute__((target("avx2"))) static uint32_t skip_avx2(const uint8_t *old,
							   const uint8_t *img, uint32_t i)
{
	for (; i + 128 <= ALEX_BLOCK; i += 128) {
		const __m256i *a = (const __m256i *)(old + i), *b = (const __m256i *)(img + i);
		__m256i x0 = _mm256_xor_si256(_mm256_loadu_si256(a), _mm256_loadu_si256(b));
		__m256i x1 = _mm256_xor_si256(_mm256_loadu_si256(a + 1), _mm256_loadu_si256(b + 1));
		__m256i x2 = _mm256_xor_si256(_mm256_loadu_si256(a + 2), _mm256_loadu_si256(b + 2));
		__m256i x3 = _mm256_xor_si256(_mm256_loadu_si256(a + 3), _mm256_loadu_si256(b + 3));
		__m256i o = _mm256_or_si256(_mm256_or_si256(x0, x1), _mm256_or_si256(x2, x3));
		if (_mm256_testz_si256(o, o))
			continue;
		/* the first byte that differs, and its word (i is a multiple of 8) */
		for (uint32_t k = 0; k < 4; k++) {
			__m256i e = _mm256_cmpeq_epi8(_mm256_loadu_si256(a + k), _mm256_loadu_si256(b + k));
			uint32_t same = (uint32_t)_mm256_movemask_epi8(e);
			if (same != 0xffffffffu)
				return (i + 32 * k + (uint32_t)__builtin_ctz(~same)) & ~7u;
		}
	}
	for (; i < ALEX_BLOCK; i += 8)
		if (word(old + i) != word(img + i))
			break;
	return i;
}

/* Asked of glibc's loader, as crc32c.c does: no CPUID of our own (a trap
 * to the hypervisor in a virtual machine); without its answer, no AVX2. */
static int have_avx2(void)
{
	static int have = -1;

	if (have < 0) {
#ifdef CPU_FEATURE_ACTIVE
		have = CPU_FEATURE_ACTIVE(AVX2) ? 1 : 0;
#else
		have = 0;
#endif
	}
	return have;
}
#else
static uint32_t skip_avx2(const uint8_t *old, const uint8_t *img, uint32_t i)
{
	return skip_sw(old, img, i);
}

static int have_avx2(void)
{
	return 0;
}
#endif

static uint32_t make(const uint8_t *old, const uint8_t *img, const struct alex_loc *prev,
		     uint32_t depth, uint8_t *out, int vec)
{
	uint32_t pos = ALEX_DELTA_HDR, i = 0;

	alex_put64(out, prev->off);
	alex_put32(out + 8, prev->len);
	alex_put32(out + 12, prev->crc);
	out[16] = (uint8_t)alex_loc_codec(prev);
	out[17] = (uint8_t)depth;
	out[18] = out[19] = 0;
	for (;;) {
		i = vec ? skip_avx2(old, img, i) : skip_sw(old, img, i);
		if (i == ALEX_BLOCK)
			return pos;
		uint32_t start = i, end = i + 8;
		while (old[start] == img[start])
			start++;
		while (end < ALEX_BLOCK && word(old + end) != word(img + end))
			end += 8;
		i = end; /* a word that is equal, or the block's end */
		while (old[end - 1] == img[end - 1])
			end--;
		uint32_t n = end - start;
		if (pos + ALEX_DELTA_RUN + n > ALEX_DELTA_MAX) {
			memset(out, 0, pos);
			return 0;
		}
		alex_put16(out + pos, start);
		alex_put16(out + pos + 2, n);
		memcpy(out + pos + ALEX_DELTA_RUN, img + start, n);
		pos += ALEX_DELTA_RUN + n;
	}
}

uint32_t alex_delta_make(const uint8_t *old, const uint8_t *img, const struct alex_loc *prev,
			 uint32_t depth, uint8_t *out)
{
	return make(old, img, prev, depth, out, have_avx2());
}

uint32_t alex_delta_make_sw(const uint8_t *old, const uint8_t *img, const struct alex_loc *prev,
			    uint32_t depth, uint8_t *out)
{
	return make(old, img, prev, depth, out, 0);
}

int alex_delta_vector(void)
{
	return have_avx2();
}

/* prev in the log: a block of any codec, as long as its kind allows */
static int prev_ok(const struct alex_loc *prev, uint32_t depth)
{
	if (prev->flags != 0 && prev->flags != ALEX_BLK_LZ4 && prev->flags != ALEX_BLK_GAP &&
	    prev->flags != ALEX_BLK_DELTA)
		return 0;
	if (prev->len == 0 || prev->len > ALEX_BLOCK || (!prev->flags && prev->len != ALEX_BLOCK) ||
	    (prev->flags == ALEX_BLK_DELTA && prev->len > ALEX_DELTA_MAX) ||
	    prev->off > ALEX_MAX_FILE)
		return 0;
	return depth >= 1 && depth <= ALEX_DELTA_DEPTH &&
	       (depth == 1) == (prev->flags != ALEX_BLK_DELTA);
}

/* the database file's block (format 9): past block 0, whole, no crc */
static int root_ok(const struct alex_loc *prev, uint32_t depth)
{
	return prev->len == ALEX_BLOCK && !prev->crc && depth == 1 && prev->off &&
	       prev->off % ALEX_BLOCK == 0 && prev->off < ALEX_MAX_FILE;
}

int alex_delta_check(const uint8_t *in, uint32_t len, struct alex_loc *prev, uint32_t *depth)
{
	if (len < ALEX_DELTA_HDR || len > ALEX_DELTA_MAX)
		return 0;
	memset(prev, 0, sizeof *prev);
	prev->off = alex_get64(in);
	prev->len = alex_get32(in + 8);
	prev->crc = alex_get32(in + 12);
	prev->flags = in[16];
	*depth = alex_delta_depth(in);
	if (in[18] || in[19] || !(prev->flags == ALEX_DELTA_BASE ? root_ok(prev, *depth)
								 : prev_ok(prev, *depth)))
		return 0;
	uint32_t pos = ALEX_DELTA_HDR, end = 0;
	while (pos < len) {
		if (len - pos < ALEX_DELTA_RUN)
			return 0;
		uint32_t off = alex_get16(in + pos), n = alex_get16(in + pos + 2);
		if (n == 0 || off < end || off + n > ALEX_BLOCK || n > len - pos - ALEX_DELTA_RUN)
			return 0;
		end = off + n;
		pos += ALEX_DELTA_RUN + n;
	}
	return 1;
}

void alex_delta_apply(const uint8_t *in, uint32_t len, uint8_t *blk)
{
	for (uint32_t pos = ALEX_DELTA_HDR; pos < len;) {
		uint32_t off = alex_get16(in + pos), n = alex_get16(in + pos + 2);
		memcpy(blk + off, in + pos + ALEX_DELTA_RUN, n);
		pos += ALEX_DELTA_RUN + n;
	}
}

int alex_delta_load(const struct alex_delta_src *src, const struct alex_loc *loc, uint8_t *blk,
		    uint32_t *depth)
{
	uint32_t lens[ALEX_DELTA_DEPTH], n = 0, want = 0, d;
	struct alex_loc cur = *loc, prev;
	const uint8_t *img;
	int err;

	if (depth)
		*depth = 0;
	for (;;) {
		if (alex_loc_codec(&cur) == ALEX_DELTA_BASE) {
			/* only ever a delta's prev (n > 0): a map never holds one */
			if (!n || !src->base)
				return ALEX_EBADBLOCK;
			if ((err = src->base(src->ctx, &cur, blk)))
				return err;
			break;
		}
		if (n && src->known && (img = src->known(src->ctx, src->key, &cur))) {
			memcpy(blk, img, ALEX_BLOCK);
			break;
		}
		if (alex_loc_codec(&cur) != ALEX_BLK_DELTA) {
			if ((err = src->whole(src->ctx, &cur, blk)))
				return err;
			break;
		}
		if (n == ALEX_DELTA_DEPTH || cur.len > ALEX_DELTA_MAX)
			return ALEX_EBADBLOCK;
		uint8_t *in = src->chain + (size_t)n * ALEX_DELTA_MAX;
		if ((err = src->stored(src->ctx, &cur, in)))
			return err;
		/* each step goes back in the log: the walk ends */
		if (!alex_delta_check(in, cur.len, &prev, &d) || (n && d != want) ||
		    (alex_loc_codec(&prev) != ALEX_DELTA_BASE && prev.off + prev.len > cur.off))
			return ALEX_EBADBLOCK;
		if (!n && depth)
			*depth = d;
		prev.epoch = cur.epoch; /* a chain stays in its epoch */
		lens[n++] = cur.len;
		want = d - 1;
		cur = prev;
	}
	while (n--)
		alex_delta_apply(src->chain + (size_t)n * ALEX_DELTA_MAX, lens[n], blk);
	return 0;
}
