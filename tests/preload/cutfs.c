/*
 * cutfs.c - the offline half of the power-cut campaign: from a recording
 * of every change a workload made to its files (ALEX_TEST_RECORD, the
 * format in core/io_test.h), rebuilds what the disk could hold had the
 * power failed at a chosen point.
 *
 *   cutfs count TRACE        the number of mutating records (WRITE, TRUNC,
 *                            SYNC, DIRSYNC), then the number of all records
 *   cutfs cut TRACE STARTDIR OUTDIR K MODEL SEED
 *                            the files as after a power cut just before the
 *                            Kth mutating record (K = count + 1: after all)
 *   cutfs dump TRACE         one line per record, for debugging
 *
 * STARTDIR holds the files as they were when the recording began (their
 * content counts as synced).  OUTDIR must be empty or absent; cut writes
 * into it every file some name refers to (but no "-shm": a power cut
 * leaves no shared memory), plus .acks ("stream txn t_ns" per ACK record
 * before the cut) and .cut ("t_ns kind [name]" of the record cut at).
 *
 * What became of the writes and truncations not yet synced, per MODEL:
 *   lose    none of them reached the disk
 *   keep    all of them did
 *   tear    all of them did but the newest write, of which a prefix of its
 *           512-byte sectors did (0 to all, from SEED)
 *   subset  each, independently: lost (3/8), kept (3/8), or kept sector
 *           by sector (2/8, each sector 1/2), drawn from SEED, in the order
 *           the files first appeared (a truncation is lost or kept whole)
 * Sectors are the pieces of a write split at file offsets that are
 * multiples of 512.  A write kept in part extends the file to its end only
 * if some sector of it was kept; what no kept sector covers then reads as
 * zeros.  Directory changes (NAME of a new file, RENAME, UNLINK) are
 * durable at once -- with MODEL+dirs, only up to the directory's last sync
 * (DIRSYNC): every name then refers to what it referred to at that sync,
 * as a file system that loses its last metadata transactions leaves it,
 * and the files keep whatever content MODEL gives them.  (Only ALEX's
 * directory syncs are recorded: SQLite's own files are then named as at
 * ALEX's last one, so +dirs suits workloads where ALEX makes every name.)
 * A WRITEOUT (sync_file_range) makes the file's writes inside its pages
 * durable at the next SYNC of any file, as a device's cache flush does.
 *
 * Files are identified by inode number.  A number seen for the first time
 * in a NAME starts as the starting directory's file of that name, if that
 * name still refers to it, else empty.  (A rename carries a starting file
 * no one opened yet along; one still named at the cut is written out as
 * it was.)  A NAME of a number whose file had names and has lost them all
 * is a new file that reuses the number (file systems do reuse them, e.g.
 * for a journal deleted and created again).  Writes to a file no name
 * refers to still apply to it (its NAME may come later).
 *
 * Exit status: 0 done, 1 usage or I/O error, 2 malformed trace (a
 * truncated last record is only warned about: its writer may have died).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <search.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io_test.h"

#define EXIT_USAGE 1
#define EXIT_BAD_TRACE 2
#define SECTOR 512u
/* Past this a length or a file size is taken for garbage, not data. */
#define ABSURD ((uint64_t)1 << 30)

_Static_assert(sizeof(struct alex_trace_rec) == 48, "the trace header is 48 bytes, unpadded");

/* ---------------------------------------------------------------- misc */

static void die(int status, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
static void die(int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("cutfs: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(status);
}

/* Running out of memory leaves nothing sensible to do but stop. */
static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die(EXIT_USAGE, "out of memory (%zu bytes)", n);
	return p;
}

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xrealloc(NULL, n), s, n);
}

/* The array p of *cap elements, with room for need. */
static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return p;
	size_t n = *cap ? *cap * 2 : 16;
	while (n < need)
		n *= 2;
	*cap = n;
	return xrealloc(p, n * elem);
}

/* The PRNG of core/io_mem.c, so that seeds mean the same sort of thing. */
static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static bool parse_u64(const char *s, uint64_t *v)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-')
		return false;
	*v = x;
	return true;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);
	return n >= t && strcmp(s + n - t, tail) == 0;
}

/* ----------------------------------------------------------- the trace */

struct trace {
	const char *path;
	const unsigned char *base; /* the whole file, mapped */
	size_t size;
};

/* One decoded record. */
struct rec {
	struct alex_trace_rec h;
	uint64_t at;               /* byte offset of its header in the trace */
	uint64_t index;            /* 1-based among all records */
	uint64_t mut;              /* 1-based among mutating records, 0 if not one */
	const unsigned char *data; /* WRITE: its len bytes, inside the mapping */
	char name[NAME_MAX + 1];   /* its path, RENAME's from ("" if none) */
	char name2[NAME_MAX + 1];  /* RENAME's to */
};

