/*
 * A staging engine over the engine below it (io_over.h, docs/STAGING.md):
 * its reads fall through to below, its commits never sync and never reach
 * below, and alex_merge hands below the latest version of every block as
 * one synced commit.  Checked against a model of the bytes, through
 * process deaths (both engines dropped without a checkpoint) and power
 * cuts (the image of the synced bytes, the staging files gone as tmpfs's
 * would be: what a power cut leaves of a staging log is the next step).
 */
#include <errno.h>

#include "helpers.h"
#include "io_over.h"
#include "log.h"

#define STAGE "/mem/t.db-alex-stage"
#define NB 24u /* blocks the model covers */

struct rig {
	alex_mem *m;
	struct alex_io io, over_io;
	struct alex_io_over *ov;
	alex_db *below, *above;
};

static void rig_open(struct rig *r)
{
	struct alex_config cb, ca;

	r->io = alex_mem_io(r->m);
	alex_config_default(&cb);
	cb.checkpoint_on_close = 0;
	cb.db_only = 1;
	r->below = open_engine(&cb, &r->io);
	cr_assert_eq(alex_io_over_new(r->below, &r->io, &r->ov), 0);
	r->over_io = alex_io_over(r->ov);
	alex_config_default(&ca);
	alex_config_over(&ca);
	r->above = open_engine(&ca, &r->over_io);
}

/* Both engines dropped as a dying process leaves them: no checkpoint, no
 * sync, no merge. */
static void rig_die(struct rig *r)
{
	cr_assert_eq(alex_close(r->above), 0);
	alex_io_over_free(r->ov);
	cr_assert_eq(alex_close(r->below), 0);
}

static void rig_new(struct rig *r, uint32_t blocks)
{
	static uint8_t d[NB * BLK];

	r->m = alex_mem_new();
	for (uint32_t i = 0; i < blocks; i++)
		fill_block(d + (size_t)i * BLK, 1, i);
	alex_mem_set(r->m, DB, d, (size_t)blocks * BLK);
	rig_open(r);
}

/* Every byte of file f through db equals want[0, size). */
static void same_as(alex_db *db, const uint8_t *want, uint64_t size, const char *who, int step)
{
	static uint8_t got[NB * BLK + BLK];
	uint64_t s;
	size_t n;

	cr_assert_eq(alex_size(db, ALEX_FILE_DB, &s), 0);
	cr_assert_eq(s, size, "%s, step %d: size %llu, want %llu", who, step, (unsigned long long)s,
		     (unsigned long long)size);
	cr_assert_eq(alex_read(db, ALEX_FILE_DB, got, sizeof got, 0, &n), 0);
	cr_assert_eq(n, size, "%s, step %d", who, step);
	for (uint64_t i = 0; i < size; i++)
		cr_assert_eq(got[i], want[i], "%s, step %d: byte %llu", who, step,
			     (unsigned long long)i);
}

/* What a power cut leaves of a staging log in tmpfs: nothing. */
static void gone(alex_mem *img)
{
	struct alex_io io = alex_mem_io(img);
	int yes = 0;

	cr_assert_eq(io.ops->exists(io.ctx, STAGE, &yes), 0);
	if (yes)
		cr_assert_eq(io.ops->unlink(io.ctx, STAGE), 0);
}

static uint64_t syncs;
static void count_syncs(void *arg, uint64_t op, enum alex_mem_op kind, int fd)
{
	(void)arg, (void)op, (void)fd;
	if (kind == ALEX_MEM_SYNC)
		syncs++;
}

