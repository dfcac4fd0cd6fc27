/* The memory file system the crash tests stand on (io_mem.c): plain file
 * semantics through the io table, and power cuts that lose, keep, tear or
 * reorder exactly the writes since each file's last fdatasync.  If these
 * were wrong, every power-loss test would test the wrong thing. */
#include <criterion/criterion.h>
#include <errno.h>

#include "helpers.h"

static alex_mem *mem, *img;
static struct alex_io io;
static const struct alex_io_ops *o;

static void setup(void)
{
	mem = alex_mem_new();
	cr_assert_not_null(mem);
	io = alex_mem_io(mem);
	o = io.ops;
}
static void teardown(void)
{
	alex_mem_free(img);
	alex_mem_free(mem);
}
TestSuite(io_mem, .init = setup, .fini = teardown);

static int mk(const char *path)
{
	int fd;
	cr_assert_eq(o->open(io.ctx, path, ALEX_O_CREAT, &fd), 0);
	return fd;
}

static void put(int fd, char c, size_t n, uint64_t off)
{
	uint8_t b[BLK];
	cr_assert_leq(n, sizeof b);
	memset(b, c, n);
	cr_assert_eq(o->pwrite(io.ctx, fd, b, n, off), 0);
}

/* The bytes of a file that has some (alex_mem_get gives NULL for an empty
 * file that never had a buffer: size_in below tells those apart). */
static const uint8_t *bytes(alex_mem *m, const char *path, size_t *len)
{
	const uint8_t *p = alex_mem_get(m, path, len);
	cr_assert_not_null(p, "%s missing", path);
	return p;
}

/* The size of path in a memory backend, asserting that it exists. */
static uint64_t size_in(alex_mem *m, const char *path)
{
	struct alex_io mi = alex_mem_io(m);
	uint64_t size;
	int fd;

	cr_assert_eq(mi.ops->open(mi.ctx, path, 0, &fd), 0, "%s missing", path);
	cr_assert_eq(mi.ops->size(mi.ctx, fd, &size), 0);
	return size;
}

/* Open, write, read back; reads past the end are short, not errors. */
Test(io_mem, files_read_what_was_written)
{
	uint8_t b[100];
	uint64_t size;
	size_t got;
	int fd;

	cr_expect_eq(o->open(io.ctx, DB, 0, &fd), ENOENT);
	fd = mk(DB);
	put(fd, 'a', 10, 5); /* a hole of 5 bytes first */
	cr_assert_eq(o->size(io.ctx, fd, &size), 0);
	cr_expect_eq(size, 15u);
	cr_assert_eq(o->pread(io.ctx, fd, b, sizeof b, 0, &got), 0);
	cr_expect_eq(got, 15u);
	cr_expect_arr_eq(b, "\0\0\0\0\0aaaaaaaaaa", 15);
	cr_assert_eq(o->pread(io.ctx, fd, b, 10, 15, &got), 0);
	cr_expect_eq(got, 0u);
	cr_expect_eq(o->pread(io.ctx, 99, b, 1, 0, &got), EBADF);
}

/* ALEX_CRASH_LOSE: what was synced survives, every later write and size
 * change of that file is gone -- per file, not globally. */
Test(io_mem, lose_keeps_only_synced_bytes)
{
	int a = mk(DB), l = mk(LOG);
	size_t len;

	put(a, 'x', 100, 0);
	put(l, 'L', 50, 0);
	cr_assert_eq(o->fdatasync(io.ctx, a), 0);
	put(a, 'y', 10, 20);   /* overwrite: old bytes come back */
	put(a, 'z', 10, 200);  /* extension: the file shrinks back */
	cr_assert_eq(o->ftruncate(io.ctx, a, 150), 0);
	img = alex_mem_crash(mem, ALEX_CRASH_LOSE, 1);
	cr_assert_not_null(img);
	const uint8_t *p = bytes(img, DB, &len);
	cr_assert_eq(len, 100u);
	for (size_t i = 0; i < len; i++)
		cr_assert_eq(p[i], 'x', "byte %zu", i);
	cr_expect_eq(size_in(img, LOG), 0u, "the log was never synced");
}

