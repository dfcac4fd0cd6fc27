/*
 * refresh.c - catching up with the log as other engines (other processes)
 * left it, dropping an open transaction, and a checkpoint on request.
 */
#include <string.h>

#include "carry.h"
#include "ckpt.h"
#include "dbg.h"
#include "engine.h"
#include "io_over.h"
#include "log.h"
#include "protect.h"
#include "recover.h"
#include "shm.h"

/* Starts over from the base files: another engine checkpointed, or the log
 * came or went.  A conditional group recovery held back is decided at once
 * when the caller may (alex_refresh_scan). */
static int restart(alex_db *db, int may_abort)
{
	int err;

	alex_map_clear(&db->map);
	db->rec_locked = may_abort;
	if ((err = alex_bases_open(db)) || (err = alex_recover(db)))
		return err;
	DBGS(db, "restart", "");
	if (may_abort && db->doubt)
		err = alex_refresh_scan(db, 1);
	return err;
}

/* below has no log, and the file is as it was when below last looked for
 * one and found none: an SQLite header without a mark */
static int quiet(const alex_db *below)
{
	return below->log_fd < 0 && below->base_markable && below->nolog_seen &&
	       below->base_stamp == below->nolog_stamp;
}

/*
 * Catches up with the log as other engines left it.  The log may have been
 * made or removed (the last engine of a process that checkpointed at its
 * close), or a checkpoint began a new epoch (another uuid, epoch or salt in
 * the header): then everything the map held is in the base files, and this
 * engine starts over from them.  Otherwise it reads the records appended
 * since.  With nothing in the log, the base files are the whole truth, and
 * a program without ALEX may have written them (the fence is down): their
 * sizes are read again.
 */
static int reload_once(alex_db *db, int force, int may_abort)
{
	struct alex_loghdr h;
	int changed, err;
	alex_db *below = db->below_looked ? alex_io_over_below(db) : NULL;

	/* No log here when this engine last looked, and the database file's
	 * header and size are as they were then, an SQLite header without a
	 * mark: no log can have begun to hold a commit since (a fenced epoch's
	 * first record follows its mark on the file), so whether a log has
	 * appeared need not be asked again (an faccessat per transaction).
	 * "As they were" matters: an epoch that is not fenced (a header
	 * alex_protect_markable refuses) leaves no mark, and its checkpoint cut
	 * short leaves a markable header over a half-copied file while the
	 * log keeps the commits (review) -- but that header is new. */
	int probed = 0;
	if (!force && db->log_fd < 0 && db->cfg.protect_base) {
		if ((err = alex_bases_open(db)))
			return err;
		probed = 1;
		if (db->base_markable && db->nolog_seen && db->base_stamp == db->nolog_stamp)
			return 0;
	}
	/* The same for a staging engine, looked at right after below (merge.c):
	 * a process that staged a commit since this engine found no staging
	 * log fenced below first (io_over.c: prepare), and the mark changed
	 * the file below found quiet just now.  One made and still empty is
	 * met when this engine makes its own (alex_log_begin_epoch: EEXIST). */
	if (!force && below && db->log_fd < 0 && quiet(below) && db->nolog_seen &&
	    db->nolog_stamp == below->base_stamp)
		return 0;
	int none = db->log_fd < 0;
	if ((err = alex_log_changed(db, &changed)))
		return err;
	db->nolog_seen = (probed || (below && none && quiet(below))) && !changed;
	db->nolog_stamp = below ? below->base_stamp : db->base_stamp;
	if (changed && (err = alex_log_reopen(db)))
		return err;
	if (force || changed)
		err = restart(db, may_abort);
	else if (db->log_fd < 0 || db->log_stub)
		err = alex_bases_open(db);
	else if ((err = alex_log_read_header(db, &h)) == ALEX_ENOLOG)
		err = 0; /* another process is making it: nothing in it yet */
	else if (!err && (h.epoch != db->hdr.epoch || h.salt != db->hdr.salt ||
			  memcmp(h.uuid, db->hdr.uuid, 16) != 0 || !db->epoch_live)) {
		db->hdr = h;
		err = restart(db, may_abort);
	} else if (!err) {
		int copied = db->hdr.prev_epoch && !h.prev_epoch;
		if (copied)
			alex_carry_gone(db, &db->hdr);
		if (memcmp(&h, &db->hdr, sizeof h) != 0)
			db->hdr = db->hdr_disk = h; /* the epoch became fenced, or
						       its carried one copied */
		/* Nothing in the log when this engine last looked: the fence
		 * was down, and the base files may have changed since -- a
		 * program without ALEX, or SQLite's own WAL checkpoints in a
		 * process in WAL mode.  Records appended since lie over the
		 * files as they are now, so the files are read first. */
		if (!db->epoch_commits && (err = alex_bases_open(db)))
			return err;
		err = alex_refresh_scan(db, may_abort);
		/* failed, the next look starts over from the header it read
		 * (the map may hold places of the stretch let go) */
		if (!err && copied && (err = alex_carry_copied(db)))
			db->epoch_live = 0;
	}
	return err;
}

