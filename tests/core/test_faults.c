/*
 * Faults: EIO and ENOSPC injected at every mutating I/O operation of a
 * workload (writes, syncs, fallocate, truncate), including those of log
 * creation, spills and checkpoints.  The error must reach the caller; at
 * that moment a power cut must still recover every acknowledged
 * transaction; and the caller, retrying (or reopening when the engine says
 * the log is unusable), must end with exactly the expected database.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <stdlib.h>

#include "helpers.h"

#define NTX 40
#define NB 64

static uint32_t writer[NTX + 1][NB];
static uint32_t nblk[NTX + 1][48], cnt[NTX + 1], trunc_to[NTX + 1], size_of[NTX + 1];

static void make_plan(void)
{
	uint64_t s = 5;
	for (uint32_t t = 1; t <= NTX; t++) {
		memcpy(writer[t], writer[t - 1], sizeof writer[t]);
		uint32_t size = size_of[t - 1];
		trunc_to[t] = UINT32_MAX;
		if (t % 9 == 0 && size > 4) {
			trunc_to[t] = size / 2;
			for (uint32_t b = size / 2; b < NB; b++)
				writer[t][b] = 0;
			size = size / 2;
		}
		cnt[t] = 1 + (uint32_t)(rnd(&s) % (t % 5 ? 6 : 40));
		for (uint32_t i = 0; i < cnt[t]; i++) {
			uint32_t b = (uint32_t)(rnd(&s) % NB);
			nblk[t][i] = b;
			writer[t][b] = t;
			if (b + 1 > size)
				size = b + 1;
		}
		size_of[t] = size;
	}
}

static int state_is(alex_db *db, uint32_t j)
{
	static uint8_t got[NB * BLK], exp[BLK];
	uint64_t size;
	size_t n;

	alex_size(db, ALEX_FILE_DB, &size);
	if (size != (uint64_t)size_of[j] * BLK)
		return 0;
	cr_assert_eq(alex_read(db, ALEX_FILE_DB, got, size, 0, &n), 0);
	for (uint32_t b = 0; b < size_of[j]; b++) {
		fill_block(exp, writer[j][b], b);
		if (memcmp(got + (uint64_t)b * BLK, exp, BLK))
			return 0;
	}
	return 1;
}

/* At the moment of the fault, a power cut keeps every acknowledged txn. */
static void cut_now(alex_mem *mem, const struct alex_config *cfg, uint32_t acked, uint32_t cur)
{
	alex_mem *c = alex_mem_crash(mem, ALEX_CRASH_LOSE, 0);
	struct alex_io io = alex_mem_io(c);
	alex_db *db;
	int rc = alex_open(DB, cfg, &io, &db);

	if (rc == 0) {
		cr_assert(state_is(db, acked) || state_is(db, cur),
			  "after the fault a power cut lost acknowledged txn %u", acked);
		alex_close(db);
	} else {
		/* only possible before the log existed: nothing was acknowledged */
		cr_assert_eq(acked, 0, "recovery failed: %s", alex_strerror(rc));
	}
	alex_mem_free(c);
}

static uint64_t run(uint64_t fail_at, int err, uint64_t *faults)
{
	alex_mem *mem = alex_mem_new();
	struct alex_io io = alex_mem_io(mem);
	struct alex_config cfg;
	alex_db *db = NULL;
	uint8_t b[BLK];
	uint32_t acked = 0;
	int rc;

	small_config(&cfg);
	cfg.checkpoint_bytes = 48u << 10;
	cfg.prealloc_bytes = 16u << 10;
	alex_mem_fail_at(mem, fail_at, ~0u, err);
	while ((rc = alex_open(DB, &cfg, &io, &db)) != 0) {
		cr_assert_eq(rc, err, "open failed with %s", alex_strerror(rc));
		(*faults)++;
	}
	for (uint32_t t = 1; t <= NTX; t++) {
	redo:
		rc = 0;
		if (trunc_to[t] != UINT32_MAX)
			rc = alex_truncate(db, ALEX_FILE_DB, (uint64_t)trunc_to[t] * BLK);
		for (uint32_t i = 0; i < cnt[t] && !rc; i++) {
			fill_block(b, t, nblk[t][i]);
			rc = alex_write(db, ALEX_FILE_DB, b, BLK, (uint64_t)nblk[t][i] * BLK);
		}
		struct alex_stats a, z;
		alex_stats(db, &a);
		if (!rc)
			rc = alex_commit(db);
		alex_stats(db, &z);
		/* a checkpoint after a good commit fails quietly: it is counted */
		*faults += z.checkpoint_failures - a.checkpoint_failures;
		if (rc) {
			cr_assert(rc == err || rc == ALEX_EFAILED, "txn %u: unexpected %s", t,
				  alex_strerror(rc));
			(*faults)++;
			cut_now(mem, &cfg, acked, t);
			/* the application's answer to an I/O error: reopen, redo */
			alex_close(db);
			while ((rc = alex_open(DB, &cfg, &io, &db)) != 0)
				cr_assert_eq(rc, err);
			cr_assert(state_is(db, acked) || state_is(db, t),
				  "txn %u: reopened state is neither %u nor %u", t, acked, t);
			goto redo;
		}
		acked = t;
	}
	cr_assert(state_is(db, NTX));
	cfg.checkpoint_on_close = 1;
	rc = alex_close(db);
	if (rc) { /* a fault in the closing checkpoint: the log still has it */
		cr_assert_eq(rc, err);
		(*faults)++;
	}
	cfg.checkpoint_on_close = 0;
	cr_assert_eq(alex_open(DB, &cfg, &io, &db), 0);
	cr_assert(state_is(db, NTX), "final state after close and reopen");
	alex_close(db);
	uint64_t ops = alex_mem_ops(mem);
	alex_mem_free(mem);
	return ops;
}

ParameterizedTestParameters(faults, every_operation)
{
	static int errs[] = { EIO, ENOSPC };
	return cr_make_param_array(int, errs, 2);
}

ParameterizedTest(int *err, faults, every_operation, .timeout = 300)
{
	uint64_t faults = 0;

	make_plan();
	uint64_t total = run(0, *err, &faults);
	cr_assert_eq(faults, 0);
	uint64_t absorbed = 0;
	for (uint64_t n = 1; n <= total; n++) {
		uint64_t before = faults;
		run(n, *err, &faults);
		if (faults > before)
			continue;
		/* A full disk is met by making room -- a smaller log growth, a
		 * checkpoint that lets the log be written again, the log's
		 * unused tail given back -- before SQLite is told; when that
		 * succeeds nothing is lost (run() checked the final state), and
		 * nothing needs reporting.  EIO has no such way out. */
		cr_assert_eq(*err, ENOSPC, "the fault at operation %lu was never reported",
			     (unsigned long)n);
		absorbed++;
	}
	cr_log_info("%s at each of %lu operations: %lu faults reported, %lu absorbed by "
		    "making room", *err == EIO ? "EIO" : "ENOSPC", (unsigned long)total,
		    (unsigned long)faults, (unsigned long)absorbed);
	cr_expect_gt(faults, total / 4, "most faults must still reach the caller");
}