enum step { STEP_REC, STEP_END, STEP_TAIL, STEP_BAD };

struct cursor {
	const struct trace *t;
	uint64_t pos, index, mut;
	char why[160]; /* what was wrong, for STEP_TAIL and STEP_BAD */
};

static const char *kind_name(uint32_t kind)
{
	static const char *const names[] = { "?", "name", "write", "trunc", "sync",
					     "rename", "unlink", "ack", "dirsync", "writeout" };
	return kind < sizeof names / sizeof *names ? names[kind] : "?";
}

/* The records the cut points are counted among: those that change data,
 * and the directory's syncs (a cut just before one is where +dirs loses
 * most). */
static bool is_mutating(uint32_t kind)
{
	return kind == ALEX_TR_WRITE || kind == ALEX_TR_TRUNC || kind == ALEX_TR_SYNC ||
	       kind == ALEX_TR_DIRSYNC;
}

static void trace_open(struct trace *t, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		die(EXIT_USAGE, "%s: %s", path, strerror(errno));
	t->path = path;
	t->size = (size_t)st.st_size;
	t->base = NULL;
	if (t->size) { /* mmap refuses an empty file: an empty trace is fine */
		void *m = mmap(NULL, t->size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED)
			die(EXIT_USAGE, "%s: mmap: %s", path, strerror(errno));
		madvise(m, t->size, MADV_SEQUENTIAL);
		t->base = m;
	}
	close(fd);
}

static void trace_close(struct trace *t)
{
	if (t->base)
		munmap((void *)t->base, t->size);
	t->base = NULL;
}

