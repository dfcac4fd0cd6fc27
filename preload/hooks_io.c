/*
 * hooks_io.c - reads, writes, seeks, syncs, truncation and mapping of a
 * tracked database, served by the engine (serve.c), and of its journal,
 * served from memory (journal.c).
 * SQLite's fsync/fdatasync of the database file is the commit boundary.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>

#include "bytes.h"
#include "dirsync.h"
#include "fdtable.h"
#include "hooks.h"
#include "journal.h"
#include "mmap.h"
#include "multidb.h"
#include "real.h"
#include "record.h"
#include "serve.h"
#include "stats.h"
#include "temp.h"
#include "trace.h"

/* o, when it is a database the engine serves now (not in WAL mode) */
static inline int db_served(const struct ofd *o)
{
	return o && o->role == ROLE_DB && !alex_pdb_direct(o->db);
}

/* o, when its bytes are ALEX's: such a database, an in-memory journal, or
 * SQLite's temporary file under a key */
static inline int served(const struct ofd *o)
{
	return o && (o->role == ROLE_JOURNAL || o->role == ROLE_TEMP ||
		     (o->role == ROLE_DB && !alex_pdb_direct(o->db)));
}

/* the description of fd if ALEX serves its bytes, else NULL */
static inline struct ofd *dbo(int fd)
{
	struct ofd *o = alex_fd_get(fd);
	return served(o) ? o : NULL;
}

/* Reads or writes for a served description: the engine's, or the journal's. */
static ssize_t mem_io(struct ofd *o, const struct iovec *iov, int cnt, uint64_t *pos,
		      enum alex_serve_io how)
{
	if (o->role == ROLE_JOURNAL)
		return alex_journal_io(o->db, iov, cnt, pos, how);
	if (o->role == ROLE_TEMP)
		return alex_temp_io(o, iov, cnt, pos, how);
	return alex_serve_io(o->db, iov, cnt, pos, how);
}

/* One buffer at off (a pread or pwrite); off < 0 is EINVAL, as the kernel says. */
static ssize_t db_pio(struct ofd *o, void *buf, size_t n, int64_t off, enum alex_serve_io how)
{
	struct iovec v = { buf, n };
	uint64_t pos = (uint64_t)off;

	if (off < 0) {
		errno = EINVAL;
		return -1;
	}
	return mem_io(o, &v, 1, &pos, how);
}

static ssize_t db_pread(struct ofd *o, void *buf, size_t n, int64_t off)
{
	return db_pio(o, buf, n, off, ALEX_SERVE_READ);
}

/* Linux: pwrite on an O_APPEND file appends */
static ssize_t db_pwrite(struct ofd *o, const void *buf, size_t n, int64_t off)
{
	return db_pio(o, (void *)buf, n, off, o->append ? ALEX_SERVE_APPEND : ALEX_SERVE_WRITE);
}

/* the trace's flag for a call ALEX answers itself */
#define SERVED(o) ((o) ? ALEX_TF_SERVED : 0)

ALEX_EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	struct ofd *o = dbo(fd);
	return ALEX_TRACED_IO(fd, ALEX_TK_PREAD64, off, n, buf, SERVED(o),
			      o ? db_pread(o, buf, n, off) : REAL(pread)(fd, buf, n, off));
}
ALEX_EXPORT ssize_t pread64(int fd, void *buf, size_t n, off64_t off)
{
	struct ofd *o = dbo(fd);
	return ALEX_TRACED_IO(fd, ALEX_TK_PREAD64, off, n, buf, SERVED(o),
			      o ? db_pread(o, buf, n, off) : REAL(pread64)(fd, buf, n, off));
}

/*
 * A journal's header zeroed (PERSIST) or the journal truncated to nothing
 * (TRUNCATE) or deleted (DELETE, hooks_path.c) is the moment SQLite's
 * rollback protocol calls the transaction committed.  It is the only mark
 * some configurations show (locking_mode=EXCLUSIVE with synchronous=OFF),
 * so it is a commit boundary too.
 */
