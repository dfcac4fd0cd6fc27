/* Conditional commits: one database's part of a transaction across several
 * (SQLite's super-journal).  Recovery applies one once its super-journal is
 * gone or a later commit follows it, holds it while undecided, and rolls it
 * back, durably, when told the transaction is over (alex_refresh). */
#include <criterion/criterion.h>

#include "format.h"
#include "helpers.h"

#define SUPER "/mem/t.db-mj01234567"

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
TestSuite(cond, .init = setup, .fini = teardown);

static alex_db *open_on(struct alex_io *on)
{
	return open_engine(&cfg, on);
}

/* Does block i hold txn's content? */
static int holds(alex_db *db, uint32_t txn, uint32_t i)
{
	uint8_t b[BLK], r[BLK];
	size_t got;
	fill_block(b, txn, i);
	cr_assert_eq(alex_read(db, ALEX_FILE_DB, r, BLK, (uint64_t)i * BLK, &got), 0);
	return got == BLK && memcmp(r, b, BLK) == 0;
}

/* A crash image of mem: what the disk holds (only synced writes). */
static alex_mem *crash(void)
{
	return alex_mem_crash(mem, ALEX_CRASH_LOSE, 1);
}

/* txn 1 committed plainly, txn 2 (n blocks) as a conditional commit, then
 * a crash with the super-journal present or not. */
static alex_mem *cond_then_crash(uint32_t n, int super_exists)
{
	alex_db *db = open_on(&io);
	put_txn(db, 1, 3);
	cr_assert_eq(alex_commit(db), 0);
	if (super_exists)
		cr_assert_eq(alex_mem_set(mem, SUPER, "/mem/t.db-journal\0", 18), 0);
	put_txn(db, 2, n);
	cr_assert_eq(alex_commit_cond(db, SUPER), 0);
	alex_mem *c = crash();
	alex_close(db);
	return c;
}

Test(cond, record_keeps_its_super_journal_path)
{
	alex_db *db = open_on(&io);
	put_txn(db, 1, 2);
	cr_assert_eq(alex_commit_cond(db, SUPER), 0);
	size_t len;
	const uint8_t *log = alex_mem_get(mem, LOG, &len);
	struct alex_loghdr h;
	struct alex_rec r;
	cr_assert(alex_loghdr_decode(log, &h) == 0 || alex_loghdr_decode(log + ALEX_BLOCK, &h) == 0);
	/* the first record is the epoch's: block 0 and the condition */
	cr_assert_eq(alex_rec_decode(log + ALEX_LOG_DATA, len - ALEX_LOG_DATA, h.epoch, h.start_lsn,
				     h.salt, &r), ALEX_STOP_NONE);
	cr_assert_eq(r.flags, ALEX_REC_COMMIT | ALEX_REC_COND);
	cr_assert_eq(r.cond_len, strlen(SUPER));
	cr_assert_eq(r.hdr_len, ALEX_REC_FIXED + ALEX_REC_ENTRY * r.nblocks + r.cond_len);
	cr_assert_eq(memcmp(log + ALEX_LOG_DATA + r.hdr_len - r.cond_len, SUPER, r.cond_len), 0);
	cr_assert_eq(alex_rec_check_body(log + ALEX_LOG_DATA, &r), ALEX_STOP_NONE);
	/* a flipped byte of the path is caught by the table crc */
	uint8_t *copy = malloc(r.rec_len);
	memcpy(copy, log + ALEX_LOG_DATA, r.rec_len);
	copy[r.hdr_len - 3] ^= 1;
	cr_assert_eq(alex_rec_check_body(copy, &r), ALEX_STOP_BAD_TABLE);
	free(copy);
	/* the path is not optional, and not unbounded */
	char big[ALEX_COND_MAX + 2];
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = 0;
	put_txn(db, 3, 1);
	cr_assert_eq(alex_commit_cond(db, big), ALEX_EINVAL);
	cr_assert_eq(alex_commit_cond(db, ""), ALEX_EINVAL);
	alex_close(db);
}

