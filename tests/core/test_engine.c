/* The engine through its public API on the memory backend: reads after
 * writes of any size and alignment, dedup, header embedding, preallocation,
 * spills, truncation, checkpoints, reopening, an epoch of an older format. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>

#include "format.h"
#include "helpers.h"

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
TestSuite(engine, .init = setup, .fini = teardown);

static alex_db *open_db(void)
{
	alex_db *db;
	int rc = alex_open(DB, &cfg, &io, &db);
	cr_assert_eq(rc, 0, "alex_open: %s", alex_strerror(rc));
	return db;
}

/* ---- a byte-exact reference model of the three logical files --------- */

#define MAXSZ (600u * 1024)
static uint8_t *ref[ALEX_NFILES];
static uint64_t refsz[ALEX_NFILES];

static void check_all(alex_db *db, const char *when)
{
	static uint8_t buf[MAXSZ + 100];
	for (int f = 0; f < ALEX_NFILES; f++) {
		uint64_t sz;
		size_t got;
		cr_assert_eq(alex_size(db, f, &sz), 0);
		cr_assert_eq(sz, refsz[f], "%s: file %d size %lu want %lu", when, f,
			     (unsigned long)sz, (unsigned long)refsz[f]);
		cr_assert_eq(alex_read(db, f, buf, MAXSZ + 100, 0, &got), 0);
		cr_assert_eq(got, sz);
		for (uint64_t i = 0; i < sz; i++)
			if (buf[i] != ref[f][i])
				cr_assert_fail("%s: file %d differs at byte %lu", when, f,
					       (unsigned long)i);
	}
}

Test(engine, random_io_matches_reference)
{
	uint64_t s = 7;
	static uint8_t src[70000];
	alex_db *db = open_db();

	for (int f = 0; f < ALEX_NFILES; f++) {
		ref[f] = calloc(1, MAXSZ + 70000);
		refsz[f] = 0;
	}
	for (int step = 0; step < 4000; step++) {
		unsigned f = rnd(&s) % ALEX_NFILES, op = rnd(&s) % 100;
		if (op < 70) {
			uint64_t off = rnd(&s) % (MAXSZ - 70000);
			size_t len = 1 + rnd(&s) % (rnd(&s) % 4 ? 5000u : 66000u);
			if (rnd(&s) % 2) { /* page-like writes too */
				off &= ~(uint64_t)1023;
				len = 1024u << (rnd(&s) % 4);
			}
			for (size_t i = 0; i < len; i++)
				src[i] = (uint8_t)(rnd(&s) % 4 ? (uint64_t)('x' + step % 3) : rnd(&s));
			cr_assert_eq(alex_write(db, f, src, len, off), 0);
			memcpy(ref[f] + off, src, len);
			if (off + len > refsz[f])
				refsz[f] = off + len;
		} else if (op < 75) {
			uint64_t sz = rnd(&s) % (MAXSZ - 70000);
			cr_assert_eq(alex_truncate(db, f, sz), 0);
			if (sz < refsz[f])
				memset(ref[f] + sz, 0, refsz[f] - sz);
			refsz[f] = sz;
		} else if (op < 95) {
			cr_assert_eq(alex_commit(db), 0);
		} else if (op < 97) {
			cr_assert_eq(alex_commit(db), 0);
			cr_assert_eq(alex_checkpoint(db), 0);
		} else {
			cr_assert_eq(alex_commit(db), 0);
			cr_assert_eq(alex_close(db), 0);
			db = open_db();
			check_all(db, "after reopen");
		}
		if (step % 200 == 0)
			check_all(db, "during run");
	}
	cr_assert_eq(alex_commit(db), 0);
	check_all(db, "end");
	cfg.checkpoint_on_close = 1;
	cr_assert_eq(alex_close(db), 0);
	/* after the closing checkpoint the base file alone is the database */
	size_t len;
	const uint8_t *base = alex_mem_get(mem, DB, &len);
	cr_assert_eq(len, refsz[0]);
	cr_assert_arr_eq(base, ref[0], len);
	db = open_db();
	struct alex_stats st;
	alex_stats(db, &st);
	cr_expect_eq(st.recovered_records, 0);
	check_all(db, "after final checkpoint");
	alex_close(db);
	cr_expect_eq(alex_mem_uncounted(mem), 0, "a log change the counter missed (shm.c)");
	for (int f = 0; f < ALEX_NFILES; f++)
		free(ref[f]);
}

Test(engine, dedup_keeps_one_copy_per_block)
{
	uint8_t b[BLK];
	cfg.protect_base = 0; /* count only the blocks written here */
	alex_db *db = open_db();
	struct alex_stats st;

	for (uint32_t i = 1; i <= 10; i++) {
		fill_block(b, i, 3);
		cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, 3 * BLK), 0);
	}
	cr_assert_eq(alex_commit(db), 0);
	alex_stats(db, &st);
	cr_expect_eq(st.dedup_hits, 9);
	cr_expect_eq(st.blocks_logged, 1);
	uint8_t r[BLK];
	size_t got;
	cr_assert_eq(alex_read(db, ALEX_FILE_DB, r, BLK, 3 * BLK, &got), 0);
	cr_expect_arr_eq(r, b, BLK);
	alex_close(db);
}

static uint64_t commit_cost(alex_db *db, uint32_t txn, uint64_t *ops)
{
	uint8_t b[BLK];
	struct alex_stats a, z;

	fill_block(b, txn, 1);
	alex_stats(db, &a);
	cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, BLK), 0);
	uint64_t before = alex_mem_ops(mem);
	cr_assert_eq(alex_commit(db), 0);
	*ops = alex_mem_ops(mem) - before;
	alex_stats(db, &z);
	cr_expect_eq(z.syncs - a.syncs, 1);
	return z.bytes_logged - a.bytes_logged;
}

