/* The real-file backend (io_posix.c) through the io table, on files in a
 * fresh temporary directory: the contract of io.h -- 0 or a positive
 * errno, whole writes, short reads only at the end -- on a real kernel. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io.h"
#include "io_writeout.h"

static char dir[64];
static const struct alex_io_ops *o;
static void *ctx;

static void setup(void)
{
	strcpy(dir, "/tmp/alex-io-posix-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	o = alex_io_posix.ops;
	ctx = alex_io_posix.ctx;
}
static void teardown(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	/* the directory holds only the files the test made: no subdirectories */
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dirfd(d), e->d_name, 0);
	if (d)
		closedir(d);
	rmdir(dir);
}
TestSuite(io_posix, .init = setup, .fini = teardown);

/* dir/name, in one of a few static buffers (tests use at most three). */
static const char *at(const char *name)
{
	static char bufs[3][128];
	static int i;
	char *b = bufs[i++ % 3];
	snprintf(b, sizeof bufs[0], "%s/%s", dir, name);
	return b;
}

static int mk(const char *name)
{
	int fd;
	cr_assert_eq(o->open(ctx, at(name), ALEX_O_CREAT, &fd), 0);
	cr_assert_geq(fd, 0);
	return fd;
}

/* No file and no CREAT is ENOENT; a new file is 0600 whatever the umask
 * (own() widens it later to the database's mode). */
Test(io_posix, open_creates_private_files)
{
	struct alex_finfo fi;
	int fd;

	cr_expect_eq(o->open(ctx, at("none"), 0, &fd), ENOENT);
	mode_t old = umask(0);
	fd = mk("t.db");
	umask(old);
	cr_assert_eq(o->stat(ctx, fd, &fi), 0);
	cr_expect_eq(fi.mode, 0600u);
	cr_expect_eq(fi.size, 0u);
	cr_expect_eq(fi.nlink, 1u);
	cr_expect_eq(fi.uid, (uint32_t)geteuid());
	cr_expect_eq(o->close(ctx, fd), 0);
}

/* Whole writes read back; a read past the end is short, at the end empty,
 * and never an error. */
Test(io_posix, pwrite_pread_round_trip)
{
	uint8_t w[10000], r[12000];
	uint64_t size;
	size_t got;
	int fd = mk("t.db");

	for (size_t i = 0; i < sizeof w; i++)
		w[i] = (uint8_t)(i * 31 + 7);
	cr_assert_eq(o->pwrite(ctx, fd, w, sizeof w, 4096), 0);
	cr_assert_eq(o->size(ctx, fd, &size), 0);
	cr_expect_eq(size, 4096u + sizeof w);
	cr_assert_eq(o->pread(ctx, fd, r, sizeof r, 4096, &got), 0);
	cr_expect_eq(got, sizeof w);
	cr_expect_arr_eq(r, w, sizeof w);
	cr_assert_eq(o->pread(ctx, fd, r, 4096, 0, &got), 0);
	cr_expect_eq(got, 4096u);
	for (size_t i = 0; i < 4096; i++)
		cr_assert_eq(r[i], 0, "the hole reads as zeros at %zu", i);
	cr_assert_eq(o->pread(ctx, fd, r, 10, size, &got), 0);
	cr_expect_eq(got, 0u);
	cr_assert_eq(o->pread(ctx, fd, r, 10, size + 100, &got), 0);
	cr_expect_eq(got, 0u);
	o->close(ctx, fd);
}

/* ftruncate shrinks and grows (zeros); O_TRUNC at open empties. */
Test(io_posix, truncate_and_open_trunc)
{
	uint8_t r[64];
	uint64_t size;
	size_t got;
	int fd = mk("t.db"), fd2;

	cr_assert_eq(o->pwrite(ctx, fd, "abcdefgh", 8, 0), 0);
	cr_assert_eq(o->ftruncate(ctx, fd, 3), 0);
	cr_assert_eq(o->ftruncate(ctx, fd, 6), 0);
	cr_assert_eq(o->pread(ctx, fd, r, sizeof r, 0, &got), 0);
	cr_expect_eq(got, 6u);
	cr_expect_arr_eq(r, "abc\0\0\0", 6);
	cr_assert_eq(o->open(ctx, at("t.db"), ALEX_O_TRUNC, &fd2), 0);
	cr_assert_eq(o->size(ctx, fd, &size), 0);
	cr_expect_eq(size, 0u, "the other descriptor sees the same file emptied");
	o->close(ctx, fd);
	o->close(ctx, fd2);
}

