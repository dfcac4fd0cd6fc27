/*
 * staging.c - NORMAL mode's staging log in libalex.so (staging.h,
 * docs/STAGING.md).  The engines do the work (core/io_over.h); this file
 * decides when: which processes stage, when a window ends, what a close
 * does.
 *
 * Every process of this version that finds a staging log, or a durable
 * log that says STAGED, runs the pair whatever its own mode, so that no
 * commit of it lands below while the staging log holds newer ones; an
 * older ALEX refuses the log's format (8 or 9).  A FULL process merges at
 * every commit (two records, one sync); a NORMAL one at the first commit
 * past three quarters of its window (or holding half an extent of records,
 * or of distinct blocks), or, when no commit comes by seven
 * eighths, the flusher syncs the staging log instead (no lock needed: every
 * merge is synced, so the point the staging log names stays).
 */
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "flush.h"
#include "format.h"
#include "io_over.h"
#include "real.h"
#include "serve.h"
#include "staging.h"
#include "sqlite_locks.h"
#include "stats.h"
#include "trace.h"

static int attach(struct pdb *db, const struct alex_io *io)
{
	struct alex_config cfg = alex_cfg.engine;
	int rc;

	cfg.readonly = db->readonly;
	/* what the durable engine holds unsynced (its own NORMAL commits
	 * before another process began to stage) is synced first: from now
	 * on it syncs every commit, and its flusher has nothing to do */
	if ((rc = alex_sync(db->eng)) || (rc = alex_io_over_new(db->eng, io, &db->over)))
		return rc;
	alex_config_over(&cfg);
	cfg.remove_log = alex_cfg.engine.remove_log;
	struct alex_io oio = alex_io_over(db->over);
	if ((rc = alex_open(db->path, &cfg, &oio, &db->stg))) {
		db->stg = NULL;
		alex_io_over_free(db->over);
		db->over = NULL;
	} else {
		alex_stage_space(db->eng);
	}
	return rc;
}

int alex_staging_open(struct pdb *db, const struct alex_io *io)
{
	char path[PATH_MAX + 16];
	struct stat st;
	int want = alex_cfg.stage && alex_cfg.engine.sync == ALEX_SYNC_NORMAL && !alex_cfg.engine.key &&
		   !db->readonly && alex_stage_possible(db->eng);
	int must = alex_stage_marked(db->eng);

	if (!must) {
		snprintf(path, sizeof path, "%s-alex-stage", db->path);
		must = REAL(stat)(path, &st) == 0;
	}
	if (!want && !must)
		return 0;
	int rc = alex_cfg.engine.key ? ALEX_EVERSION : attach(db, io);
	if (!rc)
		return 0;
	if (must) {
		alex_msg(ALEX_MSG_ERROR, "%s-alex-stage: this database's commits are staged, and this "
			 "process cannot stage them: %s", db->path, alex_strerror(rc));
		return rc;
	}
	alex_msg(ALEX_MSG_WARN, "%s-alex-stage: cannot stage commits (%s); they go to %s-alex, "
		 "synced within the window", db->path, alex_strerror(rc), db->path);
	return 0;
}

/* A transaction that went to the durable engine is over: the staging
 * engine reads the durable one's new state (its empty epoch takes the new
 * point at its first record: io_over.c). */
static int direct_end(struct pdb *db)
{
	if (!db->stg_direct || alex_txn_open(db->eng))
		return 0;
	db->stg_direct = 0;
	return alex_refresh(db->stg, 1);
}

/*
 * A file system short of space (merge.c: alex_stage_short) has no room for
 * windows, and a transaction in the staging log may not find room even to
 * be rolled back: SQLite undoing a statement after SQLITE_FULL rewrites
 * pages that were spilled, into slots the log must grow for, and finding
 * its journal hot again at every next statement, fails them all.  So the
 * transaction goes to the durable log, as without staging, where a
 * checkpoint gives the log's space back.  Only while the staging log is
 * empty (else the durable log's next commit would move the point its
 * records name): the write lock SQLite holds keeps it so.
 */
