/*
 * io_over.c - the staging engine's backend (io_over.h).  A base file of
 * the engine below is a handle above OVER_BASE: it reads and sizes
 * through the engine below and refuses every change (EROFS), since above
 * never checkpoints or marks it.  Every other file is files', with its
 * syncs dropped.
 */
#include "io_over.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "db.h"
#include "dbg.h"
#include "engine.h"
#include "log.h"

#define OVER_BASE (1 << 29) /* far above any descriptor or memory handle */

struct alex_io_over {
	alex_db *below;
	struct alex_io files;
	enum alex_sync below_sync; /* below's own mode, given back at the end */
};

static int base_of(const struct alex_io_over *c, int fd)
{
	(void)c;
	return fd >= OVER_BASE && fd < OVER_BASE + ALEX_NFILES ? fd - OVER_BASE : -1;
}

static int base_named(const struct alex_io_over *c, const char *path)
{
	for (int f = 0; f < ALEX_NFILES; f++)
		if (c->below->path[f] && strcmp(path, c->below->path[f]) == 0)
			return f;
	return -1;
}

static int o_open(void *ctx, const char *path, int flags, int *fd)
{
	struct alex_io_over *c = ctx;
	int f = base_named(c, path);

	if (f < 0)
		return c->files.ops->open(c->files.ctx, path, flags, fd);
	if (flags & ALEX_O_TRUNC)
		return EROFS;
	*fd = OVER_BASE + f;
	return 0;
}

static int o_close(void *ctx, int fd)
{
	struct alex_io_over *c = ctx;
	return base_of(c, fd) >= 0 ? 0 : c->files.ops->close(c->files.ctx, fd);
}

static int o_pread(void *ctx, int fd, void *buf, size_t n, uint64_t off, size_t *got)
{
	struct alex_io_over *c = ctx;
	int f = base_of(c, fd);

	if (f < 0)
		return c->files.ops->pread(c->files.ctx, fd, buf, n, off, got);
	return alex_read(c->below, (enum alex_file)f, buf, n, off, got);
}

static int o_pwrite(void *ctx, int fd, const void *buf, size_t n, uint64_t off)
{
	struct alex_io_over *c = ctx;
	if (base_of(c, fd) >= 0)
		return EROFS;
	return c->files.ops->pwrite(c->files.ctx, fd, buf, n, off);
}

/* Never synced: what a staging log holds is made durable by alex_merge. */
static int o_fdatasync(void *ctx, int fd)
{
	struct alex_io_over *c = ctx;
	return base_of(c, fd) >= 0 ? EROFS : 0;
}

static int o_write_out(void *ctx, int fd, uint64_t off, uint64_t n, int with)
{
	struct alex_io_over *c = ctx;
	(void)off, (void)n, (void)with;
	return base_of(c, fd) >= 0 ? EROFS : 0;
}

static int o_ftruncate(void *ctx, int fd, uint64_t size)
{
	struct alex_io_over *c = ctx;
	if (base_of(c, fd) >= 0)
		return EROFS;
	return c->files.ops->ftruncate(c->files.ctx, fd, size);
}

static int o_allocate(void *ctx, int fd, uint64_t off, uint64_t n)
{
	struct alex_io_over *c = ctx;
	if (base_of(c, fd) >= 0)
		return EROFS;
	if (!c->files.ops->allocate)
		return EOPNOTSUPP;
	return c->files.ops->allocate(c->files.ctx, fd, off, n);
}

static int o_size(void *ctx, int fd, uint64_t *size)
{
	struct alex_io_over *c = ctx;
	int f = base_of(c, fd);

	if (f < 0)
		return c->files.ops->size(c->files.ctx, fd, size);
	return alex_size(c->below, (enum alex_file)f, size);
}

/* A base file's owner and mode are the file's (a staging log is made with
 * them), its size the one below gives it. */
static int o_stat(void *ctx, int fd, struct alex_finfo *fi)
{
	struct alex_io_over *c = ctx;
	int f = base_of(c, fd), err;

	if (f < 0)
		return c->files.ops->stat(c->files.ctx, fd, fi);
	alex_db *b = c->below;
	if (b->base_fd[f] < 0)
		return ENOENT;
	if ((err = b->io_plain.ops->stat(b->io_plain.ctx, b->base_fd[f], fi)))
		return err;
	return alex_size(b, (enum alex_file)f, &fi->size);
}

