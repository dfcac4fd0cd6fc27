/*
 * write.c - the write side of a transaction: blocks into the collector,
 * spills when it is full, truncation, and what must precede an epoch's
 * first record (the log, the base's fence).
 */
#include <errno.h>
#include <string.h>

#include "ckpt.h"
#include "engine.h"
#include "log.h"
#include "protect.h"
#include "recover.h"

int alex_txn_open(const alex_db *db)
{
	if (db->col.used || db->pending.n || db->txn_truncated)
		return 1;
	for (int f = 0; f < ALEX_NFILES; f++)
		if (db->size[f] != db->csize[f] || db->trunc[f] != ALEX_NO_TRUNC)
			return 1;
	return 0;
}

/*
 * The disk is full: copy what the log holds into the database file, so
 * that the log's space can be written again, before SQLite is told.  Not
 * while a spilled or truncating transaction is open (a checkpoint cannot
 * run then).  The caller holds SQLite's write lock, as for any write.
 */
int alex_make_room(alex_db *db)
{
	if (!db->epoch_commits || db->pending.n || db->txn_truncated || db->failed ||
	    db->ckpt_held)
		return ALEX_EBUSY;
	db->st.space_checkpoints++;
	/* the next epoch at 8192, in the space the log has: one that follows
	 * would need the log to grow, which is what just failed (a quota, which
	 * the free space does not show) */
	db->making_room = 1;
	int err = alex_ckpt_run(db);
	db->making_room = 0;
	if (!err)
		db->space_avail = 0; /* look again before the next growth */
	return err;
}

/*
 * Before the first record of an epoch, a spill or a commit: the log exists,
 * its epoch takes records, and the base file carries the epoch's fence,
 * durably (protect.c).  The fence is what says, after a crash, that the
 * epoch before was applied -- so its records may now be overwritten -- and
 * it keeps SQLite without ALEX out while the log holds committed pages the
 * base does not.  The header then says whether the epoch is fenced and
 * records the base as it is now; alex_log_append writes it with the record,
 * under the record's sync.
 */
int alex_epoch_begin(alex_db *db, int sync)
{
	uint8_t base[ALEX_BASE_HDR];
	int err;

	if ((err = alex_protect_base_header(db, base)))
		return err;
	if ((err = alex_log_begin_epoch(db, sync, base)) != ALEX_EADOPT)
		return err;
	/* another process made the log first: use theirs */
	if ((err = alex_recover(db)) || db->epoch_live)
		return err;
	err = alex_log_begin_epoch(db, sync, base);
	return err == ALEX_EADOPT ? ALEX_EBUSY : err; /* a third made it again */
}

int alex_epoch_ensure(alex_db *db)
{
	int err;

	/* a staging engine: the engine below fences the database first, and
	 * the point it then stands at is what this epoch records (io.h) */
	if (db->io.ops->prepare && !(db->epoch_started && db->append_off > alex_data_off(db)) &&
	    (err = db->io.ops->prepare(db->io.ctx)))
		return err;
	if (!db->epoch_live && (err = alex_epoch_begin(db, 0)))
		return err;
	/* The base showing the fence is not enough: a process that died (or
	 * failed) between the mark's write and its sync or write-out leaves it
	 * in the page cache only.  Once a record of the epoch exists, its
	 * writer had made the mark durable, or written it out for the next
	 * sync to carry. */
	if (db->epoch_started && db->append_off > alex_data_off(db))
		return 0;
	/* a carried epoch: its fence is the one the epoch before it wrote
	 * records under, durable since (carry.c) */
	if (db->epoch_started && alex_hdr_carried(&db->hdr))
		return 0;
	if (db->cfg.protect_base) {
		if ((err = alex_protect_mark(db, alex_protect_may_ride(db))))
			return err;
		/* fenced only if page 1 can carry the mark at the checkpoint:
		 * an SQLite database, not other bytes over a placeholder */
		int64_t s0 = alex_col_find(&db->col, alex_key(ALEX_FILE_DB, 0));
		if (db->mark.kind == ALEX_MARK_SQLITE ||
		    (db->mark.kind == ALEX_MARK_PLACEHOLDER &&
		     (!db->size[ALEX_FILE_DB] ||
		      (s0 >= 0 && alex_protect_markable(alex_col_slot(&db->col, (uint32_t)s0),
							ALEX_BLOCK))))) {
			db->hdr.flags |= ALEX_HDR_FENCED;
			db->st.fenced_epochs++;
		} else {
			db->hdr.flags &= ~ALEX_HDR_FENCED; /* a new log's guess was wrong */
		}
	}
	if ((err = alex_protect_base_header(db, db->hdr.base)))
		return err;
	db->epoch_started = 1;
	return 0;
}

/*
 * Before the first commit record of an epoch: it carries block 0, so that
 * while the base is marked the true page 1 comes from the log.
 */
int alex_txn_carry_page1(alex_db *db)
{
	uint8_t *slot;

	if (db->own_commits || !db->cfg.protect_base || !db->size[ALEX_FILE_DB] ||
	    alex_col_find(&db->col, alex_key(ALEX_FILE_DB, 0)) >= 0)
		return 0;
	return alex_slot_for(db, ALEX_FILE_DB, 0, 0, &slot);
}