Test(cond, stands_once_its_super_journal_is_gone)
{
	alex_mem *c = cond_then_crash(3, 0);
	struct alex_io cio = alex_mem_io(c);
	alex_db *db = open_on(&cio);
	struct alex_stats st;
	alex_stats(db, &st);
	cr_expect_eq(st.cond_applied, 1);
	cr_expect_null(alex_in_doubt(db));
	for (uint32_t i = 0; i < 3; i++)
		cr_expect(holds(db, 2, i), "block %u", i);
	alex_close(db);
	alex_mem_free(c);
}

Test(cond, undecided_while_its_super_journal_exists)
{
	alex_mem *c = cond_then_crash(3, 1);
	struct alex_io cio = alex_mem_io(c);
	alex_db *db = open_on(&cio);
	struct alex_stats st;

	/* at open nothing says the transaction is over: it is held */
	cr_assert_str_eq(alex_in_doubt(db), SUPER);
	for (uint32_t i = 0; i < 3; i++)
		cr_expect(holds(db, 1, i), "block %u", i);
	uint8_t b[BLK] = { 0 };
	cr_expect_eq(alex_write(db, ALEX_FILE_DB, b, BLK, 0), ALEX_EBUSY);
	cr_expect_eq(alex_truncate(db, ALEX_FILE_DB, 0), ALEX_EBUSY);
	cr_expect_eq(alex_remove_log(db), ALEX_EBUSY);
	cr_assert_eq(alex_refresh(db, 0), 0);
	cr_assert_str_eq(alex_in_doubt(db), SUPER);

	/* under SQLite's lock it is over: rolled back */
	cr_assert_eq(alex_refresh(db, 1), 0);
	cr_expect_null(alex_in_doubt(db));
	alex_stats(db, &st);
	cr_expect_eq(st.cond_discarded, 1);
	for (uint32_t i = 0; i < 3; i++)
		cr_expect(holds(db, 1, i), "block %u", i);
	alex_mem *c2 = alex_mem_crash(c, ALEX_CRASH_LOSE, 2);
	alex_close(db);

	/* durably: with the super-journal gone (another database's recovery
	 * removed it), the transaction still did not happen */
	struct alex_io io2 = alex_mem_io(c2);
	cr_assert_eq(io2.ops->unlink(io2.ctx, SUPER), 0);
	db = open_on(&io2);
	alex_stats(db, &st);
	cr_expect_eq(st.cond_applied, 0);
	cr_expect_eq(st.recovered_commits, 1);
	cr_expect_eq(st.lost_offset, 0);
	for (uint32_t i = 0; i < 3; i++)
		cr_expect(holds(db, 1, i), "block %u", i);
	/* and its writes go where the dropped record was */
	put_txn(db, 4, 2);
	cr_assert_eq(alex_commit(db), 0);
	alex_close(db);
	db = open_on(&io2);
	cr_expect(holds(db, 4, 0) && holds(db, 4, 1) && holds(db, 1, 2));
	alex_close(db);
	alex_mem_free(c2);
	alex_mem_free(c);
}

Test(cond, rolled_back_with_spills_leaves_no_lost_commit)
{
	/* 40 blocks: spills first, then the conditional commit record */
	alex_mem *c = cond_then_crash(40, 1);
	struct alex_io cio = alex_mem_io(c);
	alex_db *db = open_on(&cio);
	struct alex_stats st;
	cr_assert_eq(alex_refresh(db, 1), 0);
	alex_stats(db, &st);
	cr_expect_eq(st.cond_discarded, 1);
	put_txn(db, 5, 1);
	cr_assert_eq(alex_commit(db), 0);
	alex_close(db);
	db = open_on(&cio);
	alex_stats(db, &st);
	cr_expect_eq(st.lost_offset, 0, "spills of the rolled-back part seen as lost commits");
	cr_expect(holds(db, 5, 0) && holds(db, 1, 1) && holds(db, 1, 2));
	uint64_t sz;
	alex_size(db, ALEX_FILE_DB, &sz);
	cr_expect_eq(sz, 3 * BLK);
	alex_close(db);
	alex_mem_free(c);
}

