/* ckpt.h - copying the log into the base files (ckpt.c). */
#ifndef ALEX_CKPT_H
#define ALEX_CKPT_H

#include "db.h"

/* Copies every committed block into the base files, syncs them, and
 * begins a new epoch.  The caller keeps other writers out. */
int alex_ckpt_run(struct alex_db *db);
/* The same inside a commit, which waits for it: a small copy goes
 * through the page cache, not past it (ckpt.c, FEW_IN_COMMIT). */
int alex_ckpt_run_in_commit(struct alex_db *db);
/* Copies every committed block into the base files, and syncs them if
 * sync, and nothing else: the epoch, its fence and the log stay
 * (carry.c). */
int alex_ckpt_copy(struct alex_db *db, int sync);
/* The same copy in slices of at most ALEX_CKPT_SLICE_MAX blocks, no
 * sync (carry.c): the sorted keys of every committed block, and each file
 * readied (a truncation's bytes cut); a slice of them, as committed now
 * (*used of keys[0..n): need or more, and past need only while at most
 * ALEX_CKPT_SLICE_COLD were not held in memory), through buf, room for
 * ALEX_CKPT_SLICE_MAX blocks; the files' lengths.  An error leaves the
 * next copy whole (ckpt_doubt). */
#define ALEX_CKPT_SLICE_MAX 64
#define ALEX_CKPT_SLICE_COLD 4
int alex_ckpt_slices_begin(struct alex_db *db, uint64_t **keys, size_t *n);
int alex_ckpt_slice(struct alex_db *db, const uint64_t *keys, size_t n, size_t need,
		    uint8_t *buf, size_t *used);
int alex_ckpt_slices_end(struct alex_db *db);
/* Everything committed is in the base (a checkpoint's copy, or a merge
 * into the engine below): the map empties, the next epoch begins (its
 * header synced if sync), the limits are the sizes.  An error stops the
 * engine. */
int alex_epoch_after_copy(struct alex_db *db, int sync);
/* The log's length (from its data) at which the next checkpoint may come
 * due, at the soonest (commit.c). */
uint64_t alex_ckpt_soonest(struct alex_db *db);
/* The checkpoint a commit would have set off, if it is due (commit.c): after
 * a merge, which its staging engine's commits held back. */
int alex_ckpt_if_due(struct alex_db *db);

#endif
