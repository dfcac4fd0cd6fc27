/*
 * ckpt.c - checkpoint: copy every committed block from the log into its
 * base file in offset order, give the file its logical size, fdatasync it,
 * and only then begin the next epoch and take the fence off.
 *
 * One fdatasync per base file is the whole cost.  Until the fence comes off
 * the base is refused by SQLite without ALEX and recovery reads the log, so
 * any subset of the copy's unsynced writes reaching the disk is repaired by
 * copying the same bytes again (idempotent).  Block 0 goes down marked.  The
 * next epoch's header and the unmark need no sync of their own: a base
 * without this epoch's fence holds everything the epoch committed, because
 * the unmark is written only after the sync returned (protect.c).  An epoch
 * that is not fenced (format 1, or a base that is not an SQLite database)
 * syncs the next epoch's header instead.
 *
 * A marked file is never cut below its first block before the copy is
 * durable (its mark would go with it): bytes a truncation removed there are
 * written as zeros, and the size is set at the end.
 *
 * Only what changed reaches the device.  Each block is compared with the
 * base's, 512-byte sector by sector: a block the base already holds is
 * not written, and one with a few sectors changed has just those written
 * past the page cache (O_DIRECT, ALEX_CKPT_DIRECT), all of them in flight
 * at once (pwrite_many); a block mostly changed goes through the page
 * cache whole.  Through the page cache, a 100-byte change of a page costs
 * 4 KiB of device writes at the next writeback, whatever the log held.
 * Nothing else changes: until the sync, any subset of the sectors may
 * have reached the disk, as any subset of buffered blocks may.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"
#include "db.h"
#include "dbg.h"
#include "engine.h"
#include "io.h"
#include "io_over.h"
#include "known.h"
#include "log.h"
#include "protect.h"

#define RUN_BLOCKS 64u /* blocks per base-file pwrite */

static int base_file(alex_db *db, unsigned f, uint64_t *phys)
{
	const struct alex_io_ops *o = db->io.ops;
	int err;

	if (db->base_fd[f] < 0) {
		if ((err = o->open(db->io.ctx, db->path[f], ALEX_O_CREAT, &db->base_fd[f])))
			return err;
		if ((err = o->sync_dir(db->io.ctx, db->path[f])))
			return err;
	}
	return o->size(db->io.ctx, db->base_fd[f], phys);
}

/* Zeros over [from, to) of file f, except blocks the log holds (written
 * after): what a truncation removed must not come back from the base. */
static int zero_gap(alex_db *db, unsigned f, uint64_t from, uint64_t to, uint8_t *buf)
{
	memset(buf, 0, ALEX_BLOCK);
	for (uint64_t pos = from; pos < to;) {
		uint64_t blk = pos >> ALEX_BLOCK_SHIFT, end = (blk + 1) << ALEX_BLOCK_SHIFT;
		if (end > to)
			end = to;
		if (!alex_map_get(&db->map, alex_key(f, blk))) {
			int err = db->io.ops->pwrite(db->io.ctx, db->base_fd[f], buf, end - pos, pos);
			if (err)
				return err;
		}
		pos = end;
	}
	return 0;
}

#define SECTORS (ALEX_BLOCK / ALEX_SECTOR)
#define DIRECT_MAX 6u /* changed sectors of a block still written direct */
#define BATCH 128u    /* sectors queued between two waits (64 KiB) */
/* Pieces or fewer in a flush that go through the page cache.  Direct
 * writes wait for the device: in a checkpoint that a commit runs, 4 of
 * them took 0.6 ms of its 2.4 (FULL mode's early checkpoints, alex-bench
 * insert) to spare some 14 KiB of writes; so a commit's checkpoint writes
 * direct only from FEW_IN_COMMIT pieces on (at most 56 KiB spared below). */
#define FEW 2u
#define FEW_IN_COMMIT 16u

/* A checkpoint's direct writes into one base file. */
struct direct {
	int dfd;  /* -1: every block goes through the page cache */
	int fd;   /* the file's own descriptor, should the direct one fail */
	uint8_t *buf; /* BATCH sectors, aligned for O_DIRECT */
	struct alex_piece p[BATCH];
	size_t np, used; /* pieces, and sectors of buf they hold */
	size_t few;      /* pieces or fewer in a flush: the page cache */
};