static ssize_t journal_done(struct ofd *o, ssize_t r)
{
	if (r >= 0 && alex_serve_journal_done(o->db) != 0)
		return -1;
	return r;
}

/* pwrite and pwrite64 (one 64-bit off_t on the platforms we build for) */
static ssize_t do_pwrite(int fd, const void *buf, size_t n, off64_t off,
			 ssize_t (*real)(int, const void *, size_t, off64_t))
{
	struct ofd *o = alex_fd_get(fd);
	if (!served(o)) {
		ssize_t r = real(fd, buf, n, off);
		if (r > 0)
			ALEX_REC(ALEX_TR_WRITE, o, fd, (uint64_t)off, (uint64_t)r, buf, NULL);
		return r;
	}
	ssize_t r = db_pwrite(o, buf, n, off);
	if (o->role != ROLE_JOURNAL)
		return r;
	if (off == 0 && alex_all_zero(buf, n))
		return journal_done(o, r);
	if (r == (ssize_t)n && alex_multidb_may_name_super(buf, n, off))
		alex_serve_journal_write(o->db, buf, n, off);
	return r;
}
ALEX_EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	return ALEX_TRACED_IO(fd, ALEX_TK_PWRITE64, off, n, buf, SERVED(dbo(fd)),
			      do_pwrite(fd, buf, n, off, REAL(pwrite)));
}
ALEX_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
	return ALEX_TRACED_IO(fd, ALEX_TK_PWRITE64, off, n, buf, SERVED(dbo(fd)),
			      do_pwrite(fd, buf, n, off, REAL(pwrite64)));
}

/* read/write at the description's offset */
static ssize_t db_rw(struct ofd *o, void *buf, size_t n, int writing)
{
	struct iovec v = { buf, n };
	enum alex_serve_io how = !writing ? ALEX_SERVE_READ
				: o->append ? ALEX_SERVE_APPEND : ALEX_SERVE_WRITE;
	return mem_io(o, &v, 1, &o->pos, how);
}

/* where a read or write at the description's offset starts, when it is
 * ours to know (~0: the kernel's offset, not asked for) */
#define POS(o) ((o) ? (o)->pos : ~(uint64_t)0)

ALEX_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	struct ofd *o = dbo(fd);
	uint64_t at = POS(o);
	return ALEX_TRACED_IO(fd, ALEX_TK_READ, at, n, buf, SERVED(o),
			      o ? db_rw(o, buf, n, 0) : REAL(read)(fd, buf, n));
}
ALEX_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	struct ofd *o = dbo(fd);
	uint64_t at = POS(o);
	return ALEX_TRACED_IO(fd, ALEX_TK_WRITE, at, n, buf, SERVED(o),
			      o ? db_rw(o, (void *)buf, n, 1) : REAL(write)(fd, buf, n));
}

/* The bytes an iovec array names, for the trace (0 when it is invalid). */
static uint64_t iov_bytes(const struct iovec *iov, int cnt)
{
	uint64_t n = 0;
	for (int i = 0; iov && i < cnt && i <= IOV_MAX; i++)
		n += iov[i].iov_len;
	return n;
}

/* Vectored I/O.  off < 0 means "at the description's offset". */
static ssize_t db_vec(struct ofd *o, const struct iovec *iov, int cnt, int64_t off, int writing)
{
	uint64_t pos = (uint64_t)off;
	enum alex_serve_io how = !writing ? ALEX_SERVE_READ
				: o->append && off < 0 ? ALEX_SERVE_APPEND : ALEX_SERVE_WRITE;

	if (cnt < 0 || cnt > IOV_MAX || off < -1) {
		errno = EINVAL;
		return -1;
	}
	return mem_io(o, iov, cnt, off < 0 ? &o->pos : &pos, how);
}

