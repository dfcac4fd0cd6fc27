/* A database and its log go together (protect.c).  A fenced database file
 * with no log beside it -- the log moved away, or the file moved away from
 * it -- holds only its last checkpoint: it is refused (ALEX_EORPHAN) at
 * open and at a catch-up, and reads again once the log is back; orphan_ok
 * (alex recover) opens it as of that checkpoint.  A last close that
 * removes its log unmarks the file durably first, so no crash after the
 * removal leaves a fence with no log. */
#include <criterion/criterion.h>

#include "helpers.h"

#define AWAY "/mem/elsewhere"

static alex_mem *mem;
static struct alex_io io;
static struct alex_config cfg;
static uint8_t page1[BLK];

static void setup(void)
{
	mem = alex_mem_new();
	io = alex_mem_io(mem);
	small_config(&cfg);
	sqlite_like_file(mem, page1);
}
static void teardown(void)
{
	alex_mem_free(mem);
}
TestSuite(orphan, .init = setup, .fini = teardown);

/* Block 1 of the database as db reads it: all v? */
static int block1_is(alex_db *db, uint8_t v)
{
	static uint8_t r[BLK];
	size_t got;

	if (alex_read(db, ALEX_FILE_DB, r, BLK, BLK, &got) || got != BLK)
		return 0;
	for (unsigned i = 0; i < BLK; i++)
		if (r[i] != v)
			return 0;
	return 1;
}

/* A commit of v in the log, not checkpointed: the file is fenced. */
static void commit_in_log(uint8_t v)
{
	alex_db *db = open_engine(&cfg, &io);
	sqlite_like_commit(db, page1, v);
	alex_close(db); /* checkpoint_on_close 0 (small_config) */
	size_t len;
	const uint8_t *base = alex_mem_get(mem, DB, &len);
	cr_assert_eq(base[19], 0xa1, "the file carries the mark");
}

Test(orphan, log_moved_away_is_refused_and_put_back_opens)
{
	alex_db *db;

	commit_in_log(0x5a);
	cr_assert_eq(io.ops->rename(io.ctx, LOG, AWAY, 0), 0);
	cr_expect_eq(alex_open(DB, &cfg, &io, &db), ALEX_EORPHAN);
	struct alex_config ro = cfg;
	ro.readonly = 1;
	cr_expect_eq(alex_open(DB, &ro, &io, &db), ALEX_EORPHAN, "a reader too");
	cr_assert_eq(io.ops->rename(io.ctx, AWAY, LOG, 0), 0);
	db = open_engine(&cfg, &io);
	cr_expect(block1_is(db, 0x5a), "the log's commit reads again");
	alex_close(db);
}

Test(orphan, orphan_ok_opens_as_of_the_last_checkpoint_and_clears_the_mark)
{
	alex_db *db;
	size_t len;

	commit_in_log(0x5a);
	cr_assert_eq(io.ops->unlink(io.ctx, LOG), 0);
	cfg.orphan_ok = 1;
	db = open_engine(&cfg, &io);
	cr_expect(block1_is(db, 0x11), "the file's own block: its last checkpoint");
	cr_assert_eq(alex_checkpoint(db), 0);
	alex_close(db);
	const uint8_t *base = alex_mem_get(mem, DB, &len);
	cr_expect_arr_eq(base, page1, 100, "the true header, unmarked");
	cfg.orphan_ok = 0;
	db = open_engine(&cfg, &io);
	alex_close(db);
}

/* Another engine's view: it found no log, then one was made, fenced and
 * taken away.  Its next catch-up is refused, until the log is back. */
Test(orphan, catch_up_refuses_a_log_gone)
{
	alex_db *reader = open_engine(&cfg, &io), *writer;

	cr_assert_eq(alex_refresh(reader, 1), 0);
	writer = open_engine(&cfg, &io);
	sqlite_like_commit(writer, page1, 0x77);
	cr_assert_eq(io.ops->rename(io.ctx, LOG, AWAY, 0), 0);
	cr_expect_eq(alex_refresh(reader, 1), ALEX_EORPHAN);
	cr_assert_eq(io.ops->rename(io.ctx, AWAY, LOG, 0), 0);
	cr_assert_eq(alex_refresh(reader, 1), 0);
	cr_expect(block1_is(reader, 0x77), "the writer's commit");
	alex_close(writer);
	alex_close(reader);
}

/* Every crash image of a last close that checkpoints and removes the log,
 * and the disk as the power would leave it after the close, open with the
 * last commit -- never a fence whose log is gone. */
Test(orphan, no_crash_around_a_removal_leaves_a_fence_without_its_log)
{
	cfg.remove_log = 1;
	cfg.checkpoint_on_close = 1;
	alex_db *db = open_engine(&cfg, &io);
	sqlite_like_commit(db, page1, 0x31);
	sqlite_like_commit(db, page1, 0x32);
	struct cuts cuts = { mem, calloc(4096, sizeof(alex_mem *)), 0, 4096 };
	cr_assert_eq(alex_sync(db), 0);
	alex_mem_on_op(mem, cut_every_io, &cuts);
	alex_close(db);
	alex_mem_on_op(mem, NULL, NULL);
	cr_assert_gt(cuts.n, 4, "images: %zu", cuts.n);
	cr_assert(cuts.n < cuts.cap);
	cuts.img[cuts.n++] = alex_mem_crash(mem, ALEX_CRASH_LOSE, 0);
	size_t len;
	cr_assert_null(alex_mem_get(mem, LOG, &len), "the close removed the log");
	for (size_t i = 0; i < cuts.n; i++) {
		struct alex_io cio = alex_mem_io(cuts.img[i]);
		alex_db *d2;
		int rc = alex_open(DB, &cfg, &cio, &d2);
		cr_assert_eq(rc, 0, "image %zu of %zu: %s", i, cuts.n, alex_strerror(rc));
		cr_expect(block1_is(d2, 0x32), "image %zu: the last commit", i);
		alex_close(d2);
		alex_mem_free(cuts.img[i]);
	}
	free(cuts.img);
}