/* Every call on a closed descriptor returns EBADF, not -1 or 0. */
Test(io_posix, bad_descriptor_is_ebadf)
{
	struct alex_finfo fi;
	uint64_t v;
	size_t got;
	uint8_t b[4];
	int fd = mk("t.db");

	cr_assert_eq(o->close(ctx, fd), 0);
	cr_expect_eq(o->close(ctx, fd), EBADF);
	cr_expect_eq(o->pread(ctx, fd, b, 4, 0, &got), EBADF);
	cr_expect_eq(o->pwrite(ctx, fd, b, 4, 0), EBADF);
	cr_expect_eq(o->fdatasync(ctx, fd), EBADF);
	cr_expect_eq(o->ftruncate(ctx, fd, 0), EBADF);
	cr_expect_eq(o->size(ctx, fd, &v), EBADF);
	cr_expect_eq(o->stat(ctx, fd, &fi), EBADF);
	cr_expect_eq(o->space(ctx, fd, &v), EBADF);
}

/* Syncs succeed on a file and on its directory; a directory that does
 * not exist is ENOENT. */
Test(io_posix, sync_file_and_directory)
{
	int fd = mk("t.db");

	cr_assert_eq(o->pwrite(ctx, fd, "x", 1, 0), 0);
	cr_expect_eq(o->fdatasync(ctx, fd), 0);
	cr_expect_eq(o->sync_dir(ctx, at("t.db")), 0);
	cr_expect_eq(o->sync_dir(ctx, at("nodir/t.db")), ENOENT);
	o->close(ctx, fd);
}

/* The file system has room (the tests run on a writable /tmp), and the
 * figure is in bytes: at least one block. */
Test(io_posix, space_reports_bytes)
{
	uint64_t avail = 0;
	int fd = mk("t.db");

	cr_assert_eq(o->space(ctx, fd, &avail), 0);
	cr_expect_geq(avail, 4096u);
	o->close(ctx, fd);
}

/* exists, rename (replacing or not), unlink; a file unlinked while open
 * shows nlink 0, which is how the engine notices a removed log. */
Test(io_posix, directory_operations)
{
	struct alex_finfo fi;
	int yes, fd = mk("a"), fd2 = mk("b");

	cr_assert_eq(o->exists(ctx, at("a"), &yes), 0);
	cr_expect_eq(yes, 1);
	cr_assert_eq(o->exists(ctx, at("c"), &yes), 0);
	cr_expect_eq(yes, 0);
	cr_expect_eq(o->rename(ctx, at("a"), at("b"), 1), EEXIST);
	cr_expect_eq(o->rename(ctx, at("a"), at("c"), 1), 0);
	cr_expect_eq(o->rename(ctx, at("c"), at("b"), 0), 0);
	cr_assert_eq(o->exists(ctx, at("c"), &yes), 0);
	cr_expect_eq(yes, 0);
	cr_assert_eq(o->stat(ctx, fd2, &fi), 0);
	cr_expect_eq(fi.nlink, 0u, "the replaced file is unlinked");
	cr_expect_eq(o->unlink(ctx, at("b")), 0);
	cr_expect_eq(o->unlink(ctx, at("b")), ENOENT);
	cr_assert_eq(o->stat(ctx, fd, &fi), 0);
	cr_expect_eq(fi.nlink, 0u);
	o->close(ctx, fd);
	o->close(ctx, fd2);
}