/* The queued pieces one by one through descriptor fd. */
static int plain(alex_db *db, int fd, const struct direct *d)
{
	int err = 0;

	for (size_t i = 0; i < d->np && !err; i++)
		err = db->io.ops->pwrite(db->io.ctx, fd, d->p[i].buf, d->p[i].n, d->p[i].off);
	return err;
}

/* Writes what is queued and waits for it.  A file system that refuses
 * writes this small (a disk of 4096-byte sectors), or a kernel that cannot
 * check its page cache after them (io_many.c), gets the same pieces
 * through the page cache, and no more direct writes from this engine. */
static int direct_flush(alex_db *db, struct direct *d)
{
	const struct alex_io_ops *o = db->io.ops;
	int err;

	if (!d->np)
		return 0;
	if (d->np <= d->few) {
		/* a short process's close: waiting for the device here, and
		 * for a ring, cost more time (8 % of a one-row sqlite3 run)
		 * than the bytes are worth (7 % of its device bytes) */
		err = plain(db, d->fd, d);
	} else {
		err = o->pwrite_many ? o->pwrite_many(db->io.ctx, d->dfd, d->fd, d->p, d->np)
				     : plain(db, d->dfd, d);
		if (err == EINVAL || err == EOPNOTSUPP) {
			db->st.ckpt_direct_refused = err;
			d->dfd = -1; /* the rest of this checkpoint too */
			err = plain(db, d->fd, d);
		} else if (!err) {
			db->st.checkpoint_sectors += d->used;
		}
	}
	d->np = d->used = 0;
	return err;
}

static int direct_queue(alex_db *db, struct direct *d, const uint8_t *sector, uint64_t off)
{
	int err;

	if (d->used == BATCH && (err = direct_flush(db, d)))
		return err;
	uint8_t *at = d->buf + d->used++ * ALEX_SECTOR;
	struct alex_piece *last = d->np ? &d->p[d->np - 1] : NULL;
	memcpy(at, sector, ALEX_SECTOR);
	if (last && last->off + last->n == off && (const uint8_t *)last->buf + last->n == at)
		last->n += ALEX_SECTOR;
	else
		d->p[d->np++] = (struct alex_piece){ at, ALEX_SECTOR, off };
	return 0;
}

/* Writes blocks [from, to) of a run held in buf, first the run's first
 * block, through the page cache. */
static int buffered(alex_db *db, unsigned f, const uint8_t *buf, uint64_t first, size_t from,
		    size_t to)
{
	if (from >= to)
		return 0;
	db->st.checkpoint_blocks += to - from;
	return db->io.ops->pwrite(db->io.ctx, db->base_fd[f], buf + from * ALEX_BLOCK,
				  (to - from) * ALEX_BLOCK, (first + from) << ALEX_BLOCK_SHIFT);
}

/* Writes a run of blocks, buf, against what the base holds there: blocks
 * it holds already not at all, blocks with at most DIRECT_MAX sectors
 * changed by those sectors (queued in d), the rest whole through the page
 * cache.  keep0: block 0 goes whole (it carries the mark, protect.c). */
static int write_run(alex_db *db, unsigned f, const uint8_t *buf, uint8_t *old, uint64_t first,
		     size_t run, int keep0, struct direct *d)
{
	size_t got = 0, from = 0;
	int err;

	if (d->dfd < 0)
		return buffered(db, f, buf, first, 0, run);
	if ((err = db->io.ops->pread(db->io.ctx, db->base_fd[f], old, run * ALEX_BLOCK,
				     first << ALEX_BLOCK_SHIFT, &got)))
		return err;
	memset(old + got, 0, run * ALEX_BLOCK - got); /* past the end: zeros */
	for (size_t b = 0; b < run; b++) {
		const uint8_t *nb = buf + b * ALEX_BLOCK, *ob = old + b * ALEX_BLOCK;
		unsigned changed = 0, mask = 0;
		for (unsigned k = 0; k < SECTORS; k++)
			if (memcmp(nb + k * ALEX_SECTOR, ob + k * ALEX_SECTOR, ALEX_SECTOR)) {
				changed++;
				mask |= 1u << k;
			}
		if ((keep0 && first + b == 0) || changed > DIRECT_MAX)
			continue; /* part of the buffered stretch [from, b] */
		if ((err = buffered(db, f, buf, first, from, b)))
			return err;
		from = b + 1;
		for (unsigned k = 0; k < SECTORS; k++)
			if ((mask >> k & 1) &&
			    (err = direct_queue(db, d, nb + k * ALEX_SECTOR,
						((first + b) << ALEX_BLOCK_SHIFT) + k * ALEX_SECTOR)))
				return err;
		db->st.checkpoint_blocks += changed != 0;
	}
	return buffered(db, f, buf, first, from, run);
}

