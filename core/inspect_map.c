/*
 * inspect_map.c - a read-only look at a log (inspect_map.h).
 *
 * It follows recovery step by step -- the header slots as
 * alex_log_read_header picks them, the adoption of a lost newer slot, the
 * fence, the chain, the groups of spills and conditional commits, the look
 * past damage -- but on descriptors of its own, opened O_RDONLY, and not
 * through the io vtable: nothing here can write, lock or sync, and a log
 * in use is read as it stands.  The header slots, the adoption and the
 * fence are inspect_slots.c's; the chain, the map and the tail are here.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "codec.h"
#include "crc32c.h"
#include "delta.h"
#include "inspect_map_impl.h"

/* p (an array of *cap elements of size) with room for need: the new
 * array, or NULL with p untouched. */
static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 16;

	if (need <= *cap && p)
		return p;
	while (n < need)
		n *= 2;
	if (!(p = realloc(p, n * size)))
		return NULL;
	*cap = n;
	return p;
}

/* The record at off, whole in r->buf, if it is the one expected and
 * valid; else *why says why not (recover.c: read_record). */
static int read_rec(struct rd *r, const struct alex_logmap *lm, uint64_t off, uint64_t lsn,
		    uint32_t prev, struct alex_rec *rec, enum alex_stop *why)
{
	uint64_t room = lm->log_size > off ? lm->log_size - off : 0;
	size_t got;
	int err;

	if (room < ALEX_SECTOR) {
		*why = room ? ALEX_STOP_TRUNCATED : ALEX_STOP_END;
		return 0;
	}
	size_t first = alex_rec_first(room);
	if ((err = read_at(r->fd, r->buf, first, off, &got)))
		return err;
	if (got < first) { /* the file shrank under us */
		*why = ALEX_STOP_TRUNCATED;
		return 0;
	}
	if ((*why = alex_rec_decode(r->buf, room, lm->hdr.epoch, lsn, prev, rec)) != ALEX_STOP_NONE)
		return 0;
	uint8_t *b = grow(r->buf, &r->cap, rec->rec_len, 1);
	if (!b)
		return ALEX_ENOMEM;
	r->buf = b;
	if ((err = read_at(r->fd, r->buf, rec->rec_len, off, &got)))
		return err;
	*why = got < rec->rec_len ? ALEX_STOP_TRUNCATED
				  : alex_rec_check_in(r->buf, rec, lm->hdr.version);
	return 0;
}

static int push_rec(struct alex_logmap *lm, const uint8_t *buf, const struct alex_rec *r,
		    uint64_t off)
{
	uint64_t pos = off + r->hdr_len;
	struct alex_lm_rec *v = grow(lm->rec, &lm->rec_cap, lm->nrec + 1, sizeof *v);
	struct alex_lm_ent *ents;

	if (v)
		lm->rec = v;
	if (!v || !(ents = grow(lm->ent, &lm->ent_cap, lm->nent + r->nblocks, sizeof *ents)))
		return ALEX_ENOMEM;
	lm->ent = ents;
	struct alex_lm_rec *x = &lm->rec[lm->nrec];
	*x = (struct alex_lm_rec){ .off = off, .lsn = r->lsn, .txn = r->txn, .rec_len = r->rec_len,
				   .hdr_len = r->hdr_len, .nblocks = r->nblocks, .flags = r->flags,
				   .first = lm->nent, .state = ALEX_RS_UNCOMMITTED };
	memcpy(x->size, r->size, sizeof x->size);
	memcpy(x->trunc, r->trunc, sizeof x->trunc);
	if (r->cond_len &&
	    !(x->cond = strndup((const char *)buf + r->hdr_len - r->cond_len, r->cond_len)))
		return ALEX_ENOMEM;
	for (uint32_t i = 0; i < r->nblocks; i++) {
		struct alex_entry e;
		alex_entry_decode(buf + ALEX_REC_FIXED + (size_t)i * ALEX_REC_ENTRY, &e);
		lm->ent[lm->nent++] = (struct alex_lm_ent){
			alex_key(e.file, e.block), { pos, e.stored_len, e.crc, e.flags, 0 }, lm->nrec };
		x->stored += e.stored_len;
		x->lz4 += e.flags == ALEX_BLK_LZ4;
		x->gap += e.flags == ALEX_BLK_GAP;
		x->delta += e.flags == ALEX_BLK_DELTA;
		/* a checked record's delta says its root at byte 16 */
		x->delta_base += e.flags == ALEX_BLK_DELTA &&
				 buf[pos - off + 16] == ALEX_DELTA_BASE;
		pos += e.stored_len;
	}
	lm->nrec++;
	return 0;
}

