/*
 * read.c - the read path.  A block's newest content is found in this
 * order: the collector (written since the last record), the pending map
 * (spilled records of the open transaction), the map (committed records),
 * the base file below its limit, zeros.  Only the last two live on disk
 * before a checkpoint.
 */
#include <string.h>

#include "engine.h"
#include "log.h"
#include "protect.h"

static int p1_holds(const alex_db *db, const struct alex_loc *loc)
{
	const struct alex_page1 *p = &db->p1;
	return p->valid && p->loc.off == loc->off && p->loc.len == loc->len &&
	       p->loc.crc == loc->crc && p->loc.flags == loc->flags && p->epoch == db->hdr.epoch &&
	       p->salt == db->hdr.salt;
}

/* Page 1's kept image when block blk of f is page 1, the image is its
 * committed content now and holds its first `need` bytes, else NULL. */
static const uint8_t *kept_page1(alex_db *db, unsigned f, uint64_t blk, size_t need)
{
	if (f != ALEX_FILE_DB || blk != 0 || need > db->p1.len ||
	    alex_map_get(&db->pending, alex_key(f, 0)))
		return NULL; /* a spilled record's place may be written again */
	const struct alex_loc *loc = alex_map_get(&db->map, alex_key(f, 0));
	return loc && p1_holds(db, loc) ? db->p1.img : NULL;
}

/* Page 1's image as stored at loc (a committed record of this epoch: a
 * place in the log that is never written again in the epoch), its first
 * len bytes. */
void alex_page1_keep(alex_db *db, const struct alex_loc *loc, const uint8_t *img, uint32_t len)
{
	memcpy(db->p1.img, img, len);
	db->p1.len = len;
	db->p1.loc = *loc;
	db->p1.epoch = db->hdr.epoch;
	db->p1.salt = db->hdr.salt;
	db->p1.valid = 1;
}

/* The committed-or-spilled content of a block, ignoring the collector. */
int alex_block_load(alex_db *db, unsigned f, uint64_t blk, uint8_t *out)
{
	uint64_t key = alex_key(f, blk);
	const uint8_t *kept = kept_page1(db, f, blk, ALEX_BLOCK);
	const struct alex_loc *loc = alex_map_get(&db->pending, key);
	size_t got = 0;
	int err, committed = !loc;

	if (kept) {
		memcpy(out, kept, ALEX_BLOCK);
		return 0;
	}
	if (!loc)
		loc = alex_map_get(&db->map, key);
	/* only a committed record's place is never written again in the
	 * epoch; a spilled one's may be, after the transaction is dropped.
	 * Such a block is kept: the next commit's delta of it, or another
	 * read, needs no chain (page 1 also for SQLite's next look at it) */
	if (loc && committed) {
		if ((err = alex_log_read_kept(db, key, loc, out)))
			return err;
		if (key == alex_key(ALEX_FILE_DB, 0))
			alex_page1_keep(db, loc, out, ALEX_BLOCK);
		return 0;
	}
	if (loc)
		return alex_log_read_block(db, key, loc, out);
	uint64_t off = blk << ALEX_BLOCK_SHIFT;
	if (db->base_fd[f] >= 0 && off < db->limit[f]) {
		uint64_t want = db->limit[f] - off < ALEX_BLOCK ? db->limit[f] - off : ALEX_BLOCK;
		if ((err = db->io.ops->pread(db->io.ctx, db->base_fd[f], out, want, off, &got)))
			return err;
		if (f == ALEX_FILE_DB && blk == 0)
			alex_protect_unmask(out, got);
	}
	memset(out + got, 0, ALEX_BLOCK - got);
	return 0;
}

/* A slice of the database file's header, when the file holds it: with
 * nothing newer in the log, read as the header alone -- from the probe's
 * copy while that is good (db.h), else 100 bytes, not the block.  The
 * 100-byte read matters for a staging engine: its base is the engine
 * below, whose copy answers it.  0: the caller reads the block. */
static int base_head(alex_db *db, unsigned f, uint64_t blk, size_t in, size_t n, uint8_t *dst,
		     int *err)
{
	uint8_t h[ALEX_BASE_HDR];
	size_t got = 0;

	*err = 0;
	if (f != ALEX_FILE_DB || blk != 0 || in + n > ALEX_BASE_HDR || db->base_fd[f] < 0 ||
	    db->limit[f] < ALEX_BASE_HDR || alex_map_get(&db->pending, alex_key(f, 0)) ||
	    alex_map_get(&db->map, alex_key(f, 0)))
		return 0;
	if (__atomic_load_n(&db->bh.valid, __ATOMIC_RELAXED) && db->log_fd < 0) {
		memcpy(dst, db->bh.img + in, n);
		return 1;
	}
	if ((*err = db->io.ops->pread(db->io.ctx, db->base_fd[f], h, sizeof h, 0, &got)))
		return 1;
	memset(h + got, 0, sizeof h - got);
	alex_protect_unmask(h, got);
	memcpy(dst, h + in, n);
	return 1;
}

