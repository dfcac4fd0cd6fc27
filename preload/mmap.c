/*
 * mmap.c - SQLite's memory mapping of a database (PRAGMA mmap_size).
 *
 * The base file is not the database while the log holds pages, so a
 * mapping of it would show stale pages.  SQLite maps read-only and writes
 * with pwrite, so what it needs is what the kernel's page cache gives a
 * shared mapping: the file's current bytes, and every write of this process
 * visible in the mapping at once.  ALEX gives it a private mapping of the
 * base file with the blocks the engine holds elsewhere copied over it (the
 * log's, the open transaction's, block 0 without its fence: view.c), and
 * copies each of the process's writes into it as the engine takes them.
 * Other processes' commits: SQLite reads page 1's change counter through
 * the mapping (unixRead) before it would unmap, so the mapping is laid
 * afresh when a catch-up brought in outside changes (alex_mmap_follow).
 *
 * Layout of one mapping: [0, plain) the base file, private (its untouched
 * pages are the page cache's); [plain, span) anonymous; [span, cap)
 * reserved (PROT_NONE), so that SQLite's mremap as the database grows
 * extends the mapping in place and only the new pages are filled.  The
 * pages are writable, for the copies: SQLite never writes through its
 * read-only mapping, and a stray write would change this process's copy,
 * never the file.
 *
 * In WAL mode SQLite writes the file itself (docs/PRELOAD.md), and its own
 * shared mapping is right: ALEX makes one and keeps it in the table, and
 * turns it into a private one in place when WAL mode ends (and back when it
 * begins), the log being empty at both moments, so that the bytes are the
 * same on either side of the switch.
 *
 * Locks: maps_mu, then a database's mu.  A slot's addr and cap change
 * under both; its other fields under the database's mu, which is all that
 * the calls from serve.c hold.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "errmap.h"
#include "mmap.h"
#include "staging.h"
#include "pdb.h"
#include "real.h"
#include "stats.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define ALEX_MAPS 256
#define RW (PROT_READ | PROT_WRITE)
#define ANON (MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED)

struct dbmap {
	uint8_t *addr;
	size_t cap;      /* reserved at addr */
	size_t span;     /* mapped: SQLite's length in whole pages */
	size_t plain;    /* [0, plain) maps the base file privately */
	int prot;        /* SQLite's */
	int shared;      /* WAL mode: SQLite's own shared mapping of the file */
	uint64_t gen;    /* the engine's view when the mapping was laid */
	struct pdb *db;  /* (atomic) NULL: a free slot; holds a reference */
};

static struct dbmap maps[ALEX_MAPS];
static alex_mutex maps_mu = ALEX_MUTEX_INIT;
int alex_mmap_live;

static size_t page(void)
{
	static size_t pg;
	if (!pg)
		pg = (size_t)sysconf(_SC_PAGESIZE);
	return pg;
}
static size_t page_up(uint64_t n)
{
	return (size_t)((n + page() - 1) & ~(uint64_t)(page() - 1));
}
static size_t page_down(uint64_t n)
{
	return (size_t)(n & ~(uint64_t)(page() - 1));
}

/* Room to grow in place: as much again, at least 64 MiB (address space
 * only; a 32-bit process has none to spare). */
static size_t cap_for(size_t span)
{
	if (sizeof(void *) < 8)
		return span;
	return span + (span > ((size_t)64 << 20) ? span : ((size_t)64 << 20));
}