Test(engine, header_embedding_and_one_write_one_sync)
{
	cfg.direct = 0; /* counts whole blocks (stage.c: rec_len_for) */
	alex_db *db = open_db();
	uint64_t ops;
	size_t len;

	/* the epoch's first commit also carries block 0 (protect.c) */
	commit_cost(db, 4, &ops);
	/* (txn + blk) % 3 != 0: compressible; == 0: noise */
	cr_expect_eq(commit_cost(db, 1, &ops), BLK, "a compressible block fits with its header");
	cr_expect_eq(ops, 2, "one pwrite and one fdatasync");
	cr_expect_eq(commit_cost(db, 2, &ops), 2 * BLK, "a raw block needs a second block");
	cr_expect_eq(ops, 2);
	const uint8_t *base = alex_mem_get(mem, DB, &len);
	cr_expect(len == 100 && memcmp(base, "ALEX-log-pending", 16) == 0,
		  "the database file holds only the placeholder until a checkpoint");
	alex_close(db);
}

Test(engine, compression_off_and_threshold)
{
	cfg.compress = ALEX_COMPRESS_OFF;
	cfg.direct = 0; /* counts whole blocks (stage.c: rec_len_for) */
	alex_db *db = open_db();
	uint64_t ops;
	commit_cost(db, 4, &ops);
	cr_expect_eq(commit_cost(db, 1, &ops), 2 * BLK);
	struct alex_stats st;
	alex_stats(db, &st);
	cr_expect_eq(st.blocks_compressed, 0);
	alex_close(db);
}

/* The log's growth steps: up to 256 KiB, no epoch reuse, raw blocks. */
static void growth_config(void)
{
	cfg.prealloc_bytes = 256u << 10;
	cfg.checkpoint_bytes = 64u << 20;
	cfg.compress = ALEX_COMPRESS_OFF;
}

Test(engine, log_grows_in_doubling_steps_of_written_zeros)
{
	growth_config();
	alex_db *db = open_db();
	uint8_t b[BLK];
	size_t len, last = 0;
	int grew = 0;

	for (uint32_t t = 1; t <= 200; t++) {
		fill_block(b, t, t);
		cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, (uint64_t)t * BLK), 0);
		uint64_t before = alex_mem_ops(mem);
		cr_assert_eq(alex_commit(db), 0);
		const uint8_t *log = alex_mem_get(mem, LOG, &len);
		struct alex_stats st;
		alex_stats(db, &st);
		cr_assert_geq(len, 2 * BLK + st.log_used);
		if (len != last) {
			/* a new log: its first record only; then growing by what
			 * the log has, from 64 KiB to 256 KiB */
			uint64_t have = last - 2 * BLK, step = have < (64u << 10) ? (64u << 10) : have;
			if (!last)
				cr_assert_eq(len, 2 * BLK + st.log_used, "the first record alone");
			else
				cr_assert_eq(len - last, step < (256u << 10) ? step : (256u << 10));
			for (size_t i = 2 * BLK + st.log_used; i < len; i++)
				cr_assert_eq(log[i], 0, "the grown space is written zeros");
			grew++;
			last = len;
		} else if (t > 1) {
			cr_assert_eq(alex_mem_ops(mem) - before, 2, "not growing: one write, one sync");
		}
	}
	cr_expect_leq(grew, 12);
	alex_close(db);
}

/* NORMAL syncs once per half window, not per commit: the zeros that save a
 * per-commit flush its conversion cost nothing there, and would be synced
 * to the device before the records overwrite them.  The log's space is
 * reserved (fallocate), not written, in the same steps. */
Test(engine, normal_log_space_is_reserved_not_written)
{
	growth_config();
	cfg.sync = ALEX_SYNC_NORMAL;
	cfg.sync_ms = 600000;
	cfg.extent_bytes = 64u << 20; /* no sync in this test */
	alex_db *db = open_db();
	uint8_t b[BLK];
	size_t len, last = 0;
	int grew = 0;

	for (uint32_t t = 1; t <= 200; t++) {
		fill_block(b, t, t);
		uint64_t before = alex_mem_ops(mem); /* the page's write reserves room */
		cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, (uint64_t)t * BLK), 0);
		cr_assert_eq(alex_commit(db), 0);
		alex_mem_get(mem, LOG, &len);
		if (len != last && last) {
			uint64_t have = last - 2 * BLK, step = have < (64u << 10) ? (64u << 10) : have;
			cr_assert_eq(len - last, step < (256u << 10) ? step : (256u << 10));
			cr_assert_eq(alex_mem_ops(mem) - before, 2, "growing: a reservation, one write");
			grew++;
		} else if (t > 1) {
			cr_assert_eq(alex_mem_ops(mem) - before, 1, "not growing: one write");
		}
		last = len;
	}
	cr_expect_geq(grew, 3);
	cr_expect_leq(grew, 12);
	alex_close(db);
}

Test(engine, spilled_transaction_is_atomic)
{
	uint8_t b[BLK];
	alex_db *db = open_db();
	struct alex_stats st;

	for (uint32_t i = 0; i < 100; i++) {
		fill_block(b, 1, i);
		cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, (uint64_t)i * BLK), 0);
	}
	alex_stats(db, &st);
	cr_expect_gt(st.spills, 10);
	cr_expect_eq(alex_checkpoint(db), ALEX_EBUSY);
	/* power lost before the commit: none of it */
	alex_mem *c = alex_mem_crash(mem, ALEX_CRASH_KEEP, 1);
	struct alex_io cio = alex_mem_io(c);
	alex_db *d2;
	cr_assert_eq(alex_open(DB, &cfg, &cio, &d2), 0);
	uint64_t sz;
	alex_size(d2, ALEX_FILE_DB, &sz);
	cr_expect_eq(sz, 0);
	alex_stats(d2, &st);
	cr_expect_gt(st.dropped_records, 10);
	cr_expect_eq(st.recovered_commits, 0);
	alex_close(d2);
	alex_mem_free(c);

	cr_assert_eq(alex_commit(db), 0);
	alex_close(db);
	db = open_db();
	for (uint32_t i = 0; i < 100; i++) {
		uint8_t r[BLK];
		size_t got;
		fill_block(b, 1, i);
		cr_assert_eq(alex_read(db, ALEX_FILE_DB, r, BLK, (uint64_t)i * BLK, &got), 0);
		cr_assert_arr_eq(r, b, BLK, "block %u", i);
	}
	alex_close(db);
}

