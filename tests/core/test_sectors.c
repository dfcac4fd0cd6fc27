/*
 * Records on 512-byte sectors (format 6), where the code once took a
 * record's end for a block's (a review of 7d66d96 found each): an epoch
 * that follows a short one begins at the next block after the chain's end,
 * and recovery must look for a damaged slot's epoch there; lost commits
 * right after a damaged record are looked for from the next sector; the
 * record list reaches the file's last sector.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "helpers.h"

static uint8_t page1[BLK];

static void one_commit(alex_db *db, uint8_t v)
{
	sqlite_like_commit(db, page1, v);
}

static void run_adopt2(int sync, int sync2)
{
	alex_mem *m = alex_mem_new();
	struct alex_io io = alex_mem_io(m);
	struct alex_config c;
	alex_db *db;
	size_t len;

	alex_config_default(&c);
	c.sync = sync;
	sqlite_like_file(m, page1);
	cr_assert_eq(alex_open(DB, &c, &io, &db), 0);
	one_commit(db, 0xA1);
	alex_close(db); /* checkpoint; log kept; epoch 2 follows */
	c.sync = sync2;
	cr_assert_eq(alex_open(DB, &c, &io, &db), 0);
	one_commit(db, 0xA2);
	one_commit(db, 0xA3);
	if (alex_sync_start(db))
		cr_assert_eq(alex_sync_finish(db, alex_sync_run(db)), 0);
	/* everything durable; then epoch 2's slot (slot 0) is torn */
	alex_mem *img = alex_mem_crash(m, ALEX_CRASH_KEEP, 0);
	alex_close(db);
	uint8_t *log = log_copy(img, &len);
	struct alex_loghdr h;
	cr_assert_eq(alex_loghdr_decode(log, &h), 0);
	cr_assert_eq(h.epoch, 2);
	cr_log_info("sync=%d: epoch 2 data_off %lu", sync, (unsigned long)h.data_off);
	cr_assert_gt(h.data_off, ALEX_LOG_DATA, "epoch 2 follows epoch 1");
	log[40] ^= 0x5a;
	alex_mem_set(img, LOG, log, len);
	struct alex_stats st;
	uint8_t v = 0;
	int rc = image_byte(img, BLK, &v, &st);
	cr_expect_eq(rc, 0, "sync=%d: open after a torn slot: %s", sync, alex_strerror(rc));
	if (!rc) {
		cr_expect(st.header_repaired, "sync=%d: epoch 2 adopted from its first record", sync);
		cr_expect_eq(v, 0xA3, "sync=%d: block 1 = %02x, want A3 (synced commit)", sync, v);
		cr_log_info("stop %s at %lu, epoch_applied %d, recovered %lu", alex_stop_name(st.stop_reason),
			    (unsigned long)st.stop_offset, st.epoch_applied, (unsigned long)st.recovered_commits);
	}
	alex_mem_free(img);
	alex_mem_free(m);
	free(log);
}

static void run_adopt(int sync) { run_adopt2(sync, sync); }
Test(sectors, adopt_follow_full) { run_adopt(ALEX_SYNC_FULL); }
Test(sectors, adopt_follow_normal) { run_adopt(ALEX_SYNC_NORMAL); }
/* a NORMAL process, then a FULL one: FULL's acknowledged commits */
Test(sectors, adopt_follow_normal_then_full) { run_adopt2(ALEX_SYNC_NORMAL, ALEX_SYNC_FULL); }

/* A database like SQLite's on a memory disk, its engine in mode sync,
 * leaving the log as it is at close. */
static alex_db *fresh(alex_mem *m, struct alex_io *io, struct alex_config *c, int sync)
{
	alex_db *db;

	*io = alex_mem_io(m);
	alex_config_default(c);
	c->sync = sync;
	c->checkpoint_on_close = 0;
	sqlite_like_file(m, page1);
	cr_assert_eq(alex_open(DB, c, io, &db), 0);
	return db;
}

/*
 * Synced commits of the epoch a sector or two after a damaged record are
 * lost commits, not a torn tail: look_past (recover.c) begins at the next
 * sector, not the next block.
 */
static void run_lost(int sync)
{
	alex_mem *m = alex_mem_new();
	struct alex_io io;
	struct alex_config c;
	size_t len;
	alex_db *db = fresh(m, &io, &c, sync);

	for (int i = 0; i < 4; i++)
		one_commit(db, (uint8_t)(0xC0 + i));
	if (alex_sync_start(db))
		cr_assert_eq(alex_sync_finish(db, alex_sync_run(db)), 0);
	alex_mem *img = alex_mem_crash(m, ALEX_CRASH_KEEP, 0);
	alex_close(db);
	uint8_t *log = log_copy(img, &len);
	struct alex_loghdr h;
	cr_assert_eq(alex_loghdr_decode(log + BLK, &h), 0);
	uint64_t off = h.data_off, second = 0;
	for (int i = 0; i < 4; i++) {
		struct alex_rec r;
		cr_assert(alex_rec_peek(log + off, &r));
		cr_log_info("sync=%d: record %d at %lu, %u bytes", sync, i, (unsigned long)off, r.rec_len);
		if (i == 1)
			second = off;
		off += r.rec_len;
	}
	memset(log + second + 20, 0x5a, 8); /* the second record's header torn: synced, lost */
	alex_mem_set(img, LOG, log, len);
	struct alex_stats st;
	uint8_t v = 0;
	cr_assert_eq(image_byte(img, BLK, &v, &st), 0);
	cr_log_info("stop %lu lost %lu", (unsigned long)st.stop_offset, (unsigned long)st.lost_offset);
	cr_expect_eq(st.stop_offset, second);
	cr_expect_neq(st.lost_offset, 0, "sync=%d: commits after the damaged record were lost, "
		      "and recovery says it was a torn tail", sync);
	alex_mem_free(img);
	alex_mem_free(m);
	free(log);
}

Test(sectors, lost_commits_seen_full) { run_lost(ALEX_SYNC_FULL); }
Test(sectors, lost_commits_seen_normal) { run_lost(ALEX_SYNC_NORMAL); }

/*
 * alex_records (inspect.c: the walk `alex stat/verify` shows) reaches the
 * file's last sector: a NORMAL-mode log whose one record is a sector long
 * (the file ends at 8704) lists it.
 */
static int nrec;
static int count_rec(void *arg, const struct alex_recinfo *ri)
{
	(void)arg;
	(void)ri;
	nrec++;
	return 0;
}

static void run_records(int sync)
{
	alex_mem *m = alex_mem_new();
	struct alex_io io;
	struct alex_config c;
	size_t len;
	alex_db *db = fresh(m, &io, &c, sync);

	one_commit(db, 0xD1);
	alex_close(db);
	(void)alex_mem_get(m, LOG, &len);
	cr_assert_eq(alex_open(DB, &c, &io, &db), 0);
	nrec = 0;
	cr_assert_eq(alex_records(db, count_rec, NULL), 0);
	cr_expect_eq(nrec, 1, "sync=%d: log of %zu bytes, %d records listed", sync, len, nrec);
	alex_close(db);
	alex_mem_free(m);
}

Test(sectors, records_listed_full) { run_records(ALEX_SYNC_FULL); }
Test(sectors, records_listed_normal) { run_records(ALEX_SYNC_NORMAL); }
