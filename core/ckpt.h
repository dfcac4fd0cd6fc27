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
/* Everything committed is in the base (a checkpoint's copy, or a merge
 * into the engine below): the map empties, the next epoch begins (its
 * header synced if sync), the limits are the sizes.  An error stops the
 * engine. */
int alex_epoch_after_copy(struct alex_db *db, int sync);
/* The checkpoint a commit would have set off, if it is due (commit.c): after
 * a merge, which its staging engine's commits held back. */
int alex_ckpt_if_due(struct alex_db *db);

#endif