/* ALEX_CRASH_KEEP: everything written reached the disk. */
Test(io_mem, keep_keeps_everything)
{
	int a = mk(DB);
	size_t len, mlen;

	put(a, 'x', 100, 0);
	cr_assert_eq(o->fdatasync(io.ctx, a), 0);
	put(a, 'y', 10, 20);
	put(a, 'z', 10, 200);
	img = alex_mem_crash(mem, ALEX_CRASH_KEEP, 1);
	const uint8_t *p = bytes(img, DB, &len), *q = bytes(mem, DB, &mlen);
	cr_assert_eq(len, 210u);
	cr_expect_arr_eq(p, q, len);
}

/* A synced truncation stays; an unsynced one is undone, bytes and all. */
Test(io_mem, unsynced_truncate_is_undone)
{
	int a = mk(DB);
	size_t len;

	put(a, 'x', 300, 0);
	cr_assert_eq(o->ftruncate(io.ctx, a, 200), 0);
	cr_assert_eq(o->fdatasync(io.ctx, a), 0);
	cr_assert_eq(o->ftruncate(io.ctx, a, 10), 0);
	img = alex_mem_crash(mem, ALEX_CRASH_LOSE, 1);
	const uint8_t *p = bytes(img, DB, &len);
	cr_assert_eq(len, 200u);
	for (size_t i = 0; i < len; i++)
		cr_assert_eq(p[i], 'x', "byte %zu", i);
}

/* A torn write: the newest unsynced write is cut after exactly `cut`
 * bytes; earlier unsynced writes are kept; over old bytes the rest is old,
 * past the old end it is zeros. */
Test(io_mem, tear_cuts_the_newest_write)
{
	int a = mk(DB);
	size_t len;

	put(a, 'o', 100, 0);
	cr_assert_eq(o->fdatasync(io.ctx, a), 0);
	put(a, 'k', 10, 0);    /* unsynced, older: kept */
	put(a, 'n', 100, 50);  /* newest: 50 bytes over old, 50 past the end */
	for (uint64_t cut = 0; cut <= 100; cut += 25) {
		img = alex_mem_crash_cut(mem, cut);
		const uint8_t *p = bytes(img, DB, &len);
		cr_assert_eq(len, 150u, "cut %llu", (unsigned long long)cut);
		for (size_t i = 0; i < 150; i++) {
			uint8_t want = i < 10 ? 'k' : i < 50 ? 'o'
				       : i < 50 + cut ? 'n' : i < 100 ? 'o' : 0;
			cr_assert_eq(p[i], want, "cut %llu byte %zu", (unsigned long long)cut, i);
		}
		alex_mem_free(img);
		img = NULL;
	}
}

/* ALEX_CRASH_SUBSET: each unsynced write is lost, kept, or kept in part
 * -- any subset of its 512-byte sectors.  One 8-sector write: every
 * sector of every image is wholly old or wholly new, and over seeds all
 * three outcomes show up. */
Test(io_mem, subset_keeps_any_sectors_of_a_write)
{
	uint8_t w[BLK];
	int a = mk(DB), lost = 0, whole = 0, part = 0;
	size_t len;

	put(a, 'o', BLK, 0);
	cr_assert_eq(o->fdatasync(io.ctx, a), 0);
	for (unsigned i = 0; i < BLK; i++)
		w[i] = (uint8_t)('A' + i / 512);
	cr_assert_eq(o->pwrite(io.ctx, a, w, BLK, 0), 0);
	for (uint64_t seed = 1; seed <= 60; seed++) {
		unsigned kept = 0;
		img = alex_mem_crash(mem, ALEX_CRASH_SUBSET, seed);
		const uint8_t *p = bytes(img, DB, &len);
		cr_assert_eq(len, BLK);
		for (unsigned s = 0; s < 8; s++) {
			uint8_t c = p[s * 512];
			cr_assert(c == 'o' || c == 'A' + s, "seed %llu sector %u holds %c",
				  (unsigned long long)seed, s, c);
			for (unsigned i = 1; i < 512; i++)
				cr_assert_eq(p[s * 512 + i], c, "sector %u is mixed", s);
			kept += c != 'o';
		}
		lost += kept == 0;
		whole += kept == 8;
		part += kept && kept < 8;
		alex_mem_free(img);
		img = NULL;
	}
	cr_expect(lost && whole && part, "lost %d, whole %d, in part %d of 60", lost, whole,
		  part);
}

