/*
 * Crash at every operation of byte-level workloads: partial writes of any
 * size and offset in two files, truncations to any size, checkpoints tried
 * in the middle of transactions, transactions abandoned by closing, and an
 * SQLite-looking database file (so the base file is marked and unmarked),
 * some of them still carrying the fence of a log that is gone (a last
 * close's unmark lost with the power, before closes synced it), which the
 * first mark of a new log rides over (protect.c; such a file opens only
 * with orphan_ok), and in some the log removed by a close after a commit:
 * a crash after the removal must not leave the fence with no log.
 * Each crash image (writes since the last sync lost, kept, the last one
 * torn, or any subset of them kept, whole or by sectors; once more with
 * the directory's unsynced name changes lost too) must recover to the
 * state after a committed transaction no older than the last acknowledged
 * one, byte for byte.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "helpers.h"

#define NF 2
#define MAXSZ (24u * BLK)
#define NTX 40

struct state {
	uint64_t size[NF];
	uint8_t d[NF][MAXSZ];
};

static struct state model, *snaps;
static int nsnaps;
static uint64_t crash_op;
static alex_mem *imgs[6];
static int nimg;
static int acked_at_crash;

static void hook(void *arg, uint64_t op, enum alex_mem_op kind, int fd)
{
	alex_mem *m = arg;
	(void)kind;
	(void)fd;
	if (op != crash_op || nimg)
		return;
	imgs[nimg++] = alex_mem_crash(m, ALEX_CRASH_LOSE, 0);
	imgs[nimg++] = alex_mem_crash(m, ALEX_CRASH_KEEP, 0);
	imgs[nimg++] = alex_mem_crash(m, ALEX_CRASH_TEAR, op * 7919);
	imgs[nimg++] = alex_mem_crash(m, ALEX_CRASH_TEAR, op * 104729 + 1);
	imgs[nimg++] = alex_mem_crash(m, ALEX_CRASH_SUBSET, op * 7577 + 3);
	/* and the name changes since the directory's last sync lost */
	imgs[nimg++] = alex_mem_crash(m, ALEX_CRASH_SUBSET | ALEX_CRASH_DIRS_LOST, op * 131 + 5);
	acked_at_crash = nsnaps - 1;
}

static void config(struct alex_config *c, uint64_t seed)
{
	alex_config_default(c);
	c->orphan_ok = seed % 4 == 3; /* the vanished fence, below */
	c->remove_log = seed % 3 == 0;
	c->memory_bytes = 64u << 10;
	c->checkpoint_bytes = 12u * BLK;
	c->prealloc_bytes = 16u * BLK;
}

static void check_live(alex_db *db, const struct state *want, const char *when)
{
	static uint8_t got[MAXSZ];
	for (int f = 0; f < NF; f++) {
		uint64_t sz;
		size_t n;
		alex_size(db, f, &sz);
		cr_assert_eq(sz, want->size[f], "%s: file %d size", when, f);
		cr_assert_eq(alex_read(db, f, got, sz, 0, &n), 0);
		cr_assert_arr_eq(got, want->d[f], sz, "%s: file %d content", when, f);
	}
}

static int equals(alex_db *db, const struct state *s)
{
	static uint8_t got[MAXSZ];
	for (int f = 0; f < NF; f++) {
		uint64_t sz;
		size_t n;
		alex_size(db, f, &sz);
		if (sz != s->size[f] || alex_read(db, f, got, sz, 0, &n) || memcmp(got, s->d[f], sz))
			return 0;
	}
	return 1;
}