int alex_block_copy(alex_db *db, unsigned f, uint64_t blk, size_t in, size_t n, uint8_t *dst)
{
	uint8_t *tmp = db->scratch + ALEX_BLOCK;
	int64_t slot = alex_col_find(&db->col, alex_key(f, blk));
	int err;

	if (slot >= 0) {
		memcpy(dst, alex_col_slot(&db->col, (uint32_t)slot) + in, n);
		return 0;
	}
	if (n == ALEX_BLOCK)
		return alex_block_load(db, f, blk, dst);
	/* SQLite's change-counter read at every transaction: the slice */
	const uint8_t *kept = kept_page1(db, f, blk, in + n);
	if (kept) {
		memcpy(dst, kept + in, n);
		return 0;
	}
	if (base_head(db, f, blk, in, n, dst, &err))
		return err;
	if ((err = alex_block_load(db, f, blk, tmp)))
		return err;
	memcpy(dst, tmp + in, n);
	return 0;
}

static int read_once(alex_db *db, enum alex_file f, void *buf, size_t len, uint64_t off,
		     size_t *got)
{
	uint8_t *dst = buf;
	size_t done = 0;
	int err;

	*got = 0;
	if (!alex_file_ok(f))
		return ALEX_EINVAL;
	if (off >= db->size[f])
		return 0;
	if (len > db->size[f] - off)
		len = (size_t)(db->size[f] - off);
	while (done < len) {
		uint64_t pos = off + done, blk = pos >> ALEX_BLOCK_SHIFT;
		size_t in = (size_t)(pos & (ALEX_BLOCK - 1));
		size_t n = ALEX_BLOCK - in < len - done ? ALEX_BLOCK - in : len - done;

		if ((err = alex_block_copy(db, f, blk, in, n, dst + done)))
			return err;
		done += n;
	}
	db->st.reads++;
	db->st.read_bytes += done;
	*got = done;
	return 0;
}

/*
 * A block that fails its crc may have been overwritten: another process
 * checkpointed and started a new epoch while this engine's map still
 * pointed into the old one (WAL mode, where a reader holds no lock that
 * keeps checkpoints out).  SQLite never checkpoints pages an active reader
 * still needs, so the base file then holds what the block was: catch up
 * and read again.  A block that is bad after that is damage.
 */
int alex_read(alex_db *db, enum alex_file f, void *buf, size_t len, uint64_t off, size_t *got)
{
	/* A failed engine may have lost its map halfway (a checkpoint that
	 * could not begin the next epoch): what it would read is not known
	 * to be the database.  An error, not a wrong page; a reopen recovers. */
	if (db->failed) {
		*got = 0;
		return ALEX_EFAILED;
	}
	int err = read_once(db, f, buf, len, off, got);
	/* Again while the epoch moves: a read with no lock held (SQLite's
	 * header read at its open) beside a FULL process, which merges a
	 * staging log at every commit and begins its next epoch at the start
	 * of the log, can find the block written over again before it reads
	 * it once more (review: "disk I/O error" at connect, 3 opens in 205).
	 * Bounded: a bad block in an epoch that stays is damage. */
	for (int tries = 0; err == ALEX_EBADBLOCK && tries < 16 && !db->failed &&
			    !alex_txn_open(db); tries++) {
		uint64_t epoch = db->hdr.epoch;
		if (alex_reload(db, 0, 0) != 0 || db->hdr.epoch == epoch)
			break;
		err = read_once(db, f, buf, len, off, got);
	}
	return err;
}

/* From the interposer's lock hooks, which may not hold the caller's lock
 * on db (a read under it overlaps the release: either answer is right). */
void alex_base_hdr_forget(alex_db *db)
{
	__atomic_store_n(&db->bh.valid, 0, __ATOMIC_RELAXED);
}

int alex_size(alex_db *db, enum alex_file f, uint64_t *size)
{
	if (!alex_file_ok(f))
		return ALEX_EINVAL;
	*size = db->size[f];
	return 0;
}
