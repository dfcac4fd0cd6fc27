/* Regressions: each test is a bug found in review, as a scenario. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>

#include "helpers.h"

static alex_mem *mem;
static struct alex_io io;
static struct alex_config cfg;

static void setup(void)
{
	mem = alex_mem_new();
	io = alex_mem_io(mem);
	alex_config_default(&cfg);
	cfg.memory_bytes = 64u << 10; /* six collector slots */
}
static void teardown(void)
{
	alex_mem_free(mem);
}
TestSuite(regress, .init = setup, .fini = teardown);

static uint8_t first_byte(alex_db *db, uint64_t off)
{
	uint8_t b = 0xee;
	size_t got;
	cr_assert_eq(alex_read(db, ALEX_FILE_DB, &b, 1, off, &got), 0);
	return b;
}

/* A truncation that empties a full collector, then one more block: the
 * spill that follows has no blocks, and must not make the engine forget
 * that its open transaction truncated (the committed map already lost
 * blocks to it): no checkpoint, on close or on request, may run. */
Test(regress, empty_spill_keeps_the_truncation_open)
{
	uint8_t a[BLK], z[BLK];
	alex_db *db;

	memset(a, 'A', BLK);
	memset(z, 'Z', BLK);
	cr_assert_eq(alex_open(DB, &cfg, &io, &db), 0);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(alex_write(db, ALEX_FILE_DB, a, BLK, (uint64_t)i * BLK), 0);
	cr_assert_eq(alex_commit(db), 0);
	cr_assert_eq(alex_checkpoint(db), 0);
	for (int i = 10; i < 16; i++)
		cr_assert_eq(alex_write(db, ALEX_FILE_DB, z, BLK, (uint64_t)i * BLK), 0);
	cr_assert_eq(alex_truncate(db, ALEX_FILE_DB, BLK), 0);
	cr_assert_eq(alex_write(db, ALEX_FILE_JOURNAL, z, BLK, 0), 0);
	cr_expect_eq(alex_checkpoint(db), ALEX_EBUSY);
	cr_assert_eq(alex_close(db), 0); /* drops the transaction, no checkpoint */
	cr_assert_eq(alex_open(DB, &cfg, &io, &db), 0);
	uint64_t sz;
	alex_size(db, ALEX_FILE_DB, &sz);
	cr_expect_eq(sz, 4 * BLK);
	for (int i = 0; i < 4; i++)
		cr_expect_eq(first_byte(db, (uint64_t)i * BLK), 'A', "block %d", i);
	alex_close(db);
}

/* A truncation whose partial block cannot be loaded (the spill it needs
 * fails) must change nothing, so that retrying it cuts the block. */
Test(regress, failed_truncate_changes_nothing)
{
	uint8_t a[BLK];
	alex_db *db;

	cfg.checkpoint_on_close = 0;
	memset(a, 'A', BLK);
	cr_assert_eq(alex_open(DB, &cfg, &io, &db), 0);
	cr_assert_eq(alex_write(db, ALEX_FILE_DB, a, BLK, 0), 0);
	cr_assert_eq(alex_write(db, ALEX_FILE_DB, a, BLK, BLK), 0);
	cr_assert_eq(alex_commit(db), 0);
	for (int i = 0; i < 6; i++)
		cr_assert_eq(alex_write(db, ALEX_FILE_JOURNAL, a, BLK, (uint64_t)i * BLK), 0);
	alex_mem_fail_at(mem, alex_mem_ops(mem) + 1, ALEX_MEM_WRITE, EIO);
	cr_assert_eq(alex_truncate(db, ALEX_FILE_DB, 5000), EIO);
	uint64_t sz;
	alex_size(db, ALEX_FILE_DB, &sz);
	cr_expect_eq(sz, 2 * BLK, "a failed truncation leaves the size");
	cr_assert_eq(alex_truncate(db, ALEX_FILE_DB, 5000), 0);
	cr_assert_eq(alex_commit(db), 0);
	cr_assert_eq(alex_write(db, ALEX_FILE_DB, a, 10, 3 * BLK), 0);
	cr_assert_eq(alex_commit(db), 0);
	cr_expect_eq(first_byte(db, 5000), 0);
	alex_close(db);
	alex_mem *c = alex_mem_crash(mem, ALEX_CRASH_LOSE, 0);
	struct alex_io cio = alex_mem_io(c);
	cr_assert_eq(alex_open(DB, &cfg, &cio, &db), 0);
	cr_expect_eq(first_byte(db, 5000), 0, "after recovery");
	alex_close(db);
	alex_mem_free(c);
}

/* The placeholder written into an empty database file may be torn at any
 * byte: whatever part of it reached the disk, the file still reads as
 * empty. */
