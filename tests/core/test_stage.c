/*
 * What libalex.so's staging needs of the engines beyond the merge
 * (io_over.h): below says STAGED to every other process from a staging
 * epoch's first record (and a log of format 7 is raised to 8 for it); an
 * open transaction moves below whole -- spills, truncations and all --
 * for a commit across databases; and a staging log synced without a
 * merge survives a power cut.
 */
#include "format.h"
#include "stage_rig.h"

static void same_as(alex_db *db, const uint8_t *want, uint64_t size, const char *who)
{
	cr_assert(same(db, want, size), "%s: differs from the model", who);
}

static uint32_t slot_version(alex_mem *m, uint32_t *flags)
{
	size_t len;
	const uint8_t *lg = alex_mem_get(m, LOG, &len);
	struct alex_loghdr h0, h1, *h = NULL;

	cr_assert_not_null(lg);
	int ok0 = alex_loghdr_decode(lg, &h0) == 0, ok1 = alex_loghdr_decode(lg + BLK, &h1) == 0;
	cr_assert(ok0 || ok1);
	h = !ok1 || (ok0 && h0.epoch > h1.epoch) ? &h0 : &h1;
	*flags = h->flags;
	return h->version;
}

Test(stage, below_says_staged_to_other_processes)
{
	static uint8_t want[NB * BLK];
	struct rig r;
	struct alex_config cb;
	uint32_t flags;

	rig_new(&r, 4, want);
	cr_expect_not(alex_stage_marked(r.below), "nothing staged yet");
	put(r.above, want, 2, 1);
	cr_assert_eq(alex_commit(r.above), 0);
	cr_expect(alex_stage_marked(r.below), "the first staged commit marks below");
	cr_expect_eq(slot_version(r.m, &flags), ALEX_FORMAT_NEW, "a new log keeps its version");
	cr_expect(flags & ALEX_HDR_STAGED, "on disk at once, not with below's next record");
	/* another process, with below only, sees it at its catch-up */
	small_config(&cb);
	cb.db_only = 1;
	alex_db *other = open_engine(&cb, &r.io);
	cr_expect(alex_stage_marked(other), "another opener sees STAGED");
	cr_assert_eq(alex_close(other), 0);
	/* merged and checkpointed: below's next epoch says nothing */
	cr_assert_eq(alex_merge(r.above, r.below), 0);
	cr_assert_eq(alex_checkpoint(r.below), 0);
	cr_expect_not(alex_stage_marked(r.below), "a new epoch of below is not staged");
	/* the next staged commit marks it again */
	put(r.above, want, 3, 2);
	cr_assert_eq(alex_commit(r.above), 0);
	cr_expect(alex_stage_marked(r.below));
	same_as(r.above, want, 4 * BLK, "above");
	rig_die(&r);
	alex_mem_free(r.m);
}

/* A log of format 7 (an older ALEX made it) is raised to 8, synced, before
 * the staging log holds anything: an ALEX that knows only 7 then refuses
 * it instead of committing under the staging log's feet. */
Test(stage, format_7_is_raised_before_staging)
{
	static uint8_t want[NB * BLK];
	struct rig r;

	rig_new(&r, 4, want);
	put(r.below, want, 2, 0);
	cr_assert_eq(alex_commit(r.below), 0);
	rig_die(&r);
	log_make_version(r.m, ALEX_FORMAT_V7);
	rig_open(&r);
	uint32_t flags;
	cr_assert_eq(slot_version(r.m, &flags), ALEX_FORMAT_V7);
	put(r.above, want, 3, 1);
	cr_assert_eq(alex_commit(r.above), 0);
	/* a power cut right after: the raise was synced */
	alex_mem *img = alex_mem_crash(r.m, ALEX_CRASH_LOSE, 1);
	cr_expect_eq(slot_version(img, &flags), ALEX_FORMAT_V8, "raised, and synced");
	alex_mem_free(img);
	same_as(r.above, want, 4 * BLK, "above");
	rig_die(&r);
	alex_mem_free(r.m);
}

