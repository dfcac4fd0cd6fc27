/*
 * open.c - an engine's life: its configuration, opening (the base files,
 * the log, recovery, the base's mark), closing, and what it reports.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"
#include "codec.h"
#include "dbg.h"
#include "engine.h"
#include "io_over.h"
#include "known.h"
#include "log.h"
#include "log_xts.h"
#include "protect.h"
#include "recover.h"
#include "shm.h"

#define MIN_MEMORY (64u << 10)
#define MAX_MEMORY (1024u << 20)
/* what one collector slot costs: the slot, its share of the record buffer
 * (packed payload, worst case raw), its table entry, index, order, key
 * and pointer */
#define SLOT_COST (2u * ALEX_BLOCK + 128u)

static const char *const file_suffix[ALEX_NFILES] = { "", "-journal", "-wal" };

void alex_config_default(struct alex_config *cfg)
{
	memset(cfg, 0, sizeof *cfg); /* every later field defaults to 0 */
	cfg->sync = ALEX_SYNC_FULL;
	cfg->compress = ALEX_COMPRESS_AUTO;
	cfg->compress_min_saving_pct = 10;
	cfg->memory_bytes = 16u << 20;
	/* the longest a commit waits for zeros: a 1 MiB step was the slowest
	 * FULL insert, ~1.1 ms, once in a log's life (log_space.c) */
	cfg->prealloc_bytes = 256u << 10;
	cfg->checkpoint_bytes = 64u << 20;
	cfg->sync_ms = 100;
	cfg->extent_bytes = 1u << 20;
	cfg->checkpoint_on_close = 1;
	cfg->protect_base = 1;
	cfg->remove_log = 0;
	cfg->crypt_buffer_bytes = 64u << 10;
	cfg->direct = 1;
	cfg->ckpt_direct = 1;
	cfg->ckpt_carry = 1;
	cfg->base_deltas = 1;
}

static int config_ok(const struct alex_config *c)
{
	return c->sync <= ALEX_SYNC_OFF && c->compress <= ALEX_COMPRESS_OFF &&
	       c->compress_min_saving_pct <= 90 && c->memory_bytes >= MIN_MEMORY &&
	       c->memory_bytes <= MAX_MEMORY && c->prealloc_bytes >= ALEX_BLOCK &&
	       c->prealloc_bytes % ALEX_BLOCK == 0 && c->checkpoint_bytes >= ALEX_BLOCK &&
	       (!c->log_suffix || (*c->log_suffix && !strchr(c->log_suffix, '/')));
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

	if (db->base_dfd >= 0 && db->base_dfd != db->base_fd[ALEX_FILE_DB])
		o->close(db->io.ctx, db->base_dfd);
	for (int f = 0; f < ALEX_NFILES; f++) {
		if (db->base_fd[f] >= 0)
			o->close(db->io.ctx, db->base_fd[f]);
		free(db->path[f]);
	}
	alex_log_drop(db);
	alex_sync_forget(db); /* a caller's sync cannot outlive the engine */
	free(db->log_path);
	free(db->shm_path);
	alex_map_free(&db->map);
	alex_map_free(&db->pending);
	free(db->doubt);
	/* the collector and the known cache exchange buffers (known.h):
	 * freed here together, each its own allocations, and never apart */
	alex_col_free(&db->col);
	free(db->rec);
	free(db->scratch);
	free(db->p1.img);
	free(db->order);
	alex_codec_free(db);
	alex_known_free(db);
	alex_log_xts_free(db);
	alex_xts_io_free(db->xio);
	alex_xts_free(db->xts);
	free(db);
}

/* Is the database file encrypted with the key (or empty)?  Checked on
 * the stored bytes before any is read through the layer; without a key
 * the marker is refused by alex_protect_probe, in the header read it makes
 * anyway. */
static int key_matches(alex_db *db)
{
	uint8_t head[ALEX_XTS_MARKER], kcv[ALEX_KCV_BYTES];
	size_t got = 0;
	int err;

	if (!db->xts || db->base_fd[ALEX_FILE_DB] < 0)
		return 0;
	if ((err = db->io_plain.ops->pread(db->io_plain.ctx, db->base_fd[ALEX_FILE_DB], head,
					   sizeof head, 0, &got)))
		return err;
	if ((err = alex_xts_kcv(db->xts, kcv)))
		return err;
	enum alex_xts_probe p = alex_xts_probe(head, got, kcv);
	if (!got || p == ALEX_XTS_OURS)
		return 0;
	return p == ALEX_XTS_OTHER ? ALEX_EKEY : ALEX_EPLAIN;
}

