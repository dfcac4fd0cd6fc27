/* The log's change counter (shm.c): a catch-up is skipped only when no
 * engine changed the log since this one read it, and a region that is
 * damaged, foreign or left busy by a dead writer is never believed. */
#include <criterion/criterion.h>

#include "format.h"
#include "helpers.h"
#include "shm.h"

#define SHM LOG "-shm"

static alex_mem *mem;
static struct alex_io io;
static struct alex_config cfg;

static void setup(void)
{
	mem = alex_mem_new();
	io = alex_mem_io(mem);
	small_config(&cfg);
}
static void teardown(void)
{
	alex_mem_free(mem);
}

/* Every test ends here: no engine changed a counted log uncounted. */
static void all_counted(void)
{
	cr_expect_eq(alex_mem_uncounted(mem), 0, "a log change no engine counted");
}
TestSuite(shm, .init = setup, .fini = teardown);

static uint64_t skipped(alex_db *db)
{
	struct alex_stats st;
	alex_stats(db, &st);
	return st.refreshes_skipped;
}

/* w commits block blk with txn's content; o catches up and must read it. */
static void commit_and_follow(alex_db *w, alex_db *o, uint32_t txn, uint32_t blk)
{
	uint8_t b[BLK], r[BLK];
	size_t got;

	cr_assert_eq(alex_refresh(w, 1), 0);
	fill_block(b, txn, blk);
	cr_assert_eq(alex_write(w, ALEX_FILE_DB, b, BLK, (uint64_t)blk * BLK), 0);
	cr_assert_eq(alex_commit(w), 0);
	uint64_t before = skipped(o);
	cr_assert_eq(alex_refresh(o, 1), 0);
	cr_expect_eq(skipped(o), before, "txn %u: a change was skipped", txn);
	cr_assert_eq(alex_read(o, ALEX_FILE_DB, r, BLK, (uint64_t)blk * BLK, &got), 0);
	cr_assert_arr_eq(r, b, BLK, "after txn %u the other engine reads it", txn);
}

Test(shm, a_catch_up_is_skipped_only_when_nothing_changed)
{
	alex_db *a = open_engine(&cfg, &io), *c = open_engine(&cfg, &io);

	for (uint32_t t = 1; t <= 8; t++) {
		commit_and_follow(t % 2 ? a : c, t % 2 ? c : a, t, t % 3);
		if (t == 4)
			cr_assert_eq(alex_checkpoint(a), 0); /* a new epoch under c */
		uint64_t before = skipped(c);
		cr_assert_eq(alex_refresh(c, 1), 0);
		cr_assert_eq(alex_refresh(c, 1), 0);
		/* right after a checkpoint the log holds no page: the base is
		 * not fenced, and only a read of it tells what is there */
		if (t == 4)
			cr_expect_eq(skipped(c), before, "txn 4: a log with no page trusted");
		else
			cr_expect_geq(skipped(c), before + 1, "txn %u: nothing changed, yet read", t);
	}
	cr_assert_not_null(alex_mem_shm(mem, SHM));
	alex_close(c);
	alex_close(a);
	all_counted();
}


/* a's commit followed by c, then a's checkpoint: the log holds nothing */
static void empty_log(alex_db *a, alex_db *c)
{
	commit_and_follow(a, c, 1, 1);
	cr_assert_eq(alex_checkpoint(a), 0);
	cr_assert_eq(alex_refresh(c, 1), 0);
}

/* A program without ALEX writes block 5 (b: its bytes), growing the file;
 * its descriptor in *fd. */
static void grow_outside(uint8_t *b, int *fd)
{
	cr_assert_eq(io.ops->open(io.ctx, DB, 0, fd), 0);
	fill_block(b, 77, 5);
	cr_assert_eq(io.ops->pwrite(io.ctx, *fd, b, BLK, 5 * BLK), 0);
}

/* A log that holds nothing and has not changed is not read again, but the
 * base is (the fence is down): a program without ALEX that grows and writes
 * the file meanwhile is seen at the next catch-up. */
Test(shm, an_empty_unchanged_log_still_sees_the_base_change)
{
	alex_db *a = open_engine(&cfg, &io), *c = open_engine(&cfg, &io);
	uint8_t b[BLK], r[BLK];
	uint64_t size;
	size_t got;
	int fd;

	empty_log(a, c);
	cr_assert_eq(alex_refresh(c, 1), 0);
	/* a program without ALEX: a new block at the end, and block 1 again */
	grow_outside(b, &fd);
	fill_block(r, 78, 1);
	cr_assert_eq(io.ops->pwrite(io.ctx, fd, r, BLK, BLK), 0);
	cr_assert_eq(alex_refresh(c, 1), 0);
	cr_assert_eq(alex_size(c, ALEX_FILE_DB, &size), 0);
	cr_expect_eq(size, 6 * BLK, "the file grew outside ALEX");
	cr_assert_eq(alex_read(c, ALEX_FILE_DB, r, BLK, 5 * BLK, &got), 0);
	cr_expect_arr_eq(r, b, BLK);
	fill_block(b, 78, 1);
	cr_assert_eq(alex_read(c, ALEX_FILE_DB, r, BLK, BLK, &got), 0);
	cr_expect_arr_eq(r, b, BLK);
	alex_close(c);
	alex_close(a);
}

