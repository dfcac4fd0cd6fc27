/*
 * carry.c - FULL mode's checkpoint off the commit path (format 10,
 * ALEX_CKPT_CARRY).
 *
 * A checkpoint copies every block into the database file and syncs it
 * before the next epoch may write over the last one's records: inside the
 * commit that finds it due, that sync (two device flushes when the file
 * grew) was the longest wait of FULL mode's insert workload.  A carried
 * epoch turns the order round.  The commit that finds a checkpoint due
 * only writes the next epoch's header (epoch N + 1), which names epoch N's
 * records -- [prev_off, prev_end), first lsn, salt -- and the fence N's
 * records counted under, which the database file keeps: recovery replays
 * N's records, then N + 1's (recover.c).  N + 1's records go where N's are
 * not: at 8192 when N began at least ALEX_LOG_RUN past it, else right
 * after N's end, so the log alternates between two stretches.  Nothing is
 * synced and nothing written to the database file: the next commit's sync
 * makes the header durable with that commit's record.
 *
 * Then, over the next commits (alex_carry_step), every committed block is
 * copied into the database file, a slice at each, and synced by the
 * syncing thread, and at the beginning of the next commit N + 1's header
 * is written again without N's records, to the other slot, so that the
 * commit's sync makes it durable before any other engine can read it.
 * From that sync on, N's stretch may be written over; until then a record
 * that would go over it copies and syncs first (alex_carry_apply,
 * alex_carry_room).  At the letting go the map forgets the places of N's
 * blocks: the file holds them.
 *
 * A new database's placeholder carries too: the copy's first slice writes
 * block 0 with the mark, which makes it the marked database.  Cut before
 * the sync, the first sector reads as one or the other under the same
 * fence, and N's and N + 1's records replay whole over whatever the file
 * holds: N began on an empty database.
 *
 * Why each crash is safe, the header slots being written alternately (a
 * torn one leaves the other):
 *  - N + 1's header lost or torn, its first record on the disk or not:
 *    N's header stands, N's records are whole (nothing went over them) and
 *    replay over the file as before.  N + 1's records say CARRY, so no
 *    header is rebuilt from them (protect.c: alex_protect_adopt).
 *  - N + 1's header durable: N's records, then N + 1's, over a file that
 *    holds any mix of N's blocks and newer ones (a copy cut short):
 *    replaying a block's versions in order ends at its last one, and a
 *    DELTA rooted at the file reads right over any version (format.h).
 *  - the header without N durable: the file was synced with every block
 *    of N first; N + 1's records replay over it.
 * The fence never moves between carried epochs, so no write to the
 * database file has to be ordered against the log's; it comes off only at
 * a checkpoint that ends the chain (ckpt.c), as before.
 *
 * A DELTA never takes a place of another epoch as its prev (stage.c): the
 * chain would break when that stretch is written over.  Page 1 goes into
 * each epoch's first commit record (write.c), so that while the file is
 * marked the true page 1 is always in the current epoch's records.
 */
#include <stdlib.h>
#include <string.h>

#include "carry.h"
#include "ckpt.h"
#include "dbg.h"
#include "engine.h"
#include "log.h"

int alex_carry_possible(const alex_db *db)
{
	return db->cfg.ckpt_carry && alex_format_carry(db->hdr.version) &&
	       db->cfg.sync == ALEX_SYNC_FULL && !db->cfg.readonly &&
	       (db->hdr.flags & ALEX_HDR_FENCED) &&
	       (db->mark.kind == ALEX_MARK_SQLITE || db->mark.kind == ALEX_MARK_PLACEHOLDER) &&
	       db->epoch_live && db->epoch_started && db->own_commits && !db->own_cut &&
	       !db->hdr.prev_epoch &&
	       db->hdr_synced && memcmp(&db->hdr, &db->hdr_disk, sizeof db->hdr) == 0 &&
	       !db->unsynced_commit && !db->unsynced_spill && !db->pending.n &&
	       !db->txn_truncated && !db->cond_open && !db->doubt && !db->above_holds &&
	       !db->io.ops->ident && !db->failed && !db->making_room && !ALEX_SPACE_LOW(db) &&
	       db->log_fd >= 0 && !db->log_stub && !(db->hdr.flags & ALEX_HDR_XTS);
}