Test(engine, truncate_then_grow_reads_zeros)
{
	uint8_t b[3 * BLK], r[3 * BLK];
	size_t got;
	memset(b, 'q', sizeof b);
	alex_db *db = open_db();

	cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, sizeof b, 0), 0);
	cr_assert_eq(alex_commit(db), 0);
	cr_assert_eq(alex_checkpoint(db), 0); /* now the bytes live in the base file */
	cr_assert_eq(alex_truncate(db, ALEX_FILE_DB, 1000), 0);
	cr_assert_eq(alex_truncate(db, ALEX_FILE_DB, 3 * BLK), 0);
	cr_assert_eq(alex_commit(db), 0);
	for (int round = 0; round < 3; round++) {
		cr_assert_eq(alex_read(db, ALEX_FILE_DB, r, sizeof r, 0, &got), 0);
		cr_assert_eq(got, sizeof r);
		for (size_t i = 0; i < sizeof r; i++)
			cr_assert_eq(r[i], i < 1000 ? 'q' : 0, "round %d byte %zu", round, i);
		if (round == 0) { /* recovery applies the truncation */
			alex_close(db);
			db = open_db();
		} else if (round == 1) {
			cr_assert_eq(alex_checkpoint(db), 0);
		}
	}
	alex_close(db);
}

/* Past 1 MiB of log, FULL mode checkpoints early when the copy is cheap
 * (the log's bytes at least 4 times the pages it holds: commit.c,
 * ckpt_due), so the log's zero-filled space is written again sooner; not
 * when the log holds many distinct pages, and not in NORMAL mode.  Each
 * commit writes one whole block (no two alike: no DELTA); a record takes
 * a 4 KiB block or more. */
static uint64_t checkpoints_after(enum alex_sync sync, uint32_t distinct)
{
	uint8_t b[BLK];
	struct alex_stats st;

	cfg.checkpoint_bytes = 64u << 20;
	cfg.sync = sync;
	alex_db *db = open_db();
	for (uint32_t t = 1; t <= 1100; t++) {
		uint32_t blk = t % distinct;
		fill_block(b, t, blk);
		cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, (uint64_t)blk * BLK), 0);
		cr_assert_eq(alex_commit(db), 0);
	}
	alex_stats(db, &st);
	cr_assert_lt(st.log_used, cfg.checkpoint_bytes);
	alex_close(db);
	/* every commit is still there, checkpointed or not */
	db = open_db();
	for (uint32_t k = 0; k < distinct && k < 64; k++) {
		uint8_t r[BLK];
		size_t got;
		uint32_t last = 1100 - ((1100 - k) % distinct);
		cr_assert_eq(alex_read(db, ALEX_FILE_DB, r, BLK, (uint64_t)k * BLK, &got), 0);
		fill_block(b, last, k);
		cr_assert(got == BLK && memcmp(r, b, BLK) == 0, "block %u", k);
	}
	alex_close(db);
	return st.checkpoints;
}

Test(engine, early_checkpoint_when_cheap)
{
	cfg.direct = 0; /* a record a block: 1100 of them pass 1 MiB */
	cr_expect_geq(checkpoints_after(ALEX_SYNC_FULL, 10), 1, "few pages, FULL: early");
}

Test(engine, no_early_checkpoint_of_many_pages)
{
	cr_expect_eq(checkpoints_after(ALEX_SYNC_FULL, 1100), 0, "distinct pages: none");
}

Test(engine, no_early_checkpoint_in_normal_mode)
{
	cr_expect_eq(checkpoints_after(ALEX_SYNC_NORMAL, 10), 0, "NORMAL: none");
}

Test(engine, automatic_checkpoint_at_threshold)
{
	uint8_t b[BLK];
	struct alex_stats st;
	alex_db *db = open_db();

	for (uint32_t t = 1; t <= 600; t++) {
		fill_block(b, t, t % 50);
		cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, (uint64_t)(t % 50) * BLK), 0);
		cr_assert_eq(alex_commit(db), 0);
	}
	alex_stats(db, &st);
	cr_expect_geq(st.checkpoints, 1);
	cr_expect_lt(st.log_used, cfg.checkpoint_bytes);
	alex_close(db);
	db = open_db();
	for (uint32_t k = 0; k < 50; k++) {
		uint8_t r[BLK];
		size_t got;
		uint32_t last = 600 - ((600 - k) % 50); /* the last t with t % 50 == k */
		fill_block(b, last, k);
		cr_assert_eq(alex_read(db, ALEX_FILE_DB, r, BLK, (uint64_t)k * BLK, &got), 0);
		cr_assert_arr_eq(r, b, BLK, "block %u", k);
	}
	alex_close(db);
}

Test(engine, bad_config_and_bad_logs_are_refused)
{
	alex_db *db;
	struct alex_config bad = cfg;

	bad.memory_bytes = 1;
	cr_expect_eq(alex_open(DB, &bad, &io, &db), ALEX_EINVAL);
	bad = cfg;
	bad.prealloc_bytes = 1000;
	cr_expect_eq(alex_open(DB, &bad, &io, &db), ALEX_EINVAL);

	static uint8_t junk[3 * BLK];
	memset(junk, 0x5a, sizeof junk);
	alex_mem_set(mem, LOG, junk, sizeof junk);
	cr_expect_eq(alex_open(DB, &cfg, &io, &db), ALEX_ECORRUPT);
	cr_expect_str_eq(alex_strerror(ALEX_ECORRUPT), "log header damaged or not an ALEX log");
	cr_expect_str_eq(alex_strerror(ENOSPC), "No space left on device");
}