/* A commit across databases: the open transaction -- collected blocks,
 * spilled ones (the collector holds 7 here), a truncation and growth past
 * it -- moves below, after what above committed before it. */
Test(stage, move_carries_the_open_transaction)
{
	static uint8_t want[NB * BLK];
	struct rig r;
	struct alex_stats st0, st1;

	rig_new(&r, 40, want);
	for (uint32_t t = 2; t < 6; t++) { /* committed above, not merged */
		put(r.above, want, t, t);
		put(r.above, want, t, 30 + t);
		cr_assert_eq(alex_commit(r.above), 0);
	}
	/* the transaction: 20 blocks (spills), a cut to 12 blocks and a half,
	 * growth to 48 with some of the cut blocks left as zeros */
	for (uint32_t b = 0; b < 20; b++)
		put(r.above, want, 9, b);
	cr_assert_eq(alex_truncate(r.above, ALEX_FILE_DB, 12 * BLK + 100), 0);
	memset(want + 12 * BLK + 100, 0, (NB - 12) * BLK - 100);
	for (uint32_t b = 14; b < 48; b += 3)
		put(r.above, want, 10, b);
	put(r.above, want, 11, 47);
	alex_stats(r.above, &st0);
	cr_assert_gt(st0.spills, 0, "the transaction spilled");
	same_as(r.above, want, 48 * BLK, "above, the open transaction");

	alex_stats(r.below, &st0);
	cr_assert_eq(alex_stage_move(r.above, r.below), 0);
	cr_expect_not(alex_txn_open(r.above), "nothing left open above");
	cr_expect_not(alex_holds_pages(r.above), "above merged");
	alex_stats(r.below, &st1);
	cr_expect_eq(st1.commits, st0.commits + 1, "what above committed: one merge");
	cr_assert(alex_txn_open(r.below), "the transaction is below, open");
	cr_assert_eq(alex_commit_cond(r.below, "/mem/t.db-mj0123ABCD"), 0);
	alex_resolve(r.below);
	same_as(r.below, want, 48 * BLK, "below, committed");
	/* above learns below's new size at its catch-up, as after any
	 * commit below (libalex.so makes it at once) */
	cr_assert_eq(alex_refresh(r.above, 1), 0);
	same_as(r.above, want, 48 * BLK, "above, through below");
	/* and a death keeps it: below's records alone */
	rig_die(&r);
	rig_open(&r);
	same_as(r.above, want, 48 * BLK, "after a death");
	rig_die(&r);
	alex_mem_free(r.m);
}

/* A window that ends with no commit to carry a merge: the staging log is
 * synced instead, and a power cut then keeps its commits (its name too);
 * without the sync, a cut that loses every unsynced write keeps none. */
Test(stage, synced_staging_log_survives_a_power_cut)
{
	static uint8_t want[NB * BLK], base[NB * BLK];
	struct rig r;

	for (int sync = 1; sync >= 0; sync--) {
		rig_new(&r, 8, want);
		memcpy(base, want, 8 * BLK);
		for (uint32_t t = 2; t < 9; t++) {
			put(r.above, want, t, t % 3);
			cr_assert_eq(alex_commit(r.above), 0);
		}
		cr_assert_eq(alex_merge(r.above, r.below), 0);
		memcpy(base, want, 8 * BLK);
		for (uint32_t t = 9; t < 20; t++) {
			put(r.above, want, t, 2 + t % 5);
			cr_assert_eq(alex_commit(r.above), 0);
		}
		if (sync)
			cr_assert_eq(alex_stage_sync(r.above), 0);
		for (int seed = 1; seed < 40; seed++) {
			alex_mem *img = alex_mem_crash(r.m, sync ? ALEX_CRASH_SUBSET | ALEX_CRASH_DIRS_LOST
								   : ALEX_CRASH_LOSE, (uint64_t)seed);
			struct rig c = { .m = img };
			rig_open(&c);
			same_as(c.above, sync ? want : base, 8 * BLK, sync ? "synced" : "not synced");
			rig_die(&c);
			alex_mem_free(img);
		}
		rig_die(&r);
		alex_mem_free(r.m);
	}
}
