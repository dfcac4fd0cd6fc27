/* protect.h - the base file's mark while the log holds newer pages (protect.c). */
#ifndef ALEX_PROTECT_H
#define ALEX_PROTECT_H

#include "db.h"

#define ALEX_MARK 0xa1u
/* The fence of hdr's epoch. */
uint64_t alex_protect_fence(const struct alex_loghdr *hdr);
/* Reads the base's mark into db->mark; a placeholder makes *size 0. */
int alex_protect_probe(struct alex_db *db, uint64_t *size);
/* Does the base carry the fence of db->hdr's epoch (or a format-1 mark)? */
int alex_protect_is_live(const struct alex_db *db);
/* Marks the base with the current epoch's fence and makes it durable: by
 * a sync of its own, or -- ride, when the caller's next log sync comes
 * before anything relies on the mark -- by writing it out so that that sync
 * carries it.  A file that is neither empty nor an SQLite database is left
 * alone (db->mark NONE). */
int alex_protect_mark(struct alex_db *db, int ride);
/* May the epoch's mark ride on its first commit's sync (protect.c)? */
int alex_protect_may_ride(const struct alex_db *db);
/* Does the base carry another log's fence, under a fenced epoch?  Not
 * when it is this epoch's own, its write cut short by a crash, nor that of
 * a removed predecessor whose unmark was lost with the power while this
 * log's first mark rode on a sync that never came (its first epoch, begun
 * on exactly this base: base_hdr, the base's header as SQLite reads it,
 * equals the header's copy; NULL: read it from the file). */
int alex_protect_foreign(struct alex_db *db, const uint8_t *base_hdr);
/* A damaged header slot may have been epoch h->epoch + 1's: if blk (a
 * block of the log at off, room bytes to its end) holds that epoch's first
 * record, h becomes that epoch's header (its base copy unknown) and 1 is
 * returned (recover.c, inspect_slots.c). */
int alex_protect_adopt(struct alex_loghdr *h, const struct alex_mark *mark, const uint8_t *blk,
		       uint64_t room, uint64_t off);
/* Can this page 1 carry the mark and be given back exactly (an SQLite
 * header with zeros where SQLite keeps them)? */
int alex_protect_markable(const uint8_t *blk0, size_t len);
/* Puts the current epoch's mark on a copy of block 0 that holds an SQLite
 * header; 1 if it did. */
int alex_protect_apply(const struct alex_db *db, uint8_t *blk0, size_t len);
/* Takes the mark off: writes the true first bytes of block 0 (size is the
 * file's logical size).  No sync: see the top of protect.c. */
int alex_protect_clear(struct alex_db *db, const uint8_t *blk0, uint64_t size);
/* Restores the true bytes of a marked block 0 read from the base file. */
void alex_protect_unmask(uint8_t *blk0, size_t len);
/* The base's first 100 bytes as SQLite would read them (byte 19 restored,
 * zeros for an empty file or the placeholder): what log headers record. */
int alex_protect_base_header(struct alex_db *db, uint8_t out[ALEX_BASE_HDR]);
/* Is this log the base's?  For an epoch that is not fenced, after
 * recovery: the base must match the header's copy, or the log's own newest
 * block 0 (a checkpoint was cut short after writing it), byte by byte.
 * 0 or ALEX_EFOREIGN. */
int alex_protect_check_base(struct alex_db *db);

/* No log at the log's name (db->log_fd < 0): is the base fenced all the
 * same?  ALEX_EORPHAN if so, ALEX_ERACED if its mark changed meanwhile
 * (look again), else 0. */
int alex_protect_orphaned(struct alex_db *db);
/* Does the base carry, read now, the fence of db->hdr's epoch?  1, 0, or
 * an error. */
int alex_protect_carries(struct alex_db *db);
/* Does db->mark (the last probe's) name a log other than this one --
 * not this epoch's fence cut short, nor a removed predecessor's
 * (alex_protect_foreign)? */
int alex_protect_others(struct alex_db *db);
/* Before the log is removed: no mark of this log's on the base, and that
 * durable (a sync of the base file). */
int alex_protect_settle(struct alex_db *db);

#endif
