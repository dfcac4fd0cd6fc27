/*
 * multidb.c - transactions across attached databases (SQLite's
 * super-journal), kept atomic under ALEX.
 *
 * SQLite commits a transaction that writes several databases in rollback
 * mode like this (vdbeaux.c, vdbeCommit): it writes a super-journal
 * "<main>-mjXXXXXXXXX" naming every journal and syncs it; into each
 * journal it writes the super-journal's name (at its end, before the
 * journal's 8-byte magic) and syncs it; it writes and syncs each database;
 * then it deletes the super-journal -- the commit point -- and only then
 * finalizes the journals.  After a crash, a hot journal that names a
 * super-journal still there is rolled back, in every database; one whose
 * super-journal is gone is not.  A super-journal is removed only when no
 * journal it lists still names it (pager.c, pager_delsuper).
 *
 * Under ALEX a journal lives in memory, and a database's pages become a
 * record at its sync.  So that the same rules hold:
 *  - the name SQLite writes into the in-memory journal is noticed
 *    (alex_multidb_journal_write);
 *  - at that database's sync, before its record, a *reference journal* is
 *    written where its journal would be: a file whose first byte is zero
 *    (so no SQLite ever rolls it back -- the log holds the database's pages)
 *    but whose end names the super-journal, as pager_delsuper reads it, so
 *    that a recovery of another database -- with or without ALEX -- keeps
 *    the super-journal while this database has not decided;
 *  - the record is a conditional commit (core: alex_commit_cond): after a
 *    crash it stands only once the super-journal is gone, or a later commit
 *    follows it; recovery under SQLite's SHARED lock rolls back, durably,
 *    one whose super-journal remains (the transaction is over: no writer
 *    releases its lock before removing it);
 *  - when SQLite finalizes the journal (the transaction is over, committed
 *    or rolled back in process), the reference journal goes;
 *  - after a crash, once the engine decided, the reference journal goes,
 *    and the super-journal too when nothing names it any more.
 * A single-database transaction never meets any of this.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bytes.h"
#include "config.h"
#include "errmap.h"
#include "journal.h"
#include "multidb.h"
#include "staging.h"
#include "real.h"
#include "record.h"

/* SQLite's journal magic (pager.c, aJournalMagic) */
static const unsigned char journal_magic[8] = ALEX_JOURNAL_MAGIC;
/* the reference journal: a zero first byte, then this */
static const char ref_sig[] = "ALEX reference journal";
#define REF_HEAD 512u

/* SQLite's checksum of a super-journal name: its bytes as signed chars */
static uint32_t name_sum(const char *s, size_t n)
{
	uint32_t sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += (uint32_t)(int32_t)(signed char)s[i];
	return sum;
}

/*
 * Reads the super-journal name at the end of a journal of size sz (the
 * layout pager.c's readSuperJournal reads): "" if there is none.
 */
/* A journal's bytes: on disk (a descriptor) or in memory (a pdb's). */
typedef size_t (*jread_fn)(void *from, void *buf, size_t n, uint64_t off);

static size_t read_fd(void *from, void *buf, size_t n, uint64_t off)
{
	ssize_t r = REAL(pread)(*(int *)from, buf, n, (off_t)off);
	return r < 0 ? 0 : (size_t)r;
}

static size_t read_mem(void *from, void *buf, size_t n, uint64_t off)
{
	return alex_journal_read_locked(from, buf, n, off);
}

static void read_super(jread_fn rd, void *from, uint64_t end, char *out, size_t cap)
{
	unsigned char t[16];

	out[0] = 0;
	if (end < 16 || rd(from, t, 16, end - 16) != 16 || memcmp(t + 8, journal_magic, 8) != 0)
		return;
	uint32_t len = alex_get_be32(t), sum = alex_get_be32(t + 4);
	if (!len || len >= cap || len > end - 16 || rd(from, out, len, end - 16 - len) != len) {
		out[0] = 0;
		return;
	}
	out[len] = 0;
	if (name_sum(out, len) != sum)
		out[0] = 0;
}

int alex_multidb_super_of(struct pdb *db, const void *buf, size_t n, int64_t off, char *name,
			  size_t cap)
{
	if (!alex_multidb_may_name_super(buf, n, off))
		return 0;
	read_super(read_mem, db, (uint64_t)off + 8, name, cap);
	return name[0] != 0;
}

void alex_multidb_begin(struct pdb *db, const char *super)
{
	free(db->super);
	db->super = strdup(super);
	db->super_done = 0;
}

static void journal_path(const struct pdb *db, char *out, size_t cap)
{
	snprintf(out, cap, "%s-journal", db->path);
}

void alex_multidb_opened(struct pdb *db)
{
	char jpath[PATH_MAX + 16];

	journal_path(db, jpath, sizeof jpath);
	db->ref_check = REAL(access)(jpath, F_OK) == 0;
}

/* The database's directory entry and data, durable (sync, directory). */
static int sync_file_and_dir(int fd, const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	size_t n = slash == path ? 1 : (size_t)(slash - path);

	if (REAL(fdatasync)(fd) != 0)
		return errno;
	ALEX_REC_FD(ALEX_TR_SYNC, fd, 0, 0, NULL, NULL);
	memcpy(dir, path, n);
	dir[n] = 0;
	int d = REAL(open)(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d < 0)
		return errno;
	int err = REAL(fsync)(d) == 0 ? 0 : errno;
	REAL(close)(d);
	if (!err)
		ALEX_REC_PATH(ALEX_TR_DIRSYNC, NULL, NULL);
	return err;
}

/* Writes the reference journal for db's super-journal, durably, with the
 * database's mode (and owner, as root). */
