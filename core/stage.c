/*
 * stage.c - the collector becomes a record (format.h): blocks sorted by
 * key, each packed and checksummed, the header with the chain's lsn and
 * crc; once the record is written, the blocks' locations go into a map.
 */
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "crc32c.h"
#include "delta.h"
#include "engine.h"
#include "known.h"
#include "log.h"
#include "log_xts.h"

static int ks_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct alex_ks *)a)->key, y = ((const struct alex_ks *)b)->key;
	return (x > y) - (x < y);
}

/* Table order.  A commit holds a few blocks (a one-row INSERT two): an
 * insertion sort, where qsort's set-up cost more than the sort (callgrind:
 * some 180 instructions a commit) */
static void sort_keys(struct alex_ks *o, uint32_t k)
{
	if (k > 16) {
		qsort(o, k, sizeof *o, ks_cmp);
		return;
	}
	for (uint32_t i = 1; i < k; i++) {
		struct alex_ks t = o[i];
		uint32_t j = i;
		for (; j > 0 && o[j - 1].key > t.key; j--)
			o[j] = o[j - 1];
		o[j] = t;
	}
}

/*
 * Where a record of pos bytes ends (format.h: sectors).  A log older than
 * format 6 takes whole blocks.  NORMAL mode packs records on sectors: the
 * page cache writes a page that holds several commits once per sync.  FULL
 * mode writes each commit to the device at its sync, and the page cache
 * writes whole pages: a record ending mid-page would make the next commit
 * write that page again, so it ends at the page's end -- unless the log is
 * written direct (ALEX_DIRECT), one sector at a time.  A direct record that
 * grows the file (a new log's first) ends at a page's end too: the zeros
 * that grow the log next go through the page cache, which would write its
 * page, acknowledged sectors and all, again (review).
 */
static uint64_t rec_len_for(const alex_db *db, uint64_t pos)
{
	if (db->hdr.version < ALEX_FORMAT_V6 || db->hdr.version == ALEX_FORMAT_XTS)
		return alex_roundup_block(pos);
	if (db->cfg.sync == ALEX_SYNC_FULL &&
	    (!db->log_direct || db->append_off + alex_roundup_sector(pos) > db->alloc_end))
		return alex_roundup_block(db->append_off + pos) - db->append_off;
	return alex_roundup_sector(pos);
}

int alex_rec_room(alex_db *db, size_t need)
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
	/* zeros once, so that a record's padding needs zeroing only where an
	 * earlier record reached past it (rec_dirty) */
	memset(r, 0, cap);
	free(db->rec);
	db->rec = r;
	db->rec_cap = cap;
	db->rec_dirty = 0;
	return 0;
}

int alex_rec_read(alex_db *db, size_t n, uint64_t off, size_t *got)
{
	if (n > db->rec_dirty)
		db->rec_dirty = n;
	return db->io.ops->pread(db->io.ctx, db->log_fd, db->rec, n, off, got);
}

/*
 * A DELTA of img rooted at the database file's block (format 9), when no
 * record of the epoch holds the block: a random update's page, mostly as
 * the file has it.  The root is read now (SQLite has just read the page:
 * the page cache holds it); format.h says why it may be read again later.
 * Not block 0 (the fence), not past a truncation, not through a staging
 * engine's base, which is another engine (cfg.base_deltas).
 */
static uint32_t base_delta(alex_db *db, uint64_t key, const uint8_t *img, uint8_t *out)
{
	uint64_t blk = alex_key_block(key), off = blk << ALEX_BLOCK_SHIFT;
	int fd = db->base_fd[ALEX_FILE_DB];
	uint8_t *root = db->scratch + ALEX_BLOCK;
	size_t got;

	if (!db->cfg.base_deltas || !alex_format_base_deltas(db->hdr.version) ||
	    alex_key_file(key) != ALEX_FILE_DB || blk == 0 || fd < 0 ||
	    off + ALEX_BLOCK > db->limit[ALEX_FILE_DB] ||
	    db->io.ops->pread(db->io.ctx, fd, root, ALEX_BLOCK, off, &got) || got != ALEX_BLOCK)
		return 0;
	struct alex_loc at = { off, ALEX_BLOCK, 0, ALEX_DELTA_BASE, 0 };
	uint32_t n = alex_delta_make(root, img, &at, 1, out);
	db->st.blocks_delta_base += n != 0;
	return n;
}

