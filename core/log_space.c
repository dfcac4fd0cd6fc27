/*
 * log_space.c - the log's written space: grown with zeros ahead of the
 * records, reserved as SQLite writes pages, given back when the file
 * system runs full.
 */
#include <errno.h>
#include <stdint.h>

#include "db.h"
#include "log.h"
#include "shm.h"

/* How much a growth step may take of what is left on the file system. */
static uint64_t step_limit(struct alex_db *db, int fd)
{
	uint64_t avail;

	if (db->io.ops->space(db->io.ctx, fd, &avail))
		return UINT64_MAX;
	db->space_avail = avail;
	return avail / 16;
}

/*
 * Grows the log by writing zeros, not with fallocate: an fallocated block
 * is "unwritten", and the first fdatasync after writing into it must also
 * commit the extent's conversion to the filesystem journal -- a second
 * device flush per commit.  Space that was written once is overwritten in
 * place forever after (epochs reuse it), so a commit's fdatasync flushes
 * data only (WALDIO's incremental preallocation, measured ~40 % more
 * commits/s on ext4 here).  Steps double from 64 KiB up to prealloc_bytes,
 * so a small database keeps a small log, and never take more than a
 * sixteenth of the free space, so a nearly full disk is not filled by zeros.
 * A step is written inside the commit that needs it: 1 MiB of zeros was the
 * slowest FULL insert (alex-bench insert, 1.07-1.14 ms in three runs of
 * three); 256 KiB steps, four times as many, halved the slowest (530 us in
 * two runs of three, the third 1.03 ms) at the same device bytes.
 *
 * NORMAL syncs once per half window, not per commit, so the conversion cost
 * that the zeros save is paid there once per sync -- while the zeros would
 * be written to the device by the sync that finds them ahead of the
 * records, and again under them (alex-bench: 37 MB against 21 MB for 5000
 * inserts), and each step's zeros were a stall inside a commit.  Its log
 * space is reserved with fallocate instead: unwritten, but reserved, so a
 * full disk still shows while SQLite writes its pages (SQLITE_FULL), not at
 * the commit's record (review: a size change alone reserved nothing, and
 * a disk that filled failed the commit after its journal was gone).  Zeros
 * where the file system has no fallocate.
 */
static const uint8_t zeros[64 << 10];

int alex_log_grow(struct alex_db *db, int fd, uint64_t from, uint64_t to)
{
	int err;

	for (uint64_t off = from; off < to; off += sizeof zeros) {
		uint64_t n = to - off < sizeof zeros ? to - off : sizeof zeros;
		if ((err = alex_log_pwrite(db, fd, zeros, n, off)))
			return err;
	}
	return 0;
}

/* [from, to) of the log reserved: unwritten in NORMAL mode (above), where
 * the file system can, else written zeros. */
static int fill(struct alex_db *db, uint64_t from, uint64_t to)
{
	/* a log that takes a staging log's merges is synced once a window,
	 * like NORMAL's: the conversion is paid once a window there too, and
	 * zeros ahead of a large merge were as many device bytes as it */
	if ((db->cfg.sync == ALEX_SYNC_NORMAL || db->merged_windows) && !db->no_allocate) {
		int err = alex_log_allocate(db, db->log_fd, from, to - from);
		if (err != EOPNOTSUPP && err != ENOSYS)
			return err;
		db->no_allocate = 1;
	}
	return alex_log_grow(db, db->log_fd, from, to);
}

int alex_log_prealloc(struct alex_db *db, uint64_t end)
{
	if (end <= db->alloc_end)
		return 0;
	uint64_t have = db->alloc_end - ALEX_LOG_DATA, step = have < (64u << 10) ? (64u << 10) : have;
	if (!have)
		return 0; /* a new log: its first record extends it (alex_log_append) */
	uint64_t room = step_limit(db, db->log_fd);
	if (step > db->cfg.prealloc_bytes)
		step = db->cfg.prealloc_bytes;
	if (step > room)
		step = room < ALEX_BLOCK ? ALEX_BLOCK : room & ~(uint64_t)(ALEX_BLOCK - 1);
	uint64_t want = db->alloc_end + (end - db->alloc_end + step - 1) / step * step;
	int err = fill(db, db->alloc_end, want);
	if ((err == ENOSPC || err == EDQUOT) && want > alex_roundup_block(end)) {
		/* a full disk may still have room for what is needed now */
		want = alex_roundup_block(end);
		err = fill(db, db->alloc_end, want);
	}
	if (err)
		return err; /* alloc_end stays: the next try writes it all again */
	db->alloc_end = want;
	return 0;
}

int alex_log_reserve(struct alex_db *db, uint32_t blocks)
{
	if (db->log_fd < 0 || db->log_stub || !db->epoch_live)
		return 0; /* the log is made, or its epoch begun, by the record */
	uint64_t rec = alex_roundup_block(ALEX_REC_FIXED +
					  (uint64_t)blocks * (ALEX_REC_ENTRY + ALEX_BLOCK));
	return alex_log_prealloc(db, db->append_off + rec);
}

int alex_log_trim(struct alex_db *db)
{
	uint64_t keep = alex_roundup_block(db->append_off > ALEX_LOG_DATA ? db->append_off
									      : ALEX_LOG_DATA + ALEX_BLOCK);
	int err;

	if (db->log_fd < 0 || db->log_stub || db->alloc_end <= keep)
		return 0;
	if ((err = alex_log_truncate(db, db->log_fd, keep)))
		return err;
	db->alloc_end = keep;
	return 0;
}