/* Writes the open transaction's collected blocks as a spill record. */
static int spill(alex_db *db)
{
	uint32_t len, n;
	uint64_t off;
	int err;

	if ((err = alex_epoch_ensure(db)) || (err = alex_stage_build(db, 0, &len, &n)) ||
	    (err = alex_log_append(db, len, &off)))
		return err;
	db->unsynced_spill = 1;
	db->unsynced_seq++;
	db->st.spills++;
	return alex_stage_publish(db, &db->pending, off, len, n);
}

/* The collector slot for (f, blk), made on first touch.  A block that will
 * not be overwritten whole is first filled with its current content. */
int alex_slot_for(alex_db *db, unsigned f, uint64_t blk, int whole, uint8_t **out)
{
	uint64_t key = alex_key(f, blk);
	int64_t slot = alex_col_find(&db->col, key);
	int err;

	if (slot >= 0) {
		db->st.dedup_hits++;
		*out = alex_col_slot(&db->col, (uint32_t)slot);
		return 0;
	}
	if (db->col.used >= db->col.max) {
		uint32_t live = 0;
		for (uint32_t i = 0; i < db->col.used; i++)
			live += db->col.slot_key[i] != 0;
		/* a truncation dropped every slot: reuse them, write nothing */
		if (!live)
			alex_col_clear(&db->col);
		else if ((err = spill(db)))
			return err;
	}
	/* room in the log for the record this block will be part of; on a full
	 * disk, a checkpoint may give the log's space back first */
	if ((err = alex_log_reserve(db, db->col.used + 1)) && alex_disk_full(err) && alex_make_room(db) == 0)
		err = alex_log_reserve(db, db->col.used + 1);
	if (err)
		return err;
	if ((slot = alex_col_add(&db->col, key)) < 0)
		return ALEX_ENOMEM;
	*out = alex_col_slot(&db->col, (uint32_t)slot);
	if (!whole && (err = alex_block_load(db, f, blk, *out))) {
		alex_map_del(&db->col.index, key);
		db->col.slot_key[slot] = 0;
		return err;
	}
	return 0;
}

/* May file f change now? */
static int writable(const alex_db *db, enum alex_file f)
{
	if (db->failed)
		return ALEX_EFAILED;
	if (db->cfg.readonly)
		return EROFS;
	if (db->doubt)
		return ALEX_EBUSY; /* a record would go over the undecided group */
	if (!alex_file_ok(f) || (db->cfg.db_only && f != ALEX_FILE_DB))
		return ALEX_EINVAL;
	return 0;
}

int alex_write(alex_db *db, enum alex_file f, const void *buf, size_t len, uint64_t off)
{
	const uint8_t *src = buf;
	size_t done = 0;
	int err;

	if ((err = writable(db, f)))
		return err;
	if (off + len < off || off + len > ALEX_MAX_FILE)
		return EFBIG;
	while (done < len) {
		uint64_t pos = off + done, blk = pos >> ALEX_BLOCK_SHIFT;
		size_t in = (size_t)(pos & (ALEX_BLOCK - 1));
		size_t n = ALEX_BLOCK - in < len - done ? ALEX_BLOCK - in : len - done;
		uint8_t *slot;

		if ((err = alex_slot_for(db, f, blk, n == ALEX_BLOCK, &slot))) {
			/* The log is full.  A write that changes nothing needs no
			 * room -- SQLite rolling back after SQLITE_FULL rewrites
			 * committed pages, and must be able to. */
			uint8_t *cur = db->scratch + ALEX_BLOCK;
			if ((err != ENOSPC && err != EDQUOT) || alex_block_load(db, f, blk, cur) ||
			    memcmp(cur + in, src + done, n) != 0)
				return err;
			done += n;
			continue;
		}
		memcpy(slot + in, src + done, n);
		done += n;
		if (pos + n > db->size[f])
			db->size[f] = pos + n;
	}
	db->st.writes++;
	db->st.write_bytes += len;
	return 0;
}

int alex_truncate(alex_db *db, enum alex_file f, uint64_t size)
{
	int err;

	if ((err = writable(db, f)))
		return err;
	if (size > ALEX_MAX_FILE)
		return EFBIG;
	if (size < db->size[f]) {
		uint64_t first = (size + ALEX_BLOCK - 1) >> ALEX_BLOCK_SHIFT;
		uint8_t *cut = NULL;
		/* The cut block's tail must read as zeros if the file grows.
		 * Its slot comes first: if that fails, nothing has changed. */
		if ((size & (ALEX_BLOCK - 1)) &&
		    (err = alex_slot_for(db, f, size >> ALEX_BLOCK_SHIFT, 0, &cut)))
			return err;
		alex_col_trunc(&db->col, f, first);
		alex_map_trunc(&db->pending, f, first);
		alex_map_trunc(&db->map, f, first);
		if (size < db->limit[f])
			db->limit[f] = size;
		if (size < db->trunc[f])
			db->trunc[f] = size;
		if (size < db->txn_cut[f])
			db->txn_cut[f] = size;
		db->size[f] = size;
		db->txn_truncated = 1;
		if (cut) {
			size_t in = (size_t)(size & (ALEX_BLOCK - 1));
			memset(cut + in, 0, ALEX_BLOCK - in);
		}
	}
	db->size[f] = size;
	return 0;
}
