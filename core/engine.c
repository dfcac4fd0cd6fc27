/*
 * engine.c - the public API (alex.h): opening, the write path (collector,
 * spills, commit records), the read path, truncation and closing.
 *
 * A block's newest content is found in this order: the collector (written
 * since the last record), the pending map (spilled records of the open
 * transaction), the map (committed records), the base file below its limit,
 * zeros.  Only the last two live on disk before a checkpoint.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "internal.h"

#define MIN_MEMORY (64u << 10)
#define MAX_MEMORY (1024u << 20)
/* what one collector slot costs: the slot, its share of the record buffer
 * (packed payload, worst case raw), its table entry, index and order */
#define SLOT_COST (2u * ALEX_BLOCK + 128u)

static const char *const file_suffix[ALEX_NFILES] = { "", "-journal", "-wal" };

void alex_config_default(struct alex_config *cfg)
{
	memset(cfg, 0, sizeof *cfg); /* every later field defaults to 0 */
	cfg->sync = ALEX_SYNC_FULL;
	cfg->compress = ALEX_COMPRESS_AUTO;
	cfg->compress_min_saving_pct = 10;
	cfg->memory_bytes = 16u << 20;
	cfg->prealloc_bytes = 1u << 20; /* the longest a commit waits for zeros */
	cfg->checkpoint_bytes = 64u << 20;
	cfg->sync_ms = 100;
	cfg->extent_bytes = 1u << 20;
	cfg->checkpoint_on_close = 1;
	cfg->protect_base = 1;
	cfg->remove_log = 0;
}

static int config_ok(const struct alex_config *c)
{
	return c->sync <= ALEX_SYNC_OFF && c->compress <= ALEX_COMPRESS_OFF &&
	       c->compress_min_saving_pct <= 90 && c->memory_bytes >= MIN_MEMORY &&
	       c->memory_bytes <= MAX_MEMORY && c->prealloc_bytes >= ALEX_BLOCK &&
	       c->prealloc_bytes % ALEX_BLOCK == 0 && c->checkpoint_bytes >= ALEX_BLOCK;
}

static int valid_file(enum alex_file f)
{
	return (unsigned)f < ALEX_NFILES;
}

static char *join(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 1;
	char *s = malloc(n);

	if (s)
		snprintf(s, n, "%s%s", a, b);
	return s;
}

static void free_db(alex_db *db)
{
	const struct alex_io_ops *o = db->io.ops;

	for (int f = 0; f < ALEX_NFILES; f++) {
		if (db->base_fd[f] >= 0)
			o->close(db->io.ctx, db->base_fd[f]);
		free(db->path[f]);
	}
	if (db->log_fd >= 0)
		o->close(db->io.ctx, db->log_fd);
	free(db->log_path);
	alex_map_free(&db->map);
	alex_map_free(&db->pending);
	free(db->doubt);
	alex_col_free(&db->col);
	free(db->rec);
	free(db->scratch);
	free(db->order);
	alex_codec_free(db);
	free(db);
}

/* Opens the base files that exist (once) and takes their sizes. */
static int open_bases(alex_db *db)
{
	const struct alex_io_ops *o = db->io.ops;

	for (int f = 0; f < ALEX_NFILES; f++) {
		int exists = 1, err;
		uint64_t size = 0;

		if (db->cfg.db_only && f != ALEX_FILE_DB)
			exists = 0; /* SQLite's own: its size is none of ours */
		else if (db->base_fd[f] < 0 && f != ALEX_FILE_DB &&
		    (err = o->exists(db->io.ctx, db->path[f], &exists)))
			return err;
		if (exists) {
			int flags = f == ALEX_FILE_DB ? ALEX_O_CREAT : 0;
			if (db->base_fd[f] < 0 &&
			    (err = o->open(db->io.ctx, db->path[f], flags, &db->base_fd[f])))
				return err;
			if ((err = o->size(db->io.ctx, db->base_fd[f], &size)))
				return err;
			if (f == ALEX_FILE_DB && (err = alex_protect_probe(db, &size)))
				return err;
		}
		db->size[f] = db->csize[f] = size;
		db->limit[f] = db->climit[f] = size;
		db->trunc[f] = ALEX_NO_TRUNC;
	}
	return 0;
}

