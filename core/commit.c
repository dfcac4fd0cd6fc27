/*
 * commit.c - a transaction's end: its commit record, written and (by the
 * sync mode) synced, then published to the map; NORMAL mode's deferred
 * syncs; commits across databases (format.h: COND); and what a commit
 * may set off: a checkpoint, at the threshold or when SQLite enters WAL
 * mode.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "carry.h"
#include "ckpt.h"
#include "dbg.h"
#include "engine.h"
#include "flush.h"
#include "log.h"

void alex_sync_reset(alex_db *db)
{
	db->unsynced_commit = db->unsynced_spill = 0;
	db->unsynced_bytes = 0;
	db->unsynced_since_ns = 0;
	db->sync_resets++;
	db->bg_asked = db->bg_want = 0;
}

/* Time for a sync outside the lock, early enough that commits seldom reach
 * NORMAL's whole window: half its bytes (a sync takes a while, and commits
 * go on meanwhile), or three quarters of its time (the syncing thread
 * looks then: alex_sync_due_at, so no commit waits longer than the window). */
static uint64_t soon_ns(const alex_db *db)
{
	return (uint64_t)(db->cfg.sync_ms - db->cfg.sync_ms / 4) * 1000000u;
}

static int sync_soon(const alex_db *db, uint64_t now)
{
	return alex_flush_past(db->cfg.extent_bytes / 2, soon_ns(db), db->unsynced_bytes,
			       db->unsynced_since_ns, now);
}

static int sync_records(alex_db *db)
{
	int err = alex_log_sync(db);

	if (err)
		return err;
	alex_sync_reset(db);
	db->log_foreign = 0;
	return 0;
}

/*
 * A full disk, and no checkpoint could make room: SQLite's answer to
 * SQLITE_FULL is to roll back, writing the pages it changed back as they
 * were -- a transaction that changes nothing, which needs no room.  Drop
 * every collected block that equals its committed content; 1 if nothing of
 * the transaction is left, which then commits as a no-op.
 */
static int drop_unchanged(alex_db *db)
{
	struct alex_collect *c = &db->col;
	uint8_t *cur = db->scratch + ALEX_BLOCK;

	if (db->pending.n)
		return 0;
	for (int f = 0; f < ALEX_NFILES; f++)
		if (db->size[f] != db->csize[f] ||
		    (db->trunc[f] != ALEX_NO_TRUNC && db->trunc[f] < db->csize[f]))
			return 0; /* a size change is a change */
	for (uint32_t i = 0; i < c->used; i++) {
		uint64_t k = c->slot_key[i];
		if (!k)
			continue;
		if (alex_block_load(db, alex_key_file(k), alex_key_block(k), cur) ||
		    memcmp(cur, alex_col_slot(c, i), ALEX_BLOCK) != 0)
			return 0;
		alex_map_del(&c->index, k);
		c->slot_key[i] = 0;
	}
	alex_col_clear(c);
	for (int f = 0; f < ALEX_NFILES; f++) {
		db->trunc[f] = db->txn_cut[f] = ALEX_NO_TRUNC;
		db->limit[f] = db->climit[f];
	}
	db->txn_truncated = 0;
	return 1;
}

/*
 * Does the open transaction change page 1 into a WAL-mode header (SQLite's
 * read and write versions 2)?  journal_mode=WAL writes exactly that, in a
 * rollback-journal transaction of its own.
 */
static int enters_wal(alex_db *db)
{
	int64_t slot = alex_col_find(&db->col, alex_key(ALEX_FILE_DB, 0));

	if (!db->cfg.protect_base || slot < 0)
		return 0;
	const uint8_t *p = alex_col_slot(&db->col, (uint32_t)slot);
	return memcmp(p, "SQLite format 3", 16) == 0 && p[18] == 2 && p[19] == 2;
}

/*
 * When to checkpoint: at checkpoint_bytes of log, or sooner when the file
 * system runs short -- the log may take at most a quarter of what is free,
 * so that it never crowds out the database it will be copied into.
 */