Test(over, reads_fall_through_and_commits_stay_above)
{
	static uint8_t b[BLK], want[8 * BLK];
	struct rig r;
	struct alex_stats st0, st1;
	size_t n;

	rig_new(&r, 8);
	for (uint32_t i = 0; i < 8; i++)
		fill_block(want + (size_t)i * BLK, 1, i);
	same_as(r.above, want, 8 * BLK, "above, at open", 0);
	/* below commits on its own: above reads it */
	fill_block(b, 2, 3);
	cr_assert_eq(alex_write(r.below, ALEX_FILE_DB, b, BLK, 3 * BLK), 0);
	cr_assert_eq(alex_commit(r.below), 0);
	memcpy(want + 3 * BLK, b, BLK);
	same_as(r.above, want, 8 * BLK, "above, below's commit", 0);

	alex_stats(r.below, &st0);
	syncs = 0;
	alex_mem_on_op(r.m, count_syncs, NULL);
	for (uint32_t t = 3; t < 40; t++) {
		fill_block(b, t, t % 5);
		cr_assert_eq(alex_write(r.above, ALEX_FILE_DB, b + 100, 300, (t % 5) * BLK + 100), 0);
		cr_assert_eq(alex_commit(r.above), 0);
		memcpy(want + (t % 5) * BLK + 100, b + 100, 300);
	}
	alex_mem_on_op(r.m, NULL, NULL);
	cr_expect_eq(syncs, 0, "above synced %llu times", (unsigned long long)syncs);
	alex_stats(r.below, &st1);
	cr_expect_eq(st1.commits, st0.commits, "below committed nothing of above's");
	same_as(r.above, want, 8 * BLK, "above, its commits", 0);
	cr_assert_eq(alex_read(r.below, ALEX_FILE_DB, b, BLK, 0, &n), 0);
	uint8_t first[BLK];
	fill_block(first, 1, 0);
	cr_expect_arr_eq(b, first, BLK, "below does not see above's commits");
	rig_die(&r);
	alex_mem_free(r.m);
}

Test(over, merge_is_one_synced_commit_of_below)
{
	static uint8_t b[BLK], want[NB * BLK];
	struct rig r;
	struct alex_stats st0, st1, sa;

	rig_new(&r, 8);
	for (uint32_t i = 0; i < 8; i++)
		fill_block(want + (size_t)i * BLK, 1, i);
	/* a window of commits: the same pages again and again, the file grown */
	for (uint32_t t = 2; t < 200; t++) {
		uint32_t blk = t % 3 ? 0 : 8 + t % 7;
		fill_block(b, t, blk);
		cr_assert_eq(alex_write(r.above, ALEX_FILE_DB, b, BLK, (uint64_t)blk * BLK), 0);
		cr_assert_eq(alex_commit(r.above), 0);
		memcpy(want + (size_t)blk * BLK, b, BLK);
	}
	alex_stats(r.below, &st0);
	cr_assert(alex_holds_pages(r.above));
	cr_assert_eq(alex_merge(r.above, r.below), 0);
	alex_stats(r.below, &st1);
	alex_stats(r.above, &sa);
	cr_expect_eq(st1.commits, st0.commits + 1, "one commit of below");
	cr_expect_eq(st1.syncs, st0.syncs + 1, "synced once (FULL)");
	cr_expect_leq(st1.blocks_logged - st0.blocks_logged, 8, "the latest versions only: %llu",
		      (unsigned long long)(st1.blocks_logged - st0.blocks_logged));
	cr_expect_not(alex_holds_pages(r.above), "above starts over");
	same_as(r.below, want, 15 * BLK, "below after the merge", 0);
	same_as(r.above, want, 15 * BLK, "above after the merge", 0);
	cr_expect_eq(alex_merge(r.above, r.below), 0, "nothing to merge");
	alex_stats(r.below, &st0);
	cr_expect_eq(st0.commits, st1.commits);

	/* a power cut now: below alone (the staging log gone) has it all */
	alex_mem *img = alex_mem_crash(r.m, ALEX_CRASH_SUBSET, 7);
	rig_die(&r);
	alex_mem_free(r.m);
	gone(img);
	r.m = img;
	rig_open(&r);
	same_as(r.below, want, 15 * BLK, "below after a power cut", 0);
	same_as(r.above, want, 15 * BLK, "above after a power cut", 0);
	rig_die(&r);
	alex_mem_free(r.m);
}

Test(over, busy_while_a_transaction_is_open)
{
	static uint8_t b[BLK];
	struct rig r;

	rig_new(&r, 4);
	fill_block(b, 2, 1);
	cr_assert_eq(alex_write(r.above, ALEX_FILE_DB, b, BLK, BLK), 0);
	cr_assert_eq(alex_commit(r.above), 0);
	cr_assert_eq(alex_write(r.above, ALEX_FILE_DB, b, 10, 0), 0);
	cr_expect_eq(alex_merge(r.above, r.below), ALEX_EBUSY, "above's transaction");
	cr_assert_eq(alex_commit(r.above), 0);
	cr_assert_eq(alex_write(r.below, ALEX_FILE_DB, b, 10, 0), 0);
	cr_expect_eq(alex_merge(r.above, r.below), ALEX_EBUSY, "below's transaction");
	cr_assert_eq(alex_discard(r.below), 0);
	cr_expect_eq(alex_merge(r.above, r.below), 0);
	rig_die(&r);
	alex_mem_free(r.m);
}

/* The merge's commit fails (an I/O error): below is as it was, above still
 * holds everything, and the merge succeeds once there is room. */