static int reserve(uint8_t *at, size_t len)
{
	void *p = REAL(mmap)(at, len, PROT_NONE, ANON | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? errno : 0;
}

/* db's next mapping slot (i from -1), under db->mu. */
static struct dbmap *next_of(struct pdb *db, int *i)
{
	while (++*i < ALEX_MAPS)
		if (__atomic_load_n(&maps[*i].db, __ATOMIC_ACQUIRE) == db)
			return &maps[*i];
	return NULL;
}

/* Each of db's mappings m, under db->mu: the walk ends at the last one
 * (db->maps), not at the end of the table -- it runs at every write. */
#define EACH_MAP(db, m) \
	for (int i_ = -1, left_ = (db)->maps; left_ > 0 && ((m) = next_of((db), &i_)); left_--)

/* Lays [0, span) at a afresh: the base file privately below what it holds
 * as it is, anonymous above, and the engine's blocks copied in. */
static int build(struct pdb *db, uint8_t *a, size_t span, size_t *plain_out)
{
	int fd = alex_view_fd(alex_top(db), ALEX_FILE_DB);
	size_t plain = fd < 0 ? 0 : page_down(alex_view_plain(alex_top(db), ALEX_FILE_DB));

	if (plain > span)
		plain = span;
	if (plain && REAL(mmap)(a, plain, RW, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED)
		return errno;
	if (span > plain && REAL(mmap)(a + plain, span - plain, RW, ANON, -1, 0) == MAP_FAILED)
		return errno;
	int rc = alex_view_fill(alex_top(db), ALEX_FILE_DB, a, plain, 0, span);
	if (rc)
		return alex_errno_of(rc);
	*plain_out = plain;
	return 0;
}

/* Lays m's pages afresh from the engine's view as it is now. */
static int relay(struct pdb *db, struct dbmap *m)
{
	int err = build(db, m->addr, m->span, &m->plain);
	if (!err)
		m->gen = alex_view_gen(alex_top(db));
	return err;
}

/* A private mapping of span bytes at a new place, or an errno. */
static int place(struct pdb *db, size_t span, struct dbmap *m)
{
	size_t cap = cap_for(span), plain = 0;
	void *a = REAL(mmap)(NULL, cap, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (a == MAP_FAILED)
		return errno;
	int err = build(db, a, span, &plain);
	if (err) {
		REAL(munmap)(a, cap);
		return err;
	}
	m->addr = a;
	m->cap = cap;
	m->span = span;
	m->plain = plain;
	m->shared = 0;
	m->gen = alex_view_gen(alex_top(db));
	return 0;
}

void *alex_mmap_map(struct pdb *db, int fd, size_t len, int prot, int flags, off64_t off)
{
	int type = flags & MAP_TYPE;

	/* SQLite maps the whole file, read-only, and lets the kernel choose
	 * where; anything else is not a mapping ALEX could keep current, and
	 * SQLite falls back to reads */
	if (off != 0 || len == 0 || prot != PROT_READ || (flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)) ||
	    (type != MAP_SHARED && type != MAP_PRIVATE) || page() % 4096) {
		ALEX_COUNT(mmaps_refused, 1);
		errno = ENODEV;
		return MAP_FAILED;
	}
	struct dbmap tmp = { .prot = prot };
	int err = ENOMEM, i;
	alex_pdb_ref(db);
	alex_mutex_lock(&maps_mu);
	alex_mutex_lock(&db->mu);
	for (i = 0; i < ALEX_MAPS && maps[i].db; i++)
		;
	if (i < ALEX_MAPS && alex_pdb_direct(db)) {
		void *p = REAL(mmap)(NULL, len, prot, flags, fd, 0);
		err = p == MAP_FAILED ? errno : 0;
		tmp.addr = p;
		tmp.span = tmp.cap = page_up(len);
		tmp.shared = 1;
	} else if (i < ALEX_MAPS) {
		err = place(db, page_up(len), &tmp);
	}
	if (!err) {
		tmp.db = NULL;
		maps[i] = tmp;
		__atomic_store_n(&maps[i].db, db, __ATOMIC_RELEASE);
		db->maps++;
		__atomic_add_fetch(&alex_mmap_live, 1, __ATOMIC_RELEASE);
		ALEX_COUNT(mmaps, 1);
	}
	alex_mutex_unlock(&db->mu);
	alex_mutex_unlock(&maps_mu);
	if (err) {
		alex_pdb_put(db);
		errno = err;
		return MAP_FAILED;
	}
	return tmp.addr;
}

/* Does slot m's reservation [addr, addr + cap) meet [a, end)?  Under
 * maps_mu. */
static int meets(const struct dbmap *m, const uint8_t *a, const uint8_t *end)
{
	return m->db && a < m->addr + m->cap && m->addr < end;
}

/* [at, span) goes back to the reservation. */
static void shrink(struct dbmap *m, size_t at)
{
	if (at >= m->span)
		return;
	reserve(m->addr + at, m->span - at);
	m->span = at;
	if (m->plain > at)
		m->plain = at;
}

/*
 * SQLite unmaps a whole mapping, or the part past a truncation.  What a
 * range covers besides (before the mapping, past its reservation) is the
 * caller's, and unmapped too.
 */
int alex_mmap_unmap(void *addr, size_t len, int *ret)
{
	uint8_t *a = addr, *end = a + (len ? len : 1);
	struct pdb *gone[ALEX_MAPS];
	uint8_t *last = a; /* where the caller's part past ours begins */
	int ngone = 0, ours = 0, beyond = 0;

	*ret = 0;
	if (!len)
		return 0;
	alex_mutex_lock(&maps_mu);
	for (int i = 0; i < ALEX_MAPS; i++) {
		struct dbmap *m = &maps[i];
		struct pdb *db = m->db;
		if (!meets(m, a, end))
			continue;
		ours = 1;
		alex_mutex_lock(&db->mu);
		if (a <= m->addr) {
			REAL(munmap)(m->addr, m->cap);
			if (a < m->addr)
				*ret |= REAL(munmap)(a, (size_t)(m->addr - a));
			beyond |= end > m->addr + m->cap;
			if (m->addr + m->cap > last)
				last = m->addr + m->cap;
			__atomic_store_n(&m->db, NULL, __ATOMIC_RELEASE);
			db->maps--;
			__atomic_sub_fetch(&alex_mmap_live, 1, __ATOMIC_RELEASE);
			gone[ngone++] = db;
		} else if ((uintptr_t)a % page()) {
			*ret = -1;
			errno = EINVAL;
		} else {
			shrink(m, (size_t)(a - m->addr));
			beyond |= end > m->addr + m->cap;
			if (m->addr + m->cap > last)
				last = m->addr + m->cap;
		}
		alex_mutex_unlock(&db->mu);
	}
	if (beyond && *ret == 0)
		*ret = REAL(munmap)(last, (size_t)(end - last));
	alex_mutex_unlock(&maps_mu);
	for (int i = 0; i < ngone; i++)
		alex_pdb_put(gone[i]);
	return ours;
}

static void *remap_shared(struct dbmap *m, size_t new_len, int flags)
{
	if (m->cap > m->span)
		REAL(munmap)(m->addr + m->span, m->cap - m->span);
	m->cap = m->span;
	void *p = REAL(mremap)(m->addr, m->span, new_len, flags);
	if (p != MAP_FAILED) {
		m->addr = p;
		m->span = m->cap = page_up(new_len);
	}
	return p;
}

static void *remap_private(struct pdb *db, struct dbmap *m, size_t new_len, int flags)
{
	size_t ns = page_up(new_len);

	if (ns <= m->span) {
		shrink(m, ns);
		return m->addr;
	}
	if (ns <= m->cap) { /* in place: only the new pages are filled */
		if (REAL(mmap)(m->addr + m->span, ns - m->span, RW, ANON, -1, 0) == MAP_FAILED)
			return MAP_FAILED;
		int rc = alex_view_fill(alex_top(db), ALEX_FILE_DB, m->addr, m->plain, m->span, ns);
		if (rc) {
			reserve(m->addr + m->span, ns - m->span);
			errno = alex_errno_of(rc);
			return MAP_FAILED;
		}
		m->span = ns;
		return m->addr;
	}
	if (!(flags & MREMAP_MAYMOVE)) {
		errno = ENOMEM;
		return MAP_FAILED;
	}
	struct dbmap moved = *m;
	int err = place(db, ns, &moved);
	if (err) {
		errno = err;
		return MAP_FAILED;
	}
	REAL(munmap)(m->addr, m->cap);
	*m = moved;
	return m->addr;
}

int alex_mmap_remap(void *old, size_t old_len, size_t new_len, int flags, void **ret)
{
	(void)old_len; /* the mapping's own length is known */
	struct dbmap *m = NULL;
	alex_mutex_lock(&maps_mu);
	for (int i = 0; i < ALEX_MAPS && !m; i++)
		m = meets(&maps[i], old, (uint8_t *)old + 1) ? &maps[i] : NULL;
	if (!m) {
		alex_mutex_unlock(&maps_mu);
		return 0;
	}
	struct pdb *db = m->db;
	alex_mutex_lock(&db->mu);
	if ((uint8_t *)old != m->addr || new_len == 0 || (flags & ~MREMAP_MAYMOVE)) {
		errno = EINVAL; /* moving to a fixed place: not SQLite's way */
		*ret = MAP_FAILED;
	} else if (m->shared) {
		*ret = remap_shared(m, new_len, flags);
	} else {
		*ret = remap_private(db, m, new_len, flags);
	}
	alex_mutex_unlock(&db->mu);
	alex_mutex_unlock(&maps_mu);
	return 1;
}

/* fork(): the table is whole in the child, and its lock free (taken before
 * the registry's own fork handler takes the databases' locks: the order is
 * maps_mu, then a database's mu) */
static void lock_table(void)
{
	alex_mutex_lock(&maps_mu);
}
static void unlock_table(void)
{
	alex_mutex_unlock(&maps_mu);
}
void alex_mmap_atfork(void)
{
	pthread_atfork(lock_table, unlock_table, unlock_table);
}

void alex_mmap_wrote(struct pdb *db, const void *buf, size_t len, uint64_t off)
{
	struct dbmap *m;
	EACH_MAP(db, m)
		if (!m->shared && off < m->span)
			memcpy(m->addr + off, buf, len < m->span - off ? len : m->span - off);
}

void alex_mmap_cut(struct pdb *db, uint64_t size)
{
	struct dbmap *m;
	EACH_MAP(db, m) {
		if (m->shared || size >= m->span)
			continue;
		/* past the end the file reads as zeros, should it grow again */
		size_t up = page_up(size);
		if (up < m->span)
			REAL(mmap)(m->addr + up, m->span - up, RW, ANON, -1, 0);
		if (size < up)
			memset(m->addr + size, 0, up - size);
		if (m->plain > up)
			m->plain = up;
	}
}

/*
 * SQLite learns of other processes' commits by reading page 1's change
 * counter -- through its mapping, when page 1 is mapped (unixRead) -- so
 * the mapping must show them by then.  The catch-up says when it brought
 * in changes (alex_view_gen): the pages are laid afresh, which also keeps
 * them within a base file another process may have shortened (a page past
 * its end would be SIGBUS).
 */
int alex_mmap_follow(struct pdb *db)
{
	struct dbmap *m;
	int first = 0;

	EACH_MAP(db, m) {
		if (m->shared || m->gen == alex_view_gen(alex_top(db)))
			continue;
		int err = relay(db, m);
		if (err) {
			/* nothing stale may be read: the pages go until a later
			 * catch-up lays them (the lock fails meanwhile) */
			reserve(m->addr, m->span);
			alex_msg(ALEX_MSG_ERROR, "%s: a memory mapping could not follow other "
				 "processes' commits: %s", db->path, strerror(err));
			first = first ? first : err;
		}
	}
	return first;
}

int alex_mmap_direct(struct pdb *db, int on)
{
	int fd = alex_view_fd(db->eng, ALEX_FILE_DB), err = 0; /* the file itself */
	struct dbmap *m;

	EACH_MAP(db, m) {
		if (m->shared == on)
			continue;
		if (on) {
			if (fd < 0)
				err = EBADF;
			else if (REAL(mmap)(m->addr, m->span, m->prot, MAP_SHARED | MAP_FIXED, fd, 0) ==
				 MAP_FAILED)
				err = errno;
			else
				m->plain = 0;
		} else {
			err = relay(db, m);
		}
		if (err)
			break;
		m->shared = on;
	}
	return err;
}

#ifdef ALEX_TESTING
#include <stdio.h>
#include <stdlib.h>

/* The test build's check (ALEX_TEST_MMAP_CHECK=1): every private mapping
 * of db shows what the engine reads, block for block. */
void alex_mmap_check(struct pdb *db, const char *where)
{
	static int on = -1;
	static uint8_t buf[4096];
	struct dbmap *m;

	if (on < 0)
		on = getenv("ALEX_TEST_MMAP_CHECK") != NULL;
	if (!on)
		return;
	EACH_MAP(db, m) {
		for (size_t off = 0; !m->shared && off < m->span; off += sizeof buf) {
			size_t got = 0;
			memset(buf, 0, sizeof buf);
			alex_read(alex_top(db), ALEX_FILE_DB, buf, sizeof buf, off, &got);
			if (memcmp(buf, m->addr + off, sizeof buf))
				fprintf(stderr, "alex-test: %s: mapping differs at block %zu after %s\n",
					db->path, off / sizeof buf, where);
		}
	}
}
#endif