static uint64_t ckpt_threshold(alex_db *db)
{
	uint64_t t = db->cfg.checkpoint_bytes, avail;

	if (db->space_avail < 4 * t && db->log_fd >= 0 &&
	    db->io.ops->space(db->io.ctx, db->log_fd, &avail) == 0)
		db->space_avail = avail;
	if (db->space_avail / 4 < t)
		t = db->space_avail / 4 > ALEX_BLOCK ? db->space_avail / 4 : ALEX_BLOCK;
	return t;
}

/*
 * In FULL mode, sooner still, from CKPT_EARLY of log on, when the
 * checkpoint is cheap: the pages it would copy are at most a quarter of
 * the log's bytes (the same few pages written again and again, as inserts
 * into a table do).  The log's space is then written again sooner, and a
 * block is zero-filled only on the log's first pass (log_space.c): the
 * zeros were 40 % of the device bytes of alex-bench's insert run (WAF 87
 * -> 54, mixed 60 -> 44).  With DELTA blocks (format 7) a commit logs some
 * 700 bytes, not 4 KiB: the zeros were half the device bytes again, and
 * the log holds fewer bytes per page, so 4 MiB and a sixteenth became
 * 1 MiB and a quarter (insert WAF 14.1 -> 10.0, mixed 12.6 -> 11.0; the
 * copy is then at most 64 pages).  A log of many distinct pages (random
 * updates over a large file) still waits for checkpoint_bytes: there a
 * checkpoint would stall the commit that runs it for long.  NORMAL mode
 * writes no zeros, and measured no fewer device bytes this way, only a
 * stall of a few milliseconds every CKPT_EARLY.
 */
#define CKPT_EARLY (1u << 20)
#define CKPT_EARLY_RATIO 4u

/* May a checkpoint come due at CKPT_EARLY of log? */
static int early_allowed(const alex_db *db)
{
	return db->cfg.sync == ALEX_SYNC_FULL && db->cfg.checkpoint_bytes > CKPT_EARLY;
}

uint64_t alex_ckpt_soonest(alex_db *db)
{
	uint64_t t = ckpt_threshold(db);

	return early_allowed(db) && t > CKPT_EARLY ? CKPT_EARLY : t;
}

static int ckpt_due(alex_db *db)
{
	uint64_t used = db->append_off - alex_data_off(db);

	if (db->io.ops->ident || db->above_holds || db->ckpt_held)
		return 0; /* merged, not checkpointed; or held until merged */
	if (used >= ckpt_threshold(db))
		return 1;
	return early_allowed(db) && used >= CKPT_EARLY &&
	       (uint64_t)db->map.n * ALEX_BLOCK * CKPT_EARLY_RATIO <= used;
}

int alex_stage_ckpt_due(alex_db *b)
{
	int held = b->above_holds, due;

	b->above_holds = 0; /* as it will be once the merge is in */
	due = ckpt_due(b);
	b->above_holds = held;
	return due;
}

int alex_ckpt_if_due(alex_db *db)
{
	if (!ckpt_due(db))
		return 0;
	/* after a merge: below is FULL while a staging engine is attached
	 * (io_over.c), so its checkpoint carries as a commit's does -- the
	 * old way, a large database's random pages held the merge's commit
	 * for 211 ms (alex-bench large, NORMAL, a 1 MiB checkpoint) */
	int err = alex_carry_possible(db) ? alex_carry_begin(db) : alex_ckpt_run_in_commit(db);
	if (err)
		db->st.checkpoint_failures++;
	return err;
}

/* Stages the open transaction as a commit record and writes it (not
 * synced); a full disk first tries a checkpoint for room. */