/* A bare file name: what a campaign's single directory can hold. */
static bool valid_name(const char *s)
{
	return *s && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

/* Copies the name in p[0, n) (up to a NUL, if any) into out; false if it
 * does not fit. */
static bool copy_name(char out[NAME_MAX + 1], const unsigned char *p, size_t n)
{
	const unsigned char *nul = memchr(p, 0, n);
	size_t len = nul ? (size_t)(nul - p) : n;
	if (len > NAME_MAX)
		return false;
	memcpy(out, p, len);
	out[len] = 0;
	return true;
}

/* Decodes a record's path bytes; false (and why) if a directory operation
 * names something no file in one directory can be named. */
static bool decode_names(struct rec *r, const unsigned char *p, size_t plen, char *why,
			 size_t whylen)
{
	uint32_t kind = r->h.kind;
	r->name[0] = r->name2[0] = 0;
	if (kind == ALEX_TR_RENAME) {
		const unsigned char *nul = memchr(p, 0, plen);
		size_t first = nul ? (size_t)(nul - p) : plen;
		if (!nul || !copy_name(r->name, p, first) ||
		    !copy_name(r->name2, nul + 1, plen - first - 1) || !valid_name(r->name) ||
		    !valid_name(r->name2)) {
			snprintf(why, whylen, "rename without two file names");
			return false;
		}
	} else if (kind == ALEX_TR_NAME || kind == ALEX_TR_UNLINK) {
		if (!copy_name(r->name, p, plen) || !valid_name(r->name)) {
			snprintf(why, whylen, "%s without a file name", kind_name(kind));
			return false;
		}
	} else if (!copy_name(r->name, p, plen)) { /* only shown: shorten it */
		memcpy(r->name, p, NAME_MAX);
		r->name[NAME_MAX] = 0;
	}
	return true;
}

/* Checks what the header alone can tell; false (and why) if it is garbage. */
static bool header_sane(const struct alex_trace_rec *h, char *why, size_t whylen)
{
	if (h->magic != ALEX_TRACE_MAGIC)
		snprintf(why, whylen, "bad magic 0x%08" PRIx32, h->magic);
	else if (h->kind < ALEX_TR_NAME || h->kind > ALEX_TR_WRITEOUT)
		snprintf(why, whylen, "unknown kind %" PRIu32, h->kind);
	else if (h->plen > ABSURD)
		snprintf(why, whylen, "path length %" PRIu32, h->plen);
	else if (h->kind == ALEX_TR_WRITE && (h->len > ABSURD || h->off > ABSURD - h->len))
		snprintf(why, whylen, "write of %" PRIu64 " bytes at %" PRIu64, h->len, h->off);
	else if (h->kind == ALEX_TR_TRUNC && h->off > ABSURD)
		snprintf(why, whylen, "truncation to %" PRIu64 " bytes", h->off);
	else
		return true;
	return false;
}

/* Decodes the record at the cursor and steps past it. */
static enum step next_record(struct cursor *c, struct rec *r)
{
	const struct trace *t = c->t;
	size_t left = t->size - (size_t)c->pos;
	const unsigned char *p = t->base + c->pos;

	if (!left)
		return STEP_END;
	if (left < sizeof r->h) {
		snprintf(c->why, sizeof c->why, "header of %zu bytes", left);
		return STEP_TAIL;
	}
	memcpy(&r->h, p, sizeof r->h); /* the mapping need not be aligned for it */
	if (!header_sane(&r->h, c->why, sizeof c->why))
		return STEP_BAD;
	uint64_t body = r->h.plen + (r->h.kind == ALEX_TR_WRITE ? r->h.len : 0);
	if (body > left - sizeof r->h) {
		snprintf(c->why, sizeof c->why, "%" PRIu64 " bytes of %" PRIu64 " after the header",
			 (uint64_t)(left - sizeof r->h), body);
		return STEP_TAIL;
	}
	p += sizeof r->h;
	if (!decode_names(r, p, r->h.plen, c->why, sizeof c->why))
		return STEP_BAD;
	r->data = r->h.kind == ALEX_TR_WRITE ? p + r->h.plen : NULL;
	r->at = c->pos;
	r->index = ++c->index;
	r->mut = is_mutating(r->h.kind) ? ++c->mut : 0;
	c->pos += sizeof r->h + body;
	return STEP_REC;
}

/* Calls visit for each record until it returns false.  A malformed record
 * ends the program (status 2); a truncated last one is warned about unless
 * quiet, and ignored. */
static void walk(const struct trace *t, bool quiet,
		 bool (*visit)(void *ctx, const struct rec *r), void *ctx)
{
	struct cursor c = { .t = t };
	struct rec r;

	for (;;) {
		switch (next_record(&c, &r)) {
		case STEP_REC:
			if (!visit(ctx, &r))
				return;
			continue;
		case STEP_END:
			return;
		case STEP_TAIL:
			if (!quiet)
				fprintf(stderr,
					"cutfs: %s: warning: truncated last record at byte %" PRIu64
					" ignored (%s)\n",
					t->path, c.pos, c.why);
			return;
		case STEP_BAD:
			die(EXIT_BAD_TRACE, "%s: bad record at byte %" PRIu64 ": %s", t->path, c.pos,
			    c.why);
		}
	}
}

/* ------------------------------------------------------- file contents */

struct buf {
	unsigned char *p;
	size_t size, cap;
};

/* Sets the size; what a file grows by reads as zeros. */
static void buf_resize(struct buf *b, size_t n)
{
	if (n > b->cap) {
		size_t cap = b->cap < 4096 ? 4096 : b->cap;
		while (cap < n)
			cap *= 2;
		b->p = xrealloc(b->p, cap);
		b->cap = cap;
	}
	if (n > b->size)
		memset(b->p + b->size, 0, n - b->size);
	b->size = n;
}

static void buf_write(struct buf *b, size_t off, const unsigned char *data, size_t len)
{
	if (!len)
		return; /* as pwrite: writing nothing past the end does not extend */
	if (off + len > b->size)
		buf_resize(b, off + len);
	memcpy(b->p + off, data, len);
}

static void buf_free(struct buf *b)
{
	free(b->p);
	*b = (struct buf){ 0 };
}

/* A write or truncation not yet synced: kept to be replayed, or not. */
struct op {
	uint64_t seq; /* its record's index: the order across files */
	uint32_t kind;
	uint64_t off, len;
	const unsigned char *data; /* WRITE: in the trace's mapping, not copied */
	bool out; /* written out: durable at the next SYNC of any file */
};

static void op_apply(struct buf *b, const struct op *op)
{
	if (op->kind == ALEX_TR_WRITE)
		buf_write(b, (size_t)op->off, op->data, (size_t)op->len);
	else
		buf_resize(b, (size_t)op->off);
}

/*
 * Applies those of a write's sectors that keep() says reached the disk.
 * Sectors are the 512-byte-aligned pieces of the file the write covers (the
 * first and last may be partial).  The file grows to the write's end only if
 * some sector was kept -- a disk that kept none has nothing to show for it --
 * and the bytes it grows by that no kept sector covers read as zeros.
 */
static void op_apply_sectors(struct buf *b, const struct op *op,
			     bool (*keep)(void *ctx, uint64_t sector), void *ctx)
{
	uint64_t end = op->off + op->len, i = 0;
	for (uint64_t sec = op->off & ~(uint64_t)(SECTOR - 1); sec < end; sec += SECTOR, i++) {
		uint64_t a = sec < op->off ? op->off : sec;
		uint64_t z = sec + SECTOR < end ? sec + SECTOR : end;
		if (!keep(ctx, i))
			continue;
		if (end > b->size)
			buf_resize(b, (size_t)end);
		memcpy(b->p + a, op->data + (a - op->off), (size_t)(z - a));
	}
}

static uint64_t op_sectors(const struct op *op)
{
	if (!op->len)
		return 0;
	return (op->off + op->len - 1) / SECTOR - op->off / SECTOR + 1;
}

/* ------------------------------------------------------ the file system */

struct inode {
	uint64_t ino;
	struct buf durable; /* its content as of its last SYNC */
	struct op *ops;     /* its writes and truncations since, in order */
	size_t nops, capops;
	unsigned nlink;     /* how many names refer to it now */
	bool dead;          /* had names and lost them all: its content is gone */
};

enum binding { B_NONE, B_START, B_INODE };

/* A name, and what it refers to -- now, and as of the directory's last
 * sync (what a cut with +dirs keeps). */
struct name {
	char *name;
	enum binding what;
	struct inode *inode; /* B_INODE */
	char *start;         /* B_START: that file of the starting directory,
				not yet opened (a rename may have moved it) */
	enum binding dwhat;  /* the same, durable */
	struct inode *dinode;
	char *dstart;
};

struct fs {
	int start_fd;          /* the starting directory */
	struct inode **inodes; /* all, in order of appearance */
	size_t ninodes, capinodes;
	void *by_ino;          /* tsearch tree: the current inode of each number */
	struct name **names;   /* all, in order of appearance */
	size_t nnames, capnames;
	void *by_name;         /* tsearch tree of names */
};

static int cmp_ino(const void *a, const void *b)
{
	uint64_t x = ((const struct inode *)a)->ino, y = ((const struct inode *)b)->ino;
	return x < y ? -1 : x > y;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct name *)a)->name, ((const struct name *)b)->name);
}

