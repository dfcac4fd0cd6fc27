/*
 * hooks_path.c - calls by name: an in-memory journal exists, can be
 * truncated and is deleted by name; a database's log follows the database
 * when it is deleted or renamed, so that no later file of that name ever
 * inherits it.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "hooks.h"
#include "journal.h"
#include "match.h"
#include "multidb.h"
#include "pdb.h"
#include "real.h"
#include "record.h"
#include "serve.h"
#include "trace.h"

/* SQLite deleting its journal (DELETE mode): the transaction is
 * committed, in SQLite's protocol and so in the log. */
static int drop_journal(struct pdb *db)
{
	int r = alex_journal_unlink(db), saved = errno;

	alex_pdb_put(db);
	errno = saved;
	return r;
}

static int is_db_path(const char *path)
{
	return alex_active() && path && alex_match(path, NULL, 0) == ROLE_DB;
}

/* After a database at path was deleted: delete its log too. */
static void drop_log(int dirfd, const char *path)
{
	char log[PATH_MAX];
	int saved = errno;

	if (snprintf(log, sizeof log, "%s-alex", path) < (int)sizeof log)
		REAL(unlinkat)(dirfd, log, 0);
	errno = saved;
}

/* A file of SQLite's own that the test build records (record.h). */
static void recorded_unlink(const char *path)
{
	if (alex_active() && path &&
	    (alex_match(path, NULL, 0) == ROLE_WAL || alex_rec_super_name(path)))
		ALEX_REC_PATH(ALEX_TR_UNLINK, path, NULL);
}

static int commit_part(struct pdb *db, void *super)
{
	return alex_serve_super_commit(db, super);
}

/* A super-journal's removal commits a transaction across databases:
 * every part of it must be in its log first (multidb.c). */
static int before_super_unlink(const char *path)
{
	int err;

	if (!alex_active() || !path || !alex_multidb_is_super(path) ||
	    !(err = alex_pdb_each(commit_part, (void *)path)))
		return 0;
	errno = err;
	return -1;
}

static int unlink_inner(const char *path)
{
	struct pdb *db = alex_journal_find(AT_FDCWD, path);
	if (db)
		return drop_journal(db);
	if (before_super_unlink(path))
		return -1;
	int r = REAL(unlink)(path);
	if (r == 0 && is_db_path(path))
		drop_log(AT_FDCWD, path);
	if (r == 0)
		recorded_unlink(path);
	return r;
}

static int unlinkat_inner(int dirfd, const char *path, int flags)
{
	struct pdb *db = alex_journal_find(dirfd, path);
	if (db)
		return drop_journal(db);
	if (before_super_unlink(path))
		return -1;
	int r = REAL(unlinkat)(dirfd, path, flags);
	if (r == 0 && !(flags & AT_REMOVEDIR) && is_db_path(path))
		drop_log(dirfd, path);
	if (r == 0 && !(flags & AT_REMOVEDIR))
		recorded_unlink(path);
	return r;
}

/* After a database was renamed: every file of its log goes along -- the
 * change counter too, or a process that keeps the old one misses the
 * commits of those who join the moved log (third review), and the staging
 * log, or its commits stay behind under the old name (the same review:
 * NORMAL mode lost a row).  The log itself last: an opener at the new name
 * in between finds no log beside the fenced file and is refused, not let
 * in without the staged commits. */
static void move_log(int olddir, const char *from, int newdir, const char *to)
{
	static const char *const files[] = { "-alex-stage-shm", "-alex-stage", "-alex-shm", "-alex" };
	char a[PATH_MAX], b[PATH_MAX];
	int saved = errno;

	for (unsigned i = 0; i < sizeof files / sizeof files[0]; i++)
		if (snprintf(a, sizeof a, "%s%s", from, files[i]) < (int)sizeof a &&
		    snprintf(b, sizeof b, "%s%s", to, files[i]) < (int)sizeof b &&
		    REAL(renameat)(olddir, a, newdir, b) != 0 && errno == ENOENT &&
		    i == sizeof files / sizeof files[0] - 1)
			REAL(unlinkat)(newdir, b, 0); /* no log: the target's old one must go */
	errno = saved;
}