int alex_open(const char *db_path, const struct alex_config *cfg, const struct alex_io *io,
	      alex_db **out)
{
	alex_db *db;
	int err;

	*out = NULL;
	if (!db_path || !*db_path)
		return ALEX_EINVAL;
	if (!(db = calloc(1, sizeof *db)))
		return ALEX_ENOMEM;
	db->io = io ? *io : alex_io_posix;
	db->log_fd = -1;
	for (int f = 0; f < ALEX_NFILES; f++)
		db->base_fd[f] = -1;
	if (cfg)
		db->cfg = *cfg;
	else
		alex_config_default(&db->cfg);
	if (!config_ok(&db->cfg)) {
		free_db(db);
		return ALEX_EINVAL;
	}
	/* two scratch blocks and the record's rounding come off the top */
	uint64_t slots = (db->cfg.memory_bytes - 3 * ALEX_BLOCK) / SLOT_COST;
	uint64_t rec_slots = (ALEX_REC_MAX - 2 * ALEX_BLOCK) / (ALEX_BLOCK + ALEX_REC_ENTRY);
	if (slots > rec_slots)
		slots = rec_slots;
	for (int f = 0; f < ALEX_NFILES; f++)
		db->path[f] = join(db_path, file_suffix[f]);
	db->log_path = join(db_path, "-alex");
	db->scratch = aligned_alloc(ALEX_BLOCK, 2 * ALEX_BLOCK);
	db->order = malloc(slots * sizeof *db->order);
	err = ALEX_ENOMEM;
	if (!db->path[0] || !db->path[1] || !db->path[2] || !db->log_path || !db->scratch ||
	    !db->order || alex_col_init(&db->col, (uint32_t)slots) ||
	    alex_map_init(&db->map, 1024) || alex_map_init(&db->pending, 16))
		goto fail;
	db->nonce = alex_random32();
	if ((err = open_bases(db)) || (err = alex_log_open(db)) || (err = alex_recover(db)) ||
	    (err = alex_protect_check_base(db)))
		goto fail;
	for (int f = 0; f < ALEX_NFILES; f++) {
		db->size[f] = db->csize[f];
		db->limit[f] = db->climit[f];
	}
	/* A format-1 epoch is not fenced: a crash inside its checkpoint could
	 * leave the base unmarked while the log still holds newer pages. */
	if (db->epoch_commits && !(db->hdr.flags & ALEX_HDR_FENCED) &&
	    db->mark.kind == ALEX_MARK_NONE && (err = alex_protect_mark(db)))
		goto fail;
	*out = db;
	return 0;
fail:
	free_db(db);
	return err;
}

/* ---- the read side ---------------------------------------------------- */

/* The committed-or-spilled content of a block, ignoring the collector. */
static int load_block(alex_db *db, unsigned f, uint64_t blk, uint8_t *out)
{
	uint64_t key = alex_key(f, blk);
	const struct alex_loc *loc = alex_map_get(&db->pending, key);
	size_t got = 0;
	int err;

	if (!loc)
		loc = alex_map_get(&db->map, key);
	if (loc)
		return alex_log_read_block(db, loc, out);
	uint64_t off = blk << ALEX_BLOCK_SHIFT;
	if (db->base_fd[f] >= 0 && off < db->limit[f]) {
		uint64_t want = db->limit[f] - off < ALEX_BLOCK ? db->limit[f] - off : ALEX_BLOCK;
		if ((err = db->io.ops->pread(db->io.ctx, db->base_fd[f], out, want, off, &got)))
			return err;
		if (f == ALEX_FILE_DB && blk == 0)
			alex_protect_unmask(out, got);
	}
	memset(out + got, 0, ALEX_BLOCK - got);
	return 0;
}

static int reload(alex_db *db, int force, int may_abort);
static int txn_open(const alex_db *db);
static int read_once(alex_db *db, enum alex_file f, void *buf, size_t len, uint64_t off,
		     size_t *got);

/*
 * A block that fails its crc may have been overwritten: another process
 * checkpointed and started a new epoch while this engine's map still
 * pointed into the old one (WAL mode, where a reader holds no lock that
 * keeps checkpoints out).  SQLite never checkpoints pages an active reader
 * still needs, so the base file then holds what the block was: catch up
 * and read again.  A block that is bad after that is damage.
 */
