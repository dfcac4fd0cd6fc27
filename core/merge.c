/*
 * merge.c - a staging engine's committed state into the engine below it,
 * as one transaction (io_over.h).  Only the latest version of each block
 * goes: the commits of a window that changed a page a hundred times cost
 * below one copy of it.
 *
 * The order keeps both sides whole at every step.  Below is written and
 * committed first; until its commit returns, above still holds everything
 * and a failure leaves below as it was (its transaction dropped).  Only
 * then does above begin its next epoch -- unsynced, like all of its log --
 * so that a process dying between the two leaves above's records over a
 * below that already holds them: the same bytes again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"
#include "dbg.h"
#include "engine.h"
#include "io_over.h"
#include "log.h"

/* What above committed of file f into below's open transaction: the bytes a
 * truncation removed, then the blocks, then the size. */
static int merge_file(alex_db *a, alex_db *b, unsigned f, uint8_t *buf)
{
	enum alex_file ef = (enum alex_file)f;
	int err;

	if (a->climit[f] < b->size[f] && (err = alex_truncate(b, ef, a->climit[f])))
		return err;
	for (size_t i = 0; i < a->map.cap; i++) {
		uint64_t k = a->map.keys[i];
		if (!k || alex_key_file(k) != f)
			continue;
		if ((err = alex_log_read_block(a, k, &a->map.vals[i], buf)) ||
		    (err = alex_write(b, ef, buf, ALEX_BLOCK, alex_key_block(k) << ALEX_BLOCK_SHIFT)))
			return err;
	}
	if (b->size[f] != a->csize[f])
		return alex_truncate(b, ef, a->csize[f]);
	return 0;
}

/* After below committed it all: above's log starts over, unsynced, its
 * reads going below. */
static int next_epoch(alex_db *a)
{
	return alex_epoch_after_copy(a, 0);
}

int alex_merge(alex_db *a, alex_db *b)
{
	uint8_t *buf, was[ALEX_BASE_HDR], now[ALEX_BASE_HDR];
	int err = 0;

	if (!a || !b)
		return ALEX_EINVAL;
	if (a->failed || b->failed)
		return ALEX_EFAILED;
	if (alex_txn_open(a) || a->pending.n || a->cond_open || a->doubt || alex_txn_open(b))
		return ALEX_EBUSY;
	if (!a->epoch_commits)
		return 0;
	b->above_holds = 1; /* until it is all below: a checkpoint for room keeps the fence */
	if (!a->io.ops->ident || (err = a->io.ops->ident(a->io.ctx, was)))
		return err ? err : ALEX_EINVAL;
	if (!(buf = aligned_alloc(ALEX_BLOCK, ALEX_BLOCK)))
		return ALEX_ENOMEM;
	DBGS(a, "merge begin", " was=%lu", (unsigned long)alex_get64(was + 32));
	for (unsigned f = 0; f < ALEX_NFILES && !err; f++)
		err = merge_file(a, b, f, buf);
	free(buf);
	if (!err)
		err = alex_commit(b);
	if (err) {
		/* below as it was: the transaction dropped, spills with it --
		 * unless its record was written and only its sync failed: read
		 * back, it moved below, which now holds the merge (review: the
		 * staging epoch kept on, named a point below had left, and was
		 * dropped whole at the next open) */
		int e = alex_discard(b), moved = 0;
		if (!e && !(e = a->io.ops->ident(a->io.ctx, now)) && memcmp(was, now, sizeof was) != 0) {
			moved = 1;
			e = next_epoch(a);
		}
		b->above_holds = !(moved && !e); /* above holds nothing once it moved on */
		return err;
	}
	if ((err = next_epoch(a)))
		return err;
	b->above_holds = 0;
	DBG(b, "merge done next=%lu", (unsigned long)b->next_lsn);
	/* the checkpoint below held back while commits were staged */
	alex_ckpt_if_due(b);
	return 0;
}

int alex_merge_room(alex_db *a, alex_db *b)
{
	if (!a || !b)
		return ALEX_EINVAL;
	/* below checkpoints for room inside the merge's own commit (commit.c,
	 * write.c), or -- the merge spilled, which rules that out -- here,
	 * after the merge dropped its transaction, and once more */
	b->stage_room = 1;
	int err = alex_merge(a, b);
	if (alex_disk_full(err) && !b->failed && !alex_txn_open(b) && b->above_holds &&
	    alex_make_room(b) == 0)
		err = alex_merge(a, b);
	b->stage_room = 0;
	/* The free space, once a window (a system call, where a commit costs
	 * none): short of it, above gives back the space its windows took and
	 * holds one commit at a time from now on (alex_stage_short). */
	alex_stage_space(b);
	if (!err && alex_stage_short(b, a->cfg.extent_bytes))
		alex_log_trim(a);
	return err;
}

int alex_merge_held(alex_db *a, alex_db *b)
{
	int err, rc;

	if (!a || !b)
		return ALEX_EINVAL;
	/* a process opening the WAL drains and checkpoints below under SHARED
	 * and this lock only: never beside it (review) */
	if (b->log_fd >= 0 && !b->cfg.exclusive &&
	    b->io.ops->lock(b->io.ctx, b->log_fd, ALEX_LOCK_CKPT, ALEX_EXCLUSIVE))
		return ALEX_EBUSY;
	b->ckpt_held = 1;
	if (!(err = alex_stage_catch_up(a, b, 1)))
		err = alex_merge(a, b);
	b->ckpt_held = 0;
	alex_stage_space(b); /* as every merge: a file system running short routes commits */
	if ((rc = alex_log_lock_ckpt(b, 0)) && !err)
		err = rc;
	return err;
}