/* The same, but the next thing c sees is another engine's first commit of
 * the epoch (regress.sh kept-log-wal-grown: a WAL checkpoint grew the file,
 * then a commit): the records lie over the file as it is now, so c reads
 * the file again as well as the records, not only the records. */
Test(shm, the_first_commit_after_an_empty_log_still_sees_the_base_change)
{
	alex_db *a = open_engine(&cfg, &io), *c = open_engine(&cfg, &io);
	uint8_t b[BLK], r[BLK];
	uint64_t size;
	size_t got;
	int fd;

	empty_log(a, c);
	grow_outside(b, &fd);
	commit_and_follow(a, c, 2, 2);
	cr_assert_eq(alex_size(c, ALEX_FILE_DB, &size), 0);
	cr_expect_eq(size, 6 * BLK, "the file grew before the commit");
	cr_assert_eq(alex_read(c, ALEX_FILE_DB, r, BLK, 5 * BLK, &got), 0);
	cr_expect_arr_eq(r, b, BLK, "the block written outside the log");
	alex_close(c);
	alex_close(a);
}

Test(shm, a_damaged_or_foreign_region_is_never_believed)
{
	alex_db *a = open_engine(&cfg, &io), *c = open_engine(&cfg, &io);
	uint64_t seed = 7;

	commit_and_follow(a, c, 1, 0);
	for (int how = 0; how < 3; how++) {
		struct alex_shm *s = alex_mem_shm(mem, SHM);
		cr_assert_not_null(s);
		uint8_t b[BLK], r[BLK];
		size_t got;
		/* a commit whose count the damage then hides */
		uint64_t seen = s->gen; /* what c saw last */
		cr_assert_eq(alex_refresh(a, 1), 0);
		fill_block(b, 10 + (uint32_t)how, 1);
		cr_assert_eq(alex_write(a, ALEX_FILE_DB, b, BLK, BLK), 0);
		cr_assert_eq(alex_commit(a), 0);
		if (how == 0)
			memset(s, 0, sizeof *s);
		for (size_t i = 0; how == 1 && i < sizeof *s; i++)
			((uint8_t *)s)[i] = (uint8_t)rnd(&seed);
		if (how == 2)
			s->uuid[3] ^= 1; /* another log's */
		s->gen = how == 0 ? 0 : seen; /* even the count c last saw */
		s->busy = 0;
		uint64_t before = skipped(c);
		cr_assert_eq(alex_refresh(c, 1), 0);
		cr_expect_eq(skipped(c), before, "damage %d believed", how);
		cr_assert_eq(alex_read(c, ALEX_FILE_DB, r, BLK, BLK, &got), 0);
		cr_assert_arr_eq(r, b, BLK, "damage %d: the commit is read", how);
		cr_expect(memcmp(s->magic, ALEX_SHM_MAGIC, 8) == 0, "damage %d: remade", how);
		commit_and_follow(a, c, 20 + (uint32_t)how, 2);
	}
	alex_close(c);
	alex_close(a);
	all_counted();
}


Test(shm, a_change_left_unfinished_stops_every_skip)
{
	alex_db *a = open_engine(&cfg, &io), *c = open_engine(&cfg, &io);

	commit_and_follow(a, c, 1, 0);
	struct alex_shm *s = alex_mem_shm(mem, SHM);
	cr_assert_not_null(s);
	/* c knows the log; then a change begins (or its writer dies in it) */
	cr_assert_eq(alex_refresh(c, 1), 0);
	uint64_t before = skipped(c);
	cr_assert_eq(alex_refresh(c, 1), 0);
	cr_assert_eq(skipped(c), before + 1);
	s->busy++;
	cr_assert_eq(alex_refresh(c, 1), 0);
	cr_expect_eq(skipped(c), before + 1, "skipped while a change is under way");
	for (uint32_t t = 2; t <= 5; t++) {
		commit_and_follow(t % 2 ? a : c, t % 2 ? c : a, t, t % 2);
		uint64_t before = skipped(c);
		cr_assert_eq(alex_refresh(c, 1), 0);
		cr_expect_eq(skipped(c), before, "skipped beside a change under way");
	}
	s->busy--;
	alex_close(c);
	alex_close(a);
	all_counted();
}


