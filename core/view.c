/*
 * view.c - a memory image of a logical file for a caller that maps the base
 * file privately (the interposer's mmap): the image shows the base file as
 * it is below some offset, and only the blocks whose newest content lives
 * elsewhere -- the log, a spilled record, the open transaction, the fenced
 * block 0 -- are copied in.  The base below its limit is the committed file
 * for every block the log does not hold, so those copies are all it takes,
 * and a mapping of a large database costs what the log holds, not its size.
 */
#include <string.h>

#include "engine.h"
#include "io_over.h"

uint64_t alex_view_plain(const alex_db *db, enum alex_file f)
{
	/* an encrypted base file holds ciphertext: nothing of it is mapped
	 * as it is, every block is decrypted into the anonymous part */
	if (!alex_file_ok(f) || alex_view_fd(db, f) < 0 || db->xts)
		return 0;
	/* a staging engine: below's file as far as below maps it, and no
	 * further than this engine's own base (below) reaches */
	const alex_db *b = alex_io_over_below(db);
	if (b) {
		uint64_t p = alex_view_plain(b, f);
		return p < db->limit[f] ? p : db->limit[f];
	}
	return db->limit[f];
}

uint64_t alex_view_gen(const alex_db *db)
{
	/* a staging engine's view moves with the engine below's too */
	const alex_db *b = alex_io_over_below(db);
	return db->view_gen + (b ? alex_view_gen(b) : 0);
}

int alex_view_fd(const alex_db *db, enum alex_file f)
{
	/* a staging engine's base is the engine below, whose view is the file
	 * with below's blocks over it: that file (alex_view_fill lays both) */
	const alex_db *b = alex_io_over_below(db);
	if (b)
		return alex_view_fd(b, f);
	return alex_file_ok(f) ? db->base_fd[f] : -1;
}

/* Block blk's newest content into img at its offset, cut at end. */
static int put_block(alex_db *db, unsigned f, uint8_t *img, uint64_t blk, uint64_t end)
{
	uint64_t off = blk << ALEX_BLOCK_SHIFT;

	if (off >= end)
		return 0;
	size_t n = end - off < ALEX_BLOCK ? (size_t)(end - off) : ALEX_BLOCK;
	return alex_block_copy(db, f, blk, 0, n, img + off);
}

/* Every block of f in [first, past) that table m holds. */
static int put_held(alex_db *db, unsigned f, const struct alex_map *m, uint8_t *img,
		    uint64_t first, uint64_t past, uint64_t end)
{
	for (size_t i = 0; i < m->cap; i++) {
		uint64_t key = m->keys[i], blk;
		if (!key || alex_key_file(key) != f)
			continue;
		blk = alex_key_block(key);
		if (blk >= first && blk < past) {
			int err = put_block(db, f, img, blk, end);
			if (err)
				return err;
		}
	}
	return 0;
}

int alex_view_fill(alex_db *db, enum alex_file f, uint8_t *img, uint64_t plain, uint64_t from,
		   uint64_t to)
{
	if (!alex_file_ok(f))
		return ALEX_EINVAL;
	if (db->failed)
		return ALEX_EFAILED;
	/* nothing past the logical end: the image is zeros there */
	uint64_t end = to < db->size[f] ? to : db->size[f];
	uint64_t first = from >> ALEX_BLOCK_SHIFT;
	uint64_t past = (end + ALEX_BLOCK - 1) >> ALEX_BLOCK_SHIFT;
	uint64_t plain_blk = plain >> ALEX_BLOCK_SHIFT; /* whole base blocks below */
	int err = 0;

	if (first >= past)
		return 0;
	/* a range past plain (a mapping that grows) smaller than the tables:
	 * each of its blocks looked up, not the tables walked */
	if (first >= plain_blk && past - first <= db->map.cap + db->pending.cap + db->col.index.cap) {
		for (uint64_t b = first; b < past && !err; b++)
			err = put_block(db, f, img, b, end);
		return err;
	}
	/* A staging engine: its base is below's view -- the file, below's
	 * blocks over it -- as far as its own limit (past it, what it holds
	 * or zeros); then its own blocks over that. */
	alex_db *b = alex_io_over_below(db);
	if (b) {
		uint64_t lim = end < db->limit[f] ? end : db->limit[f];
		err = lim > from ? alex_view_fill(b, f, img, plain, from, lim) : 0;
		goto held;
	}
	/* the base past plain (the caller's anonymous part) up to its limit */
	uint64_t lim_blk = (db->limit[f] + ALEX_BLOCK - 1) >> ALEX_BLOCK_SHIFT;
	for (uint64_t b = first > plain_blk ? first : plain_blk; b < past && b < lim_blk && !err; b++)
		err = put_block(db, f, img, b, end);
	/* block 0 of the database: the base's may carry the fence */
	if (!err && f == ALEX_FILE_DB && first == 0 && plain_blk > 0)
		err = put_block(db, f, img, 0, end);
held:
	if (!err)
		err = put_held(db, f, &db->map, img, first, past, end);
	if (!err)
		err = put_held(db, f, &db->pending, img, first, past, end);
	if (!err)
		err = put_held(db, f, &db->col.index, img, first, past, end);
	return err;
}
