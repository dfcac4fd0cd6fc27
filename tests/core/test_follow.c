/*
 * Short processes on a kept log (format.h: an epoch that follows a short
 * one).  Each "process" opens the engine on an SQLite-looking database,
 * commits one or two transactions and closes (a checkpoint, the log kept),
 * so every epoch after the first follows the one before, and its fence
 * rides on its first commit's sync (protect.c) -- until the epochs have
 * run past ALEX_LOG_RUN and one starts over at 8192 with a synced mark.
 *
 * The power is cut at every operation of the whole run; each image (writes
 * since the last sync lost, kept, the last torn, any subset kept) must
 * recover to the state after a committed transaction no older than the
 * last acknowledged one.  The danger: a riding epoch whose records went
 * over those of the epoch before, with neither the new fence nor the last
 * unmark on the disk, would replay a prefix of the older epoch over a base
 * that holds all of it.  Random subsets almost never build that image (the
 * first test passes with the follow taken out and the ride kept); the
 * second test builds it at every operation, and fails then.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "format.h"
#include "helpers.h"

#define NPROC 16
#define NB 32u    /* database blocks */
#define BIG 24u   /* blocks of a big transaction: the run reaches 1 MiB */

struct state {
	uint8_t d[NB * BLK];
};

static struct state model, snaps[2 * NPROC + 1];
static int nsnaps, acked_at_crash, nimg;
static uint64_t crash_op;
#define NIMG 12
static alex_mem *imgs[NIMG];
static int removing; /* the third test: the default, a log made and removed each time */
static struct {
	uint64_t rides, resets, follows, logs_left;
} seen;

static int tails; /* the second test: only the two images it cuts from */

static void hook(void *arg, uint64_t op, enum alex_mem_op kind, int fd)
{
	alex_mem *m = arg;

	(void)kind;
	(void)fd;
	if (op != crash_op || nimg)
		return;
	if (tails) {
		imgs[nimg++] = alex_mem_crash(m, ALEX_CRASH_LOSE, 0);
		imgs[nimg++] = alex_mem_crash(m, ALEX_CRASH_KEEP, 0);
		acked_at_crash = nsnaps - 1;
		return;
	}
	imgs[nimg++] = alex_mem_crash(m, ALEX_CRASH_LOSE, 0);
	imgs[nimg++] = alex_mem_crash(m, ALEX_CRASH_KEEP, 0);
	imgs[nimg++] = alex_mem_crash(m, ALEX_CRASH_TEAR, op * 7919);
	imgs[nimg++] = alex_mem_crash(m, ALEX_CRASH_TEAR, op * 104729 + 1);
	for (uint64_t k = 0; k < 5; k++) /* a reordering disk: what this attacks */
		imgs[nimg++] = alex_mem_crash(m, ALEX_CRASH_SUBSET, op * 7577 + 3 + k * 65537);
	/* and the directory's name changes since its last sync lost */
	imgs[nimg++] = alex_mem_crash(m, ALEX_CRASH_LOSE | ALEX_CRASH_DIRS_LOST, 0);
	imgs[nimg++] = alex_mem_crash(m, ALEX_CRASH_KEEP | ALEX_CRASH_DIRS_LOST, 0);
	imgs[nimg++] = alex_mem_crash(m, ALEX_CRASH_SUBSET | ALEX_CRASH_DIRS_LOST, op * 31 + 7);
	acked_at_crash = nsnaps - 1;
}

static void config(struct alex_config *c)
{
	alex_config_default(c);
	c->compress = ALEX_COMPRESS_OFF; /* records as big as their blocks */
	c->remove_log = removing;
}

/* The current epoch's data_off, from the log's header slots. */
static uint64_t current_data_off(alex_mem *m)
{
	struct alex_loghdr h[2];
	size_t len;
	const uint8_t *log = alex_mem_get(m, LOG, &len);
	int ok[2];

	if (!log)
		return 0;
	for (int s = 0; s < 2; s++)
		ok[s] = len >= s * BLK + ALEX_HDR_SLOT_USED && alex_loghdr_decode(log + s * BLK, &h[s]) == 0;
	if (!ok[0] && !ok[1])
		return 0;
	return (ok[0] && (!ok[1] || h[0].epoch > h[1].epoch)) ? h[0].data_off : h[1].data_off;
}

