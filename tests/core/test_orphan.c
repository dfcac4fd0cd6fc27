/* A database and its log go together (protect.c).  A fenced database file
 * with no log beside it -- the log moved away, or the file moved away from
 * it -- holds only its last checkpoint: it is refused (ALEX_EORPHAN) at
 * open and at a catch-up, and reads again once the log is back; orphan_ok
 * (alex recover) opens it as of that checkpoint.  A last close that
 * removes its log unmarks the file durably first, so no crash after the
 * removal leaves a fence with no log. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "helpers.h"

#define AWAY "/mem/elsewhere"

static alex_mem *mem;
static struct alex_io io, hooked; /* hooked: io with some calls wrapped */
static struct alex_io_ops hops;
static struct alex_config cfg;
static uint8_t page1[BLK];

static void setup(void)
{
	mem = alex_mem_new();
	io = alex_mem_io(mem);
	hops = *io.ops;
	hooked.ops = &hops;
	hooked.ctx = io.ctx;
	small_config(&cfg);
	sqlite_like_file(mem, page1);
}
static void teardown(void)
{
	alex_mem_free(mem);
}
TestSuite(orphan, .init = setup, .fini = teardown);

/* Block 1 of the database as db reads it: all v? */
static int block1_is(alex_db *db, uint8_t v)
{
	static uint8_t r[BLK];
	size_t got;

	if (alex_read(db, ALEX_FILE_DB, r, BLK, BLK, &got) || got != BLK)
		return 0;
	for (unsigned i = 0; i < BLK; i++)
		if (r[i] != v)
			return 0;
	return 1;
}

/* A commit of v in the log, not checkpointed: the file is fenced. */
static void commit_in_log(uint8_t v)
{
	alex_db *db = open_engine(&cfg, &io);
	sqlite_like_commit(db, page1, v);
	alex_close(db); /* checkpoint_on_close 0 (small_config) */
	size_t len;
	const uint8_t *base = alex_mem_get(mem, DB, &len);
	cr_assert_eq(base[19], 0xa1, "the file carries the mark");
}

Test(orphan, log_moved_away_is_refused_and_put_back_opens)
{
	alex_db *db;

	commit_in_log(0x5a);
	cr_assert_eq(io.ops->rename(io.ctx, LOG, AWAY, 0), 0);
	cr_expect_eq(alex_open(DB, &cfg, &io, &db), ALEX_EORPHAN);
	struct alex_config ro = cfg;
	ro.readonly = 1;
	cr_expect_eq(alex_open(DB, &ro, &io, &db), ALEX_EORPHAN, "a reader too");
	cr_assert_eq(io.ops->rename(io.ctx, AWAY, LOG, 0), 0);
	db = open_engine(&cfg, &io);
	cr_expect(block1_is(db, 0x5a), "the log's commit reads again");
	alex_close(db);
}

Test(orphan, orphan_ok_opens_as_of_the_last_checkpoint_and_clears_the_mark)
{
	alex_db *db;
	size_t len;

	commit_in_log(0x5a);
	cr_assert_eq(io.ops->unlink(io.ctx, LOG), 0);
	cfg.orphan_ok = 1;
	db = open_engine(&cfg, &io);
	cr_expect(block1_is(db, 0x11), "the file's own block: its last checkpoint");
	cr_assert_eq(alex_checkpoint(db), 0);
	alex_close(db);
	const uint8_t *base = alex_mem_get(mem, DB, &len);
	cr_expect_arr_eq(base, page1, 100, "the true header, unmarked");
	cfg.orphan_ok = 0;
	db = open_engine(&cfg, &io);
	alex_close(db);
}

/* Another engine's view: it found no log, then one was made, fenced and
 * taken away.  Its next catch-up is refused, until the log is back. */
