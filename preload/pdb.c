/*
 * pdb.c - the registry: one struct pdb per database file per process, found
 * by device and inode so that every name of the file (relative, "..",
 * symlink, hard link) shares it.  The engine's own descriptor on the
 * database stays open as long as SQLite has one: closing any descriptor of
 * a file drops all of the process's POSIX locks on it, SQLite's included.
 * What is done to a database's engine is serve.c's business.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dirsync.h"
#include "hooks.h"
#include "journal.h"
#include "match.h"
#include "pdb.h"
#include "real.h"
#include "serve.h"
#include "span.h"
#include "stats.h"
#include "watch.h"

/* life: held while an engine is made or closed, so that a thread opening
 * the database cannot race the last close of it (which checkpoints and
 * briefly opens a descriptor of its own).  Order: life, reg, a pdb's mu. */
static alex_mutex life = ALEX_MUTEX_INIT;
static alex_mutex reg = ALEX_MUTEX_INIT;
static struct pdb *head;

static struct pdb *lookup(dev_t dev, ino_t ino)
{
	for (struct pdb *p = head; p; p = p->next)
		if (p->dev == dev && p->ino == ino)
			return p;
	return NULL;
}

static void release(struct pdb *p)
{
	/* the presence lock's directory (span.c), unless a program's sweep
	 * of descriptors closed it and the number is now another file */
	if (alex_fd_is(p->presence_fd, p->dir_dev, p->dir_ino)) {
		alex_kept_mark(p->presence_fd, 0);
		REAL(close)(p->presence_fd);
	}
	alex_span_free(p);
	free(p->super);
	free(p->path);
	free(p);
}

/* The database's directory, whose sync SQLite asks for (dirsync.c). */
static void dir_identity(struct pdb *p)
{
	char dir[PATH_MAX];
	struct stat st;
	const char *slash = strrchr(p->path, '/');
	size_t n = slash == p->path ? 1 : (size_t)(slash - p->path);

	memcpy(dir, p->path, n);
	dir[n] = 0;
	p->dir_path = strdup(dir);
	if (REAL(stat)(dir, &st) == 0) {
		p->dir_dev = st.st_dev;
		p->dir_ino = st.st_ino;
	}
}

/* A new pdb for the file (st) at path, its engine open.  0 or an errno. */
static int make(const struct stat *st, const char *path, struct pdb **out)
{
	char canon[PATH_MAX];
	struct pdb *p;
	int err;

	if (!realpath(path, canon))
		return errno;
	if (!(p = calloc(1, sizeof *p)) || !(p->path = strdup(canon))) {
		free(p);
		return ENOMEM;
	}
	p->path_len = strlen(canon);
	p->path_matches = alex_match(canon, NULL, 0) == ROLE_DB;
	p->dev = st->st_dev;
	p->ino = st->st_ino;
	p->mode = st->st_mode;
	p->uid = st->st_uid;
	p->gid = st->st_gid;
	p->j.kept.fd = -1;
	p->dir.fd = -1;
	p->presence_fd = -1;
	p->span_fd = -1;
	p->refs = 1;
	alex_mutex_init(&p->mu);
	alex_mutex_init(&p->span_mu);
	if ((err = alex_serve_open(p))) {
		release(p);
		return err;
	}
	dir_identity(p);
	*out = p;
	return 0;
}

int alex_pdb_get(int fd, const char *path, struct pdb **out)
{
	struct stat st;
	struct pdb *p = NULL;
	int err = 0;

	if (REAL(fstat)(fd, &st) != 0)
		return errno;
	if (!S_ISREG(st.st_mode))
		return ENOTSUP; /* a device or fifo named *.db: not ours */
	alex_mutex_lock(&life);
	alex_mutex_lock(&reg);
	if ((p = lookup(st.st_dev, st.st_ino))) {
		__atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED);
	} else if (!(err = make(&st, path, &p))) {
		ALEX_COUNT(engines, 1);
		p->next = head;
		__atomic_store_n(&head, p, __ATOMIC_RELEASE);
	}
	alex_mutex_unlock(&reg);
	alex_mutex_unlock(&life);
	*out = p;
	return err;
}

struct pdb *alex_pdb_find_id(dev_t dev, ino_t ino)
{
	if (!__atomic_load_n(&head, __ATOMIC_ACQUIRE))
		return NULL;
	alex_mutex_lock(&reg);
	struct pdb *p = lookup(dev, ino);
	if (p)
		__atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED);
	alex_mutex_unlock(&reg);
	return p;
}

/* The one database opened under the name path[0..len), with a reference;
 * NULL when none or more than one was. */
static struct pdb *take_named(const char *path, size_t len)
{
	struct pdb *found = NULL;
	int n = 0;

