/*
 * recover.c - rebuild the block map from the log when an engine opens.
 *
 * Records are checked in order against everything format.h demands; the
 * scan stops at the first one that fails.  A spill record's blocks and
 * truncations are held back until the COMMIT record of its transaction is
 * accepted, then applied in the order they were written.  The next append
 * goes right after the last COMMIT record, overwriting any uncommitted tail:
 * its chain (lsn, prev_crc, a fresh nonce) can never be continued by the
 * bytes left behind.
 *
 * A fenced epoch is read only while the database file carries its fence
 * (protect.c); without it, everything the epoch committed is in the file
 * already, and the next record begins a new epoch.
 */
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "engine.h"
#include "log.h"
#include "protect.h"
#include "recover.h"
#include "shm.h"

struct op {
	uint64_t key;         /* 0: a truncation of file to size */
	unsigned file;
	uint64_t size;
	struct alex_loc loc;
};

struct ops {
	struct op *v;
	size_t n, cap;
};

static int push(struct ops *o, const struct op *x)
{
	if (o->n == o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 256;
		struct op *v = realloc(o->v, cap * sizeof *v);
		if (!v)
			return ALEX_ENOMEM;
		o->v = v;
		o->cap = cap;
	}
	o->v[o->n++] = *x;
	return 0;
}

static int apply(alex_db *db, const struct ops *o)
{
	for (size_t i = 0; i < o->n; i++) {
		const struct op *x = &o->v[i];
		if (x->key) {
			if (alex_map_put(&db->map, x->key, &x->loc))
				return ALEX_ENOMEM;
			continue;
		}
		alex_map_trunc(&db->map, x->file, (x->size + ALEX_BLOCK - 1) >> ALEX_BLOCK_SHIFT);
		if (x->size < db->climit[x->file])
			db->climit[x->file] = x->size;
		if (x->size < db->own_min[x->file])
			db->own_min[x->file] = x->size;
		db->own_cut = 1;
	}
	return 0;
}

/* Queues the truncations and blocks of the record at off (whole in rec). */
static int queue(struct ops *o, const uint8_t *rec, const struct alex_rec *r, uint64_t off)
{
	uint64_t pos = off + r->hdr_len;
	int err;

	for (unsigned f = 0; f < ALEX_NFILES; f++) {
		struct op t = { 0, f, r->trunc[f], { 0, 0, 0, 0, 0 } };
		if (r->trunc[f] != ALEX_NO_TRUNC && (err = push(o, &t)))
			return err;
	}
	for (uint32_t i = 0; i < r->nblocks; i++) {
		struct alex_entry e;
		alex_entry_decode(rec + ALEX_REC_FIXED + (size_t)i * ALEX_REC_ENTRY, &e);
		struct op b = { alex_key(e.file, e.block), e.file, 0,
				{ pos, e.stored_len, e.crc, alex_loc_flags(e.flags, r->txn),
				  (uint32_t)r->epoch } };
		if ((err = push(o, &b)))
			return err;
		pos += e.stored_len;
	}
	return 0;
}

/*
 * A damaged header slot may have been the newer epoch's.  Any record of
 * epoch + 1 was written after that header was synced, or, for a fenced
 * epoch, under the same sync, so if the place where the next epoch begins
 * (off) holds a well-formed first record of it, the epoch, its first lsn and
 * its salt (the record's prev_crc) are known again.
 */
static int adopt_next_epoch(alex_db *db, uint64_t off, int *adopted)
{
	size_t got;
	int err;

	*adopted = 0;
	if (off + ALEX_SECTOR > db->alloc_end)
		return 0;
	size_t first = alex_rec_first(db->alloc_end - off);
	if ((err = alex_rec_read(db, first, off, &got)))
		return err;
	if (got < first ||
	    !alex_protect_adopt(&db->hdr, &db->mark, db->rec, db->alloc_end - off, off))
		return 0;
	db->st.header_repaired = 1;
	*adopted = 1;
	return alex_protect_base_header(db, db->hdr.base);
}

/*
 * After the scan stopped at a damaged record: is there a commit record of
 * this epoch further on?  Then the damage is not a torn tail but lost
 * commits, and the caller should say so loudly.  Spills do not count: those
 * of a transaction a crash abandoned stay behind the records written over
 * its start, and prove nothing lost.  Reads header blocks only.
 */