/* ... and with no log, a fence on the base is a log gone (protect.c) */
static int reload_log(alex_db *db, int force, int may_abort)
{
	for (int look = 0;; look++) {
		int err = reload_once(db, force, may_abort);
		if (!err && db->log_fd < 0)
			err = alex_protect_orphaned(db);
		if (err != ALEX_ERACED)
			return err;
		if (look == 8)
			return ALEX_EINUSE;
		force = 1;
	}
}

/*
 * The fast way (shm.c): nothing changed in the log since this engine last
 * read it.  If the log holds pages, the base files are fenced and no
 * program without ALEX can have written them: nothing is read.  If it holds
 * none (a kept log at rest, an epoch begun and not yet written), the fence
 * is down, so the base files are read again, as the slow way does
 * (reload_log), but not the log.  Else the log is read, and what that read
 * saw is remembered when no change raced it.
 */
int alex_reload(alex_db *db, int force, int may_abort)
{
	struct alex_shm_look look;
	int err;
	int unchanged = !force && db->epoch_live && !db->doubt && alex_shm_unchanged(db);

	if (db->cfg.readonly)
		may_abort = 0; /* recovery that writes nothing */

	/* with commits staged above, this epoch is fenced though it may hold
	 * no record yet (io_over.h: prepare): no program without ALEX can
	 * have written the base files either */
	if (unchanged && (db->epoch_commits || db->above_holds)) {
		db->st.refreshes_skipped++;
	} else if (unchanged) {
		uint64_t stamp = db->base_stamp;
		if ((err = alex_bases_open(db)))
			return err;
		if (db->base_stamp != stamp)
			db->view_gen++;
	} else {
		struct alex_loghdr was = db->hdr;
		uint64_t lsn = db->next_lsn, stamp = db->base_stamp;
		alex_shm_look_begin(db, &look);
		err = reload_log(db, force, may_abort);
		alex_shm_look_end(db, &look, err);
		DBGS(db, "reload slow", " seen_ok=%d", db->shm_seen_ok);
		if (err)
			return err;
		/* what another process (or, with nothing in the log, a program
		 * without ALEX: the file's header or size then changed) may have
		 * changed: a memory image of the view must be made again */
		if (force || db->base_stamp != stamp || db->next_lsn != lsn || db->hdr.epoch != was.epoch ||
		    db->hdr.salt != was.salt || memcmp(db->hdr.uuid, was.uuid, 16) != 0)
			db->view_gen++;
	}
	for (int f = 0; f < ALEX_NFILES; f++) {
		db->size[f] = db->csize[f];
		db->limit[f] = db->climit[f];
	}
	return 0;
}

int alex_refresh(alex_db *db, int locked)
{
	if (db->failed)
		return ALEX_EFAILED;
	if (alex_txn_open(db))
		return 0;
	return alex_reload(db, 0, locked);
}

int alex_discard(alex_db *db)
{
	if (!alex_txn_open(db))
		return 0;
	alex_col_clear(&db->col);
	alex_map_clear(&db->pending);
	db->txn_truncated = 0;
	for (int f = 0; f < ALEX_NFILES; f++)
		db->trunc[f] = db->txn_cut[f] = ALEX_NO_TRUNC;
	/* the committed map may already hold the dropped truncations' cuts */
	return alex_reload(db, 1, 0);
}

int alex_holds_pages(const alex_db *db)
{
	return db->epoch_commits != 0;
}

int alex_stale_mark(const alex_db *db)
{
	return !db->epoch_commits && !db->above_holds && db->mark.kind != ALEX_MARK_NONE;
}

int alex_base_is_ours(alex_db *db)
{
	if (!db->cfg.protect_base || db->base_fd[ALEX_FILE_DB] < 0 ||
	    !(db->hdr.flags & ALEX_HDR_FENCED) || (!db->epoch_commits && !db->above_holds))
		return 1;
	return alex_protect_carries(db);
}

int alex_fence_now(alex_db *db, struct alex_fence *f)
{
	memset(f, 0, sizeof *f);
	/* a staging engine above holding commits fenced this epoch first
	 * (io_over.h: prepare), though it may hold no record yet */
	if (db->failed || db->doubt || !db->epoch_live || (!db->epoch_commits && !db->above_holds) ||
	    !(db->hdr.flags & ALEX_HDR_FENCED) || !alex_shm_unchanged(db))
		return 0;
	memcpy(f->uuid, db->hdr.uuid, sizeof f->uuid);
	f->epoch = db->hdr.epoch;
	f->salt = db->hdr.salt;
	f->on = 1;
	return 1;
}

/*
 * A checkpoint on request may run beside other processes that hold only
 * SQLite's SHARED lock (libalex.so before SQLite opens a WAL): the log's
 * checkpoint lock keeps two of them from beginning two epochs, and the one
 * that comes second finds the work done when it catches up.
 */
int alex_checkpoint(alex_db *db)
{
	int err, rc;

	if (db->failed)
		return ALEX_EFAILED;
	if ((err = alex_log_lock_ckpt(db, 1)))
		return err;
	if (!(err = alex_refresh(db, 1)))
		err = alex_ckpt_run(db);
	if ((rc = alex_log_lock_ckpt(db, 0)) && !err)
		err = rc;
	return err;
}
