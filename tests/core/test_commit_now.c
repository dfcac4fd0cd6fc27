/*
 * alex_commit_now in FULL mode: records committed unsynced (a write SQLite
 * made with no transaction end to show), mixed with synced commits,
 * boundaries (alex_commit with nothing open, which syncs them), the
 * syncing thread, and carried checkpoints in a small log.  A power cut at
 * every I/O (two subsets of the unsynced writes each) must recover a state
 * that existed, no older than the last one acknowledged by a sync.
 *
 * Found by review: a carry's slice copied a block as an unsynced record
 * left it into the database file, the syncing thread synced the file, and
 * a cut before the log's sync made recovery lay the last durable epoch's
 * deltas over bytes that never were durable -- a page that never existed
 * (seed 43).  Slices now wait while such records are unsynced
 * (commit.c: commit_after).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine.h"
#include "helpers.h"

#define MAXB 48u
#define MAXSNAP 256

struct snap {
	uint8_t b[MAXB * BLK];
	size_t len;
};

static struct snap *snaps; /* every committed state, in order */
static int nsnaps;
static int acked;          /* the last state a sync made durable */

static void first_state(alex_mem *m)
{
	struct snap *s = &snaps[0];

	memset(s->b, 0x11, 4 * BLK);
	memcpy(s->b, "SQLite format 3", 16);
	s->b[18] = s->b[19] = 1;
	memset(s->b + 72, 0, 20);
	memcpy(s->b + 92, s->b + 24, 4);
	s->len = 4 * BLK;
	alex_mem_set(m, DB, s->b, s->len);
	nsnaps = 1;
	acked = 0;
}

static int reads_as(alex_db *db, const struct snap *want)
{
	static uint8_t got[MAXB * BLK + BLK];
	size_t n = 0;

	return alex_read(db, ALEX_FILE_DB, got, sizeof got, 0, &n) == 0 && n == want->len &&
	       memcmp(got, want->b, n) == 0;
}

/* The image opens as one of the states from `from` on. */
static int recovers(alex_mem *img, int from)
{
	struct alex_io io = alex_mem_io(img);
	struct alex_config c;
	alex_db *db;
	int ok = 0;

	alex_config_default(&c);
	c.checkpoint_on_close = 0;
	if (alex_open(DB, &c, &io, &db))
		return 0;
	for (int s = nsnaps - 1; s >= from && !ok; s--)
		ok = reads_as(db, &snaps[s]);
	alex_close(db);
	return ok;
}

/* A transaction: perhaps a new block, and 1-4 writes here and there. */
static void change(alex_db *db, uint64_t *s, struct snap *next)
{
	static uint8_t buf[BLK];

	if (rnd(s) % 40 < 12 && next->len < MAXB * BLK) {
		for (uint32_t j = 0; j < BLK; j++)
			buf[j] = (uint8_t)rnd(s);
		cr_assert_eq(alex_write(db, ALEX_FILE_DB, buf, BLK, next->len), 0);
		memcpy(next->b + next->len, buf, BLK);
		next->len += BLK;
	}
	for (int k = 1 + (int)(rnd(s) % 4); k > 0; k--) {
		uint32_t b = (uint32_t)(rnd(s) % (next->len / BLK));
		uint32_t len = 1 + (uint32_t)(rnd(s) % (rnd(s) % 6 == 0 ? 1500 : 80));
		uint32_t lo = b == 0 ? 100 : 0; /* the header: the fence's */
		uint32_t at = lo + (uint32_t)(rnd(s) % (BLK - lo - len));
		for (uint32_t j = 0; j < len; j++)
			buf[j] = (uint8_t)rnd(s);
		cr_assert_eq(alex_write(db, ALEX_FILE_DB, buf, len, (uint64_t)b * BLK + at), 0);
		memcpy(next->b + (uint64_t)b * BLK + at, buf, len);
	}
}

static void step(alex_db *db, uint64_t *s)
{
	cr_assert(nsnaps < MAXSNAP);
	snaps[nsnaps] = snaps[nsnaps - 1];
	change(db, s, &snaps[nsnaps]);
	int now = rnd(s) % 3 != 0;
	cr_assert_eq(now ? alex_commit_now(db) : alex_commit(db), 0);
	nsnaps++;
	if (!now || rnd(s) % 4 == 0) {
		/* a synced commit, or a boundary: SQLite's sync or lock let go */
		if (now)
			cr_assert_eq(alex_commit(db), 0);
		acked = nsnaps - 1;
	}
	if (rnd(s) % 3 && alex_sync_start(db)) /* the syncing thread's turn */
		alex_sync_finish(db, alex_sync_run(db));
}

struct now_cuts {
	alex_mem *m;
	alex_mem **img;
	int *from;
	size_t n, cap;
};

static void cut_here(void *arg, uint64_t op, enum alex_mem_op kind, int fd)
{
	struct now_cuts *c = arg;
	(void)kind, (void)fd;

	for (uint64_t k = 0; k < 2 && c->n < c->cap; k++) {
		c->from[c->n] = acked;
		c->img[c->n++] = alex_mem_crash(c->m, ALEX_CRASH_SUBSET, op * 2 + k);
	}
}

static size_t run(uint64_t seed, size_t *total)
{
	alex_mem *m = alex_mem_new();
	struct alex_io io = alex_mem_io(m);
	struct alex_config cfg;
	struct now_cuts c = { m, calloc(40000, sizeof(alex_mem *)), calloc(40000, sizeof(int)), 0, 40000 };
	uint64_t s = seed;
	size_t bad = 0;

	cr_assert(c.img && c.from);
	first_state(m);
	small_config(&cfg);
	cfg.ckpt_carry = 1;
	cfg.checkpoint_bytes = 48u << 10; /* carries every few dozen commits */
	alex_db *db = open_engine(&cfg, &io);
	for (int i = 0; i < 20; i++)
		step(db, &s);
	alex_mem_on_op(m, cut_here, &c);
	for (int i = 20; i < 200; i++)
		step(db, &s);
	alex_mem_on_op(m, NULL, NULL);
	alex_close(db);
	for (size_t k = 0; k < c.n; k++) {
		if (!recovers(c.img[k], c.from[k]) && !bad++)
			cr_log_error("seed %llu: image %zu recovers no state from %d on",
				     (unsigned long long)seed, k, c.from[k]);
		alex_mem_free(c.img[k]);
	}
	*total += c.n;
	free(c.img);
	free(c.from);
	alex_mem_free(m);
	return bad;
}

Test(commit_now, full_unsynced_records_beside_carries_survive_every_cut, .timeout = 600)
{
	static const uint64_t seeds[] = { 43, 1, 2, 3 };
	size_t bad = 0, total = 0;

	snaps = malloc(sizeof *snaps * MAXSNAP);
	cr_assert(snaps);
	for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
		bad += run(seeds[i], &total);
	cr_expect_eq(bad, 0, "%zu of %zu crash images recover no acknowledged state", bad, total);
	free(snaps);
}