/* own() gives a file the database's permission bits, whatever they were. */
Test(io_posix, own_copies_the_mode)
{
	struct alex_finfo like = { 0 }, fi;
	int fd = mk("t.db-alex");

	like.mode = 0640;
	like.uid = (uint32_t)geteuid();
	like.gid = (uint32_t)getegid();
	cr_assert_eq(o->own(ctx, fd, &like), 0);
	cr_assert_eq(o->stat(ctx, fd, &fi), 0);
	cr_expect_eq(fi.mode, 0640u);
	o->close(ctx, fd);
}

/* Byte locks belong to the open file description: two opens of the same
 * file in one process exclude each other (process-wide POSIX locks would
 * not), shared locks coexist, and unlocking lets the other in. */
Test(io_posix, locks_exclude_between_descriptions)
{
	int a = mk("t.db-alex"), b = mk("t.db-alex");

	cr_assert_eq(o->lock(ctx, a, 0, ALEX_SHARED), 0);
	cr_expect_eq(o->lock(ctx, b, 0, ALEX_SHARED), 0);
	cr_expect_eq(o->lock(ctx, b, 0, ALEX_EXCLUSIVE), EAGAIN);
	cr_expect_eq(o->lock(ctx, b, 1, ALEX_EXCLUSIVE), 0, "another byte is free");
	cr_expect_eq(o->lock(ctx, a, 1, ALEX_SHARED), EAGAIN);
	cr_assert_eq(o->lock(ctx, a, 0, ALEX_UNLOCK), 0);
	cr_expect_eq(o->lock(ctx, b, 0, ALEX_EXCLUSIVE), 0);
	cr_expect_eq(o->lock(ctx, a, 0, ALEX_SHARED), EAGAIN);
	/* closing a descriptor drops its locks */
	o->close(ctx, b);
	cr_expect_eq(o->lock(ctx, a, 0, ALEX_EXCLUSIVE), 0);
	cr_expect_eq(o->lock(ctx, a, 1, ALEX_EXCLUSIVE), 0);
	o->close(ctx, a);
}

/* The data mode is read from the ext4 options file, one option a line:
 * only a whole "data=journal" line counts. */
Test(io_posix_writeout, options_file_data_mode)
{
	cr_expect_eq(alex_io_opts_journal("rw\ndata=journal\nbarrier\n"), 1);
	cr_expect_eq(alex_io_opts_journal("data=journal\n"), 1);
	cr_expect_eq(alex_io_opts_journal("rw\ndata=journal"), 1);
	cr_expect_eq(alex_io_opts_journal("rw\ndata=ordered\n"), 0);
	cr_expect_eq(alex_io_opts_journal("rw\ndata=writeback\n"), 0);
	cr_expect_eq(alex_io_opts_journal("journal_path=/x/data=journal\n"), 0);
	cr_expect_eq(alex_io_opts_journal("rw\ndata=journalled\n"), 0);
	cr_expect_eq(alex_io_opts_journal(""), 0);
}

static int mark_region(void *region, void *arg, int may_change)
{
	uint8_t *r = region;
	(void)may_change;
	if (r[0] != 0x5a) { /* not ours yet: made so */
		r[0] = 0x5a;
		r[1] = *(uint8_t *)arg;
	}
	return 0;
}

/* The shared region: a new file is written (its space reserved, never a
 * hole under the mapping), a file already written is mapped as it is --
 * a second opener sees the first one's bytes -- and one with a hole (a
 * crash before its write-back) is given its space before it is mapped. */
