/*
 * protect.c - the fence: keeping SQLite without ALEX away from a database
 * whose newest pages are still in the log, and telling, after any crash,
 * whether the log's records are still to be applied.
 *
 * Before the first COMMIT record of an epoch is written, the base file is
 * marked with that epoch's fence, and the mark is durable no later than
 * the record (alex-log(5)): written out to the device before the record is
 * written, it becomes durable with the record's own sync where the file
 * system overwrites in place (io_writeout.c), else it is synced first.  A
 * crash that kept the record but not the mark finds the epoch not live
 * (below) and drops records that no sync had acknowledged:
 *
 *   an SQLite database (bytes 0..99 of page 1):
 *      19      0xa1: the read version; SQLite refuses a file whose read
 *              version is above 2 ("file is not a database")
 *      24..27  the change counter, inverted: a program without ALEX that
 *              still caches the file's pages sees the file changed, drops
 *              its cache and reads page 1 again -- and is refused
 *      72..75  "ALXF"
 *      84..91  the fence: crc32c of the log's uuid, then the epoch (LE)
 *   The true bytes follow from the rest: SQLite keeps byte 18 equal to 19,
 *   the change counter equal to "version valid for" (92..95), and zeros at
 *   72..91; only such a page 1 is marked (alex_protect_markable).
 *   an empty file: a 100-byte placeholder, "ALEX-log-pending", with the
 *      same "ALXF" and fence at 72 and 84; SQLite refuses it too.
 *
 * Bytes 72..91 are "reserved for expansion, must be zero" in SQLite's
 * format, so the true page 1 has zeros there.
 *
 * The epoch's records count only while the base carries exactly its fence
 * (the header flag ALEX_HDR_FENCED says the epoch was fenced).  A checkpoint
 * writes every block into the base and syncs it before it takes the mark
 * off, so a base without the fence -- unmarked, or marked for a later epoch
 * -- holds everything the epoch committed: its records are stale.  That
 * order is what lets a checkpoint get away with a single fdatasync, and the
 * log be removed or its next epoch begun without one.
 *
 * The same record carries block 0, so while the log is live the true page
 * 1 comes from the log.  Should the base's block 0 be read (a crash after
 * the mark, before any commit), the true bytes are put back from the mark.
 * Logs of format 1 marked byte 19 only (a "legacy" mark, restored from byte
 * 18, which SQLite keeps equal to it); their epochs are not fenced.
 *
 * The log is made, its name synced, before its first mark, and it is
 * removed only after the base carries no mark of it, synced (settle,
 * below).  So a fence with no log beside it is never what ALEX left: the
 * log went another way (moved or deleted, the database moved or linked
 * away from it), and the file holds only its last checkpoint.  Such a
 * file is refused (orphaned, below), as SQLite without ALEX refuses it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "crc32c.h"
#include "db.h"
#include "engine.h"
#include "log.h"
#include "protect.h"

static const char fence_magic[4] = { 'A', 'L', 'X', 'F' };

#define HDR 100u
#define AT_MAGIC 72u
#define AT_FENCE 84u

uint64_t alex_protect_fence(const struct alex_loghdr *h)
{
	return (uint64_t)alex_crc32c(0, h->uuid, sizeof h->uuid) | (alex_hdr_fence_epoch(h) << 32);
}

static int is_sqlite(const uint8_t *h, size_t got)
{
	return got >= HDR && memcmp(h, ALEX_SQLITE_MAGIC, 16) == 0;
}

/* Each of the 16 magic bytes SQLite's or the placeholder's (h: 16 bytes) */
static int mixed_magic(const uint8_t *h)
{
	for (size_t i = 0; i < 16; i++)
		if (h[i] != (uint8_t)ALEX_SQLITE_MAGIC[i] && h[i] != (uint8_t)ALEX_PLACEHOLDER[i])
			return 0;
	return 1;
}