static void set_state(struct alex_logmap *lm, size_t a, size_t b, enum alex_rec_state s)
{
	while (a < b)
		lm->rec[a++].state = s;
}

/*
 * Follows the chain of the current epoch (recover.c: scan) and says where
 * and why it stops, and what each record's transaction came to: a group of
 * spills counts with its commit record; a conditional one once a later
 * commit follows, or its super-journal is gone.
 */
static int walk(struct rd *r, struct alex_logmap *lm, uint64_t *next_lsn)
{
	enum alex_rec_state done = lm->epoch_state == ALEX_EPOCH_APPLIED ? ALEX_RS_CHECKPOINTED
									 : ALEX_RS_COMMITTED;
	uint64_t off = lm->hdr.data_off, lsn = lm->hdr.start_lsn;
	uint32_t prev = lm->hdr.salt;
	size_t group = 0, held = SIZE_MAX, held_end = 0;
	struct alex_rec rec;
	int err;

	*next_lsn = lsn;
	for (;;) {
		if ((err = read_rec(r, lm, off, lsn, prev, &rec, &lm->stop)))
			return err;
		if (lm->stop != ALEX_STOP_NONE)
			break;
		if ((err = push_rec(lm, r->buf, &rec, off)))
			return err;
		lsn++;
		prev = rec.hdr_crc;
		off += rec.rec_len;
		if (!(rec.flags & ALEX_REC_COMMIT))
			continue;
		*next_lsn = lsn;
		if (held != SIZE_MAX)
			set_state(lm, held, held_end, done);
		held = SIZE_MAX;
		if (rec.flags & ALEX_REC_COND)
			held = group, held_end = lm->nrec;
		else
			set_state(lm, group, lm->nrec, done);
		group = lm->nrec;
	}
	lm->end = off;
	lm->used = off - lm->hdr.data_off;
	if (held != SIZE_MAX) {
		/* nothing followed it: its super-journal decides */
		int exists = access(lm->rec[held_end - 1].cond, F_OK) == 0 || errno != ENOENT;
		set_state(lm, held, held_end,
			  exists && done == ALEX_RS_COMMITTED ? ALEX_RS_UNDECIDED : done);
	}
	return 0;
}

static int key_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct alex_lm_ent *)a)->key, y = ((const struct alex_lm_ent *)b)->key;
	return (x > y) - (x < y);
}

