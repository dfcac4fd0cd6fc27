/*
 * journal.c - SQLite's rollback journal in memory.  A journal that does
 * not exist on disk is made as a memfd owned by the database's pdb: an
 * extent commit is atomic, so the journal serves only SQLite's in-process
 * rollback, and its writes and syncs need not reach the disk.  Its name
 * exists only to the hooks (open, stat, access, truncate, unlink).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dirsync.h"
#include "hooks.h"
#include "journal.h"
#include "trace.h"
#include "match.h"
#include "pdb.h"
#include "real.h"
#include "serve.h"

#define ON_DISK (-1)

/* Under db->mu: the memfd, made on first open.  0, ON_DISK (there before
 * us: not ours), or an errno. */
static int ensure(struct pdb *db, const char *jpath, int flags)
{
	if (db->jmem >= 0)
		return (flags & O_CREAT) && (flags & O_EXCL) ? EEXIST : 0;
	if (REAL(access)(jpath, F_OK) == 0)
		return ON_DISK;
	if (!(flags & O_CREAT))
		return ENOENT;
	db->jmem = memfd_create("alex-journal", MFD_CLOEXEC);
	if (db->jmem < 0)
		return errno;
	alex_dirsync_expect(db);
	return 0;
}

int alex_journal_open(struct pdb *db, const char *jpath, int flags, int *fd)
{
	pthread_mutex_lock(&db->mu);
	int made = db->jmem < 0, err = ensure(db, jpath, flags);
	if (!err) {
		int cmd = (flags & O_CLOEXEC) ? F_DUPFD_CLOEXEC : F_DUPFD;
		uint64_t t0 = ALEX_TRACE_T0();
		*fd = REAL(fcntl)(db->jmem, cmd, 0);
		alex_trace_own(ALEX_TROLE_JOURNAL, ALEX_TK_FCNTL, db->jmem, t0, (uint64_t)cmd, *fd,
			       NULL);
		if (*fd < 0) {
			err = errno;
		} else if (flags & O_TRUNC) {
			t0 = ALEX_TRACE_T0();
			int r = REAL(ftruncate)(db->jmem, 0);
			alex_trace_own(ALEX_TROLE_JOURNAL, ALEX_TK_FTRUNCATE, db->jmem, t0, 0, r, NULL);
			if (r != 0) {
				err = errno;
				REAL(close)(*fd);
			}
		}
		if (err && made && db->jmem >= 0) { /* as if this open never happened */
			REAL(close)(db->jmem);
			db->jmem = -1;
			alex_dirsync_clear(db);
		}
	}
	pthread_mutex_unlock(&db->mu);
	if (err == ON_DISK)
		return ALEX_JOURNAL_DISK;
	if (err) {
		errno = err;
		return -1;
	}
	return ALEX_JOURNAL_MEM;
}

struct pdb *alex_journal_find(int dirfd, const char *path)
{
	char dbpath[PATH_MAX], abs[PATH_MAX];

	if (!alex_active() || !path || alex_match(path, dbpath, sizeof dbpath) != ROLE_JOURNAL ||
	    alex_abs_path(dirfd, dbpath, abs, sizeof abs) != 0)
		return NULL;
	struct pdb *db = alex_pdb_find_name(abs);
	if (db && __atomic_load_n(&db->jmem, __ATOMIC_ACQUIRE) >= 0)
		return db;
	alex_pdb_put(db);
	return NULL;
}

int alex_journal_unlink(struct pdb *db)
{
	pthread_mutex_lock(&db->mu);
	int had = db->jmem >= 0;
	if (had)
		REAL(close)(db->jmem);
	db->jmem = -1;
	pthread_mutex_unlock(&db->mu);
	if (!had) {
		errno = ENOENT;
		return -1;
	}
	return alex_serve_journal_done(db);
}

int alex_journal_truncate(struct pdb *db, off_t size)
{
	pthread_mutex_lock(&db->mu);
	int r = db->jmem >= 0 ? REAL(ftruncate)(db->jmem, size) : (errno = ENOENT, -1);
	int err = errno;
	pthread_mutex_unlock(&db->mu);
	errno = err;
	return r;
}

int alex_journal_stat(struct pdb *db, struct stat64 *st)
{
	pthread_mutex_lock(&db->mu);
	int r = db->jmem >= 0 ? REAL(fstat64)(db->jmem, st) : (errno = ENOENT, -1);
	int err = errno;
	pthread_mutex_unlock(&db->mu);
	errno = err;
	return r;
}