/*
 * What mark, if any, do the base's first bytes carry?  A write over the
 * mark may be cut at any byte by a crash, leaving old bytes after new ones:
 * the fence area (72..91) is laid out alike in both marks and names the
 * same epoch, so a mix still says whose it is.  A magic that is partly the
 * placeholder's is a placeholder (the file held nothing before the epoch);
 * an SQLite magic with the fence area is marked whatever byte 19 says (an
 * unmark cut short).
 */
static void read_mark(const uint8_t *h, size_t got, uint64_t size, struct alex_mark *m)
{
	int fence = got >= HDR && memcmp(h + AT_MAGIC, fence_magic, 4) == 0;
	/* read at every catch-up of an epoch with nothing in its log: the
	 * byte-wise mix is asked only where it can matter */
	int sq = got >= 16 && memcmp(h, ALEX_SQLITE_MAGIC, 16) == 0;
	int ph = got >= 16 && memcmp(h, ALEX_PLACEHOLDER, 16) == 0;

	memset(m, 0, sizeof *m);
	if (ph || (!sq && fence && mixed_magic(h))) {
		m->kind = ALEX_MARK_PLACEHOLDER;
	} else if (sq && got >= 20 && (h[19] == ALEX_MARK || fence)) {
		m->kind = ALEX_MARK_SQLITE;
	} else {
		/* A format-1 placeholder torn by a crash: a short file of
		 * placeholder bytes and zeros (no SQLite database is that short).
		 * Nothing was committed over it yet: it reads as empty. */
		int torn = size <= HDR && got == size;
		for (size_t i = 0; i < got && torn; i++)
			torn = !h[i] || (i < 16 && h[i] == (uint8_t)ALEX_PLACEHOLDER[i]);
		m->kind = torn && size ? ALEX_MARK_TORN : ALEX_MARK_NONE;
		return;
	}
	if (fence) {
		m->has_fence = 1;
		m->fence = alex_get64(h + AT_FENCE);
	}
}

int alex_protect_probe(struct alex_db *db, uint64_t *size)
{
	uint8_t h[HDR];
	size_t got = 0;
	int err;

	memset(&db->mark, 0, sizeof db->mark);
	db->base_stamp = *size;
	db->base_markable = 0;
	__atomic_store_n(&db->bh.valid, 0, __ATOMIC_RELAXED);
	if (db->base_fd[ALEX_FILE_DB] < 0 || *size == 0)
		return 0;
	if ((err = db->io.ops->pread(db->io.ctx, db->base_fd[ALEX_FILE_DB], h, HDR, 0, &got)))
		return err;
	/* without a key these are the stored bytes: an encrypted file's
	 * marker is refused here, in the read every open makes anyway (with
	 * one, open.c checked it before the layer decrypted them) */
	static const uint8_t any_key[ALEX_KCV_BYTES];
	if (!db->xts && alex_xts_probe(h, got, any_key) != ALEX_XTS_NOT)
		return ALEX_ENOKEY;
	/* SQLite changes the header's change counter at every commit */
	db->base_stamp ^= (uint64_t)alex_crc32c(0, h, got) << 32;
	read_mark(h, got, *size, &db->mark);
	db->base_markable = alex_protect_markable(h, got); /* so: no mark */
	/* a file only this engine's log could make it write: with none open,
	 * nothing of ours writes it until one is (log.c) */
	if (db->cfg.protect_base && db->log_fd < 0 && got == HDR) {
		memcpy(db->bh.img, h, HDR);
		alex_protect_unmask(db->bh.img, HDR);
		__atomic_store_n(&db->bh.valid, 1, __ATOMIC_RELAXED);
	}
	if (db->mark.kind == ALEX_MARK_PLACEHOLDER || db->mark.kind == ALEX_MARK_TORN)
		*size = 0; /* nothing of it is database content */
	return 0;
}

int alex_protect_is_live(const struct alex_db *db)
{
	if (db->mark.kind != ALEX_MARK_SQLITE && db->mark.kind != ALEX_MARK_PLACEHOLDER)
		return 0;
	return !db->mark.has_fence || db->mark.fence == alex_protect_fence(&db->hdr);
}