/* Opens the base files that exist (once) and takes their sizes. */
int alex_bases_open(alex_db *db)
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
			int flags = db->cfg.readonly ? ALEX_O_RDONLY
					  : f == ALEX_FILE_DB ? ALEX_O_CREAT : 0;
			if (db->base_fd[f] < 0) {
				if ((err = o->open(db->io.ctx, db->path[f], flags, &db->base_fd[f])))
					return err;
				/* before the first byte is read through the key */
				if (f == ALEX_FILE_DB && (err = key_matches(db)))
					return err;
			}
			if ((err = o->size(db->io.ctx, db->base_fd[f], &size)))
				return err;
			if (f == ALEX_FILE_DB && (err = alex_protect_probe(db, &size)))
				return err;
		}
		db->size[f] = db->csize[f] = size;
		db->limit[f] = db->climit[f] = size;
		db->trunc[f] = db->txn_cut[f] = ALEX_NO_TRUNC;
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
	db->io = db->io_plain = io ? *io : alex_io_posix;
	db->log_fd = -1;
	db->log_dfd = -1;
	db->base_dfd = -1;
	for (int f = 0; f < ALEX_NFILES; f++)
		db->base_fd[f] = -1;
	if (cfg)
		db->cfg = *cfg;
	else
		alex_config_default(&db->cfg);
	/* a staging engine's log is not encrypted through a layer that would
	 * hide its base's point (docs/STAGING.md) */
	if (!config_ok(&db->cfg) || (db->cfg.key && db->io.ops->ident)) {
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
	db->log_path = join(db_path, db->cfg.log_suffix ? db->cfg.log_suffix : "-alex");
	db->shm_path = db->log_path ? join(db->log_path, "-shm") : NULL;
	db->cfg.log_suffix = NULL; /* the caller's string is not kept */
	db->scratch = aligned_alloc(ALEX_BLOCK, 2 * ALEX_BLOCK);
	db->p1.img = aligned_alloc(ALEX_BLOCK, ALEX_BLOCK);
	db->order = malloc(slots * sizeof *db->order);
	err = ALEX_ENOMEM;
	if (!db->path[0] || !db->path[1] || !db->path[2] || !db->log_path || !db->shm_path ||
	    !db->scratch ||
	    !db->p1.img ||
	    !db->order || alex_col_init(&db->col, (uint32_t)slots) ||
	    alex_map_init(&db->map, 16) || alex_map_init(&db->pending, 16))
		goto fail;
	db->nonce = alex_random32();
	if (db->cfg.key) {
		/* every byte of the database file through the layer; the log's
		 * own parts are encrypted where they are made (log_xts.c) */
		if (alex_xts_new(db->cfg.key, &db->xts) ||
		    alex_xts_io_new(&db->io_plain, db->xts, db_path, db->cfg.crypt_buffer_bytes,
				    &db->xio))
			goto fail;
		db->io = alex_xts_io(db->xio);
	}
	struct alex_shm_look look;
	if (db->cfg.readonly) {
		/* nothing of its own to give back, and no right to */
		db->cfg.checkpoint_on_close = 0;
		db->cfg.remove_log = 0;
		db->cfg.exclusive = 0;
	}
	db->rec_locked = db->cfg.exclusive;
	/* a close removing the log meanwhile: see alex_protect_orphaned */
	for (int look = 0;; look++) {
		if ((err = alex_bases_open(db)) || (err = alex_log_open(db)))
			goto fail;
		if ((err = alex_protect_orphaned(db)) != ALEX_ERACED)
			break;
		if (look == 8) {
			err = ALEX_EINUSE;
			break;
		}
	}
	if (err)
		goto fail;
	alex_shm_look_begin(db, &look);
	if ((err = alex_recover(db)) || (err = alex_protect_check_base(db)))
		goto fail;
	/* a reader without the counter cannot tell a record being written
	 * from a damaged one: only its owners report damage (review) */
	db->st.open_raced = alex_shm_moved(db, &look) || (db->cfg.readonly && db->log_fd >= 0);
	DBGS(db, "open", "");
	for (int f = 0; f < ALEX_NFILES; f++) {
		db->size[f] = db->csize[f];
		db->limit[f] = db->climit[f];
	}
	/* A staging log recovered with commits: the engine below keeps its
	 * fence on until they are merged.  Held, not written: an open holds
	 * none of SQLite's locks, and prepare writes below's header and the
	 * mark into page 1, over a checkpoint another process may be making
	 * (page 1 read before its copy, bytes 19..91 written back after it:
	 * a corrupt database; review).  The writer of those commits fenced
	 * below before the first of them (and a staging log is synced only
	 * after below's fence and log: alex_stage_sync); this engine's own
	 * next record prepares again, under SQLite's write lock. */
	alex_db *below = alex_io_over_below(db);
	if (below && db->epoch_commits)
		below->above_holds = 1;
	/* A format-1 epoch is not fenced: a crash inside its checkpoint could
	 * leave the base unmarked while the log still holds newer pages. */
	if (db->epoch_commits && !(db->hdr.flags & ALEX_HDR_FENCED) && !db->cfg.readonly &&
	    db->mark.kind == ALEX_MARK_NONE && (err = alex_protect_mark(db, 0)))
		goto fail;
	*out = db;
	return 0;
fail:
	free_db(db);
	return err;
}

int alex_db_fd(const alex_db *db)
{
	return db->base_fd[ALEX_FILE_DB];
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
	if (alex_stage_unmerged(db))
		return 0; /* a staging log may hold commits it names (ckpt.c) */
	return !db->failed && !db->above_holds && !db->epoch_commits && !alex_txn_open(db) &&
	       !db->pending.n && !db->doubt && !db->cond_open &&
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
	st->log_used = db->append_off - alex_data_off(db);
	st->mem_buffers = alex_col_bytes(&db->col) + db->rec_cap + 2 * ALEX_BLOCK +
			  (uint64_t)db->col.max * sizeof *db->order;
	st->mem_maps = alex_map_bytes(&db->map) + alex_map_bytes(&db->pending);
}