static int look_past(alex_db *db, uint64_t from, uint64_t lsn)
{
	struct alex_rec r;
	uint8_t *b = db->scratch;
	size_t got;
	int err;

	for (uint64_t off = from; off + ALEX_SECTOR <= db->alloc_end; off += ALEX_SECTOR) {
		if ((err = db->io.ops->pread(db->io.ctx, db->log_fd, b, ALEX_REC_FIXED, off, &got)))
			return err;
		if (got < ALEX_REC_FIXED || !alex_rec_peek(b, &r) || !(r.flags & ALEX_REC_COMMIT))
			continue;
		if (r.epoch == db->hdr.epoch && r.lsn > lsn) {
			db->st.lost_offset = off;
			return 0;
		}
	}
	return 0;
}

/*
 * A commit of one database of a transaction across several (format.h:
 * COND) waits here until it is decided: a later commit in the log, or its
 * super-journal gone, says it committed (SQLite's own rule for a hot
 * journal that names a super-journal).
 */
struct held {
	struct ops ops;
	int on;
	uint64_t start, end, lsn, txn;  /* its records, and the state after it */
	uint64_t commit_off;            /* its commit record */
	uint32_t prev;
	uint64_t size[ALEX_NFILES];
	char path[ALEX_COND_MAX + 1];   /* the super-journal */
};

/* The group in ops, ended by the commit record r, becomes committed. */
static int commit_group(alex_db *db, struct ops *ops, const uint64_t size[ALEX_NFILES],
			uint64_t end, uint64_t lsn, uint32_t prev, uint64_t txn, uint64_t *commits)
{
	int err = apply(db, ops);

	if (err)
		return err;
	ops->n = 0;
	for (int f = 0; f < ALEX_NFILES; f++)
		db->csize[f] = size[f];
	(*commits)++;
	db->epoch_commits++;
	db->own_commits++;
	db->log_foreign = 1; /* read, not written, here: perhaps not synced */
	db->append_off = end;
	db->next_lsn = lsn;
	db->prev_crc = prev;
	db->txn = txn + 1;
	return 0;
}

/*
 * The scan ended with a conditional group held.  Its super-journal gone:
 * committed.  Still there: undecided -- unless the caller holds SQLite's
 * SHARED lock, which no writer lets go before its super-journal is
 * removed: then the transaction is over and did not commit, and its commit
 * record's header is zeroed and synced, so that no later look (when a
 * recovery of another database has removed the super-journal) can take it
 * for committed.  Its spills, if any, are left as an abandoned tail.
 */
static int decide(alex_db *db, struct held *h, int may_abort, uint64_t *commits)
{
	const struct alex_io_ops *io = db->io.ops;
	static const uint8_t zero[ALEX_SECTOR];
	int exists, err;

	if ((err = io->exists(db->io.ctx, h->path, &exists)))
		return err;
	if (!exists) {
		db->st.cond_applied++;
		return commit_group(db, &h->ops, h->size, h->end, h->lsn, h->prev, h->txn, commits);
	}
	if (!may_abort) {
		free(db->doubt);
		if (!(db->doubt = strdup(h->path)))
			return ALEX_ENOMEM;
		db->doubt_off = h->start;
		return 0;
	}
	if ((err = alex_log_pwrite(db, db->log_fd, zero, sizeof zero, h->commit_off)) ||
	    (err = alex_log_sync(db)))
		return err;
	db->st.cond_discarded++;
	return 0;
}

/* Reads the record at off into db->rec if it is the one expected (lsn,
 * prev) and whole and valid; else *why says why not.  0 or an I/O error. */
static int read_record(alex_db *db, uint64_t off, uint64_t lsn, uint32_t prev,
		       struct alex_rec *r, enum alex_stop *why)
{
	uint64_t room = db->alloc_end > off ? db->alloc_end - off : 0;
	size_t got;
	int err;