static int write_commit(alex_db *db, uint32_t *len, uint32_t *n, uint64_t *off)
{
	int err;

	for (int again = 0;; again = 1) {
		if (!(err = alex_txn_carry_page1(db)) && !(err = alex_epoch_ensure(db)) &&
		    !(err = alex_stage_build(db, ALEX_REC_COMMIT | (db->cond ? ALEX_REC_COND : 0), len, n)))
			err = alex_log_append(db, *len, off);
		/* a checkpoint begins a new epoch: stage the record again */
		if (!alex_disk_full(err) || again || alex_make_room(db) != 0)
			return err;
	}
}

/* The record is written (and synced if it had to be): its blocks, and the
 * spilled ones before them, become the committed state. */
static int commit_publish(alex_db *db, uint64_t off, uint32_t len, uint32_t n)
{
	int err = 0;

	/* spilled blocks are older than the collector's: publish them first
	 * (most transactions spill nothing: no walk over the table then) */
	if (db->pending.n) {
		for (size_t i = 0; i < db->pending.cap; i++)
			if (db->pending.keys[i] && !err)
				err = alex_map_put(&db->map, db->pending.keys[i], &db->pending.vals[i]);
		alex_map_clear(&db->pending);
	}
	if (err) {
		db->failed = 1;
		return err;
	}
	if ((err = alex_stage_publish(db, &db->map, off, len, n)))
		return err;
	for (int f = 0; f < ALEX_NFILES; f++) {
		db->csize[f] = db->size[f];
		db->climit[f] = db->limit[f];
		if (db->txn_cut[f] < db->own_min[f])
			db->own_min[f] = db->txn_cut[f];
		db->txn_cut[f] = ALEX_NO_TRUNC;
	}
	db->txn++;
	db->own_cut |= db->txn_truncated;
	db->txn_truncated = 0;
	db->epoch_commits++;
	db->own_commits++;
	db->st.commits++;
	return 0;
}

/* FULL mode's records of alex_commit_now, not synced yet */
static int written_unsynced(const alex_db *db)
{
	return db->cfg.sync == ALEX_SYNC_FULL && db->unsynced_commit;
}

/* After an unconditional commit: the sync window of NORMAL, and the
 * checkpoint that a full log or a database entering WAL mode calls for. */
static int commit_after(alex_db *db, int sync, int to_wal, uint32_t len)
{
	int err;

	if (!sync && db->cfg.sync != ALEX_SYNC_OFF) {
		uint64_t now = alex_now_ns();
		db->unsynced_commit = 1;
		db->unsynced_bytes += len;
		db->unsynced_seq++;
		/* the first unsynced commit: the syncing thread, asleep while
		 * nothing waits, starts its clock (alex_sync_wanted) -- not for
		 * FULL's (alex_commit_now), which the next boundary syncs */
		if (!db->unsynced_since_ns) {
			db->unsynced_since_ns = now;
			db->bg_want |= db->cfg.sync == ALEX_SYNC_NORMAL ? ALEX_WANT_CLOCK : 0;
		}
		/* the whole window: synced here, before the commit returns;
		 * most of it: a sync outside the lock is asked for, which keeps
		 * the commits that follow from ever reaching the whole */
		if (db->cfg.sync == ALEX_SYNC_NORMAL &&
		    alex_flush_due(&db->cfg, db->unsynced_bytes, db->unsynced_since_ns, now) &&
		    (err = sync_records(db))) {
			db->failed = 1; /* committed records we no longer hold */
			return err;
		}
		if (db->cfg.sync == ALEX_SYNC_NORMAL && db->unsynced_commit && !db->bg.on &&
		    !db->bg_asked && sync_soon(db, now)) {
			db->bg_asked = 1;
			db->bg_want |= ALEX_WANT_NOW;
		}
	}
	/* A database that enters WAL mode leaves the log at once: from now on
	 * SQLite writes it directly (its WAL and its checkpoints), and programs
	 * without ALEX read it through the WAL, where no mark can reach them.
	 * A failure is counted; libalex.so then refuses the WAL (docs/PRELOAD.md). */
	if (!to_wal && ckpt_due(db) && alex_carry_possible(db)) {
		/* only a header: the copy comes at a later commit (carry.c) */
		if (alex_carry_begin(db))
			db->st.checkpoint_failures++;
	} else if (to_wal || ckpt_due(db)) {
		if (alex_ckpt_run_in_commit(db))
			db->st.checkpoint_failures++;
	} else if (!written_unsynced(db) && alex_carry_step(db)) {
		/* (no slice after alex_commit_now's records, unsynced: a slice
		 * copies blocks as committed into the database file, which the
		 * syncing thread syncs -- a version that may never reach the
		 * log's disk, under which recovery's deltas would make a page
		 * that never was: review, test_commit_now.c) */
		db->st.checkpoint_failures++;
	}
	return 0;
}

