/*
 * log.c - the log file: creation, header slots, appending records with
 * preallocation, syncing, starting a new epoch.
 *
 * Why the order of operations is crash-safe:
 *  - A new log is built under "<log>.new" and renamed into place after its
 *    header is synced, so "<db>-alex" either does not exist or has a valid
 *    header.  The directory is synced once, then.
 *  - A record is one pwrite into space written (with zeros) earlier, so the
 *    commit's fdatasync never has to change the file size or convert extents.  The in-memory map moves to
 *    the record only after the write (and, in FULL, the sync) succeeded; on
 *    failure the transaction stays in the collector and the next try rewrites
 *    the record at the same offset, with the same lsn.
 *  - A new epoch's header goes to the other slot and is synced before any
 *    record of the epoch is written, so a crash leaves either the old epoch
 *    (whose records are all still there) or the new one (whose blocks are all
 *    in the synced base files).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "crc32c.h"
#include "internal.h"

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

static int write_slot(struct alex_db *db, int fd, const struct alex_loghdr *h)
{
	uint8_t *blk = db->scratch;

	memset(blk, 0, ALEX_BLOCK);
	alex_loghdr_encode(blk, h);
	return db->io.ops->pwrite(db->io.ctx, fd, blk, ALEX_BLOCK, (h->epoch % 2) * ALEX_BLOCK);
}

/* Takes the log's lock: alone for tools, shared for engines (waiting out
 * a tool for up to two seconds). */