	if (room < ALEX_SECTOR) {
		*why = room ? ALEX_STOP_TRUNCATED : ALEX_STOP_END;
		return 0;
	}
	size_t first = alex_rec_first(room);
	if ((err = alex_rec_read(db, first, off, &got)))
		return err;
	if (got < first) { /* the file shrank under us */
		*why = ALEX_STOP_TRUNCATED;
		return 0;
	}
	uint64_t epoch = db->walk_epoch ? db->walk_epoch : db->hdr.epoch;
	if ((*why = alex_rec_decode(db->rec, room, epoch, lsn, prev, r)) != ALEX_STOP_NONE)
		return 0;
	if (r->rec_len > first) {
		/* read it whole: growing the buffer drops its contents */
		if ((err = alex_rec_room(db, r->rec_len)) ||
		    (err = alex_rec_read(db, r->rec_len, off, &got)))
			return err;
		if (got < r->rec_len) {
			*why = ALEX_STOP_TRUNCATED;
			return 0;
		}
	}
	*why = alex_rec_check_in(db->rec, r, db->hdr.version);
	return 0;
}

/* The conditional commit record r (at end - rec_len) ends the group that
 * began at start and whose blocks are in *ops: hold it, undecided. */
static void hold(struct held *h, struct ops *ops, const uint8_t *rec, const struct alex_rec *r,
		 uint64_t start, uint64_t end, uint64_t lsn, uint32_t prev)
{
	struct ops t = h->ops;

	h->ops = *ops;
	*ops = t;
	ops->n = 0;
	h->on = 1;
	h->start = start;
	h->end = end;
	h->commit_off = end - r->rec_len;
	h->lsn = lsn;
	h->prev = prev;
	h->txn = r->txn;
	memcpy(h->size, r->size, sizeof h->size);
	memcpy(h->path, rec + r->hdr_len - r->cond_len, r->cond_len);
	h->path[r->cond_len] = 0;
}

/*
 * Reads records from db->append_off on, expecting db->next_lsn and
 * db->prev_crc, and applies every committed one; the position moves past
 * the last COMMIT record.  Says where and why it stopped.
 */
static int scan(alex_db *db, int may_abort, uint64_t *commits, uint64_t *stop,
		enum alex_stop *why_out, uint64_t *uncommitted_out)
{
	struct ops ops = { 0 };
	/* not calloc: zeroing the path's 4 KiB cost more than a catch-up's
	 * whole scan; hold() fills what decide() reads */
	struct held *h = malloc(sizeof *h);
	uint64_t off = db->append_off, lsn = db->next_lsn, uncommitted = 0, group = off;
	uint32_t prev = db->prev_crc;
	enum alex_stop why = ALEX_STOP_END;
	struct alex_rec r;
	int err = 0;

	if (!h)
		return ALEX_ENOMEM;
	h->ops = (struct ops){ 0 };
	h->on = 0;
	free(db->doubt);
	db->doubt = NULL;
	for (;;) {
		if ((err = read_record(db, off, lsn, prev, &r, &why)))
			goto out;
		if (why != ALEX_STOP_NONE)
			break;
		if ((err = queue(&ops, db->rec, &r, off)))
			goto out;
		db->st.recovered_records++;
		uncommitted++;
		lsn++;
		prev = r.hdr_crc;
		off += r.rec_len;
		if (!(r.flags & ALEX_REC_COMMIT))
			continue;
		/* a later commit decides a held group: it committed */
		if (h->on && (err = commit_group(db, &h->ops, h->size, h->end, h->lsn, h->prev,
						 h->txn, commits)))
			goto out;
		h->on = 0;
		uncommitted = 0;
		if (r.flags & ALEX_REC_COND)
			hold(h, &ops, db->rec, &r, group, off, lsn, prev);
		else if ((err = commit_group(db, &ops, r.size, off, lsn, prev, r.txn, commits))) {
			goto out;
		}
		group = off;
	}
	*stop = off;
	*why_out = why;
	*uncommitted_out = uncommitted;
	if (h->on)
		err = decide(db, h, may_abort, commits);
out:
	free(ops.v);
	free(h->ops.v);
	free(h);
	return err;
}

/* The current epoch's records walked: where its last commit ends (where
 * an epoch that follows it begins, format.h), and the lsn after its last
 * record, committed or not. */
