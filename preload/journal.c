/*
 * journal.c - SQLite's rollback journal in user memory.
 *
 * A journal that does not exist on disk lives in a buffer owned by the
 * database's pdb: an extent commit is atomic, so the journal serves only
 * SQLite's in-process rollback, and its bytes and syncs need not reach the
 * kernel.  Its name exists only to the hooks (open, stat, access,
 * truncate, unlink), and its descriptor is served by the hooks like a
 * database's (hooks_io.c, hooks_stat.c).
 *
 * SQLite still needs a descriptor number of its own.  The pdb keeps one
 * (a memfd that never holds a byte) open across transactions: SQLite's
 * open of the journal hands it out and its close gives it back, with no
 * system call.  The buffer, too, is kept and reused.  In steady state a
 * transaction's journal costs one access(2) (a journal left on disk by a
 * program without ALEX must still be seen) and one fstat(2) (the kept
 * descriptor is still ours: a program may close any number).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "dirsync.h"
#include "hooks.h"
#include "journal.h"
#include "match.h"
#include "pdb.h"
#include "real.h"
#include "serve.h"
#include "span.h"
#include "sqlite_locks.h"
#include "stats.h"
#include "trace.h"

#define ON_DISK (-1)
/* a buffer larger than this is given back when its journal is deleted */
#define KEEP_BYTES (64u << 20)

/* ---- the buffer (under db->mu) ------------------------------------------ */

/* Room for n bytes.  0 or ENOMEM. */
static int room(struct alex_jmem *j, uint64_t n)
{
	if (n <= j->cap)
		return 0;
	if (n > SIZE_MAX / 2)
		return ENOMEM;
	size_t cap = j->cap ? j->cap : 64 * 1024;
	while (cap < n)
		cap *= 2;
	/* mremap moves pages, never copies them: a large transaction's
	 * journal grows at no cost per byte.  The real calls: the hooks would
	 * take mmap.c's table lock, which comes before db->mu, held here */
	void *p = j->data ? REAL(mremap)(j->data, j->cap, cap, MREMAP_MAYMOVE)
			  : REAL(mmap)(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				       -1, 0);
	if (p == MAP_FAILED)
		return ENOMEM;
	j->data = p;
	j->cap = cap;
	return 0;
}

/* The size becomes n; new bytes read as zeros, as a file's do. */
static int resize(struct alex_jmem *j, uint64_t n)
{
	int err = room(j, n);
	if (err)
		return err;
	if (n > j->size)
		memset(j->data + j->size, 0, n - j->size);
	j->size = n;
	return 0;
}

static void give_back(struct alex_jmem *j)
{
	if (j->data)
		REAL(munmap)(j->data, j->cap);
	j->data = NULL;
	j->cap = 0;
}

/* ---- the kept descriptor ---------------------------------------------------- */

/* hand-outs between checks of a kept descriptor the hooks saw nothing of */
#define KEPT_CHECK 64

/* Is j->kept.fd still the memfd we made?  A program that closed it (closefrom)
 * may have a new file under that number now. */
static int kept_ok(struct alex_jmem *j)
{
	return alex_kept_still(&j->fd_check, j->kept.fd, j->fd_dev, j->fd_ino, KEPT_CHECK);
}

/* A descriptor for SQLite: the kept one, or (when SQLite holds it already:
 * two connections with the journal open) a copy.  -1 with errno. */
static int hand_out(struct alex_jmem *j, int flags)
{
	if (!j->kept.held && !kept_ok(j)) {
		/* made once; remade only if it was closed behind our back */
		int fd = memfd_create("alex-journal", MFD_CLOEXEC);
		struct stat st;
		if (fd < 0)
			return -1;
		if (REAL(fstat)(fd, &st) != 0) {
			int err = errno;
			REAL(close)(fd);
			errno = err;
			return -1;
		}
		alex_kept_fresh(&j->fd_check);
		alex_kept_mark(fd, 1);
		j->kept.fd = fd;
		j->fd_ino = st.st_ino;
		j->fd_dev = st.st_dev;
	}
	if (!j->kept.held) {
		j->kept.held = 1;
		return j->kept.fd;
	}
	uint64_t t0 = ALEX_TRACE_T0();
	int cmd = (flags & O_CLOEXEC) ? F_DUPFD_CLOEXEC : F_DUPFD;
	int fd = REAL(fcntl)(j->kept.fd, cmd, 0);
	alex_trace_own(ALEX_TROLE_JOURNAL, ALEX_TK_FCNTL, j->kept.fd, t0, (uint64_t)cmd, fd, NULL);
	return fd;
}