/* Writes the committed blocks keys[0..n) of file f into its base file, in
 * runs of consecutive blocks.  A marked database's block 0 goes out with
 * the mark: raw's bytes (the slow way), or the fence applied. */
static int copy_blocks(alex_db *db, unsigned f, const uint64_t *keys, size_t n, uint8_t *buf,
		       uint8_t *old, const uint8_t *raw, int marked, struct direct *d)
{
	int err;

	for (size_t i = 0; i < n;) {
		uint64_t first = alex_key_block(keys[i]);
		size_t run = 0;
		while (i + run < n && run < RUN_BLOCKS && alex_key_block(keys[i + run]) == first + run) {
			const struct alex_loc *l = alex_map_get(&db->map, keys[i + run]);
			if ((err = alex_log_read_block(db, keys[i + run], l, buf + run * ALEX_BLOCK)))
				return err;
			run++;
		}
		if (f == ALEX_FILE_DB && first == 0 && marked) {
			/* never the true page 1 before the rest is durable */
			if (raw)
				memcpy(buf, raw, ALEX_BASE_HDR);
			else
				alex_protect_apply(db, buf, ALEX_BLOCK);
		}
		if ((err = write_run(db, f, buf, old, first, run, f == ALEX_FILE_DB, d)))
			return err;
		i += run;
	}
	return direct_flush(db, d);
}

/* Whether this checkpoint may write sectors direct: asked for, possible
 * here, not refused before, and no failed copy since the last good one
 * (run_once: the page cache may show bytes the disk lacks). */
static int direct_allowed(const alex_db *db)
{
	return db->cfg.ckpt_direct && db->io.ops->open_direct && !db->st.ckpt_direct_refused &&
	       !db->ckpt_doubt;
}

/* The direct descriptor for file f's checkpoint, when it pays and the
 * file system lets us (none for SQLite's journal and WAL, none with a key:
 * the encrypting layer has no open_direct).  Made once and kept for the
 * engine's life (free_db): closing it would drop every POSIX lock the
 * process holds on the database, SQLite's included -- the first version
 * closed it after each checkpoint, and multiproc.sh lost updates. */
static void direct_open(alex_db *db, unsigned f, size_t n, struct direct *d, uint8_t *bounce,
			size_t few)
{
	int err;

	d->dfd = -1;
	d->fd = db->base_fd[f];
	d->buf = bounce;
	d->np = d->used = 0;
	d->few = few;
	if (!bounce || f != ALEX_FILE_DB || !n || !direct_allowed(db))
		return;
	if (db->base_dfd < 0 && (err = db->io.ops->open_direct(db->io.ctx, d->fd, &db->base_dfd))) {
		db->st.ckpt_direct_refused = err; /* tmpfs before Linux 6.6: EINVAL */
		db->base_dfd = -1;
	}
	d->dfd = db->base_dfd;
}

/* Base file f's fdatasync; the syncing thread may be in one of the
 * database file's (a carried epoch's copy, carry.c). */
static int base_sync(alex_db *db, unsigned f)
{
	int err = alex_sync_settle(db, db->base_fd[f]);

	return err ? err : db->io.ops->fdatasync(db->io.ctx, db->base_fd[f]);
}

/*
 * Before file f's blocks go in: bytes past its limit were truncated away.
 * Cut them, but never block 0 of a marked file: it carries the mark, and
 * a file cut to nothing would read as an empty database to SQLite without
 * ALEX.  What is kept of it past the limit is zeroed instead.  *skip: f
 * is not ours to size (SQLite's journal and WAL), or is untouched since
 * the last checkpoint (n: its blocks to copy).
 */
