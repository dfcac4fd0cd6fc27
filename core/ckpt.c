/*
 * ckpt.c - checkpoint: copy every committed block from the log into its
 * base file in offset order, set the base file's size, fdatasync it, and only
 * then start a new log epoch.  A crash before the epoch's header is synced
 * recovers the old epoch and the next checkpoint writes the same bytes again
 * (idempotent); after it, the base files already hold everything.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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

/* Writes file f's committed blocks (keys[0..n), sorted) into its base. */
static int copy_file(alex_db *db, unsigned f, const uint64_t *keys, size_t n, uint8_t *buf)
{
	const struct alex_io_ops *o = db->io.ops;
	uint64_t phys = 0;
	int err;

	if (db->cfg.db_only && f != ALEX_FILE_DB)
		return 0; /* SQLite's journal and WAL: never ours to size */
	if (db->base_fd[f] >= 0 && (err = o->size(db->io.ctx, db->base_fd[f], &phys)))
		return err;
	int marked = f == ALEX_FILE_DB && db->base_marked, remark = 0;
	if (!n && db->csize[f] == phys && db->climit[f] >= phys && !marked)
		return 0; /* untouched since the last checkpoint */
	if ((err = base_file(db, f, &phys)))
		return err;
	if (f == ALEX_FILE_DB && !db->base_dir_synced) {
		/* after this checkpoint the base file alone holds the data: its
		 * name must be durable (SQLite does not sync it at creation) */
		if ((err = o->sync_dir(db->io.ctx, db->path[f])))
			return err;
		db->base_dir_synced = 1;
	}
	if (db->climit[f] < phys) {
		/* bytes past the limit were truncated away: make them zeros */
		if ((err = o->ftruncate(db->io.ctx, db->base_fd[f], db->climit[f])))
			return err;
		phys = db->climit[f];
	}
	for (size_t i = 0; i < n;) {
		uint64_t first = alex_key_block(keys[i]);
		size_t run = 0;
		while (i + run < n && run < RUN_BLOCKS && alex_key_block(keys[i + run]) == first + run) {
			const struct alex_loc *l = alex_map_get(&db->map, keys[i + run]);
			if ((err = alex_log_read_block(db, l, buf + run * ALEX_BLOCK)))
				return err;
			run++;
		}
		/* Block 0 goes down still marked; the mark comes off only after
		 * every block is synced, so that a crash in between never shows
		 * SQLite without ALEX a half-copied database. */
		if (f == ALEX_FILE_DB && first == 0 && db->cfg.protect_base &&
		    alex_protect_apply(buf, ALEX_BLOCK))
			remark = 1;
		if ((err = o->pwrite(db->io.ctx, db->base_fd[f], buf, run * ALEX_BLOCK,
				     first << ALEX_BLOCK_SHIFT)))
			return err;
		db->st.checkpoint_blocks += run;
		i += run;
	}
	if ((marked && db->base_marked == 1 && (!n || alex_key_block(keys[0]) != 0)) || remark) {
		/* take the mark off byte 19, after the rest is durable */
		if (remark && (err = o->fdatasync(db->io.ctx, db->base_fd[f])))
			return err;
		uint8_t h[20];
		size_t got;
		if ((err = o->pread(db->io.ctx, db->base_fd[f], h, sizeof h, 0, &got)))
			return err;
		alex_protect_unmask(h, got);
		if (got == sizeof h && (err = o->pwrite(db->io.ctx, db->base_fd[f], h + 19, 1, 19)))
			return err;
	}
	if ((err = o->size(db->io.ctx, db->base_fd[f], &phys)))
		return err;
	if (phys != db->csize[f] && (err = o->ftruncate(db->io.ctx, db->base_fd[f], db->csize[f])))
		return err;
	return o->fdatasync(db->io.ctx, db->base_fd[f]);
}

int alex_ckpt_run(alex_db *db)
{
	uint64_t *keys = NULL;
	uint8_t *buf = NULL;
	size_t n = 0;
	int err = 0;

	if (db->failed)
		return ALEX_EFAILED;
	if (db->pending.n)
		return ALEX_EBUSY;
	if (db->txn_truncated)
		return ALEX_EBUSY;
	if (db->append_off == ALEX_LOG_DATA && !db->base_marked)
		return 0; /* nothing logged in this epoch, nothing to unmark */
	/* NORMAL mode: the log's tail may not be durable yet.  Its blocks
	 * must not reach the base first -- a crash would recover the older
	 * log over a base already holding newer pages, a mix of two states
	 * (found by the SQLite power-cut campaign, tests/preload/powercut.sh). */
	if (db->unsynced_commit && (err = alex_log_sync(db))) {
		db->failed = 1;
		return err;
	}
	keys = malloc((db->map.n ? db->map.n : 1) * sizeof *keys);
	buf = aligned_alloc(ALEX_BLOCK, (size_t)RUN_BLOCKS * ALEX_BLOCK);
	if (!keys || !buf) {
		err = ALEX_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < db->map.cap; i++)
		if (db->map.keys[i])
			keys[n++] = db->map.keys[i];
	qsort(keys, n, sizeof *keys, key_cmp);
	for (unsigned f = 0, i = 0; f < ALEX_NFILES; f++) {
		size_t start = i;
		while (i < n && alex_key_file(keys[i]) == f)
			i++;
		if ((err = copy_file(db, f, keys + start, i - start, buf)))
			goto out;
	}
	/* Every committed block is now durable in its base file.  The new
	 * epoch's header makes the old records stale; if writing it fails we
	 * cannot tell which header the disk holds, so stop here. */
	if ((err = alex_log_new_epoch(db))) {
		db->failed = 1;
		goto out;
	}
	alex_map_clear(&db->map);
	db->epoch_commits = 0;
	db->base_marked = 0;
	for (int f = 0; f < ALEX_NFILES; f++)
		db->limit[f] = db->climit[f] = db->csize[f] < db->size[f] ? db->csize[f] : db->size[f];
	db->unsynced_commit = db->unsynced_spill = 0;
	db->unsynced_bytes = 0;
	db->unsynced_since_ns = 0;
	db->st.checkpoints++;
	db->st.log_used = 0;
out:
	free(keys);
	free(buf);
	return err;
}