static void fill_stat(const struct pdb *db, struct stat64 *st);

/* ---- names known absent ---------------------------------------------------- */

/*
 * SQLite asks at every transaction whether a hot journal or a WAL lies
 * beside the database (a stat of each), and ALEX whether a journal is on
 * disk before it makes one in memory.  While the database file carries the
 * fence, neither can appear: a program without ALEX is refused at page 1,
 * before it may take RESERVED and write a journal or turn on WAL mode;
 * SQLite under ALEX keeps its journal in memory unless one is on disk
 * already; WAL mode begins only after a checkpoint, which ends the epoch.
 * And when an epoch's fence goes on (its first commit), neither is there:
 * that commit's SQLite looked at SHARED, rolled back a hot journal, and
 * would have opened a WAL, and nobody could write one while it held SHARED.
 * So once this process has seen a name absent in a fenced epoch, it stays
 * absent until the epoch ends -- which alex_fence_now tells with a load.
 */
static struct alex_fence *absent_of(struct pdb *db, enum alex_role role)
{
	return role == ROLE_JOURNAL ? &db->no_journal : &db->no_wal;
}

/* Under db->mu: is role's name known absent from disk now?  *now: the
 * fence as it is (for absent_seen). */
static int absent_known(struct pdb *db, enum alex_role role, struct alex_fence *now)
{
	return alex_fence_now(db->eng, now) && alex_fence_same(now, absent_of(db, role));
}

/* Under db->mu: the kernel said ENOENT for role's name after before was
 * taken; the fence held across the look if it is the same now. */
static void absent_seen(struct pdb *db, enum alex_role role, const struct alex_fence *before)
{
	struct alex_fence now;
	if (alex_fence_now(db->eng, &now) && alex_fence_same(&now, before))
		*absent_of(db, role) = now;
}

int alex_name_known(struct pdb *db, enum alex_role role, struct stat64 *st, int *exists,
		    struct alex_fence *before)
{
	alex_mutex_lock(&db->mu);
	int known = absent_known(db, role, before);
	/* a journal in memory is the one SQLite means (none is on disk) */
	*exists = known && role == ROLE_JOURNAL && db->j.exists;
	if (*exists && st)
		fill_stat(db, st);
	alex_mutex_unlock(&db->mu);
	return known;
}

void alex_name_absent(struct pdb *db, enum alex_role role, const struct alex_fence *before)
{
	alex_mutex_lock(&db->mu);
	absent_seen(db, role, before);
	alex_mutex_unlock(&db->mu);
}

/* ---- by name ------------------------------------------------------------------ */

/*
 * Does another process hold a lock on SQLite's SHARED bytes?  Then it may
 * have the cold journal open: SQLite keeps it open in TRUNCATE and PERSIST
 * mode until it lets its lock go, and writes its next transaction's into
 * that file -- removed, a crash of a program without ALEX would leave no
 * hot journal, and its spilled pages in the database (review: "database
 * disk image is malformed").  A process that takes SHARED later opens the
 * journal afresh.  While a span stands, SQLite's locks are the span's, an
 * OFD lock (span.c), and the question goes through its description, which
 * leaves out only its own; else the process's, which F_GETLK leaves out.
 */
static int others_share(struct pdb *db)
{
	struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			   .l_start = SQLITE_SHARED_FIRST, .l_len = SQLITE_SHARED_SIZE };
	if (alex_span_getlk(db, &l))
		return l.l_type != F_UNLCK;
	int fd = db->eng ? alex_db_fd(db->eng) : -1;
	if (fd < 0 || REAL(fcntl)(fd, F_GETLK, &l) != 0)
		return 1;
	return l.l_type != F_UNLCK;
}

