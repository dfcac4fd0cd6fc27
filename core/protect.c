/*
 * protect.c - keeping SQLite without ALEX away from a database whose newest
 * pages are still in the log.
 *
 * Before the first record of an epoch is written, the base file is marked
 * and the mark is synced:
 *  - an SQLite database gets byte 19 of its header (the read version, 1 or
 *    2) set to ALEX_MARK; SQLite refuses a file whose read version is above
 *    2 ("file is not a database") rather than read it;
 *  - an empty file gets a placeholder header that is not SQLite's, so SQLite
 *    refuses it too instead of treating it as a new, empty database.
 * The same record carries block 0, so while the log is dirty the true page 1
 * comes from the log.  Should the base's block 0 be read (a crash after the
 * mark, before any commit), byte 19 is restored from byte 18, which SQLite
 * always keeps equal to it, and a placeholder reads as an empty file.  A
 * checkpoint writes block 0 back, which removes the mark.
 */
#include <string.h>

#include "internal.h"

static const char sqlite_magic[16] = "SQLite format 3";
static const char placeholder[16] = "ALEX-log-pending";

#define HDR 100u

/*
 * The placeholder goes into an empty file, so a crash can leave any part of
 * it: a file of at most its length whose every byte is either the
 * placeholder's or zero.  (No SQLite database is that short.)
 */
static int is_placeholder(const uint8_t *h, size_t got, uint64_t size)
{
	if (size > HDR || got != size)
		return 0;
	for (size_t i = 0; i < got; i++)
		if (h[i] && (i >= 16 || h[i] != (uint8_t)placeholder[i]))
			return 0;
	return 1;
}

int alex_protect_apply(uint8_t *blk0, size_t len)
{
	if (len < HDR || memcmp(blk0, sqlite_magic, 16) != 0 || blk0[19] > 2)
		return 0;
	blk0[19] = ALEX_MARK;
	return 1;
}

int alex_protect_probe(struct alex_db *db, uint64_t *size)
{
	uint8_t h[HDR];
	size_t got = 0;
	int err;

	db->base_marked = 0;
	if (db->base_fd[ALEX_FILE_DB] < 0 || *size == 0)
		return 0;
	if ((err = db->io.ops->pread(db->io.ctx, db->base_fd[ALEX_FILE_DB], h, HDR, 0, &got)))
		return err;
	if (is_placeholder(h, got, *size)) {
		db->base_marked = 2;
		*size = 0; /* nothing of it is database content */
	} else if (got >= 20 && memcmp(h, sqlite_magic, 16) == 0 && h[19] == ALEX_MARK) {
		db->base_marked = 1;
	}
	return 0;
}

void alex_protect_unmask(uint8_t *blk0, size_t len)
{
	if (len >= 20 && memcmp(blk0, sqlite_magic, 16) == 0 && blk0[19] == ALEX_MARK)
		blk0[19] = blk0[18];
}

int alex_protect_mark(struct alex_db *db)
{
	const struct alex_io_ops *o = db->io.ops;
	int fd = db->base_fd[ALEX_FILE_DB], err;
	uint8_t h[HDR];
	size_t got = 0;
	uint64_t phys;

	if (!db->cfg.protect_base || db->base_marked || fd < 0)
		return 0;
	if ((err = o->size(db->io.ctx, fd, &phys)))
		return err;
	if (phys == 0 && db->climit[ALEX_FILE_DB] == 0) {
		memset(h, 0, HDR);
		memcpy(h, placeholder, 16);
		if ((err = o->pwrite(db->io.ctx, fd, h, HDR, 0)))
			return err;
		db->base_marked = 2;
	} else {
		if ((err = o->pread(db->io.ctx, fd, h, HDR, 0, &got)))
			return err;
		if (got < HDR || memcmp(h, sqlite_magic, 16) != 0 || db->climit[ALEX_FILE_DB] < HDR ||
		    h[19] > 2)
			return 0; /* not an SQLite database: nothing to protect */
		uint8_t mark = ALEX_MARK;
		if ((err = o->pwrite(db->io.ctx, fd, &mark, 1, 19)))
			return err;
		db->base_marked = 1;
	}
	if ((err = o->fdatasync(db->io.ctx, fd))) {
		/* the mark may or may not be there: both are safe to read */
		return err;
	}
	return 0;
}