ALEX_EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
	struct ofd *o = dbo(fd);
	uint64_t at = POS(o);
	return ALEX_TRACED_IO(fd, ALEX_TK_READV, at, iov_bytes(iov, cnt), NULL, SERVED(o),
			      o ? db_vec(o, iov, cnt, -1, 0) : REAL(readv)(fd, iov, cnt));
}
ALEX_EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	struct ofd *o = dbo(fd);
	uint64_t at = POS(o);
	return ALEX_TRACED_IO(fd, ALEX_TK_WRITEV, at, iov_bytes(iov, cnt), NULL, SERVED(o),
			      o ? db_vec(o, iov, cnt, -1, 1) : REAL(writev)(fd, iov, cnt));
}
/* the positioned ones: off < 0 is EINVAL, but -1 for the v2 calls means
 * "at the description's offset" */
#define PVEC(kind, w, off, call)                                                                  \
	ALEX_TRACED_IO(fd, kind, off, iov_bytes(iov, cnt), NULL, SERVED(o),                       \
		       o ? db_vec(o, iov, cnt, off < 0 ? -2 : off, w) : (call))
ALEX_EXPORT ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
	struct ofd *o = dbo(fd);
	return PVEC(ALEX_TK_PREADV, 0, off, REAL(preadv)(fd, iov, cnt, off));
}
ALEX_EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	struct ofd *o = dbo(fd);
	return PVEC(ALEX_TK_PWRITEV, 1, off, REAL(pwritev)(fd, iov, cnt, off));
}
ALEX_EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
	struct ofd *o = dbo(fd);
	return PVEC(ALEX_TK_PREADV, 0, off, REAL(preadv64)(fd, iov, cnt, off));
}
ALEX_EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
	struct ofd *o = dbo(fd);
	return PVEC(ALEX_TK_PWRITEV, 1, off, REAL(pwritev64)(fd, iov, cnt, off));
}
ALEX_EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	struct ofd *o = dbo(fd);
	return ALEX_TRACED_IO(fd, ALEX_TK_PREADV, off, iov_bytes(iov, cnt), NULL, SERVED(o),
			      o ? db_vec(o, iov, cnt, off == -1 ? -1 : off, 0)
				: REAL(preadv2)(fd, iov, cnt, off, flags));
}
ALEX_EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	struct ofd *o = dbo(fd);
	return ALEX_TRACED_IO(fd, ALEX_TK_PWRITEV, off, iov_bytes(iov, cnt), NULL, SERVED(o),
			      o ? db_vec(o, iov, cnt, off == -1 ? -1 : off, 1)
				: REAL(pwritev2)(fd, iov, cnt, off, flags));
}

static off64_t db_seek(struct ofd *o, off64_t off, int whence)
{
	if (o->role == ROLE_JOURNAL)
		return alex_journal_seek(o->db, &o->pos, off, whence);
	if (o->role == ROLE_TEMP)
		return alex_temp_seek(o, off, whence);
	return alex_serve_seek(o->db, &o->pos, off, whence);
}

ALEX_EXPORT off_t lseek(int fd, off_t off, int whence)
{
	struct ofd *o = dbo(fd);
	return ALEX_TRACED_IO(fd, ALEX_TK_LSEEK, off, whence, NULL, SERVED(o),
			      o ? db_seek(o, off, whence) : REAL(lseek)(fd, off, whence));
}
ALEX_EXPORT off64_t lseek64(int fd, off64_t off, int whence)
{
	struct ofd *o = dbo(fd);
	return ALEX_TRACED_IO(fd, ALEX_TK_LSEEK, off, whence, NULL, SERVED(o),
			      o ? db_seek(o, off, whence) : REAL(lseek64)(fd, off, whence));
}

/* ---- syncs: the commit boundary ---------------------------------------- */

/* *sv: ALEX answered (the trace's flag) */
static int sync_common(int fd, int (*real)(int), int *sv)
{
	struct ofd *o = alex_fd_get(fd);

	*sv = ALEX_TF_SERVED;
	if (db_served(o)) {
		ALEX_COUNT(syncs_requested, 1);
		return alex_serve_commit(o->db);
	}
	if (o && o->role == ROLE_JOURNAL) {
		ALEX_COUNT(journal_syncs_elided, 1);
		return 0; /* the journal lives in memory */
	}
	if (alex_dirsync_take(fd)) {
		ALEX_COUNT(dir_syncs_elided, 1);
		return 0; /* SQLite's directory sync for a journal that lives in memory */
	}
	*sv = 0;
	int r = real(fd);
	if (r == 0)
		ALEX_REC(ALEX_TR_SYNC, o, fd, 0, 0, NULL, NULL);
	return r;
}