void alex_staging_route(struct pdb *db)
{
	alex_db *a = db->stg;

	/* at every write: the cheap test first */
	if (!a || db->stg_direct || !alex_stage_short(db->eng, alex_cfg.engine.extent_bytes) ||
	    !alex_stage_idle(a))
		return;
	db->stg_direct = 1;
	if (!db->stg_said) {
		db->stg_said = 1;
		alex_msg(ALEX_MSG_WARN, "%s-alex-stage: the file system is short of space: commits "
			 "go to %s-alex, synced, until there is room", db->path, db->path);
	}
}

int alex_staging_catch_up(struct pdb *db, int locked)
{
	int rc;

	if (db->stg)
		return (rc = direct_end(db)) ? rc : alex_stage_catch_up(db->stg, db->eng, locked);
	if ((rc = alex_refresh(db->eng, locked)) || !alex_stage_marked(db->eng))
		return rc;
	/* another process began to stage: its commits are above, where
	 * this one's must go too */
	if ((rc = attach(db, alex_serve_backend()))) {
		alex_msg(ALEX_MSG_ERROR, "%s-alex-stage: another process stages this database's "
			 "commits, and this one cannot: %s", db->path, alex_strerror(rc));
		return rc;
	}
	return alex_stage_catch_up(db->stg, db->eng, locked);
}

/* The merge that ends a window runs inside the commit that ends it, and
 * takes its time by the distinct blocks it writes (some 4 us each: 4 ms
 * for a window of random updates over a large file, 950 of them).  So a
 * window also ends when its blocks would fill half an extent -- as its
 * staged bytes do -- which holds that commit to about 0.8 ms by default;
 * the merges come more often only where few versions were saved, and a
 * transaction of more blocks than that merges at the next commit.  OFF
 * mode, which merges at half an extent of staged bytes, does so at as
 * many blocks too. */
static int blocks_full(const alex_db *a)
{
	return alex_stage_blocks(a) * ALEX_BLOCK >= alex_cfg.engine.extent_bytes / 2;
}

/* The window ends: a merge, or, if the durable log cannot take it (a
 * full disk), the staging log synced, which keeps the promise too. */
static int window_end(struct pdb *db)
{
	int rc = alex_merge_room(db->stg, db->eng);

	if (!rc) {
		db->stg_since = 0;
		return 0;
	}
	int e = alex_stage_sync(db->stg);
	alex_msg(e ? ALEX_MSG_ERROR : ALEX_MSG_WARN, "%s: merging the staging log: %s; %s",
		 db->path, alex_strerror(rc), e ? "and it could not be synced" : "synced instead");
	if (e)
		return rc;
	db->stg_since = 0;
	return 0;
}

int alex_staging_commit(struct pdb *db, int at_write, int *kick)
{
	alex_db *a = db->stg;
	int rc;

	*kick = 0;
	if (!a)
		return at_write ? alex_commit_now(db->eng) : alex_commit(db->eng);
	if (db->stg_direct)
		return (rc = alex_commit(db->eng)) ? rc : direct_end(db);
	/* SQLite's rollback after a conditional commit must be as durable
	 * as that commit, which is below */
	if (db->super && db->super_done)
		return (rc = alex_stage_move(a, db->eng)) || (rc = alex_commit(db->eng))
			       ? rc : alex_staging_moved(db);
	int open = alex_txn_open(a);
	if ((rc = alex_commit(a)) || !open)
		return rc;
	/* a file system running short: no window (merge.c) */
	if (alex_stage_short(db->eng, alex_cfg.engine.extent_bytes))
		return window_end(db);
	switch (alex_cfg.engine.sync) {
	case ALEX_SYNC_FULL:
		return window_end(db);
	case ALEX_SYNC_OFF: /* no window: merged at half the extent, by others, at the close */
		return alex_stage_bytes(a) >= alex_cfg.engine.extent_bytes / 2 || blocks_full(a)
			       ? window_end(db) : 0;
	default:
		break;
	}
	uint64_t now = alex_now_ns();
	if (!db->stg_since) {
		db->stg_since = now;
		*kick = ALEX_WANT_CLOCK; /* the flusher's clock starts */
		return 0;
	}
	unsigned ms = alex_cfg.engine.sync_ms - alex_cfg.engine.sync_ms / 4;
	/* a merge refused (then the staging log is synced) starts the clock
	 * again: the next try is not at the very next commit (review) */
	if (blocks_full(a) || alex_flush_past(alex_cfg.engine.extent_bytes / 2,
					      (uint64_t)ms * 1000000u, alex_stage_bytes(a),
					      db->stg_since, now))
		return window_end(db);
	return 0;
}