static int chain_walk(alex_db *db, uint64_t *end, uint64_t *lsn_end)
{
	uint64_t off = alex_data_off(db), lsn = db->hdr.start_lsn, last = off;
	uint32_t prev = db->hdr.salt;
	enum alex_stop why;
	struct alex_rec r;
	int err;

	for (;;) {
		if ((err = read_record(db, off, lsn, prev, &r, &why)) || why != ALEX_STOP_NONE)
			break;
		lsn++;
		prev = r.hdr_crc;
		off += r.rec_len;
		if (r.flags & ALEX_REC_COMMIT)
			last = off;
	}
	if (end)
		*end = last;
	if (lsn_end)
		*lsn_end = lsn;
	return err;
}

/* Is the slot's lost epoch, if any, at the start of the records, or right
 * after the current epoch's? */
static int adopt(alex_db *db)
{
	uint64_t end;
	int adopted, err;

	/* a staging log's header names the point below it began on, which
	 * a header rebuilt from its first record cannot know: its other slot
	 * (an older epoch, which the point then refuses) is what stands */
	if (db->io.ops->ident)
		return 0;
	if ((err = adopt_next_epoch(db, ALEX_LOG_DATA, &adopted)) || adopted ||
	    db->hdr.version < ALEX_FORMAT_VERSION || (err = chain_walk(db, &end, NULL)) ||
	    end == ALEX_LOG_DATA)
		return err;
	return adopt_next_epoch(db, alex_epoch_follows_at(end), &adopted);
}

/* A fenced epoch without its fence on the base, and no record of it at its
 * start: begun (by a checkpoint, its slot fenced from the start: format.h)
 * and not yet written.  It takes records once its fence is put on. */
static int unused_epoch(alex_db *db, int *unused)
{
	enum alex_stop why;
	struct alex_rec r;
	int err;

	*unused = 0;
	if (db->hdr.version < ALEX_FORMAT_VERSION)
		return 0;
	if ((err = read_record(db, alex_data_off(db), db->hdr.start_lsn, db->hdr.salt, &r, &why)))
		return err;
	*unused = why != ALEX_STOP_NONE;
	return 0;
}

/* The epoch's records are all in what lies below the log already: none is
 * replayed, and the next epoch begins at the start. */
static int epoch_applied(alex_db *db)
{
	db->append_off = ALEX_LOG_DATA;
	db->st.stop_offset = ALEX_LOG_DATA;
	db->st.stop_reason = ALEX_STOP_END;
	db->st.epoch_applied = 1;
	return 0;
}

/*
 * A carried epoch (format 10): the header names the epoch before it, whose
 * records were acknowledged and may not all be in the database file yet.
 * They are replayed first, every one of them: they lie where this epoch's
 * records never go while it names them (carry.c), so anything short of
 * all of them is damage, not a torn tail.
 */
static int replay_carried(alex_db *db)
{
	const struct alex_loghdr *h = &db->hdr;
	uint64_t commits = 0, stop, uncommitted;
	enum alex_stop why;
	int err;

	db->append_off = h->prev_off;
	db->next_lsn = h->prev_lsn;
	db->prev_crc = h->prev_salt;
	db->walk_epoch = h->prev_epoch;
	err = scan(db, 0, &commits, &stop, &why, &uncommitted);
	db->walk_epoch = 0;
	if (err)
		return err;
	db->st.recovered_commits += commits;
	if (db->append_off != h->prev_end || db->next_lsn != h->start_lsn || uncommitted ||
	    db->doubt) {
		db->st.stop_offset = stop;
		db->st.stop_reason = why;
		return ALEX_ECORRUPT;
	}
	db->append_off = alex_data_off(db);
	db->prev_crc = h->salt;
	alex_own_reset(db);
	return 0;
}

