/* carry.h - FULL mode's checkpoint off the commit path (carry.c). */
#ifndef ALEX_CARRY_H
#define ALEX_CARRY_H

#include "db.h"

/* May the checkpoint due now begin the next epoch carrying this one? */
int alex_carry_possible(const struct alex_db *db);
/* Begins it: a header naming this epoch's records, which recovery replays
 * first, and its own records where they never go over them.  No sync, no
 * write to the database file: the next commit's sync makes it durable.
 * An error stops the engine (the disk's header is then unknown). */
int alex_carry_begin(struct alex_db *db);
/* The carried epoch's records are due to be copied (its header durable,
 * a commit of this epoch's own since). */
int alex_carry_apply_due(const struct alex_db *db);
/* Copies every committed block into the base files and syncs them, then
 * writes this epoch's header again without the carried records (not
 * synced: until a sync, they are not written over; carry.c). */
int alex_carry_apply(struct alex_db *db);
/* The same, at commits, without waiting: the copy when it is due, in
 * slices, the base file's sync by the syncing thread (alex_sync_start,
 * commit.c), and then alex_carry_let_go.  A commit that finds no thread
 * took the sync for ALEX_CA_INLINE_AFTER commits makes it itself. */
#define ALEX_CA_INLINE_AFTER 8
/* Blocks a commit copies of a carried epoch (alex_ckpt_slice) when they
 * are held in memory, or more when the log's pace needs them; commits
 * skipped after a copy failed (a page 1 that cannot carry the mark, a
 * full disk) before it is tried again. */
#define ALEX_CA_SLICE 16
#define ALEX_CA_PAUSE 16
int alex_carry_step(struct alex_db *db);
/* At the beginning of a commit that syncs: the header without the carried
 * epoch, once its copy is synced, so that the commit's sync makes it
 * durable before any other engine can read it (one that wrote over the
 * carried stretch before that sync could leave a header naming records
 * no longer there; alex_carry_room). */
int alex_carry_let_go(struct alex_db *db);
/*
 * The carried epoch was copied (by this engine, or another: its header
 * no longer names it): the base files hold every block that was committed
 * then, up to their length then.  Bytes below that length come from them
 * again, unless a commit of this epoch's own cut the file shorter since
 * (own_min; one before the copy only makes this say less than it could).
 * Else a checkpoint would cut the base below what it holds, before it
 * writes the blocks back -- which the log, its carried records copied and
 * let go, no longer holds.
 */
int alex_carry_copied(struct alex_db *db);
/* The carried epoch that header was names is let go (by this engine, or
 * another whose header this one read): until a sync of the log, its
 * stretch is not to be written over (alex_carry_room). */
void alex_carry_gone(struct alex_db *db, const struct alex_loghdr *was);
/* Before a record at [off, off + len): may it go there?  A carried epoch's
 * records are copied first, and the header that lets them go is synced,
 * when it would write over them. */
int alex_carry_room(struct alex_db *db, uint64_t off, uint64_t len);

#endif