static int o_own(void *ctx, int fd, const struct alex_finfo *like)
{
	struct alex_io_over *c = ctx;
	if (base_of(c, fd) >= 0)
		return EROFS;
	return c->files.ops->own(c->files.ctx, fd, like);
}

static int o_space(void *ctx, int fd, uint64_t *avail)
{
	struct alex_io_over *c = ctx;
	if (base_of(c, fd) >= 0)
		return EROFS;
	return c->files.ops->space(c->files.ctx, fd, avail);
}

static int o_stat_path(void *ctx, const char *path, struct alex_finfo *fi)
{
	struct alex_io_over *c = ctx;
	int f = base_named(c, path);

	if (f < 0)
		return c->files.ops->stat_path(c->files.ctx, path, fi);
	return c->below->base_fd[f] < 0 ? ENOENT : o_stat(ctx, c->below->base_fd[f], fi);
}

static int o_exists(void *ctx, const char *path, int *yes)
{
	struct alex_io_over *c = ctx;
	int f = base_named(c, path);

	if (f < 0)
		return c->files.ops->exists(c->files.ctx, path, yes);
	*yes = c->below->base_fd[f] >= 0;
	return 0;
}

static int o_rename(void *ctx, const char *from, const char *to, int noreplace)
{
	struct alex_io_over *c = ctx;
	if (base_named(c, from) >= 0 || base_named(c, to) >= 0)
		return EROFS;
	return c->files.ops->rename(c->files.ctx, from, to, noreplace);
}

static int o_unlink(void *ctx, const char *path)
{
	struct alex_io_over *c = ctx;
	if (base_named(c, path) >= 0)
		return EROFS;
	return c->files.ops->unlink(c->files.ctx, path);
}

static int o_sync_dir(void *ctx, const char *path)
{
	(void)ctx, (void)path;
	return 0;
}

static int o_lock(void *ctx, int fd, uint64_t byte, int mode)
{
	struct alex_io_over *c = ctx;
	if (base_of(c, fd) >= 0)
		return EROFS;
	return c->files.ops->lock(c->files.ctx, fd, byte, mode);
}

static int o_shm_map(void *ctx, const char *path, const struct alex_finfo *like,
		     int (*init)(void *region, void *arg, int may_change), void *arg,
		     void **region, uint32_t *wrote)
{
	struct alex_io_over *c = ctx;
	if (!c->files.ops->shm_map)
		return EOPNOTSUPP;
	return c->files.ops->shm_map(c->files.ctx, path, like, init, arg, region, wrote);
}

static void o_shm_unmap(void *ctx, void *region)
{
	struct alex_io_over *c = ctx;
	c->files.ops->shm_unmap(c->files.ctx, region);
}

/* Below's log and how far it goes: its uuid and the lsn its next record
 * takes (lsns run on across its epochs), or zeros without a log.  A merge
 * is a commit of below, so every merge moves it. */
static int o_ident(void *ctx, uint8_t out[ALEX_BASE_HDR])
{
	struct alex_io_over *c = ctx;
	alex_db *b = c->below;
	int err;

	/* below as it stands now, not as this process last looked: a merge
	 * may have come since (another process's drain holds only SHARED),
	 * and above's new epoch would look applied against an older point,
	 * its reads going back in time (review) */
	if ((err = alex_refresh(b, 0)))
		return err;
	memset(out, 0, ALEX_BASE_HDR);
	memcpy(out, "ALEXSTAGE", 9);
	DBGS(b, "ident", "");
	if (b->log_fd >= 0 && !b->log_stub) {
		memcpy(out + 16, b->hdr.uuid, 16);
		alex_put64(out + 32, b->next_lsn);
	}
	return 0;
}

/* Before a staging epoch's first record: below's epoch begun (and its
 * fence on the database), and its header saying STAGED, so that every
 * writer of this database -- another process that has it open without a
 * staging engine, an older ALEX -- knows to go through above. */