/*
 * Everything the mark changes can be told from what it leaves: SQLite keeps
 * byte 18 equal to 19 and its "version valid for" number (92..95) equal to
 * the change counter (alex_protect_markable insists), and zeros at 72..91.
 * So a page whose mark's write -- or unmark's -- a crash cut at any byte
 * still unmasks to the true page.
 */
void alex_protect_unmask(uint8_t *blk0, size_t len)
{
	int fence = len >= HDR && memcmp(blk0 + AT_MAGIC, fence_magic, 4) == 0;

	if (len < 20 || memcmp(blk0, ALEX_SQLITE_MAGIC, 16) != 0 ||
	    (blk0[19] != ALEX_MARK && !fence))
		return;
	blk0[19] = blk0[18];
	if (len < HDR)
		return;
	for (int i = 0; i < 4; i++)
		if ((uint8_t)(blk0[24 + i] ^ blk0[92 + i]) == 0xff)
			blk0[24 + i] = blk0[92 + i];
	memset(blk0 + AT_MAGIC, 0, HDR - AT_MAGIC - 8);
}

/* The mark of the current epoch over a true page 1 (in place). */
static void apply(const struct alex_db *db, uint8_t *h)
{
	for (int i = 0; i < 4; i++)
		h[24 + i] = (uint8_t)~h[24 + i];
	h[19] = ALEX_MARK;
	memcpy(h + AT_MAGIC, fence_magic, 4);
	alex_put64(h + AT_FENCE, alex_protect_fence(&db->hdr));
}

int alex_protect_markable(const uint8_t *h, size_t len)
{
	/* and the change counter equal to "version valid for" (92..95), as
	 * every SQLite since 3.7.0 keeps it: unmask relies on it when a crash
	 * cut the mark's own write short */
	if (!is_sqlite(h, len) || h[19] > 2 || h[18] != h[19] || memcmp(h + 24, h + 92, 4) != 0)
		return 0;
	/* not zero where SQLite keeps zeros (72..91): leave it be */
	_Static_assert(HDR - 8 - AT_MAGIC == 20, "the reserved bytes are 8 + 8 + 4");
	return (alex_get64(h + AT_MAGIC) | alex_get64(h + AT_MAGIC + 8) | alex_get32(h + AT_MAGIC + 16)) == 0;
}

int alex_protect_apply(const struct alex_db *db, uint8_t *blk0, size_t len)
{
	if (!db->cfg.protect_base || !alex_protect_markable(blk0, len))
		return 0;
	apply(db, blk0);
	return 1;
}

/*
 * May this epoch's mark ride on its first commit's sync?  Not where the
 * epoch's records go over those of an older epoch of the log: were the
 * power to fail with the new records on the disk but neither the new mark
 * nor the last checkpoint's unmark, the base would still carry the older
 * epoch's fence, and recovery would replay what is left of that epoch's
 * records over a base that already holds all of them.  Two kinds of epoch
 * go over nothing that counts:
 *  - a log's first, of a log this engine made (the case of every
 *    short-lived process, whose log the last close removes);
 *  - one that follows a short epoch (format.h: a kept log's next process):
 *    its records begin where the epoch before ended.  Epochs follow one
 *    another from one that began at 8192, whose first record had a durable
 *    fence (synced, or ridden in a new log), so the disk holds the fence of
 *    an epoch of that run, whose records all lie below this one's.
 * Either says FENCED in every header it ever had (log.c), so a record that
 * outlives a lost mark never counts.
 */
int alex_protect_may_ride(const struct alex_db *db)
{
	if (!(db->hdr.flags & ALEX_HDR_FENCED) || db->append_off != alex_data_off(db))
		return 0;
	if (alex_data_off(db) > ALEX_LOG_DATA)
		return db->hdr.version >= ALEX_FORMAT_VERSION;
	return db->log_virgin && db->hdr.epoch == 1;
}