/* The whole run; counts rides and restarts on the reference run. */
static uint64_t workload(uint64_t seed, int reference)
{
	static uint8_t b[BLK];
	alex_mem *m = alex_mem_new();
	struct alex_io io = alex_mem_io(m);
	struct alex_config c;
	uint64_t s = seed, last_off = 0;

	config(&c);
	memset(&model, 0, sizeof model);
	memset(model.d, 0x11, 2 * BLK);
	memcpy(model.d, "SQLite format 3", 16);
	model.d[18] = model.d[19] = 1;
	memset(model.d + 72, 0, 20); /* as SQLite keeps them: the file is fenced */
	memcpy(model.d + 92, model.d + 24, 4);
	alex_mem_set(m, DB, model.d, NB * BLK);
	nsnaps = 0;
	snaps[nsnaps++] = model;
	alex_mem_on_op(m, hook, m);
	for (int p = 0; p < NPROC; p++) {
		alex_db *db;
		cr_assert_eq(alex_open(DB, &c, &io, &db), 0);
		for (int t = 0; t < 1 + p % 2; t++) {
			uint32_t n = rnd(&s) % 2 ? 1 + rnd(&s) % 3 : BIG;
			for (uint32_t i = 0; i < n; i++) {
				uint32_t blk = n == BIG ? 1 + i : 1 + (uint32_t)(rnd(&s) % (NB - 1));
				fill_block(b, (uint32_t)(seed * 1000 + (uint64_t)nsnaps), blk);
				cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, (uint64_t)blk * BLK), 0);
				memcpy(model.d + (size_t)blk * BLK, b, BLK);
			}
			/* page 1 changes past its header, as SQLite's does */
			model.d[200] = (uint8_t)nsnaps;
			cr_assert_eq(alex_write(db, ALEX_FILE_DB, model.d, BLK, 0), 0);
			cr_assert_eq(alex_commit(db), 0);
			snaps[nsnaps++] = model;
		}
		struct alex_stats st;
		alex_stats(db, &st);
		alex_close(db);
		if (reference) {
			size_t len;
			seen.logs_left += alex_mem_get(m, LOG, &len) != NULL;
			uint64_t off = current_data_off(m);
			seen.rides += st.fence_rides;
			seen.follows += off > ALEX_LOG_DATA;
			seen.resets += last_off > ALEX_LOG_DATA && off == ALEX_LOG_DATA;
			last_off = off;
		}
	}
	uint64_t ops = alex_mem_ops(m);
	alex_mem_free(m);
	return ops;
}

static int equals(alex_db *db, const struct state *want);

/* Opens the image and checks it holds a committed state no older than the
 * last acknowledged one. */
static void judge(alex_mem *img, uint64_t seed, const char *how, uint64_t at)
{
	struct alex_io io = alex_mem_io(img);
	struct alex_config c;
	alex_db *db;

	config(&c);
	c.checkpoint_on_close = 0;
	int rc = alex_open(DB, &c, &io, &db);
	cr_assert_eq(rc, 0, "seed %lu op %lu (%s %lu): %s", (unsigned long)seed,
		     (unsigned long)crash_op, how, (unsigned long)at, alex_strerror(rc));
	int found = 0;
	for (int j = acked_at_crash; j < nsnaps && j <= acked_at_crash + 1; j++)
		found |= equals(db, &snaps[j]);
	cr_assert(found, "seed %lu op %lu (%s %lu): not a committed state at or after #%d",
		  (unsigned long)seed, (unsigned long)crash_op, how, (unsigned long)at,
		  acked_at_crash);
	alex_close(db);
}

static int equals(alex_db *db, const struct state *want)
{
	static uint8_t got[NB * BLK];
	uint64_t sz;
	size_t n;

	alex_size(db, ALEX_FILE_DB, &sz);
	return sz == NB * BLK && alex_read(db, ALEX_FILE_DB, got, sz, 0, &n) == 0 &&
	       memcmp(got, want->d, sz) == 0;
}

