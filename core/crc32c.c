/* crc32c.c - CRC-32C with the SSE4.2 instruction or a byte table. */
#include "crc32c.h"

#include <string.h>

#define POLY 0x82f63b78u /* Castagnoli, reflected */

static uint32_t table[256];

static void table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (POLY & (0u - (c & 1u)));
		table[i] = c;
	}
}

uint32_t alex_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	if (!table[1])
		table_init(); /* idempotent: racing threads write equal values */
	crc = ~crc;
	while (len--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
#include <sys/platform/x86.h>
#endif

__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const void *buf,
							  size_t len)
{
	const uint8_t *p = buf;
	uint64_t c = ~crc;

	while (len && ((uintptr_t)p & 7)) {
		c = _mm_crc32_u8((uint32_t)c, *p++);
		len--;
	}
	/* four words a turn: the loop's own instructions were most of it */
	while (len >= 32) {
		uint64_t w[4];
		memcpy(w, p, 32);
		c = _mm_crc32_u64(c, w[0]);
		c = _mm_crc32_u64(c, w[1]);
		c = _mm_crc32_u64(c, w[2]);
		c = _mm_crc32_u64(c, w[3]);
		p += 32;
		len -= 32;
	}
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		c = _mm_crc32_u64(c, w);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = _mm_crc32_u8((uint32_t)c, *p++);
	return ~(uint32_t)c;
}

int alex_crc32c_hw(void)
{
	static int have = -1;

	/* glibc's loader has asked the CPU already; libgcc's
	 * __builtin_cpu_supports would link a constructor that asks again at
	 * every process's start -- a dozen CPUID instructions, each a trap
	 * to the hypervisor in a virtual machine (about 5 us each here), paid
	 * by every program run under LD_PRELOAD, most of which never commit */
	if (have < 0) {
#ifdef CPU_FEATURE_ACTIVE
		have = CPU_FEATURE_ACTIVE(SSE4_2) ? 1 : 0;
#else
		unsigned a, b, c, d;
		have = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2) ? 1 : 0;
#endif
	}
	return have;
}

uint32_t alex_crc32c(uint32_t crc, const void *buf, size_t len)
{
	return alex_crc32c_hw() ? crc_hw(crc, buf, len) : alex_crc32c_sw(crc, buf, len);
}
#else
int alex_crc32c_hw(void)
{
	return 0;
}

uint32_t alex_crc32c(uint32_t crc, const void *buf, size_t len)
{
	return alex_crc32c_sw(crc, buf, len);
}
#endif