Test(over, failed_merge_moves_nothing)
{
	static uint8_t b[BLK], want[NB * BLK], before[NB * BLK];
	struct rig r;
	size_t n;

	rig_new(&r, 8);
	for (uint32_t i = 0; i < 8; i++)
		fill_block(want + (size_t)i * BLK, 1, i);
	memcpy(before, want, sizeof before);
	for (uint32_t t = 2; t < 12; t++) {
		fill_block(b, t, t);
		cr_assert_eq(alex_write(r.above, ALEX_FILE_DB, b, BLK, (uint64_t)t * BLK), 0);
		cr_assert_eq(alex_commit(r.above), 0);
		memcpy(want + (size_t)t * BLK, b, BLK);
	}
	alex_mem_fail_at(r.m, alex_mem_ops(r.m) + 1, ALEX_MEM_WRITE | ALEX_MEM_SYNC | ALEX_MEM_TRUNC,
			 EIO);
	int rc = alex_merge(r.above, r.below);
	cr_assert_eq(rc, EIO, "the merge's first write fails: %s", alex_strerror(rc));
	alex_mem_fail_at(r.m, 0, 0, 0);
	cr_assert(alex_holds_pages(r.above));
	cr_assert_eq(alex_read(r.below, ALEX_FILE_DB, b, BLK, 11 * BLK, &n), 0);
	cr_expect_eq(n, 0, "below did not grow");
	same_as(r.above, want, 12 * BLK, "above after the failed merge", 0);
	cr_assert_eq(alex_merge(r.above, r.below), 0);
	same_as(r.below, want, 12 * BLK, "below after the retry", 0);
	rig_die(&r);
	alex_mem_free(r.m);
}

#define MAX_SINCE 512
struct state {
	uint8_t b[NB * BLK];
	uint64_t size;
};

/* Which of the states since the last merge db shows: its index, -1 for
 * the merged state itself (none of them), -2 for none at all. */
static int which_state(alex_db *db, const struct state *since, int n, const uint8_t *merged,
		       uint64_t merged_size)
{
	static uint8_t got[NB * BLK + BLK];
	uint64_t size;
	size_t len;

	cr_assert_eq(alex_size(db, ALEX_FILE_DB, &size), 0);
	cr_assert_eq(alex_read(db, ALEX_FILE_DB, got, sizeof got, 0, &len), 0);
	cr_assert_eq(len, size);
	for (int i = n - 1; i >= 0; i--)
		if (since[i].size == size && memcmp(since[i].b, got, size) == 0)
			return i;
	return size == merged_size && memcmp(merged, got, size) == 0 ? -1 : -2;
}

/*
 * Random writes (whole and partial blocks), truncations and growth
 * committed above, merges, process deaths and power cuts, against two
 * models: what was committed (above) and what was merged (below).
 */