Test(orphan, catch_up_refuses_a_log_gone)
{
	alex_db *reader = open_engine(&cfg, &io), *writer;

	cr_assert_eq(alex_refresh(reader, 1), 0);
	writer = open_engine(&cfg, &io);
	sqlite_like_commit(writer, page1, 0x77);
	cr_assert_eq(io.ops->rename(io.ctx, LOG, AWAY, 0), 0);
	cr_expect_eq(alex_refresh(reader, 1), ALEX_EORPHAN);
	cr_assert_eq(io.ops->rename(io.ctx, AWAY, LOG, 0), 0);
	cr_assert_eq(alex_refresh(reader, 1), 0);
	cr_expect(block1_is(reader, 0x77), "the writer's commit");
	alex_close(writer);
	alex_close(reader);
}

/* Every crash image of a last close that checkpoints and removes the log,
 * and the disk as the power would leave it after the close, open with the
 * last commit -- never a fence whose log is gone. */
Test(orphan, no_crash_around_a_removal_leaves_a_fence_without_its_log)
{
	cfg.remove_log = 1;
	cfg.checkpoint_on_close = 1;
	alex_db *db = open_engine(&cfg, &io);
	sqlite_like_commit(db, page1, 0x31);
	sqlite_like_commit(db, page1, 0x32);
	struct cuts cuts = { mem, calloc(4096, sizeof(alex_mem *)), 0, 4096 };
	cr_assert_eq(alex_sync(db), 0);
	alex_mem_on_op(mem, cut_every_io, &cuts);
	alex_close(db);
	alex_mem_on_op(mem, NULL, NULL);
	cr_assert_gt(cuts.n, 4, "images: %zu", cuts.n);
	cr_assert(cuts.n < cuts.cap);
	cuts.img[cuts.n++] = alex_mem_crash(mem, ALEX_CRASH_LOSE, 0);
	size_t len;
	cr_assert_null(alex_mem_get(mem, LOG, &len), "the close removed the log");
	for (size_t i = 0; i < cuts.n; i++) {
		struct alex_io cio = alex_mem_io(cuts.img[i]);
		alex_db *d2;
		int rc = alex_open(DB, &cfg, &cio, &d2);
		cr_assert_eq(rc, 0, "image %zu of %zu: %s", i, cuts.n, alex_strerror(rc));
		cr_expect(block1_is(d2, 0x32), "image %zu: the last commit", i);
		alex_close(d2);
		alex_mem_free(cuts.img[i]);
	}
	free(cuts.img);
}

/* Another process makes its log and commits between a catch-up's look for
 * the log (none) and its read of the file's mark (review: a false orphan,
 * and the reader's close then took the live fence off). */
static alex_db *writer;
static int made_between;
static int exists_then_commit(void *ctx, const char *path, int *yes)
{
	int err = io.ops->exists(ctx, path, yes);
	if (!err && made_between && strcmp(path, LOG) == 0 && !*yes) {
		made_between = 0;
		writer = open_engine(&cfg, &io);
		sqlite_like_commit(writer, page1, 0x77);
	}
	return err;
}

Test(orphan, catch_up_racing_a_new_log_is_no_orphan)
{
	hops.exists = exists_then_commit;
	struct alex_config rcfg = cfg;
	rcfg.checkpoint_on_close = 1;
	alex_db *reader = open_engine(&rcfg, &hooked);
	made_between = 1;
	int rc = alex_refresh(reader, 1);
	cr_assert_not_null(writer, "the writer ran inside the catch-up");
	cr_expect_eq(rc, 0, "%s", alex_strerror(rc));
	cr_expect(block1_is(reader, 0x77), "the writer's commit");
	alex_close(reader); /* its close may checkpoint the writer's commit */
	alex_db *other = open_engine(&cfg, &io);
	cr_expect(block1_is(other, 0x77), "the writer's commit, through another engine");
	alex_close(other);
	alex_close(writer);
}

/* A catch-up refused, then the engine's close (checkpoint_on_close): the
 * gone log's fence stays on, and its commit counts once it is back. */