	if (!__atomic_load_n(&head, __ATOMIC_ACQUIRE))
		return NULL;
	alex_mutex_lock(&reg);
	for (struct pdb *p = head; p; p = p->next)
		if (p->path_len == len && memcmp(p->path, path, len) == 0) {
			found = p;
			n++;
		}
	if (n == 1)
		__atomic_add_fetch(&found->refs, 1, __ATOMIC_RELAXED);
	alex_mutex_unlock(&reg);
	return n == 1 ? found : NULL;
}

struct pdb *alex_pdb_find_name(const char *path)
{
	struct pdb *found = take_named(path, strlen(path));
	/* no database opened under this name (another name of the file?),
	 * or two (the first deleted or renamed away): the file the name
	 * stands for now decides */
	return found ? found : alex_pdb_find(path);
}

/* Does path end in suffix, after at least one byte?  Its length without it. */
static size_t strip(const char *path, size_t len, const char *suffix, size_t k)
{
	return len > k && memcmp(path + len - k, suffix, k) == 0 ? len - k : 0;
}

int alex_sidecar_suffix(const char *path)
{
	size_t len = strlen(path);
	return strip(path, len, "-journal", 8) || strip(path, len, "-wal", 4);
}

enum alex_role alex_pdb_name(const char *path, struct pdb **out)
{
	enum alex_role role;
	size_t len, base;

	*out = NULL;
	if (path[0] != '/' || !__atomic_load_n(&head, __ATOMIC_ACQUIRE))
		return ROLE_NONE;
	/* a name the kernel refuses is the long way's (ENAMETOOLONG); any
	 * other name takes no lock here: only a sidecar's lookup took one */
	if ((len = strlen(path)) >= PATH_MAX)
		return ROLE_NONE;
	if ((base = strip(path, len, "-journal", 8)))
		role = ROLE_JOURNAL;
	else if ((base = strip(path, len, "-wal", 4)))
		role = ROLE_WAL;
	else
		return ROLE_NONE;
	struct pdb *p = take_named(path, base);
	/* path_matches is the name's: the same for every database under it */
	if (p && !p->path_matches) {
		alex_pdb_put(p);
		p = NULL;
	}
	if (!p)
		return ROLE_NONE;
	*out = p;
	return role;
}

struct pdb *alex_pdb_named(const char *path)
{
	size_t len;

	if (path[0] != '/' || !__atomic_load_n(&head, __ATOMIC_ACQUIRE) ||
	    (len = strlen(path)) >= PATH_MAX)
		return NULL;
	struct pdb *p = take_named(path, len);
	if (p && !p->path_matches) {
		alex_pdb_put(p);
		p = NULL;
	}
	return p;
}

enum alex_role alex_pdb_sidecar(int dirfd, const char *path, struct pdb **out)
{
	char dbpath[PATH_MAX], abs[PATH_MAX];
	enum alex_role role = alex_pdb_name(path, out);

	if (role)
		return role;
	role = alex_match(path, dbpath, sizeof dbpath);
	if ((role == ROLE_JOURNAL || role == ROLE_WAL) &&
	    alex_abs_path(dirfd, dbpath, abs, sizeof abs) == 0)
		*out = alex_pdb_find_name(abs);
	return role;
}

struct pdb *alex_pdb_find(const char *path)
{
	struct stat st;

	if (!__atomic_load_n(&head, __ATOMIC_ACQUIRE) || REAL(stat)(path, &st) != 0)
		return NULL;
	return alex_pdb_find_id(st.st_dev, st.st_ino);
}

int alex_pdb_each(int (*fn)(struct pdb *db, void *arg), void *arg)
{
	struct pdb *v[64];
	int n = 0, err = 0;

	if (!__atomic_load_n(&head, __ATOMIC_ACQUIRE))
		return 0;
	alex_mutex_lock(&reg);
	for (struct pdb *p = head; p && n < 64; p = p->next, n++) {
		__atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED);
		v[n] = p;
	}
	alex_mutex_unlock(&reg);
	for (int i = 0; i < n; i++) {
		if (!err)
			err = fn(v[i], arg);
		alex_pdb_put(v[i]);
	}
	return err;
}

int alex_pdb_scan_try(void (*fn)(struct pdb *db, void *arg), void *arg)
{
	if (alex_mutex_trylock_for(&reg))
		return 0;
	for (struct pdb *p = head; p; p = p->next)
		fn(p, arg);
	alex_mutex_unlock(&reg);
	return 1;
}

void alex_pdb_scan(void (*fn)(struct pdb *db, void *arg), void *arg)
{
	alex_mutex_lock(&reg);
	for (struct pdb *p = head; p; p = p->next)
		fn(p, arg);
	alex_mutex_unlock(&reg);
}

