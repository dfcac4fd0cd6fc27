/*
 * serve.c - the one way from the hooks into the engine: each call holds the
 * database's lock (db->mu) for the engine calls it makes and turns their
 * result into libc's answer.  What the engine needs to hear at open and
 * close -- recovery's report, the final commit, the checkpoint only a last
 * user may make -- is here too.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bytes.h"
#include "config.h"
#include "errmap.h"
#include "flusher.h"
#include "io_over.h"
#include "journal.h"
#include "locks.h"
#include "span.h"
#include "mmap.h"
#include "multidb.h"
#include "pdb.h"
#include "real.h"
#include "serve.h"
#include "shm.h"
#include "trace.h"
#include "sqlite_locks.h"
#include "staging.h"
#include "stats.h"

/* The hooks' answer to an engine result: 0 with the caller's errno
 * (saved) back, or -1 with errno set. */
static int answer(int rc, int saved)
{
	errno = rc ? alex_errno_of(rc) : saved;
	return rc ? -1 : 0;
}

/* ---- open and close ------------------------------------------------------ */

/* A failed open, said so that the user knows what to do. */
static void say_open_failed(const struct pdb *db, int rc)
{
	/* SQLite retries a failed open (read-only next): say it once */
	static dev_t last_dev;
	static ino_t last_ino;
	static int last_rc;

	if (rc == last_rc && db->dev == last_dev && db->ino == last_ino)
		return;
	last_rc = rc;
	last_dev = db->dev;
	last_ino = db->ino;
	if (rc == ALEX_EPERMS) {
		struct stat ls, ds;
		char log[PATH_MAX + 8];
		snprintf(log, sizeof log, "%s-alex", db->path);
		unsigned lm = REAL(stat)(log, &ls) ? 0 : ls.st_mode & 0777;
		unsigned dm = REAL(stat)(db->path, &ds) ? 0 : ds.st_mode & 0777;
		alex_msg(ALEX_MSG_ERROR, "%s: mode %04o lets in users the database (%04o) keeps out, "
			 "and ALEX may not narrow it; the database stays closed until: chmod %04o %s",
			 log, lm, dm, dm, log);
		return;
	}
	if (rc == ALEX_EKEY) {
		alex_msg(ALEX_MSG_ERROR, "wrong key for %s (ALEX_KEY_FILE)", db->path);
		return;
	}
	if (rc == ALEX_EORPHAN) {
		alex_msg(ALEX_MSG_ERROR, "%s: fenced by an ALEX log that is not beside it as "
			 "%s-alex (moved, renamed or deleted while it held the newest pages; with "
			 "%s-alex-stage, if NORMAL mode left one); the database stays closed until "
			 "they are put back, or, to keep only its last checkpoint: alex recover %s",
			 db->path, db->path, db->path, db->path);
		return;
	}
	/* a problem of the log names the log, with what to do about it */
	int logs = rc == ALEX_ECORRUPT || rc == ALEX_EVERSION || rc == ALEX_EFOREIGN;
	alex_msg(ALEX_MSG_ERROR, "%s%s: %s%s%s", db->path, logs ? "-alex" : "", alex_strerror(rc),
		 logs ? "; the database stays closed until: alex recover " : "",
		 logs ? db->path : "");
}

/* What recovery found, if anything. */
static void say_recovered(const struct pdb *db)
{
	struct alex_stats s;
	unsigned long long stop, kept;

	alex_stats(db->eng, &s);
	/* another process wrote the log while this open read it, with no
	 * lock held: what looked torn was its record in flight, and the
	 * first catch-up under SQLite's lock reads it whole */
	if (s.open_raced)
		return;
	stop = s.stop_offset;
	kept = s.recovered_commits;
	if (s.lost_offset)
		alex_msg(ALEX_MSG_ERROR, "%s-alex: damaged record at byte %llu (%s); committed "
			 "records after it (from byte %llu) cannot be used; %llu commits kept",
			 db->path, stop, alex_damage_name(s.stop_reason),
			 (unsigned long long)s.lost_offset, kept);
	else if (s.stop_reason > ALEX_STOP_STALE)
		/* a torn last write after a crash looks the same: not an error */
		alex_msg(ALEX_MSG_WARN, "%s-alex: damaged or torn record at byte %llu (%s), the "
			 "last in the log: dropped; %llu commits kept", db->path, stop,
			 alex_stop_name(s.stop_reason), kept);
	else if (s.recovered_records)
		alex_msg(ALEX_MSG_INFO, "%s-alex: recovered %llu commits; log ends at byte %llu "
			 "(%s), %llu uncommitted or torn records dropped", db->path, kept, stop,
			 alex_stop_name(s.stop_reason), (unsigned long long)s.dropped_records);
}

const struct alex_io *alex_serve_backend(void)
{
#ifdef ALEX_TESTING
	const struct alex_io *io = alex_cfg.test ? alex_test_io(&alex_cfg.test_cfg) : NULL;
#else
	const struct alex_io *io = NULL;
#endif
	return alex_trace_wrap_io(io);
}

