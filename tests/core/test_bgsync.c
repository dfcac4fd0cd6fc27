/* NORMAL's syncs outside the caller's lock (commit.c: alex_sync_start, run,
 * finish): asked for at half the window's bytes, one at a time, covering exactly
 * what was written before they began -- commits made while one runs stay
 * unsynced until the next -- and failing the engine as an inline sync does. */
#include <errno.h>
#include <criterion/criterion.h>

#include "helpers.h"

static alex_mem *mem;
static struct alex_io io;
static struct alex_config cfg;

static void setup(void)
{
	mem = alex_mem_new();
	io = alex_mem_io(mem);
	small_config(&cfg);
	cfg.sync = ALEX_SYNC_NORMAL;
	cfg.sync_ms = 600000;        /* only the bytes decide here */
	cfg.extent_bytes = 64u << 10; /* half of it: a few commits */
}
static void teardown(void)
{
	alex_mem_free(mem);
}
TestSuite(bgsync, .init = setup, .fini = teardown);

static uint64_t syncs(alex_db *db)
{
	struct alex_stats st;
	alex_stats(db, &st);
	return st.syncs;
}

/* Commits one block per transaction (txn, txn + 1, ...) until the engine
 * asks for a sync outside the lock for its bytes (half the window); the
 * number of commits it took.  The first unsynced commit asks too (the
 * syncing thread starts its clock), and only it. */
static uint32_t commit_until_wanted(alex_db *db, uint32_t txn)
{
	int clock = !alex_sync_pending(db), wanted;
	uint32_t n = 0;
	do {
		cr_assert_eq(alex_refresh(db, 1), 0);
		put_txn(db, txn + n, 1);
		cr_assert_eq(alex_commit(db), 0);
		n++;
		wanted = alex_sync_wanted(db);
		if (n == 1 && clock) {
			cr_assert_eq(wanted, ALEX_WANT_CLOCK, "the first unsynced commit did not ask");
			wanted = 0;
		}
		cr_assert_lt(n, 64, "no sync asked for after %u commits", n);
	} while (!wanted);
	/* a ticking thread is not woken for a clock: half a window must say so */
	cr_assert(wanted & ALEX_WANT_NOW, "half the window asked only as a clock (%d)", wanted);
	return n;
}

/* Block 0 as txn wrote it, read through a fresh engine after a power cut
 * that lost every unsynced write. */
static void survives_power_cut(uint32_t txn)
{
	alex_mem *after = alex_mem_crash(mem, ALEX_CRASH_LOSE, 1);
	struct alex_io aio = alex_mem_io(after);
	alex_db *db = open_engine(&cfg, &aio);
	uint8_t want[BLK], got[BLK];
	size_t n;

	fill_block(want, txn, 0);
	cr_assert_eq(alex_read(db, ALEX_FILE_DB, got, BLK, 0, &n), 0);
	cr_expect_arr_eq(got, want, BLK, "txn %u lost with the power", txn);
	alex_close(db);
	alex_mem_free(after);
}

Test(bgsync, asked_for_once_at_half_the_window_and_covers_what_came_before)
{
	alex_db *db = open_engine(&cfg, &io);
	uint32_t n = commit_until_wanted(db, 1);

	cr_expect_eq(syncs(db), 0, "the commit synced inline before half the window");
	cr_expect_eq(alex_sync_wanted(db), 0, "asked for twice");
	cr_assert_eq(alex_sync_start(db), 1);
	cr_expect_eq(alex_sync_start(db), 0, "two syncs at once");
	cr_assert_eq(alex_sync_finish(db, alex_sync_run(db)), 0);
	cr_expect_eq(syncs(db), 1);
	cr_expect_eq(alex_sync_start(db), 0, "nothing is left to sync");
	survives_power_cut(n);
	alex_close(db);
}

/* Commits made while the sync runs may have been written after the sync
 * looked: they are not counted as synced, and the next sync takes them. */
Test(bgsync, commits_made_meanwhile_stay_unsynced)
{
	alex_db *db = open_engine(&cfg, &io);
	uint32_t n = commit_until_wanted(db, 1);

	cr_assert_gt(n, 1);
	cr_assert_eq(alex_sync_start(db), 1);
	for (uint32_t i = 0; i + 1 < n; i++) { /* short of half a window */
		cr_assert_eq(alex_refresh(db, 1), 0);
		put_txn(db, 100 + i, 1);
		cr_assert_eq(alex_commit(db), 0);
		cr_expect_eq(alex_sync_wanted(db), 0, "asked for while one runs");
	}
	cr_assert_eq(alex_sync_finish(db, alex_sync_run(db)), 0);
	cr_expect_eq(alex_sync_start(db), 0, "due before half a window");
	/* with those n - 1 still unsynced, a commit or two make half (the
	 * records' sizes vary with what they compress to); counted as synced,
	 * they would take n again */
	uint32_t m = commit_until_wanted(db, 200);
	cr_expect_leq(m, n / 2, "%u commits to half a window: the %u made meanwhile were "
		      "counted as synced", m, n - 1);
	alex_close(db);
}

/* A whole window unsynced still syncs inside the commit (the thread fell
 * behind), and a sync that ends after that counts nothing of its own.  (The
 * inline sync waits for the other's fdatasync to return: run first.) */