int alex_staging_move(struct pdb *db)
{
	return db->stg && !db->stg_direct ? alex_stage_move(db->stg, db->eng) : 0;
}

/* SQLite may go on reading under the lock it holds (locking_mode=
 * EXCLUSIVE: no catch-up until it lets go), and the staging engine's
 * sizes are below's as of its last look: it looks again now. */
int alex_staging_moved(struct pdb *db)
{
	if (db->stg_direct)
		return direct_end(db);
	return db->stg ? alex_refresh(db->stg, 1) : 0;
}

int alex_staging_drain(struct pdb *db)
{
	if (!db->stg)
		return 0;
	int rc = alex_stage_drain(db->stg, db->eng);
	if (!rc)
		db->stg_since = 0;
	return rc;
}

/*
 * The flusher's part of the window: it syncs the staging log only for a
 * window no commit has ended.  Commits end theirs at three quarters (a
 * merge: one record of the durable log); the flusher waits an eighth more,
 * or it would race the next commit and, as often as not, win -- and then
 * the staging log's pages, every version of every page of the window, go
 * to the device besides the merge that follows (large random updates: 290
 * of 830 device bytes per update).  It looks at that moment (its wait ends
 * at alex_staging_due_at), so it still acts within the window.
 */
uint64_t alex_staging_due_at(const struct pdb *db)
{
	unsigned ms = alex_cfg.engine.sync_ms - alex_cfg.engine.sync_ms / 8;

	return db->stg_since ? db->stg_since + (uint64_t)ms * 1000000u : UINT64_MAX;
}

int alex_staging_due(struct pdb *db, int *waiting)
{
	*waiting = db->stg_since != 0;
	return db->stg_since && alex_now_ns() >= alex_staging_due_at(db);
}

/* An open-file-description lock on SQLite's bytes, through the engine's own
 * descriptor of the database, which nothing closes under SQLite's POSIX
 * locks. */
static int ofd_lock(int fd, short type, long long start, long long len)
{
	struct flock l = { .l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len };
	uint64_t t0 = ALEX_TRACE_T0();
	int r = REAL(fcntl)(fd, F_OFD_SETLK, &l);
	alex_trace_own(ALEX_TROLE_DB, ALEX_TK_FCNTL, fd, t0, F_OFD_SETLK, r, &l);
	return r;
}

/* SHARED, then RESERVED, as SQLite takes them (os_unix.c): no writer
 * waiting at PENDING, none holding EXCLUSIVE (a hot journal's rollback
 * takes it with no RESERVED), none holding RESERVED.  0, or -1 holding
 * nothing. */
static int writer_locks(int fd)
{
	if (ofd_lock(fd, F_RDLCK, SQLITE_PENDING_BYTE, 1) != 0)
		return -1;
	int r = ofd_lock(fd, F_RDLCK, SQLITE_SHARED_FIRST, SQLITE_SHARED_SIZE);
	ofd_lock(fd, F_UNLCK, SQLITE_PENDING_BYTE, 1);
	if (r == 0 && (r = ofd_lock(fd, F_WRLCK, SQLITE_RESERVED_BYTE, 1)) != 0)
		ofd_lock(fd, F_UNLCK, SQLITE_PENDING_BYTE, SQLITE_LOCK_BYTES);
	return r;
}

/*
 * A window no commit ended, ended as a commit ends one: merged, the latest
 * version of each page as one synced record, not every version of it
 * synced in the staging log.  It needs what a writer has, taken as
 * open-file-description locks, which conflict with every other process's
 * locks and with this process's own (SQLite's POSIX locks):
 *
 * - SHARED and RESERVED: no transaction is open anywhere, readers may be,
 *   and go on.  The merge only appends to the durable log and begins the
 *   staging log's next epoch, whose records are written over only under
 *   EXCLUSIVE; the durable log neither checkpoints nor makes room
 *   (alex_merge_held).  A reader that holds SHARED across it has engines
 *   that are behind: it catches up when it takes RESERVED, before its
 *   first write (alex_serve_lock_reserved; review: without that its commit
 *   went into the staging log's old epoch and was lost);
 * - EXCLUSIVE -- nobody holds any lock -- when the durable log's checkpoint
 *   is due, or when a fork shares the engines' descriptions with another
 *   process: their open-file-description locks (the durable log's
 *   checkpoint lock among them) are then that process's too, and only
 *   SQLite's bytes taken whole keep a drain of the other side (opening
 *   the WAL: SHARED and that lock) out (second review).  The merge is then
 *   the close's (alex_merge_room: the durable log may checkpoint).
 *
 * A lock call of this process's SQLite that meets these locks waits for
 * mu and is made again (hooks_fcntl.c: flusher_gen).  A forked child never
 * merges here: it shares its parent's description of fd, so the two
 * flushers would hold the locks at once (review).  Returns 0 merged,
 * ALEX_EBUSY when a transaction is open, or the merge's error.
 */
