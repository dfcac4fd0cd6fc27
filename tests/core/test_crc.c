/* CRC-32C against the standard test vectors (RFC 3720 B.4), both paths. */
#include <criterion/criterion.h>

#include "crc32c.h"

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

static void vectors(crc_fn fn)
{
	uint8_t buf[32];

	cr_expect_eq(fn(0, "123456789", 9), 0xe3069283u);
	memset(buf, 0, 32);
	cr_expect_eq(fn(0, buf, 32), 0x8a9136aau);
	memset(buf, 0xff, 32);
	cr_expect_eq(fn(0, buf, 32), 0x62a8ab43u);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	cr_expect_eq(fn(0, buf, 32), 0x46dd794eu);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)(31 - i);
	cr_expect_eq(fn(0, buf, 32), 0x113fdb5cu);
	cr_expect_eq(fn(0, "", 0), 0u);
}

Test(crc32c, software_vectors) { vectors(alex_crc32c_sw); }
Test(crc32c, dispatch_vectors) { vectors(alex_crc32c); }

Test(crc32c, paths_agree_on_any_split)
{
	uint8_t buf[1000];
	for (int i = 0; i < 1000; i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	for (size_t start = 0; start < 16; start++)
		for (size_t cut = 0; cut < 40; cut++) {
			size_t n = 1000 - start;
			uint32_t whole = alex_crc32c_sw(0, buf + start, n);
			uint32_t parts = alex_crc32c(alex_crc32c(0, buf + start, cut), buf + start + cut,
						     n - cut);
			cr_assert_eq(whole, parts, "start %zu cut %zu", start, cut);
		}
}

/* Record-sized buffers, every alignment, lengths around the unrolled
 * loop's step, and a start register other than zero: the paths agree. */
Test(crc32c, long_buffers_agree)
{
	static uint8_t buf[6000];
	uint64_t x = 0x9e3779b97f4a7c15u;
	for (size_t i = 0; i < sizeof buf; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		buf[i] = (uint8_t)x;
	}
	for (size_t start = 0; start < 9; start++)
		for (size_t n = 700; n + start <= sizeof buf; n += n < 1600 ? 1 : 97) {
			uint32_t seed = (uint32_t)(n * 2654435761u);
			cr_assert_eq(alex_crc32c(seed, buf + start, n),
				     alex_crc32c_sw(seed, buf + start, n), "start %zu n %zu", start, n);
		}
}