Test(regress, torn_placeholder_reads_as_empty)
{
	for (uint64_t cut = 0; cut <= 100; cut++) {
		alex_mem *m = alex_mem_new();
		struct alex_io mio = alex_mem_io(m);
		alex_db *db, *d2;
		uint8_t b[BLK];
		cr_assert_eq(alex_open(DB, &cfg, &mio, &db), 0);
		uint64_t at = alex_mem_ops(m) + 1; /* the placeholder's pwrite */
		memset(b, 7, BLK);
		cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, 0), 0);
		alex_mem_fail_at(m, at + 1, ~0u, EIO); /* stop right after it */
		cr_assert_eq(alex_commit(db), EIO);
		alex_mem *c = alex_mem_crash_cut(m, cut);
		struct alex_io cio = alex_mem_io(c);
		cr_assert_eq(alex_open(DB, &cfg, &cio, &d2), 0);
		uint64_t sz;
		alex_size(d2, ALEX_FILE_DB, &sz);
		cr_expect_eq(sz, 0, "placeholder cut after %lu bytes reads as %lu bytes",
			     (unsigned long)cut, (unsigned long)sz);
		alex_close(d2);
		alex_mem_free(c);
		alex_close(db);
		alex_mem_free(m);
	}
}

/*
 * NORMAL mode: a checkpoint of commits whose records were not yet synced.
 * It copied their blocks into the base and synced the base before the log:
 * a power cut then recovered the older log over a base already holding
 * newer pages (block 1 from one state, block 2 from the next), which SQLite
 * saw as a corrupt b-tree.  Cut at every operation of the checkpoint, every
 * recovered state must be one of the two.
 */
struct snap {
	uint64_t at;
	alex_mem *img;
};

static void snap_at(void *arg, uint64_t op, enum alex_mem_op kind, int fd)
{
	struct snap *s = arg;
	(void)kind, (void)fd;
	if (op == s->at && !s->img)
		s->img = alex_mem_crash(mem, ALEX_CRASH_LOSE, 0);
}

/* The base AAA, then ACA committed and synced, then ABB committed in NORMAL
 * mode and not synced; a checkpoint -- by the engine that committed, or by
 * another that only read -- is cut at each of its operations.  Every cut
 * must recover one state or the other, never a mix. */
static void checkpoint_cut_at_every_op(int by_other)
{
	uint8_t a[BLK], b[BLK], c[BLK], got[BLK];
	size_t n;
	int cuts = 0;

	memset(c, 'C', BLK);
	memset(a, 'A', BLK);
	memset(b, 'B', BLK);
	cfg.sync = ALEX_SYNC_NORMAL;
	cfg.sync_ms = 60000;
	cfg.checkpoint_on_close = 0;
	for (uint64_t rel = 1;; rel++) {
		alex_mem_free(mem);
		mem = alex_mem_new();
		io = alex_mem_io(mem);
		alex_db *db, *other = NULL;
		cr_assert_eq(alex_open(DB, &cfg, &io, &db), 0);
		for (int i = 0; i < 3; i++) /* the base: AAA */
			cr_assert_eq(alex_write(db, ALEX_FILE_DB, a, BLK, (uint64_t)i * BLK), 0);
		cr_assert_eq(alex_commit(db), 0);
		cr_assert_eq(alex_checkpoint(db), 0);
		cr_assert_eq(alex_write(db, ALEX_FILE_DB, c, BLK, BLK), 0); /* older: ACA */
		cr_assert_eq(alex_commit(db), 0);
		cr_assert_eq(alex_sync(db), 0);
		if (by_other) {
			cr_assert_eq(alex_open(DB, &cfg, &io, &other), 0);
			cr_assert_eq(alex_refresh(db, 1), 0);
		}
		cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, BLK), 0);
		cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, 2 * BLK), 0);
		cr_assert_eq(alex_commit(db), 0); /* newer: ABB, not synced: inside the window */
		struct snap s = { alex_mem_ops(mem) + rel, NULL };
		alex_mem_on_op(mem, snap_at, &s);
		cr_assert_eq(alex_checkpoint(by_other ? other : db), 0); /* the other catches up first */
		alex_mem_on_op(mem, NULL, NULL);
		alex_close(other);
		alex_close(db);
		if (!s.img)
			break; /* past the checkpoint's last operation */
		cuts++;
		struct alex_io cio = alex_mem_io(s.img);
		cr_assert_eq(alex_open(DB, &cfg, &cio, &db), 0, "cut %llu", (unsigned long long)rel);
		cr_assert_eq(alex_read(db, ALEX_FILE_DB, got, BLK, BLK, &n), 0);
		int newer = got[0] == 'B';
		cr_expect_eq(got[0], newer ? 'B' : 'C');
		cr_assert_eq(alex_read(db, ALEX_FILE_DB, got, BLK, 2 * BLK, &n), 0);
		cr_expect(n == BLK && got[0] == (newer ? 'B' : 'A'),
			  "cut %llu: block 1 from the %s state, block 2 ('%c') not",
			  (unsigned long long)rel, newer ? "newer" : "older", got[0]);
		alex_close(db);
		alex_mem_free(s.img);
	}
	cr_expect_gt(cuts, 3);
}

Test(regress, normal_checkpoint_syncs_the_log_first)
{
	checkpoint_cut_at_every_op(0);
}