void alex_stage_space(alex_db *b)
{
	uint64_t avail;
	int fd = b->log_fd >= 0 && !b->log_stub ? b->log_fd : b->base_fd[ALEX_FILE_DB];

	if (fd >= 0 && b->io.ops->space(b->io.ctx, fd, &avail) == 0)
		b->space_avail = avail;
}

int alex_stage_idle(const alex_db *a)
{
	return !alex_txn_open(a) && !a->epoch_commits && a->append_off == alex_data_off(a);
}

int alex_stage_short(const alex_db *b, uint64_t window)
{
	return b->space_avail < 16 * window;
}

int alex_stage_catch_up(alex_db *a, alex_db *b, int locked)
{
	int err;

	if ((err = alex_refresh(b, locked)))
		return err;
	a->below_looked = 1; /* refresh.c: below's state is current */
	err = alex_refresh(a, locked);
	a->below_looked = 0;
	if (err)
		return err;
	if (!alex_txn_open(a))
		b->above_holds = a->epoch_commits != 0;
	return 0;
}

int alex_stage_marked(const alex_db *b)
{
	return b->epoch_live && (b->hdr.flags & ALEX_HDR_STAGED);
}

int alex_stage_unmerged(const alex_db *b)
{
	char name[4200];
	int yes = 1;

	if (!b->epoch_live || !(b->hdr.flags & ALEX_HDR_STAGED) || b->above_attached ||
	    !b->path[ALEX_FILE_DB])
		return 0;
	/* no staging log, nothing staged: it is removed only empty */
	snprintf(name, sizeof name, "%s-alex-stage", b->path[ALEX_FILE_DB]);
	if (b->io.ops->exists(b->io.ctx, name, &yes))
		return 1;
	return yes;
}

int alex_stage_possible(const alex_db *b)
{
	return b->log_fd < 0 || b->log_stub || alex_format_deltas(b->hdr.version);
}

int alex_stage_drain(alex_db *a, alex_db *b)
{
	int err, rc;

	if ((err = alex_log_lock_ckpt(b, 1)))
		return err;
	if (!(err = alex_stage_catch_up(a, b, 1)))
		err = alex_merge(a, b);
	if ((rc = alex_log_lock_ckpt(b, 0)) && !err)
		err = rc;
	return err;
}

uint64_t alex_stage_bytes(const alex_db *a)
{
	return a->epoch_commits ? a->append_off - alex_data_off(a) : 0;
}

uint64_t alex_stage_blocks(const alex_db *a)
{
	return a->epoch_commits ? a->map.n : 0;
}

#define MOVE_MAX ((size_t)256 << 20)

/* The open transaction of above, as it would commit it. */
struct moved {
	uint64_t *blk;
	uint8_t *img;
	size_t n;
	uint64_t size, cut;
};

static int move_key(alex_db *a, struct moved *m, uint64_t k)
{
	size_t got = 0;

	if (!k || alex_key_file(k) != ALEX_FILE_DB)
		return 0;
	uint64_t off = alex_key_block(k) << ALEX_BLOCK_SHIFT;
	if (off >= m->size)
		return 0;
	uint8_t *to = m->img + m->n * ALEX_BLOCK;
	int err = alex_read(a, ALEX_FILE_DB, to, ALEX_BLOCK, off, &got);
	if (err)
		return err;
	memset(to + got, 0, ALEX_BLOCK - got);
	m->blk[m->n++] = alex_key_block(k);
	return 0;
}

static int move_out(alex_db *a, struct moved *m)
{
	size_t cap = a->col.index.n + a->pending.n;
	int err = 0;

	if (cap * ALEX_BLOCK > MOVE_MAX)
		return ALEX_ENOMEM;
	m->size = a->size[ALEX_FILE_DB];
	m->cut = a->txn_cut[ALEX_FILE_DB];
	if (!cap)
		return 0;
	if (!(m->blk = malloc(cap * sizeof *m->blk)) || !(m->img = malloc(cap * ALEX_BLOCK)))
		return ALEX_ENOMEM;
	for (size_t i = 0; i < a->col.index.cap && !err; i++)
		err = move_key(a, m, a->col.index.keys[i]);
	for (size_t i = 0; i < a->pending.cap && !err; i++) /* spilled, not collected since */
		if (a->pending.keys[i] && alex_col_find(&a->col, a->pending.keys[i]) < 0)
			err = move_key(a, m, a->pending.keys[i]);
	return err;
}

static int move_in(alex_db *b, const struct moved *m)
{
	int err = 0;

	if (m->cut < b->size[ALEX_FILE_DB])
		err = alex_truncate(b, ALEX_FILE_DB, m->cut);
	for (size_t i = 0; i < m->n && !err; i++)
		err = alex_write(b, ALEX_FILE_DB, m->img + i * ALEX_BLOCK, ALEX_BLOCK,
				 m->blk[i] << ALEX_BLOCK_SHIFT);
	if (!err && b->size[ALEX_FILE_DB] != m->size)
		err = alex_truncate(b, ALEX_FILE_DB, m->size);
	return err;
}

int alex_stage_move(alex_db *a, alex_db *b)
{
	struct moved m = { 0 };
	int err;

	if (!a || !b)
		return ALEX_EINVAL;
	if (a->cond_open || a->doubt || alex_txn_open(b))
		return ALEX_EBUSY;
	err = move_out(a, &m);
	int e = alex_discard(a);
	if (!err)
		err = e;
	if (!err)
		err = alex_merge(a, b);
	if (!err && (err = move_in(b, &m)))
		alex_discard(b);
	free(m.blk);
	free(m.img);
	return err;
}