/* The base carries another log's fence, and this log is one whose first
 * mark rode on a sync that never came: its first epoch, begun on exactly
 * this base (the header's copy equals base_hdr).  That fence is a removed
 * predecessor's whose unmark was lost with the power too; nothing of this
 * log was acknowledged. */
static int vanished_fence(const struct alex_db *db, const uint8_t *base_hdr)
{
	return db->hdr.epoch == 1 && (db->hdr.flags & ALEX_HDR_BASE) &&
	       memcmp(base_hdr, db->hdr.base, ALEX_BASE_HDR) == 0;
}

int alex_protect_adopt(struct alex_loghdr *h, const struct alex_mark *mark, const uint8_t *blk,
		       uint64_t room, uint64_t off)
{
	struct alex_rec r;

	/* a carried epoch's header names what its records cannot (format 10):
	 * the slot before it stands, whose records its own never overwrite */
	if (!alex_rec_peek(blk, &r) || r.epoch != h->epoch + 1 || (r.flags & ALEX_REC_CARRY))
		return 0;
	uint64_t epoch = r.epoch, lsn = r.lsn;
	uint32_t salt = r.prev_crc;
	if (alex_rec_decode(blk, room, epoch, lsn, salt, &r) != ALEX_STOP_NONE)
		return 0;
	h->epoch = epoch;
	h->start_lsn = lsn;
	h->salt = salt;
	h->data_off = off;
	h->fence_epoch = 0;
	alex_hdr_no_prev(h);
	/* a log's epochs share its version (format.h) */
	h->version = alex_loghdr_next_version(h->version);
	/* the lost slot's copy of the base is unknown: unchecked this time,
	 * and the rewritten slot records the base as it is now.  It was fenced
	 * if the base carries this epoch's fence -- or if it follows the one
	 * before (off past 8192): such a slot says FENCED from its first write,
	 * and its fence rides on its first record's sync, so the record may be
	 * on the disk without it (format.h).  Not fenced, that record would
	 * count over a base a program without ALEX was free to change. */
	h->flags &= ~(ALEX_HDR_BASE | ALEX_HDR_FENCED);
	if ((mark->has_fence && mark->fence == alex_protect_fence(h)) || off > ALEX_LOG_DATA)
		h->flags |= ALEX_HDR_FENCED;
	return 1;
}

int alex_protect_foreign(struct alex_db *db, const uint8_t *base_hdr)
{
	uint64_t ours = alex_protect_fence(&db->hdr), f = db->mark.fence;
	uint8_t now[ALEX_BASE_HDR];

	if (!(db->hdr.flags & ALEX_HDR_FENCED) || !db->mark.has_fence ||
	    (uint32_t)f == (uint32_t)ours)
		return 0;
	/* this epoch's own fence, its write cut short over an unmarked page
	 * (k = 0: before any byte of the fence; nobody's fence is 0) */
	for (int k = 0; k < 8; k++) {
		uint64_t low = ((uint64_t)1 << (8 * k)) - 1;
		if ((f & low) == (ours & low) && (f >> (8 * k)) == 0)
			return 0;
	}
	if (!base_hdr && alex_protect_base_header(db, now) == 0)
		base_hdr = now;
	return !base_hdr || !vanished_fence(db, base_hdr);
}