/*
 * A DELTA of img (delta.h) when the block's committed version is one this
 * engine holds and the chain has room; else 0.  The version in the map,
 * not in pending: a spill's place may be written again once its
 * transaction is dropped, a committed one's never in the epoch.
 */
static uint32_t try_delta(alex_db *db, uint64_t key, const uint8_t *img, uint8_t *out)
{
	const struct alex_loc *l;
	const uint8_t *old;
	uint32_t depth;

	if (!alex_known_wanted(db) || alex_map_get(&db->pending, key))
		return 0;
	if (!(l = alex_map_get(&db->map, key)))
		return base_delta(db, key, img, out);
	/* a block the epoch cut inside (a page size under 4096) may have a
	 * chain rooted at the file, whose tail the checkpoint cuts before it
	 * copies: bytes grown back as they were would be in no run (review) */
	uint64_t off = alex_key_block(key) << ALEX_BLOCK_SHIFT, lim = db->limit[ALEX_FILE_DB];
	if (alex_format_base_deltas(db->hdr.version) && alex_key_file(key) == ALEX_FILE_DB &&
	    off < lim && lim - off < ALEX_BLOCK)
		return 0;
	/* never a prev in another epoch's records: a carried epoch's stretch
	 * is written over while this one's records still count (carry.c) */
	if (l->epoch != (uint32_t)db->hdr.epoch)
		return 0;
	if (!(old = alex_known_get(db, key, l, &depth)) || depth >= ALEX_DELTA_DEPTH)
		return 0;
	return alex_delta_make(old, img, l, depth + 1, out);
}

/*
 * Builds the collector into db->rec as one record; returns its length in
 * *len and the live block count in *n (db->order[0..n) in table order).
 */
