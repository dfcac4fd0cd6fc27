/*
 * test_stage_carry.c - the engine below a staging engine carries its
 * checkpoints (commit.c: alex_ckpt_if_due after a merge; carry.c): its
 * copy in slices inside later merges, the letting go at the beginning of
 * a merge's commit.  A cut at any I/O, any subset of unsynced sectors
 * kept, recovers a state no older than the last merge that returned.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "carry.h"
#include "stage_rig.h"

#define BLOCKS 48u
#define MAXS 400

static uint8_t snap[MAXS][BLOCKS * BLK];
static int nsnap;

struct stage_cuts {
	alex_mem *m;
	alex_mem **img;
	int *merged; /* the newest snapshot a returned merge made durable */
	size_t n, cap;
};

static int merged_now;

static void cut(void *arg, uint64_t op, enum alex_mem_op kind, int fd)
{
	struct stage_cuts *c = arg;

	(void)kind, (void)fd;
	for (uint64_t seed = 0; seed < 2 && c->n < c->cap; seed++) {
		c->merged[c->n] = merged_now;
		c->img[c->n++] = alex_mem_crash(c->m, ALEX_CRASH_SUBSET, op * 2 + seed);
	}
}

/* Does the image, opened as libalex.so stacks the engines, read a
 * snapshot no older than merged? */
static int recovers(alex_mem *img, int merged)
{
	struct rig c = { .m = img };
	struct alex_config cb;

	small_config(&cb);
	cb.db_only = 1;
	rig_open_with(&c, &cb, 0);
	int ok = 0;
	for (int s = nsnap - 1; s >= merged && !ok; s--)
		ok = same(c.above, snap[s], BLOCKS * BLK);
	rig_die(&c);
	return ok;
}

Test(stage_carry, a_carry_below_survives_a_cut_at_every_io, .timeout = 600)
{
	static uint8_t want[BLOCKS * BLK];
	struct stage_cuts cuts = { NULL, calloc(60000, sizeof(alex_mem *)), calloc(60000, sizeof(int)),
			     0, 60000 };
	struct alex_config cb;
	struct alex_stats st;
	struct rig r;
	uint64_t s = 11;

	r.m = alex_mem_new();
	for (uint32_t i = 0; i < BLOCKS; i++)
		fill_block(want + (size_t)i * BLK, 1, i);
	memcpy(want, "SQLite format 3", 16); /* page 1 markable: a fenced epoch */
	want[18] = want[19] = 1;
	memset(want + 72, 0, 20);
	memcpy(want + 92, want + 24, 4);
	alex_mem_set(r.m, DB, want, sizeof want);
	small_config(&cb);
	cb.db_only = 1;
	cb.checkpoint_bytes = 48u << 10; /* below carries every few merges */
	rig_open_with(&r, &cb, 0);
	cuts.m = r.m;
	memcpy(snap[0], want, sizeof want);
	nsnap = 1;
	merged_now = 0;
	for (int step = 0; step < 240; step++) {
		if (step == 40)
			alex_mem_on_op(r.m, cut, &cuts);
		int nw = 1 + (int)(rnd(&s) % 3);
		for (int k = 0; k < nw; k++) {
			uint32_t b = 1 + (uint32_t)(rnd(&s) % (BLOCKS - 1));
			put(r.above, want, (uint32_t)step + 2, b);
		}
		cr_assert_eq(alex_commit(r.above), 0, "step %d", step);
		cr_assert_lt(nsnap, MAXS);
		memcpy(snap[nsnap++], want, sizeof want);
		if (step % 4 == 3) {
			cr_assert_eq(alex_merge(r.above, r.below), 0, "step %d merge", step);
			merged_now = nsnap - 1;
			/* the syncing thread, for below's carried copy */
			if (rnd(&s) % 3 && alex_sync_start(r.below))
				alex_sync_finish(r.below, alex_sync_run(r.below));
		}
		cr_assert(same(r.above, want, sizeof want), "step %d reads", step);
	}
	alex_mem_on_op(r.m, NULL, NULL);
	alex_stats(r.below, &st);
	cr_assert_geq(st.carries, 3, "below carried %llu times", (unsigned long long)st.carries);
	cr_assert_geq(st.carry_applies, 2, "below let go %llu times",
		      (unsigned long long)st.carry_applies);
	rig_die(&r);
	size_t bad = 0;
	for (size_t k = 0; k < cuts.n; k++) {
		if (!recovers(cuts.img[k], cuts.merged[k]) && !bad++)
			cr_log_error("image %zu (merged %d of %d) recovers no later state", k,
				     cuts.merged[k], nsnap);
		alex_mem_free(cuts.img[k]);
	}
	cr_expect_eq(bad, 0, "%zu of %zu images", bad, cuts.n);
	cr_log_info("%zu images, %llu carries below", cuts.n, (unsigned long long)st.carries);
	free(cuts.img);
	free(cuts.merged);
	alex_mem_free(r.m);
}
