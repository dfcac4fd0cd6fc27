/*
 * Power loss after every I/O operation.  A seeded workload of 200
 * transactions (1-300 blocks, many rewriting recent blocks, some truncating,
 * many spilling through a 7-slot collector, several checkpoints) runs on the
 * memory backend.  After each mutating operation the disk image is cut four
 * ways -- unsynced writes lost, the last one torn, all kept, any subset of
 * them kept whole or in sectors (a disk that reorders) -- and recovered by a
 * fresh engine, which must show exactly the state after one committed
 * transaction: the last acknowledged one, or (when unsynced writes survived)
 * the one whose commit was in flight.  Every fourth cut the recovered engine
 * also commits on top of the torn tail and is cut again, so stale bytes
 * beyond the recovery point are shown never to come back.
 *
 * Run twice: with block contents of its own (the log's epochs are not
 * fenced), and with an SQLite page 1 rewritten by every transaction, as
 * SQLite does, so that the database file is fenced and every epoch ends
 * with the single-sync checkpoint (core/protect.c).
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "helpers.h"

#define NTX 200
#define NBLK 1500
#define MARK 60000u /* txn id of the post-recovery commit */

static uint32_t (*snap)[NBLK]; /* writer of each block after txn j */
static uint32_t snapsz[NTX + 1];
static struct {
	uint32_t n, trunc; /* trunc: new size in blocks, or UINT32_MAX */
	uint32_t *blocks;
} plan[NTX + 1];

static void make_plan(uint64_t seed, int page1)
{
	uint64_t s = seed;

	snap = calloc(NTX + 1, sizeof *snap);
	for (uint32_t t = 1; t <= NTX; t++) {
		uint32_t size = snapsz[t - 1], r = (uint32_t)(rnd(&s) % 100);
		memcpy(snap[t], snap[t - 1], sizeof snap[t]);
		plan[t].trunc = UINT32_MAX;
		if (t % 23 == 0 && size > 10) {
			plan[t].trunc = (uint32_t)(rnd(&s) % size);
			for (uint32_t b = plan[t].trunc; b < NBLK; b++)
				snap[t][b] = 0;
			size = plan[t].trunc;
		}
		uint32_t n = r < 70 ? 1 + rnd(&s) % 8 : r < 90 ? 9 + rnd(&s) % 56 : 65 + rnd(&s) % 236;
		plan[t].n = n + (page1 != 0);
		plan[t].blocks = malloc(plan[t].n * sizeof(uint32_t));
		if (page1) { /* SQLite writes page 1 in every transaction */
			plan[t].blocks[n] = 0;
			snap[t][0] = t;
			if (size < 1)
				size = 1;
		}
		for (uint32_t i = 0; i < n; i++) {
			uint32_t b;
			if (t > 1 && rnd(&s) % 100 < 40) { /* rewrite a block of a recent txn */
				uint32_t pt = t - 1 - (uint32_t)(rnd(&s) % (t < 5 ? t - 1 : 4));
				b = plan[pt].blocks[rnd(&s) % plan[pt].n];
			} else {
				b = (uint32_t)(rnd(&s) % NBLK);
			}
			plan[t].blocks[i] = b;
			snap[t][b] = t;
			if (b + 1 > size)
				size = b + 1;
		}
		snapsz[t] = size;
	}
}

static void free_plan(void)
{
	for (uint32_t t = 1; t <= NTX; t++)
		free(plan[t].blocks);
	free(snap);
}

static alex_mem *mem;
static struct alex_config cfg;
static int sqlite_page1; /* block 0 is an SQLite page 1 naming its writer */

/* Block blk as written by txn: in the SQLite variant block 0 is a page 1
 * whose change counter (and "version valid for") is the txn, and the
 * identifying header moves to bytes 100..107. */
static void make_block(uint8_t *b, uint32_t txn, uint32_t blk)
{
	fill_block(b, txn, blk);
	if (!sqlite_page1 || blk != 0 || !txn)
		return;
	uint32_t id[2] = { txn, blk };
	memset(b, 0, 100);
	memcpy(b, "SQLite format 3", 16);
	b[16] = 0x10; /* page size 4096 */
	b[18] = b[19] = 1;
	b[21] = 64, b[22] = 32, b[23] = 32;
	for (int i = 0; i < 4; i++)
		b[24 + i] = b[92 + i] = (uint8_t)(txn >> (24 - 8 * i));
	memcpy(b + 100, id, 8);
}
static uint32_t acked, cur;
static int in_commit, synced_in_commit;
static uint64_t cuts, reapplied;
static uint8_t *img;

/* Does the recovered database equal the state after txn j (plus MARK in
 * block 0 when marked)?  Headers of every block identify the writers; full
 * contents are compared for recent writers and a sample. */
static int matches(const uint8_t *data, uint64_t size, uint32_t j, int marked)
{
	uint64_t want = (uint64_t)snapsz[j] * BLK;
	static uint8_t exp[BLK];

	if (marked && want < BLK)
		want = BLK;
	if (size != want)
		return 0;
	for (uint32_t b = 0; b < size / BLK; b++) {
		uint32_t w = marked && b == 0 ? MARK : snap[j][b];
		uint32_t hdr[2] = { w, w ? b : 0 };
		size_t at = sqlite_page1 && b == 0 && w ? 100 : 0;
		if (memcmp(data + (uint64_t)b * BLK + at, hdr, 8) != 0)
			return 0;
		if (w + 2 >= acked || b % 97 == cuts % 97 || b == 0) {
			make_block(exp, w, b);
			if (memcmp(data + (uint64_t)b * BLK, exp, BLK) != 0)
				return 0;
		}
	}
	return 1;
}

