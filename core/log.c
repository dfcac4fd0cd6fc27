/*
 * log.c - the log file: finding or making it, header slots, appending
 * records into preallocated space, syncing, beginning an epoch, and
 * removing the log when the last engine leaves it empty.
 *
 * Why the order of operations is crash-safe:
 *  - The log is made only when the first record is about to be written,
 *    under a name of its own, given the database's mode (and owner, as
 *    root), and renamed into place; the directory is synced then.  Its
 *    header is not synced before the rename: until a record's fdatasync
 *    (which covers the header too) nothing in it was acknowledged, and a log
 *    whose only header slot is unreadable holds nothing (alex_log_open).
 *  - A record is one pwrite into space written (with zeros) earlier, so the
 *    commit's fdatasync never has to change the file size or convert extents.  The in-memory map moves to
 *    the record only after the write (and, in FULL, the sync) succeeded; on
 *    failure the transaction stays in the collector and the next try rewrites
 *    the record at the same offset, with the same lsn.
 *  - A new epoch's header goes to the other slot.  For a fenced epoch
 *    (protect.c) it need not be synced: the records of the epoch before it
 *    are stale once the database file no longer carries that epoch's fence,
 *    whatever the header says.  An epoch that is not fenced (a base that is
 *    not an SQLite database) keeps the older rule: the new header is synced
 *    before any record of the new epoch is written.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "carry.h"
#include "codec.h"
#include "crc32c.h"
#include "db.h"
#include "dbg.h"
#include "delta.h"
#include "engine.h"
#include "io_over.h"
#include "known.h"
#include "log.h"
#include "log_xts.h"
#include "protect.h"
#include "shm.h"

static void random_bytes(void *buf, size_t n)
{
	uint8_t *p = buf;
	size_t got = 0;

	while (got < n) {
		long r = syscall(SYS_getrandom, p + got, n - got, 1 /* GRND_NONBLOCK */);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	if (got < n) {
		/* no entropy yet (early boot): uniqueness is all we need */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t s = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
			     ((uint64_t)getpid() << 16) ^ (uint64_t)(uintptr_t)buf;
		for (size_t i = got; i < n; i++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			p[i] = (uint8_t)(s >> 56);
		}
	}
}

uint32_t alex_random32(void)
{
	uint32_t v;
	random_bytes(&v, sizeof v);
	return v;
}

/*
 * Which slot h goes to.  Up to format 9, epoch % 2.  Format 10 moves the
 * current epoch from slot to slot out of step with the epoch's parity (an
 * epoch whose carried records were checkpointed is written again, to the
 * other slot: format.h), so it keeps the rule that parity gave: a new
 * header -- a new epoch, or the same one without its carried records --
 * goes to the slot not holding the current one, whose epoch a torn write
 * leaves intact; the same header again (FENCED, a repair) to its own.
 */
static int slot_for(const struct alex_db *db, const struct alex_loghdr *h)
{
	if (!alex_format_carry(h->version))
		return (int)(h->epoch % 2);
	const struct alex_loghdr *d = &db->hdr_disk;
	int fresh = h->epoch != d->epoch || (d->prev_epoch && !h->prev_epoch);
	return fresh ? !db->hdr_slot : db->hdr_slot;
}

static int write_slot(struct alex_db *db, int fd, const struct alex_loghdr *h)
{
	uint8_t *blk = db->scratch;
	struct alex_loghdr sealed;
	int err;

	if (h->flags & ALEX_HDR_XTS) {
		sealed = *h;
		if ((err = alex_log_xts_base(db, 1, &sealed)))
			return err;
		h = &sealed;
	}
	memset(blk, 0, ALEX_BLOCK);
	alex_loghdr_encode(blk, h);
	int slot = slot_for(db, h);
	if ((err = alex_log_pwrite(db, fd, blk, ALEX_BLOCK, (uint64_t)slot * ALEX_BLOCK)))
		return err;
	db->hdr_slot = slot;
	db->hdr_synced = 0;
	return 0;
}

/* Takes byte b of the log, waiting up to two seconds for another holder
 * (a tool, or the last engine removing the log).  ALEX_EINUSE if it must
 * not wait (exclusive opens) or waited in vain. */
