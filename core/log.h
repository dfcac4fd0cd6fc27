/* log.h - the log file: its header slots, epochs, appends, locks (log.c),
 * and its space (log_space.c). */
#ifndef ALEX_LOG_H
#define ALEX_LOG_H

#include "db.h"

/* Opens the log if there is one (log_fd stays -1 if not), locks it shared
 * (exclusive for tools), checks its mode against the database's, and reads
 * its header.  A file that holds nothing becomes a stub (log_stub). */
int alex_log_open(struct alex_db *db);
/* Closes the log and opens what is at its path now. */
int alex_log_reopen(struct alex_db *db);
/* Closes the log (and unmaps its change counter, shm.c). */
void alex_log_drop(struct alex_db *db);
/* FULL mode, a log of format 6, ALEX_DIRECT: open the log's direct
 * descriptor if it is not open (records then go through it, stage.c);
 * a refusal is kept in the stats and not tried again. */
void alex_log_direct_try(struct alex_db *db);
/* From now on the log is written through the page cache (db.h: writes_now). */
void alex_log_buffered(struct alex_db *db);
/* Was the log removed or made by another process since we opened it?
 * Also refreshes alloc_end. */
int alex_log_changed(struct alex_db *db, int *changed);
/* Reads both header slots: the current one into *out; sets slot_damaged.
 * ALEX_ENOLOG when no slot was ever completely written. */
int alex_log_read_header(struct alex_db *db, struct alex_loghdr *out);
/* Begins the next epoch (making the log if there is none): a new header
 * carrying base_hdr (the base's first ALEX_BASE_HDR bytes, as SQLite would
 * read them: alex_protect_base_header), written; synced if sync.  On a failed write the engine stops.
 * ALEX_EADOPT: another process made the log first (see alex_epoch_begin). */
int alex_log_begin_epoch(struct alex_db *db, int sync, const uint8_t *base_hdr);
/* Writes db->hdr into its slot (no sync). */
int alex_log_write_header(struct alex_db *db);
int alex_log_append(struct alex_db *db, uint32_t rec_len, uint64_t *rec_off);
int alex_log_sync(struct alex_db *db);
/* Grows the log so that a record of this many blocks fits after the end:
 * a full disk then surfaces as SQLite writes a page (SQLITE_FULL), not
 * later when it syncs. */
int alex_log_reserve(struct alex_db *db, uint32_t blocks);
/* Writes the current header into its slot again, and syncs. */
int alex_log_rewrite_header(struct alex_db *db);
/*
 * A staging log above may hold commits this log lacks (io_over.h): the
 * live epoch's header says STAGED, at once, so that every other process
 * sees it at its next catch-up; a log of version 7 is raised to 8, synced,
 * so that no older reader takes it for one of its own.  The whole header
 * goes, with what alex_epoch_ensure put in it (FENCED, the base copy):
 * other processes read it at their catch-ups, and the merge that is this
 * epoch's first record may come a window later.  ALEX_EVERSION for a log
 * of another layout, which cannot be raised.
 */
int alex_log_mark_staged(struct alex_db *db);
/* Takes (on) or drops the checkpoint lock (ALEX_LOCK_CKPT). */
int alex_log_lock_ckpt(struct alex_db *db, int on);
/* log_space.c: writes zeros into [from, to) of fd. */
int alex_log_grow(struct alex_db *db, int fd, uint64_t from, uint64_t to);
/* Makes sure [append_off, end) lies inside written space. */
int alex_log_prealloc(struct alex_db *db, uint64_t end);
/* Gives back the log's preallocated space past the last record (a file
 * system running full); the next record grows it again. */
int alex_log_trim(struct alex_db *db);
/* Unlinks the log if no other engine has it open (ALEX_EINUSE if one
 * has); the engine then has no log. */
int alex_log_remove(struct alex_db *db);
/* Reads the stored bytes at loc and decodes them into blk, checking the crc. */
int alex_log_read_block(struct alex_db *db, uint64_t key, const struct alex_loc *loc,
			uint8_t *blk);
/* ... and keeps it (known.h), a committed place's, for the next delta of
 * it or the next read: a block read from a chain is not walked again. */
int alex_log_read_kept(struct alex_db *db, uint64_t key, const struct alex_loc *loc, uint8_t *blk);
uint32_t alex_random32(void);

#endif