int alex_protect_mark(struct alex_db *db, int ride)
{
	const struct alex_io_ops *o = db->io.ops;
	int fd = db->base_fd[ALEX_FILE_DB], err;
	uint8_t h[HDR];
	size_t got = 0;
	uint64_t phys;

	__atomic_store_n(&db->bh.valid, 0, __ATOMIC_RELAXED);
	if (!db->cfg.protect_base || fd < 0)
		return 0;
	if ((err = o->size(db->io.ctx, fd, &phys)))
		return err;
	if (db->climit[ALEX_FILE_DB] == 0) {
		/* empty (or only a placeholder, or torn bytes of one) */
		memset(h, 0, HDR);
		memcpy(h, ALEX_PLACEHOLDER, 16);
		memcpy(h + AT_MAGIC, fence_magic, 4);
		alex_put64(h + AT_FENCE, alex_protect_fence(&db->hdr));
		if ((err = o->pwrite(db->io.ctx, fd, h, HDR, 0)))
			return err;
		db->mark.kind = ALEX_MARK_PLACEHOLDER;
	} else {
		if ((err = o->pread(db->io.ctx, fd, h, HDR, 0, &got)))
			return err;
		alex_protect_unmask(h, got);
		if (db->climit[ALEX_FILE_DB] < HDR || !alex_protect_markable(h, got))
			return 0; /* not an SQLite database: nothing to protect */
		apply(db, h);
		/* one write inside the first sector: all of the mark or none */
		if ((err = o->pwrite(db->io.ctx, fd, h + 19, AT_FENCE + 8 - 19, 19)))
			return err;
		db->mark.kind = ALEX_MARK_SQLITE;
	}
	db->mark.has_fence = 1;
	db->mark.fence = alex_protect_fence(&db->hdr);
	/* If this fails the mark may or may not be there; either is safe to
	 * read, and no record has been written under it.  An overwrite in
	 * place rides on the commit's own sync (io_writeout.c); a placeholder
	 * grows the file, so it is synced here. */
	if (ride && db->mark.kind == ALEX_MARK_SQLITE && db->log_fd >= 0) {
		err = o->write_out(db->io.ctx, fd, 19, AT_FENCE + 8 - 19, db->log_fd);
		if (!err)
			db->st.fence_rides++;
		/* A failed write-out is returned, not synced over: the kernel
		 * has reported the page's write error to it, and a sync after
		 * would find the page clean and say nothing.  Only "cannot
		 * promise" (a file system, a sandbox refusing the call) syncs. */
		if (err != EOPNOTSUPP && err != ENOSYS && err != EPERM && err != EINVAL &&
		    err != EACCES)
			return err;
	}
	return o->fdatasync(db->io.ctx, fd);
}

int alex_protect_clear(struct alex_db *db, const uint8_t *blk0, uint64_t size)
{
	const struct alex_io_ops *o = db->io.ops;
	int fd = db->base_fd[ALEX_FILE_DB], err = 0;

	__atomic_store_n(&db->bh.valid, 0, __ATOMIC_RELAXED);
	if (fd < 0 || db->mark.kind == ALEX_MARK_NONE)
		return 0;
	/* Byte 19 last: until it is written the page still reads as marked,
	 * and every state a crash can leave of the first write -- cut at any
	 * byte -- unmasks to the true page (unmask above). */
	size_t n = size < HDR ? (size_t)size : HDR;
	if (n > 20 && blk0)
		err = o->pwrite(db->io.ctx, fd, blk0 + 20, n - 20, 20);
	if (!err && n && blk0)
		err = o->pwrite(db->io.ctx, fd, blk0, n < 20 ? n : 20, 0);
	if (!err)
		memset(&db->mark, 0, sizeof db->mark);
	return err;
}

/* The base's mark as it is now, read again. */
static int mark_now(struct alex_db *db, uint8_t h[HDR], size_t *got, uint64_t *size,
		    struct alex_mark *m)
{
	const struct alex_io_ops *o = db->io.ops;
	int fd = db->base_fd[ALEX_FILE_DB], err;

	*got = 0;
	memset(h, 0, HDR);
	if ((err = o->size(db->io.ctx, fd, size)) ||
	    (*size && (err = o->pread(db->io.ctx, fd, h, HDR, 0, got))))
		return err;
	read_mark(h, *got, *size, m);
	return 0;
}