int alex_serve_open(struct pdb *db)
{
	const struct alex_io *io = alex_serve_backend();
	struct alex_config cfg = alex_cfg.engine;
	int rc = alex_open(db->path, &cfg, io, &db->eng);

	/* A process that may read the file but not write it (another user's
	 * database, a read-only mount) reads as SQLite would, through the log
	 * that writers keep beside it, and writes nothing: SQLite, with the
	 * file opened for reading, never asks it to.  Only then: one that may
	 * write the file but not the log would be refused its writes in the
	 * middle of a transaction, where SQLite had no reason to expect it. */
	if ((rc == EACCES || rc == EROFS) &&
	    REAL(faccessat)(AT_FDCWD, db->path, W_OK, AT_EACCESS) != 0) {
		cfg.readonly = 1;
		if (!(rc = alex_open(db->path, &cfg, io, &db->eng)))
			db->readonly = 1;
	}
	if (rc) {
		say_open_failed(db, rc);
		return alex_errno_of(rc);
	}
	say_recovered(db);
	if ((rc = alex_staging_open(db, io))) {
		/* no lock is held here: a checkpoint would begin an epoch under
		 * another process's commits (stage_chaos lost thousands of
		 * acknowledged rows that way) */
		alex_set_checkpoint_on_close(db->eng, 0);
		alex_close(db->eng);
		db->eng = NULL;
		return alex_errno_of(rc);
	}
	alex_multidb_opened(db);
	return 0;
}

/* A write lock over SQLite's lock bytes: its EXCLUSIVE, and more. */
static struct flock lock_range(void)
{
	return (struct flock){ .l_type = F_WRLCK, .l_whence = SEEK_SET,
			       .l_start = SQLITE_PENDING_BYTE, .l_len = SQLITE_LOCK_BYTES };
}

/* Does the close leave pages behind if it cannot checkpoint? */
static int holds(struct pdb *db)
{
	return alex_holds_pages(db->eng) || (db->stg && !alex_stage_idle(db->stg));
}

/* ... with no other engine that may write the database to checkpoint them? */
static int strands(struct pdb *db)
{
	return holds(db) && !alex_other_writers(db->eng);
}

/* Does another process hold a lock on SQLite's bytes?  One query. */
static int lock_held(int fd)
{
	struct flock l = lock_range();
	uint64_t t0 = ALEX_TRACE_T0();
	int r = REAL(fcntl)(fd, F_OFD_GETLK, &l);
	alex_trace_own(ALEX_TROLE_DB, ALEX_TK_FCNTL, fd, t0, F_OFD_GETLK, r, &l);
	return r == 0 && l.l_type != F_UNLCK;
}

/* The wait's step for another process's lock (ALEX_CLOSE_WAIT_MS / 2 of them) */
static void nap(void)
{
	struct timespec ts = { 0, 2 * 1000 * 1000 };
	nanosleep(&ts, NULL);
}

/* Takes SQLite's EXCLUSIVE lock on db's file without blocking: the
 * descriptor that holds it, or -1 -- *held 1 if another process uses the
 * database, 0 if the file could not be had.  The checkpoint that follows
 * writes through the engine's descriptor, so that must still be the
 * database (a program that closed it behind ALEX's back: no checkpoint,
 * the log keeps the data: review).  While the name still leads to that
 * file, the lock is taken through a copy of the engine's descriptor: a
 * POSIX lock is the process's through any descriptor of the file, and
 * closing the copy drops it (the engine's own locks are of its
 * description, which the copy's close leaves) -- so a program that gave up
 * the privileges it opened the database with (a server that starts as
 * root) still checkpoints, where an open by the name fails.  A name that
 * leads elsewhere is taken as before, by the name: the lock must keep out
 * every user of the log, and the log is reached by the name -- a new file
 * there, or the log moved along with the file by libalex.so's rename and
 * joined by others under the new name (third review: a checkpoint through
 * the engine's descriptor there lost their commits; the file renamed away
 * keeps its fence, and is refused with no log beside it, until its log is
 * put back).  The close writes only a file that still carries this log's
 * fence (alex_base_is_ours).  A lock taken after
 * alex_serve_close_wait looked (by a process that holds no writer lock on
 * the log: it may not write, or its engine opened before the log was
 * made) is waited out as that would have, unless it spent its wait
 * already (readers.sh: the close's window). */