Test(cond, a_checkpoint_decides_first)
{
	alex_mem *c = cond_then_crash(3, 1);
	struct alex_io cio = alex_mem_io(c);
	alex_db *db = open_on(&cio);
	struct alex_stats st;
	/* its caller holds SQLite's lock: the transaction is over */
	cr_assert_eq(alex_checkpoint(db), 0);
	alex_stats(db, &st);
	cr_expect_eq(st.cond_discarded, 1);
	cr_expect_eq(alex_holds_pages(db), 0);
	alex_close(db);
	db = open_on(&cio);
	for (uint32_t i = 0; i < 3; i++)
		cr_expect(holds(db, 1, i), "block %u", i);
	alex_close(db);
	alex_mem_free(c);
}

Test(cond, a_later_commit_decides_it_committed)
{
	alex_db *db = open_on(&io);
	put_txn(db, 1, 3);
	cr_assert_eq(alex_commit(db), 0);
	cr_assert_eq(alex_mem_set(mem, SUPER, "x", 1), 0);
	put_txn(db, 2, 2);
	cr_assert_eq(alex_commit_cond(db, SUPER), 0);
	/* not copied into the database while undecided */
	cr_expect_eq(alex_checkpoint(db), ALEX_EBUSY);
	alex_resolve(db);
	uint8_t b[BLK];
	fill_block(b, 3, 2);
	cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, 2 * BLK), 0);
	cr_assert_eq(alex_commit(db), 0);
	cr_assert_eq(alex_sync(db), 0);
	alex_mem *c = crash();
	alex_close(db);
	struct alex_io cio = alex_mem_io(c);
	db = open_on(&cio);
	cr_expect_null(alex_in_doubt(db));
	cr_expect(holds(db, 2, 0) && holds(db, 2, 1) && holds(db, 3, 2));
	alex_close(db);
	alex_mem_free(c);
}

Test(cond, rollback_after_it_is_synced_even_in_normal_mode)
{
	/* SQLite rolls a database's part back when a later database's commit
	 * fails: that restore is synced, or a power cut could keep the
	 * conditional commit and lose its undoing */
	cfg.sync = ALEX_SYNC_NORMAL;
	alex_db *db = open_on(&io);
	put_txn(db, 1, 3);
	cr_assert_eq(alex_commit(db), 0);
	cr_assert_eq(alex_sync(db), 0);
	put_txn(db, 2, 3);
	cr_assert_eq(alex_commit_cond(db, SUPER), 0);
	put_txn(db, 1, 3); /* the restore */
	cr_assert_eq(alex_commit(db), 0);
	alex_mem *c = crash(); /* the super-journal was never there: "gone" */
	alex_resolve(db);
	alex_close(db);
	struct alex_io cio = alex_mem_io(c);
	db = open_on(&cio);
	for (uint32_t i = 0; i < 3; i++)
		cr_expect(holds(db, 1, i), "block %u", i);
	alex_close(db);
	alex_mem_free(c);
}

/* Not a conditional commit: spills a crash abandoned stay behind the
 * records written over their start, and are no evidence of lost commits. */
Test(cond, abandoned_spills_are_not_lost_commits)
{
	alex_db *db = open_on(&io);
	struct alex_stats st;
	put_txn(db, 1, 1);
	cr_assert_eq(alex_commit(db), 0);
	put_txn(db, 2, 100);
	alex_mem *c = alex_mem_crash(mem, ALEX_CRASH_KEEP, 1);
	alex_close(db);
	struct alex_io cio = alex_mem_io(c);
	db = open_on(&cio);
	put_txn(db, 3, 2);
	cr_assert_eq(alex_commit(db), 0);
	alex_mem *c2 = alex_mem_crash(c, ALEX_CRASH_KEEP, 1);
	alex_close(db);
	struct alex_io io2 = alex_mem_io(c2);
	db = open_on(&io2);
	alex_stats(db, &st);
	cr_expect_eq(st.lost_offset, 0);
	cr_expect_eq(st.recovered_commits, 2);
	cr_expect(holds(db, 3, 0) && holds(db, 3, 1));
	cr_expect_eq(alex_remove_log(db) == ALEX_EBUSY, 1); /* it holds commits */
	alex_close(db);
	alex_mem_free(c2);
	alex_mem_free(c);
}
