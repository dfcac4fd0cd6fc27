/*
 * trace.c - the tracing mode's recorder (trace.h).
 *
 * Each thread owns a buffer of BUF_BYTES; recording an event is an atomic
 * exchange on the buffer's busy flag (uncontended: only a signal handler
 * of the same thread, or the exit flush, can contend) and packing it into
 * the buffer (trace_format.h, version 2: about 10 bytes an event, for less
 * work than compressing 48-byte events took).  A full buffer becomes one
 * chunk, written with one write(2) to the trace file opened with O_APPEND
 * for that write alone: the program may close any descriptor it likes, and
 * the chunks of many processes never interleave.
 * A trace file that cannot be written is reported once and tracing stops;
 * the program never sees an error of ours.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bytes.h"
#include "config.h"
#include "crc32c.h"
#include "match.h"
#include "multidb.h"
#include "sqlite_locks.h"
#include "trace.h"

#define BUF_BYTES (64u * 1024)
/* the most a packed event takes beyond its name: three bytes, seven
 * varints (start, off, len, res of at most 10 bytes; dur, fd, page of at
 * most 5), a lock byte and a name slot byte: 60, rounded up */
#define PACKED_MAX 64u

int alex_tracing;
uint8_t *alex_trace_roles;
unsigned alex_trace_nfd;

struct tbuf {
	struct tbuf *next;
	uint32_t tid;
	int busy;     /* recording or flushing now */
	int dead;     /* its thread is gone: free for the next new thread */
	uint32_t used, nev, dropped;
	/* what the chunk's next event is packed against: the previous
	 * event's start and fd, the names written out (trace_format.h) */
	uint64_t last_start;
	int32_t last_fd;
	uint32_t nnames;
	struct { uint32_t at, len; } names[ALEX_TRACE_NAME_REFS];
	/* the last paths classified by name: SQLite asks about the same
	 * journal and WAL names in every transaction, and fnmatch is dear */
	struct { uint32_t len; int role; char path[248]; } seen[4];
	unsigned next_seen;
	uint8_t data[BUF_BYTES]; /* the chunk header's room, then events */
};

static struct tbuf *all;        /* every buffer, pushed lock-free */
/* initial-exec: a preloaded library has static TLS, and the general model
 * would cost a __tls_get_addr call per event */
static __thread struct tbuf *mine __attribute__((tls_model("initial-exec")));
static pthread_key_t exit_key;  /* flushes a thread's buffer when it ends */
static pid_t pid;
static int at_exit;             /* after the exit flush: write each event out */

/* ---- the trace file ------------------------------------------------------ */

static void stop(const char *what, int err)
{
	if (__atomic_exchange_n(&alex_tracing, 0, __ATOMIC_ACQ_REL))
		alex_msg(ALEX_MSG_ERROR, "trace %s: %s: %s; tracing stops, the program goes on",
			 alex_cfg.trace_path, what, strerror(err));
}

static int append(const void *buf, size_t n)
{
	long fd = syscall(SYS_openat, AT_FDCWD, alex_cfg.trace_path,
			  O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) {
		stop("cannot open", errno);
		return -1;
	}
	long w = syscall(SYS_write, (int)fd, buf, n);
	int err = w < 0 ? errno : ENOSPC;
	syscall(SYS_close, (int)fd);
	if (w != (long)n) {
		stop("cannot write", err);
		return -1;
	}
	return 0;
}

static void header(struct tbuf *b, uint8_t *h, uint32_t stored, int flags)
{
	alex_put32(h, ALEX_TRACE_FILE_MAGIC);
	h[4] = ALEX_TRACE_VERSION;
	h[5] = 0;
	h[6] = ALEX_TRACE_HDR;
	h[7] = (uint8_t)flags;
	alex_put32(h + 8, (uint32_t)pid);
	alex_put32(h + 12, b->tid);
	alex_put32(h + 16, stored);
	alex_put32(h + 20, b->nev);
	/* a signal handler may count one while the chunk is written */
	alex_put32(h + 24, __atomic_exchange_n(&b->dropped, 0, __ATOMIC_RELAXED));
	alex_put32(h + 28, 0);
	alex_put32(h + 28, alex_crc32c(0, h, ALEX_TRACE_HDR + stored));
}