static int copy_prepare(alex_db *db, unsigned f, size_t n, uint8_t *buf, int *skip)
{
	const struct alex_io_ops *o = db->io.ops;
	int marked = f == ALEX_FILE_DB && db->mark.kind != ALEX_MARK_NONE;
	uint64_t phys = 0;
	int err;

	*skip = 1;
	if (db->cfg.db_only && f != ALEX_FILE_DB)
		return 0;
	if (db->base_fd[f] >= 0 && (err = o->size(db->io.ctx, db->base_fd[f], &phys)))
		return err;
	if (!n && db->csize[f] == phys && db->climit[f] >= phys && !marked)
		return 0;
	*skip = 0;
	if ((err = base_file(db, f, &phys)))
		return err;
	uint64_t keep = db->climit[f];
	if (marked && keep < ALEX_BLOCK)
		keep = phys < ALEX_BLOCK ? phys : ALEX_BLOCK;
	if (phys > keep) {
		if ((err = o->ftruncate(db->io.ctx, db->base_fd[f], keep)))
			return err;
		phys = keep;
	}
	if (db->climit[f] < keep && (err = zero_gap(db, f, db->climit[f], keep, buf)))
		return err;
	return 0;
}

/* After them: the file's logical size, no shorter than min_size. */
static int copy_size(alex_db *db, unsigned f, uint64_t min_size)
{
	const struct alex_io_ops *o = db->io.ops;
	uint64_t size = db->csize[f] > min_size ? db->csize[f] : min_size, phys;
	int err;

	if ((err = o->size(db->io.ctx, db->base_fd[f], &phys)))
		return err;
	return phys != size ? o->ftruncate(db->io.ctx, db->base_fd[f], size) : 0;
}

/*
 * Writes file f's committed blocks (keys[0..n), sorted) into its base,
 * sets its size and syncs it.  Block 0 of the database goes down with the
 * current mark on it; one that cannot carry a mark goes down with the
 * mark's bytes as they are on disk over its first 100 (slow: the unmark
 * then writes the true ones, and is synced), or -- an epoch that is not
 * fenced, whose header decides -- as it is.  min_size: no shorter than
 * this yet (the slow unmark needs the mark's bytes to stay).  few: FEW
 * or FEW_IN_COMMIT.
 */
static int copy_file(alex_db *db, unsigned f, const uint64_t *keys, size_t n, uint8_t *buf,
		     uint8_t *old, uint8_t *bounce, int slow, uint64_t min_size, size_t few,
		     int sync)
{
	int marked = f == ALEX_FILE_DB && db->mark.kind != ALEX_MARK_NONE;
	int skip, err;

	if ((err = copy_prepare(db, f, n, buf, &skip)) || skip)
		return err;
	uint8_t raw[ALEX_BASE_HDR];
	size_t got = 0;
	memset(raw, 0, sizeof raw);
	if (slow &&
	    (err = db->io.ops->pread(db->io.ctx, db->base_fd[f], raw, sizeof raw, 0, &got)))
		return err;
	struct direct d;
	direct_open(db, f, n, &d, bounce, few);
	if ((err = copy_blocks(db, f, keys, n, buf, old, marked ? (slow ? raw : NULL) : NULL, marked,
			       &d)) ||
	    (err = copy_size(db, f, min_size)))
		return err;
	return sync ? base_sync(db, f) : 0;
}

/* The true first bytes of the database's block 0 as committed. */
static int true_block0(alex_db *db, uint8_t *out, uint8_t *buf)
{
	uint64_t key = alex_key(ALEX_FILE_DB, 0);
	const struct alex_loc *l = alex_map_get(&db->map, key);
	int err;

	if (!l)
		return alex_protect_base_header(db, out);
	if ((err = alex_log_read_block(db, key, l, buf)))
		return err;
	memcpy(out, buf, ALEX_BASE_HDR);
	return 0;
}

/* The slow unmark: the true bytes, the logical size, and a sync, before
 * the next epoch may begin. */