Test(orphan, close_after_a_refused_catch_up_keeps_the_fence)
{
	struct alex_config rcfg = cfg;
	rcfg.checkpoint_on_close = 1;
	alex_db *reader = open_engine(&rcfg, &io);
	cr_assert_eq(alex_refresh(reader, 1), 0);
	commit_in_log(0x77);
	cr_assert_eq(io.ops->rename(io.ctx, LOG, AWAY, 0), 0);
	cr_expect_eq(alex_refresh(reader, 1), ALEX_EORPHAN);
	cr_expect_eq(alex_checkpoint(reader), ALEX_EORPHAN, "no checkpoint takes it off");
	alex_close(reader);
	size_t len;
	cr_expect_eq(alex_mem_get(mem, DB, &len)[19], 0xa1);
	cr_assert_eq(io.ops->rename(io.ctx, AWAY, LOG, 0), 0);
	alex_db *db = open_engine(&cfg, &io);
	cr_expect(block1_is(db, 0x77));
	alex_close(db);
}

/* The opener read the fence; the last close removed the log before the
 * opener looked for it: a second look, and it opens. */
static alex_db *closer;
static int open_after_close(void *ctx, const char *path, int flags, int *fd)
{
	if (closer && strcmp(path, LOG) == 0) {
		alex_db *c = closer;
		closer = NULL;
		alex_close(c);
	}
	return io.ops->open(ctx, path, flags, fd);
}

Test(orphan, open_racing_a_removing_close_opens)
{
	struct alex_config c2 = cfg;
	c2.remove_log = 1;
	c2.checkpoint_on_close = 1;
	closer = open_engine(&c2, &io);
	sqlite_like_commit(closer, page1, 0x44);
	hops.open = open_after_close;
	alex_db *db = open_engine(&cfg, &hooked);
	cr_expect_null(closer, "the close ran inside the open");
	size_t len;
	cr_expect_null(alex_mem_get(mem, LOG, &len), "the log was removed");
	cr_expect(block1_is(db, 0x44));
	alex_close(db);
}

/* A new log's directory sync fails, and so does the next sync of the
 * database file: the log is still taken back (it has no mark to settle),
 * and the retried commit survives a power cut that loses the directory's
 * unsynced names (review). */
static int fail_dir, fail_sync, base_fd = -1;
static int dir_sync_fails(void *ctx, const char *path)
{
	if (fail_dir) {
		fail_dir = 0;
		fail_sync = 1;
		return EIO;
	}
	return io.ops->sync_dir(ctx, path);
}
static int then_a_sync_fails(void *ctx, int fd)
{
	if (fail_sync && fd == base_fd) {
		fail_sync = 0;
		return EIO;
	}
	return io.ops->fdatasync(ctx, fd);
}

Test(orphan, failed_directory_sync_takes_the_new_log_back)
{
	static uint8_t b[BLK];
	size_t len;

	hops.sync_dir = dir_sync_fails;
	hops.fdatasync = then_a_sync_fails;
	alex_db *w = open_engine(&cfg, &hooked);
	base_fd = alex_db_fd(w);
	fail_dir = 1;
	memset(b, 0x66, BLK);
	cr_assert_eq(alex_write(w, ALEX_FILE_DB, b, BLK, BLK), 0);
	page1[200] = 0x66;
	cr_assert_eq(alex_write(w, ALEX_FILE_DB, page1, BLK, 0), 0);
	cr_expect_neq(alex_commit(w), 0, "the directory's sync failed");
	cr_expect_null(alex_mem_get(mem, LOG, &len), "the log is taken back");
	int rc = alex_commit(w);
	cr_assert_eq(rc, 0, "the retry: %s", alex_strerror(rc));
	alex_mem *img = alex_mem_crash(mem, ALEX_CRASH_DIRS_LOST, 0);
	struct alex_io cio = alex_mem_io(img);
	alex_db *d2 = open_engine(&cfg, &cio);
	cr_expect(block1_is(d2, 0x66), "the acknowledged commit");
	alex_close(d2);
	alex_mem_free(img);
	alex_close(w);
}

