/* The block map against a plain array, under random puts, deletes and
 * truncations. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "helpers.h"
#include "map.h"

#define NB 3000

Test(map, random_ops_match_reference)
{
	struct alex_map m;
	static int64_t ref[3][NB]; /* -1 absent, else off */
	uint64_t s = 42;

	cr_assert_eq(alex_map_init(&m, 4), 0);
	for (int f = 0; f < 3; f++)
		for (int b = 0; b < NB; b++)
			ref[f][b] = -1;
	for (int i = 0; i < 200000; i++) {
		unsigned f = rnd(&s) % 3, b = rnd(&s) % NB, op = rnd(&s) % 100;
		if (op < 60) {
			struct alex_loc l = { (uint64_t)i, 1, 2, 0, 0 };
			cr_assert_eq(alex_map_put(&m, alex_key(f, b), &l), 0);
			ref[f][b] = i;
		} else if (op < 95) {
			int had = alex_map_del(&m, alex_key(f, b));
			cr_assert_eq(had, ref[f][b] >= 0);
			ref[f][b] = -1;
		} else if (op < 96) {
			alex_map_trunc(&m, f, b);
			for (int k = b; k < NB; k++)
				ref[f][k] = -1;
		}
	}
	size_t n = 0;
	for (unsigned f = 0; f < 3; f++)
		for (unsigned b = 0; b < NB; b++) {
			struct alex_loc *l = alex_map_get(&m, alex_key(f, b));
			if (ref[f][b] < 0) {
				cr_assert_null(l, "file %u block %u", f, b);
			} else {
				cr_assert_not_null(l, "file %u block %u", f, b);
				cr_assert_eq(l->off, (uint64_t)ref[f][b]);
				n++;
			}
		}
	cr_expect_eq(m.n, n);
	alex_map_free(&m);
}

Test(map, keys_order_by_file_then_block)
{
	cr_expect_lt(alex_key(0, 999999), alex_key(1, 0));
	cr_expect_lt(alex_key(1, 5), alex_key(1, 6));
	cr_expect_eq(alex_key_file(alex_key(2, 77)), 2u);
	cr_expect_eq(alex_key_block(alex_key(2, 77)), 77u);
	cr_expect_neq(alex_key(0, 0), 0u);
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* alex_map_sorted_keys (a radix sort over the bytes that differ) gives
 * what qsort gives: every key once, ascending, for maps of every size and
 * spread -- one file or several, blocks in one byte or across five. */
Test(map, sorted_keys_are_every_key_in_order)
{
	static const uint64_t spans[] = { 1, 200, 1u << 16, 1u << 20, 1ull << 40 };
	uint64_t s = 99;

	for (int round = 0; round < 60; round++) {
		struct alex_map m;
		size_t want_n = round < 5 ? (size_t)round : (size_t)(rnd(&s) % 20000);
		uint64_t span = spans[round % 5];
		unsigned files = 1 + (unsigned)(round % 3);
		cr_assert_eq(alex_map_init(&m, 16), 0);
		struct alex_loc v = { 0 };
		for (size_t i = 0; i < want_n; i++)
			cr_assert_eq(alex_map_put(&m, alex_key((unsigned)(rnd(&s) % files),
							      rnd(&s) % span), &v), 0);
		uint64_t *want = malloc((m.n + 1) * sizeof *want);
		size_t n = 0, got_n;
		for (size_t i = 0; i < m.cap; i++)
			if (m.keys[i])
				want[n++] = m.keys[i];
		qsort(want, n, sizeof *want, u64_cmp);
		uint64_t *got = alex_map_sorted_keys(&m, &got_n);
		cr_assert_not_null(got);
		cr_assert_eq(got_n, n, "round %d: %zu keys, want %zu", round, got_n, n);
		for (size_t i = 0; i < n; i++)
			cr_assert_eq(got[i], want[i], "round %d: key %zu", round, i);
		free(got);
		free(want);
		alex_map_free(&m);
	}
}