static int unmark_synced(alex_db *db, const uint8_t *true_hdr)
{
	const struct alex_io_ops *o = db->io.ops;
	int fd = db->base_fd[ALEX_FILE_DB], err;
	uint64_t phys, size = db->csize[ALEX_FILE_DB];

	if ((err = alex_protect_clear(db, true_hdr, size)) || (err = o->size(db->io.ctx, fd, &phys)))
		return err;
	if (phys != size && (err = o->ftruncate(db->io.ctx, fd, size)))
		return err;
	return base_sync(db, ALEX_FILE_DB);
}

/* The log holds nothing of this epoch, but the base carries a mark a crash
 * left (the fence of an epoch that is over): take it off. */
static int clear_stale_mark(alex_db *db)
{
	uint8_t h[ALEX_BASE_HDR];
	int err;

	if (db->mark.kind == ALEX_MARK_NONE || db->base_fd[ALEX_FILE_DB] < 0)
		return 0;
	if (db->climit[ALEX_FILE_DB] == 0) {
		/* a placeholder (or torn bytes of one) over an empty database */
		if ((err = db->io.ops->ftruncate(db->io.ctx, db->base_fd[ALEX_FILE_DB], 0)))
			return err;
		memset(&db->mark, 0, sizeof db->mark);
		return 0;
	}
	if ((err = alex_protect_base_header(db, h)))
		return err;
	return alex_protect_clear(db, h, db->csize[ALEX_FILE_DB]);
}

/* A failed write-back leaves its pages clean in the cache, showing bytes
 * the disk lacks, and the sync reports the error once: a retry that
 * compared with them would skip what never reached the disk (review).
 * Copy whole until a checkpoint succeeds, and drop the cache, so that
 * other engines compare with the disk. */
static void copy_failed(alex_db *db, unsigned f)
{
	db->ckpt_doubt = 1;
	if (db->base_fd[f] >= 0 && db->io.ops->forget)
		db->io.ops->forget(db->io.ctx, db->base_fd[f]);
}

/* NORMAL mode: the log's tail may not be durable yet.  Its blocks must
 * not reach the base first -- a crash would recover the older log over a
 * base already holding newer pages, a mix of two states (found by the
 * SQLite power-cut campaign, tests/preload/powercut.sh).  Nor another
 * process's tail, which this engine only read (review: a reader's
 * checkpoint of a NORMAL writer's commits), nor a crashed one's, which
 * recovery read from the page cache. */
static int tail_durable(alex_db *db)
{
	int err;

	if ((db->unsynced_commit || db->log_foreign) && (err = alex_log_sync(db))) {
		db->failed = 1;
		return err;
	}
	db->log_foreign = 0;
	return 0;
}

/* A fenced epoch whose page 1 can no longer carry the mark (bytes that
 * are not SQLite's, or a file cut below 100 bytes) takes the slow way:
 * the mark's own bytes over block 0, and a synced unmark. */
static int slow_block0(const alex_db *db, const uint8_t *true_hdr)
{
	return (db->hdr.flags & ALEX_HDR_FENCED) && db->mark.kind != ALEX_MARK_NONE &&
	       (db->csize[ALEX_FILE_DB] < ALEX_BASE_HDR ||
		!alex_protect_markable(true_hdr, ALEX_BASE_HDR));
}

static int next_epoch(alex_db *db, int fenced, const uint8_t *true_hdr);

/* copy: only copy every committed block, and sync the base if 1 (not if
 * 2: carry.c has it synced outside the caller's lock), for a carried
 * epoch (carry.c): no new epoch, no unmark: the fence stays, and so does
 * the log.  A transaction may be open (its blocks are not in the map). */