Test(over, random_against_a_model, .timeout = 120)
{
	static uint8_t cur[NB * BLK], merged[NB * BLK], b[BLK];
	uint64_t cur_size, merged_size, s = 99;
	struct rig r;
	int deaths = 0, cuts = 0, merges = 0, replayed = 0;
	struct state *since = calloc(MAX_SINCE, sizeof *since);
	int nsince = 0;

	cr_assert_not_null(since);

	rig_new(&r, 8);
	for (uint32_t i = 0; i < 8; i++)
		fill_block(cur + (size_t)i * BLK, 1, i);
	cur_size = 8 * BLK;
	memcpy(merged, cur, sizeof cur);
	merged_size = cur_size;
	for (int step = 0; step < 1500; step++) {
		int nops = 1 + (int)(rnd(&s) % 4);
		for (int k = 0; k < nops; k++) {
			uint64_t what = rnd(&s) % 10;
			if (what < 7) {
				uint32_t blk = (uint32_t)(rnd(&s) % (NB - 1));
				uint32_t at = (uint32_t)(rnd(&s) % BLK), len = 1 + (uint32_t)(rnd(&s) % (BLK - at));
				if (what < 3)
					at = 0, len = BLK;
				fill_block(b, (uint32_t)step + 2, blk);
				uint64_t off = (uint64_t)blk * BLK + at;
				cr_assert_eq(alex_write(r.above, ALEX_FILE_DB, b, len, off), 0);
				if (off > cur_size)
					memset(cur + cur_size, 0, off - cur_size);
				memcpy(cur + off, b, len);
				if (off + len > cur_size)
					cur_size = off + len;
			} else {
				uint64_t size = rnd(&s) % ((NB - 1) * BLK);
				if (what == 9)
					size -= size % BLK;
				cr_assert_eq(alex_truncate(r.above, ALEX_FILE_DB, size), 0);
				if (size > cur_size)
					memset(cur + cur_size, 0, size - cur_size);
				cur_size = size;
			}
		}
		cr_assert_eq(alex_commit(r.above), 0, "step %d", step);
		cr_assert_lt(nsince, MAX_SINCE, "step %d: too many commits between merges", step);
		memcpy(since[nsince].b, cur, cur_size);
		since[nsince].size = cur_size;
		nsince++;
		uint64_t ev = rnd(&s) % 100;
		if (ev < 12) {
			cr_assert_eq(alex_merge(r.above, r.below), 0, "step %d", step);
			memcpy(merged, cur, cur_size);
			merged_size = cur_size;
			nsince = 0;
			merges++;
			same_as(r.below, merged, merged_size, "below after a merge", step);
		} else if (ev < 16) {
			/* the process dies: everything committed above survives */
			rig_die(&r);
			rig_open(&r);
			deaths++;
		} else if (ev < 19) {
			/* the power fails: what below merged survives; of the
			 * staging log, never synced, any part may (on a disk)
			 * or none (tmpfs).  Above then shows the merged state
			 * and a prefix of the commits after it, never more and
			 * never a mix. */
			alex_mem *img = alex_mem_crash(r.m, ALEX_CRASH_SUBSET, rnd(&s));
			int keep = (int)(rnd(&s) % 2);
			rig_die(&r);
			alex_mem_free(r.m);
			if (!keep)
				gone(img);
			r.m = img;
			rig_open(&r);
			same_as(r.below, merged, merged_size, "below after a power cut", step);
			int at = which_state(r.above, since, nsince, merged, merged_size);
			cr_assert(at >= -1, "step %d: above after a power cut is not a prefix", step);
			if (at < 0) {
				memcpy(cur, merged, merged_size);
				cur_size = merged_size;
			} else {
				memcpy(cur, since[at].b, since[at].size);
				cur_size = since[at].size;
				replayed++;
			}
			nsince = at + 1;
			cuts++;
		}
		same_as(r.above, cur, cur_size, "above", step);
	}
	cr_assert_gt(merges, 50);
	cr_assert_gt(deaths, 20);
	cr_assert_gt(cuts, 10);
	cr_assert_gt(replayed, 0, "no power cut kept a staging commit: the prefix rule is untested");
	free(since);
	rig_die(&r);
	alex_mem_free(r.m);
}

/* The backend itself: its own files are never synced (a power cut loses
 * what was written to them), and below's base files refuse every change. */
Test(over, adapter_files_unsynced_bases_read_only)
{
	static uint8_t b[BLK];
	struct rig r;
	int fd, base;
	size_t n;
	uint64_t size;

	rig_new(&r, 4);
	const struct alex_io_ops *o = r.over_io.ops;
	void *ctx = r.over_io.ctx;
	cr_assert_eq(o->open(ctx, "/mem/other", ALEX_O_CREAT, &fd), 0);
	memset(b, 0x5a, BLK);
	cr_assert_eq(o->pwrite(ctx, fd, b, BLK, 0), 0);
	cr_assert_eq(o->fdatasync(ctx, fd), 0);
	cr_assert_eq(o->sync_dir(ctx, "/mem/other"), 0);
	alex_mem *img = alex_mem_crash(r.m, ALEX_CRASH_LOSE, 1);
	size_t len = 1;
	const uint8_t *kept = alex_mem_get(img, "/mem/other", &len);
	cr_expect(!kept || len == 0, "a power cut keeps %zu bytes of a file never synced", len);
	alex_mem_free(img);
	cr_assert_eq(o->close(ctx, fd), 0);

	cr_assert_eq(o->open(ctx, DB, 0, &base), 0);
	cr_expect_eq(o->pwrite(ctx, base, b, BLK, 0), EROFS);
	cr_expect_eq(o->ftruncate(ctx, base, 0), EROFS);
	cr_expect_eq(o->fdatasync(ctx, base), EROFS);
	cr_expect_eq(o->unlink(ctx, DB), EROFS);
	cr_expect_eq(o->open(ctx, DB, ALEX_O_TRUNC, &fd), EROFS);
	cr_assert_eq(o->size(ctx, base, &size), 0);
	cr_expect_eq(size, 4 * BLK);
	cr_assert_eq(o->pread(ctx, base, b, BLK, 2 * BLK, &n), 0);
	uint8_t want[BLK];
	fill_block(want, 1, 2);
	cr_expect_arr_eq(b, want, BLK);
	cr_assert_eq(o->close(ctx, base), 0);
	rig_die(&r);
	alex_mem_free(r.m);
}