int alex_read(alex_db *db, enum alex_file f, void *buf, size_t len, uint64_t off, size_t *got)
{
	int err = read_once(db, f, buf, len, off, got);
	if (err == ALEX_EBADBLOCK && !db->failed && !txn_open(db)) {
		uint64_t epoch = db->hdr.epoch;
		if (reload(db, 0, 0) == 0 && db->hdr.epoch != epoch)
			err = read_once(db, f, buf, len, off, got);
	}
	return err;
}

static int read_once(alex_db *db, enum alex_file f, void *buf, size_t len, uint64_t off,
		     size_t *got)
{
	uint8_t *dst = buf, *tmp = db->scratch + ALEX_BLOCK;
	size_t done = 0;
	int err;

	*got = 0;
	if (!valid_file(f))
		return ALEX_EINVAL;
	if (off >= db->size[f])
		return 0;
	if (len > db->size[f] - off)
		len = (size_t)(db->size[f] - off);
	while (done < len) {
		uint64_t pos = off + done, blk = pos >> ALEX_BLOCK_SHIFT;
		size_t in = (size_t)(pos & (ALEX_BLOCK - 1));
		size_t n = ALEX_BLOCK - in < len - done ? ALEX_BLOCK - in : len - done;
		int64_t slot = alex_col_find(&db->col, alex_key(f, blk));

		if (slot >= 0) {
			memcpy(dst + done, alex_col_slot(&db->col, (uint32_t)slot) + in, n);
		} else if (n == ALEX_BLOCK) {
			if ((err = load_block(db, f, blk, dst + done)))
				return err;
		} else {
			if ((err = load_block(db, f, blk, tmp)))
				return err;
			memcpy(dst + done, tmp + in, n);
		}
		done += n;
	}
	db->st.reads++;
	db->st.read_bytes += done;
	*got = done;
	return 0;
}

int alex_size(alex_db *db, enum alex_file f, uint64_t *size)
{
	if (!valid_file(f))
		return ALEX_EINVAL;
	*size = db->size[f];
	return 0;
}

/* ---- records ---------------------------------------------------------- */

static int ks_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct alex_ks *)a)->key, y = ((const struct alex_ks *)b)->key;
	return (x > y) - (x < y);
}

static int reserve_rec(alex_db *db, size_t need)
{
	if (need <= db->rec_cap)
		return 0;
	/* double, but never past the largest record the collector can make */
	size_t most = (size_t)alex_roundup_block(ALEX_REC_FIXED +
						  (uint64_t)db->col.max * (ALEX_REC_ENTRY + ALEX_BLOCK));
	size_t cap = db->rec_cap ? db->rec_cap : 4 * ALEX_BLOCK;
	while (cap < need)
		cap *= 2;
	if (cap > most && need <= most)
		cap = most;
	uint8_t *r = aligned_alloc(ALEX_BLOCK, cap);
	if (!r)
		return ALEX_ENOMEM;
	free(db->rec);
	db->rec = r;
	db->rec_cap = cap;
	return 0;
}

/*
 * Builds the collector into db->rec as one record; returns its length in
 * *len and the live block count in *n (db->order[0..n) in table order).
 */