static int traced_sync(int fd, int (*real)(int), enum alex_tkind kind)
{
	int sv, tr = alex_trace_fd(fd);
	if (!tr)
		return sync_common(fd, real, &sv);
	uint64_t t0 = alex_trace_now();
	int r = sync_common(fd, real, &sv);
	alex_trace_io(tr, kind, fd, t0, 0, 0, r, NULL, sv);
	return r;
}

ALEX_EXPORT int fsync(int fd)
{
	return traced_sync(fd, REAL(fsync), ALEX_TK_FSYNC);
}
ALEX_EXPORT int fdatasync(int fd)
{
	return traced_sync(fd, REAL(fdatasync), ALEX_TK_FDATASYNC);
}
ALEX_EXPORT int sync_file_range(int fd, off64_t off, off64_t n, unsigned int flags)
{
	/* the base file is not where a served database's data goes; an
	 * in-memory journal has no pages to write */
	if (dbo(fd))
		return 0;
	return REAL(sync_file_range)(fd, off, n, flags);
}

/* ---- size changes -------------------------------------------------------- */

static int do_ftruncate(int fd, off64_t size, int (*real)(int, off64_t))
{
	struct ofd *o = alex_fd_get(fd);
	if (db_served(o))
		return alex_serve_truncate(o->db, size);
	if (o && o->role == ROLE_JOURNAL) {
		int r = alex_journal_truncate(o->db, size);
		return size == 0 ? (int)journal_done(o, r) : r;
	}
	if (o && o->role == ROLE_TEMP)
		return alex_temp_truncate(o, size);
	int r = real(fd, size);
	if (r == 0)
		ALEX_REC(ALEX_TR_TRUNC, o, fd, (uint64_t)size, 0, NULL, NULL);
	return r;
}
ALEX_EXPORT int ftruncate(int fd, off_t size)
{
	return ALEX_TRACED_IO(fd, ALEX_TK_FTRUNCATE, size, 0, NULL, SERVED(dbo(fd)),
			      do_ftruncate(fd, size, REAL(ftruncate)));
}
ALEX_EXPORT int ftruncate64(int fd, off64_t size)
{
	return ALEX_TRACED_IO(fd, ALEX_TK_FTRUNCATE, size, 0, NULL, SERVED(dbo(fd)),
			      do_ftruncate(fd, size, REAL(ftruncate64)));
}

/* Returns 0 or an errno (posix_fallocate's convention). */
static int db_allocate(struct ofd *o, int mode, int64_t off, int64_t len)
{
	if (off < 0 || len <= 0)
		return EINVAL;
	if (mode & ~FALLOC_FL_KEEP_SIZE)
		return EOPNOTSUPP; /* punching holes in a logical file: not supported */
	if (mode & FALLOC_FL_KEEP_SIZE)
		return 0;
	if (o->role == ROLE_JOURNAL)
		return alex_journal_extend(o->db, (uint64_t)off + (uint64_t)len);
	if (o->role == ROLE_TEMP)
		return alex_temp_extend(o, (uint64_t)off + (uint64_t)len);
	return alex_serve_extend(o->db, (uint64_t)off + (uint64_t)len);
}