/* A process dies after the merge's commit and before the staging log's
 * next epoch is written: the log still holds the merged epoch.  Below has
 * moved on since (another commit of its own); the next opener must not
 * replay the merged epoch over it. */
Test(over, merged_epoch_is_not_replayed)
{
	static uint8_t b[BLK], y[BLK];
	struct rig r;
	struct alex_stats st;
	size_t len, n;

	rig_new(&r, 4);
	for (uint32_t t = 2; t < 6; t++) {
		fill_block(b, t, 1);
		cr_assert_eq(alex_write(r.above, ALEX_FILE_DB, b, BLK, BLK), 0);
		cr_assert_eq(alex_commit(r.above), 0);
	}
	const uint8_t *lg = alex_mem_get(r.m, STAGE, &len);
	cr_assert_not_null(lg);
	uint8_t *before = malloc(len);
	cr_assert_not_null(before);
	memcpy(before, lg, len);
	cr_assert_eq(alex_merge(r.above, r.below), 0);
	fill_block(y, 77, 1);
	cr_assert_eq(alex_write(r.below, ALEX_FILE_DB, y, BLK, BLK), 0);
	cr_assert_eq(alex_commit(r.below), 0);
	rig_die(&r);
	alex_mem_set(r.m, STAGE, before, len);
	free(before);
	rig_open(&r);
	alex_stats(r.above, &st);
	cr_expect_eq(st.recovered_commits, 0, "the merged epoch was replayed");
	cr_assert_eq(alex_read(r.above, ALEX_FILE_DB, b, BLK, BLK, &n), 0);
	cr_expect_arr_eq(b, y, BLK, "above shows below's later commit");
	/* and it commits on from there */
	fill_block(b, 90, 2);
	cr_assert_eq(alex_write(r.above, ALEX_FILE_DB, b, BLK, 2 * BLK), 0);
	cr_assert_eq(alex_commit(r.above), 0);
	rig_die(&r);
	rig_open(&r);
	cr_assert_eq(alex_read(r.above, ALEX_FILE_DB, y, BLK, 2 * BLK, &n), 0);
	cr_expect_arr_eq(y, b, BLK, "the new epoch's commit survives a death");
	rig_die(&r);
	alex_mem_free(r.m);
}

/* Staged commits are not in the database file: from the first, below's
 * fence is on it, so SQLite without ALEX refuses it, through a process
 * death too; the merge and below's checkpoint take it off. */
Test(over, below_fenced_while_commits_are_staged)
{
	static uint8_t page1[BLK], b[BLK];
	struct rig r;
	size_t len, n;

	r.m = alex_mem_new();
	sqlite_like_file(r.m, page1);
	rig_open(&r);
	cr_expect_eq(alex_mem_get(r.m, DB, &len)[19], 1, "unmarked at first");
	sqlite_like_commit(r.above, page1, 0x42);
	cr_expect_eq(alex_mem_get(r.m, DB, &len)[19], 0xa1, "marked by the first staged commit");
	rig_die(&r);
	cr_expect_eq(alex_mem_get(r.m, DB, &len)[19], 0xa1, "still marked after a death");
	rig_open(&r);
	cr_assert_eq(alex_read(r.above, ALEX_FILE_DB, b, BLK, BLK, &n), 0);
	cr_expect_eq(b[0], 0x42);
	cr_assert_eq(alex_merge(r.above, r.below), 0);
	alex_set_checkpoint_on_close(r.below, 1);
	rig_die(&r);
	cr_expect_eq(alex_mem_get(r.m, DB, &len)[19], 1, "unmarked once merged and checkpointed");
	const uint8_t *d = alex_mem_get(r.m, DB, &len);
	cr_expect_eq(d[BLK], 0x42, "the staged commit is in the database file");
	alex_mem_free(r.m);
}

/* ---- from the review of step 1 (each failed on 6984a08) ---------------- */

static void put(alex_db *db, uint32_t txn, uint32_t blk, uint8_t *b)
{
	fill_block(b, txn, blk);
	cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, (uint64_t)blk * BLK), 0);
	cr_assert_eq(alex_commit(db), 0);
}

