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
#include <stdlib.h>
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

int alex_protect_base_header(struct alex_db *db, uint8_t out[ALEX_BASE_HDR])
{
	int fd = db->base_fd[ALEX_FILE_DB], err;
	uint64_t size = 0;
	size_t got = 0;

	memset(out, 0, ALEX_BASE_HDR);
	if (fd < 0)
		return 0;
	if ((err = db->io.ops->size(db->io.ctx, fd, &size)) ||
	    (size && (err = db->io.ops->pread(db->io.ctx, fd, out, ALEX_BASE_HDR, 0, &got))))
		return err;
	if (is_placeholder(out, got, size))
		memset(out, 0, ALEX_BASE_HDR);
	alex_protect_unmask(out, got);
	return 0;
}

/*
 * A log copied beside another database, or a database file replaced while
 * its log held pages, would otherwise be replayed over a file it does not
 * belong to.  The base may be as the epoch began (the header's copy) or,
 * after a checkpoint cut short, partly as the log describes it: its newest
 * block 0, or -- if the epoch truncated block 0 away -- the base's own
 * bytes below the logical size and zeros from there.  Byte by byte, so a
 * write of block 0 torn inside the header is accepted too.
 */
int alex_protect_check_base(struct alex_db *db)
{
	uint8_t now[ALEX_BASE_HDR], *blk;
	const struct alex_loc *l;
	int err;

	if (!(db->hdr.flags & ALEX_HDR_BASE) || !db->epoch_commits)
		return 0;
	if ((err = alex_protect_base_header(db, now)))
		return err;
	if (memcmp(now, db->hdr.base, ALEX_BASE_HDR) == 0)
		return 0;
	if (!(blk = malloc(ALEX_BLOCK)))
		return ALEX_ENOMEM;
	if ((l = alex_map_get(&db->map, alex_key(ALEX_FILE_DB, 0)))) {
		if ((err = alex_log_read_block(db, l, blk))) {
			free(blk);
			return err;
		}
		alex_protect_unmask(blk, ALEX_BLOCK);
	} else {
		uint64_t end = db->climit[ALEX_FILE_DB] < db->csize[ALEX_FILE_DB]
				       ? db->climit[ALEX_FILE_DB] : db->csize[ALEX_FILE_DB];
		for (unsigned i = 0; i < ALEX_BASE_HDR; i++)
			blk[i] = i < end ? now[i] : 0;
	}
	for (unsigned i = 0; i < ALEX_BASE_HDR && !err; i++)
		if (now[i] != db->hdr.base[i] && now[i] != blk[i])
			err = ALEX_EFOREIGN;
	free(blk);
	return err;
}