static int do_fallocate(int fd, int mode, off64_t off, off64_t len,
			int (*real)(int, int, off64_t, off64_t))
{
	struct ofd *o = dbo(fd);
	if (!o)
		return real(fd, mode, off, len);
	int err = db_allocate(o, mode, off, len);
	return err ? (errno = err, -1) : 0;
}
ALEX_EXPORT int fallocate(int fd, int mode, off_t off, off_t len)
{
	return ALEX_TRACED_IO(fd, ALEX_TK_FALLOCATE, off, len, NULL, SERVED(dbo(fd)),
			      do_fallocate(fd, mode, off, len, REAL(fallocate)));
}
ALEX_EXPORT int fallocate64(int fd, int mode, off64_t off, off64_t len)
{
	return ALEX_TRACED_IO(fd, ALEX_TK_FALLOCATE, off, len, NULL, SERVED(dbo(fd)),
			      do_fallocate(fd, mode, off, len, REAL(fallocate64)));
}
ALEX_EXPORT int posix_fallocate(int fd, off_t off, off_t len)
{
	struct ofd *o = dbo(fd);
	return o ? db_allocate(o, 0, off, len) : REAL(posix_fallocate)(fd, off, len);
}
ALEX_EXPORT int posix_fallocate64(int fd, off64_t off, off64_t len)
{
	struct ofd *o = dbo(fd);
	return o ? db_allocate(o, 0, off, len) : REAL(posix_fallocate64)(fd, off, len);
}

/* ---- mmap: a mapping that shows the database (mmap.c) ------------------- */

typedef void *(*mmap_fn)(void *, size_t, int, int, int, off64_t);

static void *do_mmap(void *addr, size_t len, int prot, int flags, int fd, off64_t off,
		     mmap_fn real)
{
	struct ofd *o = (flags & MAP_ANONYMOUS) ? NULL : alex_fd_get(fd);

	if (o && o->role == ROLE_DB) {
		int saved = errno;
		void *p = alex_mmap_map(o->db, fd, len, prot, flags, off);
		if (p != MAP_FAILED)
			errno = saved;
		return p;
	}
	if (o && (o->role == ROLE_JOURNAL || o->role == ROLE_TEMP)) {
		/* an in-memory journal has no file to map, a temporary file
		 * under a key none in clear */
		ALEX_COUNT(mmaps_refused, 1);
		errno = ENODEV;
		return MAP_FAILED;
	}
	return real(addr, len, prot, flags, fd, off);
}

static void *traced_mmap(void *addr, size_t len, int prot, int flags, int fd, off64_t off,
			 mmap_fn real)
{
	if (__builtin_expect(!alex_tracing, 1) || (flags & MAP_ANONYMOUS))
		return do_mmap(addr, len, prot, flags, fd, off, real);
	int tr = alex_trace_fd(fd), sv = SERVED(dbo(fd));
	uint64_t t0 = alex_trace_now();
	void *p = do_mmap(addr, len, prot, flags, fd, off, real);
	if (tr)
		alex_trace_io(tr, ALEX_TK_MMAP, fd, t0, (uint64_t)off, len,
			      p == MAP_FAILED ? -1 : 0, NULL, sv);
	return p;
}

ALEX_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return traced_mmap(addr, len, prot, flags, fd, off, REAL(mmap));
}
ALEX_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
	return traced_mmap(addr, len, prot, flags, fd, off, REAL(mmap64));
}

/* SQLite's munmap and mremap of its mapping of a database; every other
 * call pays one load while no such mapping exists. */
ALEX_EXPORT int munmap(void *addr, size_t len)
{
	int r, saved = errno;
	if (__atomic_load_n(&alex_mmap_live, __ATOMIC_ACQUIRE) && alex_mmap_unmap(addr, len, &r)) {
		if (r == 0)
			errno = saved; /* a last reference may have closed an engine */
		return r;
	}
	return REAL(munmap)(addr, len);
}

ALEX_EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	void *to = NULL, *r;
	if (flags & MREMAP_FIXED) {
		va_list ap;
		va_start(ap, flags);
		to = va_arg(ap, void *);
		va_end(ap);
	}
	int saved = errno;
	if (__atomic_load_n(&alex_mmap_live, __ATOMIC_ACQUIRE) &&
	    alex_mmap_remap(old, old_len, new_len, flags, &r)) {
		if (r != MAP_FAILED)
			errno = saved;
		return r;
	}
	return REAL(mremap)(old, old_len, new_len, flags, to);
}