/* A short process's whole life inside a catch-up: its log made and fenced
 * after the catch-up found none, and removed (settled) before the orphan
 * check's own look.  Only the mark's second read tells (second review). */
static int step;
static alex_db *shorty;
static int exists_life(void *ctx, const char *path, int *yes)
{
	if (strcmp(path, LOG) == 0 && step == 1) {
		int err = io.ops->exists(ctx, path, yes);
		struct alex_config sc = cfg;
		step = 2;
		sc.remove_log = 1;
		sc.checkpoint_on_close = 1;
		shorty = open_engine(&sc, &io);
		sqlite_like_commit(shorty, page1, 0x66);
		return err;
	}
	if (strcmp(path, LOG) == 0 && step == 2) {
		step = 3;
		alex_close(shorty);
	}
	return io.ops->exists(ctx, path, yes);
}

Test(orphan, a_short_life_inside_a_catch_up_is_no_orphan)
{
	hops.exists = exists_life;
	alex_db *r = open_engine(&cfg, &hooked);
	step = 1;
	int rc = alex_refresh(r, 1);
	cr_expect_eq(step, 3, "both looks ran (step %d)", step);
	cr_expect_eq(rc, 0, "%s", alex_strerror(rc));
	cr_expect(block1_is(r, 0x66), "the short process's commit, checkpointed");
	alex_close(r);
}

/* A last close holding a stub (an empty file at the log's name) races a
 * maker that puts its new log in the stub's place and writes its first
 * record: the close's catch-up reopens the maker's log, and its lock on
 * the stub no longer keeps anyone out.  It must leave the maker's log and
 * fence alone (second review: it settled and unlinked them, and the
 * maker's acknowledged commit was gone).  Real files: an unlinked log
 * stays writable. */
static struct alex_io pio, phooked, mio;
static struct alex_io_ops phops, mops;
static int parmed;
static alex_db *pmaker;
static int stat_then_make(void *ctx, int fd, struct alex_finfo *fi)
{
	static uint8_t b[BLK];
	int err = pio.ops->stat(ctx, fd, fi);

	if (parmed && --parmed == 0) {
		for (uint32_t i = 1; i < 8; i++) {
			memset(b, 0x77, BLK);
			cr_assert_eq(alex_write(pmaker, ALEX_FILE_DB, b, BLK, (uint64_t)i * BLK), 0);
		}
		page1[200] = 0x77;
		cr_assert_eq(alex_write(pmaker, ALEX_FILE_DB, page1, BLK, 0), 0);
	}
	return err;
}
static int no_lock(void *ctx, int fd, uint64_t which, int mode)
{
	(void)ctx, (void)fd, (void)which, (void)mode;
	return 0;
}