/* A carried epoch's finished copy let go before a sync (carry.c): 0, or
 * ALEX_EFAILED when that failed the engine (a failure is counted). */
static int carry_let_go(alex_db *db)
{
	if (alex_carry_let_go(db)) {
		db->st.checkpoint_failures++;
		if (db->failed)
			return ALEX_EFAILED;
	}
	return 0;
}

/* FULL mode, no transaction open: alex_commit_now's records, synced as a
 * commit's would be. */
static int sync_written(alex_db *db)
{
	int err;

	if (db->failed)
		return ALEX_EFAILED;
	return (err = carry_let_go(db)) ? err : alex_sync(db);
}

int alex_commit_due(const alex_db *db)
{
	return alex_txn_open(db) || written_unsynced(db);
}

/* sync: FULL's promise, that the record is on disk before this returns.
 * cond: the super-journal of a transaction across databases (or NULL). */
static int commit(alex_db *db, int sync, const char *cond)
{
	uint32_t len, n;
	uint64_t off;
	int err;

	/* nothing to commit: a failed engine lets SQLite end its transaction
	 * (release its lock, delete its journal) and say the error at its
	 * next read or write instead */
	if (!alex_txn_open(db))
		return sync && written_unsynced(db) ? sync_written(db) : 0;
	if (db->failed)
		return ALEX_EFAILED;
	int to_wal = enters_wal(db);
	if (sync && (err = carry_let_go(db)))
		return err;
	db->cond = cond;
	err = write_commit(db, &len, &n, &off);
	db->cond = NULL;
	if (alex_disk_full(err) && drop_unchanged(db))
		return 0;
	if (err)
		return err;
	DBGS(db, "commit", " off=%lu len=%u sync=%d", (unsigned long)off, len, sync);
	if (sync && (err = sync_records(db))) {
		/* The record may or may not be on disk.  Nothing moved yet, so a
		 * retry rewrites it in place -- unless spill records, or NORMAL
		 * commits already acknowledged, written before it were covered
		 * by this failed sync: their pages may be gone from the cache's
		 * dirty set, and we no longer hold them (review: a conditional
		 * commit's failed sync, then a retry acknowledged past it). */
		if (db->unsynced_spill || db->unsynced_commit)
			db->failed = 1;
		return err;
	}
	if ((err = commit_publish(db, off, len, n)))
		return err;
	if (cond) {
		db->cond_open = 1;
		db->st.cond_commits++;
		return 0; /* synced above; no checkpoint until it is resolved */
	}
	return commit_after(db, sync, to_wal, len);
}

int alex_commit(alex_db *db)
{
	/* after a conditional commit, before it is resolved, SQLite commits
	 * only its rollback of the transaction (a later database failed), and
	 * syncs that: it must not be lost while the conditional one stands */
	int sync = db->cfg.sync == ALEX_SYNC_FULL ||
		   (db->cond_open && db->cfg.sync != ALEX_SYNC_OFF);
	int err = commit(db, sync, NULL);
	if (err)
		db->shm_seen_ok = 0; /* a record written, not published: read it */
	return err;
}