static int run_once(alex_db *db, size_t few, int copy)
{
	uint8_t true_hdr[ALEX_BASE_HDR];
	uint64_t *keys = NULL;
	uint8_t *buf = NULL;
	size_t n = 0;
	DBGS(db, "checkpoint", " commit=%llu", (unsigned long long)db->st.commits);
	int err = 0;

	if (db->failed)
		return ALEX_EFAILED;
	if ((!copy && (db->pending.n || db->txn_truncated)) || db->cond_open || db->doubt)
		return ALEX_EBUSY; /* not while a transaction across databases is undecided */
	/* Staged commits above this epoch: the fence stays on after it too.
	 * The staging log names this log by its uuid and next lsn, which the
	 * next epoch keeps, so its records still lie over what this leaves
	 * (merge.c: alex_merge_room). */
	int keep = db->above_holds;
	if (copy && !db->epoch_commits)
		return ALEX_EBUSY; /* nothing to copy, and no mark to take off */
	if (!db->epoch_commits) {
		if (keep)
			return ALEX_EBUSY; /* no room to be had, and no mark to clear */
		/* a fence with no log is a log gone, whose pages are not here
		 * (protect.c): it stays, unless asked (alex recover; review: a
		 * close after a refused catch-up took it off) */
		if (db->log_fd < 0 && db->mark.has_fence && !db->cfg.orphan_ok)
			return ALEX_EORPHAN;
		/* nor another log's: its pages are not in this one (a file
		 * renamed over this engine's and written through its own log) */
		if (alex_protect_others(db))
			return ALEX_EFOREIGN;
		/* the epoch's next record must put its fence back first */
		db->epoch_started = 0;
		return clear_stale_mark(db);
	}
	if ((err = tail_durable(db)))
		return err;
	/* A run never holds more blocks than there are keys: a small
	 * checkpoint's buffer stays small, on the heap, where a 256 KiB one
	 * would be a fresh mapping each time (page faults, and an munmap
	 * whose TLB shootdown costs tens of microseconds in a VM).  Direct
	 * writes want the base's blocks beside it, and a bounce buffer. */
	if (!(keys = alex_map_sorted_keys(&db->map, &n))) {
		err = ALEX_ENOMEM;
		goto out;
	}
	size_t run_bytes = (n < 1 ? 1 : n < RUN_BLOCKS ? n : RUN_BLOCKS) * (size_t)ALEX_BLOCK;
	int direct = direct_allowed(db);
	if (!(buf = aligned_alloc(ALEX_BLOCK, direct ? 2 * run_bytes + BATCH * ALEX_SECTOR
						    : run_bytes))) {
		err = ALEX_ENOMEM;
		goto out;
	}
	uint8_t *old = direct ? buf + run_bytes : NULL, *bounce = direct ? old + run_bytes : NULL;
	if ((err = true_block0(db, true_hdr, buf)))
		goto out;
	int fenced = (db->hdr.flags & ALEX_HDR_FENCED) != 0;
	int slow = slow_block0(db, true_hdr);
	if (slow && (keep || copy)) {
		err = ALEX_EBUSY; /* the true page 1 would leave with the epoch */
		goto out;
	}
	for (unsigned f = 0, i = 0; f < ALEX_NFILES; f++) {
		size_t start = i;
		while (i < n && alex_key_file(keys[i]) == f)
			i++;
		if ((err = copy_file(db, f, keys + start, i - start, buf, old, bounce,
				     slow && f == ALEX_FILE_DB,
				     slow && f == ALEX_FILE_DB ? ALEX_BASE_HDR : 0, few,
				     copy != 2))) {
			copy_failed(db, f);
			goto out;
		}
	}
	db->ckpt_doubt = 0;
	if (copy)
		goto out;
	if (slow && (err = unmark_synced(db, true_hdr)))
		goto out;
	/* Keeping the fence, the next header is synced: the retried merge
	 * fences that epoch and writes its records over this one's, and a
	 * power cut that kept the new fence but not the new header would find
	 * this epoch not live and count its lsns from what was left of its
	 * chain -- not the point the staging log names (third review). */
	err = next_epoch(db, fenced && !keep, keep ? NULL : true_hdr);
out:
	free(keys);
	free(buf);
	return err;
}

int alex_epoch_after_copy(alex_db *db, int sync)
{
	int err;

	alex_map_clear(&db->map);
	if ((err = alex_epoch_begin(db, sync))) {
		db->failed = 1; /* the map is gone; the log still holds it */
		return err;
	}
	for (int f = 0; f < ALEX_NFILES; f++)
		db->limit[f] = db->climit[f] = db->csize[f] < db->size[f] ? db->csize[f] : db->size[f];
	alex_sync_reset(db);
	db->st.checkpoints++;
	db->st.log_used = 0;
	return 0;
}

