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
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"
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
		if ((err = alex_log_read_block(a, &a->map.vals[i], buf)) ||
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
	if (!a->io.ops->ident || (err = a->io.ops->ident(a->io.ctx, was)))
		return err ? err : ALEX_EINVAL;
	if (!(buf = aligned_alloc(ALEX_BLOCK, ALEX_BLOCK)))
		return ALEX_ENOMEM;
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
	/* the checkpoint below held back while commits were staged */
	alex_ckpt_if_due(b);
	return 0;
}