static int o_prepare(void *ctx)
{
	struct alex_io_over *c = ctx;
	alex_db *b = c->below;
	int err;

	b->above_holds = 1; /* until alex_merge: no checkpoint, no unmark */
	if (alex_txn_open(b))
		return ALEX_EBUSY;
	if ((err = alex_epoch_ensure(b)))
		return err;
	return alex_log_mark_staged(b);
}

static const struct alex_io_ops over_ops = {
	.open = o_open, .close = o_close, .pread = o_pread, .pwrite = o_pwrite,
	.fdatasync = o_fdatasync, .write_out = o_write_out, .ftruncate = o_ftruncate,
	.allocate = o_allocate, .size = o_size, .stat = o_stat, .own = o_own,
	.space = o_space, .exists = o_exists, .stat_path = o_stat_path, .rename = o_rename, .unlink = o_unlink,
	.sync_dir = o_sync_dir, .lock = o_lock, .shm_map = o_shm_map, .shm_unmap = o_shm_unmap,
	.ident = o_ident, .prepare = o_prepare,
};

int alex_io_over_new(alex_db *below, const struct alex_io *files, struct alex_io_over **out)
{
	struct alex_io_over *c;

	*out = NULL;
	if (!below)
		return ALEX_EINVAL;
	if (!(c = calloc(1, sizeof *c)))
		return ALEX_ENOMEM;
	c->below = below;
	c->files = files ? *files : alex_io_posix;
	/* a merge is durable when it returns: alex_stage_sync relies on it
	 * (a staging log synced names a point below that cannot go back) */
	c->below_sync = below->cfg.sync;
	below->cfg.sync = ALEX_SYNC_FULL;
	below->merged_windows = c->below_sync != ALEX_SYNC_FULL;
	below->above_attached = 1;
	*out = c;
	return 0;
}

struct alex_io alex_io_over(struct alex_io_over *o)
{
	struct alex_io io = { &over_ops, o };
	return io;
}

int alex_io_over_is(const alex_db *db)
{
	return db && db->io.ops == &over_ops;
}

alex_db *alex_io_over_below(const alex_db *above)
{
	return alex_io_over_is(above) ? ((struct alex_io_over *)above->io.ctx)->below : NULL;
}

int alex_stage_sync(alex_db *a)
{
	struct alex_io_over *c;
	int err;

	if (!alex_io_over_is(a))
		return ALEX_EINVAL;
	c = a->io.ctx;
	if (a->log_fd < 0 || a->log_stub)
		return 0;
	/* below first, as far as the point this log names: its log (made,
	 * or begun anew, by prepare, unsynced), its name, and the fence on
	 * the database file (review: a power cut left below's new log empty,
	 * and the synced staging log then named a point that never was) */
	alex_db *b = c->below;
	int fd = b->base_fd[ALEX_FILE_DB];
	if (fd >= 0 && (err = b->io.ops->fdatasync(b->io.ctx, fd)))
		return err;
	if (b->log_fd >= 0 && !b->log_stub &&
	    ((err = alex_log_sync(b)) || (err = b->io.ops->sync_dir(b->io.ctx, b->log_path))))
		return err;
	if ((err = c->files.ops->fdatasync(c->files.ctx, a->log_fd)))
		return err;
	a->st.syncs++;
	/* the log's name too: made at this engine's open, never synced */
	return c->files.ops->sync_dir(c->files.ctx, a->log_path);
}

void alex_io_over_free(struct alex_io_over *o)
{
	if (o) {
		o->below->cfg.sync = o->below_sync;
		o->below->merged_windows = 0;
		/* below may still end its epoch if above left nothing in it
		 * (the last close: merged, then below checkpoints) */
		o->below->above_attached = !o->below->above_holds;
	}
	free(o);
}

void alex_config_over(struct alex_config *cfg)
{
	cfg->log_suffix = "-alex-stage";
	cfg->protect_base = 0;
	cfg->checkpoint_on_close = 0;
	cfg->checkpoint_bytes = ~0ull >> 1;
	cfg->sync = ALEX_SYNC_OFF;
	cfg->db_only = 1;
	cfg->direct = 0;
	cfg->remove_log = 0;
	cfg->base_deltas = 0; /* its base is the engine below: a read is a lookup there */
}