Test(shm, a_write_behind_the_counter_is_caught)
{
	alex_db *a = open_engine(&cfg, &io);
	uint8_t b[BLK] = { 0 };
	int fd;

	put_txn(a, 1, 1);
	cr_assert_eq(alex_commit(a), 0);
	cr_assert_not_null(alex_mem_shm(mem, SHM));
	cr_assert_eq(io.ops->open(io.ctx, LOG, 0, &fd), 0);
	cr_assert_eq(io.ops->pwrite(io.ctx, fd, b, BLK, 1u << 20), 0);
	cr_expect_eq(alex_mem_uncounted(mem), 1);
	io.ops->close(io.ctx, fd);
	alex_close(a);
}

/* The last close removes the region with the log; a kept log keeps it (its
 * 4 KiB stay allocated, so that a full disk still lets the log be written). */
Test(shm, the_region_goes_with_the_last_close)
{
	size_t len;

	cfg.checkpoint_on_close = 1;
	cfg.remove_log = 1;
	alex_db *a = open_engine(&cfg, &io), *c = open_engine(&cfg, &io);
	commit_and_follow(a, c, 1, 0);
	alex_close(c); /* (memory has no locks: which close is last is not modelled) */
	alex_close(a);
	cr_expect_null(alex_mem_get(mem, LOG, &len));
	cr_expect_null(alex_mem_shm(mem, SHM));

	cfg.remove_log = 0;
	a = open_engine(&cfg, &io);
	put_txn(a, 2, 1);
	cr_assert_eq(alex_commit(a), 0);
	cr_expect_not_null(alex_mem_shm(mem, SHM));
	alex_close(a);
	cr_expect_not_null(alex_mem_get(mem, LOG, &len), "the log is kept");
	cr_expect_not_null(alex_mem_shm(mem, SHM), "and so is its counter");
	all_counted();
}

Test(shm, every_change_of_a_growing_log_is_counted)
{
	alex_db *a = open_engine(&cfg, &io), *c = open_engine(&cfg, &io);
	uint8_t b[BLK], r[BLK];
	size_t got;

	for (uint32_t t = 1; t <= 12; t++) {
		cr_assert_eq(alex_refresh(a, 1), 0);
		for (uint32_t k = 0; k < 16; k++) { /* past the memory budget: spills */
			fill_block(b, t, k);
			cr_assert_eq(alex_write(a, ALEX_FILE_DB, b, BLK, (uint64_t)k * BLK), 0);
		}
		cr_assert_eq(alex_commit(a), 0);
		if (t % 5 == 0)
			cr_assert_eq(alex_checkpoint(a), 0);
		cr_assert_eq(alex_refresh(c, 1), 0);
		for (uint32_t k = 0; k < 16; k += 5) {
			fill_block(b, t, k);
			cr_assert_eq(alex_read(c, ALEX_FILE_DB, r, BLK, (uint64_t)k * BLK, &got), 0);
			cr_assert_arr_eq(r, b, BLK, "txn %u block %u", t, k);
		}
	}
	struct alex_stats st;
	alex_stats(a, &st);
	cr_expect_gt(st.spills, 0);
	alex_close(c);
	alex_close(a);
	all_counted();
}

/* The arrivals (libalex.so's presence shortcut, span.c): one engine's
 * arrival shows to another as a changed value; a region that is damaged,
 * another log's or made anew is no answer at all (the reader then asks the
 * kernel), and never one equal to what the reader saw last. */
Test(shm, an_arrival_shows_and_a_region_in_doubt_answers_nothing)
{
	alex_db *a = open_engine(&cfg, &io), *c = open_engine(&cfg, &io);
	uint64_t v0, v1, v2;

	cr_expect_eq(alex_shm_arrivals(a, &v0), -1, "no log yet: no region");
	alex_shm_arrive(a); /* harmless without one */
	commit_and_follow(a, c, 1, 0);
	cr_assert_eq(alex_shm_arrivals(a, &v0), 0);
	cr_assert_eq(alex_shm_arrivals(c, &v1), 0);
	cr_expect_eq(v0, v1, "two engines read one value");
	alex_shm_arrive(c);
	cr_assert_eq(alex_shm_arrivals(a, &v1), 0);
	cr_expect_neq(v1, v0, "c's arrival unseen by a");

	struct alex_shm *s = alex_mem_shm(mem, SHM);
	cr_assert_not_null(s);
	s->uuid[0] ^= 1; /* another log's region */
	cr_expect_eq(alex_shm_arrivals(a, &v2), -1, "another log's region believed");
	s->uuid[0] ^= 1;
	memset(s->magic, 0, sizeof s->magic); /* retired, or damaged */
	cr_expect_eq(alex_shm_arrivals(a, &v2), -1, "a retired region believed");
	/* made anew at the next look: the count goes on where it was */
	commit_and_follow(c, a, 2, 1);
	cr_assert_eq(alex_shm_arrivals(a, &v2), 0);
	cr_expect_eq(v2, v1, "a region made anew lost or reset the count");
	alex_shm_arrive(a);
	cr_assert_eq(alex_shm_arrivals(c, &v2), 0);
	cr_expect_eq(v2, v1 + 1);
	alex_close(c);
	alex_close(a);
	all_counted();
}
