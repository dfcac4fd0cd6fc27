/* The collector (collect.c): one slot per block of the open transaction,
 * slabs allocated on first need and kept, truncation and clearing that
 * touch only the used keys. */
#include <criterion/criterion.h>

#include "collect.h"
#include "format.h"
#include "helpers.h"

static struct alex_collect col;

static void teardown(void)
{
	alex_col_free(&col);
}
TestSuite(collect, .fini = teardown);

/* Slots are handed out in order and found again by key; a key never
 * added is not found. */
Test(collect, add_then_find)
{
	cr_assert_eq(alex_col_init(&col, 16), 0);
	for (uint64_t b = 0; b < 10; b++)
		cr_assert_eq(alex_col_add(&col, alex_key(ALEX_FILE_DB, b * 3)), (int64_t)b);
	for (uint64_t b = 0; b < 10; b++)
		cr_expect_eq(alex_col_find(&col, alex_key(ALEX_FILE_DB, b * 3)), (int64_t)b);
	cr_expect_eq(alex_col_find(&col, alex_key(ALEX_FILE_DB, 1)), -1);
	cr_expect_eq(alex_col_find(&col, alex_key(ALEX_FILE_WAL, 0)), -1);
	cr_expect_eq(col.used, 10u);
}

/* The budget is a hard limit: the slot past max is refused (the engine
 * then spills), and the refusal takes nothing. */
Test(collect, full_collector_refuses)
{
	cr_assert_eq(alex_col_init(&col, 3), 0);
	for (uint64_t b = 0; b < 3; b++)
		cr_assert_geq(alex_col_add(&col, alex_key(0, b)), 0);
	cr_expect_eq(alex_col_add(&col, alex_key(0, 3)), -1);
	cr_expect_eq(alex_col_find(&col, alex_key(0, 3)), -1);
	cr_expect_eq(col.used, 3u);
}

/* No slab before the first add; one more exactly when slot 64 is taken. */
Test(collect, slabs_are_allocated_on_first_need)
{
	cr_assert_eq(alex_col_init(&col, 3 * ALEX_SLAB_SLOTS), 0);
	cr_expect_eq(col.nslabs, 0u);
	cr_assert_eq(alex_col_add(&col, alex_key(0, 0)), 0);
	cr_expect_eq(col.nslabs, 1u);
	for (uint64_t b = 1; b < ALEX_SLAB_SLOTS; b++)
		cr_assert_eq(alex_col_add(&col, alex_key(0, b)), (int64_t)b);
	cr_expect_eq(col.nslabs, 1u);
	cr_assert_eq(alex_col_add(&col, alex_key(0, ALEX_SLAB_SLOTS)), ALEX_SLAB_SLOTS);
	cr_expect_eq(col.nslabs, 2u);
}

/* Every slot is its own 4096 bytes, across slab boundaries: filling each
 * with its own content and reading all back finds no overlap. */
Test(collect, slots_do_not_overlap)
{
	const uint32_t n = 2 * ALEX_SLAB_SLOTS + 5;
	uint8_t want[BLK];

	cr_assert_eq(alex_col_init(&col, n), 0);
	for (uint32_t i = 0; i < n; i++) {
		int64_t s = alex_col_add(&col, alex_key(ALEX_FILE_JOURNAL, i));
		cr_assert_eq(s, (int64_t)i);
		fill_block(alex_col_slot(&col, (uint32_t)s), i + 1, i);
	}
	for (uint32_t i = 0; i < n; i++) {
		fill_block(want, i + 1, i);
		cr_assert_arr_eq(alex_col_slot(&col, i), want, BLK, "slot %u", i);
	}
	/* slots are block aligned, as the record builder may rely on */
	cr_expect_eq((uintptr_t)alex_col_slot(&col, 1) % BLK, 0u);
}

/* Truncation drops the keys of one file at or past a block, keeps that
 * file's lower blocks and every other file's blocks. */
Test(collect, trunc_drops_only_that_file_from_that_block)
{
	cr_assert_eq(alex_col_init(&col, 32), 0);
	for (unsigned f = 0; f < ALEX_NFILES; f++)
		for (uint64_t b = 0; b < 6; b++)
			cr_assert_geq(alex_col_add(&col, alex_key(f, b)), 0);
	alex_col_trunc(&col, ALEX_FILE_JOURNAL, 2);
	for (unsigned f = 0; f < ALEX_NFILES; f++)
		for (uint64_t b = 0; b < 6; b++) {
			int gone = f == ALEX_FILE_JOURNAL && b >= 2;
			cr_expect_eq(alex_col_find(&col, alex_key(f, b)) < 0, gone,
				     "file %u block %llu", f, (unsigned long long)b);
		}
	/* the dropped slots stay used (no compaction) until the collector is
	 * cleared; a dropped key may be added again, into a fresh slot */
	cr_expect_eq(col.used, 18u);
	cr_expect_eq(alex_col_add(&col, alex_key(ALEX_FILE_JOURNAL, 3)), 18);
	cr_expect_eq(alex_col_find(&col, alex_key(ALEX_FILE_JOURNAL, 3)), 18);
}

