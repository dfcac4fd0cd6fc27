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
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"
#include "db.h"
#include "dbg.h"
#include "engine.h"
#include "io_over.h"
#include "log.h"
#include "protect.h"

#define RUN_BLOCKS 64u /* blocks per base-file pwrite */

static int key_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

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

/* Writes the committed blocks keys[0..n) of file f into its base file, in
 * runs of consecutive blocks.  A marked database's block 0 goes out with
 * the mark: raw's bytes (the slow way), or the fence applied. */
static int copy_blocks(alex_db *db, unsigned f, const uint64_t *keys, size_t n, uint8_t *buf,
		       const uint8_t *raw, int marked)
{
	int err;

	for (size_t i = 0; i < n;) {
		uint64_t first = alex_key_block(keys[i]);
		size_t run = 0;
		while (i + run < n && run < RUN_BLOCKS && alex_key_block(keys[i + run]) == first + run) {
			const struct alex_loc *l = alex_map_get(&db->map, keys[i + run]);
			if ((err = alex_log_read_block(db, l, buf + run * ALEX_BLOCK)))
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
		if ((err = db->io.ops->pwrite(db->io.ctx, db->base_fd[f], buf, run * ALEX_BLOCK,
					      first << ALEX_BLOCK_SHIFT)))
			return err;
		db->st.checkpoint_blocks += run;
		i += run;
	}
	return 0;
}

/*
 * Writes file f's committed blocks (keys[0..n), sorted) into its base,
 * sets its size and syncs it.  Block 0 of the database goes down with the
 * current mark on it; one that cannot carry a mark goes down with the
 * mark's bytes as they are on disk over its first 100 (slow: the unmark
 * then writes the true ones, and is synced), or -- an epoch that is not
 * fenced, whose header decides -- as it is.  min_size: no shorter than
 * this yet (the slow unmark needs the mark's bytes to stay).
 */
static int copy_file(alex_db *db, unsigned f, const uint64_t *keys, size_t n, uint8_t *buf,
		     int slow, uint64_t min_size)
{
	const struct alex_io_ops *o = db->io.ops;
	uint64_t phys = 0;
	int err;

	if (db->cfg.db_only && f != ALEX_FILE_DB)
		return 0; /* SQLite's journal and WAL: never ours to size */
	if (db->base_fd[f] >= 0 && (err = o->size(db->io.ctx, db->base_fd[f], &phys)))
		return err;
	int marked = f == ALEX_FILE_DB && db->mark.kind != ALEX_MARK_NONE;
	if (!n && db->csize[f] == phys && db->climit[f] >= phys && !marked)
		return 0; /* untouched since the last checkpoint */
	if ((err = base_file(db, f, &phys)))
		return err;
	/* Bytes past the limit were truncated away.  Cut them, but never
	 * block 0 of a marked file: it carries the mark, and a file cut to
	 * nothing would read as an empty database to SQLite without ALEX.
	 * What is kept of it past the limit is zeroed instead. */
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
	uint8_t raw[ALEX_BASE_HDR];
	size_t got = 0;
	memset(raw, 0, sizeof raw);
	if (slow && (err = o->pread(db->io.ctx, db->base_fd[f], raw, sizeof raw, 0, &got)))
		return err;
	if ((err = copy_blocks(db, f, keys, n, buf, marked ? (slow ? raw : NULL) : NULL, marked)))
		return err;
	uint64_t size = db->csize[f] > min_size ? db->csize[f] : min_size;
	if ((err = o->size(db->io.ctx, db->base_fd[f], &phys)))
		return err;
	if (phys != size && (err = o->ftruncate(db->io.ctx, db->base_fd[f], size)))
		return err;
	return o->fdatasync(db->io.ctx, db->base_fd[f]);
}

/* The true first bytes of the database's block 0 as committed. */
static int true_block0(alex_db *db, uint8_t *out, uint8_t *buf)
{
	const struct alex_loc *l = alex_map_get(&db->map, alex_key(ALEX_FILE_DB, 0));
	int err;

	if (!l)
		return alex_protect_base_header(db, out);
	if ((err = alex_log_read_block(db, l, buf)))
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
	return o->fdatasync(db->io.ctx, fd);
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

static int next_epoch(alex_db *db, int fenced, const uint8_t *true_hdr);

/* The committed map's keys, sorted by (file, block); NULL if no memory. */
static uint64_t *sorted_keys(const struct alex_map *map, size_t *n)
{
	uint64_t *keys = malloc((map->n ? map->n : 1) * sizeof *keys);

	*n = 0;
	if (!keys)
		return NULL;
	for (size_t i = 0; i < map->cap; i++)
		if (map->keys[i])
			keys[(*n)++] = map->keys[i];
	qsort(keys, *n, sizeof *keys, key_cmp);
	return keys;
}

static int run_once(alex_db *db)
{
	uint8_t true_hdr[ALEX_BASE_HDR];
	uint64_t *keys = NULL;
	uint8_t *buf = NULL;
	size_t n = 0;
	DBGS(db, "checkpoint", "");
	int err = 0;

	if (db->failed)
		return ALEX_EFAILED;
	if (db->pending.n || db->txn_truncated || db->cond_open || db->doubt)
		return ALEX_EBUSY; /* not while a transaction across databases is undecided */
	/* Staged commits above this epoch: the fence stays on after it too.
	 * The staging log names this log by its uuid and next lsn, which the
	 * next epoch keeps, so its records still lie over what this leaves
	 * (merge.c: alex_merge_room). */
	int keep = db->above_holds;
	if (!db->epoch_commits) {
		if (keep)
			return ALEX_EBUSY; /* no room to be had, and no mark to clear */
		/* the epoch's next record must put its fence back first */
		db->epoch_started = 0;
		return clear_stale_mark(db);
	}
	/* NORMAL mode: the log's tail may not be durable yet.  Its blocks
	 * must not reach the base first -- a crash would recover the older
	 * log over a base already holding newer pages, a mix of two states
	 * (found by the SQLite power-cut campaign, tests/preload/powercut.sh).
	 * Nor another process's tail, which this engine only read (review:
	 * a reader's checkpoint of a NORMAL writer's commits), nor a crashed
	 * one's, which recovery read from the page cache. */
	if ((db->unsynced_commit || db->log_foreign) && (err = alex_log_sync(db))) {
		db->failed = 1;
		return err;
	}
	db->log_foreign = 0;
	/* A run never holds more blocks than there are keys: a small
	 * checkpoint's buffer stays small, on the heap, where a 256 KiB one
	 * would be a fresh mapping each time (page faults, and an munmap
	 * whose TLB shootdown costs tens of microseconds in a VM) */
	if (!(keys = sorted_keys(&db->map, &n)) ||
	    !(buf = aligned_alloc(ALEX_BLOCK, (n < 1 ? 1 : n < RUN_BLOCKS ? n : RUN_BLOCKS) *
						      (size_t)ALEX_BLOCK))) {
		err = ALEX_ENOMEM;
		goto out;
	}
	if ((err = true_block0(db, true_hdr, buf)))
		goto out;
	/* A fenced epoch whose page 1 can no longer carry the mark (bytes that
	 * are not SQLite's, or a file cut below 100 bytes) takes the slow way:
	 * the mark's own bytes over block 0, and a synced unmark. */
	int fenced = (db->hdr.flags & ALEX_HDR_FENCED) != 0;
	uint64_t csize0 = db->csize[ALEX_FILE_DB];
	int slow = fenced && db->mark.kind != ALEX_MARK_NONE &&
		   (csize0 < ALEX_BASE_HDR || !alex_protect_markable(true_hdr, ALEX_BASE_HDR));
	if (slow && keep) {
		err = ALEX_EBUSY; /* the true page 1 would leave with the epoch */
		goto out;
	}
	for (unsigned f = 0, i = 0; f < ALEX_NFILES; f++) {
		size_t start = i;
		while (i < n && alex_key_file(keys[i]) == f)
			i++;
		if ((err = copy_file(db, f, keys + start, i - start, buf, slow && f == ALEX_FILE_DB,
				     slow && f == ALEX_FILE_DB ? ALEX_BASE_HDR : 0)))
			goto out;
	}
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
int alex_ckpt_run(alex_db *db)
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
	int err = run_once(db);

	if ((err == ENOSPC || err == EDQUOT) && !db->failed && alex_log_trim(db) == 0)
		err = run_once(db);
	return err;
}
