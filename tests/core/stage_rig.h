/*
 * stage_rig.h - a staging engine over the engine below it on the memory
 * backend, as libalex.so stacks them (io_over.h), for the staging suites.
 */
#ifndef ALEX_TEST_STAGE_RIG_H
#define ALEX_TEST_STAGE_RIG_H

#include "helpers.h"
#include "io_over.h"

#define STAGE "/mem/t.db-alex-stage"
#define NB 64u /* blocks a model covers */

struct rig {
	alex_mem *m;
	struct alex_io io, over_io;
	struct alex_io_over *ov;
	alex_db *below, *above;
};

/* Both engines on r->m: below with cb, above with what libalex.so gives
 * it (its log removed at its close when remove is set, as staging.c does). */
static inline void rig_open_with(struct rig *r, const struct alex_config *cb, int remove)
{
	struct alex_config ca = *cb;

	r->io = alex_mem_io(r->m);
	r->below = open_engine(cb, &r->io);
	cr_assert_eq(alex_io_over_new(r->below, &r->io, &r->ov), 0);
	r->over_io = alex_io_over(r->ov);
	alex_config_over(&ca);
	ca.remove_log = remove;
	r->above = open_engine(&ca, &r->over_io);
}

/* small_config (transactions spill), the database file only */
static inline void rig_open(struct rig *r)
{
	struct alex_config cb;

	small_config(&cb);
	cb.db_only = 1;
	rig_open_with(r, &cb, 0);
}

/* Both engines dropped as a dying process leaves them: no merge. */
static inline void rig_die(struct rig *r)
{
	alex_close(r->above);
	alex_io_over_free(r->ov);
	alex_close(r->below);
}

/* A new memory backend whose database holds blocks 0..blocks-1 of
 * fill_block(1, i), as want does too. */
static inline void rig_new(struct rig *r, uint32_t blocks, uint8_t *want)
{
	r->m = alex_mem_new();
	for (uint32_t i = 0; i < blocks; i++)
		fill_block(want + (size_t)i * BLK, 1, i);
	alex_mem_set(r->m, DB, want, (size_t)blocks * BLK);
	rig_open(r);
}

/* Block blk written through db with txn's content, and into want. */
static inline void put(alex_db *db, uint8_t *want, uint32_t txn, uint32_t blk)
{
	fill_block(want + (size_t)blk * BLK, txn, blk);
	cr_assert_eq(alex_write(db, ALEX_FILE_DB, want + (size_t)blk * BLK, BLK,
			       (uint64_t)blk * BLK), 0);
}

/* Does db read want[0, size) and no more? */
static inline int same(alex_db *db, const uint8_t *want, uint64_t size)
{
	static uint8_t got[NB * BLK + BLK];
	uint64_t s;
	size_t n;

	if (alex_size(db, ALEX_FILE_DB, &s) || s != size ||
	    alex_read(db, ALEX_FILE_DB, got, sizeof got, 0, &n) || n != size)
		return 0;
	return memcmp(got, want, size) == 0;
}

#endif