Test(io_posix, shm_region_is_written_once_and_never_a_hole)
{
	char path[128];
	struct alex_finfo like = { .mode = 0640, .uid = (uint32_t)geteuid(),
				   .gid = (uint32_t)getegid() };
	struct stat st;
	uint8_t one = 1, two = 2;
	uint32_t wrote;
	void *a, *b;

	snprintf(path, sizeof path, "%s/t.db-alex-shm", dir);
	cr_assert_eq(o->shm_map(ctx, path, &like, mark_region, &one, &a, &wrote), 0);
	cr_expect_eq(wrote, 4096, "a new region is written");
	cr_assert_eq(stat(path, &st), 0);
	cr_expect_eq(st.st_size, 4096);
	cr_expect_geq(st.st_blocks * 512, 4096, "space reserved or allocated");
	cr_expect_eq(st.st_mode & 0777, 0640u);
	cr_assert_eq(o->shm_map(ctx, path, &like, mark_region, &two, &b, &wrote), 0);
	cr_expect_eq(wrote, 0, "one already written is not");
	cr_expect_eq(((uint8_t *)b)[1], 1, "the second mapping sees the first one's region");
	((uint8_t *)a)[2] = 7;
	cr_expect_eq(((uint8_t *)b)[2], 7, "one region, shared");
	o->shm_unmap(ctx, a);
	o->shm_unmap(ctx, b);

	cr_assert_eq(unlink(path), 0);
	int fd = open(path, O_RDWR | O_CREAT, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 4096), 0); /* all hole */
	close(fd);
	cr_assert_eq(o->shm_map(ctx, path, &like, mark_region, &two, &a, &wrote), 0);
	cr_assert_eq(stat(path, &st), 0);
	cr_expect_geq(st.st_blocks * 512, 4096, "the hole was filled before the mapping");
	cr_expect_eq(((uint8_t *)a)[1], 2);
	o->shm_unmap(ctx, a);
}

/* pwrite_many through a direct descriptor: 300 scattered sectors (more
 * than one batch in flight), some of them runs of two, then a fork whose
 * child writes too, and the parent again.
 * Every byte reads back; where the file system refuses O_DIRECT (tmpfs)
 * the descriptor is refused and there is nothing to write; where io_uring
 * or cachestat is missing, so is the call (EOPNOTSUPP, nothing written). */
static int many(int dfd, int fd, uint8_t *buf, uint8_t seed)
{
	struct alex_piece p[300];
	size_t n = 0;

	for (unsigned i = 0; i < 300; i++) {
		memset(buf + i * 1024, (uint8_t)(seed + i), 1024);
		/* every seventh a two-sector run, the others one sector */
		p[n++] = (struct alex_piece){ buf + i * 1024, i % 7 || i % 8 == 7 ? 512u : 1024u,
					      (uint64_t)((i * 37) % 400) * 4096 + (i % 8) * 512 };
	}
	int err = o->pwrite_many(ctx, dfd, fd, p, n);
	if (err == EOPNOTSUPP)
		return err; /* no io_uring here (seccomp), or Linux before 6.5 */
	cr_assert_eq(err, 0, "pwrite_many: %s", strerror(err));
	uint8_t got[1024];
	for (size_t i = 0; i < n; i++) {
		size_t g;
		cr_assert_eq(o->pread(ctx, fd, got, p[i].n, p[i].off, &g), 0);
		cr_assert_eq(g, p[i].n);
		cr_assert(memcmp(got, p[i].buf, p[i].n) == 0, "piece %zu", i);
	}
	return 0;
}

Test(io_posix, pwrite_many_direct)
{
	int fd = mk("many"), dfd;
	uint8_t *buf = aligned_alloc(4096, 300 * 1024);

	cr_assert_not_null(buf);
	cr_assert_eq(o->ftruncate(ctx, fd, 400 * 4096), 0);
	int err = o->open_direct(ctx, fd, &dfd);
	if (err) {
		cr_log_warn("O_DIRECT refused here (%s): nothing to write", strerror(err));
		cr_assert(err == EINVAL || err == EOPNOTSUPP, "open_direct: %s", strerror(err));
		return;
	}
	if (many(dfd, fd, buf, 1) == EOPNOTSUPP) {
		cr_log_warn("pwrite_many refused here (no io_uring or cachestat): nothing written");
		o->close(ctx, dfd);
		o->close(ctx, fd);
		free(buf);
		return;
	}
	many(dfd, fd, buf, 2); /* a second ring */
	pid_t pid = fork();
	if (pid == 0) {
		many(dfd, fd, buf, 3);
		_exit(0);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child's writes");
	many(dfd, fd, buf, 4); /* the parent's context still works */
	o->close(ctx, dfd);
	o->close(ctx, fd);
	free(buf);
}
