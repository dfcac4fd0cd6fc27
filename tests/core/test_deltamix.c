/*
 * Two engines on one log take random small changes of 16 blocks in turns
 * (DELTA blocks over each other's versions), with spills, discarded
 * transactions, checkpoints by either, and reopens; one engine may be in
 * NORMAL mode.  Both read everything after every step, and every seventh
 * step four crash images must each recover a state no older than the last
 * acknowledged one.  Written by the review of d201081, which found no bug.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "format.h"
#include "helpers.h"

#define NB 16u
#define MAXSNAP 4000

static uint8_t model[NB * BLK];
static uint8_t (*snaps)[NB * BLK];
static int nsnaps;
static uint64_t carried; /* epochs begun carrying, in all runs */

static void make_file(alex_mem *m)
{
	memset(model, 0x11, sizeof model);
	memcpy(model, "SQLite format 3", 16);
	model[18] = model[19] = 1;
	memset(model + 72, 0, 20);
	memcpy(model + 92, model + 24, 4);
	alex_mem_set(m, DB, model, sizeof model);
}

static void check(alex_db *db, const uint8_t *want, const char *what, int step)
{
	static uint8_t got[NB * BLK];
	size_t n = 0;
	int rc = alex_read(db, ALEX_FILE_DB, got, sizeof got, 0, &n);
	cr_assert_eq(rc, 0, "%s step %d: read %s", what, step, alex_strerror(rc));
	cr_assert_eq(n, sizeof got, "%s step %d: size", what, step);
	for (size_t i = 0; i < sizeof got; i++)
		if (got[i] != want[i])
			cr_assert_fail("%s step %d: byte %zu (block %zu) %02x want %02x", what, step,
				       i, i / BLK, got[i], want[i]);
}

static int matches(alex_db *db, const uint8_t *want)
{
	static uint8_t got[NB * BLK];
	size_t n = 0;
	if (alex_read(db, ALEX_FILE_DB, got, sizeof got, 0, &n) || n != NB * BLK)
		return 0;
	return memcmp(got, want, NB * BLK) == 0;
}

static void crash_check(alex_mem *m, int how, uint64_t seed, int acked, int step)
{
	alex_mem *img = alex_mem_crash(m, (enum alex_crash)how, seed);
	struct alex_io io = alex_mem_io(img);
	struct alex_config c;
	alex_db *db;
	small_config(&c);
	int rc = alex_open(DB, &c, &io, &db);
	cr_assert_eq(rc, 0, "step %d crash %d: open %s", step, how, alex_strerror(rc));
	int ok = 0;
	for (int s = nsnaps - 1; s >= acked && !ok; s--)
		ok = matches(db, snaps[s]);
	if (!ok) {
		struct alex_stats st;
		alex_stats(db, &st);
		cr_assert_fail("step %d crash %d seed %llu: no snapshot >= %d (of %d) matches; "
			       "stop %d at %llu",
			       step, how, (unsigned long long)seed, acked, nsnaps,
			       (int)st.stop_reason, (unsigned long long)st.stop_offset);
	}
	alex_close(db);
	alex_mem_free(img);
}

/* Returns the deltas the two engines open at the end wrote. */
/* mode: 0 both FULL, 1 B in NORMAL mode, 2 both FULL with carried
 * epochs (carry.c) */