static int stage(alex_db *db, uint32_t flags, uint32_t *len, uint32_t *n)
{
	struct alex_collect *c = &db->col;
	uint32_t k = 0;
	int err;

	for (uint32_t i = 0; i < c->used; i++)
		if (c->slot_key[i])
			db->order[k++] = (struct alex_ks){ c->slot_key[i], i };
	if (k > 1)
		qsort(db->order, k, sizeof *db->order, ks_cmp);

	/* a commit of one database of a transaction across several carries
	 * the super-journal's path after the table (format.h: COND) */
	uint32_t cond_len = (flags & ALEX_REC_COND) ? (uint32_t)strlen(db->cond) : 0;
	uint64_t table_end = ALEX_REC_FIXED + (uint64_t)ALEX_REC_ENTRY * k;
	uint64_t hdr_len = table_end + cond_len;
	if ((err = reserve_rec(db, alex_roundup_block(hdr_len + (uint64_t)k * ALEX_BLOCK))))
		return err;
	uint8_t *rec = db->rec;
	uint64_t pos = hdr_len;
	memcpy(rec + table_end, db->cond ? db->cond : "", cond_len);
	for (uint32_t i = 0; i < k; i++) {
		struct alex_entry e = { alex_key_block(db->order[i].key),
					(uint8_t)alex_key_file(db->order[i].key), 0, 0, 0 };
		int lz4;
		e.stored_len = alex_codec_pack(db, alex_col_slot(c, db->order[i].slot), rec + pos, &lz4);
		e.flags = lz4 ? ALEX_BLK_LZ4 : 0;
		e.crc = alex_crc32c(0, rec + pos, e.stored_len);
		alex_entry_encode(rec + ALEX_REC_FIXED + (size_t)i * ALEX_REC_ENTRY, &e);
		pos += e.stored_len;
		db->st.blocks_compressed += (uint64_t)lz4;
	}
	uint64_t rec_len = alex_roundup_block(pos);
	memset(rec + pos, 0, rec_len - pos);

	struct alex_rec r = { 0 };
	r.hdr_len = (uint32_t)hdr_len;
	r.cond_len = cond_len;
	r.rec_len = (uint32_t)rec_len;
	r.nblocks = k;
	r.epoch = db->hdr.epoch;
	r.lsn = db->next_lsn;
	r.txn = db->txn;
	r.flags = flags;
	r.nonce = db->nonce;
	r.prev_crc = db->prev_crc;
	r.table_crc = alex_crc32c(0, rec + ALEX_REC_FIXED, (size_t)(hdr_len - ALEX_REC_FIXED));
	for (int f = 0; f < ALEX_NFILES; f++) {
		r.size[f] = db->size[f];
		r.trunc[f] = db->trunc[f];
	}
	alex_rec_encode(rec, &r);
	db->prev_crc_staged = r.hdr_crc;
	db->staged_hdr_len = (uint32_t)hdr_len;
	*len = (uint32_t)rec_len;
	*n = k;
	return 0;
}

/* After the record at rec_off is safely written: point target at its
 * blocks, empty the collector and advance the log position. */
static int publish(alex_db *db, struct alex_map *target, uint64_t rec_off, uint32_t len,
		   uint32_t n)
{
	uint64_t pos = rec_off + db->staged_hdr_len;
	int err = 0;

	for (uint32_t i = 0; i < n; i++) {
		struct alex_entry e;
		alex_entry_decode(db->rec + ALEX_REC_FIXED + (size_t)i * ALEX_REC_ENTRY, &e);
		struct alex_loc l = { pos, e.stored_len, e.crc, e.flags };
		if (!err)
			err = alex_map_put(target, db->order[i].key, &l);
		pos += e.stored_len;
	}
	alex_col_clear(&db->col);
	db->append_off = rec_off + len;
	db->next_lsn++;
	db->prev_crc = db->prev_crc_staged;
	for (int f = 0; f < ALEX_NFILES; f++)
		db->trunc[f] = ALEX_NO_TRUNC;
	db->st.records++;
	db->st.blocks_logged += n;
	db->st.bytes_raw += (uint64_t)n * ALEX_BLOCK;
	db->st.bytes_logged += len;
	db->st.log_used = db->append_off - ALEX_LOG_DATA;
	/* a map that cannot grow loses track of blocks: stop writing */
	if (err)
		db->failed = 1;
	return err;
}

static int slot_for(alex_db *db, unsigned f, uint64_t blk, int whole, uint8_t **out);

static int full(int err)
{
	return err == ENOSPC || err == EDQUOT;
}

/*
 * The disk is full: copy what the log holds into the database file, so
 * that the log's space can be written again, before SQLite is told.  Not
 * while a spilled or truncating transaction is open (a checkpoint cannot
 * run then).  The caller holds SQLite's write lock, as for any write.
 */
static int make_room(alex_db *db)
{
	if (!db->epoch_commits || db->pending.n || db->txn_truncated || db->failed)
		return ALEX_EBUSY;
	db->st.space_checkpoints++;
	int err = alex_ckpt_run(db);
	if (!err)
		db->space_avail = 0; /* look again before the next growth */
	return err;
}

/* Before any record: the log exists and its epoch takes records. */
/*
 * Before the first record of an epoch, a spill or a commit: the log exists,
 * its epoch takes records, and the base file carries the epoch's fence,
 * durably (protect.c).  The fence is what says, after a crash, that the
 * epoch before was applied -- so its records may now be overwritten -- and
 * it keeps SQLite without ALEX out while the log holds committed pages the
 * base does not.  The header then says whether the epoch is fenced and
 * records the base as it is now; alex_log_append writes it with the record,
 * under the record's sync.
 */