/* An empty chunk: what its first event is packed against. */
static void restart(struct tbuf *b)
{
	b->used = ALEX_TRACE_HDR;
	b->nev = 0;
	b->last_start = 0;
	b->last_fd = -1;
	b->nnames = 0;
}

/* Writes b's events as one chunk (the caller holds b->busy). */
static void flush(struct tbuf *b)
{
	if (b->nev && __atomic_load_n(&alex_tracing, __ATOMIC_ACQUIRE)) {
		header(b, b->data, b->used - ALEX_TRACE_HDR, 0);
		append(b->data, b->used);
	}
	restart(b);
}

/* ---- per-thread buffers ---------------------------------------------------- */

/* Writes b out unless someone is recording into it (its own thread's
 * signal handler, or the owner while another thread flushes at exit). */
static void flush_if_idle(struct tbuf *b)
{
	if (!__atomic_exchange_n(&b->busy, 1, __ATOMIC_ACQUIRE)) {
		flush(b);
		__atomic_store_n(&b->busy, 0, __ATOMIC_RELEASE);
	}
}

static void thread_done(void *arg)
{
	struct tbuf *b = arg;

	flush_if_idle(b);
	mine = NULL;
	__atomic_store_n(&b->dead, 1, __ATOMIC_RELEASE);
}

