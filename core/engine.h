/*
 * engine.h - what the engine's own files (open, read, write, stage,
 * commit, refresh) call across each other.  The public API is alex.h.
 */
#ifndef ALEX_ENGINE_H
#define ALEX_ENGINE_H

#include <errno.h>

#include "db.h"

static inline int alex_file_ok(enum alex_file f)
{
	return (unsigned)f < ALEX_NFILES;
}

/* An error that a checkpoint may cure: the file system is full. */
static inline int alex_disk_full(int err)
{
	return err == ENOSPC || err == EDQUOT;
}

/* open.c: opens the base files that exist (once) and takes their sizes. */
int alex_bases_open(struct alex_db *db);

/* read.c: the committed-or-spilled content of a block, ignoring the
 * collector. */
int alex_block_load(struct alex_db *db, unsigned f, uint64_t blk, uint8_t *out);
/* read.c: bytes [in, in + n) of the block's newest content, the open
 * transaction's included, into dst. */
int alex_block_copy(struct alex_db *db, unsigned f, uint64_t blk, size_t in, size_t n,
		    uint8_t *dst);
/* Page 1 as a committed record holds it at loc: kept decoded (read.c). */
void alex_page1_keep(struct alex_db *db, const struct alex_loc *loc, const uint8_t *img,
		     uint32_t len);

/* write.c (alex_txn_open is in alex.h) */
/* The collector slot for (f, blk), made on first touch (a spill makes
 * room); a block that will not be overwritten whole is first filled with
 * its current content. */
int alex_slot_for(struct alex_db *db, unsigned f, uint64_t blk, int whole, uint8_t **out);
/* The next epoch begins (alex_log_begin_epoch), in a log another process
 * may have made first: then that log is recovered and used. */
int alex_epoch_begin(struct alex_db *db, int sync);
/* Before the first record of an epoch: the log exists, the epoch takes
 * records, the base carries the epoch's fence. */
int alex_epoch_ensure(struct alex_db *db);
/* Before an fdatasync of fd under the lock: a sync of it outside the lock
 * (the syncing thread, commit.c) not begun is cancelled, one running
 * waited for; a write-back error is reported to one sync of a file
 * description only, so its error, if any, is the caller's (else 0). */
int alex_sync_settle(struct alex_db *db, int fd);
/* Before the first commit record of an epoch: it carries block 0. */
int alex_txn_carry_page1(struct alex_db *db);
/* A full disk: checkpoint, so that the log's space can be written again. */
int alex_make_room(struct alex_db *db);

/* stage.c */
/* db->rec holds at least need bytes (grown by doubling, up to the largest
 * record the collector can make when that is enough).  Its contents are
 * not kept. */
int alex_rec_room(struct alex_db *db, size_t need);
/* Reads n bytes of the log at off into db->rec (n <= rec_cap), the one way
 * anything but a record being built writes there: the staging buffer then
 * knows how far it is no longer zeros.  0 or an I/O error; *got as pread's. */
int alex_rec_read(struct alex_db *db, size_t n, uint64_t off, size_t *got);
/* Builds the collector into db->rec as one record with these flags (COND
 * takes db->cond); its length in *len, its block count in *n. */
int alex_stage_build(struct alex_db *db, uint32_t flags, uint32_t *len, uint32_t *n);
/* The staged record is written at rec_off: target maps its blocks, the
 * collector empties, the chain moves on.  A map that cannot grow stops
 * the engine. */
int alex_stage_publish(struct alex_db *db, struct alex_map *target, uint64_t rec_off,
		       uint32_t len, uint32_t n);

/* refresh.c: catches up with the log (force: start over from the base
 * files); may_abort as alex_refresh's locked. */
int alex_reload(struct alex_db *db, int force, int may_abort);
/* Everything written to the log is synced (commit.c): the unsynced counts
 * start again. */
void alex_sync_reset(struct alex_db *db);

#endif