static int ensure_epoch(alex_db *db)
{
	int err;

	if (!db->epoch_live && (err = alex_log_begin_epoch(db, 0)))
		return err;
	if (db->epoch_started)
		return 0;
	if (db->cfg.protect_base) {
		if ((err = alex_protect_mark(db)))
			return err;
		/* fenced only if page 1 can carry the mark at the checkpoint:
		 * an SQLite database, not other bytes over a placeholder */
		int64_t s0 = alex_col_find(&db->col, alex_key(ALEX_FILE_DB, 0));
		if (db->mark.kind == ALEX_MARK_SQLITE ||
		    (db->mark.kind == ALEX_MARK_PLACEHOLDER &&
		     (!db->size[ALEX_FILE_DB] ||
		      (s0 >= 0 && alex_protect_markable(alex_col_slot(&db->col, (uint32_t)s0),
							ALEX_BLOCK))))) {
			db->hdr.flags |= ALEX_HDR_FENCED;
			db->st.fenced_epochs++;
		}
	}
	if ((err = alex_protect_base_header(db, db->hdr.base)))
		return err;
	db->epoch_started = 1;
	return 0;
}

/*
 * Before the first commit record of an epoch: it carries block 0, so that
 * while the base is marked the true page 1 comes from the log.
 */
static int first_commit(alex_db *db)
{
	uint8_t *slot;

	if (db->epoch_commits || !db->cfg.protect_base || !db->size[ALEX_FILE_DB] ||
	    alex_col_find(&db->col, alex_key(ALEX_FILE_DB, 0)) >= 0)
		return 0;
	return slot_for(db, ALEX_FILE_DB, 0, 0, &slot);
}

/* Writes the open transaction's collected blocks as a spill record. */
static int spill(alex_db *db)
{
	uint32_t len, n;
	uint64_t off;
	int err;

	if ((err = ensure_epoch(db)) || (err = stage(db, 0, &len, &n)) ||
	    (err = alex_log_append(db, len, &off)))
		return err;
	db->unsynced_spill = 1;
	db->st.spills++;
	return publish(db, &db->pending, off, len, n);
}

/* ---- the write side --------------------------------------------------- */

/* The collector slot for (f, blk), made on first touch.  A block that will
 * not be overwritten whole is first filled with its current content. */
static int slot_for(alex_db *db, unsigned f, uint64_t blk, int whole, uint8_t **out)
{
	uint64_t key = alex_key(f, blk);
	int64_t slot = alex_col_find(&db->col, key);
	int err;

	if (slot >= 0) {
		db->st.dedup_hits++;
		*out = alex_col_slot(&db->col, (uint32_t)slot);
		return 0;
	}
	if (db->col.used >= db->col.max) {
		uint32_t live = 0;
		for (uint32_t i = 0; i < db->col.used; i++)
			live += db->col.slot_key[i] != 0;
		/* a truncation dropped every slot: reuse them, write nothing */
		if (!live)
			alex_col_clear(&db->col);
		else if ((err = spill(db)))
			return err;
	}
	/* room in the log for the record this block will be part of; on a full
	 * disk, a checkpoint may give the log's space back first */
	if ((err = alex_log_reserve(db, db->col.used + 1)) && full(err) && make_room(db) == 0)
		err = alex_log_reserve(db, db->col.used + 1);
	if (err)
		return err;
	if ((slot = alex_col_add(&db->col, key)) < 0)
		return ALEX_ENOMEM;
	*out = alex_col_slot(&db->col, (uint32_t)slot);
	if (!whole && (err = load_block(db, f, blk, *out))) {
		alex_map_del(&db->col.index, key);
		db->col.slot_key[slot] = 0;
		return err;
	}
	return 0;
}