/* A crash image is a copy: changing it leaves the original alone. */
Test(io_mem, crash_image_is_independent)
{
	int a = mk(DB), fd;
	size_t len;

	put(a, 'x', 64, 0);
	cr_assert_eq(o->fdatasync(io.ctx, a), 0);
	img = alex_mem_crash(mem, ALEX_CRASH_LOSE, 1);
	struct alex_io ii = alex_mem_io(img);
	cr_assert_eq(ii.ops->open(ii.ctx, DB, 0, &fd), 0);
	cr_assert_eq(ii.ops->pwrite(ii.ctx, fd, "yy", 2, 0), 0);
	const uint8_t *p = bytes(mem, DB, &len);
	cr_expect_eq(p[0], 'x');
}

/* O_TRUNC at open and file creation are durable at once, like metadata. */
Test(io_mem, trunc_at_open_is_durable)
{
	int a = mk(DB);

	put(a, 'x', 64, 0);
	cr_assert_eq(o->fdatasync(io.ctx, a), 0);
	cr_assert_eq(o->open(io.ctx, DB, ALEX_O_TRUNC, &a), 0);
	mk(LOG);
	img = alex_mem_crash(mem, ALEX_CRASH_LOSE, 1);
	cr_expect_eq(size_in(img, DB), 0u);
	cr_expect_eq(size_in(img, LOG), 0u); /* created, never written: still there */
}

/* Only writes, syncs and truncations count as operations; the op-th one
 * of a kind in the mask fails with the error and changes nothing, and the
 * hook sees every successful one. */
struct seen {
	uint64_t op[8];
	enum alex_mem_op kind[8];
	int n;
};
static void hook(void *arg, uint64_t op, enum alex_mem_op kind, int fd)
{
	struct seen *s = arg;
	(void)fd;
	if (s->n < 8) {
		s->op[s->n] = op;
		s->kind[s->n++] = kind;
	}
}

Test(io_mem, fault_injection_and_op_counting)
{
	struct seen s = { .n = 0 };
	uint8_t b[4];
	size_t got, len;
	int a = mk(DB);

	alex_mem_on_op(mem, hook, &s);
	put(a, 'x', 4, 0);                                  /* op 1 */
	cr_assert_eq(o->pread(io.ctx, a, b, 4, 0, &got), 0); /* not counted */
	cr_expect_eq(alex_mem_ops(mem), 1u);
	alex_mem_fail_at(mem, 2, ALEX_MEM_SYNC, EIO);
	cr_expect_eq(o->fdatasync(io.ctx, a), EIO);         /* op 2: fails */
	alex_mem_fail_at(mem, 3, ALEX_MEM_SYNC, EIO);       /* a write is not a sync */
	put(a, 'y', 4, 0);                                  /* op 3 */
	alex_mem_fail_at(mem, 4, ALEX_MEM_WRITE | ALEX_MEM_TRUNC, ENOSPC);
	cr_expect_eq(o->ftruncate(io.ctx, a, 0), ENOSPC);   /* op 4: fails */
	cr_expect_eq(alex_mem_ops(mem), 4u);
	const uint8_t *p = bytes(mem, DB, &len);
	cr_expect_eq(len, 4u, "the failed truncate changed the size");
	cr_expect_eq(p[0], 'y');
	/* the failed sync synced nothing: a cut loses both writes */
	img = alex_mem_crash(mem, ALEX_CRASH_LOSE, 1);
	cr_expect_eq(size_in(img, DB), 0u);
	cr_assert_eq(s.n, 2, "the hook sees successes only");
	cr_expect_eq(s.op[0], 1u);
	cr_expect_eq(s.kind[0], ALEX_MEM_WRITE);
	cr_expect_eq(s.op[1], 3u);
}

/* A file past the limit fails with EFBIG; the disk's total with ENOSPC,
 * and space() says how much is left. */
Test(io_mem, file_limit_and_full_disk)
{
	int a = mk(DB), b = mk(LOG);
	uint64_t avail;

	alex_mem_limit(mem, 1000);
	cr_expect_eq(o->pwrite(io.ctx, a, "x", 1, 1000), EFBIG);
	cr_expect_eq(o->ftruncate(io.ctx, a, 1001), EFBIG);
	cr_expect_eq(o->pwrite(io.ctx, a, "x", 1, 999), 0);
	alex_mem_disk(mem, 1500);
	cr_assert_eq(o->space(io.ctx, b, &avail), 0);
	cr_expect_eq(avail, 500u);
	cr_expect_eq(o->ftruncate(io.ctx, b, 501), ENOSPC);
	cr_expect_eq(o->ftruncate(io.ctx, b, 500), 0);
	cr_assert_eq(o->space(io.ctx, b, &avail), 0);
	cr_expect_eq(avail, 0u);
	/* overwriting in place needs no space */
	cr_expect_eq(o->pwrite(io.ctx, b, "y", 1, 0), 0);
	cr_expect_eq(o->pwrite(io.ctx, b, "y", 1, 500), ENOSPC);
}