static int exclusive_hold(struct pdb *db, int *held)
{
	struct flock l = lock_range();
	int own = alex_db_fd(db->eng), fd;
	struct stat64 st;

	*held = 0;
	if (own < 0 || !alex_fd_is(own, db->dev, db->ino)) {
		alex_msg(ALEX_MSG_WARN, "%s: the program closed ALEX's descriptor of the database: no "
			 "checkpoint at close (the log keeps the data)", db->path);
		return -1;
	}
	if (REAL(stat64)(db->path, &st) == 0 && st.st_dev == db->dev && st.st_ino == db->ino) {
		uint64_t t0 = ALEX_TRACE_T0();
		fd = REAL(fcntl)(own, F_DUPFD_CLOEXEC, 0);
		alex_trace_own(ALEX_TROLE_DB, ALEX_TK_FCNTL, own, t0, F_DUPFD_CLOEXEC, fd, NULL);
	} else
		fd = REAL(open)(db->path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -1;
	for (unsigned i = 0;; i++) {
		uint64_t t0 = ALEX_TRACE_T0();
		int r = REAL(fcntl)(fd, F_SETLK, &l);
		alex_trace_own(ALEX_TROLE_DB, ALEX_TK_FCNTL, fd, t0, F_SETLK, r, &l);
		if (r == 0)
			return fd;
		if (i >= alex_cfg.close_wait_ms / 2 || (i == 0 && (db->close_waited || !strands(db))))
			break;
		nap();
	}
	*held = 1;
	REAL(close)(fd);
	return -1;
}

/*
 * Before the last close, with no lock of the process held (pdb.c: the
 * close itself runs under `life`, which every open and fork of the process
 * waits for).  A close that cannot take SQLite's EXCLUSIVE leaves what the
 * log holds to another process's close; but a reader that may not write
 * the database never checkpoints, and a log left holding pages leaves the
 * file fenced: SQLite without ALEX refuses it until a process that may
 * write it opens it.  So when no other engine that may write has the log
 * open, another process's lock on SQLite's bytes is waited out here, asked
 * with F_OFD_GETLK through the engine's own descriptor, which no close
 * drops a lock through (review: polling readers left the file fenced about
 * half the time).  For ALEX_CLOSE_WAIT_MS (100) at most: SQLite's
 * unixClose holds its VFS mutex around close(), so every open and close of
 * a database file in the process's other threads waits as long (review: a
 * second under `life` stalled them a second); a longer read transaction
 * leaves the log to the next writer, with one line saying so.
 */
void alex_serve_close_wait(struct pdb *db)
{
	db->close_waited = 0;
	alex_mutex_lock(&db->mu);
	int fd = db->eng && !db->readonly && holds(db) ? alex_db_fd(db->eng) : -1;
	alex_mutex_unlock(&db->mu);
	/* the usual last close: one query, nobody in the way */
	if (fd < 0 || !lock_held(fd))
		return;
	alex_mutex_lock(&db->mu);
	int want = !alex_other_writers(db->eng);
	alex_mutex_unlock(&db->mu);
	db->close_waited = want;
	for (unsigned i = 1; want && i <= alex_cfg.close_wait_ms / 2; i++) {
		nap();
		if (!lock_held(fd))
			return;
		if (i % 10 == 0) { /* a writer that was opening meanwhile */
			alex_mutex_lock(&db->mu);
			want = strands(db);
			alex_mutex_unlock(&db->mu);
		}
	}
}

void alex_serve_close(struct pdb *db)
{
	/* out of the registry, so no new sync begins; one under way ends */
	alex_mutex_lock(&db->mu);
	for (int s; (s = db->syncing);) {
		db->sync_waiters++;
		alex_mutex_unlock(&db->mu);
		alex_futex_wait(&db->syncing, s); /* the end's wake, or a 0 seen */
		alex_mutex_lock(&db->mu);
		db->sync_waiters--;
	}
	alex_mutex_unlock(&db->mu);
	/* What SQLite wrote without a sync of its own (synchronous=OFF) is
	 * still a finished transaction to it. */
	int kick, rc = alex_staging_commit(db, 0, &kick);
	if (rc)
		alex_msg(ALEX_MSG_ERROR, "%s: final commit: %s", db->path, alex_strerror(rc));
	/* Checkpoint only if no other process uses the database: their engines
	 * may be reading the log this would start to overwrite.  SQLite's own
	 * EXCLUSIVE lock says so, and is held throughout, so that nobody
	 * commits meanwhile; first catch up with what others committed since
	 * this engine last looked, or the new epoch would orphan it.  This
	 * process has no SQLite descriptor left on the file, so closing ours
	 * drops nothing of SQLite's. */
	int xfd = -1, held = 0;
#ifdef ALEX_TESTING
	if (alex_cfg.test_close_us) /* another process's lock taken meanwhile (readers.sh) */
		usleep(alex_cfg.test_close_us);
#endif
	if (!rc && !db->readonly && (alex_cfg.engine.checkpoint_on_close || db->stg))
		xfd = exclusive_hold(db, &held);
	if (held && strands(db))
		alex_msg(ALEX_MSG_WARN, "%s: closed with commits in its log while another process held "
			 "the database: SQLite without ALEX refuses the file until a process with ALEX that "
			 "may write it opens it, or: alex checkpoint %s", db->path, db->path);
	/* another process may have begun to stage since this one last
	 * looked: its commits are above, and this close merges them before
	 * any checkpoint (review: a close that never looked orphaned them) */
	if (xfd >= 0 && !db->stg && (rc = alex_staging_catch_up(db, 1))) {
		REAL(close)(xfd);
		xfd = -1;
	}
	/* the file this engine has must still be the log's (see above) */
	int ours = xfd >= 0 ? alex_base_is_ours(db->eng) : 0;
	if (xfd >= 0 && ours != 1) {
		alex_msg(ALEX_MSG_WARN, "%s: %s: no checkpoint at close (the log keeps the data)",
			 db->path, ours ? alex_strerror(ours) : "the file this process has open no "
			 "longer carries its log's fence (replaced or moved, its log taken up for "
			 "another file)");
		REAL(close)(xfd);
		xfd = -1;
	}
	/* the staging log merged (or, with others at work, synced) first:
	 * every close, not only the last, so that this process's commits
	 * never wait in it for a later opener */
	alex_staging_close(db, xfd);
	if (xfd >= 0 && alex_cfg.engine.checkpoint_on_close &&
	    ((rc = alex_refresh(db->eng, 1)) || (rc = alex_checkpoint(db->eng))))
		alex_msg(ALEX_MSG_WARN, "%s: checkpoint at close: %s (the log keeps the data)",
			 db->path, alex_strerror(rc));
	if (xfd >= 0)
		REAL(close)(xfd);
	alex_set_checkpoint_on_close(db->eng, 0);
	struct alex_stats es;
	alex_stats(db->eng, &es);
	alex_stats_add_engine(&es);
	if ((rc = alex_close(db->eng)))
		alex_msg(ALEX_MSG_WARN, "%s: close: %s", db->path, alex_strerror(rc));
	db->eng = NULL;
}

/* ---- reads, writes, size ------------------------------------------------- */

/*
 * With a key, page 1's version bytes (18 and 19: 2 is WAL mode) never say
 * WAL: in WAL mode SQLite writes the database file itself, which would be
 * pages in clear, so the -wal file cannot be opened (alex_serve_wal_open).
 * Were the 2s kept, every later open would try WAL and fail.  A write of
 * them is followed by one of 1s; a read shows 1s where a 2 was kept.
 * SQLite then finds no WAL and stays in its rollback journal mode
 * (docs/ENCRYPTION.md).
 *
 * The connection that wrote the 2s still holds page 1 with them in its
 * cache, and would look for its WAL at the next transaction and fail
 * (SQLITE_READONLY).  So the header's change counter (bytes 24..27, and
 * the copy at 92..95 that vouches for the size at 28) is stored one
 * higher than written: at its next lock SQLite sees the database changed
 * by someone else, drops its cache, reads the 1s and, finding no -wal,
 * sets its journal mode back to DELETE by itself.  Under db->mu.
 */
static void say_no_wal(const struct pdb *db)
{
	static int said;
	if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		alex_msg(ALEX_MSG_ERROR, "%s: WAL mode is not available with encryption "
			 "(ALEX_KEY_FILE); the database keeps its rollback journal", db->path);
}

static int no_wal_mark(struct pdb *db, uint8_t *buf, size_t n, uint64_t at, int writing)
{
	uint8_t fix[96];
	size_t len = 2, from = 18;
	int any = 0;

	if (!alex_cfg.engine.key || at > 18 || at + n < 20)
		return 0;
	for (int i = 18; i < 20; i++) {
		fix[i] = buf[i - at];
		if (fix[i] == 2)
			fix[i] = 1, any = 1;
	}
	if (!any)
		return 0;
	if (!writing) {
		memcpy(buf + 18 - at, fix + 18, 2);
		return 0;
	}
	say_no_wal(db);
	if (at == 0 && n >= sizeof fix) { /* SQLite writes page 1 whole */
		memcpy(fix, buf, 18);
		memcpy(fix + 20, buf + 20, sizeof fix - 20);
		alex_put_be32(fix + 24, alex_get_be32(fix + 24) + 1);
		memcpy(fix + 92, fix + 24, 4);
		len = sizeof fix, from = 0;
	}
	/* alex_serve_io routed this write (alex_staging_route) before */
	int rc = alex_write(alex_top(db), ALEX_FILE_DB, fix + from, len, from);
	if (!rc && db->maps)
		alex_mmap_wrote(db, fix + from, len, from);
	return rc;
}

static int commit_locked(struct pdb *db, int now, int *kick);

/* Does SQLite's journal hold a transaction?  Its header's magic is in
 * place before SQLite writes any page of the database, and gone (zeroed,
 * cut, deleted) when the transaction is over.  Under db->mu. */
static int journal_live(const struct pdb *db)
{
	uint64_t magic;

	if (!db->j.exists || db->j.size < sizeof magic)
		return 0;
	memcpy(&magic, db->j.data, sizeof magic);
	return magic != 0;
}

/*
 * Is the write SQLite is about to make at off to be committed as it is
 * made?  With journal_mode=MEMORY or OFF, synchronous=OFF and
 * locking_mode=EXCLUSIVE SQLite shows ALEX no end of a transaction at all
 * -- no sync, no journal, no lock let go -- and a write collected until
 * one came would be lost with the process, where plain SQLite's is in the
 * page cache.  So, with no journal live:
 *  - until SQLite shows an end on the database (bound_seen): yes.  In
 *    normal locking it lets its first lock go before it writes anything
 *    (the schema's read), and a transaction stays one record, whole after
 *    a kill or a power cut;
 *  - after it, when a write begins at or below the highest offset written
 *    since the last commit: SQLite writes a transaction's pages in
 *    ascending order, so another transaction began with no end shown
 *    (exclusive locking taken after a lock was let go: the pragma read the
 *    schema first).  The one before is committed now, whole, and every
 *    write after it as made, until SQLite shows an end (no_end);
 *  - else no: the transaction's end will show.
 * Under db->mu; 0 no, 1 yes, or -1 with *err (the commit before failed).
 */
static int at_write(struct pdb *db, uint64_t off, int *kick, int *err)
{
	if (journal_live(db))
		return 0;
	if (!db->bound_seen || db->no_end)
		return 1;
	if (!db->hi_set || off > db->hi_off)
		return 0;
	db->no_end = 1;
	return (*err = commit_locked(db, 1, kick)) ? -1 : 1;
}

ssize_t alex_serve_io(struct pdb *db, const struct iovec *iov, int cnt, uint64_t *pos,
		      enum alex_serve_io how)
{
	int writing = how & ALEX_SERVE_WRITE, saved = errno;
	ssize_t total = 0;
	int rc = 0;

	int err = 0, kick = 0, now = 0;
	alex_mutex_lock(&db->mu);
	if (writing)
		alex_staging_route(db);
	else if (!__atomic_load_n(&db->fresh, __ATOMIC_ACQUIRE))
		alex_base_hdr_forget(db->eng); /* read with no lock of SQLite's */
	alex_db *eng = alex_top(db);
	uint64_t at = *pos;
	if (how == ALEX_SERVE_APPEND) /* Linux: even pwrite appends */
		alex_size(eng, ALEX_FILE_DB, &at);
	if (writing && (now = at_write(db, at, &kick, &err)) < 0) {
		alex_mutex_unlock(&db->mu);
		if (kick)
			alex_flusher_kick(kick);
		errno = err;
		return -1;
	}
	if (writing && (!db->hi_set || at > db->hi_off)) {
		db->hi_off = at;
		db->hi_set = 1;
	}
	eng = alex_top(db); /* the commit before may have moved it */
	for (int i = 0; i < cnt && !rc; i++) {
		size_t got = iov[i].iov_len;
		if (writing)
			rc = alex_write(eng, ALEX_FILE_DB, iov[i].iov_base, got, at);
		else
			rc = alex_read(eng, ALEX_FILE_DB, iov[i].iov_base, got, at, &got);
		if (rc)
			break;
		if (writing && db->maps)
			alex_mmap_wrote(db, iov[i].iov_base, got, at);
		if ((rc = no_wal_mark(db, iov[i].iov_base, got, at, writing)))
			break;
		at += got;
		total += (ssize_t)got;
		if (!writing && got < iov[i].iov_len)
			break; /* end of file */
	}
	if (!rc)
		*pos = at;
	if (now && !rc && total) {
		err = commit_locked(db, 1, &kick);
		ALEX_COUNT(writes_committed, 1);
	}
	alex_mutex_unlock(&db->mu);
	if (kick)
		alex_flusher_kick(kick);
	if (err) {
		errno = err;
		return -1;
	}
	if (writing) {
		ALEX_COUNT(writes, 1);
		ALEX_COUNT(write_bytes, (uint64_t)total);
	} else {
		ALEX_COUNT(reads, 1);
		ALEX_COUNT(read_bytes, (uint64_t)total);
	}
	return answer(rc, saved) ? -1 : total;
}

/* One extent, no holes: SEEK_DATA finds data anywhere below the end, and
 * SEEK_HOLE the end. */
int64_t alex_serve_seek(struct pdb *db, uint64_t *pos, int64_t off, int whence)
{
	uint64_t size;
	int64_t base, err = 0;

	alex_mutex_lock(&db->mu);
	alex_size(alex_top(db), ALEX_FILE_DB, &size);
	switch (whence) {
	case SEEK_SET: base = 0; break;
	case SEEK_CUR: base = (int64_t)*pos; break;
	case SEEK_END: base = (int64_t)size; break;
	case SEEK_DATA:
	case SEEK_HOLE:
		base = 0;
		if (off >= (int64_t)size)
			err = ENXIO;
		else if (whence == SEEK_HOLE)
			off = (int64_t)size;
		break;
	default: base = 0; err = EINVAL; break;
	}
	if (!err && base + off < 0)
		err = EINVAL;
	if (!err)
		*pos = (uint64_t)(base + off);
	alex_mutex_unlock(&db->mu);
	if (err) {
		errno = (int)err;
		return -1;
	}
	return base + off;
}

uint64_t alex_serve_size(struct pdb *db)
{
	uint64_t size;

	alex_mutex_lock(&db->mu);
	alex_size(alex_top(db), ALEX_FILE_DB, &size);
	alex_mutex_unlock(&db->mu);
	return size;
}

int alex_serve_fenced(struct pdb *db)
{
	struct alex_fence f;

	alex_mutex_lock(&db->mu);
	int on = db->eng && alex_fence_now(db->eng, &f);
	alex_mutex_unlock(&db->mu);
	return on;
}

void alex_serve_arrive(struct pdb *db)
{
	alex_mutex_lock(&db->mu);
	if (db->eng)
		alex_shm_arrive(db->eng);
	alex_mutex_unlock(&db->mu);
}

int alex_serve_span_look(struct pdb *db, uint64_t *arrivals)
{
	struct alex_fence f;

	alex_mutex_lock(&db->mu);
	int rc = !db->eng || !alex_fence_now(db->eng, &f) ? -1
		 : alex_shm_arrivals(db->eng, arrivals) == 0 ? 0 : 1;
	alex_mutex_unlock(&db->mu);
	return rc;
}

int alex_serve_truncate(struct pdb *db, int64_t size)
{
	if (size < 0) {
		errno = EINVAL;
		return -1;
	}
	int saved = errno;
	alex_mutex_lock(&db->mu);
	alex_staging_route(db);
	int rc = alex_truncate(alex_top(db), ALEX_FILE_DB, (uint64_t)size);
	if (!rc && db->maps)
		alex_mmap_cut(db, (uint64_t)size);
	alex_mutex_unlock(&db->mu);
	return answer(rc, saved);
}

int alex_serve_extend(struct pdb *db, uint64_t end)
{
	uint64_t size;
	int rc = 0;

	alex_mutex_lock(&db->mu);
	alex_staging_route(db);
	alex_size(alex_top(db), ALEX_FILE_DB, &size);
	if (end > size)
		rc = alex_truncate(alex_top(db), ALEX_FILE_DB, end);
	alex_mutex_unlock(&db->mu);
	return rc ? alex_errno_of(rc) : 0;
}

/* ---- transaction boundaries ---------------------------------------------- */

/* Commits of this process not yet durable, in the log or the staging
 * log (a carried epoch's copy is not one: carry.c syncs it inline when no
 * thread takes it) */
static int sync_pending(struct pdb *db)
{
	return alex_sync_pending(db->eng) || (db->stg && db->stg_since);
}

/* Does the database, as committed, say WAL mode (read and write versions
 * 2, written by journal_mode=WAL in a rollback transaction of its own)?
 * Then SQLite writes it directly from now on: its last commit through the
 * log is synced inline, not by a thread made for it alone. */
static int in_wal(struct pdb *db)
{
	uint8_t h[20];
	size_t got = 0;

	return alex_read(alex_top(db), ALEX_FILE_DB, h, sizeof h, 0, &got) == 0 &&
	       got == sizeof h && memcmp(h, "SQLite format 3", 16) == 0 && h[18] == 2 && h[19] == 2;
}

/* What the flusher would make of them, here (in_wal) */
static int sync_inline(struct pdb *db)
{
	int rc = 0;

	if (db->stg && db->stg_since && !(rc = alex_stage_sync(db->stg)))
		db->stg_since = 0;
	return rc ? rc : alex_sync(db->eng);
}

/* Under db->mu: a commit where it belongs, and the syncing it calls for.
 * now: a write committed as it is made (alex_serve_io).  0 or an errno. */
static int commit_locked(struct pdb *db, int now, int *kick)
{
	int err;

	*kick = 0;
	db->hi_set = 0; /* the next transaction's first write begins anew */
	db->committed_here = 1;
	if (db->super && !db->super_done)
		err = alex_multidb_commit(db); /* one database of several */
	else if ((err = alex_staging_commit(db, now, kick)))
		err = alex_errno_of(err);
	/* SQLite's journal on disk is durable, and SQLite finalizes it right
	 * after this sync of the database: NORMAL's commit must be durable
	 * first, or a power cut in its window leaves a hot journal to be
	 * rolled back over a log that lags behind it -- pages of two states
	 * (review: powercut.sh with a journal left on disk, TRUNCATE mode) */
	if (!err && !now && db->j_disk && (err = sync_inline(db)))
		err = alex_errno_of(err);
	ALEX_MMAP_CHECK(db, "a commit");
	*kick |= alex_sync_wanted(db->eng);
	/* No thread yet: any commit that leaves something unsynced asks for
	 * one -- a fork()ed child inherits its parent's unsynced clock, and
	 * its commits would ask for none (review) -- unless it put the
	 * database in WAL mode */
	if (!err && !alex_flusher_running() && sync_pending(db)) {
		int wal = in_wal(db), rc = wal ? sync_inline(db) : 0;
		if (rc) {
			alex_msg(ALEX_MSG_ERROR, "%s: sync: %s", db->path, alex_strerror(rc));
			err = alex_errno_of(rc);
		}
		*kick = wal ? 0 : ALEX_WANT_NOW;
	}
	return err;
}

/* if_open: nothing at all (not even the lock's second turn) when there is
 * nothing to commit */
static int serve_commit(struct pdb *db, int if_open)
{
	int saved = errno, kick = 0;

	alex_mutex_lock(&db->mu);
	db->bound_seen = 1;
	db->no_end = 0;
	if (if_open && !(db->super && !db->super_done) && !alex_commit_due(alex_top(db))) {
		alex_mutex_unlock(&db->mu);
		return 0;
	}
	int err = commit_locked(db, 0, &kick);
	alex_mutex_unlock(&db->mu);
	if (kick)
		alex_flusher_kick(kick);
	errno = err ? err : saved;
	return err ? -1 : 0;
}

int alex_serve_commit(struct pdb *db)
{
	return serve_commit(db, 0);
}

int alex_serve_commit_open(struct pdb *db)
{
	return serve_commit(db, 1);
}

int alex_serve_journal_done(struct pdb *db)
{
	int r = alex_serve_commit_open(db), saved = errno;

	alex_mutex_lock(&db->mu);
	alex_multidb_end(db);
	alex_mutex_unlock(&db->mu);
	errno = saved;
	return r;
}

void alex_serve_journal_write(struct pdb *db, const void *buf, size_t n, int64_t off)
{
	char name[PATH_MAX];

	/* the caller asked alex_multidb_may_name_super; super_of asks the
	 * journal's bytes, under the lock */
	alex_mutex_lock(&db->mu);
	if (alex_multidb_super_of(db, buf, n, off, name, sizeof name))
		alex_multidb_begin(db, name);
	alex_mutex_unlock(&db->mu);
}

/*
 * With synchronous=OFF SQLite syncs no database, so no sync showed where a
 * database's part ends: it ends here, at the latest, before the commit
 * point -- or a kill right after it would keep the transaction in the
 * databases whose journals were finalized first and lose it in the rest.
 */
int alex_serve_super_commit(struct pdb *db, const char *super)
{
	int err = 0;

	alex_mutex_lock(&db->mu);
	if (db->super && !db->super_done && strcmp(db->super, super) == 0)
		err = alex_multidb_commit(db);
	alex_mutex_unlock(&db->mu);
	return err;
}

void alex_serve_wait(struct pdb *db)
{
	alex_mutex_lock(&db->mu);
	alex_mutex_unlock(&db->mu);
}

int alex_serve_lock_reserved(struct pdb *db)
{
	int saved = errno, rc = 0;

	/* most databases stage nothing (FULL mode, WAL): no lock for them;
	 * stg is set under mu, and looked at again there */
	if (!__atomic_load_n(&db->stg, __ATOMIC_ACQUIRE))
		return 0;
	alex_mutex_lock(&db->mu);
	if (db->stg)
		rc = alex_staging_catch_up(db, 1);
	alex_mutex_unlock(&db->mu);
	if (rc)
		alex_msg(ALEX_MSG_ERROR, "%s: reading other processes' merges: %s", db->path,
			 alex_strerror(rc));
	return answer(rc, saved);
}

int alex_serve_lock_shared(struct pdb *db)
{
	int saved = errno;

	ALEX_COUNT(refreshes, 1);
	alex_mutex_lock(&db->mu);
	int rc = alex_staging_catch_up(db, 1), merr = 0;
	/* a mapping that cannot show the commits must not be read: the lock
	 * fails (SQLite: an I/O error), and the next one tries again */
	if (!rc && db->maps && (merr = alex_mmap_follow(db)))
		rc = merr; /* an errno, passed on */
	ALEX_MMAP_CHECK(db, "a catch-up");
	if (!rc && db->ref_check && !alex_in_doubt(db->eng)) {
		alex_multidb_cleanup(db);
		db->ref_check = 0;
	}
	/* an undecided commit (a transaction across databases) is looked at
	 * again at every lock: its super-journal may go meanwhile */
	if (!rc && !alex_in_doubt(db->eng))
		__atomic_store_n(&db->fresh, 1, __ATOMIC_RELEASE);
	alex_mutex_unlock(&db->mu);
	if (rc && !merr)
		alex_msg(ALEX_MSG_ERROR, "%s: reading other processes' commits: %s", db->path,
			 alex_strerror(rc));
	return answer(rc, saved);
}

void alex_serve_unfresh(struct pdb *db)
{
	__atomic_store_n(&db->fresh, 0, __ATOMIC_RELEASE);
	if (db->eng) /* alive: the caller holds a reference */
		alex_base_hdr_forget(db->eng);
}

/* A reader that may not write the file opens the WAL only where the log
 * holds nothing of the database: it cannot checkpoint it there. */
static int ro_wal_check(struct pdb *db)
{
	int rc = alex_refresh(db->eng, 1);
	return !rc && (holds(db) || alex_stale_mark(db->eng)) ? EROFS : rc;
}

/*
 * WAL mode keeps ALEX's log out of the way (docs/PRELOAD.md): SQLite
 * writes the database file itself, in its WAL checkpoints, and a program
 * without ALEX -- Litestream, a plain sqlite3 -- reads it through the WAL,
 * where no mark could stop it.  So before SQLite may use the WAL, the log
 * must hold nothing the database file lacks.  journal_mode=WAL already
 * checkpointed it (core: a commit that enters WAL mode); this catches what
 * a crash or a failed checkpoint left, and refuses the WAL if it cannot.
 * SQLite holds SHARED here, so no rollback-mode commit can land meanwhile;
 * the log's checkpoint lock keeps out other processes doing the same.
 */
int alex_serve_wal_open(struct pdb *db)
{
	/* SQLite writes the database file and -wal itself in WAL mode: with a
	 * key that would be pages in clear.  The open fails; SQLite keeps its
	 * rollback journal (docs/ENCRYPTION.md). */
	if (alex_cfg.engine.key) {
		say_no_wal(db);
		return EACCES;
	}
	alex_mutex_lock(&db->mu);
	int rc = db->readonly ? ro_wal_check(db) : alex_staging_drain(db);
	if (!rc && !db->readonly)
		rc = alex_refresh(db->eng, 1);
	/* also with nothing in the log but a mark a power cut left on the
	 * file (its unmark lost after the next epoch's header), which the
	 * checkpoint takes off: SQLite reads the file itself from here
	 * (crashtest long, wal phase: 39 cuts "not a database") */
	if (!rc && !db->readonly && (alex_holds_pages(db->eng) || alex_stale_mark(db->eng)))
		rc = alex_checkpoint(db->eng);
	if (!rc && alex_holds_pages(db->eng))
		rc = ALEX_EBUSY;
	/* SQLite's mappings become shared ones of the file it now writes */
	int merr = !rc && db->maps && !alex_pdb_direct(db) ? alex_mmap_direct(db, 1) : 0;
	if (merr) {
		alex_mmap_direct(db, 0);
		alex_msg(ALEX_MSG_ERROR, "%s: WAL mode: a memory mapping could not follow: %s",
			 db->path, strerror(merr));
		alex_mutex_unlock(&db->mu);
		return merr;
	}
	if (!rc) {
		/* SQLite's lock calls now pass the model by (the file is
		 * SQLite's own): it is in doubt from here, not only after;
		 * the span lock goes now -- SQLite may never call again
		 * (it keeps its SHARED while the WAL is open) */
		alex_span_leave(db);
		alex_locks_unknown(db);
		__atomic_add_fetch(&db->wal_ofds, 1, __ATOMIC_ACQ_REL);
	}
	/* WAL mode: others commit while SQLite holds SHARED */
	alex_serve_unfresh(db);
	int said = db->wal_said;
	if (rc && db->readonly)
		db->wal_said = 1;
	alex_mutex_unlock(&db->mu);
	if (rc && db->readonly && !said)
		alex_msg(ALEX_MSG_ERROR, "%s: the log holds pages a WAL cannot show, and this process "
			 "may not write the database to checkpoint them; the WAL stays closed until a "
			 "process that may write it opens it, or: alex checkpoint %s", db->path, db->path);
	else if (rc && !db->readonly)
		alex_msg(ALEX_MSG_ERROR, "%s: the log still holds pages and could not be checkpointed "
			 "(%s); the WAL stays closed until: alex checkpoint %s", db->path,
			 alex_strerror(rc), db->path);
	return rc ? alex_errno_of(rc) : 0;
}

/* Leaving WAL mode (or closing): the engine serves the file again, and
 * must first see it as SQLite and other processes left it. */
void alex_serve_wal_closed(struct pdb *db)
{
	alex_mutex_lock(&db->mu);
	alex_serve_unfresh(db);
	if (__atomic_sub_fetch(&db->wal_ofds, 1, __ATOMIC_ACQ_REL) == 0) {
		/* SQLite's lock calls went past the model while the file was
		 * its own (WAL mode): until its next release of them all, it
		 * may hold EXCLUSIVE, and a lowering commits first (review) */
		alex_locks_unknown(db);
		/* SQLite may hold no lock while it closes its -wal */
		int rc = alex_staging_catch_up(db, 0);
		if (rc)
			alex_msg(ALEX_MSG_ERROR, "%s: leaving WAL mode: %s", db->path,
				 alex_strerror(rc));
		/* the engine writes the log again: mappings it keeps current */
		int merr = db->maps ? alex_mmap_direct(db, 0) : 0;
		if (merr)
			alex_msg(ALEX_MSG_ERROR, "%s: leaving WAL mode: a memory mapping could not "
				 "follow: %s", db->path, strerror(merr));
	}
	alex_mutex_unlock(&db->mu);
}

/* ---- background and process life ---------------------------------------- */

static void sync_before_end(struct pdb *db, void *arg)
{
	struct timespec pause = { 0, 1000000 };

	(void)arg;
	/* the flusher's sync of db under way (it holds mu through a staging
	 * log's): let it end, or the exit kills it between two of its syncs
	 * (review).  It is not a thread a signal interrupted -- it blocks
	 * them all -- and it ends; two seconds for a slow device's sync */
	for (int i = 0; i < 2000 && __atomic_load_n(&db->syncing, __ATOMIC_ACQUIRE); i++)
		nanosleep(&pause, NULL);
	if (alex_mutex_trylock_for(&db->mu))
		return; /* held: its holder may be the very thread that exits */
	/* a forked child syncs what it committed, not its parent's: the
	 * parent's flusher does that, and a child's sync of the description
	 * they share could take a write-back error the parent must see */
	int mine = !db->forked || db->committed_here;
	int rc = mine && db->eng && sync_pending(db) ? sync_inline(db) : 0;
	alex_mutex_unlock(&db->mu);
	/* EBADF: the program closed ALEX's descriptors behind its back (a raw
	 * close_range); its last close would have said nothing either */
	if (rc && rc != EBADF)
		alex_msg(ALEX_MSG_ERROR, "%s: sync before the process ends: %s", db->path,
			 alex_strerror(rc));
}

void alex_serve_sync_before_end(void)
{
	int saved = errno;

	alex_pdb_scan_try(sync_before_end, NULL);
	errno = saved;
}

int alex_serve_sync_start(struct pdb *db, int *waiting, uint64_t *due_at)
{
	alex_mutex_lock(&db->mu);
	int on, kind = 1;
	*due_at = UINT64_MAX;
	if (db->stg) {
		on = !db->syncing && alex_staging_due(db, waiting);
		kind = 2;
		/* else the engine below's carried copy (carry.c): the database
		 * file's sync, which a merge would otherwise make inline */
		if (!on && !db->syncing && alex_sync_start(db->eng)) {
			on = 1;
			kind = 1;
		}
		if (!on)
			*due_at = alex_staging_due_at(db);
	} else {
		on = !db->syncing && alex_sync_start(db->eng);
		*waiting = alex_sync_pending(db->eng);
	}
	if (!on) {
		uint64_t e = alex_sync_due_at(db->eng);
		if (e < *due_at)
			*due_at = e;
	}
	/* which one began: a staging engine may be attached before it ends;
	 * none began while one runs (it is only cleared by its end: synced) */
	if (on)
		db->syncing = kind;
	alex_mutex_unlock(&db->mu);
	return on;
}

/* The sync is over (under db->mu): a close waiting for it goes on.  The
 * wake comes before the unlock, while db is sure to be there.  A close
 * counted itself under mu before it let go to wait: one that has not
 * reached the wait yet finds syncing changed there, and does not sleep. */
static void synced(struct pdb *db)
{
	__atomic_store_n(&db->syncing, 0, __ATOMIC_RELEASE);
	if (db->sync_waiters)
		alex_futex_wake_all(&db->syncing);
}

/* Without db->mu: commits go on meanwhile.  After the last line db may be
 * gone (alex_serve_close waits for it). */
void alex_serve_sync_end(struct pdb *db)
{
	if (db->syncing == 2) {
		/* the staging log's sync: under the lock, which it needs for
		 * its descriptor, and seldom (a window with no commit to end it) */
		alex_mutex_lock(&db->mu);
		alex_staging_flush(db);
		synced(db);
		alex_mutex_unlock(&db->mu);
		return;
	}
	int err = alex_sync_run(db->eng);
	alex_mutex_lock(&db->mu);
	int rc = alex_sync_finish(db->eng, err);
	if (rc) /* said under the lock: db may go as soon as it is let go */
		alex_msg(ALEX_MSG_ERROR, "%s: background sync: %s", db->path, alex_strerror(rc));
	synced(db);
	alex_mutex_unlock(&db->mu);
}

/*
 * The child's engines go on working: every transaction starts with SQLite's
 * SHARED lock, which makes them catch up with the log (alex_refresh).  But an
 * in-memory journal must not be shared: one process deleting "its" journal
 * would leave the other a stale one that looks hot.  The child forgets it.
 * Runs in the child right after fork, with db->mu held by the fork handler.
 */
void alex_serve_forget(struct pdb *db)
{
	alex_journal_forget(db);
	alex_staging_forget(db);
	alex_sync_forget(db->eng); /* the parent's syncing thread is not here */
	db->syncing = 0;
	db->sync_waiters = 0; /* nor its closing threads */
	db->forked = 1;
	db->committed_here = 0; /* what waits to be synced is the parent's */
	db->skip_dirsync = 0;
	alex_span_forked(db);
	alex_locks_dropped(db); /* POSIX locks are not inherited */
	alex_serve_unfresh(db);
	/* the parent's unfinished transaction is the parent's: if the child
	 * closed its copies of SQLite's descriptors, the last close must not
	 * commit it */
	int rc = alex_discard(db->eng);
	if (rc)
		alex_msg(ALEX_MSG_ERROR, "%s: after fork: %s", db->path, alex_strerror(rc));
}

void alex_serve_stats(struct pdb *db, struct alex_stats *out)
{
	struct alex_stats s;

	alex_mutex_lock(&db->mu);
	alex_stats(db->eng, &s);
	alex_stats_sum(out, &s);
	if (db->stg) {
		alex_stats(db->stg, &s);
		alex_stats_sum(out, &s);
	}
	alex_mutex_unlock(&db->mu);
}