/* Every operation of three seeded runs cut in every way; how many images. */
static uint64_t every_cut(void)
{
	static const char *names[NIMG] = { "lost", "kept", "torn", "torn", "subset", "subset",
					   "subset", "subset", "subset", "lost, names too",
					   "kept, names lost", "subset, names lost" };
	uint64_t cuts = 0;

	for (uint64_t seed = 1; seed <= 3; seed++) {
		memset(&seen, 0, sizeof seen);
		crash_op = 0;
		uint64_t total = workload(seed, 1);
		/* the run is the one meant: every process's fence rides; on a
		 * kept log, epochs follow and one starts over */
		cr_assert_geq(seen.rides, removing ? NPROC : NPROC / 2, "seed %lu: %lu rides",
			      (unsigned long)seed, (unsigned long)seen.rides);
		if (!removing) {
			cr_assert_geq(seen.follows, NPROC / 2, "seed %lu: %lu epochs follow",
				      (unsigned long)seed, (unsigned long)seen.follows);
			cr_assert_geq(seen.resets, 1, "seed %lu: no epoch started over",
				      (unsigned long)seed);
		} else {
			cr_assert_eq(seen.logs_left, 0, "seed %lu: the last close removes the log",
				     (unsigned long)seed);
		}
		for (crash_op = 1; crash_op <= total; crash_op++) {
			nimg = 0;
			workload(seed, 0);
			cr_assert_eq(nimg, NIMG);
			for (int k = 0; k < nimg; k++) {
				judge(imgs[k], seed, names[k], (uint64_t)k);
				alex_mem_free(imgs[k]);
				cuts++;
			}
		}
	}
	return cuts;
}

Test(follow, kept_log_short_processes_at_every_cut, .timeout = 600)
{
	cr_log_info("%lu crash images of short processes on a kept log", (unsigned long)every_cut());
}

/* The default: each process makes the log and its last close removes it.
 * Its images with the directory's name changes lost are what says that the
 * new log's name is durable before its first commit is acknowledged. */
Test(follow, short_processes_making_and_removing_the_log_at_every_cut, .timeout = 600)
{
	removing = 1;
	uint64_t cuts = every_cut();
	removing = 0;
	cr_log_info("%lu crash images of short processes, each making its log", (unsigned long)cuts);
}

/*
 * The case itself, every time, not by chance: of the log's unsynced writes
 * only the tail of the newest record, from some block on, reached the disk
 * -- nothing else since the last sync (not the new epoch's header, not its
 * fence, not the last checkpoint's unmark).  A disk that reorders may keep
 * exactly that.  An epoch whose records went over the epoch before's would
 * break that epoch's chain after its first record here, and recovery would
 * put that record's older pages over the newer ones in the base.
 */
Test(follow, a_records_tail_alone_never_breaks_the_epoch_before)
{
	static uint8_t log[4u << 20];
	uint64_t images = 0;

	tails = 1;
	for (uint64_t seed = 1; seed <= 3; seed++) {
		crash_op = 0;
		uint64_t total = workload(seed, 0);
		for (crash_op = 1; crash_op <= total; crash_op++) {
			nimg = 0;
			workload(seed, 0);
			cr_assert_eq(nimg, 2);
			size_t lose_len, keep_len;
			const uint8_t *lose = alex_mem_get(imgs[0], LOG, &lose_len);
			const uint8_t *keep = alex_mem_get(imgs[1], LOG, &keep_len);
			uint64_t hi = 0;
			for (uint64_t i = ALEX_LOG_DATA; lose && keep && i < keep_len; i++)
				if (i >= lose_len || lose[i] != keep[i])
					hi = i + 1;
			for (uint64_t from = ALEX_LOG_DATA; hi && from < hi; from += BLK) {
				cr_assert_leq(keep_len, sizeof log);
				size_t n = lose_len < keep_len ? lose_len : keep_len;
				memcpy(log, lose, n);
				memset(log + n, 0, keep_len - n);
				memcpy(log + from, keep + from, hi - from);
				alex_mem *img = alex_mem_crash(imgs[0], ALEX_CRASH_KEEP, 0);
				cr_assert_eq(alex_mem_set(img, LOG, log, keep_len), 0);
				judge(img, seed, "the tail from", from);
				alex_mem_free(img);
				images++;
			}
			alex_mem_free(imgs[0]);
			alex_mem_free(imgs[1]);
		}
	}
	tails = 0;
	cr_assert_gt(images, 0);
	cr_log_info("%lu images of a record's tail alone", (unsigned long)images);
}

