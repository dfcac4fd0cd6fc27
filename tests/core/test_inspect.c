/* alex_records (inspect.c): the walk the tools show, over logs made
 * through the public API on the memory backend -- where each record lies,
 * what it holds, and the state recovery would give it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "format.h"
#include "helpers.h"

#define SUPER "/mem/t.db-mj0badcafe"
#define MAXREC 64

static alex_mem *mem;
static struct alex_io io;
static struct alex_config cfg;

/* What the walk reported, copied (cond belongs to the walk). */
static struct alex_recinfo seen[MAXREC];
static char conds[MAXREC][64];
static int nseen, stop_at, calls;

static void setup(void)
{
	mem = alex_mem_new();
	io = alex_mem_io(mem);
	small_config(&cfg);
	nseen = calls = 0;
	stop_at = -1;
}
static void teardown(void)
{
	alex_mem_free(mem);
}
TestSuite(inspect, .init = setup, .fini = teardown);

static int collect(void *arg, const struct alex_recinfo *ri)
{
	(void)arg;
	if (calls++ == stop_at)
		return 7;
	cr_assert_lt(nseen, MAXREC);
	seen[nseen] = *ri;
	conds[nseen][0] = 0;
	if (ri->cond)
		snprintf(conds[nseen], sizeof conds[0], "%s", ri->cond);
	nseen++;
	return 0;
}

static int walk(alex_db *db)
{
	nseen = calls = 0;
	return alex_records(db, collect, NULL);
}

static alex_db *open_on(struct alex_io *on)
{
	return open_engine(&cfg, on);
}

/* No commit yet: nothing to list, even with writes collected in memory. */
Test(inspect, nothing_committed_lists_nothing)
{
	alex_db *db = open_on(&io);

	cr_expect_eq(walk(db), 0);
	cr_expect_eq(calls, 0);
	put_txn(db, 1, 2);
	cr_expect_eq(walk(db), 0);
	cr_expect_eq(calls, 0);
	alex_close(db);
}

/* Commits are listed in log order, back to back from the first data
 * block, each with its own lsn, a growing txn and the blocks it holds. */
Test(inspect, commits_in_log_order)
{
	alex_db *db = open_on(&io);

	for (uint32_t t = 1; t <= 3; t++) {
		put_txn(db, t, t);
		cr_assert_eq(alex_commit(db), 0);
	}
	cr_assert_eq(walk(db), 0);
	cr_assert_eq(nseen, 3);
	cr_expect_eq(seen[0].off, ALEX_LOG_DATA);
	for (int i = 0; i < 3; i++) {
		cr_expect_eq(seen[i].state, ALEX_RS_COMMITTED, "record %d", i);
		cr_expect_eq(seen[i].flags, ALEX_REC_COMMIT);
		cr_expect_eq(seen[i].nblocks, (uint32_t)i + 1);
		cr_expect_eq(seen[i].rec_len % ALEX_SECTOR, 0u);
		cr_expect_eq(conds[i][0], 0);
		if (i) {
			cr_expect_eq(seen[i].off, seen[i - 1].off + seen[i - 1].rec_len);
			cr_expect_eq(seen[i].lsn, seen[i - 1].lsn + 1);
			cr_expect_gt(seen[i].txn, seen[i - 1].txn);
		}
	}
	alex_close(db);
}

/* A nonzero return from the callback stops the walk and is returned. */
Test(inspect, callback_stops_the_walk)
{
	alex_db *db = open_on(&io);

	for (uint32_t t = 1; t <= 4; t++) {
		put_txn(db, t, 1);
		cr_assert_eq(alex_commit(db), 0);
	}
	stop_at = 1;
	nseen = calls = 0;
	cr_expect_eq(alex_records(db, collect, NULL), 7);
	cr_expect_eq(calls, 2, "no call after the one that said stop");
	alex_close(db);
}

/* A transaction too large for memory spills: its records are listed as
 * uncommitted while it is open, then, once committed, all as committed
 * under the commit's txn -- only the last one carrying COMMIT. */
Test(inspect, spills_follow_their_transaction)
{
	alex_db *db = open_on(&io);

	put_txn(db, 1, 1);
	cr_assert_eq(alex_commit(db), 0);
	put_txn(db, 2, 30); /* 7 slots: several spills */
	cr_assert_eq(walk(db), 0);
	cr_assert_gt(nseen, 2);
	cr_expect_eq(seen[0].state, ALEX_RS_COMMITTED);
	for (int i = 1; i < nseen; i++) {
		cr_expect_eq(seen[i].state, ALEX_RS_UNCOMMITTED, "spill %d", i);
		cr_expect_eq(seen[i].flags, 0u);
		cr_expect_eq(seen[i].txn, seen[1].txn);
	}
	int spills = nseen - 1;
	cr_assert_eq(alex_commit(db), 0);
	cr_assert_eq(walk(db), 0);
	cr_assert_eq(nseen, spills + 2);
	for (int i = 1; i < nseen; i++) {
		cr_expect_eq(seen[i].state, ALEX_RS_COMMITTED, "record %d", i);
		cr_expect_eq(seen[i].txn, seen[1].txn);
		cr_expect_eq(seen[i].flags, i == nseen - 1 ? ALEX_REC_COMMIT : 0u);
	}
	alex_close(db);
}