static int lock_wait(struct alex_db *db, int fd, uint64_t b, int mode, int wait)
{
	for (int tries = 0;; tries++) {
		int err = db->io.ops->lock(db->io.ctx, fd, b, mode);
		if (err != EAGAIN)
			return err;
		if (!wait || tries == 200)
			return ALEX_EINUSE;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

/* An engine that may write the database says so on the log (io.h:
 * ALEX_LOCK_WRITER); the tool, alone on it, and a reader do not. */
static int writer_lock(struct alex_db *db, int fd)
{
	if (db->cfg.exclusive || db->cfg.readonly)
		return 0;
	return lock_wait(db, fd, ALEX_LOCK_WRITER, ALEX_SHARED, 1);
}

int alex_other_writers(struct alex_db *db)
{
	/* nothing to learn, or not ours to ask -- nor a forked child's: its
	 * description, and the lock on it, is its parent's too */
	if (db->log_fd < 0 || db->log_stub || db->cfg.exclusive || db->cfg.readonly ||
	    db->log_pid != (int)getpid())
		return 1;
	/* our own shared lock becomes exclusive only if no other engine's
	 * description holds one; then it goes back at once */
	if (db->io.ops->lock(db->io.ctx, db->log_fd, ALEX_LOCK_WRITER, ALEX_EXCLUSIVE))
		return 1;
	(void)db->io.ops->lock(db->io.ctx, db->log_fd, ALEX_LOCK_WRITER, ALEX_SHARED);
	return 0;
}

int alex_log_lock_ckpt(struct alex_db *db, int on)
{
	if (db->log_fd < 0 || db->cfg.exclusive)
		return 0; /* no log: nothing to checkpoint; the tool is alone */
	return on ? lock_wait(db, db->log_fd, ALEX_LOCK_CKPT, ALEX_EXCLUSIVE, 1)
		  : db->io.ops->lock(db->io.ctx, db->log_fd, ALEX_LOCK_CKPT, ALEX_UNLOCK);
}

/* The direct descriptor goes with the log's (io_mem's is the same one). */
static void direct_close(struct alex_db *db)
{
	if (db->log_dfd >= 0 && db->log_dfd != db->log_fd)
		db->io.ops->close(db->io.ctx, db->log_dfd);
	db->log_dfd = -1;
	db->log_direct = 0;
}

/* What a log of format v says when it goes STAGED: 8, or 9 kept. */
static uint32_t staged_version(uint32_t v)
{
	return alex_format_staged(v) ? v : ALEX_FORMAT_V8;
}

static void new_header(struct alex_db *db, uint64_t epoch, uint64_t lsn, uint64_t data_off)
{
	db->hdr.version = alex_loghdr_next_version(db->hdr.version); /* format.h */
	db->hdr.epoch = epoch;
	db->hdr.start_lsn = lsn;
	db->hdr.salt = alex_random32();
	db->hdr.flags = ALEX_HDR_BASE | (db->hdr.flags & ALEX_HDR_XTS);
	db->hdr.data_off = data_off;
	db->hdr.fence_epoch = alex_format_carry(db->hdr.version) ? epoch : 0;
	alex_hdr_no_prev(&db->hdr);
	db->next_lsn = lsn;
	db->prev_crc = db->hdr.salt;
	db->append_off = data_off;
	db->epoch_commits = 0;
	alex_own_reset(db);
	db->epoch_live = 1;
	db->epoch_started = 0;
}

/* May an epoch begun over this base header say FENCED in its first slot
 * (its mark then riding on its first commit's sync: protect.c)? */
static int fenced_from_start(const struct alex_db *db, const uint8_t *base_hdr)
{
	return db->cfg.protect_base && alex_protect_markable(base_hdr, ALEX_BASE_HDR);
}

/*
 * Makes the log under a name of its own and renames it into place without
 * replacing: two processes creating one database at once both get the same
 * log (the loser's EEXIST sends it to open the winner's).  replace: what is
 * in the way holds nothing (alex_log_open said so).
 */
static int log_remove(struct alex_db *db, int settle);

static int create_log(struct alex_db *db, int replace, const uint8_t *base_hdr)
{
	const struct alex_io_ops *o = db->io.ops;
	size_t n = strlen(db->log_path) + 32;
	char *tmp = malloc(n);
	struct alex_finfo base;
	int fd = -1, err;

	if (!tmp)
		return ALEX_ENOMEM;
	snprintf(tmp, n, "%s.new-%d-%08x", db->log_path, (int)getpid(), alex_random32());
	memset(&db->hdr, 0, sizeof db->hdr);
	random_bytes(db->hdr.uuid, sizeof db->hdr.uuid);
	if (alex_log_sealed(db)) {
		db->hdr.version = ALEX_FORMAT_XTS;
		db->hdr.flags = ALEX_HDR_XTS;
	}
	new_header(db, 1, 1, ALEX_LOG_DATA);
	memcpy(db->hdr.base, base_hdr, ALEX_BASE_HDR);
	/* epoch 1 in slot 1, beside the placeholder (format.h) */
	memset(&db->hdr_disk, 0, sizeof db->hdr_disk);
	db->hdr_slot = 0;
	/* Over an SQLite database a new log is fenced from its first header:
	 * its first mark rides on the first commit's sync (protect.c), so no
	 * header of it may ever let a record count without that mark. */
	int fenced = fenced_from_start(db, base_hdr);
	if (fenced)
		db->hdr.flags |= ALEX_HDR_FENCED;
	if ((err = o->stat(db->io.ctx, db->base_fd[ALEX_FILE_DB], &base)) ||
	    (err = o->open(db->io.ctx, tmp, ALEX_O_CREAT | ALEX_O_TRUNC, &fd)))
		goto out;
	/* The database's mode (and owner) before the name exists: the log
	 * holds its pages and is never more open than it.  No zeros yet: many
	 * logs see one record before the last close removes them (a short
	 * process), and the first record grows the file by what it needs. */
	uint64_t len = ALEX_LOG_DATA;
	uint8_t *blk = db->scratch; /* slot 0: the placeholder (format.h) */
	memset(blk, 0, ALEX_BLOCK);
	alex_loghdr_placeholder(blk, db->hdr.version);
	if ((err = o->own(db->io.ctx, fd, &base)) ||
	    (err = o->pwrite(db->io.ctx, fd, blk, ALEX_BLOCK, 0)) ||
	    (err = write_slot(db, fd, &db->hdr)) ||
	    (db->hdr.epoch % 2 == 0 && (err = o->ftruncate(db->io.ctx, fd, len))))
		goto out;
	/* Held before the name appears (the lock is the open file's, so the
	 * rename keeps it): an engine that opens the log meanwhile finds it
	 * empty, and at its last close would remove a log no other engine
	 * holds -- the maker's commits then went into a file with no name
	 * (tests/core/test_lograce.c). */
	if ((err = lock_wait(db, fd, ALEX_LOCK_OPEN, db->cfg.exclusive ? ALEX_EXCLUSIVE : ALEX_SHARED,
			     1)) ||
	    (err = writer_lock(db, fd)) || (err = o->rename(db->io.ctx, tmp, db->log_path, !replace)))
		goto out;
	direct_close(db);
	db->log_fd = fd;
	db->log_gen++;
	__atomic_store_n(&db->bh.valid, 0, __ATOMIC_RELAXED); /* its epoch may write the file */
	db->log_pid = (int)getpid();
	db->log_stub = 0; /* a stub it replaced is gone */
	db->alloc_end = len;
	db->log_virgin = fenced;
	fd = -1;
	/* The counter may fail to map (no descriptor, no space): then this
	 * engine reads the log at every catch-up and may not write it until
	 * it maps (shm.c).  Made before the directory's sync, so that its name
	 * goes with the log's instead of into the first record's journal
	 * commit (a device round trip less on ext4: tools/short-floor). */
	(void)alex_shm_attach(db);
	if ((err = o->sync_dir(db->io.ctx, db->log_path))) {
		/* Published, its name maybe never durable: taken back while no
		 * other engine holds it, or the next commit in it -- this
		 * engine's retry, or another process's -- would be acknowledged
		 * in a log a power cut can take away (review).  Held by another,
		 * it stays: left alone, a double fault.  No mark of it yet:
		 * nothing to settle, whose failing sync would keep it (review). */
		if (log_remove(db, 0))
			alex_log_drop(db);
	}
out:
	if (fd >= 0) {
		o->close(db->io.ctx, fd);
		o->unlink(db->io.ctx, tmp);
	}
	free(tmp);
	return err;
}

int alex_log_read_header(struct alex_db *db, struct alex_loghdr *out)
{
	const struct alex_io_ops *o = db->io.ops;
	uint8_t *buf = db->scratch;
	struct alex_loghdr h[2];
	int rc[2], err;
	size_t got;

	db->slot_damaged = 0;
	/* both slots in one read: this runs at every SQLite transaction */
	if ((err = o->pread(db->io.ctx, db->log_fd, buf, ALEX_BLOCK + ALEX_HDR_SLOT_USED, 0, &got)))
		return err;
	for (int s = 0; s < 2; s++)
		rc[s] = got >= s * ALEX_BLOCK + ALEX_HDR_SLOT_USED
				? alex_loghdr_decode(buf + s * ALEX_BLOCK, &h[s])
				: ALEX_ECORRUPT;
	/* is a slot that does not decode damaged, or merely never written?  A
	 * damaged one may have held the newer epoch (recover.c looks for its
	 * records).  Asked only of such a slot: this runs at every transaction */
	int written[2];
	for (int s = 0; s < 2; s++) {
		const uint8_t *p = buf + s * ALEX_BLOCK;
		size_t have = got > (size_t)s * ALEX_BLOCK ? got - (size_t)s * ALEX_BLOCK : 0;
		if (have > ALEX_HDR_SLOT_USED)
			have = ALEX_HDR_SLOT_USED;
		written[s] = rc[s] && !alex_all_zero(p, have) &&
			     !(have == ALEX_HDR_SLOT_USED && alex_loghdr_is_placeholder(p));
	}
	/* a slot of a version this reader does not know holds a valid crc:
	 * not damage to repair around, a log to leave alone (format.h) */
	if (rc[0] == ALEX_EVERSION || rc[1] == ALEX_EVERSION)
		return ALEX_EVERSION;
	if (rc[0] && rc[1]) {
		if (!written[0] || !written[1])
			return ALEX_ENOLOG; /* a log whose making was cut short */
		return ALEX_ECORRUPT;
	}
	if (!rc[0] && !rc[1] && memcmp(h[0].uuid, h[1].uuid, 16) != 0)
		return ALEX_ECORRUPT; /* two logs spliced together */
	int cur = rc[0] ? 1 : rc[1] ? 0 : alex_loghdr_pick(&h[0], &h[1]);
	/* an encrypted log without the key, or a key and a log in clear */
	if (!!(h[cur].flags & ALEX_HDR_XTS) != alex_log_sealed(db))
		return alex_log_sealed(db) ? ALEX_EPLAIN : ALEX_ENOKEY;
	if ((h[cur].flags & ALEX_HDR_XTS) && (err = alex_log_xts_base(db, 0, &h[cur])))
		return err;
	*out = h[cur];
	db->hdr_slot = cur;
	db->hdr_synced = 0; /* read, not written: durable only once we sync */
	/* the other slot: this epoch still carrying, the one read having let
	 * go -- maybe not yet durable (carry.c: alex_carry_room) */
	const struct alex_loghdr *o2 = &h[!cur];
	int let_go = !rc[!cur] && o2->epoch == h[cur].epoch && o2->salt == h[cur].salt &&
		     o2->prev_epoch && !h[cur].prev_epoch;
	db->slot_gone_off = let_go ? o2->prev_off : 0;
	db->slot_gone_end = let_go ? o2->prev_end : 0;
	db->slot_damaged = rc[!cur] && written[!cur];
	return 0;
}

/* The log must not be readable or writable by anyone the database keeps
 * out: give it the database's mode (and owner), or refuse it.  log: fd's
 * stat, just taken. */
static int check_owner(struct alex_db *db, int fd, struct alex_finfo log)
{
	const struct alex_io_ops *o = db->io.ops;
	struct alex_finfo base;
	int err;

	if ((err = o->stat(db->io.ctx, db->base_fd[ALEX_FILE_DB], &base)))
		return err;
	if (!(log.mode & 0777 & ~base.mode) && log.uid == base.uid && log.gid == base.gid)
		return 0;
	/* tighten it if we may (its owner, or root, who also gives it the
	 * database's owner); a log we cannot chown but that grants nothing
	 * more than the database does is no leak */
	o->own(db->io.ctx, fd, &base);
	if ((err = o->stat(db->io.ctx, fd, &log)))
		return err;
	if (!(log.mode & 0777 & ~base.mode))
		return 0;
	db->perm_log = log.mode & 0777;
	db->perm_base = base.mode & 0777;
	return ALEX_EPERMS;
}

int alex_log_open(struct alex_db *db)
{
	const struct alex_io_ops *o = db->io.ops;
	struct alex_finfo fi;
	int err, fd;

	direct_close(db);
	alex_shm_detach(db);
	db->log_fd = -1;
	db->epoch_live = 0;
	db->log_virgin = 0;
	memset(&db->hdr, 0, sizeof db->hdr);
	for (int tries = 0; tries < 100; tries++) {
		/* none: made by the first record that needs it */
		if ((err = o->open(db->io.ctx, db->log_path, db->cfg.readonly ? ALEX_O_RDONLY : 0,
				   &fd)))
			return err == ENOENT ? 0 : err;
		db->log_fd = fd;
		db->log_gen++;
		__atomic_store_n(&db->bh.valid, 0, __ATOMIC_RELAXED);
		db->log_pid = (int)getpid();
		int mode = db->cfg.exclusive ? ALEX_EXCLUSIVE : ALEX_SHARED;
		if ((err = lock_wait(db, fd, ALEX_LOCK_OPEN, mode, !db->cfg.exclusive)) ||
		    (err = writer_lock(db, fd)) || (err = o->stat(db->io.ctx, fd, &fi)))
			return err;
		if (fi.nlink)
			break;
		/* removed by the last engine while we waited for its lock */
		o->close(db->io.ctx, fd);
		db->log_fd = -1;
	}
	if (db->log_fd < 0)
		return ALEX_EINUSE;
	if ((err = check_owner(db, db->log_fd, fi)))
		return err;
	db->alloc_end = fi.size;
	if (fi.size == 0)
		err = ALEX_ENOLOG; /* an empty file (touch, or a copy) holds nothing */
	else
		err = alex_log_read_header(db, &db->hdr);
	if (err == ALEX_ENOLOG)
		db->log_stub = 1; /* replaced by the first record */
	else if (!err)
		(void)alex_shm_attach(db); /* as in create_log */
	return err == ALEX_ENOLOG ? 0 : err;
}

void alex_log_direct_try(struct alex_db *db)
{
	/* FULL mode only: NORMAL's records wait in the page cache for the
	 * flusher, and several commits share a page there (stage.c).  Nor a
	 * log that takes a NORMAL staging log's window merges (FULL while it
	 * does): a merge is tens of blocks, and written direct it took twice
	 * as long as through the page cache with the same fdatasync after it
	 * (six merges of 5 000 one-row inserts: 9.2-10.0 ms against 4.0-4.6) */
	if (db->log_direct || !db->cfg.direct || db->cfg.sync != ALEX_SYNC_FULL || db->merged_windows ||
	    db->writes_now ||
	    db->log_fd < 0 || db->log_stub || db->hdr.version < ALEX_FORMAT_V6 ||
	    db->hdr.version == ALEX_FORMAT_XTS ||
	    db->st.direct_refused || !db->io.ops->open_direct)
		return;
	int err = db->io.ops->open_direct(db->io.ctx, db->log_fd, &db->log_dfd);
	if (err) {
		db->st.direct_refused = err;
		db->log_dfd = -1;
		return;
	}
	db->log_direct = 1;
}

void alex_log_buffered(struct alex_db *db)
{
	db->writes_now = 1;
	direct_close(db);
}

void alex_log_drop(struct alex_db *db)
{
	direct_close(db);
	alex_shm_detach(db);
	/* a sync outside the lock may still run on it: closed when it ends */
	if (db->log_fd >= 0 && db->bg.on && db->bg.fd == db->log_fd)
		db->bg.parked = 1;
	else if (db->log_fd >= 0)
		db->io.ops->close(db->io.ctx, db->log_fd);
	db->log_fd = -1;
}

int alex_log_reopen(struct alex_db *db)
{
	alex_log_drop(db);
	db->log_stub = 0;
	return alex_log_open(db);
}

int alex_log_changed(struct alex_db *db, int *changed)
{
	struct alex_finfo fi;
	int err, exists;

	*changed = 0;
	if (db->log_fd < 0) {
		if ((err = db->io.ops->exists(db->io.ctx, db->log_path, &exists)))
			return err;
		*changed = exists;
		return 0;
	}
	if ((err = db->io.ops->stat(db->io.ctx, db->log_fd, &fi)))
		return err;
	*changed = fi.nlink == 0;
	db->alloc_end = fi.size;
	return 0;
}

int alex_log_write_header(struct alex_db *db)
{
	int err = write_slot(db, db->log_fd, &db->hdr);

	if (!err)
		db->hdr_disk = db->hdr;
	return err;
}

int alex_log_begin_epoch(struct alex_db *db, int sync, const uint8_t *base_hdr)
{
	int err;

	if (db->log_fd < 0 || db->log_stub) {
		/* a stub (alex_log_open) is replaced.  Another process may have
		 * made a real log since this engine last looked -- the catch-up
		 * does not look while the file stays as it was (refresh.c), and
		 * one made empty leaves it so: EEXIST, and theirs is adopted */
		alex_log_drop(db);
		if ((err = create_log(db, db->log_stub, base_hdr)) == EEXIST) {
			/* another process made it first: the caller recovers
			 * theirs (alex_epoch_begin) */
			return (err = alex_log_reopen(db)) ? err : ALEX_EADOPT;
		} else {
			db->log_stub = 0;
			if (!err)
				db->hdr_disk = db->hdr;
			else
				db->epoch_live = 0; /* new_header's: no log holds it (review) */
			return err;
		}
	}
	/* A short epoch is followed, not overwritten (format.h): only where
	 * this engine read the epoch to its end (a live one), the new one is
	 * fenced from its first header, and the file system has room (the log
	 * then grows; a checkpoint made for room restarts at 8192). */
	uint64_t end = db->epoch_live ? db->append_off : ALEX_LOG_DATA;
	int follow = alex_loghdr_next_version(db->hdr.version) >= ALEX_FORMAT_VERSION &&
		     fenced_from_start(db, base_hdr) && end > ALEX_LOG_DATA &&
		     end - ALEX_LOG_DATA < ALEX_LOG_RUN && !ALEX_SPACE_LOW(db) && !db->making_room;
	new_header(db, db->hdr.epoch + 1, db->next_lsn ? db->next_lsn : 1,
		   follow ? alex_epoch_follows_at(end) : ALEX_LOG_DATA);
	memcpy(db->hdr.base, base_hdr, ALEX_BASE_HDR);
	if (follow)
		db->hdr.flags |= ALEX_HDR_FENCED;
	/* an epoch begun under a staging log's commits (a checkpoint for room,
	 * ckpt.c) says STAGED from its first header, as the one before did:
	 * every writer still goes through the staging log */
	if (db->above_holds && alex_format_deltas(db->hdr.version)) {
		db->hdr.version = staged_version(db->hdr.version);
		db->hdr.flags |= ALEX_HDR_STAGED;
	}
	DBGS(db, "begin_epoch", "");
	if ((err = alex_log_write_header(db)))
		goto fail;
	if (sync && (err = alex_log_sync(db)))
		goto fail;
	return 0;
fail:
	/* we cannot know which header the disk holds */
	db->failed = 1;
	return err;
}

/*
 * Appends the staged record (db->rec, built by stage.c).  Before the first
 * record of an epoch the header goes out too, if it changed (FENCED, the
 * base copy): the record's fdatasync then covers both.
 */
int alex_log_append(struct alex_db *db, uint32_t rec_len, uint64_t *rec_off)
{
	int err;

	if ((err = alex_carry_room(db, db->append_off, rec_len)))
		return err;
	if (memcmp(&db->hdr, &db->hdr_disk, sizeof db->hdr) != 0 &&
	    (err = alex_log_write_header(db)))
		return err;
	if ((err = alex_log_prealloc(db, db->append_off + rec_len)))
		return err;
	int direct = db->log_direct;
	err = alex_log_pwrite_via(db, db->log_fd, direct ? db->log_dfd : db->log_fd, db->rec,
				  rec_len, db->append_off);
	if (err == EINVAL && direct) {
		/* the file system wants larger units after all (a 4096-byte
		 * logical sector): through the page cache from now on */
		db->st.direct_refused = EINVAL;
		direct_close(db);
		err = alex_log_pwrite(db, db->log_fd, db->rec, rec_len, db->append_off);
	} else if (!err && direct) {
		db->st.direct_writes++;
	}
	if (err)
		return err;
	if (db->append_off + rec_len > db->alloc_end)
		db->alloc_end = db->append_off + rec_len;
	*rec_off = db->append_off;
	return 0;
}

int alex_log_sync(struct alex_db *db)
{
	if (db->log_fd < 0)
		return 0;
	/* A sync outside the lock on this descriptor (commit.c): a write-back
	 * error is reported to one sync of a file description only, so two at
	 * once could leave this one blind to it (review).  One not yet begun
	 * is cancelled -- this one does its work, and waiting for it could
	 * wait on the syncing thread's turn at other databases' locks (review:
	 * a deadlock with fork) -- one in its fdatasync is waited for, which
	 * takes no lock, and its error is this one's. */
	int err = alex_sync_settle(db, db->log_fd);
	if (err)
		return err;
	err = db->io.ops->fdatasync(db->io.ctx, db->log_fd);

	db->st.syncs++;
	if (!err) {
		db->hdr_synced = 1;
		db->ca.gone_off = db->ca.gone_end = 0; /* carry.c: alex_carry_room */
	}
	return err;
}

int alex_log_rewrite_header(struct alex_db *db)
{
	int err = alex_log_write_header(db);

	return err ? err : alex_log_sync(db);
}

int alex_log_mark_staged(struct alex_db *db)
{
	int err;

	if (!alex_format_deltas(db->hdr.version))
		return ALEX_EVERSION;
	if (db->log_fd < 0 || db->log_stub || !db->epoch_live)
		return ALEX_EINVAL;
	uint32_t v = staged_version(db->hdr.version);
	if ((db->hdr_disk.flags & ALEX_HDR_STAGED) && db->hdr_disk.version == v &&
	    memcmp(&db->hdr, &db->hdr_disk, sizeof db->hdr) == 0)
		return 0;
	int raise = db->hdr_disk.version != v;
	db->hdr.version = v;
	db->hdr.flags |= ALEX_HDR_STAGED;
	if ((err = alex_log_write_header(db)))
		return err;
	return raise ? alex_log_sync(db) : 0;
}

/* Does the name still lead to the log this engine holds?  Not once it
 * was unlinked (a stub another engine's new log replaced), nor when it was
 * moved (libalex.so's rename of the database takes the log along) and
 * another log made at the name (third review: its commits were unlinked
 * with it). */
static int still_named(struct alex_db *db)
{
	const struct alex_io_ops *o = db->io.ops;
	struct alex_finfo held, named;

	/* by the name, never opened: a FIFO put there would block an open,
	 * and a process that gave up its privileges may not open the log
	 * (fourth review) */
	return o->stat(db->io.ctx, db->log_fd, &held) == 0 && held.nlink != 0 && o->stat_path &&
	       o->stat_path(db->io.ctx, db->log_path, &named) == 0 && named.dev == held.dev &&
	       named.ino == held.ino;
}

/* The log let go of, removed or not: err passed on. */
static int let_go(struct alex_db *db, int err)
{
	alex_log_drop(db);
	db->epoch_live = 0;
	return err;
}

/* settle: the database file's mark first (alex_log_remove) */
static int log_remove(struct alex_db *db, int settle)
{
	const struct alex_io_ops *o = db->io.ops;

	if (db->log_fd < 0)
		return 0;
	/* only the last engine: another may be reading it, or about to append.
	 * A forked child's descriptor is its parent's, and so is the lock that
	 * says so: the child's view may be stale and the parent's log full of
	 * commits, so only the process that opened the log removes it. */
	if (db->log_pid != (int)getpid())
		return ALEX_EINUSE;
	if (!db->cfg.exclusive &&
	    o->lock(db->io.ctx, db->log_fd, ALEX_LOCK_OPEN, ALEX_EXCLUSIVE) != 0)
		return ALEX_EINUSE;
	/* What this engine holds may no longer be what is at the path: a stub
	 * it opened that another engine's new log replaced (create_log), or
	 * a log removed meanwhile.  The names are then another log's, maybe
	 * holding acknowledged commits (review: removed by a reader's close).
	 * Asked again before the mark comes off and before the name goes:
	 * the stub's lock keeps no maker out (second review). */
	if (!still_named(db))
		return let_go(db, 0);
	/* What this engine judged empty is its own view: another engine may
	 * have committed since it last looked, and died (review: a staging
	 * log removed with a dead process's commits in it by a close that
	 * had not caught up).  It looks again now that the lock keeps every
	 * other engine out. */
	if (!db->cfg.exclusive) {
		unsigned gen = db->log_gen;
		int err = alex_reload(db, 0, 0);
		if (err || db->epoch_commits || db->doubt)
			return err ? err : ALEX_EINUSE;
		/* reopened: the file at the name is another engine's new log,
		 * and the lock that kept others out was on the one it replaced
		 * (second review: a close holding a stub removed a maker's log) */
		if (db->log_gen != gen)
			return ALEX_EINUSE;
	}
	/* ... and a staging log may hold commits that name this log (its
	 * STAGED header read just now; second review: an idle close removed
	 * it under a dead stager's commits).  No engine can stage meanwhile:
	 * it would hold this log open. */
	if (alex_stage_unmerged(db))
		return ALEX_EINUSE;
	/* no mark of this log left on the database file, durably, before
	 * its name goes: a fence with no log is a database moved away from
	 * it (protect.c) */
	int err = 0, named = still_named(db);
	if (named && settle) {
		err = alex_protect_settle(db);
		named = still_named(db);
	}
	if (!named)
		return let_go(db, 0);
	if (err)
		return err;
	/* the counter first: an engine maps it only with the log open, and
	 * while we hold the log's lock alone nobody can open it */
	alex_shm_retire(db);
	o->unlink(db->io.ctx, db->shm_path);
	return let_go(db, o->unlink(db->io.ctx, db->log_path));
}

int alex_log_remove(struct alex_db *db)
{
	return log_remove(db, 1);
}

/* loc's stored bytes into buf, their crc checked (still sealed in format 5). */
static int read_checked(struct alex_db *db, const struct alex_loc *loc, uint8_t *buf)
{
	size_t got;
	int err;

	if ((err = db->io.ops->pread(db->io.ctx, db->log_fd, buf, loc->len, loc->off, &got)))
		return err;
	return got == loc->len && alex_crc32c(0, buf, loc->len) == loc->crc ? 0 : ALEX_EBADBLOCK;
}

/* A block that is not a DELTA, read and decoded. */
static int read_whole(void *ctx, const struct alex_loc *loc, uint8_t *blk)
{
	struct alex_db *db = ctx;
	uint8_t *in = alex_loc_codec(loc) ? db->scratch : blk; /* raw: straight into place */
	int err;

	if (loc->len > ALEX_BLOCK)
		return ALEX_EBADBLOCK;
	if ((err = read_checked(db, loc, in)))
		return err;
	if (alex_log_sealed(db) &&
	    (err = alex_log_xts_block(db, 0, in, loc->len, loc->off, loc->epoch, loc->flags >> 8)))
		return err;
	if (in == blk)
		return 0;
	return alex_codec_unpack(in, loc->len, alex_loc_codec(loc), blk);
}

/* A DELTA's stored bytes; a sealed log has none (format 5). */
static int read_stored(void *ctx, const struct alex_loc *loc, uint8_t *buf)
{
	return alex_log_sealed(ctx) ? ALEX_EBADBLOCK : read_checked(ctx, loc, buf);
}

/* A chain's root in the database file (format 9): the block as the file
 * holds it now, zeros past its end.  Any version of the block the file
 * may hold is right outside the chain's runs (format.h). */
static int read_base(void *ctx, const struct alex_loc *root, uint8_t *blk)
{
	struct alex_db *db = ctx;
	int fd = db->base_fd[ALEX_FILE_DB];
	size_t got = 0;
	int err;

	if (fd < 0)
		return ALEX_EBADBLOCK; /* a delta of a file that is not there */
	if ((err = db->io.ops->pread(db->io.ctx, fd, blk, ALEX_BLOCK, root->off, &got)))
		return err;
	memset(blk + got, 0, ALEX_BLOCK - got);
	return 0;
}

static const uint8_t *known_at(void *ctx, uint64_t key, const struct alex_loc *loc)
{
	return alex_known_get(ctx, key, loc, NULL);
}

/* Block key at loc from the log: known, whole, or a chain walked back;
 * keep: remember it (a committed place's) when it was not known. */
static int read_block(struct alex_db *db, uint64_t key, const struct alex_loc *loc, uint8_t *blk,
		      int keep)
{
	const uint8_t *img = alex_known_get(db, key, loc, NULL);
	uint32_t depth = 0;
	int err;

	if (img) {
		memcpy(blk, img, ALEX_BLOCK);
		return 0;
	}
	if (alex_loc_codec(loc) != ALEX_BLK_DELTA) {
		err = read_whole(db, loc, blk);
	} else {
		struct alex_delta_src src = { db, read_stored, read_whole, known_at,
					      alex_known_chain(db), read_base, key };
		err = src.chain ? alex_delta_load(&src, loc, blk, &depth) : ALEX_ENOMEM;
	}
	if (!err && keep && alex_known_wanted(db))
		alex_known_put(db, key, loc, blk, depth);
	return err;
}

int alex_log_read_block(struct alex_db *db, uint64_t key, const struct alex_loc *loc,
			uint8_t *blk)
{
	return read_block(db, key, loc, blk, 0);
}

int alex_log_read_kept(struct alex_db *db, uint64_t key, const struct alex_loc *loc, uint8_t *blk)
{
	return read_block(db, key, loc, blk, 1);
}