Test(engine, header_slots_survive_a_torn_header)
{
	uint8_t b[BLK];
	alex_db *db = open_db();

	fill_block(b, 1, 0);
	alex_write(db, ALEX_FILE_DB, b, BLK, 0);
	cr_assert_eq(alex_commit(db), 0);
	cr_assert_eq(alex_checkpoint(db), 0); /* epoch 2: slot 0 */
	fill_block(b, 2, 0);
	alex_write(db, ALEX_FILE_DB, b, BLK, 0);
	cr_assert_eq(alex_commit(db), 0);
	alex_close(db);
	/* damage the newest slot: the first record of epoch 2 names it */
	size_t len;
	uint8_t *log = (uint8_t *)alex_mem_get(mem, LOG, &len);
	log[20] ^= 1;
	db = open_db();
	uint8_t r[BLK];
	size_t got;
	struct alex_stats st;
	alex_stats(db, &st);
	cr_expect_eq(st.header_repaired, 1);
	cr_expect_eq(st.recovered_commits, 1);
	fill_block(b, 2, 0);
	cr_assert_eq(alex_read(db, ALEX_FILE_DB, r, BLK, 0, &got), 0);
	cr_expect_arr_eq(r, b, BLK);
	/* an open holds no lock and writes nothing: the first catch-up
	 * under SQLite's lock writes the slot again */
	cr_assert_eq(alex_refresh(db, 1), 0);
	alex_close(db);
	/* the slot was written again: a second open needs no repair */
	db = open_db();
	alex_stats(db, &st);
	cr_expect_eq(st.header_repaired, 0);
	cr_expect_eq(st.recovered_commits, 1);
	alex_close(db);
}

Test(engine, buffers_stay_within_the_memory_budget)
{
	uint8_t b[BLK];
	struct alex_stats st;

	cfg.memory_bytes = 256u << 10;
	cfg.checkpoint_bytes = 64u << 20;
	alex_db *db = open_db();
	for (uint32_t i = 0; i < 2560; i++) { /* a 10 MiB transaction */
		fill_block(b, 1, i);
		cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, (uint64_t)i * BLK), 0);
		alex_stats(db, &st);
		cr_assert_leq(st.mem_buffers, cfg.memory_bytes, "after block %u: %lu bytes", i,
			      (unsigned long)st.mem_buffers);
	}
	cr_assert_eq(alex_commit(db), 0);
	alex_stats(db, &st);
	cr_expect_leq(st.mem_buffers, cfg.memory_bytes);
	cr_expect_gt(st.spills, 50);
	alex_close(db);
}

/* A base file that looks like an SQLite database (header of page 1). */
static void sqlite_base(uint8_t *page, size_t n)
{
	memset(page, 0x11, n);
	memcpy(page, "SQLite format 3", 16);
	page[18] = page[19] = 1;
	memset(page + 72, 0, 20); /* reserved, zero */
	memcpy(page + 92, page + 24, 4); /* version-valid-for = change counter */
	alex_mem_set(mem, DB, page, n);
}

Test(engine, base_is_marked_while_log_holds_pages)
{
	static uint8_t page[2 * BLK], b[BLK], r[BLK];
	size_t len, got;

	sqlite_base(page, sizeof page);
	alex_db *db = open_db();
	fill_block(b, 1, 1);
	cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, BLK), 0);
	cr_assert_eq(alex_commit(db), 0);
	const uint8_t *base = alex_mem_get(mem, DB, &len);
	cr_expect_eq(base[19], 0xa1, "SQLite without ALEX must refuse the file now");
	cr_assert_eq(alex_read(db, ALEX_FILE_DB, r, BLK, 0, &got), 0);
	cr_expect_eq(r[19], 1, "through ALEX page 1 is unchanged");
	cr_expect_arr_eq(r, page, BLK);
	cr_assert_eq(alex_checkpoint(db), 0);
	base = alex_mem_get(mem, DB, &len);
	cr_expect_eq(base[19], 1, "a checkpoint takes the mark off");
	cr_expect_arr_eq(base + BLK, b, BLK);
	alex_close(db);
}

/* The operation index of the first write to the database file (fd 0):
 * the mark, which rides on the commit's sync. */
static uint64_t mark_op;
static void find_mark(void *arg, uint64_t op, enum alex_mem_op kind, int fd)
{
	(void)arg;
	if (kind == ALEX_MEM_WRITE && fd == 0 && !mark_op)
		mark_op = op;
}

Test(engine, mark_without_commit_is_read_through_and_removed)
{
	static uint8_t page[2 * BLK], b[BLK], r[BLK];
	size_t len, got;

	/* a dry run finds where the mark is written: the log's next write
	 * (its header or the record) is the one to fail */
	sqlite_base(page, sizeof page);
	alex_db *db = open_db();
	fill_block(b, 1, 1);
	cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, BLK), 0);
	uint64_t start = alex_mem_ops(mem);
	mark_op = 0;
	alex_mem_on_op(mem, find_mark, NULL);
	cr_assert_eq(alex_commit(db), 0);
	alex_mem_on_op(mem, NULL, NULL);
	cr_assert_gt(mark_op, start, "the mark is written before the record");
	alex_close(db);
	alex_mem_free(mem);
	mem = alex_mem_new();
	io = alex_mem_io(mem);

	sqlite_base(page, sizeof page);
	db = open_db();
	cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, BLK), 0);
	cr_assert_eq(alex_mem_ops(mem), start);
	alex_mem_fail_at(mem, mark_op + 1, ALEX_MEM_WRITE, EIO);
	cr_assert_eq(alex_commit(db), EIO);
	alex_db *d2;
	/* the mark reached the disk (it may: written out), the record not */
	alex_mem *c = alex_mem_crash(mem, ALEX_CRASH_KEEP, 0);
	struct alex_io cio = alex_mem_io(c);
	cr_assert_eq(alex_open(DB, &cfg, &cio, &d2), 0);
	const uint8_t *base = alex_mem_get(c, DB, &len);
	cr_expect_eq(base[19], 0xa1);
	cr_assert_eq(alex_read(d2, ALEX_FILE_DB, r, BLK, 0, &got), 0);
	cr_expect_arr_eq(r, page, BLK, "the marked base reads as it was");
	cr_assert_eq(alex_checkpoint(d2), 0);
	base = alex_mem_get(c, DB, &len);
	cr_expect_arr_eq(base, page, sizeof page, "nothing committed: the base is as before");
	alex_close(d2);
	alex_mem_free(c);
	alex_close(db);
}

