/*
 * A new log is locked from the moment its name appears.  Its maker renames
 * it into place, then syncs the directory; an engine of another process
 * that opens the database in that time finds the log empty, and at its
 * last close removes a log that holds nothing -- unless another engine
 * holds the log's open lock.  The maker used to take that lock only after
 * the directory's sync (half a millisecond here), so the other engine
 * could remove the log, and the maker's commits went into a file with no
 * name: gone at the next crash, unseen by every other process, and its own
 * last close would unlink whatever log was at the path by then.
 *
 * Real files and real (open file description) locks: the memory backend
 * has one process and no locks.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alex.h"
#include "io.h"

#define BLK 4096

static char dir[64], db_path[96], log_path[112];
static struct alex_io_ops hooked;
static int armed, other_opened, removed_under;

static void setup(void)
{
	strcpy(dir, "/tmp/alex-lograce-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(db_path, sizeof db_path, "%s/t.db", dir);
	snprintf(log_path, sizeof log_path, "%s/t.db-alex", dir);
}

static void teardown(void)
{
	char p[160];
	static const char *const names[] = { "t.db", "t.db-alex", "t.db-alex-shm" };

	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		snprintf(p, sizeof p, "%s/%s", dir, names[i]);
		unlink(p);
	}
	rmdir(dir);
}
TestSuite(lograce, .init = setup, .fini = teardown);

static int exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* A two-page SQLite-looking database file; its page 1 in page1. */
static void make_db(uint8_t *page1)
{
	uint8_t blk[BLK];

	memset(page1, 0x11, BLK);
	memcpy(page1, "SQLite format 3", 16);
	page1[18] = page1[19] = 1;
	memset(page1 + 72, 0, 20);
	memcpy(page1 + 92, page1 + 24, 4);
	int fd = open(db_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0);
	memset(blk, 0x22, BLK);
	cr_assert_eq(pwrite(fd, page1, BLK, 0), BLK);
	cr_assert_eq(pwrite(fd, blk, BLK, BLK), BLK);
	close(fd);
}

/* Another process's engine opens the database while the maker syncs the
 * directory, finds nothing to checkpoint (SQLite's lock is the maker's),
 * and closes. */
static int sync_dir_with_visitor(void *ctx, const char *path)
{
	if (armed && exists(log_path)) {
		struct alex_config c;
		alex_db *other;

		armed = 0;
		alex_config_default(&c);
		c.remove_log = 1;
		c.checkpoint_on_close = 0;
		if (alex_open(db_path, &c, &alex_io_posix, &other) == 0) {
			other_opened = 1;
			alex_close(other);
		}
		removed_under = !exists(log_path);
	}
	return alex_io_posix.ops->sync_dir(ctx, path);
}

Test(lograce, a_new_log_cannot_be_removed_before_its_maker_holds_it)
{
	static uint8_t page1[BLK], blk[BLK];
	struct alex_io io = { &hooked, alex_io_posix.ctx };
	struct alex_config c;
	alex_db *db;

	make_db(page1);
	int fd;

	hooked = *alex_io_posix.ops;
	hooked.sync_dir = sync_dir_with_visitor;
	alex_config_default(&c);
	c.remove_log = 1;
	cr_assert_eq(alex_open(db_path, &c, &io, &db), 0);
	armed = 1;
	memset(blk, 0xA5, BLK);
	cr_assert_eq(alex_write(db, ALEX_FILE_DB, blk, BLK, BLK), 0);
	page1[200] = 0xA5;
	cr_assert_eq(alex_write(db, ALEX_FILE_DB, page1, BLK, 0), 0);
	cr_assert_eq(alex_commit(db), 0);
	cr_assert(other_opened, "the other engine opened the database while the log was made");
	cr_assert_not(removed_under, "the other engine removed the new log before its maker held it");
	cr_assert(exists(log_path), "the commit's log has a name");
	alex_close(db);

	uint8_t v = 0;
	fd = open(db_path, O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, &v, 1, BLK), 1);
	close(fd);
	cr_expect_eq(v, 0xA5, "the checkpoint wrote the commit: block 1 = %02x", v);
	cr_expect_not(exists(log_path), "the last close removed the log");
}

/* A stub log (a making cut short by a crash: an empty file) is open in a
 * reader's engine when a writer's engine replaces it with a real log and
 * commits.  The reader's last close then held the stub alone, took its
 * lock exclusive, and removed the names -- the writer's log and
 * -alex-shm, with an acknowledged commit (a helper's review). */
Test(lograce, a_stub_holder_leaves_the_log_that_replaced_it)
{
	static uint8_t page1[BLK], blk[BLK];
	char shm_path[128];
	struct alex_config c;
	alex_db *reader, *writer;

	snprintf(shm_path, sizeof shm_path, "%s/t.db-alex-shm", dir);
	make_db(page1);
	int fd = open(log_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0);
	close(fd);

	alex_config_default(&c);
	c.remove_log = 1;
	c.checkpoint_on_close = 0;
	cr_assert_eq(alex_open(db_path, &c, &alex_io_posix, &reader), 0);
	cr_assert_eq(alex_open(db_path, &c, &alex_io_posix, &writer), 0);
	memset(blk, 0xA5, BLK);
	cr_assert_eq(alex_write(writer, ALEX_FILE_DB, blk, BLK, BLK), 0);
	page1[200] = 0xA5;
	cr_assert_eq(alex_write(writer, ALEX_FILE_DB, page1, BLK, 0), 0);
	cr_assert_eq(alex_commit(writer), 0);
	alex_close(reader);
	cr_assert(exists(log_path), "the reader's close removed the writer's log");
	cr_assert(exists(shm_path), "the reader's close removed the writer's -alex-shm");

	/* what another process opening the database now sees */
	alex_db *third;
	uint8_t v[BLK];
	size_t n;
	c.remove_log = 0;
	cr_assert_eq(alex_open(db_path, &c, &alex_io_posix, &third), 0);
	cr_assert_eq(alex_read(third, ALEX_FILE_DB, v, BLK, BLK, &n), 0);
	cr_expect_eq(v[0], 0xA5, "block 1 = %02x: the acknowledged commit", v[0]);
	alex_close(third);
	alex_set_checkpoint_on_close(writer, 1);
	alex_close(writer);
	cr_expect_not(exists(log_path), "the writer's last close removed its log");
}