int alex_write(alex_db *db, enum alex_file f, const void *buf, size_t len, uint64_t off)
{
	const uint8_t *src = buf;
	size_t done = 0;
	int err;

	if (db->failed)
		return ALEX_EFAILED;
	if (db->doubt)
		return ALEX_EBUSY; /* a record would go over the undecided group */
	if (!valid_file(f) || (db->cfg.db_only && f != ALEX_FILE_DB))
		return ALEX_EINVAL;
	if (off + len < off || off + len > ALEX_MAX_FILE)
		return EFBIG;
	while (done < len) {
		uint64_t pos = off + done, blk = pos >> ALEX_BLOCK_SHIFT;
		size_t in = (size_t)(pos & (ALEX_BLOCK - 1));
		size_t n = ALEX_BLOCK - in < len - done ? ALEX_BLOCK - in : len - done;
		uint8_t *slot;

		if ((err = slot_for(db, f, blk, n == ALEX_BLOCK, &slot))) {
			/* The log is full.  A write that changes nothing needs no
			 * room -- SQLite rolling back after SQLITE_FULL rewrites
			 * committed pages, and must be able to. */
			uint8_t *cur = db->scratch + ALEX_BLOCK;
			if ((err != ENOSPC && err != EDQUOT) || load_block(db, f, blk, cur) ||
			    memcmp(cur + in, src + done, n) != 0)
				return err;
			done += n;
			continue;
		}
		memcpy(slot + in, src + done, n);
		done += n;
		if (pos + n > db->size[f])
			db->size[f] = pos + n;
	}
	db->st.writes++;
	db->st.write_bytes += len;
	return 0;
}

int alex_truncate(alex_db *db, enum alex_file f, uint64_t size)
{
	int err;

	if (db->failed)
		return ALEX_EFAILED;
	if (db->doubt)
		return ALEX_EBUSY; /* a record would go over the undecided group */
	if (!valid_file(f) || (db->cfg.db_only && f != ALEX_FILE_DB))
		return ALEX_EINVAL;
	if (size > ALEX_MAX_FILE)
		return EFBIG;
	if (size < db->size[f]) {
		uint64_t first = (size + ALEX_BLOCK - 1) >> ALEX_BLOCK_SHIFT;
		uint8_t *cut = NULL;
		/* The cut block's tail must read as zeros if the file grows.
		 * Its slot comes first: if that fails, nothing has changed. */
		if ((size & (ALEX_BLOCK - 1)) &&
		    (err = slot_for(db, f, size >> ALEX_BLOCK_SHIFT, 0, &cut)))
			return err;
		alex_col_trunc(&db->col, f, first);
		alex_map_trunc(&db->pending, f, first);
		alex_map_trunc(&db->map, f, first);
		if (size < db->limit[f])
			db->limit[f] = size;
		if (size < db->trunc[f])
			db->trunc[f] = size;
		db->size[f] = size;
		db->txn_truncated = 1;
		if (cut) {
			size_t in = (size_t)(size & (ALEX_BLOCK - 1));
			memset(cut + in, 0, ALEX_BLOCK - in);
		}
	}
	db->size[f] = size;
	return 0;
}

static int txn_open(const alex_db *db)
{
	if (db->col.used || db->pending.n || db->txn_truncated)
		return 1;
	for (int f = 0; f < ALEX_NFILES; f++)
		if (db->size[f] != db->csize[f] || db->trunc[f] != ALEX_NO_TRUNC)
			return 1;
	return 0;
}