/* A new log's first mark rides on the commit's sync.  The power fails
 * with the log's record on the disk but not the mark, over a base still
 * carrying the fence of a log that is gone (a last close's unmark lost,
 * before closes synced it; opened with orphan_ok, as alex recover does):
 * nothing was acknowledged, the base reads as it was, and the database
 * opens -- not "the log belongs to another database". */
Test(engine, lost_riding_mark_over_a_vanished_fence_opens)
{
	static uint8_t page[2 * BLK], marked[2 * BLK], b[BLK], r[BLK];
	size_t got;

	sqlite_base(page, sizeof page);
	memcpy(marked, page, sizeof page);
	foreign_mark(marked, "a log long gone", 3);
	alex_mem_set(mem, DB, marked, sizeof marked);
	alex_db *db;
	cr_assert_eq(alex_open(DB, &cfg, &io, &db), ALEX_EORPHAN, "a fence with no log");
	cfg.orphan_ok = 1;
	db = open_db();
	cfg.orphan_ok = 0;
	cr_assert_eq(alex_read(db, ALEX_FILE_DB, r, BLK, 0, &got), 0);
	cr_expect_arr_eq(r, page, BLK, "the stale mark reads through");
	fill_block(b, 1, 1);
	cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, BLK), 0);
	cr_assert_eq(alex_commit(db), 0);
	struct alex_stats st;
	alex_stats(db, &st);
	cr_expect_eq(st.fence_rides, 1u, "a new log's first mark rides");

	alex_mem *c = alex_mem_crash(mem, ALEX_CRASH_KEEP, 0);
	alex_mem_set(c, DB, marked, sizeof marked); /* the mark never arrived */
	struct alex_io cio = alex_mem_io(c);
	alex_db *d2;
	int rc = alex_open(DB, &cfg, &cio, &d2);
	cr_assert_eq(rc, 0, "alex_open: %s", alex_strerror(rc));
	alex_stats(d2, &st);
	cr_expect(st.epoch_applied, "the epoch's records do not count");
	cr_assert_eq(alex_read(d2, ALEX_FILE_DB, r, BLK, 0, &got), 0);
	cr_expect_arr_eq(r, page, BLK);
	cr_assert_eq(alex_read(d2, ALEX_FILE_DB, r, BLK, BLK, &got), 0);
	cr_expect_arr_eq(r, page + BLK, BLK, "the unacknowledged commit is gone");
	fill_block(b, 2, 2);
	cr_assert_eq(alex_write(d2, ALEX_FILE_DB, b, BLK, BLK), 0);
	cr_assert_eq(alex_commit(d2), 0);
	cr_assert_eq(alex_checkpoint(d2), 0);
	alex_close(d2);
	size_t len;
	const uint8_t *base = alex_mem_get(c, DB, &len);
	cr_expect_arr_eq(base, page, BLK, "after a checkpoint the base is plain");
	cr_expect_arr_eq(base + BLK, b, BLK);
	alex_mem_free(c);
	alex_close(db);
}

/* A process that dies between writing a new log's first mark and making it
 * durable (inside the write-out, or the sync it falls back to) leaves the
 * mark in the page cache only.  The next process sees the fence; it must
 * still make the mark durable before its own commit counts, or a power
 * cut would drop that acknowledged commit (found in review). */
static int fail_base_sync, fail_write_out;
static int dying_sync(void *ctx, int fd)
{
	if (fd == 0 && fail_base_sync) {
		fail_base_sync = 0;
		return EIO;
	}
	return alex_mem_io(mem).ops->fdatasync(ctx, fd);
}
static int dying_write_out(void *ctx, int fd, uint64_t off, uint64_t n, int with)
{
	if (fail_write_out)
		return fail_write_out; /* EIO: dies inside it; EOPNOTSUPP: syncs */
	return alex_mem_io(mem).ops->write_out(ctx, fd, off, n, with);
}

Test(engine, a_mark_left_by_a_dead_process_is_made_durable_again)
{
	static uint8_t page[2 * BLK], b[BLK], r[BLK];
	size_t got;

	for (int how = 0; how < 2; how++) {
		alex_mem_free(mem);
		mem = alex_mem_new();
		io = alex_mem_io(mem);
		struct alex_io_ops ops = *io.ops;
		ops.fdatasync = dying_sync;
		ops.write_out = dying_write_out;
		struct alex_io dio = { &ops, io.ctx };
		sqlite_base(page, sizeof page);
		alex_db *a = open_engine(&cfg, &dio);
		fill_block(b, 1, 1);
		cr_assert_eq(alex_write(a, ALEX_FILE_DB, b, BLK, BLK), 0);
		/* it dies inside the write-out, or inside the sync it fell
		 * back to */
		fail_write_out = how ? EOPNOTSUPP : EIO;
		fail_base_sync = how;
		cr_assert_neq(alex_commit(a), 0, "A dies before its mark is durable");
		fail_write_out = fail_base_sync = 0;

		alex_db *bdb = open_db(); /* another process; A never closes */
		fill_block(b, 2, 1);
		cr_assert_eq(alex_write(bdb, ALEX_FILE_DB, b, BLK, BLK), 0);
		cr_assert_eq(alex_commit(bdb), 0, "B's commit acknowledged");
		alex_mem *c = alex_mem_crash(mem, ALEX_CRASH_LOSE, 0);
		struct alex_io cio = alex_mem_io(c);
		alex_db *d;
		int rc = alex_open(DB, &cfg, &cio, &d);
		cr_assert_eq(rc, 0, "alex_open: %s", alex_strerror(rc));
		cr_assert_eq(alex_read(d, ALEX_FILE_DB, r, BLK, BLK, &got), 0);
		cr_expect_arr_eq(r, b, BLK, "B's acknowledged commit survives a power cut (%d)",
				 how);
		alex_close(d);
		alex_mem_free(c);
		alex_close(bdb);
		(void)a; /* dead: never closed */
	}
}