/* After a checkpoint: the committed map is empty, and the base holds it all. */
static int next_epoch(alex_db *db, int fenced, const uint8_t *true_hdr)
{
	int err;

	/* Every committed block is now durable in its base file.  The next
	 * epoch's header tells other engines (if writing it fails we cannot
	 * tell which header the disk holds: the engine stops; the base may be
	 * unmarked).  Only then the fence comes off. */
	if ((err = alex_epoch_after_copy(db, !fenced)))
		return err;
	/* A file system running full gets the log's zeros back: the base may
	 * need them next.  Only once the new header is durable: a cut that
	 * reached the disk before it would leave the base fenced for the
	 * epoch just checkpointed and a beginning of its records, which
	 * recovery would replay over a base that holds all of them (found in
	 * review).  One sync more, on a file system running full only. */
	if (ALEX_SPACE_LOW(db) && alex_log_sync(db) == 0 && alex_log_trim(db) == 0)
		db->st.log_trims++;
	/* A failed unmark leaves a stale fence: refused without ALEX, healed
	 * by the next checkpoint.  The data is all in the base, the new epoch
	 * has begun; the caller hears of it all the same. */
	if ((err = alex_protect_clear(db, true_hdr, db->csize[ALEX_FILE_DB])))
		db->st.unmark_failures++;
	return err;
}

/* On a full disk the log's preallocated tail may be what the base needs to
 * grow into: give it back and try once more. */
static int ckpt_run(alex_db *db, size_t few)
{
	if (db->cfg.readonly)
		return EROFS;
	/* a staging engine never checkpoints (its base is read-only); below
	 * it, while staged commits are not in the database, only a checkpoint
	 * for room that a merge asked for, which keeps the fence (run_once) */
	if (db->io.ops->ident || (db->above_holds && !(db->making_room && db->stage_room)))
		return ALEX_EBUSY;
	/* a staging log may hold commits this epoch lacks, and no engine
	 * above was asked (review: a process that opened before staging
	 * began checkpointed at its close and orphaned them) */
	if (alex_stage_unmerged(db))
		return ALEX_EBUSY;
	int err = run_once(db, few, 0);

	if ((err == ENOSPC || err == EDQUOT) && !db->failed && alex_log_trim(db) == 0)
		err = run_once(db, few, 0);
	return err;
}

int alex_ckpt_run(alex_db *db)
{
	return ckpt_run(db, FEW);
}

int alex_ckpt_run_in_commit(alex_db *db)
{
	return ckpt_run(db, FEW_IN_COMMIT);
}

int alex_ckpt_copy(alex_db *db, int sync)
{
	if (db->cfg.readonly)
		return EROFS;
	return run_once(db, FEW_IN_COMMIT, sync ? 1 : 2);
}

/*
 * A carried epoch's copy in slices (carry.c): every block committed when
 * it begins, a few at each commit after, each as committed when its turn
 * comes -- a newer version than the snapshot's is as good, and a block a
 * truncation removed since is not copied -- and at the end the files'
 * lengths.  Through the page cache only: a direct write would wait for
 * the device inside the commit.  No sync: the syncing thread makes it.
 */
int alex_ckpt_slices_begin(alex_db *db, uint64_t **keys, size_t *n)
{
	uint8_t true_hdr[ALEX_BASE_HDR], *buf;
	int err;

	*keys = NULL;
	if (db->cfg.readonly)
		return EROFS;
	if (db->failed)
		return ALEX_EFAILED;
	if (db->cond_open || db->doubt || !db->epoch_commits)
		return ALEX_EBUSY;
	if ((err = tail_durable(db)))
		return err;
	if (!(buf = malloc(ALEX_BLOCK)))
		return ALEX_ENOMEM;
	if (!(*keys = alex_map_sorted_keys(&db->map, n))) {
		free(buf);
		return ALEX_ENOMEM;
	}
	/* block 0 goes with the mark applied, in the first slice: it must be
	 * able to carry one (run_once's slow way needs a whole copy) */
	if (!(err = true_block0(db, true_hdr, buf)) && slow_block0(db, true_hdr))
		err = ALEX_EBUSY;
	/* a placeholder becomes the database by its block 0 (alex_ckpt_slice) */
	if (!err && db->mark.kind == ALEX_MARK_PLACEHOLDER &&
	    (!*n || (*keys)[0] != alex_key(ALEX_FILE_DB, 0)))
		err = ALEX_EBUSY;
	for (unsigned f = 0, i = 0; f < ALEX_NFILES && !err; f++) {
		size_t start = i;
		int skip;
		while (i < *n && alex_key_file((*keys)[i]) == f)
			i++;
		if ((err = copy_prepare(db, f, i - start, buf, &skip)))
			copy_failed(db, f);
	}
	free(buf);
	if (err) {
		free(*keys);
		*keys = NULL;
	}
	return err;
}