/* The engine that checkpoints committed nothing itself: it only read the
 * other's unsynced commits (another process, a reader that closes last),
 * and must sync the log before the copy all the same (review: two of six
 * cuts recovered a mix of the two states). */
Test(regress, a_checkpoint_syncs_what_another_engine_committed)
{
	checkpoint_cut_at_every_op(1);
}

/*
 * A file system running full: the checkpoint's new epoch begins at 8192 and
 * the log's preallocated space is given back (found in review).  Had the
 * cut reached the disk before the new header, the base, fenced for the
 * epoch just checkpointed, would see only that epoch's first record, and
 * recovery would replay it over the newer pages the base holds.  The cut
 * now follows a sync of the header.
 */
#define TRIM_NB 8u
static uint8_t trim_page1[BLK], trim_blk[BLK];
static alex_mem *trim_img;
static void trim_hook(void *arg, uint64_t op, enum alex_mem_op kind, int fd)
{
	(void)op;
	(void)fd;
	if (kind == ALEX_MEM_TRUNC && !trim_img) {
		size_t len;
		alex_mem *m = arg;
		const uint8_t *lg = alex_mem_get(m, LOG, &len);
		if (lg && len == 3 * BLK) { /* the log was just cut to 12288 */
			trim_img = alex_mem_crash(m, ALEX_CRASH_LOSE, 0);
		}
	}
}

Test(regress, space_low_trim_never_leaves_a_prefix_of_a_fenced_epoch)
{
	alex_mem *m = alex_mem_new();
	struct alex_io io = alex_mem_io(m);
	struct alex_config c;
	alex_db *db;
	static uint8_t d[TRIM_NB * BLK];
	size_t n;

	memset(d, 0, sizeof d); /* mostly zeros: a small commit is one 4 KiB record */
	memcpy(d, "SQLite format 3", 16);
	d[18] = d[19] = 1;
	d[24] = d[92] = 7;
	memcpy(trim_page1, d, BLK);
	alex_mem_set(m, DB, d, sizeof d);
	alex_mem_disk(m, 32u << 20); /* under 4 * checkpoint_bytes free: SPACE_LOW */
	alex_config_default(&c);
	cr_assert_eq(alex_open(DB, &c, &io, &db), 0);
	/* r1: block 1 := "old", one block record at 8192 */
	memset(trim_blk, 0, BLK);
	memcpy(trim_blk, "old", 3);
	cr_assert_eq(alex_write(db, ALEX_FILE_DB, trim_blk, BLK, BLK), 0);
	trim_page1[200] = 1;
	cr_assert_eq(alex_write(db, ALEX_FILE_DB, trim_page1, BLK, 0), 0);
	cr_assert_eq(alex_commit(db), 0);
	struct alex_stats st;
	alex_stats(db, &st);
	/* r2: block 1 := "new", and noise in others so it is large */
	memset(trim_blk, 0, BLK);
	memcpy(trim_blk, "new", 3);
	cr_assert_eq(alex_write(db, ALEX_FILE_DB, trim_blk, BLK, BLK), 0);
	uint64_t s = 5;
	for (unsigned b = 2; b < TRIM_NB; b++) {
		for (unsigned i = 0; i < BLK; i += 8) {
			uint64_t v = rnd(&s);
			memcpy(trim_blk + i, &v, 8);
		}
		cr_assert_eq(alex_write(db, ALEX_FILE_DB, trim_blk, BLK, (uint64_t)b * BLK), 0);
	}
	trim_page1[200] = 2;
	cr_assert_eq(alex_write(db, ALEX_FILE_DB, trim_page1, BLK, 0), 0);
	cr_assert_eq(alex_commit(db), 0); /* acknowledged: block 1 is "new" */
	alex_mem_on_op(m, trim_hook, m);
	alex_close(db); /* checkpoint; epoch 2 at 8192; space low: trim; unmark */
	alex_mem_on_op(m, NULL, NULL);
	cr_assert(trim_img, "no trim to 12288 seen");
	/* The power fails: the log's size change reached the disk (metadata,
	 * journalled), the new header slot and the unmark (overwrites) did
	 * not.  trim_img is the LOSE image taken right after the ftruncate,
	 * so make the cut kept: */
	size_t len;
	const uint8_t *lg = alex_mem_get(trim_img, LOG, &len);
	uint8_t *cut = malloc(3 * BLK);
	memcpy(cut, lg, 3 * BLK);
	alex_mem_set(trim_img, LOG, cut, 3 * BLK);
	struct alex_io io2 = alex_mem_io(trim_img);
	c.checkpoint_on_close = 0;
	int rc = alex_open(DB, &c, &io2, &db);
	cr_assert_eq(rc, 0, "%s", alex_strerror(rc));
	cr_assert_eq(alex_read(db, ALEX_FILE_DB, trim_blk, BLK, BLK, &n), 0);
	alex_stats(db, &st);
	cr_expect(memcmp(trim_blk, "new", 3) == 0, "stale: block 1 reads \"%.3s\" (r1 replayed over r2)",
		  trim_blk);
	alex_close(db);
	free(cut);
	alex_mem_free(trim_img);
	alex_mem_free(m);
}