Test(engine, empty_base_gets_a_placeholder)
{
	uint8_t b[BLK];
	size_t len;
	uint64_t sz;

	alex_db *db = open_db();
	fill_block(b, 1, 0);
	cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, 1000, 0), 0);
	cr_assert_eq(alex_commit(db), 0);
	const uint8_t *base = alex_mem_get(mem, DB, &len);
	cr_expect_eq(len, 100);
	cr_expect_arr_eq(base, "ALEX-log-pending", 16);
	alex_close(db); /* no checkpoint: the log keeps it */
	/* recovery: the placeholder is no content; the log's is */
	db = open_db();
	alex_size(db, ALEX_FILE_DB, &sz);
	cr_expect_eq(sz, 1000);
	cr_assert_eq(alex_checkpoint(db), 0);
	base = alex_mem_get(mem, DB, &len);
	cr_expect_eq(len, 1000);
	cr_expect_arr_eq(base, b, 1000);
	alex_close(db);
}

/* Two engines on one log (two processes): each sees the other's commits
 * and checkpoints after alex_refresh. */
Test(engine, refresh_follows_another_engine)
{
	uint8_t b[BLK], r[BLK];
	size_t got;
	alex_db *a = open_db(), *c = open_db();

	for (uint32_t t = 1; t <= 6; t++) {
		alex_db *w = t % 2 ? a : c, *o = t % 2 ? c : a;
		cr_assert_eq(alex_refresh(w, 1), 0);
		fill_block(b, t, t % 3);
		cr_assert_eq(alex_write(w, ALEX_FILE_DB, b, BLK, (uint64_t)(t % 3) * BLK), 0);
		cr_assert_eq(alex_commit(w), 0);
		if (t == 3)
			cr_assert_eq(alex_checkpoint(w), 0); /* a new epoch under the other */
		cr_assert_eq(alex_refresh(o, 1), 0);
		cr_assert_eq(alex_read(o, ALEX_FILE_DB, r, BLK, (uint64_t)(t % 3) * BLK, &got), 0);
		cr_assert_arr_eq(r, b, BLK, "after txn %u the other engine reads it", t);
		uint64_t sa, sc;
		alex_size(a, ALEX_FILE_DB, &sa);
		alex_size(c, ALEX_FILE_DB, &sc);
		cr_assert_eq(sa, sc);
	}
	struct alex_stats st;
	alex_stats(a, &st);
	cr_expect_gt(st.remote_commits, 0);
	alex_close(c);
	alex_close(a);
}

/* Page 1 after a commit: the change counter's slice comes from the kept
 * header, and every read that reaches past it -- straddling its end, the
 * whole page, after another engine committed a new page 1 -- gets the
 * committed bytes, not the kept header's neighbours. */
Test(engine, page1_reads_after_commits)
{
	static uint8_t page[2 * BLK], p1[BLK], r[BLK];
	size_t got;

	sqlite_base(page, sizeof page);
	alex_db *a = open_db(), *c = open_db();
	for (uint32_t t = 1; t <= 4; t++) {
		alex_db *w = t % 2 ? a : c, *o = t % 2 ? c : a;
		cr_assert_eq(alex_refresh(w, 1), 0);
		memcpy(p1, page, BLK);
		alex_put_be32(p1 + 24, t + 7);
		for (unsigned i = 100; i < BLK; i++)
			p1[i] = (uint8_t)(i * 7 + t);
		cr_assert_eq(alex_write(w, ALEX_FILE_DB, p1, BLK, 0), 0);
		cr_assert_eq(alex_commit(w), 0);
		for (int k = 0; k < 2; k++) {
			alex_db *d = k ? o : w;
			cr_assert_eq(alex_refresh(d, 1), 0);
			memset(r, 0, BLK);
			cr_assert_eq(alex_read(d, ALEX_FILE_DB, r, 16, 24, &got), 0);
			cr_assert_arr_eq(r, p1 + 24, 16, "txn %u engine %d: the counter", t, k);
			cr_assert_eq(alex_read(d, ALEX_FILE_DB, r, 40, 80, &got), 0);
			cr_assert_arr_eq(r, p1 + 80, 40, "txn %u engine %d: across the header's end", t, k);
			cr_assert_eq(alex_read(d, ALEX_FILE_DB, r, BLK, 0, &got), 0);
			cr_assert_arr_eq(r, p1, BLK, "txn %u engine %d: the whole page", t, k);
			cr_assert_eq(alex_read(d, ALEX_FILE_DB, r, 16, 24, &got), 0);
			cr_assert_arr_eq(r, p1 + 24, 16, "txn %u engine %d: the counter again", t, k);
		}
	}
	alex_close(c);
	alex_close(a);
}

Test(engine, discard_drops_the_open_transaction)
{
	uint8_t b[BLK], r[BLK];
	size_t got;
	uint64_t sz;
	alex_db *db = open_db();

	fill_block(b, 1, 0);
	alex_write(db, ALEX_FILE_DB, b, BLK, 0);
	alex_write(db, ALEX_FILE_DB, b, BLK, BLK);
	cr_assert_eq(alex_commit(db), 0);
	for (uint32_t i = 0; i < 40; i++) { /* spills, then a truncation */
		fill_block(r, 2, i);
		cr_assert_eq(alex_write(db, ALEX_FILE_DB, r, BLK, (uint64_t)i * BLK), 0);
	}
	cr_assert_eq(alex_truncate(db, ALEX_FILE_DB, 100), 0);
	cr_assert_eq(alex_discard(db), 0);
	alex_size(db, ALEX_FILE_DB, &sz);
	cr_expect_eq(sz, 2 * BLK);
	cr_assert_eq(alex_read(db, ALEX_FILE_DB, r, BLK, BLK, &got), 0);
	cr_expect_arr_eq(r, b, BLK);
	cr_assert_eq(alex_commit(db), 0); /* nothing to commit */
	alex_close(db);
	db = open_db();
	alex_size(db, ALEX_FILE_DB, &sz);
	cr_expect_eq(sz, 2 * BLK, "the dropped transaction never reached the log as committed");
	alex_close(db);
}