int alex_ckpt_slice(alex_db *db, const uint64_t *keys, size_t n, size_t need, uint8_t *buf,
		    size_t *used)
{
	uint64_t now[ALEX_CKPT_SLICE_MAX];
	size_t m = 0, i, cold = 0;
	int err = 0;

	*used = 0;
	if (db->failed)
		return ALEX_EFAILED;
	if (db->cond_open || db->doubt)
		return ALEX_EBUSY; /* as run_once: not while a transaction across
				      databases is undecided */
	/* Past need, no more than ALEX_CKPT_SLICE_COLD blocks that are not
	 * held in memory: each is a read from the device (the log is written
	 * past the page cache), some 50 us, and a large database's random
	 * pages mostly are (16 of them made a slice of 0.8 ms) */
	for (i = 0; i < n && i < ALEX_CKPT_SLICE_MAX; i++) {
		const struct alex_loc *l = alex_map_get(&db->map, keys[i]);
		if (!l || (db->cfg.db_only && alex_key_file(keys[i]) != ALEX_FILE_DB))
			continue;
		int held = alex_known_get(db, keys[i], l, NULL) != NULL;
		if (i >= need && !held && cold >= ALEX_CKPT_SLICE_COLD)
			break;
		cold += !held;
		now[m++] = keys[i];
	}
	*used = i;
	for (size_t j = 0; j < m && !err;) {
		unsigned f = alex_key_file(now[j]);
		size_t start = j;
		uint64_t phys;
		while (j < m && alex_key_file(now[j]) == f)
			j++;
		int marked = f == ALEX_FILE_DB && db->mark.kind != ALEX_MARK_NONE;
		struct direct d = { .dfd = -1, .few = FEW_IN_COMMIT };
		if ((err = base_file(db, f, &phys)))
			break;
		d.fd = db->base_fd[f];
		if ((err = copy_blocks(db, f, now + start, j - start, buf, NULL, NULL, marked, &d))) {
			copy_failed(db, f);
			break;
		}
		/* the device takes the slice now, not all of the copy at its
		 * sync: 16 MB of a large database's random pages written back
		 * at once held the commits beside that sync for 2-3 ms each */
		if (db->io.ops->writeback)
			db->io.ops->writeback(db->io.ctx, db->base_fd[f],
					      alex_key_block(now[start]) << ALEX_BLOCK_SHIFT,
					      (alex_key_block(now[j - 1]) + 1 - alex_key_block(now[start]))
						      << ALEX_BLOCK_SHIFT);
		/* a placeholder's block 0 is now the marked page 1: once the
		 * copy is durable the file holds the database (carry.c) */
		if (f == ALEX_FILE_DB && alex_key_block(now[start]) == 0 &&
		    db->mark.kind == ALEX_MARK_PLACEHOLDER)
			db->mark.kind = ALEX_MARK_SQLITE;
	}
	return err;
}

int alex_ckpt_slices_end(alex_db *db)
{
	int err;

	if (db->mark.kind == ALEX_MARK_PLACEHOLDER)
		return ALEX_EBUSY; /* its block 0 went with a truncation */
	for (unsigned f = 0; f < ALEX_NFILES; f++) {
		if ((db->cfg.db_only && f != ALEX_FILE_DB) || db->base_fd[f] < 0)
			continue;
		/* the syncing thread syncs the database file; the others (the
		 * engine's own API with db_only off) are synced here */
		if ((err = copy_size(db, f, 0)) || (f != ALEX_FILE_DB && (err = base_sync(db, f)))) {
			copy_failed(db, f);
			return err;
		}
	}
	db->ckpt_doubt = 0;
	return 0;
}