int alex_recover(alex_db *db)
{
	uint64_t uncommitted = 0;
	int unused, err;

	db->append_off = ALEX_LOG_DATA;
	db->txn = 1;
	db->epoch_commits = 0;
	alex_own_reset(db);
	db->epoch_live = 0;
	db->epoch_started = 0;
	alex_map_clear(&db->map);
	if ((err = alex_rec_room(db, 4 * ALEX_BLOCK)))
		return err;
	if (db->log_fd < 0 || db->log_stub)
		return 0; /* no log, or one that holds nothing */
	db->hdr_disk = db->hdr;
	/* An engine that let a carried epoch go and then failed its commit
	 * left that header unsynced; written over, the carried stretch would
	 * leave the other slot naming records no longer there (review) */
	if (db->slot_gone_end) {
		db->ca.gone_off = db->slot_gone_off;
		db->ca.gone_end = db->slot_gone_end;
	}
	if (db->slot_damaged && db->alloc_end >= ALEX_LOG_DATA + ALEX_BLOCK && (err = adopt(db)))
		return err;
	db->next_lsn = db->hdr.start_lsn;
	db->prev_crc = db->hdr.salt;
	db->append_off = alex_data_off(db);
	/* A base fenced by another log: the log beside it is not the one that
	 * holds its newest pages (copied from elsewhere, or put in place of
	 * its own).  Nothing can be replayed, and nothing may be overwritten. */
	if (alex_protect_foreign(db, NULL))
		return ALEX_EFOREIGN;
	/* A staging log whose epoch began on another point of the engine
	 * below than where it stands: merged into it (a death between the
	 * merge's commit and the next epoch's header), or older still (what a
	 * power cut left of an earlier epoch).  Nothing of it is newer than
	 * below. */
	if (db->io.ops->ident) {
		uint8_t now[ALEX_BASE_HDR];
		if ((err = db->io.ops->ident(db->io.ctx, now)))
			return err;
		/* ident read below as it stands now, which an open holding no
		 * lock may find moved on since this engine read its sizes (a
		 * merge in between): read them again, of the same state, or the
		 * view ends at the old size -- pages of zeros, and a merge from
		 * it cuts below back (review: fresh readers beside a staging
		 * writer saw a malformed database, and their close corrupted it) */
		if ((err = alex_bases_open(db)))
			return err;
		if (memcmp(now, db->hdr.base, ALEX_BASE_HDR) != 0)
			return epoch_applied(db);
	}
	if ((db->hdr.flags & ALEX_HDR_FENCED) && !alex_protect_is_live(db)) {
		if ((err = unused_epoch(db, &unused)))
			return err;
		if (unused) {
			db->epoch_live = 1;
			db->st.stop_offset = db->append_off;
			db->st.stop_reason = ALEX_STOP_END;
			db->st.log_used = 0;
			return 0;
		}
		/* checkpointed (or superseded) before a crash that kept its
		 * records: nothing of it is newer than the database file; or
		 * its mark never reached the disk, and neither did the sync
		 * that would have acknowledged any of them.  Its lsns stay
		 * taken: an lsn names one point of this log for ever (a
		 * staging log above names its base by it; review: a power cut
		 * that kept the unmark but not the next header took the log
		 * back to an lsn a staging epoch had begun on) */
		if ((err = chain_walk(db, NULL, &db->next_lsn)))
			return err;
		return epoch_applied(db);
	}
	db->epoch_live = 1;
	/* its records may follow once the base carries its fence */
	db->epoch_started = db->mark.has_fence && db->mark.fence == alex_protect_fence(&db->hdr);
	if (db->hdr.prev_epoch && (err = replay_carried(db)))
		return err;
	if ((err = scan(db, 0, &db->st.recovered_commits, &db->st.stop_offset,
			&db->st.stop_reason, &uncommitted)))
		return err;
	/* Zeros or a bad record with this epoch's records after it: those are
	 * lost commits, not a torn tail.  (Only at open: a refresh runs at
	 * every transaction.)  A stale record ends an abandoned chain, which
	 * legitimately leaves higher lsns of the old chain behind it. */
	if (db->st.stop_reason != ALEX_STOP_STALE &&
	    (err = look_past(db, db->st.stop_offset + ALEX_SECTOR, db->next_lsn)))
		return err;
	db->st.dropped_records = uncommitted + (db->st.stop_reason > ALEX_STOP_STALE);
	db->st.log_used = db->append_off - alex_data_off(db);
	/* The rebuilt slot is written at once only under a lock (a catch-up,
	 * the tool): at an open, the damaged slot may be another process's
	 * header write in flight, which this would overwrite.  Otherwise the
	 * first catch-up under the lock recovers again and writes it. */
	if (db->st.header_repaired && db->rec_locked)
		err = alex_log_rewrite_header(db);
	return err;
}

int alex_refresh_scan(alex_db *db, int may_abort)
{
	uint64_t stop, uncommitted;
	enum alex_stop why;

	return scan(db, may_abort, &db->st.remote_commits, &stop, &why, &uncommitted);
}