/* A conditional commit names its super-journal; it is undecided while
 * that file exists, committed once it is gone, and committed whatever the
 * file once a later commit follows it. */
Test(inspect, conditional_commit_states)
{
	alex_db *db = open_on(&io);

	cr_assert_eq(alex_mem_set(mem, SUPER, "x", 1), 0);
	put_txn(db, 1, 2);
	cr_assert_eq(alex_commit_cond(db, SUPER), 0);
	cr_assert_eq(walk(db), 0);
	cr_assert_eq(nseen, 1);
	cr_expect_eq(seen[0].flags, ALEX_REC_COMMIT | ALEX_REC_COND);
	cr_expect_str_eq(conds[0], SUPER);
	cr_expect_eq(seen[0].state, ALEX_RS_UNDECIDED);

	cr_assert_eq(io.ops->unlink(io.ctx, SUPER), 0);
	cr_assert_eq(walk(db), 0);
	cr_expect_eq(seen[0].state, ALEX_RS_COMMITTED);

	cr_assert_eq(alex_mem_set(mem, SUPER, "x", 1), 0);
	alex_resolve(db);
	put_txn(db, 2, 1);
	cr_assert_eq(alex_commit(db), 0);
	cr_assert_eq(walk(db), 0);
	cr_assert_eq(nseen, 2);
	cr_expect_eq(seen[0].state, ALEX_RS_COMMITTED, "a later commit decides it");
	cr_expect_eq(seen[1].state, ALEX_RS_COMMITTED);
	alex_close(db);
}

/* After a checkpoint the epoch is new and empty; its first commit lies at
 * the first data block again. */
Test(inspect, checkpoint_starts_an_empty_epoch)
{
	alex_db *db = open_on(&io);

	for (uint32_t t = 1; t <= 3; t++) {
		put_txn(db, t, 2);
		cr_assert_eq(alex_commit(db), 0);
	}
	cr_assert_eq(alex_checkpoint(db), 0);
	cr_assert_eq(walk(db), 0);
	cr_expect_eq(nseen, 0);
	put_txn(db, 4, 1);
	cr_assert_eq(alex_commit(db), 0);
	cr_assert_eq(walk(db), 0);
	cr_assert_eq(nseen, 1);
	cr_expect_eq(seen[0].off, ALEX_LOG_DATA);
	cr_expect_eq(seen[0].state, ALEX_RS_COMMITTED);
	alex_close(db);
}

/* The walk stops where recovery stops: damage in the second record hides
 * it and everything after it. */
Test(inspect, damage_ends_the_walk)
{
	alex_db *db = open_on(&io);
	size_t len;

	for (uint32_t t = 1; t <= 3; t++) {
		put_txn(db, t, 1);
		cr_assert_eq(alex_commit(db), 0);
	}
	cr_assert_eq(walk(db), 0);
	cr_assert_eq(nseen, 3);
	uint64_t second = seen[1].off;
	alex_close(db);

	const uint8_t *log = alex_mem_get(mem, LOG, &len);
	cr_assert_not_null(log);
	uint8_t *copy = malloc(len);
	cr_assert_not_null(copy);
	memcpy(copy, log, len);
	copy[second + ALEX_REC_FIXED + ALEX_REC_ENTRY + 100] ^= 0x10; /* inside its payload */
	cr_assert_eq(alex_mem_set(mem, LOG, copy, len), 0);
	free(copy);
	db = open_on(&io);
	cr_assert_eq(walk(db), 0);
	cr_expect_eq(nseen, 1);
	cr_expect_eq(seen[0].off, ALEX_LOG_DATA);
	alex_close(db);
}

/* Every state has its own name; an unknown one is "?". */
Test(inspect, state_names)
{
	static const enum alex_rec_state all[] = { ALEX_RS_COMMITTED, ALEX_RS_CHECKPOINTED,
						    ALEX_RS_UNCOMMITTED, ALEX_RS_UNDECIDED };

	for (size_t i = 0; i < 4; i++) {
		const char *n = alex_rec_state_name(all[i]);
		cr_assert_not_null(n);
		cr_expect_str_neq(n, "?", "state %d", all[i]);
		for (size_t j = 0; j < i; j++)
			cr_expect_str_neq(n, alex_rec_state_name(all[j]));
	}
	cr_expect_str_eq(alex_rec_state_name(ALEX_RS_COMMITTED), "committed");
	cr_expect_str_eq(alex_rec_state_name((enum alex_rec_state)99), "?");
}