Test(bgsync, a_whole_window_syncs_inline_while_one_runs)
{
	alex_db *db = open_engine(&cfg, &io);
	commit_until_wanted(db, 1);

	cr_assert_eq(alex_sync_start(db), 1);
	int err = alex_sync_run(db);
	uint64_t before = syncs(db);
	for (uint32_t i = 0; syncs(db) == before; i++) {
		cr_assert_lt(i, 64, "a whole window unsynced and no inline sync");
		cr_assert_eq(alex_refresh(db, 1), 0);
		put_txn(db, 200 + i, 1);
		cr_assert_eq(alex_commit(db), 0);
	}
	cr_assert_eq(alex_sync_finish(db, err), 0);
	cr_expect_eq(alex_sync_start(db), 0, "everything was synced inline");
	alex_close(db);
}

/* An engine whose background sync ran and failed (*err), not finished. */
static alex_db *failed_job(int *err)
{
	alex_db *db = open_engine(&cfg, &io);
	commit_until_wanted(db, 1);

	cr_assert_eq(alex_sync_start(db), 1);
	alex_mem_fail_at(mem, alex_mem_ops(mem) + 1, ALEX_MEM_SYNC, EIO);
	*err = alex_sync_run(db);
	cr_assert_neq(*err, 0);
	return db;
}

/* A sync that fails leaves committed records whose pages may be gone from
 * the cache: the engine fails, as after a failed inline sync. */
Test(bgsync, a_failed_sync_fails_the_engine)
{
	int err;
	alex_db *db = failed_job(&err);

	cr_expect_neq(alex_sync_finish(db, err), 0);
	cr_assert_eq(alex_refresh(db, 1), ALEX_EFAILED);
	alex_close(db);
}

/* Two syncs of one descriptor at once could each miss the other's write-back
 * error: an inline sync waits for the background one and fails with it, so
 * no commit is acknowledged past a failed sync (review). */
Test(bgsync, an_inline_sync_after_a_failed_one_fails_too)
{
	int err;
	alex_db *db = failed_job(&err);

	cr_expect_neq(alex_sync(db), 0, "an inline sync succeeded after the failed one");
	alex_sync_finish(db, err);
	alex_close(db);
}

/* A sync begun but whose fdatasync has not started (the thread is busy with
 * another database) is cancelled by an inline one, which does its work: an
 * inline sync that waited for it, holding its database's lock, could wait
 * on the thread's turn at another database's lock (review: a deadlock with
 * fork). */
Test(bgsync, an_inline_sync_cancels_one_not_yet_running)
{
	alex_db *db = open_engine(&cfg, &io);
	commit_until_wanted(db, 1);

	cr_assert_eq(alex_sync_start(db), 1);
	uint64_t before = syncs(db);
	cr_assert_eq(alex_sync(db), 0, "the inline sync waited or failed");
	cr_expect_eq(syncs(db), before + 1);
	uint64_t ops = alex_mem_ops(mem);
	cr_expect_eq(alex_sync_run(db), 0);
	cr_expect_eq(alex_mem_ops(mem), ops, "the cancelled sync synced");
	cr_expect_eq(alex_sync_finish(db, 0), 0);
	cr_expect_eq(syncs(db), before + 1, "the cancelled sync was counted");
	cr_expect_eq(alex_sync_pending(db), 0);
	alex_close(db);
}

/* Spills (a large transaction's blocks, written before its commit) made
 * while a sync runs count no bytes: once the sync covers the commits, none
 * waits, and the thread must not be told there are (review: it ticked four
 * times a window for ever). */
Test(bgsync, spills_alone_leave_nothing_pending)
{
	alex_db *db = open_engine(&cfg, &io);
	commit_until_wanted(db, 1);

	cr_assert_eq(alex_sync_start(db), 1);
	cr_assert_eq(alex_refresh(db, 1), 0);
	put_txn(db, 500, 40); /* more blocks than the collector holds: spills */
	struct alex_stats st;
	alex_stats(db, &st);
	cr_assert_gt(st.spills, 0);
	cr_assert_eq(alex_sync_finish(db, alex_sync_run(db)), 0);
	cr_expect_eq(alex_sync_pending(db), 0, "pending with no commit unsynced");
	cr_assert_eq(alex_commit(db), 0);
	cr_expect_eq(alex_sync_pending(db), 1, "the spilled transaction's commit is not counted");
	alex_close(db);
}

/* A conditional commit (one database of a transaction across several)
 * syncs inline; when that sync fails, NORMAL commits acknowledged before it
 * may have lost their pages with it, whether or not a background sync had
 * begun (it is cancelled) -- the engine fails, as after any failed sync of
 * acknowledged records, rather than acknowledge a retry past it (review). */
#define SUPER "/mem/t.db-mj01234567"

static void failed_cond_sync_fails_the_engine(int with_job)
{
	alex_db *db = open_engine(&cfg, &io);
	commit_until_wanted(db, 1);

	if (with_job)
		cr_assert_eq(alex_sync_start(db), 1); /* begun, its fdatasync not yet */
	cr_assert_eq(alex_refresh(db, 1), 0);
	put_txn(db, 900, 1);
	/* the record's write, then its sync: the sync fails */
	alex_mem_fail_at(mem, alex_mem_ops(mem) + 2, ALEX_MEM_SYNC, EIO);
	cr_assert_neq(alex_commit_cond(db, SUPER), 0, "the injected failure missed the sync");
	if (with_job)
		cr_expect_eq(alex_sync_finish(db, alex_sync_run(db)), 0);
	cr_expect_eq(alex_refresh(db, 1), ALEX_EFAILED,
		     "a failed sync of acknowledged commits left the engine working");
	alex_close(db);
}

Test(bgsync, a_failed_conditional_sync_fails_the_engine)
{
	failed_cond_sync_fails_the_engine(0);
}

Test(bgsync, a_failed_conditional_sync_that_cancelled_a_job_fails_the_engine)
{
	failed_cond_sync_fails_the_engine(1);
}