/* The map forgets blocks whose place is in another epoch's records: the
 * carried one's, let go, whose stretch this epoch may now write over; the
 * base files hold them, durably (alex_carry_copied). */
static int forget_carried(alex_db *db)
{
	uint32_t epoch = (uint32_t)db->hdr.epoch;
	uint64_t *gone = malloc((db->map.n ? db->map.n : 1) * sizeof *gone);
	size_t n = 0;

	if (!gone)
		return ALEX_ENOMEM;
	for (size_t i = 0; i < db->map.cap; i++)
		if (db->map.keys[i] && db->map.vals[i].epoch != epoch)
			gone[n++] = db->map.keys[i];
	for (size_t i = 0; i < n; i++)
		alex_map_del(&db->map, gone[i]);
	free(gone);
	return 0;
}

int alex_carry_copied(alex_db *db)
{
	uint64_t phys[ALEX_NFILES];
	int err;

	/* the lengths first: a failure leaves the map and the limits as they
	 * were, not blocks forgotten past a limit that still says less */
	for (int f = 0; f < ALEX_NFILES; f++) {
		phys[f] = 0;
		if ((db->cfg.db_only && f != ALEX_FILE_DB) || db->base_fd[f] < 0)
			continue; /* SQLite's journal and WAL: never copied */
		if ((err = db->io.ops->size(db->io.ctx, db->base_fd[f], &phys[f])))
			return err;
	}
	if ((err = forget_carried(db)))
		return err;
	for (int f = 0; f < ALEX_NFILES; f++) {
		if ((db->cfg.db_only && f != ALEX_FILE_DB) || db->base_fd[f] < 0)
			continue;
		uint64_t l = phys[f] < db->own_min[f] ? phys[f] : db->own_min[f];
		db->climit[f] = l;
		/* an open transaction's view: below both (write.c) */
		db->limit[f] = db->txn_cut[f] < l ? db->txn_cut[f] : l;
	}
	return 0;
}

int alex_carry_begin(alex_db *db)
{
	struct alex_loghdr *h = &db->hdr;
	uint64_t d = alex_data_off(db), e = db->append_off;
	int err;

	h->fence_epoch = alex_hdr_fence_epoch(h);
	h->prev_epoch = h->epoch;
	h->prev_off = d;
	h->prev_end = e;
	h->prev_lsn = h->start_lsn;
	h->prev_salt = h->salt;
	h->epoch++;
	h->start_lsn = db->next_lsn;
	h->salt = alex_random32();
	h->data_off = d >= ALEX_LOG_DATA + ALEX_LOG_RUN ? ALEX_LOG_DATA : alex_epoch_follows_at(e);
	db->prev_crc = h->salt;
	db->append_off = h->data_off;
	alex_own_reset(db);
	db->st.log_used = 0;
	if ((err = alex_log_write_header(db))) {
		db->failed = 1; /* which header the disk holds is not known */
		return err;
	}
	db->ca.mine = h->epoch;
	db->ca.mine_salt = h->salt;
	db->st.carries++;
	DBGS(db, "carry", " commit=%llu", (unsigned long long)db->st.commits);
	return 0;
}

/*
 * Only the engine that began the carried epoch copies it without waiting.
 * Another engine's copy after this one's sync would leave writes of the
 * database file unsynced under a header that lets the carried epoch go:
 * a power cut keeping part of them tore a block that a delta rooted at the
 * file then read (carry/two_engines..., 80 seeds, found in review of an
 * earlier version).  Another engine that must write over the carried
 * records copies, syncs and lets go at once (alex_carry_room), and its
 * checkpoint copies everything and syncs.
 */
int alex_carry_apply_due(const alex_db *db)
{
	return db->hdr.prev_epoch && db->hdr_synced && db->own_commits && !db->failed &&
	       db->ca.mine == db->hdr.epoch && db->ca.mine_salt == db->hdr.salt;
}

/* The carried epoch is in the base files, durably: this epoch's header
 * again without it (carry.c), and the base files' length counts. */