int alex_commit_now(alex_db *db)
{
	/* FULL: synced only to let a carried epoch's finished copy go, once
	 * a cycle, as the commit after it always does (carry.c) */
	int sync = db->cond_open && db->cfg.sync != ALEX_SYNC_OFF;
	if (db->cfg.sync == ALEX_SYNC_FULL && db->ca.state == ALEX_CA_DONE)
		sync = 1;
	if (db->cfg.sync == ALEX_SYNC_FULL && !db->writes_now)
		alex_log_buffered(db);
	int err = commit(db, sync, NULL);
	if (err)
		db->shm_seen_ok = 0;
	return err;
}

int alex_commit_cond(alex_db *db, const char *super_path)
{
	if (!super_path || !*super_path || strlen(super_path) > ALEX_COND_MAX)
		return ALEX_EINVAL;
	/* the commit point is another file's removal: this record must be on
	 * disk before it, whatever the sync mode */
	int err = commit(db, db->cfg.sync != ALEX_SYNC_OFF, super_path);
	if (err)
		db->shm_seen_ok = 0;
	return err;
}

void alex_resolve(alex_db *db)
{
	db->cond_open = 0;
}

const char *alex_in_doubt(const alex_db *db)
{
	return db->doubt;
}

/* ---- NORMAL's syncs outside the caller's lock ------------------------------ */

int alex_sync_wanted(alex_db *db)
{
	int want = db->bg_want;
	db->bg_want = 0;
	return want;
}

int alex_sync_pending(const alex_db *db)
{
	return db->cfg.sync == ALEX_SYNC_NORMAL && !db->failed && db->unsynced_commit;
}

uint64_t alex_sync_due_at(const alex_db *db)
{
	/* as alex_sync_start asks, or the thread would look again at once */
	if (db->cfg.sync != ALEX_SYNC_NORMAL || db->failed || !db->unsynced_commit || db->bg.on ||
	    db->log_fd < 0)
		return UINT64_MAX;
	return db->unsynced_since_ns + soon_ns(db);
}

int alex_sync_start(alex_db *db)
{
	uint64_t now = alex_now_ns();

	/* a carried epoch's copy: the database file's sync (carry.c) */
	if (db->ca.state == ALEX_CA_COPIED && !db->bg.on && !db->failed &&
	    db->base_fd[ALEX_FILE_DB] >= 0) {
		db->bg.on = 1;
		db->bg.carry = 1;
		db->bg.parked = 0;
		db->bg.fd = db->base_fd[ALEX_FILE_DB];
		db->bg.err = 0;
		__atomic_store_n(&db->bg.state, ALEX_BG_STARTED, __ATOMIC_RELEASE);
		db->ca.state = ALEX_CA_SYNCING;
		return 1;
	}

	if (db->failed || !db->unsynced_commit || db->bg.on || db->log_fd < 0 || !sync_soon(db, now))
		return 0;
	db->bg.on = 1;
	db->bg.carry = 0;
	db->bg.parked = 0;
	db->bg.fd = db->log_fd;
	db->bg.seq = db->unsynced_seq;
	db->bg.bytes = db->unsynced_bytes;
	db->bg.resets = db->sync_resets;
	db->bg.start_ns = now;
	db->bg.err = 0;
	__atomic_store_n(&db->bg.state, ALEX_BG_STARTED, __ATOMIC_RELEASE);
	db->bg_asked = db->bg_want = 0;
	return 1;
}