/* The record whose bytes hold log offset off. */
static size_t rec_at(const struct alex_logmap *lm, uint64_t off)
{
	size_t lo = 0, hi = lm->nrec;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (lm->rec[mid].off <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* The map recovery would build: committed records in log order, each
 * one's truncations first, then its blocks (recover.c: queue, apply). */
static int build_map(struct alex_logmap *lm)
{
	struct alex_map m;

	for (int f = 0; f < ALEX_NFILES; f++)
		lm->size[f] = lm->base_size[f] == UINT64_MAX ? 0 : lm->base_size[f];
	if (lm->mark.kind == ALEX_MARK_PLACEHOLDER || lm->mark.kind == ALEX_MARK_TORN)
		lm->size[ALEX_FILE_DB] = 0; /* nothing of it is database content */
	if (alex_map_init(&m, lm->nent))
		return ALEX_ENOMEM;
	for (size_t i = 0; i < lm->nrec; i++) {
		struct alex_lm_rec *x = &lm->rec[i];
		if ((x->flags & ALEX_REC_COMMIT) &&
		    (x->state == ALEX_RS_COMMITTED || x->state == ALEX_RS_CHECKPOINTED))
			lm->commits++;
		if (x->state != ALEX_RS_COMMITTED)
			continue;
		for (unsigned f = 0; f < ALEX_NFILES; f++)
			if (x->trunc[f] != ALEX_NO_TRUNC)
				alex_map_trunc(&m, f, alex_roundup_block(x->trunc[f]) >> ALEX_BLOCK_SHIFT);
		for (size_t j = x->first; j < x->first + x->nblocks; j++)
			if (alex_map_put(&m, lm->ent[j].key, &lm->ent[j].loc)) {
				alex_map_free(&m);
				return ALEX_ENOMEM;
			}
		if (x->flags & ALEX_REC_COMMIT)
			memcpy(lm->size, x->size, sizeof lm->size);
	}
	if (!(lm->blk = malloc((m.n ? m.n : 1) * sizeof *lm->blk))) {
		alex_map_free(&m);
		return ALEX_ENOMEM;
	}
	for (size_t i = 0; i < m.cap; i++) {
		if (!m.keys[i])
			continue;
		struct alex_lm_ent *b = &lm->blk[lm->nblk++];
		*b = (struct alex_lm_ent){ m.keys[i], m.vals[i], rec_at(lm, m.vals[i].off) };
		lm->rec[b->rec].live += b->loc.len;
		lm->live += b->loc.len;
	}
	qsort(lm->blk, lm->nblk, sizeof *lm->blk, key_cmp);
	alex_map_free(&m);
	return 0;
}

static int tally(struct alex_logmap *lm, uint64_t epoch, uint64_t bytes)
{
	size_t i = 0;

	while (i < lm->nleft && lm->left[i].epoch != epoch)
		i++;
	if (i == lm->nleft) {
		struct alex_lm_left *v = realloc(lm->left, (i + 1) * sizeof *v);
		if (!v)
			return ALEX_ENOMEM;
		lm->left = v;
		lm->left[lm->nleft++] = (struct alex_lm_left){ epoch, 0, 0 };
	}
	lm->left[i].records++;
	lm->left[i].bytes += bytes;
	return 0;
}

/* Past the end of the chain: records of other epochs or chains, tallied,
 * and a commit of this epoch beyond damage (recover.c: look_past). */
static int scan_tail(struct rd *r, struct alex_logmap *lm, uint64_t next_lsn)
{
	int look = lm->stop != ALEX_STOP_STALE && lm->epoch_state != ALEX_EPOCH_APPLIED;
	uint64_t skip = 0;
	struct alex_rec rec;
	size_t got;
	int err;

	for (uint64_t off = lm->end; off + ALEX_SECTOR <= lm->log_size; off += ALEX_SECTOR) {
		if ((err = read_at(r->fd, r->buf, ALEX_REC_FIXED, off, &got)))
			return err;
		if (got < ALEX_REC_FIXED || !alex_rec_peek(r->buf, &rec))
			continue;
		if (look && !lm->lost_off && off > lm->end && (rec.flags & ALEX_REC_COMMIT) &&
		    rec.epoch == lm->hdr.epoch && rec.lsn > next_lsn)
			lm->lost_off = off;
		if (off < skip)
			continue; /* inside a record already counted */
		int sane = rec.rec_len && rec.rec_len % ALEX_SECTOR == 0 && rec.rec_len <= ALEX_REC_MAX;
		skip = off + (sane ? rec.rec_len : ALEX_SECTOR);
		if ((err = tally(lm, rec.epoch, sane ? rec.rec_len : ALEX_SECTOR)))
			return err;
	}
	return 0;
}

static int stored_at(void *ctx, const struct alex_loc *l, uint8_t *buf)
{
	size_t got;

	if (read_at(*(int *)ctx, buf, l->len, l->off, &got) || got != l->len ||
	    alex_crc32c(0, buf, l->len) != l->crc)
		return ALEX_EBADBLOCK;
	return 0;
}

static int whole_at(void *ctx, const struct alex_loc *l, uint8_t *blk)
{
	uint8_t in[ALEX_BLOCK];

	if (l->len > ALEX_BLOCK || stored_at(ctx, l, in))
		return ALEX_EBADBLOCK;
	return alex_codec_unpack(in, l->len, alex_loc_codec(l), blk);
}

/* The newest page 1 the log holds: its header says the page size. */
static void read_page1(struct rd *r, struct alex_logmap *lm)
{
	const struct alex_loc *l = lm->nblk ? &lm->blk[0].loc : NULL;
	/* page 1 has no root in the file */
	struct alex_delta_src src = { &r->fd, stored_at, whole_at, NULL, NULL, NULL, 0 };
	uint8_t blk[ALEX_BLOCK];

	if (!l || lm->blk[0].key != alex_key(ALEX_FILE_DB, 0) ||
	    !(src.chain = malloc((size_t)ALEX_DELTA_DEPTH * ALEX_DELTA_MAX)))
		return;
	if (!alex_delta_load(&src, l, blk, NULL)) {
		memcpy(lm->page1, blk, ALEX_BASE_HDR);
		lm->have_page1 = 1;
	}
	free(src.chain);
}

/* Does another descriptor hold the log's open lock?  Asks, takes nothing. */
static int in_use(int fd)
{
	struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = ALEX_LOCK_OPEN,
			   .l_len = 1 };

	return syscall(SYS_fcntl, fd, F_OFD_GETLK, &l) == 0 && l.l_type != F_UNLCK;
}

/* Where the current epoch's last commit ends: where an epoch that follows
 * it begins (format.h; recover.c: chain_end). */
static int chain_end(struct rd *r, const struct alex_logmap *lm, uint64_t *end)
{
	uint64_t off = lm->hdr.data_off, lsn = lm->hdr.start_lsn;
	uint32_t prev = lm->hdr.salt;
	enum alex_stop why;
	struct alex_rec rec;
	int err;

	*end = off;
	for (;;) {
		if ((err = read_rec(r, lm, off, lsn, prev, &rec, &why)) || why != ALEX_STOP_NONE)
			return err;
		lsn++;
		prev = rec.hdr_crc;
		off += rec.rec_len;
		if (rec.flags & ALEX_REC_COMMIT)
			*end = off;
	}
}

/* A damaged slot's epoch begins at the start of the records, or right after
 * the current epoch's (recover.c: adopt). */
static int adopt(struct rd *r, struct alex_logmap *lm)
{
	uint64_t end;
	int err;

	if (lm->slot[!lm->cur] != ALEX_SLOT_DAMAGED)
		return 0;
	if ((err = alex_lm_adopt(r, lm, ALEX_LOG_DATA)) || lm->adopted ||
	    lm->hdr.version < ALEX_FORMAT_VERSION || (err = chain_end(r, lm, &end)) ||
	    end == ALEX_LOG_DATA)
		return err;
	return alex_lm_adopt(r, lm, alex_epoch_follows_at(end));
}

static int read_once(const char *db_path, const char *log_path, struct alex_logmap *lm,
		     struct stat *st)
{
	struct rd r = { .fd = open_ro(log_path) };
	struct alex_db *db = calloc(1, sizeof *db);
	uint64_t next_lsn;
	int err = r.fd < 0 ? errno : 0;

	if (err || !db || !(r.buf = grow(NULL, &r.cap, ALEX_BLOCK + ALEX_HDR_SLOT_USED, 1))) {
		err = err ? err : ALEX_ENOMEM;
		goto out;
	}
	if (fstat(r.fd, st)) {
		err = errno;
		goto out;
	}
	lm->log_size = (uint64_t)st->st_size;
	lm->in_use = in_use(r.fd);
	if ((err = alex_lm_read_base(db_path, lm, db)) || (err = alex_lm_read_slots(&r, lm)) ||
	    lm->cur < 0 || (err = adopt(&r, lm)))
		goto out;
	lm->epoch_state = alex_lm_epoch_state(lm, db);
	if ((err = walk(&r, lm, &next_lsn)) || (err = build_map(lm)) ||
	    (err = scan_tail(&r, lm, next_lsn)))
		goto out;
	read_page1(&r, lm);
out:
	free(db);
	free(r.buf);
	close_fd(r.fd);
	return err;
}

static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

int alex_logmap_read(const char *db_path, struct alex_logmap *lm)
{
	size_t n = strlen(db_path) + sizeof "-alex";
	char *log = malloc(n);
	struct stat before, after;
	int err;

	memset(lm, 0, sizeof *lm);
	if (!log)
		return ALEX_ENOMEM;
	snprintf(log, n, "%s-alex", db_path);
	for (int tries = 0;; tries++) {
		err = read_once(db_path, log, lm, &before);
		int same = !err && !stat(log, &after) && same_file(&before, &after);
		lm->changed = !err && !same;
		/* changed while read, or damage that may be an append in
		 * flight: look again, a few times */
		if (err || tries == 4 || (same && !alex_logmap_damaged(lm)))
			break;
		alex_logmap_free(lm);
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	free(log);
	return err;
}

void alex_logmap_free(struct alex_logmap *lm)
{
	for (size_t i = 0; i < lm->nrec; i++)
		free(lm->rec[i].cond);
	free(lm->rec);
	free(lm->ent);
	free(lm->blk);
	free(lm->left);
	memset(lm, 0, sizeof *lm);
}

int alex_logmap_damaged(const struct alex_logmap *lm)
{
	if (lm->hdr_err)
		return 1;
	return lm->cur >= 0 && lm->epoch_state != ALEX_EPOCH_APPLIED &&
	       (lm->stop > ALEX_STOP_STALE || lm->lost_off);
}