/* The current epoch's header slot of the log in mem. */
static struct alex_loghdr current_slot(void)
{
	struct alex_loghdr h[2];
	size_t len;
	const uint8_t *log = alex_mem_get(mem, LOG, &len);
	int ok0 = alex_loghdr_decode(log, &h[0]) == 0, ok1 = alex_loghdr_decode(log + BLK, &h[1]) == 0;

	cr_assert(ok0 || ok1);
	return ok0 && (!ok1 || h[0].epoch > h[1].epoch) ? h[0] : h[1];
}

/* A short epoch is followed, not overwritten, in a log of format 4: the
 * next epoch's records begin where its last commit ended, its slot says
 * FENCED from the start, and its first mark rides on the commit's sync.  A
 * log of format 3 (an older ALEX's, which looks for every epoch's records
 * at 8192) keeps beginning them there, with a synced mark. */
Test(engine, a_short_epoch_is_followed_from_format_4_on)
{
	static uint8_t page[2 * BLK], b[BLK], r[BLK];
	struct alex_stats st;
	size_t got;

	sqlite_base(page, sizeof page);
	cfg.checkpoint_on_close = 1;
	for (int v = (int)ALEX_FORMAT_NEW; v >= 3; v = v == 3 ? 0 : 3) { /* a new log, then 3 */
		alex_db *db = open_db();
		fill_block(b, 1, 1);
		cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, BLK), 0);
		cr_assert_eq(alex_commit(db), 0);
		alex_close(db);
		struct alex_loghdr h = current_slot();
		if (v == 3) { /* as an older ALEX would have left it */
			size_t len;
			uint8_t *log = (uint8_t *)alex_mem_get(mem, LOG, &len);
			for (int s = 0; s < 2; s++) {
				uint8_t *slot = log + s * BLK;
				if (alex_loghdr_decode(slot, &h))
					continue;
				alex_put32(slot + 8, ALEX_FORMAT_V3);
				memset(slot + 164, 0, 8);
				alex_put32(slot + 56, alex_crc32c(0, slot + 64, ALEX_BASE_HDR));
				alex_put32(slot + 60, alex_crc32c(0, slot, 60));
			}
			h = current_slot();
			cr_assert_eq(h.version, ALEX_FORMAT_V3);
		}
		uint64_t start = h.data_off;
		if (v != 3)
			cr_expect_gt(start, ALEX_LOG_DATA, "the next epoch follows the first");
		for (int p = 2; p <= 3; p++) {
			db = open_db();
			fill_block(b, (uint32_t)p, 1);
			cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, BLK), 0);
			cr_assert_eq(alex_commit(db), 0);
			alex_stats(db, &st);
			cr_expect_eq(st.fence_rides, v != 3 ? 1u : 0u, "format %d, process %d", v, p);
			alex_close(db);
			h = current_slot();
			cr_expect_eq(h.version, (uint32_t)v, "a log keeps its format");
			if (v != 3)
				cr_expect_gt(h.data_off, start, "process %d: after the last", p);
			else
				cr_expect_eq(h.data_off, ALEX_LOG_DATA);
			cr_expect_eq(!!(h.flags & ALEX_HDR_FENCED), v != 3,
				     "format %d: the next epoch fenced from the start", v);
			start = h.data_off;
		}
		db = open_db();
		cr_assert_eq(alex_read(db, ALEX_FILE_DB, r, BLK, BLK, &got), 0);
		cr_expect_arr_eq(r, b, BLK);
		cr_assert_eq(alex_read(db, ALEX_FILE_DB, r, BLK, 0, &got), 0);
		cr_expect_arr_eq(r, page, BLK, "page 1 unmarked at rest");
		alex_close(db);
		alex_mem_free(mem);
		mem = alex_mem_new();
		io = alex_mem_io(mem);
		sqlite_base(page, sizeof page);
	}
}

/* A log made under format 2 (an older ALEX) is read and appended to
 * without GAP blocks, which that version could not read, in every epoch:
 * a log keeps its version (format.h).  A log made anew is format 3 and uses
 * them.  The page: a few bytes, zeros after. */
Test(engine, a_format_2_epoch_gets_no_gap_blocks)
{
	uint8_t b[BLK] = { 0 }, r[BLK];
	struct alex_stats st;
	size_t len, got;

	cfg.compress = ALEX_COMPRESS_OFF;
	alex_db *db = open_db();
	put_txn(db, 1, 1);
	cr_assert_eq(alex_commit(db), 0);
	alex_close(db);
	uint8_t *log = (uint8_t *)alex_mem_get(mem, LOG, &len);
	int slots = 0;
	for (uint32_t s = 0; s < 2; s++) {
		uint8_t *slot = log + s * BLK;
		if (memcmp(slot, ALEX_LOG_MAGIC, 8) != 0)
			continue;
		alex_put32(slot + 8, ALEX_FORMAT_V2);
		memset(slot + 164, 0, 8); /* format 4's data_off */
		alex_put32(slot + 56, alex_crc32c(0, slot + 64, ALEX_BASE_HDR));
		alex_put32(slot + 60, alex_crc32c(0, slot, 60));
		slots++;
	}
	cr_assert_gt(slots, 0);

	cfg.compress = ALEX_COMPRESS_AUTO;
	db = open_db();
	memset(b, 0x5a, 64);
	cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, BLK), 0);
	cr_assert_eq(alex_commit(db), 0);
	alex_stats(db, &st);
	cr_expect_eq(st.blocks_gapped, 0, "no GAP block in a format-2 epoch");
	cr_assert_eq(alex_checkpoint(db), 0);
	log = (uint8_t *)alex_mem_get(mem, LOG, &len);
	struct alex_loghdr h;
	cr_assert_eq(alex_loghdr_decode(log, &h), 0); /* epoch 2: slot 0 */
	cr_expect_eq(h.version, ALEX_FORMAT_V2, "the next epoch keeps the log's format");
	b[0] = 0x76;
	cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, BLK), 0);
	cr_assert_eq(alex_commit(db), 0);
	alex_stats(db, &st);
	cr_expect_eq(st.blocks_gapped, 0, "no GAP block in the next epoch either");
	alex_close(db);
	cfg.checkpoint_on_close = 1;
	cfg.remove_log = 1;
	db = open_db();
	alex_close(db);
	cr_assert_null(alex_mem_get(mem, LOG, &len), "the last close removed the log");

	cfg.base_deltas = 0; /* a one-byte change would go as a delta of the file */
	db = open_db();
	b[0] = 0x77;
	cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, BLK), 0);
	cr_assert_eq(alex_commit(db), 0);
	alex_stats(db, &st);
	cr_expect_eq(st.blocks_gapped, 1, "a new log is format 3: the zero tail is left out");
	log = (uint8_t *)alex_mem_get(mem, LOG, &len);
	cr_expect_eq(alex_loghdr_decode(log, &h), ALEX_ECORRUPT);
	cr_expect(alex_loghdr_is_placeholder(log), "slot 0 of a new log: the placeholder");
	alex_close(db);

	db = open_db();
	cr_assert_eq(alex_read(db, ALEX_FILE_DB, r, BLK, BLK, &got), 0);
	cr_expect_arr_eq(r, b, BLK);
	alex_close(db);
}