int alex_sync_run(alex_db *db)
{
	int expect = ALEX_BG_STARTED;
	/* an inline sync that came first took its place (log.c) */
	if (!__atomic_compare_exchange_n(&db->bg.state, &expect, ALEX_BG_RUNNING, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return 0;
	int err = db->io.ops->fdatasync(db->io.ctx, db->bg.fd);
	db->bg.err = err;
	__atomic_store_n(&db->bg.state, ALEX_BG_DONE, __ATOMIC_RELEASE); /* alex_log_sync waits */
	return err;
}

int alex_sync_settle(alex_db *db, int fd)
{
	int expect = ALEX_BG_STARTED;

	if (!db->bg.on || db->bg.parked || db->bg.fd != fd ||
	    __atomic_compare_exchange_n(&db->bg.state, &expect, ALEX_BG_CANCELLED, 0,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return 0;
	if (expect == ALEX_BG_RUNNING) {
		struct timespec pause = { 0, 20000 };
		while (__atomic_load_n(&db->bg.state, __ATOMIC_ACQUIRE) == ALEX_BG_RUNNING)
			nanosleep(&pause, NULL);
		return db->bg.err;
	}
	return expect == ALEX_BG_DONE ? db->bg.err : 0;
}

int alex_sync_finish(alex_db *db, int err)
{
	int state = __atomic_load_n(&db->bg.state, __ATOMIC_ACQUIRE);
	/* STARTED: alex_sync_run was not called -- nothing was synced either */
	int cancelled = state == ALEX_BG_CANCELLED || state == ALEX_BG_STARTED;

	db->bg.on = 0;
	__atomic_store_n(&db->bg.state, 0, __ATOMIC_RELEASE);
	if (db->bg.carry) {
		/* the next commit lets the carried epoch go (carry.c); one
		 * not made (a checkpoint's own sync came first) is made again */
		db->bg.carry = 0;
		if (db->ca.state == ALEX_CA_SYNCING) {
			db->ca.state = cancelled ? ALEX_CA_COPIED : ALEX_CA_DONE;
			db->ca.err = cancelled ? 0 : err;
		}
		return 0;
	}
	if (db->bg.parked) {
		/* the log was closed meanwhile (removed after its checkpoint,
		 * or another's): what the sync covered is not this engine's to
		 * count */
		db->bg.parked = 0;
		db->io.ops->close(db->io.ctx, db->bg.fd);
		return 0;
	}
	if (cancelled)
		return 0; /* no sync was made: nothing is counted */
	db->st.syncs++;
	if (err) {
		db->failed = 1; /* committed records we no longer hold */
		return err;
	}
	/* everything was synced since (inline, or a checkpoint): what is
	 * unsynced now came after, and is not covered */
	if (db->sync_resets != db->bg.resets)
		return 0;
	if (db->unsynced_seq == db->bg.seq) {
		alex_sync_reset(db);
		return 0;
	}
	/* records came after the sync began: they stay unsynced, and their
	 * time runs from no earlier than its start */
	db->unsynced_bytes -= db->bg.bytes <= db->unsynced_bytes ? db->bg.bytes : db->unsynced_bytes;
	if (db->unsynced_since_ns < db->bg.start_ns)
		db->unsynced_since_ns = db->bg.start_ns;
	/* only spills came after (they count no bytes): no commit waits, and
	 * the spills' own commit will be counted when it comes (review: the
	 * flusher ticked for ever on "pending" with nothing due) */
	if (!db->unsynced_bytes) {
		db->unsynced_commit = 0;
		db->unsynced_since_ns = 0;
	}
	return 0;
}

void alex_sync_forget(alex_db *db)
{
	/* the parent copies its carried epoch; a child must not copy beside
	 * it (carry.c: alex_carry_apply_due) */
	db->ca.state = ALEX_CA_IDLE;
	db->ca.mine = 0;
	free(db->ca.keys);
	free(db->ca.buf);
	db->ca.keys = NULL;
	db->ca.buf = NULL;
	if (db->bg.on && db->bg.parked)
		db->io.ops->close(db->io.ctx, db->bg.fd);
	db->bg.on = db->bg.parked = 0;
	__atomic_store_n(&db->bg.state, 0, __ATOMIC_RELEASE);
	db->bg_asked = db->bg_want = 0;
}

int alex_sync(alex_db *db)
{
	int err;

	if (db->failed)
		return ALEX_EFAILED;
	if (!db->unsynced_commit)
		return 0;
	if ((err = sync_records(db)))
		db->failed = 1;
	return err;
}