static int let_go(alex_db *db)
{
	struct alex_loghdr *h = &db->hdr;
	int err;

	if ((err = alex_carry_copied(db)))
		return err;
	alex_carry_gone(db, h);
	alex_hdr_no_prev(h);
	if ((err = alex_log_write_header(db))) {
		db->failed = 1;
		return err;
	}
	db->st.carry_applies++;
	DBGS(db, "carry let go", " commit=%llu", (unsigned long long)db->st.commits);
	return 0;
}

/* A copy in slices or in flight is of no more use. */
static void ca_drop(alex_db *db)
{
	free(db->ca.keys);
	free(db->ca.buf);
	db->ca.keys = NULL;
	db->ca.buf = NULL;
	db->ca.n = db->ca.pos = 0;
	db->ca.state = ALEX_CA_IDLE;
}

int alex_carry_apply(alex_db *db)
{
	int err;

	if ((err = alex_ckpt_copy(db, 1)))
		return err;
	ca_drop(db);
	return let_go(db);
}

/* A sync of the base file made or failed; the copy it covered was made
 * for this epoch, and the epoch still carries (else a checkpoint came
 * between, which copied everything itself). */
static int synced(alex_db *db)
{
	int err = db->ca.err;

	db->ca.state = ALEX_CA_IDLE;
	if (err) {
		/* the page cache may show bytes the disk lacks (ckpt.c) */
		db->ckpt_doubt = 1;
		if (db->io.ops->forget)
			db->io.ops->forget(db->io.ctx, db->base_fd[ALEX_FILE_DB]);
		return err;
	}
	if (!db->hdr.prev_epoch || db->hdr.epoch != db->ca.epoch || db->hdr.salt != db->ca.salt)
		return 0;
	return let_go(db);
}

/*
 * Blocks of the copy this commit must take: as many as get the copy over
 * before this epoch has used half the log at which its own checkpoint may
 * come due, and its sync and the letting go in the other half -- else that
 * checkpoint would find the carried epoch still live and run the old way,
 * inside its commit.  At the pace of the log since this engine's last
 * slice: other engines' commits use it too, and only this one copies.
 * Three quarters made each slice smaller (the slowest merges of NORMAL's
 * large workload 7.4/6.3 -> 5.1/4.7 ms) but left a slow disk's sync of the
 * copy too little log: with the base file's sync held 300 ms, more of the
 * checkpoints ran the old way (review, docs/ENGINE.md).
 */
static size_t slice_need(alex_db *db)
{
	size_t left = db->ca.n - db->ca.pos, k = left;
	uint64_t used = db->append_off - alex_data_off(db), half = alex_ckpt_soonest(db) / 2;
	uint64_t pace = used - db->ca.used, per = used / (db->own_commits ? db->own_commits : 1);

	if (pace < per)
		pace = per; /* the first slice, or a commit smaller than most */
	if (!pace)
		pace = 1;
	db->ca.used = used;
	/* and two commits' worth kept besides */
	if (used + 2 * pace < half)
		k = (size_t)(((uint64_t)left * pace + (half - used - 2 * pace) - 1) /
			     (half - used - 2 * pace));
	return k < left ? k : left;
}