static struct name *name_get(struct fs *fs, const char *s)
{
	struct name key = { .name = (char *)s };
	void **found = tfind(&key, &fs->by_name, cmp_name);
	if (found)
		return *found;
	struct name *n = xrealloc(NULL, sizeof *n);
	*n = (struct name){ .name = xstrdup(s) };
	if (!tsearch(n, &fs->by_name, cmp_name))
		die(EXIT_USAGE, "out of memory");
	fs->names = grow(fs->names, &fs->capnames, fs->nnames + 1, sizeof *fs->names);
	fs->names[fs->nnames++] = n;
	return n;
}

static struct inode *inode_find(struct fs *fs, uint64_t ino)
{
	struct inode key = { .ino = ino };
	void **found = tfind(&key, &fs->by_ino, cmp_ino);
	return found ? *found : NULL;
}

/* A new, empty file under number ino, replacing any old one of that number. */
static struct inode *inode_new(struct fs *fs, uint64_t ino)
{
	struct inode *in = xrealloc(NULL, sizeof *in);
	*in = (struct inode){ .ino = ino };
	void **slot = tsearch(in, &fs->by_ino, cmp_ino);
	if (!slot)
		die(EXIT_USAGE, "out of memory");
	*slot = in; /* same key: the tree stays ordered */
	fs->inodes = grow(fs->inodes, &fs->capinodes, fs->ninodes + 1, sizeof *fs->inodes);
	fs->inodes[fs->ninodes++] = in;
	return in;
}

/* The file a write, truncation or sync is about: one never named is kept
 * too, in case its name comes later. */
static struct inode *inode_get(struct fs *fs, uint64_t ino)
{
	struct inode *in = inode_find(fs, ino);
	return in ? in : inode_new(fs, ino);
}

static void inode_push(struct inode *in, const struct rec *r)
{
	in->ops = grow(in->ops, &in->capops, in->nops + 1, sizeof *in->ops);
	in->ops[in->nops++] = (struct op){ .seq = r->index, .kind = r->h.kind, .off = r->h.off,
					   .len = r->h.len, .data = r->data };
}

/* SYNC: everything written to it so far is on the disk.  A dead file's
 * content is not kept, only its writes (TEAR may pick one). */
static void inode_sync(struct inode *in)
{
	for (size_t i = 0; i < in->nops && !in->dead; i++)
		op_apply(&in->durable, &in->ops[i]);
	in->nops = 0;
}

/* WRITEOUT: the writes inside the range's pages reach the disk with the
 * next SYNC of any file.  When a write crosses the range's edge, or a
 * truncation is pending, none is marked: the model then keeps less than a
 * disk would, never more. */
static void inode_writeout(struct inode *in, uint64_t off, uint64_t len)
{
	for (size_t i = 0; i < in->nops; i++)
		if (in->ops[i].kind != ALEX_TR_WRITE ||
		    alex_io_out_covers(off, len, in->ops[i].off, in->ops[i].len) < 0)
			return;
	for (size_t i = 0; i < in->nops; i++)
		if (alex_io_out_covers(off, len, in->ops[i].off, in->ops[i].len) > 0)
			in->ops[i].out = true;
}