static void stub_close_races_a_maker(int at)
{
	char dir[] = "/tmp/alex-orphan-XXXXXX", dbp[64], logp[80], cmd[96];
	static uint8_t d[8 * BLK], r[BLK];
	size_t got;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(dbp, sizeof dbp, "%s/t.db", dir);
	snprintf(logp, sizeof logp, "%s/t.db-alex", dir);
	memcpy(d, alex_mem_get(mem, DB, &got), sizeof d); /* sqlite_like_file's */
	FILE *f = fopen(dbp, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(d, 1, sizeof d, f), sizeof d);
	fclose(f);
	fclose(fopen(logp, "w")); /* the stub */
	pio = alex_io_posix;
	phops = *pio.ops;
	phops.stat = stat_then_make;
	phooked.ops = &phops;
	phooked.ctx = pio.ctx;
	mops = *pio.ops;
	mops.lock = no_lock; /* the maker's stub already let go */
	mio.ops = &mops;
	mio.ctx = pio.ctx;
	struct alex_config cc = cfg;
	cc.remove_log = 1;
	alex_db *c, *o;
	cr_assert_eq(alex_open(dbp, &cc, &phooked, &c), 0);
	cr_assert_eq(alex_open(dbp, &cfg, &mio, &pmaker), 0);
	parmed = at;
	alex_close(c);
	cr_assert_eq(parmed, 0, "the maker ran inside the close");
	cr_expect_eq(access(logp, F_OK), 0, "the maker's log is still there");
	int rc = alex_commit(pmaker);
	cr_expect_eq(rc, 0, "the maker's commit: %s", alex_strerror(rc));
	alex_close(pmaker);
	cr_assert_eq(alex_open(dbp, &cfg, &pio, &o), 0);
	cr_assert_eq(alex_read(o, ALEX_FILE_DB, r, BLK, BLK, &got), 0);
	cr_expect_eq(r[0], 0x77, "the maker's commit after its close: %02x", r[0]);
	alex_close(o);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

Test(orphan, a_close_holding_a_stub_leaves_a_makers_log_1) { stub_close_races_a_maker(1); }
Test(orphan, a_close_holding_a_stub_leaves_a_makers_log_2) { stub_close_races_a_maker(2); }

/* The file this engine has, renamed away while its log held nothing, then
 * written by another process through a log of its own (its fence on the
 * file), and the engine's close: its checkpoint must not take that fence
 * off -- the other log's commits would stop counting -- nor copy anything.
 * alex_base_is_ours says whether the file still carries this log's fence. */
Test(orphan, a_checkpoint_leaves_another_logs_fence)
{
	static uint8_t other[BLK];
	size_t len;

	alex_db *p = open_engine(&cfg, &io);
	sqlite_like_commit(p, page1, 0x21);
	cr_expect_eq(alex_base_is_ours(p), 1, "its own fence");
	cr_assert_eq(alex_checkpoint(p), 0); /* the log stays, holding nothing */
	memcpy(other, page1, BLK);
	other[40] ^= 1; /* another history: the schema cookie */
	memcpy(other + 92, other + 24, 4);
	foreign_mark(other, "another log ...", 9);
	cr_assert_eq(io.ops->pwrite(io.ctx, alex_db_fd(p), other, BLK, 0), 0);
	cr_assert_eq(alex_refresh(p, 1), 0);
	cr_expect_eq(alex_checkpoint(p), ALEX_EFOREIGN);
	cr_expect_arr_eq(alex_mem_get(mem, DB, &len), other, BLK, "the other log's fence stays");
	alex_close(p);
}

/* ... and with commits of its own in the log, the file carrying another
 * log's fence is not its to write (the close's check, serve.c). */
Test(orphan, a_file_with_another_logs_fence_is_not_ours)
{
	static uint8_t other[BLK];

	alex_db *p = open_engine(&cfg, &io);
	sqlite_like_commit(p, page1, 0x21);
	cr_expect_eq(alex_base_is_ours(p), 1);
	memcpy(other, page1, BLK);
	foreign_mark(other, "another log ...", 9);
	cr_assert_eq(io.ops->pwrite(io.ctx, alex_db_fd(p), other, BLK, 0), 0);
	cr_expect_eq(alex_base_is_ours(p), 0);
	alex_close(p);
}

/* The log moved while the engine holds it (libalex.so's rename of the
 * database takes it along), and another log made at its old name: the
 * engine's last close must not remove that one by the name (third
 * review: its commits were unlinked with it). */
Test(orphan, a_close_leaves_another_log_at_the_name)
{
	static const uint8_t theirs[] = "another engine's log, made at the name";
	size_t len;

	cfg.remove_log = 1;
	cfg.checkpoint_on_close = 1;
	alex_db *p = open_engine(&cfg, &io);
	sqlite_like_commit(p, page1, 0x21);
	cr_assert_eq(io.ops->rename(io.ctx, LOG, AWAY, 0), 0);
	cr_assert_eq(alex_mem_set(mem, LOG, theirs, sizeof theirs), 0);
	alex_close(p);
	const uint8_t *at = alex_mem_get(mem, LOG, &len);
	cr_assert_not_null(at, "the log at the name is still there");
	cr_expect_eq(len, sizeof theirs);
}