static int write_ref(struct pdb *db)
{
	char path[PATH_MAX + 16];
	size_t len = strlen(db->super), total = REF_HEAD + 4 + len + 16;
	unsigned char *b = calloc(1, total);
	struct stat st;
	int err;

	if (!b)
		return ENOMEM;
	memcpy(b + 1, ref_sig, sizeof ref_sig);
	memcpy(b + REF_HEAD + 4, db->super, len); /* after the page number (0) */
	alex_put_be32(b + REF_HEAD + 4 + len, (uint32_t)len);
	alex_put_be32(b + REF_HEAD + 8 + len, name_sum(db->super, len));
	memcpy(b + REF_HEAD + 12 + len, journal_magic, 8);
	journal_path(db, path, sizeof path);
	int fd = REAL(open)(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		free(b);
		return errno;
	}
	ALEX_REC_FD(ALEX_TR_NAME, fd, 0, 0, NULL, path);
	ALEX_REC_FD(ALEX_TR_TRUNC, fd, 0, 0, NULL, NULL);
	err = 0;
	if (REAL(stat)(db->path, &st) == 0) {
		if (geteuid() == 0 && fchown(fd, st.st_uid, st.st_gid) != 0)
			err = errno;
		if (!err && fchmod(fd, st.st_mode & 0777) != 0)
			err = errno;
	}
	if (!err && REAL(pwrite)(fd, b, total, 0) != (ssize_t)total)
		err = errno ? errno : ENOSPC;
	if (!err) {
		ALEX_REC_FD(ALEX_TR_WRITE, fd, 0, total, b, NULL);
		err = sync_file_and_dir(fd, path);
	}
	REAL(close)(fd);
	free(b);
	return err;
}

int alex_multidb_commit(struct pdb *db)
{
	int err = write_ref(db);

	if (err) {
		alex_msg(ALEX_MSG_ERROR, "%s-journal: cannot write the reference to the super-journal "
			 "%s: %s", db->path, db->super, strerror(err));
		return err;
	}
	/* a staged transaction moves to the durable log, where its record
	 * is conditional and synced before the super-journal goes */
	int rc = alex_staging_move(db);
	if (!rc)
		rc = alex_commit_cond(db->eng, db->super);
	if (!rc)
		rc = alex_staging_moved(db);
	if (!rc)
		db->super_done = 1;
	return rc ? alex_errno_of(rc) : 0;
}

int alex_multidb_is_super(const char *path)
{
	const char *m = path ? strstr(path, "-mj") : NULL;
	size_t n = m ? strspn(m + 3, "0123456789ABCDEF") : 0;

	return m && n >= 8 && m[3 + n] == 0;
}

/* Is the file at path an ALEX reference journal? */
static int is_ref(const char *path)
{
	char head[1 + sizeof ref_sig];
	int fd = REAL(open)(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	ssize_t n = REAL(pread)(fd, head, sizeof head, 0);
	REAL(close)(fd);
	return n == (ssize_t)sizeof head && head[0] == 0 && memcmp(head + 1, ref_sig, sizeof ref_sig) == 0;
}

static void drop_ref(struct pdb *db)
{
	char path[PATH_MAX + 16];

	journal_path(db, path, sizeof path);
	if (is_ref(path) && REAL(unlink)(path) == 0)
		ALEX_REC_PATH(ALEX_TR_UNLINK, path, NULL);
}

void alex_multidb_end(struct pdb *db)
{
	if (!db->super)
		return;
	drop_ref(db);
	alex_resolve(db->eng);
	free(db->super);
	db->super = NULL;
	db->super_done = 0;
}

/*
 * pager_delsuper's rule: a super-journal goes once no journal it lists
 * still names it.  Run after this database decided, so that a transaction
 * whose every database is ALEX's leaves nothing behind.
 */
static void drop_super(const char *super)
{
	struct stat st;
	char name[PATH_MAX];

	int fd = REAL(open)(super, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || REAL(fstat)(fd, &st) != 0 || st.st_size <= 0 || st.st_size > (1 << 20)) {
		if (fd >= 0)
			REAL(close)(fd);
		return;
	}
	char *list = malloc((size_t)st.st_size + 1);
	ssize_t got = list ? REAL(pread)(fd, list, (size_t)st.st_size, 0) : -1;
	REAL(close)(fd);
	if (got != st.st_size) {
		free(list);
		return;
	}
	list[got] = 0;
	for (char *j = list; j < list + got; j += strlen(j) + 1) {
		int jfd = *j ? REAL(open)(j, O_RDONLY | O_CLOEXEC) : -1;
		if (jfd < 0)
			continue;
		struct stat js;
		if (REAL(fstat)(jfd, &js) == 0)
			read_super(read_fd, &jfd, (uint64_t)js.st_size, name, sizeof name);
		else
			name[0] = 0;
		REAL(close)(jfd);
		if (strcmp(name, super) == 0) {
			free(list);
			return; /* still needed */
		}
	}
	free(list);
	if (REAL(unlink)(super) == 0)
		ALEX_REC_PATH(ALEX_TR_UNLINK, super, NULL);
}

void alex_multidb_cleanup(struct pdb *db)
{
	char path[PATH_MAX + 16], name[PATH_MAX];
	struct stat st;

	if (db->super || alex_in_doubt(db->eng))
		return; /* a transaction of ours, or one not decided yet */
	journal_path(db, path, sizeof path);
	if (!is_ref(path))
		return;
	int fd = REAL(open)(path, O_RDONLY | O_CLOEXEC);
	name[0] = 0;
	if (fd >= 0) {
		if (REAL(fstat)(fd, &st) == 0)
			read_super(read_fd, &fd, (uint64_t)st.st_size, name, sizeof name);
		REAL(close)(fd);
	}
	drop_ref(db);
	if (name[0])
		drop_super(name);
}
