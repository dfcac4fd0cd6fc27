/*
 * locks.c - SQLite's SHARED lock on a database ALEX serves, taken with one
 * system call fewer and the same outcome (os_unix.c, unixLock): from no
 * lock, SQLite read-locks PENDING, read-locks the SHARED range, and
 * releases PENDING.  The PENDING lock only asks whether a writer holds
 * PENDING (one waiting for readers to leave, which new readers must not
 * join).  F_GETLK asks that; the release then makes no call.  A writer
 * that takes PENDING between the question and the SHARED lock waits for
 * this reader, as it would had the reader come a moment earlier.
 *
 * The sequence is recognised from the call and from what the process
 * holds: held, a model of its locks on these bytes, kept from every lock
 * call through the hook and forgotten when a tracked descriptor of the
 * file closes (POSIX drops all of the process's locks then).  The release
 * owed is kept on the open file description; a lock call that is not the
 * one SQLite makes next first takes the PENDING read lock SQLite was told
 * it has.  Nothing is answered that claims a lock the kernel does not
 * give: a missed close or an unlock through another descriptor leaves at
 * worst a release owed for a lock already gone.
 *
 * EXCLUSIVE's two calls (PENDING, then the SHARED range) were once taken
 * in one and the second answered without a call; a review showed that
 * answer given after the locks were gone -- SQLite can wait at PENDING for
 * long (another connection of its process reads), and a descriptor of the
 * file closed under another name, or an unlock through another
 * descriptor, drops the lock unseen -- and rows lost.  Not done.
 *
 * What differs from SQLite's own calls: a program other than SQLite that
 * read-locks PENDING from no lock holds it only from its next lock call on
 * the file.
 *
 * The span lock (span.c) answers most of a transaction's calls from the
 * same model, under one lock of its own; this file sends them there.
 */
#include <errno.h>

#include "locks.h"
#include "serve.h"
#include "span.h"
#include "sqlite_locks.h"
#include "trace.h"

enum { NONE = ALEX_HELD_NONE, READ = ALEX_HELD_READ, WRITE = ALEX_HELD_WRITE };
enum { OWE_PENDING_RELEASE = 1 };

static short kind(short type)
{
	return type == F_RDLCK ? READ : type == F_WRLCK ? WRITE : NONE;
}

/* Does [start, start + len) (len 0: to the end) cover [a, a + n) whole, in
 * part, or not at all?  2, 1, 0. */
static int covers(long long start, long long len, long long a, long long n)
{
	long long end = len == 0 ? (long long)(~0ULL >> 1) : start + len;
	if (end <= a || start >= a + n)
		return 0;
	return start <= a && end >= a + n ? 2 : 1;
}

static void apply_one(struct alex_held *h, short *region, int c, short k)
{
	if (c == 2)
		*region = k;
	else if (c == 1)
		h->unknown = 1; /* part of the SHARED range: not SQLite's */
}

/* After a successful lock call l on the file. */
void alex_held_apply(struct alex_held *h, const struct flock *l)
{
	short k = kind(l->l_type);

	if (l->l_whence != SEEK_SET) {
		h->unknown = 1;
		return;
	}
	int all = covers(l->l_start, l->l_len, SQLITE_PENDING_BYTE, SQLITE_LOCK_BYTES);
	if (all == 2 && k == NONE) {
		h->pending = h->reserved = h->shared = NONE;
		h->unknown = 0; /* all of it released: known again */
		h->span = 0; /* the span lock went with them */
		return;
	}
	apply_one(h, &h->pending, covers(l->l_start, l->l_len, SQLITE_PENDING_BYTE, 1), k);
	apply_one(h, &h->reserved, covers(l->l_start, l->l_len, SQLITE_RESERVED_BYTE, 1), k);
	apply_one(h, &h->shared,
		  covers(l->l_start, l->l_len, SQLITE_SHARED_FIRST, SQLITE_SHARED_SIZE), k);
}

static int is(const struct flock *l, short type, long long start, long long len)
{
	return l->l_type == type && l->l_whence == SEEK_SET && l->l_start == start &&
	       l->l_len == len;
}

int alex_locks_own(int fd, int cmd, struct flock *l, int (*real)(int, int, ...))
{
	uint64_t t0 = ALEX_TRACE_T0();
	int r = real(fd, cmd, l);
	alex_trace_own(ALEX_TROLE_DB, ALEX_TK_FCNTL, fd, t0, (uint64_t)cmd, r, l);
	return r;
}