/* What the files of the pair take on r's disk now. */
static uint64_t disk_used(const struct rig *r)
{
	const char *names[] = { DB, LOG, STAGE };
	uint64_t used = 0;
	size_t len;

	for (int i = 0; i < 3; i++)
		if (alex_mem_get(r->m, names[i], &len))
			used += len;
	return used;
}

static uint64_t first_sync, base_ops;
static void find_sync(void *arg, uint64_t op, enum alex_mem_op kind, int fd)
{
	(void)arg, (void)fd;
	if (kind == ALEX_MEM_SYNC && !first_sync)
		first_sync = op - base_ops;
}

/* The merge's record is written and its sync fails: below, read back, holds
 * the merge, so above must not go on in an epoch that names the point below
 * has left -- a commit made after it was dropped at the next open. */
Test(over, failed_merge_sync_keeps_later_commits)
{
	static uint8_t x[BLK], y[BLK], got[BLK];
	struct rig r;
	size_t n;

	rig_new(&r, 8);
	put(r.above, 2, 1, x);
	base_ops = alex_mem_ops(r.m);
	first_sync = 0;
	alex_mem_on_op(r.m, find_sync, NULL);
	cr_assert_eq(alex_merge(r.above, r.below), 0);
	alex_mem_on_op(r.m, NULL, NULL);
	rig_die(&r);
	alex_mem_free(r.m);
	cr_assert(first_sync);

	rig_new(&r, 8);
	put(r.above, 2, 1, x);
	alex_mem_fail_at(r.m, alex_mem_ops(r.m) + first_sync, ALEX_MEM_SYNC, EIO);
	cr_assert_eq(alex_merge(r.above, r.below), EIO);
	alex_mem_fail_at(r.m, 0, 0, 0);
	cr_expect_not(alex_holds_pages(r.above), "below holds the merge: above moved on");
	cr_expect_eq(alex_checkpoint(r.below), 0, "nothing staged holds below back");
	put(r.above, 3, 2, y); /* acknowledged */
	rig_die(&r);
	rig_open(&r);
	cr_assert_eq(alex_read(r.above, ALEX_FILE_DB, got, BLK, 2 * BLK, &n), 0);
	cr_expect_arr_eq(got, y, BLK, "a commit after a failed merge is lost at a death");
	cr_assert_eq(alex_read(r.above, ALEX_FILE_DB, got, BLK, BLK, &n), 0);
	cr_expect_arr_eq(got, x, BLK);
	rig_die(&r);
	alex_mem_free(r.m);
}

/* A full disk at the merge: below may not checkpoint for room (that would
 * take its fence off while commits are staged), the merge fails, the fence
 * stays on, and the merge goes through once there is room. */
Test(over, full_disk_keeps_the_fence, .timeout = 120)
{
	static uint8_t page1[BLK], b[BLK], got[BLK];
	int failed = 0;

	for (uint64_t extra = 0; extra < (1u << 20); extra += 16384) {
		struct rig r;
		size_t len, n;

		r.m = alex_mem_new();
		sqlite_like_file(r.m, page1);
		rig_open(&r);
		sqlite_like_commit(r.above, page1, 0x42);
		cr_assert_eq(alex_merge(r.above, r.below), 0);
		for (uint32_t t = 0; t < 40; t++)
			put(r.above, 100 + t, 8 + t, b);
		alex_mem_disk(r.m, disk_used(&r) + extra);
		int rc = alex_merge(r.above, r.below);
		if (rc) {
			failed++;
			cr_assert(alex_holds_pages(r.above), "extra %llu", (unsigned long long)extra);
		}
		if (alex_holds_pages(r.above))
			cr_assert_eq(alex_mem_get(r.m, DB, &len)[19], 0xa1,
				     "extra %llu: commits staged and the database unfenced",
				     (unsigned long long)extra);
		alex_mem_disk(r.m, 0);
		cr_assert_eq(alex_merge(r.above, r.below), 0);
		cr_assert_eq(alex_read(r.below, ALEX_FILE_DB, got, BLK, 47 * BLK, &n), 0);
		fill_block(b, 139, 47);
		cr_assert_arr_eq(got, b, BLK, "extra %llu", (unsigned long long)extra);
		rig_die(&r);
		alex_mem_free(r.m);
	}
	cr_assert_gt(failed, 0, "no disk size made the merge fail: the test tests nothing");
}

/* A full disk at a merge by a writer holding SQLite's EXCLUSIVE lock
 * (alex_merge_room): below checkpoints for room -- the fence kept on, its
 * point (uuid, next lsn) unchanged -- and the merge goes through.  With the
 * staging log synced first, a power cut at every I/O of it keeps every
 * staged commit, and every image that still stages them is fenced. */