int alex_pdb_kept_back(struct pdb *db, struct alex_kept *k, int fd)
{
	alex_mutex_lock(&db->mu);
	int kept = fd == k->fd && k->held;
	if (kept)
		k->held = 0;
	alex_mutex_unlock(&db->mu);
	return kept;
}

int alex_fd_is(int fd, dev_t dev, ino_t ino)
{
	struct stat st;

	return fd >= 0 && REAL(fstat)(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}


/* numbers below this have a bit; a higher one met always counts */
#define KEPT_BITS 65536
static uint64_t kept_bits[KEPT_BITS / 64];
unsigned alex_kept_epoch;

void alex_kept_mark(int fd, int on)
{
	if (fd < 0 || fd >= KEPT_BITS)
		return;
	uint64_t bit = 1ULL << (fd & 63);
	if (on)
		__atomic_or_fetch(&kept_bits[fd >> 6], bit, __ATOMIC_RELEASE);
	else
		__atomic_and_fetch(&kept_bits[fd >> 6], ~bit, __ATOMIC_RELEASE);
}

void alex_kept_met(int fd)
{
	if (fd >= 0 && (fd >= KEPT_BITS ||
			(__atomic_load_n(&kept_bits[fd >> 6], __ATOMIC_ACQUIRE) >> (fd & 63) & 1))) {
		alex_watch_met(fd);
		__atomic_add_fetch(&alex_kept_epoch, 1, __ATOMIC_ACQ_REL);
	}
}

int alex_kept_still(struct alex_kept_check *c, int fd, dev_t dev, ino_t ino, unsigned every)
{
	unsigned e = __atomic_load_n(&alex_kept_epoch, __ATOMIC_ACQUIRE);

	if (fd >= 0 && c->epoch == e && ++c->uses % every)
		return 1;
	if (!alex_fd_is(fd, dev, ino))
		return 0;
	c->epoch = e;
	return 1;
}

void alex_kept_fresh(struct alex_kept_check *c)
{
	c->epoch = __atomic_load_n(&alex_kept_epoch, __ATOMIC_ACQUIRE);
}

void alex_pdb_kept_close(struct alex_kept *k, dev_t dev, ino_t ino)
{
	if (alex_fd_is(k->fd, dev, ino)) {
		alex_kept_mark(k->fd, 0);
		REAL(close)(k->fd);
	}
	k->fd = -1;
	k->held = 0;
}

void alex_pdb_ref(struct pdb *p)
{
	/* the caller holds one, so the count is not 0 and cannot become 0 */
	__atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED);
}

/*
 * References are taken under reg (a lookup must not find a pdb being
 * removed) but dropped without it while others remain: only the last one
 * needs the locks, and a reference that is not the last cannot become the
 * last behind a lookup's back, which holds reg.
 */
void alex_pdb_put(struct pdb *p)
{
	if (!p)
		return;
	int r = __atomic_load_n(&p->refs, __ATOMIC_RELAXED);
	while (r > 1)
		if (__atomic_compare_exchange_n(&p->refs, &r, r - 1, 0, __ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			return;
	/* perhaps the last reference: decide under life, which also keeps
	 * new opens out until this one is closed -- but wait for other
	 * processes first, with no lock held */
	if (r == 1) {
		alex_span_close(p); /* its locks would meet the close's own */
		alex_serve_close_wait(p);
	}
	alex_mutex_lock(&life);
	alex_mutex_lock(&reg);
	if (__atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) > 0) {
		alex_mutex_unlock(&reg);
		alex_mutex_unlock(&life);
		return;
	}
	for (struct pdb **pp = &head; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	alex_mutex_unlock(&reg);
	alex_serve_close(p);
	alex_dirsync_clear(p);
	alex_dirsync_free(p);
	alex_journal_free(p);
	alex_mutex_unlock(&life);
	release(p);
}

/*
 * fork(): the child gets a copy of every engine.  The locks are taken around
 * the fork so the copies are consistent.
 */
static void before_fork(void)
{
	alex_mutex_lock(&life);
	alex_mutex_lock(&reg);
	for (struct pdb *p = head; p; p = p->next) {
		alex_mutex_lock(&p->mu);
		p->fork_shared = 1; /* parent and child: staging.c */
	}
}

static void after_fork(void)
{
	for (struct pdb *p = head; p; p = p->next)
		alex_mutex_unlock(&p->mu);
	alex_mutex_unlock(&reg);
	alex_mutex_unlock(&life);
}

static void child_after_fork(void)
{
	for (struct pdb *p = head; p; p = p->next)
		alex_serve_forget(p);
	after_fork();
}

void alex_pdb_atfork(void)
{
	pthread_atfork(before_fork, after_fork, child_after_fork);
}