static struct tbuf *claim(void)
{
	for (struct tbuf *b = __atomic_load_n(&all, __ATOMIC_ACQUIRE); b; b = b->next) {
		int one = 1;
		if (__atomic_compare_exchange_n(&b->dead, &one, 0, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED))
			return b;
	}
	/* mmap, not malloc: a signal handler's first call may land here */
	struct tbuf *b = mmap(NULL, sizeof *b, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			      -1, 0);
	if (b == MAP_FAILED)
		return NULL;
	b->next = __atomic_load_n(&all, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&all, &b->next, b, 0, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		;
	return b;
}

static struct tbuf *my_buffer(void)
{
	if (__builtin_expect(mine != NULL, 1))
		return mine;
	struct tbuf *b = claim();
	if (!b)
		return NULL;
	b->tid = (uint32_t)syscall(SYS_gettid);
	restart(b);
	b->dropped = 0;
	mine = b;
	pthread_setspecific(exit_key, b);
	return b;
}

/* ---- recording ------------------------------------------------------------- */

static inline uint8_t *put_var(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static inline uint64_t zigzag(int64_t v)
{
	return (uint64_t)v << 1 ^ (uint64_t)(v >> 63);
}

/* The slot of a name this chunk has written out, or -1. */
static int name_slot(const struct tbuf *b, const char *name, uint32_t len)
{
	uint32_t n = b->nnames < ALEX_TRACE_NAME_REFS ? b->nnames : ALEX_TRACE_NAME_REFS;
	for (uint32_t i = 0; i < n; i++)
		if (b->names[i].len == len && memcmp(b->data + b->names[i].at, name, len) == 0)
			return (int)i;
	return -1;
}

/* Packs one event at the end of b (trace_format.h, version 2); b has room
 * for PACKED_MAX bytes and the name. */
static void pack(struct tbuf *b, const struct alex_tcall *c, uint64_t dur, int64_t res,
		 const char *name, uint32_t nlen)
{
	uint8_t *e = b->data + b->used, *p = e + 3, which = 0;
	uint64_t len = name ? nlen : c->len;
	int slot = name ? name_slot(b, name, nlen) : -1;

	e[0] = c->kind;
	e[1] = (uint8_t)(c->role << 4 | ((c->flags | (name ? ALEX_TF_NAME : 0)) & 15));
	p = put_var(p, zigzag((int64_t)(c->start - b->last_start)));
	b->last_start = c->start;
	p = put_var(p, dur > UINT32_MAX ? UINT32_MAX : dur);
	if (c->fd == b->last_fd)
		which |= ALEX_TP_SAMEFD;
	else
		p = put_var(p, zigzag(c->fd));
	b->last_fd = c->fd;
	if (c->off) {
		which |= ALEX_TP_OFF;
		p = put_var(p, c->off);
	}
	if (slot >= 0) {
		which |= ALEX_TP_REF;
		*p++ = (uint8_t)slot;
	} else if (len) {
		which |= ALEX_TP_LEN;
		p = put_var(p, len);
	}
	if (res == (int64_t)len && len) {
		which |= ALEX_TP_RESLEN;
	} else if (res) {
		which |= ALEX_TP_RES;
		p = put_var(p, zigzag(res));
	}
	if (c->page) {
		which |= ALEX_TP_PAGE;
		p = put_var(p, c->page);
	}
	if (c->lock) {
		which |= ALEX_TP_LOCK;
		*p++ = c->lock;
	}
	if (name && slot < 0) {
		uint32_t k = b->nnames++ % ALEX_TRACE_NAME_REFS;
		b->names[k].at = (uint32_t)(p - b->data);
		b->names[k].len = nlen;
		memcpy(p, name, nlen);
		p += nlen;
	}
	e[2] = which;
	b->used = (uint32_t)(p - b->data);
}

void alex_trace_put(struct alex_tcall *c, const char *name)
{
	int saved = errno;
	uint64_t end = alex_trace_now();
	struct tbuf *b;

	if (!__atomic_load_n(&alex_tracing, __ATOMIC_RELAXED) || !(b = my_buffer()))
		goto out;
	if (__atomic_exchange_n(&b->busy, 1, __ATOMIC_ACQUIRE)) {
		/* our own signal handler, mid-record: skip it */
		__atomic_add_fetch(&b->dropped, 1, __ATOMIC_RELAXED);
		goto out;
	}
	uint32_t nlen = name ? (uint32_t)strnlen(name, ALEX_TRACE_NAME_MAX) : 0;
	if (b->used + PACKED_MAX + nlen > BUF_BYTES)
		flush(b);
	pack(b, c, end - c->start, c->res < 0 ? -(int64_t)saved : c->res, name, nlen);
	b->nev++;
	if (__atomic_load_n(&at_exit, __ATOMIC_RELAXED))
		flush(b);
	__atomic_store_n(&b->busy, 0, __ATOMIC_RELEASE);
out:
	errno = saved;
}

/* The page a transfer holds, as far as its place and size tell. */
static uint32_t page_of(int role, uint64_t off, uint64_t n, int64_t res, const void *buf,
			int writing)
{
	int have = buf && (writing || res == (int64_t)n);

	switch (role) {
	case ALEX_TROLE_DB:
		if (off == 0)
			return 1;
		/* SQLite moves whole pages: a power of two from 512 to 64 KiB */
		if (n >= 512 && n <= 65536 && !(n & (n - 1)) && off % n == 0)
			return (uint32_t)(off / n + 1);
		return 0;
	case ALEX_TROLE_WAL:
		/* a frame header (24 bytes after the 32-byte WAL header) names
		 * its page in its first four bytes */
		return n == 24 && off >= 32 && have ? alex_get_be32(buf) : 0;
	case ALEX_TROLE_JOURNAL:
		/* a journal record starts with its page number */
		return n == 4 && have ? alex_get_be32(buf) : 0;
	}
	return 0;
}

void alex_trace_io(int role, enum alex_tkind kind, int fd, uint64_t start, uint64_t off,
		   uint64_t n, int64_t res, const void *buf, int flags)
{
	int writing = kind == ALEX_TK_WRITE || kind == ALEX_TK_PWRITE64 ||
		      kind == ALEX_TK_WRITEV || kind == ALEX_TK_PWRITEV;
	int reading = kind == ALEX_TK_READ || kind == ALEX_TK_PREAD64 ||
		      kind == ALEX_TK_READV || kind == ALEX_TK_PREADV;
	struct alex_tcall c = {
		.start = start, .off = off, .len = n, .res = res, .fd = fd,
		.page = writing || reading ? page_of(role, off, n, res, buf, writing) : 0,
		.kind = (uint8_t)kind, .role = (uint8_t)role, .flags = (uint8_t)flags,
	};
	alex_trace_put(&c, NULL);
}

void alex_trace_named(int role, enum alex_tkind kind, uint64_t start, int64_t res,
		      const char *path, int flags)
{
	struct alex_tcall c = { .start = start, .res = res, .fd = -1, .kind = (uint8_t)kind,
				.role = (uint8_t)role, .flags = (uint8_t)flags };
	alex_trace_put(&c, path);
}

/* ---- which files ------------------------------------------------------------- */

/* The directories of the databases seen: SQLite syncs a database's
 * directory by opening it by the name it got by cutting its journal's. */
#define NDIRS 16
static char dirs[NDIRS][256];
static int ndirs;

static void note_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t len = slash ? (size_t)(slash - path) : 0;

	if (!slash || len == 0 || len >= sizeof dirs[0])
		return;
	int n = __atomic_load_n(&ndirs, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++)
		if (strncmp(dirs[i], path, len) == 0 && dirs[i][len] == 0)
			return;
	int slot = __atomic_fetch_add(&ndirs, 1, __ATOMIC_ACQ_REL);
	if (slot >= NDIRS) {
		__atomic_store_n(&ndirs, NDIRS, __ATOMIC_RELEASE);
		return;
	}
	/* a reader racing with this sees an empty or a partial name: at worst
	 * one directory sync goes unlabelled */
	memcpy(dirs[slot], path, len);
	dirs[slot][len] = 0;
}

static int is_dir(const char *path)
{
	int n = __atomic_load_n(&ndirs, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n && i < NDIRS; i++)
		if (strcmp(dirs[i], path) == 0)
			return 1;
	return 0;
}

static int classify(const char *path)
{
	switch (alex_match(path, NULL, 0)) {
	case ROLE_DB: return ALEX_TROLE_DB;
	case ROLE_JOURNAL: return ALEX_TROLE_JOURNAL;
	case ROLE_WAL: return ALEX_TROLE_WAL;
	case ROLE_SHM: return ALEX_TROLE_SHM;
	case ROLE_NONE: case ROLE_DIR: case ROLE_TEMP: break; /* alex_match names neither */
	}
	if (alex_multidb_is_super(path))
		return ALEX_TROLE_SUPER;
	size_t len = strlen(path);
	if (len > 5 && strcmp(path + len - 5, "-alex") == 0)
		return ALEX_TROLE_LOG;
	if (is_dir(path))
		return ALEX_TROLE_DIR;
	return alex_tracing == 2 ? ALEX_TROLE_OTHER : 0;
}

int alex_trace_path_role(const char *path)
{
	if (!alex_tracing || !path)
		return 0;
	struct tbuf *b = my_buffer();
	size_t len = strlen(path);
	if (!b || len >= sizeof b->seen[0].path)
		return classify(path);
	for (int i = 0; i < 4; i++)
		if (b->seen[i].len == len && memcmp(b->seen[i].path, path, len) == 0)
			return b->seen[i].role;
	int role = classify(path);
	/* a file yet unknown may become a database's directory when a
	 * database opens: only what cannot change is kept (a directory once
	 * noted stays one; SQLite opens it for every commit's sync) */
	if (role != 0 && role != ALEX_TROLE_OTHER) {
		unsigned k = b->next_seen++ % 4;
		b->seen[k].len = (uint32_t)len;
		b->seen[k].role = role;
		memcpy(b->seen[k].path, path, len);
	}
	return role;
}

void alex_trace_opened(int fd, const char *path, uint64_t start, int flags)
{
	alex_trace_opened_as(fd, path, start, flags, alex_trace_path_role(path));
}

void alex_trace_opened_as(int fd, const char *path, uint64_t start, int flags, int role)
{
	if (fd >= 0 && (unsigned)fd < alex_trace_nfd)
		alex_trace_roles[fd] = (uint8_t)role; /* a number reused: forget the old */
	if (!role)
		return;
	if (role == ALEX_TROLE_DB && path)
		note_dir(path);
	struct alex_tcall c = { .start = start, .res = fd, .fd = fd, .kind = ALEX_TK_OPENAT,
				.role = (uint8_t)role, .flags = (uint8_t)flags };
	alex_trace_put(&c, path);
}

void alex_trace_closed(int fd)
{
	if ((unsigned)fd < alex_trace_nfd)
		alex_trace_roles[fd] = 0;
}

void alex_trace_dup(int oldfd, int newfd, int event)
{
	int role = alex_trace_fd(oldfd);
	if ((unsigned)newfd < alex_trace_nfd)
		alex_trace_roles[newfd] = (uint8_t)role;
	if (role && event) {
		/* so that the reader knows newfd's file (start: the copy is made) */
		struct alex_tcall c = { .start = alex_trace_now(), .off = (uint64_t)oldfd,
					.res = newfd, .fd = oldfd, .kind = ALEX_TK_DUP,
					.role = (uint8_t)role };
		alex_trace_put(&c, NULL);
	}
}

/* ---- locks ------------------------------------------------------------------ */

static uint8_t db_lock(const struct flock *l)
{
	if (l->l_start == 0 && l->l_len == 0)
		return ALEX_TL_DB_ALL;
	if (l->l_start == SQLITE_PENDING_BYTE)
		return l->l_len == 1 ? ALEX_TL_PENDING : l->l_len == 2 ? ALEX_TL_RESERVED
									: ALEX_TL_DB_ALL;
	if (l->l_start == SQLITE_RESERVED_BYTE && l->l_len == 1)
		return ALEX_TL_RESERVED;
	if (l->l_start == SQLITE_SHARED_FIRST && l->l_len == SQLITE_SHARED_SIZE)
		return l->l_type == F_WRLCK ? ALEX_TL_EXCLUSIVE : ALEX_TL_SHARED;
	return ALEX_TL_OTHER;
}

/* -shm: WAL_WRITE_LOCK at byte 120, then CKPT, RECOVER, READ0..4, DMS */
static uint8_t shm_lock(const struct flock *l)
{
	if (l->l_start < 120 || l->l_start > 128)
		return ALEX_TL_OTHER;
	if (l->l_len != 1)
		return ALEX_TL_WAL_RANGE;
	return (uint8_t)(ALEX_TL_WAL_WRITE + (l->l_start - 120));
}

void alex_trace_fcntl(int role, int fd, int cmd, const void *arg, uint64_t start, int res,
		      int flags)
{
	struct alex_tcall c = { .start = start, .res = res, .fd = fd, .kind = ALEX_TK_FCNTL,
				.role = (uint8_t)role, .flags = (uint8_t)flags };
	const struct flock *l = arg;
	int setting = cmd == F_SETLK || cmd == F_SETLKW || cmd == F_OFD_SETLK ||
		      cmd == F_OFD_SETLKW;

	if ((setting || cmd == F_GETLK || cmd == F_OFD_GETLK) && l) {
		unsigned t = l->l_type == F_RDLCK ? ALEX_TLT_RD : l->l_type == F_WRLCK ? ALEX_TLT_WR
										  : ALEX_TLT_UN;
		unsigned name = !setting ? ALEX_TL_GETLK
			      : role == ALEX_TROLE_SHM ? shm_lock(l)
			      : role == ALEX_TROLE_DB ? db_lock(l) : ALEX_TL_OTHER;
		c.off = (uint64_t)l->l_start;
		c.len = (uint64_t)l->l_len;
		c.lock = (uint8_t)(t << 6 | name);
		if (cmd == F_SETLKW || cmd == F_OFD_SETLKW)
			c.flags |= ALEX_TF_WAIT;
	} else {
		c.off = (uint64_t)cmd; /* not a lock: the command */
	}
	alex_trace_put(&c, NULL);
}

void alex_trace_own(int role, enum alex_tkind kind, int fd, uint64_t start, uint64_t off,
		    int64_t res, const struct flock *l)
{
	if (!start || !alex_tracing)
		return;
	if (kind == ALEX_TK_FCNTL && l) {
		alex_trace_fcntl(role, fd, (int)off, l, start, (int)res, ALEX_TF_ALEX);
		return;
	}
	struct alex_tcall c = { .start = start, .off = off, .res = res, .fd = fd,
				.kind = (uint8_t)kind, .role = (uint8_t)role, .flags = ALEX_TF_ALEX };
	alex_trace_put(&c, NULL);
}

/* ---- start, fork, exit ---------------------------------------------------------- */

static void proc_event(void)
{
	char exe[PATH_MAX];
	struct timespec rt;
	struct alex_tcall c = { .start = alex_trace_now(), .fd = -1, .kind = ALEX_TK_PROC,
				.lock = alex_cfg.mode == ALEX_MODE_ON };

	clock_gettime(CLOCK_REALTIME, &rt);
	c.off = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
	c.res = (int64_t)getppid();
	long n = syscall(SYS_readlink, "/proc/self/exe", exe, sizeof exe - 1);
	exe[n > 0 ? n : 0] = 0;
	alex_trace_put(&c, exe);
}

/* The child owns no event of its parent's: those are the parent's to write. */
static void forked(void)
{
	pid = getpid();
	for (struct tbuf *b = all; b; b = b->next) {
		restart(b);
		b->dropped = 0;
		b->busy = 0;
		if (b != mine)
			b->dead = 1;
	}
	if (mine)
		mine->tid = (uint32_t)syscall(SYS_gettid);
	proc_event();
}

void alex_trace_init(void)
{
	struct rlimit rl;
	unsigned n = 65536;

	if (!alex_cfg.trace)
		return;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY && rl.rlim_max > n)
		n = rl.rlim_max > (1u << 20) ? (1u << 20) : (unsigned)rl.rlim_max;
	/* zero pages: untouched entries cost no memory */
	void *t = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t == MAP_FAILED || pthread_key_create(&exit_key, thread_done)) {
		alex_msg(ALEX_MSG_ERROR, "trace %s: no memory for the tables; not tracing",
			 alex_cfg.trace_path);
		return;
	}
	alex_trace_roles = t;
	alex_trace_nfd = n;
	pid = getpid();
	/* a bad path is said now, once, not at the first full buffer */
	long fd = syscall(SYS_openat, AT_FDCWD, alex_cfg.trace_path,
			  O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) {
		alex_msg(ALEX_MSG_ERROR, "trace %s: cannot open: %s; not tracing, the program goes on",
			 alex_cfg.trace_path, strerror(errno));
		return;
	}
	syscall(SYS_close, (int)fd);
	pthread_atfork(NULL, NULL, forked);
	/* children may start elsewhere (chdir, then exec): one file for all */
	setenv("ALEX_TRACE", alex_cfg.trace_path, 1);
	__atomic_store_n(&alex_tracing, alex_cfg.trace, __ATOMIC_RELEASE);
	proc_event();
}

void alex_trace_flush_all(void)
{
	if (!__atomic_load_n(&alex_tracing, __ATOMIC_ACQUIRE))
		return;
	for (struct tbuf *b = __atomic_load_n(&all, __ATOMIC_ACQUIRE); b; b = b->next)
		flush_if_idle(b);
}

void alex_trace_exit(void)
{
	alex_trace_flush_all();
	__atomic_store_n(&at_exit, 1, __ATOMIC_RELEASE);
}