static alex_mem *room_imgs[512];

Test(over, full_disk_room_keeps_the_fence, .timeout = 600)
{
	static uint8_t page1[BLK], b[BLK], got[BLK];
	int roomy = 0;

	for (uint64_t extra = 0; extra < (64u << 10); extra += 4096) {
		struct rig r;
		struct alex_stats s0, s1;
		size_t len, n;

		r.m = alex_mem_new();
		sqlite_like_file(r.m, page1);
		rig_open(&r);
		sqlite_like_commit(r.above, page1, 0x42);
		for (uint32_t t = 0; t < 40; t++) { /* below's log: 40 records of 6 pages */
			put(r.above, 100 + t, 2 + t % 6, b);
			cr_assert_eq(alex_merge(r.above, r.below), 0);
		}
		for (uint32_t t = 0; t < 40; t++)
			put(r.above, 200 + t, 2 + t % 6, b);
		cr_assert_eq(alex_stage_sync(r.above), 0);
		cr_assert_eq(alex_log_trim(r.below), 0); /* no zeros ahead to write into */
		alex_mem_disk(r.m, disk_used(&r) + extra);
		alex_stats(r.below, &s0);
		struct cuts cuts = { r.m, room_imgs, 0, 512 };
		alex_mem_on_op(r.m, cut_every_io, &cuts);
		int rc = alex_merge_room(r.above, r.below);
		alex_mem_on_op(r.m, NULL, NULL);
		alex_stats(r.below, &s1);
		int made_room = s1.space_checkpoints > s0.space_checkpoints;
		roomy += !rc && made_room;
		if (alex_holds_pages(r.above))
			cr_assert_eq(alex_mem_get(r.m, DB, &len)[19], 0xa1,
				     "extra %llu: commits staged and the database unfenced",
				     (unsigned long long)extra);
		fill_block(b, 239, 5); /* the last commit, of block 2 + 39 % 6 */
		for (size_t i = 0; i < cuts.n; i++) {
			struct rig c = { .m = room_imgs[i] };
			if (made_room) {
				/* the fence on, and a process without the staging
				 * engine (one that opened before staging began)
				 * refusing to take it off */
				cr_assert_eq(alex_mem_get(c.m, DB, &len)[19], 0xa1,
					     "extra %llu, cut %zu: unfenced", (unsigned long long)extra, i);
				struct alex_config cb;
				alex_config_default(&cb);
				cb.checkpoint_on_close = 0;
				cb.db_only = 1;
				c.io = alex_mem_io(c.m);
				alex_db *lone = open_engine(&cb, &c.io);
				cr_assert_neq(alex_checkpoint(lone), 0,
					      "extra %llu, cut %zu: checkpointed under staged commits",
					      (unsigned long long)extra, i);
				cr_assert_eq(alex_close(lone), 0);
				rig_open(&c);
				cr_assert_eq(alex_read(c.above, ALEX_FILE_DB, got, BLK, 5 * BLK, &n), 0);
				cr_assert_arr_eq(got, b, BLK, "extra %llu, cut %zu of %zu: a staged commit lost",
						 (unsigned long long)extra, i, cuts.n);
				rig_die(&c);
			}
			alex_mem_free(c.m);
		}
		alex_mem_disk(r.m, 0);
		cr_assert_eq(alex_merge(r.above, r.below), 0);
		cr_assert_eq(alex_read(r.below, ALEX_FILE_DB, got, BLK, 5 * BLK, &n), 0);
		cr_assert_arr_eq(got, b, BLK, "extra %llu", (unsigned long long)extra);
		rig_die(&r);
		alex_mem_free(r.m);
	}
	cr_assert_gt(roomy, 0, "no disk size made a merge go through by a room checkpoint");
}

/* A memory image of a staging engine's view (libalex.so's mmap): the
 * database file below alex_view_plain as it is, below's blocks and above's
 * over it -- at every step of random commits, truncations, an open
 * transaction, merges and below's checkpoints, what alex_read says. */