int alex_stage_build(alex_db *db, uint32_t flags, uint32_t *len, uint32_t *n)
{
	struct alex_collect *c = &db->col;
	uint32_t k = 0;
	int err;

	alex_log_direct_try(db); /* before rec_len_for */
	for (uint32_t i = 0; i < c->used; i++)
		if (c->slot_key[i])
			db->order[k++] = (struct alex_ks){ c->slot_key[i], i };
	sort_keys(db->order, k);

	/* a commit of one database of a transaction across several carries
	 * the super-journal's path after the table (format.h: COND) */
	uint32_t cond_len = (flags & ALEX_REC_COND) ? (uint32_t)strlen(db->cond) : 0;
	uint64_t table_end = ALEX_REC_FIXED + (uint64_t)ALEX_REC_ENTRY * k;
	uint64_t hdr_len = table_end + cond_len;
	if ((err = alex_rec_room(db, rec_len_for(db, hdr_len + (uint64_t)k * ALEX_BLOCK))))
		return err;
	uint8_t *rec = db->rec;
	uint64_t pos = hdr_len;
	memcpy(rec + table_end, db->cond ? db->cond : "", cond_len);
	for (uint32_t i = 0; i < k; i++) {
		struct alex_entry e = { alex_key_block(db->order[i].key),
					(uint8_t)alex_key_file(db->order[i].key), 0, 0, 0 };
		uint32_t how;
		/* only database blocks start with a page; an epoch of an older
		 * format stays readable by the version that began it */
		int hdr_at = e.file != ALEX_FILE_DB || db->hdr.version < ALEX_FORMAT_V3 ? -1
			     : e.block == 0 ? (int)ALEX_BASE_HDR : 0;
		const uint8_t *img = alex_col_slot(c, db->order[i].slot);
		if ((e.stored_len = try_delta(db, db->order[i].key, img, rec + pos)))
			how = ALEX_BLK_DELTA;
		else
			e.stored_len = alex_codec_pack(db, img, hdr_at, rec + pos, &how);
		if (alex_log_sealed(db)) {
			/* XTS takes at least 16 bytes: a shorter form goes raw */
			if (e.stored_len < ALEX_XTS_MIN) {
				memcpy(rec + pos, img, ALEX_BLOCK);
				e.stored_len = ALEX_BLOCK;
				how = 0;
			}
			if ((err = alex_log_xts_block(db, 1, rec + pos, e.stored_len,
						      db->append_off + pos, db->hdr.epoch, db->txn)))
				return err;
		}
		e.flags = (uint8_t)how;
		e.crc = alex_crc32c(0, rec + pos, e.stored_len);
		alex_entry_encode(rec + ALEX_REC_FIXED + (size_t)i * ALEX_REC_ENTRY, &e);
		pos += e.stored_len;
		db->st.blocks_compressed += how == ALEX_BLK_LZ4;
		db->st.blocks_gapped += how == ALEX_BLK_GAP;
		db->st.blocks_delta += how == ALEX_BLK_DELTA;
	}
	/* the padding is zeros: what an earlier record (or one read in) left
	 * past pos is cleared, once, and the buffer is zeros from pos on --
	 * not most of a 4 KiB block cleared at every commit */
	uint64_t rec_len = rec_len_for(db, pos);
	if (db->rec_dirty > pos)
		memset(rec + pos, 0, db->rec_dirty - pos);
	db->rec_dirty = pos;

	struct alex_rec r = { 0 };
	r.hdr_len = (uint32_t)hdr_len;
	r.cond_len = cond_len;
	r.rec_len = (uint32_t)rec_len;
	r.nblocks = k;
	r.epoch = db->hdr.epoch;
	r.lsn = db->next_lsn;
	r.txn = db->txn;
	/* no header can be rebuilt from a carried epoch's records (carry.c) */
	r.flags = flags | (alex_hdr_carried(&db->hdr) ? ALEX_REC_CARRY : 0);
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
int alex_stage_publish(alex_db *db, struct alex_map *target, uint64_t rec_off, uint32_t len,
		   uint32_t n)
{
	uint64_t pos = rec_off + db->staged_hdr_len;
	uint32_t at = db->staged_hdr_len;
	int err = 0;

	for (uint32_t i = 0; i < n; i++) {
		struct alex_entry e;
		alex_entry_decode(db->rec + ALEX_REC_FIXED + (size_t)i * ALEX_REC_ENTRY, &e);
		struct alex_loc l = { pos, e.stored_len, e.crc, alex_loc_flags(e.flags, db->txn),
				      (uint32_t)db->hdr.epoch };
		if (!err)
			err = alex_map_put(target, db->order[i].key, &l);
		if (target == &db->map) {
			/* the next commit's delta, and the next transaction's
			 * first read of page 1: no read, no decode for them */
			uint8_t **slot = alex_col_slot_ref(&db->col, db->order[i].slot);
			const uint8_t *img = *slot; /* the known cache's, once taken */
			uint32_t depth = e.flags == ALEX_BLK_DELTA ? alex_delta_depth(db->rec + at) : 0;
			if (alex_known_wanted(db))
				alex_known_take(db, db->order[i].key, &l, slot, depth);
			if (db->order[i].key == alex_key(ALEX_FILE_DB, 0))
				alex_page1_keep(db, &l, img, ALEX_P1_HEAD);
		}
		pos += e.stored_len;
		at += e.stored_len;
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
	db->st.log_used = db->append_off - alex_data_off(db);
	/* a map that cannot grow loses track of blocks: stop writing */
	if (err)
		db->failed = 1;
	return err;
}