static uint32_t recover_and_identify(alex_mem *c, int marked, alex_db **keep)
{
	struct alex_io io = alex_mem_io(c);
	alex_db *db;
	uint64_t size;
	size_t got;
	int rc = alex_open(DB, &cfg, &io, &db);

	cr_assert_eq(rc, 0, "cut %lu: recovery failed: %s", (unsigned long)cuts, alex_strerror(rc));
	alex_size(db, ALEX_FILE_DB, &size);
	cr_assert_leq(size, (uint64_t)NBLK * BLK);
	cr_assert_eq(alex_read(db, ALEX_FILE_DB, img, size, 0, &got), 0);
	cr_assert_eq(got, size);
	uint32_t hi = cur > acked ? cur : acked;
	for (uint32_t j = hi + 1; j-- > acked;)
		if (matches(img, size, j, marked)) {
			if (keep)
				*keep = db;
			else
				alex_close(db);
			return j;
		}
	cr_assert_fail("cut %lu: recovered state is no committed state in [%u, %u]",
		       (unsigned long)cuts, acked, hi);
	return 0;
}

static void on_op(void *arg, uint64_t op, enum alex_mem_op kind, int fd)
{
	(void)arg;
	(void)fd;
	if (kind == ALEX_MEM_SYNC && in_commit)
		synced_in_commit = 1;
	for (int how = ALEX_CRASH_LOSE; how <= ALEX_CRASH_SUBSET; how++) {
		alex_mem *c = alex_mem_crash(mem, how, op * 3 + (uint64_t)how);
		cr_assert_not_null(c);
		cuts++;
		int again = cuts % 4 == 0;
		alex_db *db = NULL;
		uint32_t j = recover_and_identify(c, 0, again ? &db : NULL);
		if (how == ALEX_CRASH_LOSE)
			cr_assert(j == acked || (synced_in_commit && j == cur),
				  "cut %lu (op %lu, lost unsynced): state %u, acknowledged %u",
				  (unsigned long)cuts, (unsigned long)op, j, acked);
		if (again) {
			/* commit over whatever tail the cut left, then cut again */
			uint8_t b[BLK];
			make_block(b, MARK, 0);
			cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, 0), 0);
			cr_assert_eq(alex_commit(db), 0);
			if (cfg.sync != ALEX_SYNC_FULL)
				cr_assert_eq(alex_sync(db), 0);
			alex_mem *c2 = alex_mem_crash(c, ALEX_CRASH_LOSE, op);
			alex_close(db);
			uint32_t saved_acked = acked, saved_cur = cur;
			acked = cur = j;
			recover_and_identify(c2, 1, NULL);
			acked = saved_acked;
			cur = saved_cur;
			alex_mem_free(c2);
			reapplied++;
		}
		alex_mem_free(c);
	}
}

static void run(enum alex_sync sync, uint64_t seed, int page1)
{
	sqlite_page1 = page1;
	struct alex_io io;
	alex_db *db;
	uint8_t b[BLK];

	make_plan(seed, page1);
	img = malloc((size_t)NBLK * BLK);
	mem = alex_mem_new();
	io = alex_mem_io(mem);
	small_config(&cfg);
	cfg.sync = sync;
	cr_assert_eq(alex_open(DB, &cfg, &io, &db), 0);
	alex_mem_on_op(mem, on_op, NULL);
	acked = cur = 0;
	for (uint32_t t = 1; t <= NTX; t++) {
		cur = t;
		if (plan[t].trunc != UINT32_MAX)
			cr_assert_eq(alex_truncate(db, ALEX_FILE_DB, (uint64_t)plan[t].trunc * BLK), 0);
		for (uint32_t i = 0; i < plan[t].n; i++) {
			make_block(b, t, plan[t].blocks[i]);
			cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK,
						(uint64_t)plan[t].blocks[i] * BLK), 0);
		}
		in_commit = 1;
		synced_in_commit = 0;
		cr_assert_eq(alex_commit(db), 0);
		if (sync != ALEX_SYNC_FULL)
			cr_assert_eq(alex_sync(db), 0);
		in_commit = 0;
		acked = t;
	}
	struct alex_stats st;
	alex_stats(db, &st);
	alex_mem_on_op(mem, NULL, NULL);
	alex_close(db);
	cr_log_info("%lu cuts, %lu commits over torn tails, %lu spills, %lu checkpoints",
		    (unsigned long)cuts, (unsigned long)reapplied, (unsigned long)st.spills,
		    (unsigned long)st.checkpoints);
	cr_expect_gt(st.spills, 100, "the workload must spill");
	cr_expect_geq(st.checkpoints, 3, "the workload must cross checkpoints");
	cr_expect_geq(cuts, 4 * 1000, "every operation index was cut");
	if (page1)
		cr_expect_gt(st.fenced_epochs, 3, "the SQLite variant must fence its epochs");
	alex_mem_free(mem);
	free(img);
	free_plan();
}

Test(powerloss, every_io_full_sync, .timeout = 600)
{
	run(ALEX_SYNC_FULL, 1, 0);
}

Test(powerloss, every_io_full_sync_fenced, .timeout = 600)
{
	run(ALEX_SYNC_FULL, 2, 1);
}

/* NORMAL mode packs records on 512-byte sectors (format.h): a record
 * begins mid-page, and the cuts tear and reorder those sectors. */
Test(powerloss, every_io_normal_sync_sectors, .timeout = 600)
{
	run(ALEX_SYNC_NORMAL, 3, 0);
}

Test(powerloss, every_io_normal_sync_sectors_fenced, .timeout = 600)
{
	run(ALEX_SYNC_NORMAL, 4, 1);
}