Test(over, stacked_view_is_the_file_with_both_logs_over_it, .timeout = 120)
{
	enum { SPAN = (NB + 2) * BLK };
	static uint8_t img[SPAN], want[SPAN], b[BLK];
	uint64_t s = 7;
	int mapped = 0;
	struct rig r;

	rig_new(&r, 8);
	for (int step = 0; step < 400; step++) {
		unsigned op = (unsigned)(rnd(&s) % 20);
		uint32_t blk = (uint32_t)(rnd(&s) % NB);
		if (op < 13) {
			fill_block(b, (uint32_t)step + 2, blk);
			cr_assert_eq(alex_write(r.above, ALEX_FILE_DB, b, BLK, (uint64_t)blk * BLK), 0);
			if (op < 11)
				cr_assert_eq(alex_commit(r.above), 0);
		} else if (op < 14) {
			cr_assert_eq(alex_truncate(r.above, ALEX_FILE_DB, (uint64_t)blk * BLK + 100), 0);
			cr_assert_eq(alex_commit(r.above), 0);
		} else if (op < 17) {
			cr_assert_eq(alex_commit(r.above), 0);
			cr_assert_eq(alex_merge(r.above, r.below), 0);
			if (op == 16)
				cr_assert_eq(alex_checkpoint(r.below), 0);
		}
		uint64_t plain = alex_view_plain(r.above, ALEX_FILE_DB), size;
		size_t len = 0, n;
		const uint8_t *file = alex_mem_get(r.m, DB, &len);
		cr_assert_geq(alex_view_fd(r.above, ALEX_FILE_DB), 0, "step %d: no file to map", step);
		cr_assert_leq(plain, len, "step %d", step);
		mapped += plain > 0;
		memset(img, 0, sizeof img);
		memcpy(img, file, plain);
		cr_assert_eq(alex_view_fill(r.above, ALEX_FILE_DB, img, plain, 0, SPAN), 0);
		cr_assert_eq(alex_size(r.above, ALEX_FILE_DB, &size), 0);
		memset(want, 0, sizeof want);
		cr_assert_eq(alex_read(r.above, ALEX_FILE_DB, want, SPAN, 0, &n), 0);
		for (size_t i = 0; i < SPAN; i++)
			cr_assert_eq(img[i], want[i], "step %d (op %u): byte %zu of %llu, plain %llu",
				     step, op, i, (unsigned long long)size, (unsigned long long)plain);
	}
	cr_assert_gt(mapped, 100, "the file itself was hardly ever mapped: the test tests little");
	alex_commit(r.above);
	rig_die(&r);
	alex_mem_free(r.m);
}

/* Below checkpoints between merges; a power cut keeps its unmark but not
 * its next header: its lsns must not go back to a point an old staging
 * epoch (still in the never-synced staging log) began on. */
Test(over, below_point_never_goes_back, .timeout = 120)
{
	static uint8_t page1[BLK], b[BLK], got[BLK], v3[BLK];

	for (uint64_t seed = 1; seed <= 1000; seed++) {
		struct rig r;
		size_t n;

		r.m = alex_mem_new();
		sqlite_like_file(r.m, page1);
		rig_open(&r);
		put(r.above, 2, 1, b);
		cr_assert_eq(alex_merge(r.above, r.below), 0);
		cr_assert_eq(alex_checkpoint(r.below), 0);
		put(r.above, 3, 1, b);
		cr_assert_eq(alex_merge(r.above, r.below), 0);
		put(r.above, 4, 1, v3);
		cr_assert_eq(alex_merge(r.above, r.below), 0);
		cr_assert_eq(alex_checkpoint(r.below), 0);
		alex_mem *img = alex_mem_crash(r.m, ALEX_CRASH_SUBSET, seed);
		rig_die(&r);
		alex_mem_free(r.m);
		r.m = img;
		rig_open(&r);
		cr_assert_eq(alex_read(r.below, ALEX_FILE_DB, got, BLK, BLK, &n), 0);
		cr_assert_arr_eq(got, v3, BLK, "seed %llu: below lost a merge", (unsigned long long)seed);
		cr_assert_eq(alex_read(r.above, ALEX_FILE_DB, got, BLK, BLK, &n), 0);
		cr_assert_arr_eq(got, v3, BLK, "seed %llu: above went back behind a merge",
				 (unsigned long long)seed);
		rig_die(&r);
		alex_mem_free(r.m);
	}
}

/* A staging engine never checkpoints (its base is read-only), not even
 * when its file system runs short. */
Test(over, above_never_checkpoints)
{
	static uint8_t b[BLK];
	struct rig r;
	struct alex_stats sa;

	rig_new(&r, 8);
	alex_mem_disk(r.m, 3u << 20);
	for (uint32_t t = 0; t < 600; t++)
		put(r.above, 2 + t, t % 16, b);
	alex_stats(r.above, &sa);
	cr_expect_eq(sa.checkpoint_failures, 0);
	cr_expect_eq(sa.checkpoints, 0);
	rig_die(&r);
	alex_mem_free(r.m);
}
