/*
 * io_over.h - an engine stacked over another (docs/STAGING.md).
 *
 * The staging engine ("above") runs on an I/O backend whose base files are
 * the other engine ("below") read through its API -- the database as
 * below commits it, its log's pages laid over the file -- and whose own
 * files (its log, its change counter) are files', never synced: a staging
 * log outlives its process, not a power cut.  alex_merge then makes what
 * above committed durable as one transaction of below.
 *
 * Not used by libalex.so yet: what a later opener may replay of a staging
 * log (its identity against below's state) is the next step of the plan.
 */
#ifndef ALEX_IO_OVER_H
#define ALEX_IO_OVER_H

#include "alex.h"
#include "io.h"

struct alex_io_over;

/* A backend over below for an engine opened on the same database path;
 * files: where its own files live (NULL: POSIX).  below must outlive it.
 * From here until alex_io_over_free, below syncs every commit (a merge is
 * durable when it returns; alex_stage_sync relies on it). */
int alex_io_over_new(alex_db *below, const struct alex_io *files, struct alex_io_over **out);
struct alex_io alex_io_over(struct alex_io_over *o);
void alex_io_over_free(struct alex_io_over *o);

/* The configuration above needs: a log of its own name, no fence (below's
 * keeps programs without ALEX out), no checkpoint (alex_merge instead), its
 * commits unsynced, only the database file. */
void alex_config_over(struct alex_config *cfg);

/*
 * Writes every block, size and truncation that above committed and below
 * does not hold into one transaction of below, and commits it (synced if
 * below is in FULL mode); then above begins a new epoch, its log empty and
 * its reads falling through to below.  Neither may have a transaction open
 * (ALEX_EBUSY), nor above a commit across databases undecided.  On an error
 * of below nothing has moved in above and the call may be repeated; an
 * error beginning above's next epoch stops above (its log still holds what
 * below now holds too).
 */
int alex_merge(alex_db *above, alex_db *below);

/* alex_merge by a caller that holds SQLite's EXCLUSIVE lock (no reader of
 * below's log but itself): a full disk checkpoints below for room -- its
 * pages into the database file, the fence kept on, below's uuid and next
 * lsn, which the staging log names, unchanged -- and merges again. */
int alex_merge_room(alex_db *above, alex_db *below);

/* Catch-up and alex_merge by a caller that holds only SQLite's SHARED and
 * RESERVED locks (libalex.so's flusher, ending a window no commit ended):
 * readers may be at work, so below neither checkpoints -- when due, at the
 * next merge -- nor makes room; a full disk is an error.  Below's
 * checkpoint lock is taken without waiting (ALEX_EBUSY if another process
 * holds it: one opening the WAL drains below under SHARED). */
int alex_merge_held(alex_db *above, alex_db *below);

/* Would below checkpoint once a merge is in (its log past checkpoint_bytes)? */
int alex_stage_ckpt_due(alex_db *below);

/* Is the file system short of space for windows of `window` bytes (under
 * sixteen of them free)?  As last seen at a merge; before the first one,
 * yes.  Then every commit is merged at once, and above's log stays small. */
int alex_stage_short(const alex_db *below, uint64_t window);
/* ... looked at now (at a merge, and when a staging engine is attached). */
void alex_stage_space(alex_db *below);

/* Does above hold nothing at all: no transaction, no record in its epoch
 * (whose point is then taken again at its first record)? */
int alex_stage_idle(const alex_db *above);

/* Is db a staging engine (opened on this backend), and the engine below it. */
int alex_io_over_is(const alex_db *db);
alex_db *alex_io_over_below(const alex_db *above);

/*
 * Catches both up with other processes (alex_refresh): below first, since
 * above's epoch is judged by the point below stands at.  below then holds
 * back its checkpoints while above holds commits.
 */
int alex_stage_catch_up(alex_db *above, alex_db *below, int locked);

/* Does below's header say a staging log may hold commits (format.h:
 * STAGED), as of its last catch-up?  Then nothing may commit to below but
 * a merge: a process without a staging engine must open one. */
int alex_stage_marked(const alex_db *below);

/* May a staging log hold commits that below's epoch lacks, with no
 * staging engine over below to say?  Its epoch says STAGED and the
 * staging log is there: then below never ends the epoch or removes its
 * log (core/ckpt.c, open.c). */
int alex_stage_unmerged(const alex_db *below);

/* Can below's log carry a staging log (format 7 or 8, or none yet)? */
int alex_stage_possible(const alex_db *below);

/* Merges with no SQLite lock keeping other writers out (SQLite holds only
 * SHARED, as before it opens a WAL): under below's checkpoint lock, so
 * that two processes doing it at once do not both append below. */
int alex_stage_drain(alex_db *above, alex_db *below);

/* Bytes of records in above's current epoch: what a merge would take. */
uint64_t alex_stage_bytes(const alex_db *above);
/* Distinct blocks committed in above's current epoch: what a merge would
 * write below (its time goes with them, some 4 us a block). */
uint64_t alex_stage_blocks(const alex_db *above);

/*
 * Makes above's log durable as it stands (fdatasync, and its directory):
 * for a window that ends with no commit to carry a merge, or a close that
 * cannot merge.  Sound because every merge below is synced: the point the
 * synced epoch names is one below keeps.
 */
int alex_stage_sync(alex_db *above);

/*
 * A transaction that must be committed below (a commit across databases:
 * its record conditional and durable before the super-journal goes, which
 * a staging log cannot be) moves there: above's open transaction is copied
 * out (its blocks as it would commit them, its lowest truncation, its
 * sizes), dropped, above merged into below, and the copy written into a
 * transaction of below, which the caller then commits.  On an error
 * neither holds the transaction (SQLite rolls it back from its journal).
 * ALEX_ENOMEM beyond 256 MiB of blocks.
 */
int alex_stage_move(alex_db *above, alex_db *below);

#endif