int alex_carry_step(alex_db *db)
{
	int err;

	switch (db->ca.state) {
	case ALEX_CA_IDLE:
		if (!alex_carry_apply_due(db))
			return 0;
		if (db->ca.pause) {
			db->ca.pause--; /* the last try failed: not at every commit */
			return 0;
		}
		/* the slices' buffer, made once for the copy: not a heap block
		 * (or, at 256 KiB, a fresh mapping) at every commit */
		if (!(db->ca.buf = malloc((size_t)ALEX_CKPT_SLICE_MAX * ALEX_BLOCK)) ||
		    (err = alex_ckpt_slices_begin(db, &db->ca.keys, &db->ca.n))) {
			err = db->ca.buf ? err : ALEX_ENOMEM;
			ca_drop(db);
			db->ca.pause = ALEX_CA_PAUSE;
			return err;
		}
		db->ca.used = db->append_off - alex_data_off(db);
		DBGS(db, "carry copy", " commit=%llu blocks=%zu", (unsigned long long)db->st.commits,
		     db->ca.n);
		db->ca.state = ALEX_CA_COPYING;
		db->ca.pos = 0;
		db->ca.epoch = db->hdr.epoch;
		db->ca.salt = db->hdr.salt;
		/* the first slice */
		__attribute__((fallthrough));
	case ALEX_CA_COPYING: {
		/* the epoch still carries, and this engine began it (a
		 * checkpoint, or another engine's copy, came between) */
		if (!alex_carry_apply_due(db) || db->hdr.epoch != db->ca.epoch ||
		    db->hdr.salt != db->ca.salt) {
			ca_drop(db);
			return 0;
		}
		/* what must be copied now, and up to ALEX_CA_SLICE blocks while
		 * they are cheap (alex_ckpt_slice) */
		size_t need = slice_need(db), most = need > ALEX_CA_SLICE ? need : ALEX_CA_SLICE;
		while (most && db->ca.pos < db->ca.n) {
			size_t avail = db->ca.n - db->ca.pos, used;
			avail = avail < most ? avail : most;
			avail = avail < ALEX_CKPT_SLICE_MAX ? avail : ALEX_CKPT_SLICE_MAX;
			if ((err = alex_ckpt_slice(db, db->ca.keys + db->ca.pos, avail,
						   need < avail ? need : avail, db->ca.buf, &used))) {
				ca_drop(db);
				db->ca.pause = ALEX_CA_PAUSE;
				return err;
			}
			db->ca.pos += used;
			most -= used;
			need -= need < used ? need : used;
			if (!need && used < avail)
				break; /* the rest is cold: at the next commits */
		}
		if (db->ca.pos < db->ca.n)
			return 0;
		if ((err = alex_ckpt_slices_end(db))) {
			ca_drop(db);
			db->ca.pause = ALEX_CA_PAUSE;
			return err;
		}
		DBGS(db, "carry copied", " commit=%llu", (unsigned long long)db->st.commits);
		ca_drop(db);
		db->ca.state = ALEX_CA_COPIED;
		db->ca.waits = 0;
		db->ca.err = 0;
		db->bg_want |= ALEX_WANT_NOW; /* the syncing thread takes it (alex_sync_start) */
		return 0;
	}
	case ALEX_CA_COPIED:
		/* no syncing thread took it (none made, or none at all: the
		 * engine alone): here, then */
		if (++db->ca.waits < ALEX_CA_INLINE_AFTER)
			return 0;
		db->ca.err = db->io.ops->fdatasync(db->io.ctx, db->base_fd[ALEX_FILE_DB]);
		db->ca.state = ALEX_CA_DONE;
		return 0;
	default:
		return 0; /* the thread is in its sync, or the next commit lets go */
	}
}

int alex_carry_let_go(alex_db *db)
{
	return db->ca.state == ALEX_CA_DONE ? synced(db) : 0;
}

void alex_carry_gone(alex_db *db, const struct alex_loghdr *was)
{
	db->ca.gone_off = was->prev_off;
	db->ca.gone_end = was->prev_end;
}

int alex_carry_room(alex_db *db, uint64_t off, uint64_t len)
{
	const struct alex_loghdr *h = &db->hdr;
	int err;

	/* Let go, but the header that says so is not durable yet: written
	 * with a record over the stretch in one sync, a cut could keep the
	 * record and lose the header, and the slot before it would name
	 * carried records that no longer read back -- the log damaged, every
	 * commit in it unreachable (found in review, a test since) */
	if (!h->prev_epoch)
		return off < db->ca.gone_end && off + len > db->ca.gone_off ? alex_log_sync(db) : 0;
	if (alex_data_off(db) > h->prev_off || off + len <= h->prev_off)
		return 0;
	/* the header that names the carried records must be durable before
	 * the one that lets them go, and that one before they are written over */
	if ((!db->hdr_synced && (err = alex_log_sync(db))) || (err = alex_carry_apply(db)) ||
	    (err = alex_log_sync(db)))
		return err;
	return 0;
}