/* Makes the kernel's locks what was asked before a call that is not the
 * owed one; 1 when the call is the owed one, answered (*r). */
static int settle(struct ofd *o, int fd, int cmd, const struct flock *l,
		  int (*real)(int, int, ...), int *r)
{
	struct alex_held *h = &o->db->held;
	int owed = o->elide, setlk = cmd == F_SETLK, saved = errno;

	if (o->elide_gen != h->gen) {
		o->elide = 0; /* a close dropped every lock since: nothing owed */
		return 0;
	}
	if (owed == OWE_PENDING_RELEASE) {
		if (setlk && is(l, F_UNLCK, SQLITE_PENDING_BYTE, 1)) {
			o->elide = 0;
			*r = 0;
			return 1;
		}
		if (setlk && is(l, F_RDLCK, SQLITE_SHARED_FIRST, SQLITE_SHARED_SIZE))
			return 0; /* the SHARED lock between: the release still owed */
		struct flock p = { .l_type = F_RDLCK, .l_whence = SEEK_SET,
				   .l_start = SQLITE_PENDING_BYTE, .l_len = 1 };
		if (alex_locks_own(fd, F_SETLK, &p, real) == 0)
			alex_held_apply(h, &p);
	}
	o->elide = 0;
	errno = saved;
	return 0;
}

static void owe(struct ofd *o, int what)
{
	o->elide = what;
	o->elide_gen = o->db->held.gen;
}

int alex_locks_call(struct ofd *o, int fd, int cmd, struct flock *l,
		    int (*real)(int, int, ...), int *r)
{
	struct alex_held *h = &o->db->held;

	if (o->elide && settle(o, fd, cmd, l, real, r))
		return 1;
	int first = cmd == F_SETLK && is(l, F_RDLCK, SQLITE_PENDING_BYTE, 1);
	if (h->span || first) {
		int how = alex_span_call(o->db, fd, cmd, l, first, real, r);
		if (how >= 0)
			return how;
	}
	if (cmd != F_SETLK || h->unknown)
		return 0;
	if (first && !h->pending && !h->reserved && !h->shared) {
		struct flock q = *l;
		int saved = errno;
		if (alex_locks_own(fd, F_GETLK, &q, real) != 0) {
			errno = saved;
			return 0; /* asked the long way */
		}
		if (q.l_type != F_UNLCK) {
			errno = EAGAIN; /* as F_SETLK says */
			*r = -1;
			return 1;
		}
		owe(o, OWE_PENDING_RELEASE);
		*r = 0;
		return 1;
	}
	return 0;
}

void alex_locks_made(struct ofd *o, int cmd, const struct flock *l, int r)
{
	struct alex_held *h = &o->db->held;

	if (cmd == F_SETLK || cmd == F_SETLKW) {
		if (r == 0)
			alex_held_apply(h, l);
	} else if (cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW) {
		h->unknown = 1; /* not the process's kind of lock: not SQLite's */
	}
}

int alex_locks_may_hold_exclusive(const struct pdb *db)
{
	return db->held.unknown || db->held.shared == WRITE;
}

/* Under span_mu: a span taken meanwhile by another thread of the process
 * is not undone (its locks are on a description no close drops). */
void alex_locks_dropped(struct pdb *db)
{
	struct alex_held *h = &db->held;

	alex_mutex_lock(&db->span_mu);
	if (!alex_span_stands(db)) {
		h->pending = h->reserved = h->shared = NONE;
		h->unknown = 0;
		h->gen++;
	}
	alex_mutex_unlock(&db->span_mu);
}

void alex_locks_gone(struct pdb *db)
{
	alex_serve_unfresh(db);
	alex_locks_dropped(db);
}

void alex_locks_gone_late(struct pdb *db)
{
	struct alex_held *h = &db->held;

	alex_serve_unfresh(db);
	alex_mutex_lock(&db->span_mu);
	if (!alex_span_stands(db)) {
		h->gen++;       /* no release owed from before counts */
		h->unknown = 1; /* locks taken since the close may be held: in doubt */
	}
	alex_mutex_unlock(&db->span_mu);
}

int alex_locks_any(const struct pdb *db)
{
	const struct alex_held *h = &db->held;
	return h->unknown || h->pending || h->reserved || h->shared;
}

void alex_locks_unknown(struct pdb *db)
{
	db->held.unknown = 1;
}