static int flusher_merge(struct pdb *db)
{
	int fd = alex_db_fd(db->eng), rc;

	if (fd < 0 || db->forked)
		return ALEX_EBUSY;
	int whole = db->fork_shared || alex_stage_ckpt_due(db->eng);
	__atomic_add_fetch(&db->flusher_gen, 1, __ATOMIC_ACQ_REL); /* odd: held, or about to be */
	if (whole && ofd_lock(fd, F_WRLCK, SQLITE_PENDING_BYTE, SQLITE_LOCK_BYTES) == 0) {
		if (!(rc = alex_stage_catch_up(db->stg, db->eng, 1)))
			rc = alex_merge_room(db->stg, db->eng);
	} else if (!db->fork_shared && writer_locks(fd) == 0) {
		rc = alex_merge_held(db->stg, db->eng);
	} else {
		rc = ALEX_EBUSY;
	}
#ifdef ALEX_TESTING
	if (alex_cfg.test_merge_us && !rc) /* a merge as slow as a slow disk's */
		usleep(alex_cfg.test_merge_us);
#endif
	ofd_lock(fd, F_UNLCK, SQLITE_PENDING_BYTE, SQLITE_LOCK_BYTES); /* what it holds, or nothing */
	__atomic_add_fetch(&db->flusher_gen, 1, __ATOMIC_ACQ_REL);
	return rc;
}

void alex_staging_flush(struct pdb *db)
{
	if (!db->stg || !db->stg_since)
		return; /* merged meanwhile */
	int rc = flusher_merge(db);
	if (!rc) {
		db->stg_since = 0;
		ALEX_COUNT(flusher_merges, 1);
		return;
	}
	if (rc != ALEX_EBUSY)
		alex_msg(ALEX_MSG_WARN, "%s: merging the staging log in the background: %s; "
			 "syncing it instead", db->path, alex_strerror(rc));
	rc = alex_stage_sync(db->stg);
	if (rc)
		alex_msg(ALEX_MSG_ERROR, "%s-alex-stage: background sync: %s", db->path,
			 alex_strerror(rc));
	else
		db->stg_since = 0;
	ALEX_COUNT(staging_syncs, !rc);
}

void alex_staging_close(struct pdb *db, int xfd)
{
	alex_db *a = db->stg;
	int rc = 0;

	if (!a)
		return;
	if (xfd >= 0 && !(rc = alex_stage_catch_up(a, db->eng, 1)) && !(rc = alex_merge_room(a, db->eng)))
		db->stg_since = 0;
	if (rc)
		alex_msg(ALEX_MSG_WARN, "%s: merging the staging log at close: %s", db->path,
			 alex_strerror(rc));
	if (db->stg_since && (rc = alex_stage_sync(a)))
		alex_msg(ALEX_MSG_ERROR, "%s-alex-stage: sync at close: %s", db->path,
			 alex_strerror(rc));
	db->stg_since = 0;
	struct alex_stats s;
	alex_stats(a, &s);
	alex_stats_add_engine(&s);
	if ((rc = alex_close(a)))
		alex_msg(ALEX_MSG_WARN, "%s-alex-stage: close: %s", db->path, alex_strerror(rc));
	alex_io_over_free(db->over);
	db->stg = NULL;
	db->over = NULL;
}

void alex_staging_forget(struct pdb *db)
{
	if (!db->stg)
		return;
	db->stg_since = 0;
	db->stg_direct = 0; /* the parent's transaction, dropped below */
	int rc = alex_discard(db->stg);
	if (rc)
		alex_msg(ALEX_MSG_ERROR, "%s-alex-stage: after fork: %s", db->path, alex_strerror(rc));
}