/* Returns the number of mutating operations the run made. */
static uint64_t workload(uint64_t seed, int reference)
{
	alex_mem *m = alex_mem_new();
	struct alex_io io = alex_mem_io(m);
	struct alex_config c;
	static uint8_t page[2 * BLK], buf[3 * BLK];
	alex_db *db;
	uint64_t s = seed;

	config(&c, seed);
	memset(&model, 0, sizeof model);
	memset(page, 0x11, sizeof page);
	memcpy(page, "SQLite format 3", 16);
	page[18] = page[19] = 1;
	memset(page + 72, 0, 20); /* as SQLite keeps them, so the file is fenced */
	memcpy(page + 92, page + 24, 4);
	if (seed % 2) { /* half the runs start from an SQLite-looking file */
		memcpy(model.d[0], page, sizeof page);
		model.size[0] = sizeof page;
		if (seed % 4 == 3) /* marked by a log that is gone */
			foreign_mark(page, "another log....", 7);
		alex_mem_set(m, DB, page, sizeof page);
	}
	nsnaps = 0;
	snaps[nsnaps++] = model;
	alex_mem_on_op(m, hook, m);
	cr_assert_eq(alex_open(DB, &c, &io, &db), 0);
	for (int t = 0; t < NTX; t++) {
		int nops = 1 + (int)(rnd(&s) % 10);
		for (int i = 0; i < nops; i++) {
			unsigned f = (unsigned)(rnd(&s) % NF), r = (unsigned)(rnd(&s) % 10);
			if (r < 7) {
				uint64_t len = 1 + rnd(&s) % (r < 3 ? 3 * BLK : 100);
				uint64_t off = rnd(&s) % (MAXSZ - len);
				uint8_t v = (uint8_t)rnd(&s);
				for (uint64_t j = 0; j < len; j++)
					buf[j] = (uint8_t)(v + j % 7);
				cr_assert_eq(alex_write(db, f, buf, len, off), 0);
				memcpy(model.d[f] + off, buf, len);
				if (off + len > model.size[f])
					model.size[f] = off + len;
			} else if (r < 9) {
				uint64_t sz = rnd(&s) % MAXSZ;
				if (rnd(&s) % 3 == 0)
					sz &= ~(uint64_t)(BLK - 1);
				cr_assert_eq(alex_truncate(db, f, sz), 0);
				if (sz < model.size[f])
					memset(model.d[f] + sz, 0, MAXSZ - sz);
				model.size[f] = sz;
			} else {
				int rc = alex_checkpoint(db);
				cr_assert(rc == 0 || rc == ALEX_EBUSY, "checkpoint: %s", alex_strerror(rc));
			}
			if (reference)
				check_live(db, &model, "live");
		}
		uint64_t end = rnd(&s) % 7;
		if (end) {
			cr_assert_eq(alex_commit(db), 0);
			snaps[nsnaps++] = model;
		}
		if (end == 1) { /* a last close: a checkpoint, and the log may go */
			alex_close(db);
			cr_assert_eq(alex_open(DB, &c, &io, &db), 0);
		} else if (!end) { /* abandon: close drops the open transaction */
			alex_close(db);
			model = snaps[nsnaps - 1];
			cr_assert_eq(alex_open(DB, &c, &io, &db), 0);
			if (reference)
				check_live(db, &model, "after abandoning");
		}
	}
	alex_close(db);
	uint64_t ops = alex_mem_ops(m);
	alex_mem_free(m);
	return ops;
}

Test(crashmix, every_operation_of_random_byte_workloads, .timeout = 600)
{
	static const char *names[] = { "lost", "kept", "torn", "torn", "subset",
				       "subset, names lost" };
	uint64_t cuts = 0;

	snaps = malloc((NTX + 1) * sizeof *snaps);
	for (uint64_t seed = 1; seed <= 24; seed++) {
		crash_op = 0;
		workload(seed, 1);
		/* counted as the replays make them: the reference's reads fill
		 * the engine's known blocks, which shape its deltas, and so its
		 * records' sizes and the log's growth (review) */
		uint64_t total = workload(seed, 0);
		for (crash_op = 1; crash_op <= total; crash_op++) {
			nimg = 0;
			workload(seed, 0);
			cr_assert_eq(nimg, 6);
			for (int k = 0; k < nimg; k++) {
				struct alex_io io = alex_mem_io(imgs[k]);
				struct alex_config c;
				alex_db *db;
				config(&c, seed);
				c.checkpoint_on_close = 0;
				int rc = alex_open(DB, &c, &io, &db);
				cr_assert_eq(rc, 0, "seed %lu op %lu (%s): %s", (unsigned long)seed,
					     (unsigned long)crash_op, names[k], alex_strerror(rc));
				int found = 0;
				for (int j = acked_at_crash; j < nsnaps && j <= acked_at_crash + 1; j++)
					found |= equals(db, &snaps[j]);
				cr_assert(found, "seed %lu op %lu (%s): not a committed state at or "
					  "after #%d", (unsigned long)seed, (unsigned long)crash_op,
					  names[k], acked_at_crash);
				alex_close(db);
				alex_mem_free(imgs[k]);
				cuts++;
			}
		}
	}
	cr_log_info("%lu crash images over 24 workloads, all committed states", (unsigned long)cuts);
	free(snaps);
}