/* The cold journal removed, and its removal synced: on a file system whose
 * syncs of ALEX's log do not carry other names with them (ext4's and XFS's
 * do), a power cut could bring back a file that SQLite without ALEX
 * emptied or zeroed but never synced (TRUNCATE with synchronous=NORMAL),
 * hot.  A directory this process may not open is not synced, as SQLite
 * skips its own directory sync there (review: mode 0300).  0, -1 if it
 * stays, or an errno once the file is gone. */
static int remove_cold(const char *jpath)
{
	const struct alex_io_ops *o = alex_io_posix.ops;

	if (o->unlink(alex_io_posix.ctx, jpath))
		return -1;
	int err = o->sync_dir(alex_io_posix.ctx, jpath);
	return err == EACCES || err == EPERM ? 0 : err;
}

/* Under db->mu: the journal exists, made now if asked.  0, ON_DISK (there
 * before us: not ours), or an errno.  A cold journal on disk is removed
 * when SQLite begins to write and no other process holds SHARED, and the
 * journal made in memory: passed through, it made every commit synced for
 * as long as the file stayed (serve.c: j_disk) -- for good in TRUNCATE and
 * PERSIST mode. */
static int ensure(struct pdb *db, const char *jpath, int flags)
{
	struct alex_fence fence;

	if (db->j.exists)
		return (flags & O_CREAT) && (flags & O_EXCL) ? EEXIST : 0;
	if (!absent_known(db, ROLE_JOURNAL, &fence)) {
		int saved = errno, rc = -1;
		if (REAL(access)(jpath, F_OK) == 0) {
			if (!(flags & O_CREAT) || !alex_journal_cold(jpath) || others_share(db) ||
			    (rc = remove_cold(jpath)) < 0) {
				errno = saved;
				db->j_disk = 1;
				return ON_DISK;
			}
			if (rc) {
				db->j_disk = 0;
				return rc; /* gone, its removal not synced: this open fails */
			}
			ALEX_COUNT(cold_journals_removed, 1);
		} else if (errno == ENOENT) {
			absent_seen(db, ROLE_JOURNAL, &fence);
		}
		errno = saved;
	}
	db->j_disk = 0;
	if (!(flags & O_CREAT))
		return ENOENT;
	db->j.size = 0;
	__atomic_store_n(&db->j.exists, 1, __ATOMIC_RELEASE);
	alex_dirsync_expect(db);
	return 0;
}

int alex_journal_open(struct pdb *db, const char *jpath, int flags, int *fd)
{
	alex_mutex_lock(&db->mu);
	int made = !db->j.exists, err = ensure(db, jpath, flags);
	if (!err) {
		*fd = hand_out(&db->j, flags);
		if (*fd < 0) {
			err = errno;
			if (made) { /* as if this open never happened */
				__atomic_store_n(&db->j.exists, 0, __ATOMIC_RELEASE);
				alex_dirsync_clear(db);
			}
		} else if (flags & O_TRUNC) {
			db->j.size = 0;
		}
	}
	alex_mutex_unlock(&db->mu);
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
	struct pdb *db = NULL;

	if (!alex_active() || !path)
		return NULL;
	if (alex_pdb_sidecar(dirfd, path, &db) == ROLE_JOURNAL && db &&
	    __atomic_load_n(&db->j.exists, __ATOMIC_ACQUIRE))
		return db;
	alex_pdb_put(db);
	return NULL;
}

int alex_journal_unlink(struct pdb *db)
{
	alex_mutex_lock(&db->mu);
	int had = db->j.exists;
	__atomic_store_n(&db->j.exists, 0, __ATOMIC_RELEASE);
	db->j.size = 0;
	if (db->j.cap > KEEP_BYTES)
		give_back(&db->j);
	alex_mutex_unlock(&db->mu);
	if (!had) {
		errno = ENOENT;
		return -1;
	}
	return alex_serve_journal_done(db);
}