/* Directory operations: rename with and without replacing, unlink; the
 * handle of a removed file is dead. */
Test(io_mem, rename_unlink_exists)
{
	int a = mk(DB), b = mk(LOG), yes;
	uint64_t size;
	size_t len;

	put(a, 'a', 3, 0);
	put(b, 'b', 5, 0);
	cr_expect_eq(o->rename(io.ctx, DB, LOG, 1), EEXIST);
	cr_expect_eq(o->rename(io.ctx, "/mem/none", LOG, 0), ENOENT);
	cr_assert_eq(o->rename(io.ctx, DB, LOG, 0), 0);
	cr_assert_eq(o->exists(io.ctx, DB, &yes), 0);
	cr_expect_eq(yes, 0);
	cr_expect_eq(bytes(mem, LOG, &len)[0], 'a');
	cr_expect_eq(len, 3u);
	cr_expect_eq(o->size(io.ctx, b, &size), EBADF, "the replaced file's handle");
	cr_assert_eq(o->unlink(io.ctx, LOG), 0);
	cr_expect_eq(o->unlink(io.ctx, LOG), ENOENT);
	cr_expect_eq(o->pwrite(io.ctx, a, "x", 1, 0), EBADF);
}

/* Untracked (benchmarks): no undo records, so a cut keeps every write. */
Test(io_mem, untracked_writes_all_survive)
{
	int a = mk(DB);

	alex_mem_untracked(mem);
	put(a, 'x', 100, 0);
	img = alex_mem_crash(mem, ALEX_CRASH_LOSE, 1);
	cr_expect_eq(size_in(img, DB), 100u);
}

static int exists_in(alex_mem *m, const char *path)
{
	struct alex_io mi = alex_mem_io(m);
	int fd;
	return mi.ops->open(mi.ctx, path, 0, &fd) == 0;
}

/* Name changes -- a file made, renamed, unlinked -- are durable once their
 * directory is synced; an image with ALEX_CRASH_DIRS_LOST has the names of
 * that sync, each with its data as the data model leaves it.  Without the
 * flag every name change is durable at once, as before. */
Test(io_mem, name_changes_last_only_with_a_directory_sync)
{
	const char *old = "/mem/d/old", *tmp = "/mem/d/tmp", *neu = "/mem/d/new";
	int a = mk(old);
	put(a, 'a', 10, 0);
	cr_assert_eq(o->fdatasync(io.ctx, a), 0);
	cr_assert_eq(o->sync_dir(io.ctx, old), 0);
	int t = mk(tmp);
	put(t, 't', 10, 0);
	cr_assert_eq(o->fdatasync(io.ctx, t), 0);
	cr_assert_eq(o->rename(io.ctx, tmp, neu, 1), 0);
	cr_assert_eq(o->unlink(io.ctx, old), 0);

	img = alex_mem_crash(mem, ALEX_CRASH_KEEP, 0);
	cr_expect(!exists_in(img, old) && !exists_in(img, tmp) && exists_in(img, neu),
		  "without the flag: as the names are now");
	alex_mem_free(img);
	img = alex_mem_crash(mem, ALEX_CRASH_KEEP | ALEX_CRASH_DIRS_LOST, 0);
	size_t len;
	cr_expect(exists_in(img, old), "the unlink was lost: the file is back");
	cr_expect_eq(bytes(img, old, &len)[0], 'a');
	cr_expect(!exists_in(img, neu) && !exists_in(img, tmp), "the new file's name was never synced");
	alex_mem_free(img);

	cr_assert_eq(o->sync_dir(io.ctx, neu), 0);
	img = alex_mem_crash(mem, ALEX_CRASH_LOSE | ALEX_CRASH_DIRS_LOST, 0);
	cr_expect(!exists_in(img, old), "after the sync the unlink stays");
	cr_expect(exists_in(img, neu) && bytes(img, neu, &len)[0] == 't', "and the rename");
	cr_expect(!exists_in(img, tmp));
}