/* A SYNC flushes the device's cache: every file's written-out writes go
 * with it.  Those still pending lie outside their ranges, so applying the
 * written-out ones first keeps each byte's order. */
static void fs_flush_out(struct fs *fs)
{
	for (size_t j = 0; j < fs->ninodes; j++) {
		struct inode *in = fs->inodes[j];
		size_t k = 0;
		for (size_t i = 0; i < in->nops; i++) {
			if (!in->ops[i].out)
				in->ops[k++] = in->ops[i];
			else if (!in->dead)
				op_apply(&in->durable, &in->ops[i]);
		}
		in->nops = k;
	}
}

/* Reads the starting directory's file src as the durable content of in. */
static void inode_load(struct inode *in, int dir_fd, const char *src)
{
	int fd = openat(dir_fd, src, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		die(EXIT_USAGE, "starting file %s: %s", src, strerror(errno));
	if ((uint64_t)st.st_size > ABSURD)
		die(EXIT_USAGE, "starting file %s: too large", src);
	buf_resize(&in->durable, (size_t)st.st_size);
	for (size_t got = 0; got < in->durable.size;) {
		ssize_t n = read(fd, in->durable.p + got, in->durable.size - got);
		if (n <= 0)
			die(EXIT_USAGE, "starting file %s: %s", src, n ? strerror(errno) : "shrank");
		got += (size_t)n;
	}
	close(fd);
}

/* The name refers to nothing now; a file it was the last name of is gone. */
static void unbind(struct name *n)
{
	if (n->what == B_INODE && --n->inode->nlink == 0)
		n->inode->dead = true; /* its content stays: a lost unlink (+dirs) */
	free(n->start);
	n->start = NULL;
	n->inode = NULL;
	n->what = B_NONE;
}

static void bind(struct name *n, struct inode *in)
{
	in->nlink++; /* first: in may be what n referred to */
	unbind(n);
	n->what = B_INODE;
	n->inode = in;
}

/* NAME: path refers to the file of number ino now (an open).  A number
 * first seen here starts as the unopened starting file path names, if any. */
static void fs_name(struct fs *fs, uint64_t ino, const char *path)
{
	struct name *n = name_get(fs, path);
	struct inode *in = inode_find(fs, ino);

	if (in && in->dead)
		in = NULL; /* the number was freed and reused: a new file */
	if (!in) {
		in = inode_new(fs, ino);
		if (n->what == B_START) {
			inode_load(in, fs->start_fd, n->start);
			/* an open, not a name change: the durable name is this
			 * file too, if it was the same starting file */
			if (n->dwhat == B_START && strcmp(n->dstart, n->start) == 0) {
				n->dwhat = B_INODE;
				n->dinode = in;
			}
		}
	}
	bind(n, in);
}

/* DIRSYNC: every name as it is now becomes durable. */
static void fs_dirsync(struct fs *fs)
{
	for (size_t i = 0; i < fs->nnames; i++) {
		struct name *n = fs->names[i];
		free(n->dstart);
		n->dstart = n->start ? xstrdup(n->start) : NULL;
		n->dwhat = n->what;
		n->dinode = n->inode;
	}
}

/* RENAME: to refers to what from did, and from to nothing. */
static void fs_rename(struct fs *fs, const char *from, const char *to)
{
	struct name *f = name_get(fs, from), *t = name_get(fs, to);

	if (f == t || (f->what == B_INODE && t->what == B_INODE && f->inode == t->inode))
		return; /* as rename(2): two names of one file stay */
	if (f->what == B_INODE) {
		bind(t, f->inode);
	} else if (f->what == B_START) {
		unbind(t);
		t->what = B_START;
		t->start = f->start;
		f->start = NULL;
	} else {
		fprintf(stderr, "cutfs: warning: rename of %s, which names nothing known, over %s\n",
			from, to);
		unbind(t);
	}
	unbind(f);
}

/* Brings one record before the cut to bear. */
static void fs_apply(struct fs *fs, const struct rec *r)
{
	switch (r->h.kind) {
	case ALEX_TR_NAME:
		fs_name(fs, r->h.ino, r->name);
		break;
	case ALEX_TR_WRITE:
	case ALEX_TR_TRUNC:
		inode_push(inode_get(fs, r->h.ino), r);
		break;
	case ALEX_TR_SYNC:
		fs_flush_out(fs);
		inode_sync(inode_get(fs, r->h.ino));
		break;
	case ALEX_TR_WRITEOUT:
		inode_writeout(inode_get(fs, r->h.ino), r->h.off, r->h.len);
		break;
	case ALEX_TR_RENAME:
		fs_rename(fs, r->name, r->name2);
		break;
	case ALEX_TR_UNLINK:
		unbind(name_get(fs, r->name));
		break;
	case ALEX_TR_DIRSYNC:
		fs_dirsync(fs);
		break;
	default: /* ACK: collected by the caller */
		break;
	}
}

/* Every regular file of the starting directory, named and unopened. */
static void fs_init(struct fs *fs, const char *startdir)
{
	*fs = (struct fs){ 0 };
	fs->start_fd = open(startdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fs->start_fd < 0 ? NULL : fdopendir(dup(fs->start_fd));
	if (!d)
		die(EXIT_USAGE, "%s: %s", startdir, strerror(errno));
	for (struct dirent *e; (e = readdir(d));) {
		struct stat st;
		if (fstatat(fs->start_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		struct name *n = name_get(fs, e->d_name);
		n->what = n->dwhat = B_START;
		n->start = xstrdup(e->d_name);
		n->dstart = xstrdup(e->d_name);
	}
	closedir(d);
}

static void keep_node(void *p)
{
	(void)p; /* the arrays own what the trees point to */
}

static void fs_free(struct fs *fs)
{
	tdestroy(fs->by_ino, keep_node);
	tdestroy(fs->by_name, keep_node);
	for (size_t i = 0; i < fs->ninodes; i++) {
		buf_free(&fs->inodes[i]->durable);
		free(fs->inodes[i]->ops);
		free(fs->inodes[i]);
	}
	for (size_t i = 0; i < fs->nnames; i++) {
		free(fs->names[i]->name);
		free(fs->names[i]->start);
		free(fs->names[i]->dstart);
		free(fs->names[i]);
	}
	free(fs->inodes);
	free(fs->names);
	close(fs->start_fd);
}

/* A name the inode of number ino goes by now, or "". */
static const char *fs_name_of(const struct fs *fs, uint64_t ino)
{
	for (size_t i = 0; i < fs->nnames; i++) {
		const struct name *n = fs->names[i];
		if (n->what == B_INODE && n->inode->ino == ino)
			return n->name;
	}
	return "";
}

/* --------------------------------------------------------- the power cut */

enum model { M_LOSE, M_KEEP, M_TEAR, M_SUBSET };

struct cutter {
	enum model model;
	uint64_t rng;        /* SUBSET's draws */
	const struct op *torn; /* TEAR: the newest unsynced write */
	uint64_t torn_keep;    /* TEAR: how many of its sectors are kept */
};

static bool keep_prefix(void *ctx, uint64_t sector)
{
	return sector < ((const struct cutter *)ctx)->torn_keep;
}

static bool keep_coin(void *ctx, uint64_t sector)
{
	(void)sector;
	return splitmix(&((struct cutter *)ctx)->rng) % 2;
}

/* TEAR: picks the newest write not yet synced, of any file, and how many
 * of its sectors reached the disk. */
static void cutter_pick_torn(struct cutter *c, const struct fs *fs, uint64_t seed)
{
	c->torn = NULL;
	for (size_t i = 0; i < fs->ninodes; i++) {
		const struct inode *in = fs->inodes[i];
		for (size_t k = 0; k < in->nops; k++) {
			const struct op *op = &in->ops[k];
			if (op->kind == ALEX_TR_WRITE && op->len && (!c->torn || op->seq > c->torn->seq))
				c->torn = op;
		}
	}
	uint64_t s = seed;
	c->torn_keep = c->torn ? splitmix(&s) % (op_sectors(c->torn) + 1) : 0;
}

/* SUBSET: what a disk that reorders writes kept of one change. */
static void subset_apply(struct cutter *c, struct buf *b, const struct op *op)
{
	uint64_t r = splitmix(&c->rng) % 8;
	if (r < 3)
		return; /* lost */
	if (r < 6 || op->kind != ALEX_TR_WRITE)
		op_apply(b, op); /* kept whole; a truncation has no sectors to split */
	else
		op_apply_sectors(b, op, keep_coin, c);
}

/* Leaves in the durable content of in what the disk holds after the cut. */
static void cutter_settle(struct cutter *c, struct inode *in)
{
	for (size_t k = 0; k < in->nops; k++) {
		const struct op *op = &in->ops[k];
		switch (c->model) {
		case M_LOSE:
			break;
		case M_KEEP:
			op_apply(&in->durable, op);
			break;
		case M_TEAR:
			if (op == c->torn)
				op_apply_sectors(&in->durable, op, keep_prefix, c);
			else
				op_apply(&in->durable, op);
			break;
		case M_SUBSET:
			subset_apply(c, &in->durable, op);
			break;
		}
	}
	in->nops = 0;
}

/* ------------------------------------------------------------- output */

/* OUTDIR, created if absent; it must be empty so that nothing stale is
 * taken for what the cut left. */
static int outdir_open(const char *path)
{
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		die(EXIT_USAGE, "%s: %s", path, strerror(errno));
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(dup(fd));
	if (!d)
		die(EXIT_USAGE, "%s: %s", path, strerror(errno));
	for (struct dirent *e; (e = readdir(d));)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			die(EXIT_USAGE, "%s: not empty (%s)", path, e->d_name);
	closedir(d);
	return fd;
}

static void write_all(int fd, const char *what, const void *p, size_t n)
{
	for (size_t done = 0; done < n;) {
		ssize_t w = write(fd, (const char *)p + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			die(EXIT_USAGE, "%s: %s", what, strerror(errno));
		done += (size_t)w;
	}
}

static int create_in(int dir_fd, const char *name)
{
	int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		die(EXIT_USAGE, "%s: %s", name, strerror(errno));
	return fd;
}

static void write_file(int dir_fd, const char *name, const struct buf *b)
{
	int fd = create_in(dir_fd, name);
	write_all(fd, name, b->p, b->size);
	if (close(fd) < 0)
		die(EXIT_USAGE, "%s: %s", name, strerror(errno));
}

/* A starting file no one opened: on the disk as it was. */
static void copy_start_file(int start_fd, const char *src, int dir_fd, const char *name)
{
	int in = openat(start_fd, src, O_RDONLY | O_CLOEXEC), out = create_in(dir_fd, name);
	char chunk[1 << 16];
	ssize_t n;
	if (in < 0)
		die(EXIT_USAGE, "starting file %s: %s", src, strerror(errno));
	while ((n = read(in, chunk, sizeof chunk)) > 0)
		write_all(out, name, chunk, (size_t)n);
	if (n < 0 || close(out) < 0)
		die(EXIT_USAGE, "%s: %s", name, strerror(errno));
	close(in);
}

/* Writes out every file a name refers to (as of the directory's last
 * sync: dirs), but shared memory. */
static void fs_write_out(struct fs *fs, int dir_fd, bool dirs)
{
	for (size_t i = 0; i < fs->nnames; i++) {
		const struct name *n = fs->names[i];
		enum binding what = dirs ? n->dwhat : n->what;
		if (ends_with(n->name, "-shm"))
			continue;
		if (what == B_INODE)
			write_file(dir_fd, n->name, &(dirs ? n->dinode : n->inode)->durable);
		else if (what == B_START)
			copy_start_file(fs->start_fd, dirs ? n->dstart : n->start, dir_fd, n->name);
	}
}

/* ------------------------------------------------------------ commands */

static bool count_visit(void *ctx, const struct rec *r)
{
	uint64_t *n = ctx;
	n[0] = r->mut ? r->mut : n[0];
	n[1] = r->index;
	return true;
}

/* n[0]: mutating records, n[1]: all (a truncated tail not counted). */
static void count_records(const struct trace *t, bool quiet, uint64_t n[2])
{
	n[0] = n[1] = 0;
	walk(t, quiet, count_visit, n);
}

static int cmd_count(const char *path)
{
	struct trace t;
	uint64_t n[2];
	trace_open(&t, path);
	count_records(&t, false, n);
	printf("%" PRIu64 "\n%" PRIu64 "\n", n[0], n[1]);
	trace_close(&t);
	return 0;
}

static bool dump_visit(void *ctx, const struct rec *r)
{
	(void)ctx;
	char mut[24] = "-";
	if (r->mut)
		snprintf(mut, sizeof mut, "%" PRIu64, r->mut);
	printf("%7" PRIu64 " %7s @%-10" PRIu64 " %-7s pid=%-7" PRIu32 " ino=%-9" PRIu64
	       " off=%-10" PRIu64 " len=%-8" PRIu64 " t=%" PRIu64,
	       r->index, mut, r->at, kind_name(r->h.kind), r->h.pid, r->h.ino, r->h.off, r->h.len,
	       r->h.t_ns);
	if (r->h.kind == ALEX_TR_RENAME)
		printf(" %s -> %s", r->name, r->name2);
	else if (r->name[0])
		printf(" %s", r->name);
	putchar('\n');
	return true;
}

static int cmd_dump(const char *path)
{
	struct trace t;
	trace_open(&t, path);
	walk(&t, false, dump_visit, NULL);
	trace_close(&t);
	return 0;
}

struct ack {
	uint64_t stream, txn, t_ns;
};

/* The replay up to the cut. */
struct cut_run {
	struct fs *fs;
	uint64_t k;
	struct rec cut; /* the Kth mutating record, or else the last one */
	struct ack *acks;
	size_t nacks, capacks;
};

static bool cut_visit(void *ctx, const struct rec *r)
{
	struct cut_run *run = ctx;
	run->cut = *r;
	if (r->mut == run->k)
		return false; /* the power fails before it takes effect */
	if (r->h.kind == ALEX_TR_ACK) {
		run->acks = grow(run->acks, &run->capacks, run->nacks + 1, sizeof *run->acks);
		run->acks[run->nacks++] = (struct ack){ r->h.len, r->h.off, r->h.t_ns };
	}
	fs_apply(run->fs, r);
	return true;
}

/* MODEL, or MODEL+dirs: name changes since the directory's last sync
 * lost too (a file system may lose its last metadata transactions) */
static bool parse_model(const char *s, enum model *m, bool *dirs)
{
	static const char *const names[] = { "lose", "keep", "tear", "subset" };
	size_t n = strlen(s);
	*dirs = ends_with(s, "+dirs");
	if (*dirs)
		n -= 5;
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (strlen(names[i]) == n && strncmp(s, names[i], n) == 0) {
			*m = (enum model)i;
			return true;
		}
	return false;
}

static void write_acks(int dir_fd, const struct cut_run *run)
{
	FILE *f = fdopen(create_in(dir_fd, ".acks"), "w");
	if (!f)
		die(EXIT_USAGE, ".acks: %s", strerror(errno));
	for (size_t i = 0; i < run->nacks; i++)
		fprintf(f, "%" PRIu64 " %" PRIu64 " %" PRIu64 "\n", run->acks[i].stream,
			run->acks[i].txn, run->acks[i].t_ns);
	if (fclose(f))
		die(EXIT_USAGE, ".acks: %s", strerror(errno));
}

/* "t_ns kind [name]" of the record cut at (before the fs settles, so that
 * a write's file is named as it was then). */
static void write_cut(int dir_fd, const struct cut_run *run, bool any)
{
	FILE *f = fdopen(create_in(dir_fd, ".cut"), "w");
	if (!f)
		die(EXIT_USAGE, ".cut: %s", strerror(errno));
	const struct rec *r = &run->cut;
	if (!any) {
		fprintf(f, "0 none\n");
	} else {
		const char *name = r->name[0] ? r->name : fs_name_of(run->fs, r->h.ino);
		if (r->h.kind == ALEX_TR_RENAME)
			fprintf(f, "%" PRIu64 " rename %s %s\n", r->h.t_ns, r->name, r->name2);
		else
			fprintf(f, "%" PRIu64 " %s%s%s\n", r->h.t_ns, kind_name(r->h.kind),
				*name ? " " : "", name);
	}
	if (fclose(f))
		die(EXIT_USAGE, ".cut: %s", strerror(errno));
}

static int cmd_cut(char **argv)
{
	const char *path = argv[0], *startdir = argv[1], *outdir = argv[2];
	uint64_t k, seed, n[2];
	struct cutter c = { 0 };
	struct trace t;
	struct fs fs;
	bool dirs;

	if (!parse_u64(argv[3], &k) || !parse_model(argv[4], &c.model, &dirs) ||
	    !parse_u64(argv[5], &seed))
		die(EXIT_USAGE,
		    "usage: cutfs cut TRACE STARTDIR OUTDIR K lose|keep|tear|subset[+dirs] SEED");
	trace_open(&t, path);
	count_records(&t, false, n); /* the whole trace is checked, whatever K */
	if (k < 1 || k > n[0] + 1)
		die(EXIT_USAGE, "K %" PRIu64 " not in 1..%" PRIu64, k, n[0] + 1);
	fs_init(&fs, startdir);
	int out_fd = outdir_open(outdir);

	struct cut_run run = { .fs = &fs, .k = k };
	walk(&t, true, cut_visit, &run);
	write_acks(out_fd, &run);
	write_cut(out_fd, &run, n[1] > 0);

	c.rng = seed;
	if (c.model == M_TEAR)
		cutter_pick_torn(&c, &fs, seed);
	for (size_t i = 0; i < fs.ninodes; i++) /* SUBSET draws in this order */
		if (fs.inodes[i]->nlink || dirs)
			cutter_settle(&c, fs.inodes[i]);
	fs_write_out(&fs, out_fd, dirs);

	close(out_fd);
	free(run.acks);
	fs_free(&fs);
	trace_close(&t);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: cutfs count TRACE\n"
			"       cutfs cut TRACE STARTDIR OUTDIR K lose|keep|tear|subset[+dirs] SEED\n"
			"       cutfs dump TRACE\n");
	exit(EXIT_USAGE);
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "count") == 0)
		return cmd_count(argv[2]);
	if (argc == 3 && strcmp(argv[1], "dump") == 0)
		return cmd_dump(argv[2]);
	if (argc == 8 && strcmp(argv[1], "cut") == 0)
		return cmd_cut(argv + 2);
	usage();
}