static int lock_log(struct alex_db *db, int fd)
{
	int mode = db->cfg.exclusive ? 2 : 1;

	for (int tries = 0;; tries++) {
		int err = db->io.ops->lock(db->io.ctx, fd, mode);
		if (err != EAGAIN)
			return err;
		if (mode == 2 || tries == 200)
			return ALEX_EINUSE;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

/*
 * Grows the log by writing zeros, not with fallocate: an fallocated block
 * is "unwritten", and the first fdatasync after writing into it must also
 * commit the extent's conversion to the filesystem journal -- a second
 * device flush per commit.  Space that was written once is overwritten in
 * place forever after (epochs reuse it), so a commit's fdatasync flushes
 * data only (WALDIO's incremental preallocation, measured ~40 % more
 * commits/s on ext4 here).  Steps double from 64 KiB up to prealloc_bytes,
 * so a small database keeps a small log.  The next commit's fdatasync
 * settles the zeros and the size once; every later one is data only.
 */
static const uint8_t zeros[64 << 10];

static int grow(struct alex_db *db, int fd, uint64_t from, uint64_t to)
{
	int err;

	for (uint64_t off = from; off < to; off += sizeof zeros) {
		uint64_t n = to - off < sizeof zeros ? to - off : sizeof zeros;
		if ((err = db->io.ops->pwrite(db->io.ctx, fd, zeros, n, off)))
			return err;
	}
	return 0;
}

/*
 * Makes the log under a name of its own and renames it into place without
 * replacing: two processes creating one database at once both get the
 * same log (the loser's EEXIST sends it to open the winner's).  replace:
 * an empty file named like the log is in the way and holds nothing.
 */
static int create_log(struct alex_db *db, int replace)
{
	const struct alex_io_ops *o = db->io.ops;
	size_t n = strlen(db->log_path) + 32;
	char *tmp = malloc(n);
	int fd = -1, err;

	if (!tmp)
		return ALEX_ENOMEM;
	snprintf(tmp, n, "%s.new-%d-%08x", db->log_path, (int)getpid(), alex_random32());
	memset(&db->hdr, 0, sizeof db->hdr);
	random_bytes(db->hdr.uuid, sizeof db->hdr.uuid);
	db->hdr.epoch = 1;
	db->hdr.start_lsn = 1;
	db->hdr.salt = alex_random32();
	db->hdr.flags = ALEX_HDR_BASE;
	if ((err = alex_protect_base_header(db, db->hdr.base)) ||
	    (err = o->open(db->io.ctx, tmp, ALEX_O_CREAT | ALEX_O_TRUNC, &fd)))
		goto out;
	uint64_t len = ALEX_LOG_DATA + (64u << 10);
	if ((err = grow(db, fd, 0, len)) || (err = write_slot(db, fd, &db->hdr)) ||
	    (err = o->fdatasync(db->io.ctx, fd)))
		goto out;
	if ((err = o->rename(db->io.ctx, tmp, db->log_path, !replace))) {
		o->unlink(db->io.ctx, tmp);
		goto out;
	}
	if ((err = o->sync_dir(db->io.ctx, db->log_path)))
		goto out;
	db->log_fd = fd;
	db->alloc_end = len;
	fd = -1;
	err = lock_log(db, db->log_fd);
out:
	if (fd >= 0)
		o->close(db->io.ctx, fd);
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
	if (rc[0] && rc[1])
		return rc[0] == ALEX_EVERSION || rc[1] == ALEX_EVERSION ? ALEX_EVERSION
									: ALEX_ECORRUPT;
	if (!rc[0] && !rc[1] && memcmp(h[0].uuid, h[1].uuid, 16) != 0)
		return ALEX_ECORRUPT; /* two logs spliced together */
	int cur = rc[0] ? 1 : rc[1] ? 0 : (h[1].epoch > h[0].epoch);
	*out = h[cur];
	/* the other slot is damaged, not merely unused: it may have held the
	 * newer epoch (recover.c looks for that epoch's records) */
	if (rc[!cur]) {
		const uint8_t *other = buf + (!cur) * ALEX_BLOCK;
		size_t have = got > (size_t)(!cur) * ALEX_BLOCK ? got - (size_t)(!cur) * ALEX_BLOCK : 0;
		for (size_t i = 0; i < have && i < ALEX_HDR_SLOT_USED; i++)
			db->slot_damaged |= other[i] != 0;
	}
	return 0;
}

int alex_log_open(struct alex_db *db)
{
	const struct alex_io_ops *o = db->io.ops;
	int exists, err, fd;
	uint64_t size;

	if ((err = o->exists(db->io.ctx, db->log_path, &exists)))
		return err;
	if (!exists && (err = create_log(db, 0)) != EEXIST)
		return err; /* made it, or failed; EEXIST: another process made it first */
	if ((err = o->open(db->io.ctx, db->log_path, 0, &fd)))
		return err;
	db->log_fd = fd;
	if ((err = lock_log(db, fd)) || (err = o->size(db->io.ctx, fd, &size)))
		return err;
	if (size == 0) {
		/* an empty file (touch, or a copy) holds nothing to lose */
		o->close(db->io.ctx, fd);
		db->log_fd = -1;
		return create_log(db, 1);
	}
	if ((err = alex_log_read_header(db, &db->hdr)))
		return err;
	db->alloc_end = size;
	return 0;
}

/* Makes sure [append_off, end) lies inside written space. */
static int prealloc(struct alex_db *db, uint64_t end)
{
	if (end <= db->alloc_end)
		return 0;
	uint64_t have = db->alloc_end - ALEX_LOG_DATA, step = have < (64u << 10) ? (64u << 10) : have;
	if (step > db->cfg.prealloc_bytes)
		step = db->cfg.prealloc_bytes;
	uint64_t want = db->alloc_end + (end - db->alloc_end + step - 1) / step * step;
	int err = grow(db, db->log_fd, db->alloc_end, want);
	if ((err == ENOSPC || err == EDQUOT) && want > alex_roundup_block(end)) {
		/* a full disk may still have room for what is needed now */
		want = alex_roundup_block(end);
		err = grow(db, db->log_fd, db->alloc_end, want);
	}
	if (err)
		return err; /* alloc_end stays: the next try writes it all again */
	db->alloc_end = want;
	return 0;
}

int alex_log_reserve(struct alex_db *db, uint32_t blocks)
{
	uint64_t rec = alex_roundup_block(ALEX_REC_FIXED +
					  (uint64_t)blocks * (ALEX_REC_ENTRY + ALEX_BLOCK));
	return prealloc(db, db->append_off + rec);
}

/*
 * Appends the collector as one record.  The caller has the record staged in
 * db->rec by alex_engine_stage (engine.c); here it goes to disk.
 */
int alex_log_append(struct alex_db *db, uint32_t rec_len, uint64_t *rec_off)
{
	int err;

	if ((err = prealloc(db, db->append_off + rec_len)))
		return err;
	if ((err = db->io.ops->pwrite(db->io.ctx, db->log_fd, db->rec, rec_len, db->append_off)))
		return err;
	*rec_off = db->append_off;
	return 0;
}

int alex_log_sync(struct alex_db *db)
{
	int err = db->io.ops->fdatasync(db->io.ctx, db->log_fd);

	db->st.syncs++;
	return err;
}

int alex_log_rewrite_header(struct alex_db *db)
{
	int err = write_slot(db, db->log_fd, &db->hdr);

	return err ? err : alex_log_sync(db);
}

int alex_log_new_epoch(struct alex_db *db)
{
	struct alex_loghdr h = db->hdr;
	int err;

	h.epoch++;
	h.start_lsn = db->next_lsn;
	h.salt = alex_random32();
	h.flags |= ALEX_HDR_BASE;
	if ((err = alex_protect_base_header(db, h.base)) ||
	    (err = write_slot(db, db->log_fd, &h)) || (err = alex_log_sync(db)))
		return err;
	db->hdr = h;
	db->append_off = ALEX_LOG_DATA;
	db->prev_crc = h.salt;
	return 0;
}

int alex_log_base_fresh(struct alex_db *db)
{
	uint8_t now[ALEX_BASE_HDR];
	int err;

	if (db->append_off != ALEX_LOG_DATA)
		return 0;
	if ((err = alex_protect_base_header(db, now)))
		return err;
	if ((db->hdr.flags & ALEX_HDR_BASE) && memcmp(now, db->hdr.base, ALEX_BASE_HDR) == 0)
		return 0;
	return alex_log_new_epoch(db);
}

int alex_log_read_block(struct alex_db *db, const struct alex_loc *loc, uint8_t *blk)
{
	uint8_t *in = db->scratch;
	size_t got;
	int err;

	if (loc->len > ALEX_BLOCK)
		return ALEX_EBADBLOCK;
	if (!(loc->flags & ALEX_BLK_LZ4))
		in = blk; /* raw: read straight into place */
	if ((err = db->io.ops->pread(db->io.ctx, db->log_fd, in, loc->len, loc->off, &got)))
		return err;
	if (got != loc->len || alex_crc32c(0, in, loc->len) != loc->crc)
		return ALEX_EBADBLOCK;
	if (in == blk)
		return 0;
	return alex_codec_unpack(in, loc->len, loc->flags, blk);
}