static uint64_t run(uint64_t seed, int mode)
{
	int normal = mode == 1;
	alex_mem *m = alex_mem_new();
	struct alex_io io = alex_mem_io(m);
	struct alex_config cfg[2];
	alex_db *e[2];
	uint64_t s = seed;
	static uint8_t buf[BLK];

	snaps = malloc(sizeof *snaps * MAXSNAP);
	nsnaps = 0;
	make_file(m);
	memcpy(snaps[nsnaps++], model, sizeof model);
	int acked = 0;
	for (int i = 0; i < 2; i++) {
		small_config(&cfg[i]);
		cfg[i].checkpoint_bytes = 256u << 10;
		if (normal && i == 1)
			cfg[i].sync = ALEX_SYNC_NORMAL;
		cfg[i].ckpt_carry = mode == 2;
		if (mode == 2) /* many carries, few checkpoints or reopens between */
			cfg[i].checkpoint_bytes = 64u << 10;
		e[i] = open_engine(&cfg[i], &io);
	}
	for (int step = 0; step < 600; step++) {
		int w = (int)(rnd(&s) % 2);
		alex_db *db = e[w];
		cr_assert_eq(alex_refresh(db, 1), 0, "step %d refresh", step);
		uint8_t next[NB * BLK];
		memcpy(next, model, sizeof next);
		int big = rnd(&s) % 10 == 0;
		int nw = big ? 20 + (int)(rnd(&s) % 20) : 1 + (int)(rnd(&s) % 4);
		for (int k = 0; k < nw; k++) {
			uint32_t b = big ? (uint32_t)(k % NB) : (uint32_t)(rnd(&s) % NB);
			uint32_t len = 1 + (uint32_t)(rnd(&s) % (rnd(&s) % 8 == 0 ? 1500 : 60));
			uint32_t lo = b == 0 ? 100 : 0;
			uint32_t at = lo + (uint32_t)(rnd(&s) % (BLK - lo - len));
			for (uint32_t j = 0; j < len; j++)
				buf[j] = (uint8_t)rnd(&s);
			uint64_t off = (uint64_t)b * BLK + at;
			int rc = alex_write(db, ALEX_FILE_DB, buf, len, off);
			cr_assert_eq(rc, 0, "step %d write %s", step, alex_strerror(rc));
			memcpy(next + off, buf, len);
		}
		if (rnd(&s) % 8 == 0) {
			cr_assert_eq(alex_discard(db), 0, "step %d discard", step);
		} else {
			int rc = alex_commit(db);
			cr_assert_eq(rc, 0, "step %d commit %s", step, alex_strerror(rc));
			memcpy(model, next, sizeof model);
			cr_assert_lt(nsnaps, MAXSNAP);
			memcpy(snaps[nsnaps++], model, sizeof model);
			if (!normal || w == 0)
				acked = nsnaps - 1;
		}
		uint64_t r = rnd(&s) % (mode == 2 ? 120 : 30);
		if (r == 0) {
			cr_assert_eq(alex_refresh(e[(int)(rnd(&s) % 2)], 1), 0);
			int rc = alex_checkpoint(e[(int)(rnd(&s) % 2)]);
			cr_assert_eq(rc, 0, "step %d checkpoint %s", step, alex_strerror(rc));
			acked = nsnaps - 1;
		} else if (r == 1) {
			int x = (int)(rnd(&s) % 2);
			alex_close(e[x]);
			e[x] = open_engine(&cfg[x], &io);
			if (normal && x == 1)
				acked = nsnaps - 1; /* B's close syncs */
		} else if (r == 2 && normal) {
			cr_assert_eq(alex_sync(e[1]), 0);
			acked = nsnaps - 1;
		}
		for (int i = 0; i < 2; i++) {
			cr_assert_eq(alex_refresh(e[i], 1), 0);
			check(e[i], model, i ? "B" : "A", step);
		}
		if (step % 7 == 3) {
			crash_check(m, ALEX_CRASH_KEEP, 0, acked, step);
			crash_check(m, ALEX_CRASH_LOSE, 0, acked, step);
			crash_check(m, ALEX_CRASH_SUBSET, seed * 31 + (uint64_t)step, acked, step);
			crash_check(m, ALEX_CRASH_TEAR, seed * 17 + (uint64_t)step, acked, step);
		}
	}
	struct alex_stats st, st1;
	alex_stats(e[0], &st);
	alex_stats(e[1], &st1);
	cr_log_info("seed %llu: deltas %llu + %llu, spills %llu, checkpoints %llu, carries %llu "
		    "+ %llu, applied %llu + %llu",
		    (unsigned long long)seed, (unsigned long long)st.blocks_delta,
		    (unsigned long long)st1.blocks_delta, (unsigned long long)st.spills,
		    (unsigned long long)st.checkpoints, (unsigned long long)st.carries,
		    (unsigned long long)st1.carries, (unsigned long long)st.carry_applies,
		    (unsigned long long)st1.carry_applies);
	carried += st.carries + st1.carries;
	alex_close(e[0]);
	alex_close(e[1]);
	alex_mem_free(m);
	free(snaps);
	return st.blocks_delta + st1.blocks_delta;
}

Test(deltamix, two_engines_full, .timeout = 600)
{
	uint64_t deltas = 0;
	for (uint64_t seed = 1; seed <= 40; seed++)
		deltas += run(seed, 0);
	cr_expect_gt(deltas, 2000, "%llu deltas in all", (unsigned long long)deltas);
}

Test(deltamix, two_engines_normal, .timeout = 600)
{
	uint64_t deltas = 0;
	for (uint64_t seed = 11; seed <= 50; seed++)
		deltas += run(seed, 1);
	cr_expect_gt(deltas, 2000, "%llu deltas in all", (unsigned long long)deltas);
}

Test(deltamix, two_engines_carried_epochs, .timeout = 600)
{
	uint64_t deltas = 0;
	for (uint64_t seed = 61; seed <= 100; seed++)
		deltas += run(seed, 2);
	cr_expect_gt(deltas, 2000, "%llu deltas in all", (unsigned long long)deltas);
	cr_expect_gt(carried, 40, "%llu carried epochs in all", (unsigned long long)carried);
}