static int sync_log(alex_db *db)
{
	int err = alex_log_sync(db);

	if (err)
		return err;
	db->unsynced_commit = db->unsynced_spill = 0;
	db->unsynced_bytes = 0;
	db->unsynced_since_ns = 0;
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
		if (load_block(db, alex_key_file(k), alex_key_block(k), cur) ||
		    memcmp(cur, alex_col_slot(c, i), ALEX_BLOCK) != 0)
			return 0;
		alex_map_del(&c->index, k);
		c->slot_key[i] = 0;
	}
	alex_col_clear(c);
	for (int f = 0; f < ALEX_NFILES; f++) {
		db->trunc[f] = ALEX_NO_TRUNC;
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

/* Stages the open transaction as a commit record and writes it (not
 * synced); a full disk first tries a checkpoint for room. */
static int write_commit(alex_db *db, uint32_t *len, uint32_t *n, uint64_t *off)
{
	int err;

	for (int again = 0;; again = 1) {
		if (!(err = first_commit(db)) && !(err = ensure_epoch(db)) &&
		    !(err = stage(db, ALEX_REC_COMMIT | (db->cond ? ALEX_REC_COND : 0), len, n)))
			err = alex_log_append(db, *len, off);
		/* a checkpoint begins a new epoch: stage the record again */
		if (!full(err) || again || make_room(db) != 0)
			return err;
	}
}

/* sync: FULL's promise, that the record is on disk before this returns.
 * cond: the super-journal of a transaction across databases (or NULL). */
static int commit(alex_db *db, int sync, const char *cond)
{
	uint32_t len, n;
	uint64_t off;
	int err;

	if (db->failed)
		return ALEX_EFAILED;
	if (!txn_open(db))
		return 0;
	int to_wal = enters_wal(db);
	db->cond = cond;
	err = write_commit(db, &len, &n, &off);
	db->cond = NULL;
	if (full(err) && drop_unchanged(db))
		return 0;
	if (err)
		return err;
	if (sync && (err = sync_log(db))) {
		/* The record may or may not be on disk.  Nothing moved yet, so a
		 * retry rewrites it in place -- unless spill records written
		 * before it were covered by this failed sync: their pages may be
		 * gone from the cache's dirty set, and we no longer hold them. */
		if (db->unsynced_spill)
			db->failed = 1;
		return err;
	}
	/* spilled blocks are older than the collector's: publish them first */
	for (size_t i = 0; i < db->pending.cap; i++)
		if (db->pending.keys[i] && !err)
			err = alex_map_put(&db->map, db->pending.keys[i], &db->pending.vals[i]);
	alex_map_clear(&db->pending);
	if (err) {
		db->failed = 1;
		return err;
	}
	if ((err = publish(db, &db->map, off, len, n)))
		return err;
	for (int f = 0; f < ALEX_NFILES; f++) {
		db->csize[f] = db->size[f];
		db->climit[f] = db->limit[f];
	}
	db->txn++;
	db->txn_truncated = 0;
	db->epoch_commits++;
	db->st.commits++;
	if (cond) {
		db->cond_open = 1;
		db->st.cond_commits++;
		return 0; /* synced above; no checkpoint until it is resolved */
	}
	if (!sync && db->cfg.sync != ALEX_SYNC_OFF) {
		uint64_t now = alex_now_ns();
		db->unsynced_commit = 1;
		db->unsynced_bytes += len;
		if (!db->unsynced_since_ns)
			db->unsynced_since_ns = now;
		if (db->cfg.sync == ALEX_SYNC_NORMAL &&
		    alex_flush_due(&db->cfg, db->unsynced_bytes, db->unsynced_since_ns, now) &&
		    (err = sync_log(db))) {
			db->failed = 1; /* committed records we no longer hold */
			return err;
		}
	}
	/* A database that enters WAL mode leaves the log at once: from now on
	 * SQLite writes it directly (its WAL and its checkpoints), and programs
	 * without ALEX read it through the WAL, where no mark can reach them.
	 * A failure is counted; libalex.so then refuses the WAL (docs/PRELOAD.md). */
	if ((to_wal || db->append_off - ALEX_LOG_DATA >= ckpt_threshold(db)) && alex_ckpt_run(db))
		db->st.checkpoint_failures++;
	return 0;
}

int alex_commit(alex_db *db)
{
	/* after a conditional commit, before it is resolved, SQLite commits
	 * only its rollback of the transaction (a later database failed), and
	 * syncs that: it must not be lost while the conditional one stands */
	int sync = db->cfg.sync == ALEX_SYNC_FULL ||
		   (db->cond_open && db->cfg.sync != ALEX_SYNC_OFF);
	return commit(db, sync, NULL);
}

int alex_commit_cond(alex_db *db, const char *super_path)
{
	if (!super_path || !*super_path || strlen(super_path) > ALEX_COND_MAX)
		return ALEX_EINVAL;
	/* the commit point is another file's removal: this record must be on
	 * disk before it, whatever the sync mode */
	return commit(db, db->cfg.sync != ALEX_SYNC_OFF, super_path);
}

void alex_resolve(alex_db *db)
{
	db->cond_open = 0;
}

const char *alex_in_doubt(const alex_db *db)
{
	return db->doubt;
}

int alex_sync_if_due(alex_db *db)
{
	if (db->failed || !db->unsynced_commit ||
	    !alex_flush_due(&db->cfg, db->unsynced_bytes, db->unsynced_since_ns, alex_now_ns()))
		return 0;
	return alex_sync(db);
}

int alex_sync(alex_db *db)
{
	int err;

	if (db->failed)
		return ALEX_EFAILED;
	if (!db->unsynced_commit)
		return 0;
	if ((err = sync_log(db)))
		db->failed = 1;
	return err;
}

/* Starts over from the base files: another engine checkpointed, or the log
 * came or went.  A conditional group recovery held back is decided at once
 * when the caller may (alex_refresh_scan). */
static int restart(alex_db *db, int may_abort)
{
	int err;

	alex_map_clear(&db->map);
	if ((err = open_bases(db)) || (err = alex_recover(db)))
		return err;
	if (may_abort && db->doubt)
		err = alex_refresh_scan(db, 1);
	return err;
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
static int reload(alex_db *db, int force, int may_abort)
{
	struct alex_loghdr h;
	int changed, err;

	if ((err = alex_log_changed(db, &changed)))
		return err;
	if (changed && (err = alex_log_reopen(db)))
		return err;
	if (force || changed)
		err = restart(db, may_abort);
	else if (db->log_fd < 0 || db->log_stub)
		err = open_bases(db);
	else if ((err = alex_log_read_header(db, &h)) == ALEX_ENOLOG)
		err = 0; /* another process is making it: nothing in it yet */
	else if (!err && (h.epoch != db->hdr.epoch || h.salt != db->hdr.salt ||
			  memcmp(h.uuid, db->hdr.uuid, 16) != 0 || !db->epoch_live)) {
		db->hdr = h;
		err = restart(db, may_abort);
	} else if (!err) {
		if (memcmp(&h, &db->hdr, sizeof h) != 0)
			db->hdr = db->hdr_disk = h; /* the epoch became fenced */
		if (!(err = alex_refresh_scan(db, may_abort)) && !db->epoch_commits)
			err = open_bases(db);
	}
	if (err)
		return err;
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
	if (txn_open(db))
		return 0;
	return reload(db, 0, locked);
}

int alex_discard(alex_db *db)
{
	if (!txn_open(db))
		return 0;
	alex_col_clear(&db->col);
	alex_map_clear(&db->pending);
	db->txn_truncated = 0;
	for (int f = 0; f < ALEX_NFILES; f++)
		db->trunc[f] = ALEX_NO_TRUNC;
	/* the committed map may already hold the dropped truncations' cuts */
	return reload(db, 1, 0);
}

int alex_holds_pages(const alex_db *db)
{
	return db->epoch_commits != 0;
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

void alex_set_checkpoint_on_close(alex_db *db, int on)
{
	db->cfg.checkpoint_on_close = on;
}

/* A log may go when it holds nothing the base lacks -- and nothing that
 * could still matter: a log recovery found damaged is evidence, kept for
 * `alex recover`. */
static int removable(const alex_db *db)
{
	return !db->failed && !db->epoch_commits && !txn_open(db) && !db->pending.n &&
	       !db->doubt && !db->cond_open &&
	       db->st.stop_reason <= ALEX_STOP_STALE && !db->st.lost_offset;
}

int alex_remove_log(alex_db *db)
{
	if (!removable(db))
		return ALEX_EBUSY;
	return alex_log_remove(db);
}

int alex_close(alex_db *db)
{
	int err = 0;

	if (!db)
		return 0;
	/* Uncommitted writes are dropped.  A truncation or spill of that
	 * transaction already shaped the in-memory map, so leave the log as
	 * it is for recovery rather than checkpoint a view that never
	 * committed. */
	int done = 0;
	if (db->cfg.checkpoint_on_close && !db->failed && !db->pending.n && !db->txn_truncated) {
		err = alex_ckpt_run(db);
		done = !err;
	}
	if (!done && db->cfg.sync != ALEX_SYNC_OFF && !db->failed && db->unsynced_commit) {
		int e = alex_log_sync(db);
		if (!err)
			err = e;
	}
	/* nothing left beside the database at rest, unless asked: the last
	 * engine on the log removes it once it holds nothing */
	if (db->cfg.remove_log && removable(db))
		alex_log_remove(db);
	free_db(db);
	return err;
}

void alex_stats(const alex_db *db, struct alex_stats *st)
{
	*st = db->st;
	st->log_present = db->log_fd >= 0 && !db->log_stub;
	st->log_used = db->append_off - ALEX_LOG_DATA;
	st->mem_buffers = alex_col_bytes(&db->col) + db->rec_cap + 2 * ALEX_BLOCK +
			  (uint64_t)db->col.max * sizeof *db->order;
	st->mem_maps = alex_map_bytes(&db->map) + alex_map_bytes(&db->pending);
}