/* A slot of a version this engine does not know (a newer ALEX checkpointed)
 * refuses the log, even beside a valid slot: repairing around it would
 * adopt and rewrite records this engine cannot read. */
Test(engine, a_slot_of_an_unknown_version_refuses_the_log)
{
	size_t len;
	alex_db *db = open_db();

	put_txn(db, 1, 1);
	cr_assert_eq(alex_commit(db), 0);
	cr_assert_eq(alex_checkpoint(db), 0); /* epoch 2 in slot 0, epoch 1 stays in 1 */
	put_txn(db, 2, 1);
	cr_assert_eq(alex_commit(db), 0);
	alex_close(db);
	uint8_t *slot = (uint8_t *)alex_mem_get(mem, LOG, &len) + BLK;
	alex_put32(slot + 8, ALEX_FORMAT_MAX + 1);
	alex_put32(slot + 60, alex_crc32c(0, slot, 60));
	alex_db *d2;
	cr_expect_eq(alex_open(DB, &cfg, &io, &d2), ALEX_EVERSION);
}

/* A record's padding is zeros, though the staging buffer is reused: a
 * larger record built before it, or records read into it by recovery,
 * leave their bytes there (stage.c clears only what they reached). */
Test(engine, record_padding_is_zeros_after_a_larger_record)
{
	cfg.compress = ALEX_COMPRESS_OFF;
	cfg.direct = 0; /* counts whole blocks (stage.c: rec_len_for) */
	cfg.checkpoint_bytes = 64u << 20;
	alex_db *db = open_db();
	uint8_t b[BLK];
	struct alex_stats st;
	size_t len;

	for (uint32_t round = 0; round < 2; round++) {
		/* three noise blocks: one record of 16 KiB */
		for (uint32_t k = 1; k <= 3; k++) {
			fill_block(b, 3 + round, k);
			for (unsigned i = 8; i < BLK; i++) /* no zero byte left */
				b[i] = (uint8_t)(b[i] | 0x80);
			cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, (uint64_t)k * BLK), 0);
		}
		cr_assert_eq(alex_commit(db), 0);
		if (round == 1) { /* recovery reads the records into the buffer */
			alex_close(db);
			db = open_db();
		}
		alex_stats(db, &st);
		uint64_t start = alex_mem_get(mem, LOG, &len) ? st.log_used : 0;
		fill_block(b, 10 + round, 5);
		cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, 5 * BLK), 0);
		cr_assert_eq(alex_commit(db), 0);
		alex_stats(db, &st);
		cr_assert_eq(st.log_used - start, 2 * BLK, "one block raw: an 8 KiB record");
		const uint8_t *log = alex_mem_get(mem, LOG, &len);
		uint64_t rec = 2 * BLK + start, pad = ALEX_REC_FIXED + ALEX_REC_ENTRY + BLK;
		cr_assert_geq(len, rec + 2 * BLK);
		for (uint64_t i = rec + pad; i < rec + 2 * BLK; i++)
			cr_assert_eq(log[i], 0, "padding byte %llu of round %u",
				     (unsigned long long)(i - rec), round);
	}
	alex_close(db);
}

/* FULL mode writes a log of format 6 direct: a small commit takes the
 * sectors it needs, not a block (format.h), and the next record begins on
 * the next sector; ALEX_DIRECT=0 gives back whole blocks. */
Test(engine, direct_records_take_sectors)
{
	struct alex_stats st;

	cfg.compress = ALEX_COMPRESS_LZ4;
	for (int direct = 1; direct >= 0; direct--) {
		alex_mem_free(mem);
		mem = alex_mem_new();
		io = alex_mem_io(mem);
		cfg.direct = direct;
		alex_db *db = open_db();
		uint8_t b[BLK];
		uint64_t used = 0;
		for (uint32_t t = 1; t <= 4; t++) {
			memset(b, (int)t, BLK); /* compresses to a few bytes */
			cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, BLK), 0);
			cr_assert_eq(alex_commit(db), 0);
			alex_stats(db, &st);
			uint64_t rec = st.log_used - used;
			used = st.log_used;
			if (t == 1) { /* the epoch's first also carries block 0 */
				cr_expect_eq(st.log_used % BLK, 0u,
					     "a record that grows the log ends on a page");
				continue;
			}
			if (direct)
				cr_expect(rec > 0 && rec < BLK && rec % ALEX_SECTOR == 0,
					  "commit %u: %lu bytes", t, (unsigned long)rec);
			else
				cr_expect_eq(rec, BLK, "commit %u", t);
		}
		cr_expect_eq(st.direct_writes, direct ? 4u : 0u, "direct %d: %lu", direct,
			     (unsigned long)st.direct_writes);
		cr_expect_eq(st.direct_refused, 0);
		alex_close(db);
	}
}