/*
 * A riding epoch's record can reach the disk while its fence does not
 * (found in review).  The power fails in the second process's first commit
 * with the record and the last checkpoint's unmark on the disk but not the
 * mark; SQLite without ALEX then writes the unfenced file, as it may.  The
 * record must not count -- also when the epoch's header slot was torn and
 * recovery adopts the epoch from the record itself (recover.c:
 * adopt_next_epoch), where the base's fence cannot say it was fenced.
 */
static uint8_t page1[BLK];

static void one_commit(alex_db *db, uint8_t v)
{
	sqlite_like_commit(db, page1, v);
}

static uint8_t block1(alex_mem *img, struct alex_stats *st)
{
	uint8_t v = 0;
	int rc = image_byte(img, BLK, &v, st);
	cr_assert_eq(rc, 0, "%s", alex_strerror(rc));
	return v;
}

/* damage: slot 0, epoch 2's, torn */
static void run(int damage)
{
	alex_mem *m = alex_mem_new();
	struct alex_io io = alex_mem_io(m);
	struct alex_config c;
	alex_db *db;
	size_t len;

	alex_config_default(&c);
	sqlite_like_file(m, page1);
	/* process 1: one commit, close (checkpoint: epoch 2 follows it) */
	cr_assert_eq(alex_open(DB, &c, &io, &db), 0);
	one_commit(db, 0xA1);
	alex_close(db);
	/* the base as the checkpoint left it, unmarked (unmark on disk) */
	const uint8_t *b = alex_mem_get(m, DB, &len);
	uint8_t *base_after_ckpt = malloc(len);
	size_t base_len = len;
	memcpy(base_after_ckpt, b, len);
	/* process 2: its first commit in epoch 2 (riding fence) */
	cr_assert_eq(alex_open(DB, &c, &io, &db), 0);
	one_commit(db, 0xA2);
	struct alex_stats st;
	alex_stats(db, &st);
	cr_assert_eq(st.fence_rides, 1u, "the second process's fence rides");
	/* The power fails during that commit's fdatasync: the record reached
	 * the disk, the ridden mark did not (the unmark did) -- and, if
	 * damage, epoch 2's header slot is torn.  Nothing was acknowledged. */
	alex_mem *img = alex_mem_crash(m, ALEX_CRASH_KEEP, 0);
	alex_close(db);
	uint8_t *log = log_copy(img, &len);
	struct alex_loghdr h;
	cr_assert_eq(alex_loghdr_decode(log, &h), 0);
	cr_assert_eq(h.epoch, 2);
	cr_assert_gt(h.data_off, ALEX_LOG_DATA, "epoch 2 follows epoch 1");
	if (damage)
		log[40] ^= 0x5a; /* start_lsn torn: the slot's crc fails */
	alex_mem_set(img, LOG, log, len);
	/* then SQLite without ALEX writes the unfenced database (allowed:
	 * no fence on it), block 1 := 0xB0 */
	memset(base_after_ckpt + BLK, 0xB0, BLK);
	alex_mem_set(img, DB, base_after_ckpt, base_len);
	uint8_t got = block1(img, &st);
	if (damage)
		cr_expect(st.header_repaired, "the damaged slot's epoch is adopted");
	cr_expect_eq(got, 0xB0, "damage=%d: the unacknowledged record of the riding epoch "
		     "was replayed over the base (block 1 = %02x)", damage, got);
	alex_mem_free(img);
	alex_mem_free(m);
	free(log);
	free(base_after_ckpt);
}

Test(follow, a_riding_record_without_its_fence_never_counts)
{
	run(0);
}

Test(follow, nor_when_its_slot_is_damaged_and_adopted)
{
	run(1);
}