/* Truncating to block 0 empties the file; truncating past the last block
 * drops nothing. */
Test(collect, trunc_edges)
{
	cr_assert_eq(alex_col_init(&col, 8), 0);
	for (uint64_t b = 0; b < 4; b++)
		cr_assert_geq(alex_col_add(&col, alex_key(ALEX_FILE_WAL, b)), 0);
	alex_col_trunc(&col, ALEX_FILE_WAL, 4);
	for (uint64_t b = 0; b < 4; b++)
		cr_expect_geq(alex_col_find(&col, alex_key(ALEX_FILE_WAL, b)), 0);
	alex_col_trunc(&col, ALEX_FILE_WAL, 0);
	for (uint64_t b = 0; b < 4; b++)
		cr_expect_eq(alex_col_find(&col, alex_key(ALEX_FILE_WAL, b)), -1);
}

/* Clearing forgets every key and starts again at slot 0, reusing the
 * slabs: a steady state of commits allocates nothing. */
Test(collect, clear_reuses_slots_and_slabs)
{
	cr_assert_eq(alex_col_init(&col, 2 * ALEX_SLAB_SLOTS), 0);
	for (uint64_t b = 0; b < ALEX_SLAB_SLOTS + 1; b++)
		cr_assert_geq(alex_col_add(&col, alex_key(0, b)), 0);
	uint8_t *first = alex_col_slot(&col, 0);
	alex_col_trunc(&col, 0, 10); /* dropped keys must not confuse clear */
	alex_col_clear(&col);
	cr_expect_eq(col.used, 0u);
	cr_expect_eq(col.index.n, 0u);
	for (uint64_t b = 0; b < ALEX_SLAB_SLOTS + 1; b++)
		cr_expect_eq(alex_col_find(&col, alex_key(0, b)), -1);
	cr_expect_eq(alex_col_add(&col, alex_key(1, 7)), 0);
	cr_expect_eq(col.nslabs, 2u);
	cr_expect_eq(alex_col_slot(&col, 0), first);
}

/* The memory it reports is what it holds: the index and key array from
 * the start, then whole slabs as they come, the last one cut to max. */
Test(collect, bytes_count_slabs_as_allocated)
{
	const uint32_t max = ALEX_SLAB_SLOTS + 10;
	const uint64_t per = BLK + sizeof(uint64_t) + sizeof(uint8_t *); /* a slot, its key, its pointer */

	cr_assert_eq(alex_col_init(&col, max), 0);
	cr_expect_eq(alex_col_bytes(&col), alex_map_bytes(&col.index), "nothing but the index yet");
	cr_assert_eq(alex_col_add(&col, alex_key(0, 0)), 0);
	cr_expect_eq(alex_col_bytes(&col),
		     alex_map_bytes(&col.index) + (uint64_t)ALEX_SLAB_SLOTS * per);
	for (uint64_t b = 1; b <= ALEX_SLAB_SLOTS; b++)
		cr_assert_geq(alex_col_add(&col, alex_key(0, b)), 0);
	cr_expect_eq(alex_col_bytes(&col), alex_map_bytes(&col.index) + (uint64_t)max * per);
	cr_expect_geq(col.index.cap, 2 * (ALEX_SLAB_SLOTS + 1), "the index grew with the slots");
	for (uint64_t b = 0; b <= ALEX_SLAB_SLOTS; b++)
		cr_expect_eq(alex_col_find(&col, alex_key(0, b)), (int64_t)b);
}

/* free leaves a zeroed collector, and a second free is harmless (the
 * engine frees on every close path). */
Test(collect, free_is_idempotent)
{
	cr_assert_eq(alex_col_init(&col, 4), 0);
	cr_assert_eq(alex_col_add(&col, alex_key(0, 0)), 0);
	alex_col_free(&col);
	cr_expect_null(col.slabs);
	cr_expect_null(col.slot_key);
	cr_expect_eq(col.max, 0u);
	alex_col_free(&col);
}