int alex_protect_base_header(struct alex_db *db, uint8_t out[ALEX_BASE_HDR])
{
	struct alex_mark m;
	uint64_t size;
	size_t got;
	int err;

	/* a staging engine's base is another engine: its point stands for it */
	if (db->io.ops->ident)
		return db->io.ops->ident(db->io.ctx, out);
	memset(out, 0, ALEX_BASE_HDR);
	if (db->base_fd[ALEX_FILE_DB] < 0)
		return 0;
	if ((err = mark_now(db, out, &got, &size, &m)))
		return err;
	if (m.kind == ALEX_MARK_PLACEHOLDER || m.kind == ALEX_MARK_TORN)
		memset(out, 0, ALEX_BASE_HDR);
	alex_protect_unmask(out, got);
	return 0;
}

/*
 * An epoch that is not fenced (a format-1 log, or a base that is not an
 * SQLite database): a log copied beside another database, or a database
 * file replaced while its log held pages, would otherwise be replayed over
 * a file it does not belong to.  The base may be as the epoch began (the
 * header's copy) or, after a checkpoint cut short, partly as the log
 * describes it: its newest block 0, or -- if the epoch truncated block 0
 * away -- the base's own bytes below the logical size and zeros from there.
 * Byte by byte, so a write of block 0 torn inside the header is accepted.
 */
int alex_protect_check_base(struct alex_db *db)
{
	uint8_t now[ALEX_BASE_HDR], *blk;
	const struct alex_loc *l;
	int err;

	if (!(db->hdr.flags & ALEX_HDR_BASE) || (db->hdr.flags & ALEX_HDR_FENCED) ||
	    !db->epoch_commits)
		return 0;
	/* A staging log's base copy is a point of the engine below, judged by
	 * recovery (recover.c).  Asked again here, below may have moved on --
	 * an open holds no lock, and a FULL process merges at every commit --
	 * and the log's block 0 been written over by the next epoch: the
	 * open failed, and its close checkpointed below under that process's
	 * commits (stage_chaos: thousands of acknowledged rows lost). */
	if (db->io.ops->ident)
		return 0;
	if ((err = alex_protect_base_header(db, now)))
		return err;
	if (memcmp(now, db->hdr.base, ALEX_BASE_HDR) == 0)
		return 0;
	if (!(blk = malloc(ALEX_BLOCK)))
		return ALEX_ENOMEM;
	if ((l = alex_map_get(&db->map, alex_key(ALEX_FILE_DB, 0)))) {
		if ((err = alex_log_read_block(db, alex_key(ALEX_FILE_DB, 0), l, blk))) {
			free(blk);
			return err;
		}
		alex_protect_unmask(blk, ALEX_BLOCK);
	} else {
		uint64_t end = db->climit[ALEX_FILE_DB] < db->csize[ALEX_FILE_DB]
				       ? db->climit[ALEX_FILE_DB] : db->csize[ALEX_FILE_DB];
		for (unsigned i = 0; i < ALEX_BASE_HDR; i++)
			blk[i] = i < end ? now[i] : 0;
	}
	/* and the placeholder an empty base got, which a write of block 0
	 * over it may have left parts of */
	uint8_t ph[ALEX_BASE_HDR];
	memset(ph, 0, sizeof ph);
	memcpy(ph, ALEX_PLACEHOLDER, 16);
	memcpy(ph + AT_MAGIC, fence_magic, 4);
	alex_put64(ph + AT_FENCE, alex_protect_fence(&db->hdr));
	uint8_t raw[ALEX_BASE_HDR];
	size_t got = 0;
	memset(raw, 0, sizeof raw);
	if ((err = db->io.ops->pread(db->io.ctx, db->base_fd[ALEX_FILE_DB], raw, sizeof raw, 0,
				     &got))) {
		free(blk);
		return err;
	}
	for (unsigned i = 0; i < ALEX_BASE_HDR && !err; i++)
		if (now[i] != db->hdr.base[i] && now[i] != blk[i] && raw[i] != ph[i])
			err = ALEX_EFOREIGN;
	free(blk);
	return err;
}