ALEX_EXPORT int rename(const char *from, const char *to)
{
	int r = REAL(rename)(from, to);
	if (r == 0 && (is_db_path(from) || is_db_path(to)))
		move_log(AT_FDCWD, from, AT_FDCWD, to);
	return r;
}

ALEX_EXPORT int renameat(int od, const char *from, int nd, const char *to)
{
	int r = REAL(renameat)(od, from, nd, to);
	if (r == 0 && (is_db_path(from) || is_db_path(to)))
		move_log(od, from, nd, to);
	return r;
}

ALEX_EXPORT int renameat2(int od, const char *from, int nd, const char *to, unsigned int flags)
{
	int r = REAL(renameat2)(od, from, nd, to, flags);
	if (r == 0 && !(flags & RENAME_EXCHANGE) && (is_db_path(from) || is_db_path(to)))
		move_log(od, from, nd, to);
	return r;
}

static int access_inner(const char *path, int mode)
{
	struct pdb *db = alex_journal_find(AT_FDCWD, path);
	if (db) {
		alex_pdb_put(db);
		return 0;
	}
	return REAL(access)(path, mode);
}

static int faccessat_inner(int dirfd, const char *path, int mode, int flags)
{
	struct pdb *db = alex_journal_find(dirfd, path);
	if (db) {
		alex_pdb_put(db);
		return 0;
	}
	return REAL(faccessat)(dirfd, path, mode, flags);
}

static int do_truncate(const char *path, int64_t size, int (*real)(const char *, off64_t))
{
	struct pdb *db = alex_journal_find(AT_FDCWD, path);
	if (db) {
		int r = alex_journal_truncate(db, size), saved = errno;
		alex_pdb_put(db);
		errno = saved;
		return r;
	}
	if (is_db_path(path)) {
		char abs[PATH_MAX];
		if (alex_abs_path(AT_FDCWD, path, abs, sizeof abs) == 0 && (db = alex_pdb_find(abs))) {
			/* in WAL mode the file is SQLite's own */
			int r = alex_pdb_direct(db) ? real(path, size) : alex_serve_truncate(db, size);
			int saved = errno;
			alex_pdb_put(db);
			errno = saved;
			return r;
		}
	}
	return real(path, size);
}

static int pass_truncate32(const char *p, off64_t s)
{
	return REAL(truncate)(p, (off_t)s);
}
static int pass_truncate64(const char *p, off64_t s)
{
	return REAL(truncate64)(p, s);
}

ALEX_EXPORT int truncate(const char *path, off_t size)
{
	return do_truncate(path, size, pass_truncate32);
}
ALEX_EXPORT int truncate64(const char *path, off64_t size)
{
	return do_truncate(path, size, pass_truncate64);
}

/* ---- traced ------------------------------------------------------------------- */

/* The trace's flag: a journal that lives in memory answers by name. */
static int in_memory(int dirfd, const char *path)
{
	struct pdb *db = alex_journal_find(dirfd, path);
	alex_pdb_put(db);
	return db ? ALEX_TF_SERVED : 0;
}

ALEX_EXPORT int unlink(const char *path)
{
	return ALEX_TRACED_PATH(path, ALEX_TK_UNLINK, in_memory(AT_FDCWD, path),
				unlink_inner(path));
}
ALEX_EXPORT int unlinkat(int dirfd, const char *path, int flags)
{
	return ALEX_TRACED_PATH(path, ALEX_TK_UNLINKAT, in_memory(dirfd, path),
				unlinkat_inner(dirfd, path, flags));
}
ALEX_EXPORT int access(const char *path, int mode)
{
	return ALEX_TRACED_PATH(path, ALEX_TK_ACCESS, in_memory(AT_FDCWD, path),
				access_inner(path, mode));
}
ALEX_EXPORT int faccessat(int dirfd, const char *path, int mode, int flags)
{
	return ALEX_TRACED_PATH(path, ALEX_TK_FACCESSAT, in_memory(dirfd, path),
				faccessat_inner(dirfd, path, mode, flags));
}
