/*
 * A read-only engine (cfg.readonly): a process that may read the database
 * but not write it reads through another process's log, follows its
 * commits, and writes nothing -- not at its open, not at a locked
 * catch-up (whose recovery may otherwise repair the header or abort an
 * undecided commit), not at its close (no checkpoint, no log removal),
 * whatever its other settings ask.  The memory backend does not refuse
 * writes to a file opened for reading, so every byte of every file is
 * compared: a write anywhere fails the test.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>

#include "helpers.h"

static const char *const files[] = { DB, LOG, LOG "-shm" };
#define NFILES (sizeof files / sizeof files[0])

struct snap {
	uint8_t *b[NFILES];
	size_t n[NFILES];
	int there[NFILES];
};

/* s: zeroed, or an earlier snapshot, which this one replaces */
static void take(alex_mem *m, struct snap *s)
{
	for (size_t i = 0; i < NFILES; i++) {
		const uint8_t *p = alex_mem_get(m, files[i], &s->n[i]);
		s->there[i] = p != NULL;
		free(s->b[i]);
		s->b[i] = NULL;
		if (p) {
			s->b[i] = malloc(s->n[i] ? s->n[i] : 1);
			cr_assert_not_null(s->b[i]);
			memcpy(s->b[i], p, s->n[i]);
		}
	}
}

static void same(alex_mem *m, const struct snap *s, const char *when)
{
	for (size_t i = 0; i < NFILES; i++) {
		size_t n;
		const uint8_t *p = alex_mem_get(m, files[i], &n);
		cr_assert_eq(p != NULL, s->there[i], "%s: %s %s", when, files[i],
			     p ? "made" : "removed");
		if (p) {
			cr_assert_eq(n, s->n[i], "%s: %s resized", when, files[i]);
			cr_assert(memcmp(p, s->b[i], n) == 0, "%s: %s written", when, files[i]);
		}
	}
}

static void drop(struct snap *s)
{
	for (size_t i = 0; i < NFILES; i++)
		free(s->b[i]);
}

static uint8_t block_byte(alex_db *db, uint64_t blk, size_t at)
{
	static uint8_t b[BLK];
	size_t n;

	cr_assert_eq(alex_read(db, ALEX_FILE_DB, b, BLK, blk * BLK, &n), 0);
	cr_assert_eq(n, BLK);
	return b[at];
}

/* A writer's engine on a fresh SQLite-looking file (wc, page1 filled in),
 * after commits 1..n: block 1 and page 1's byte 200 say the last. */
static alex_db *writer_after(alex_mem *m, struct alex_io *io, struct alex_config *wc,
			     uint8_t *page1, uint8_t n)
{
	sqlite_like_file(m, page1);
	alex_config_default(wc);
	wc->checkpoint_on_close = 0;
	alex_db *w = open_engine(wc, io);
	for (uint8_t v = 1; v <= n; v++)
		sqlite_like_commit(w, page1, v);
	return w;
}

/* A reader asking for everything a writer may do gets none of it. */
static void readonly_config(struct alex_config *c)
{
	alex_config_default(c);
	c->readonly = 1;
	c->checkpoint_on_close = 1;
	c->remove_log = 1;
	c->exclusive = 1; /* as a tool would: refused too, the log is shared */
}

Test(readonly, reads_a_writers_log_and_writes_nothing)
{
	alex_mem *m = alex_mem_new();
	struct alex_io io = alex_mem_io(m);
	struct alex_config wc, rc;
	uint8_t page1[BLK], b[BLK];
	struct snap s = { 0 };

	alex_db *w = writer_after(m, &io, &wc, page1, 5);

	readonly_config(&rc);
	take(m, &s);
	alex_db *r = open_engine(&rc, &io);
	same(m, &s, "open");
	cr_expect_eq(block_byte(r, 1, 0), 5, "the log's newest block 1");
	cr_expect_eq(block_byte(r, 0, 200), 5, "the log's newest page 1");

	memset(b, 9, BLK);
	cr_expect_eq(alex_write(r, ALEX_FILE_DB, b, BLK, BLK), EROFS);
	cr_expect_eq(alex_truncate(r, ALEX_FILE_DB, BLK), EROFS);
	cr_expect_eq(alex_commit(r), 0, "nothing to commit");
	cr_expect_neq(alex_checkpoint(r), 0, "a reader does not checkpoint");
	same(m, &s, "refused writes");

	/* the writer goes on; the reader follows at its locked catch-up */
	sqlite_like_commit(w, page1, 6);
	take(m, &s);
	cr_assert_eq(alex_refresh(r, 1), 0);
	cr_expect_eq(block_byte(r, 1, 0), 6);
	same(m, &s, "locked catch-up");

	/* the writer checkpoints into the file; the reader starts over from it */
	cr_assert_eq(alex_checkpoint(w), 0);
	sqlite_like_commit(w, page1, 7);
	take(m, &s);
	cr_assert_eq(alex_refresh(r, 1), 0);
	cr_expect_eq(block_byte(r, 1, 0), 7);
	cr_expect_eq(block_byte(r, 0, 200), 7);
	same(m, &s, "a new epoch");

	cr_assert_eq(alex_close(r), 0);
	same(m, &s, "close");
	drop(&s);
	alex_close(w);
	alex_mem_free(m);
}

/* A torn tail (a writer killed inside its append) is dropped by the
 * reader's recovery, which repairs nothing on disk: the next writer does. */
Test(readonly, torn_tail_read_not_repaired)
{
	alex_mem *m = alex_mem_new();
	struct alex_io io = alex_mem_io(m);
	struct alex_config wc, rc;
	uint8_t page1[BLK];
	struct snap s = { 0 };
	size_t len;

	alex_db *w = writer_after(m, &io, &wc, page1, 3);
	alex_close(w);
	/* the last record's last bytes torn */
	uint8_t *log = log_copy(m, &len);
	const uint8_t *lg = alex_mem_get(m, LOG, &len);
	size_t end = len;
	while (end > 0 && lg[end - 1] == 0)
		end--;
	cr_assert_gt(end, 64u);
	for (size_t i = end - 64; i < end; i++)
		log[i] ^= 0x5a;
	alex_mem_set(m, LOG, log, len);
	free(log);

	readonly_config(&rc);
	take(m, &s);
	alex_db *r = open_engine(&rc, &io);
	cr_expect_eq(block_byte(r, 1, 0), 2, "the torn third commit is not read");
	cr_assert_eq(alex_refresh(r, 1), 0);
	cr_assert_eq(alex_close(r), 0);
	same(m, &s, "a torn tail");
	drop(&s);

	/* the owner's engine then recovers it as ever */
	w = open_engine(&wc, &io);
	cr_expect_eq(block_byte(w, 1, 0), 2);
	alex_close(w);
	alex_mem_free(m);
}

/* A database file alone (no log): read as it is, nothing made beside it. */
Test(readonly, no_log_made)
{
	alex_mem *m = alex_mem_new();
	struct alex_io io = alex_mem_io(m);
	struct alex_config rc;
	uint8_t page1[BLK];
	struct snap s = { 0 };

	sqlite_like_file(m, page1);
	readonly_config(&rc);
	take(m, &s);
	alex_db *r = open_engine(&rc, &io);
	cr_expect_eq(block_byte(r, 1, 0), 0x11);
	cr_expect_eq(alex_write(r, ALEX_FILE_DB, page1, BLK, 0), EROFS);
	cr_assert_eq(alex_close(r), 0);
	same(m, &s, "no log");
	drop(&s);
	alex_mem_free(m);
}