/*
 * A close that removes its log unmarks first, and a log's name exists
 * before its first mark.  So the mark is read, the log looked for, and
 * the mark read again: if the log was missing between two reads of the
 * same fence, no close removed it (that close's unmark would come between)
 * and no new log made it (a new log's fence is another).  Any other turn:
 * look again.  db->mark, the last probe's, only says whether to ask.
 */
int alex_protect_orphaned(struct alex_db *db)
{
	struct alex_mark m1, m2;
	uint8_t h[HDR];
	uint64_t size;
	size_t got;
	int err, exists = 1;

	if (!db->cfg.protect_base || db->cfg.orphan_ok || db->log_fd >= 0 ||
	    db->base_fd[ALEX_FILE_DB] < 0 || !db->mark.has_fence)
		return 0;
	if ((err = mark_now(db, h, &got, &size, &m1)) ||
	    (err = db->io.ops->exists(db->io.ctx, db->log_path, &exists)) ||
	    (err = mark_now(db, h, &got, &size, &m2)))
		return err;
	if (exists || !m1.has_fence || m1.fence != db->mark.fence || m2.kind != m1.kind ||
	    !m2.has_fence || m2.fence != m1.fence)
		return ALEX_ERACED;
	return ALEX_EORPHAN;
}

int alex_protect_carries(struct alex_db *db)
{
	struct alex_mark m;
	uint8_t h[HDR];
	uint64_t size;
	size_t got;
	int err;

	if ((err = mark_now(db, h, &got, &size, &m)))
		return err;
	return m.has_fence && m.fence == alex_protect_fence(&db->hdr);
}

int alex_protect_others(struct alex_db *db)
{
	if (!db->mark.has_fence || db->log_fd < 0 || db->log_stub ||
	    (uint32_t)db->mark.fence == (uint32_t)alex_protect_fence(&db->hdr))
		return 0;
	/* a fenced epoch's own fence cut short, or a vanished predecessor's,
	 * is told apart there; an epoch that is not fenced never marked */
	return !(db->hdr.flags & ALEX_HDR_FENCED) || alex_protect_foreign(db, NULL);
}

/*
 * A checkpoint's unmark is not synced (top of this file), nor perhaps
 * another engine's; a crash or a failed unmark may have left a mark of an
 * epoch that is over.  Were the log's name to go first, a power cut could
 * leave the fence with no log beside it.  The log holds nothing, and no
 * other engine has it open: any mark of it is stale, and comes off.  A
 * fence naming another log (one put in this log's place) is left on: its
 * pages are that log's, wherever it is.
 */
int alex_protect_settle(struct alex_db *db)
{
	const struct alex_io_ops *o = db->io.ops;
	int fd = db->base_fd[ALEX_FILE_DB], err;
	struct alex_mark m;
	uint8_t h[HDR];
	uint64_t size;
	size_t got;

	if (!db->cfg.protect_base || fd < 0)
		return 0;
	if ((err = mark_now(db, h, &got, &size, &m)))
		return err;
	int foreign = m.has_fence && !db->log_stub && db->log_fd >= 0 &&
		      (uint32_t)m.fence != (uint32_t)alex_protect_fence(&db->hdr);
	__atomic_store_n(&db->bh.valid, 0, __ATOMIC_RELAXED);
	if (m.kind == ALEX_MARK_PLACEHOLDER || m.kind == ALEX_MARK_TORN) {
		if (!foreign && (err = o->ftruncate(db->io.ctx, fd, 0)))
			return err;
	} else if (m.kind == ALEX_MARK_SQLITE && !foreign) {
		alex_protect_unmask(h, got);
		db->mark = m;
		if ((err = alex_protect_clear(db, h, size < got ? size : got)))
			return err;
	}
	if (!foreign)
		memset(&db->mark, 0, sizeof db->mark);
	/* a carried copy's sync may be in flight: its error is this one's */
	err = alex_sync_settle(db, fd);
	return err ? err : o->fdatasync(db->io.ctx, fd);
}