int alex_journal_truncate(struct pdb *db, off_t size)
{
	int err = ENOENT;

	if (size < 0)
		err = EINVAL;
	alex_mutex_lock(&db->mu);
	if (db->j.exists && size >= 0)
		err = resize(&db->j, (uint64_t)size);
	alex_mutex_unlock(&db->mu);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

int alex_journal_extend(struct pdb *db, uint64_t end)
{
	int err = ENOENT;

	alex_mutex_lock(&db->mu);
	if (db->j.exists)
		err = end > db->j.size ? resize(&db->j, end) : 0;
	alex_mutex_unlock(&db->mu);
	return err;
}

/* A regular file with the database's owner and permissions. */
static void fill_stat(const struct pdb *db, struct stat64 *st)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	memset(st, 0, sizeof *st);
	st->st_dev = db->dev;
	st->st_ino = db->j.fd_ino;
	st->st_mode = S_IFREG | (db->mode & 07777);
	st->st_nlink = 1;
	st->st_uid = db->uid;
	st->st_gid = db->gid;
	st->st_size = (off64_t)db->j.size;
	st->st_blksize = 4096;
	st->st_blocks = (blkcnt64_t)((db->j.size + 511) / 512);
	st->st_atim = st->st_mtim = st->st_ctim = now;
}

int alex_journal_stat(struct pdb *db, struct stat64 *st)
{
	alex_mutex_lock(&db->mu);
	int exists = db->j.exists;
	if (exists)
		fill_stat(db, st);
	alex_mutex_unlock(&db->mu);
	if (!exists) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

/* ---- by descriptor ------------------------------------------------------------ */

void alex_journal_fstat(struct pdb *db, struct stat64 *st)
{
	alex_mutex_lock(&db->mu);
	fill_stat(db, st);
	alex_mutex_unlock(&db->mu);
}

ssize_t alex_journal_io(struct pdb *db, const struct iovec *iov, int cnt, uint64_t *pos,
			enum alex_serve_io how)
{
	int err = 0;
	ssize_t total = 0;

	alex_mutex_lock(&db->mu);
	struct alex_jmem *j = &db->j;
	uint64_t at = how == ALEX_SERVE_APPEND ? j->size : *pos;
	for (int i = 0; i < cnt && !err; i++) {
		size_t n = iov[i].iov_len;
		if (how & ALEX_SERVE_WRITE) {
			/* only a gap before the bytes is zeroed: they are copied */
			if (at + n > j->size && (err = room(j, at + n)))
				break;
			if (at > j->size)
				memset(j->data + j->size, 0, at - j->size);
			memcpy(j->data + at, iov[i].iov_base, n);
			if (at + n > j->size)
				j->size = at + n;
		} else {
			n = at >= j->size ? 0 : j->size - at < n ? (size_t)(j->size - at) : n;
			memcpy(iov[i].iov_base, j->data + at, n);
		}
		at += n;
		total += (ssize_t)n;
		if (n < iov[i].iov_len)
			break; /* the end of the journal */
	}
	if (!err)
		*pos = at;
	alex_mutex_unlock(&db->mu);
	if (err) {
		errno = err;
		return -1;
	}
	return total;
}

int64_t alex_journal_seek(struct pdb *db, uint64_t *pos, int64_t off, int whence)
{
	alex_mutex_lock(&db->mu);
	int64_t size = (int64_t)db->j.size, to = -1;
	switch (whence) {
	case SEEK_SET: to = off; break;
	case SEEK_CUR: to = (int64_t)*pos + off; break;
	case SEEK_END: to = size + off; break;
	case SEEK_DATA: to = off < size ? off : -1; break;
	case SEEK_HOLE: to = off < size ? size : -1; break;
	}
	alex_mutex_unlock(&db->mu);
	if (to < 0) {
		errno = whence == SEEK_DATA || whence == SEEK_HOLE ? ENXIO : EINVAL;
		return -1;
	}
	*pos = (uint64_t)to;
	return to;
}

size_t alex_journal_read_locked(struct pdb *db, void *buf, size_t n, uint64_t off)
{
	const struct alex_jmem *j = &db->j;
	if (off >= j->size)
		return 0;
	if (n > j->size - off)
		n = (size_t)(j->size - off);
	memcpy(buf, j->data + off, n);
	return n;
}

void alex_journal_forget(struct pdb *db)
{
	__atomic_store_n(&db->j.exists, 0, __ATOMIC_RELEASE);
	db->j.size = 0;
}

void alex_journal_free(struct pdb *db)
{
	give_back(&db->j);
	alex_pdb_kept_close(&db->j.kept, db->j.fd_dev, db->j.fd_ino);
}
