/*
 * shm.c - the log's change counter (shm.h).
 *
 * Every change an engine makes to a format-3 log goes through
 * alex_log_pwrite or alex_log_truncate, which raise busy before it and
 * raise gen and lower busy after it.  A catch-up that saw busy 0 and gen g
 * before it read the log, and the same after, has seen every change counted
 * in g; later, busy 0 and gen still g mean that no change has been made
 * since, nor is one under way -- so there is nothing to read.  Anything
 * else (a change counted, one under way or abandoned by a process that
 * died inside it, a region made anew, another log's region) sends the
 * caller to the log, exactly as without the counter.  So the counter can
 * make a catch-up unnecessary, never wrong, provided that every writer of
 * the log counts: only a format-3 log is counted, which no ALEX without the
 * counter opens, and an engine that cannot map the region may read the log
 * but not write it (begin_change maps it again, or refuses the write).
 *
 * The region lives in "<db>-alex-shm", made with the database's mode and
 * owner beside the log and removed with it (a kept log keeps it: on a full
 * disk its allocated block is what lets the log be written).  Like SQLite's
 * -shm it must not be deleted while programs have the database open.
 */
#include <errno.h>
#include <string.h>

#include "db.h"
#include "format.h"
#include "log.h"
#include "shm.h"

/* Is s a region of this engine's log? */
static int ours(const struct alex_shm *s, const struct alex_db *db)
{
	return memcmp(s->magic, ALEX_SHM_MAGIC, 8) == 0 && memcmp(s->uuid, db->hdr.uuid, 16) == 0;
}

static uint64_t random64(void)
{
	return (uint64_t)alex_random32() << 32 | alex_random32();
}

/* A region that is not this log's (new, left by an earlier log, damaged)
 * is made anew.  Its gen starts at a random value, so that no engine's last
 * look can match it by chance; two engines doing this at once (no lock)
 * leave one of their values, and every engine reads the log once more. */
static int init(void *p, void *arg, int may_change)
{
	struct alex_shm *s = p;
	struct alex_db *db = arg;

	if (ours(s, db) && s->version == ALEX_SHM_VERSION && s->size == ALEX_SHM_SIZE)
		return 0;
	if (!may_change)
		return EINVAL; /* not this log's, and not ours to make (io.h) */
	memset(s->magic, 0, sizeof s->magic);
	__atomic_store_n(&s->gen, random64(), __ATOMIC_SEQ_CST);
	__atomic_store_n(&s->busy, 0, __ATOMIC_SEQ_CST);
	memcpy(s->uuid, db->hdr.uuid, 16);
	s->version = ALEX_SHM_VERSION;
	s->size = ALEX_SHM_SIZE;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	memcpy(s->magic, ALEX_SHM_MAGIC, 8);
	return 0;
}

int alex_shm_attach(struct alex_db *db)
{
	const struct alex_io_ops *o = db->io.ops;
	struct alex_finfo base;
	void *p = NULL;
	uint32_t wrote;
	int err;

	alex_shm_detach(db);
	if (db->log_fd < 0 || db->log_stub || db->cfg.exclusive || db->cfg.readonly ||
	    db->hdr.version < ALEX_FORMAT_V3 || !o->shm_map)
		return 0; /* no log, a tool alone on it, or a log older ALEX writes */
	if ((err = o->stat(db->io.ctx, db->base_fd[ALEX_FILE_DB], &base)) ||
	    (err = o->shm_map(db->io.ctx, db->shm_path, &base, init, db, &p, &wrote)))
		return err;
	db->shm = p;
	return 0;
}

void alex_shm_detach(struct alex_db *db)
{
	if (db->shm)
		db->io.ops->shm_unmap(db->io.ctx, db->shm);
	db->shm = NULL;
	db->shm_seen_ok = 0;
}

int alex_shm_unchanged(struct alex_db *db)
{
	struct alex_shm *s = db->shm;

	/* busy first: a change that ended before it was counted in gen */
	return s && db->shm_seen_ok && __atomic_load_n(&s->busy, __ATOMIC_SEQ_CST) == 0 &&
	       __atomic_load_n(&s->gen, __ATOMIC_SEQ_CST) == db->shm_seen &&
	       memcmp(s->uuid, db->hdr.uuid, 16) == 0;
}

void alex_shm_look_begin(struct alex_db *db, struct alex_shm_look *l)
{
	struct alex_shm *s = db->shm;

	l->busy = s ? __atomic_load_n(&s->busy, __ATOMIC_SEQ_CST) : 1;
	l->gen = s ? __atomic_load_n(&s->gen, __ATOMIC_SEQ_CST) : 0;
}

void alex_shm_look_end(struct alex_db *db, const struct alex_shm_look *l, int err)
{
	struct alex_shm *s = db->shm; /* the look may have mapped another log's */

	/* zeros, noise, another log's region, or one retired under us (a
	 * forked child's last close removed it): mapped again by name, and
	 * made anew if it is not this log's -- which only ever sends every
	 * engine to the log once more (a new random gen) */
	if (s && !err && !ours(s, db)) {
		db->shm_seen_ok = 0;
		(void)alex_shm_attach(db); /* failed: no region, writes retry it */
		return;
	}
	db->shm_seen_ok = s && !err && l->busy == 0 &&
			  __atomic_load_n(&s->busy, __ATOMIC_SEQ_CST) == 0 &&
			  __atomic_load_n(&s->gen, __ATOMIC_SEQ_CST) == l->gen;
	db->shm_seen = l->gen;
}

int alex_shm_moved(struct alex_db *db, const struct alex_shm_look *l)
{
	struct alex_shm *s = db->shm;

	return s && (l->busy != 0 || __atomic_load_n(&s->busy, __ATOMIC_SEQ_CST) != 0 ||
		     __atomic_load_n(&s->gen, __ATOMIC_SEQ_CST) != l->gen);
}

/* Not part of the log's counting: libalex.so's span lock asks the kernel
 * whether another process is present only when this changed (or after a
 * while), so an arrival must show here or be found by that while.  Raised
 * in whatever region is mapped, this log's or not: the reader compares
 * values only, and reads them only from a region of the log it knows
 * (alex_shm_arrivals), so a region made anew (which keeps the count) or
 * retired under it sends it to the kernel, never to a wrong "alone". */
void alex_shm_arrive(struct alex_db *db)
{
	if (db->shm)
		__atomic_add_fetch(&db->shm->arrivals, 1, __ATOMIC_SEQ_CST);
}

int alex_shm_arrivals(const struct alex_db *db, uint64_t *v)
{
	if (!db->shm || !ours(db->shm, db))
		return -1;
	*v = __atomic_load_n(&db->shm->arrivals, __ATOMIC_SEQ_CST);
	return 0;
}

void alex_shm_retire(struct alex_db *db)
{
	struct alex_shm *s = db->shm;

	/* an engine still mapping it (a forked parent: its lock on the log is
	 * ours) must not go on believing it once the name is another's */
	if (s) {
		memset(s->magic, 0, sizeof s->magic);
		memset(s->uuid, 0, sizeof s->uuid);
		__atomic_fetch_add(&s->gen, 1, __ATOMIC_SEQ_CST);
	}
}

/* A change of the log by this engine.  What it knew before stays current
 * after it only if it knew everything before and nobody else changed the
 * log meanwhile (gen moved by one: ours). */
static void enter(struct alex_db *db, struct alex_shm_look *l)
{
	struct alex_shm *s = db->shm;

	l->busy = __atomic_fetch_add(&s->busy, 1, __ATOMIC_SEQ_CST);
	l->gen = __atomic_load_n(&s->gen, __ATOMIC_SEQ_CST);
}

static void leave(struct alex_db *db, const struct alex_shm_look *l, int err)
{
	struct alex_shm *s = db->shm;
	uint64_t was = __atomic_fetch_add(&s->gen, 1, __ATOMIC_SEQ_CST);
	uint64_t b = __atomic_load_n(&s->busy, __ATOMIC_SEQ_CST);

	/* never below 0: a region made anew while we were inside lost our
	 * count, and a busy that wrapped would stop every fast path */
	while (b && !__atomic_compare_exchange_n(&s->busy, &b, b - 1, 0, __ATOMIC_SEQ_CST,
						 __ATOMIC_SEQ_CST))
		;
	db->shm_seen_ok = db->shm_seen_ok && !err && l->busy == 0 && l->gen == db->shm_seen &&
			  was == l->gen;
	db->shm_seen = was + 1;
}

/* A write to a format-3 log that other engines share must be counted: an
 * engine whose region failed to map tries again, and a write it still
 * cannot count is refused (with the mapping's error: ENOSPC is SQLite's
 * SQLITE_FULL), never made behind the others' backs. */
static int uncountable(const struct alex_db *db, int fd)
{
	return fd == db->log_fd && !db->shm && !db->log_stub && !db->cfg.exclusive &&
	       db->hdr.version >= ALEX_FORMAT_V3 && db->io.ops->shm_map;
}

/* Before a change of fd: 0, with *counted set when enter was called, or
 * the error that keeps the change from being made. */
static int begin_change(struct alex_db *db, int fd, struct alex_shm_look *l, int *counted)
{
	int err;

	*counted = 0;
	if (uncountable(db, fd) && (err = alex_shm_attach(db)))
		return err;
	if (db->shm && fd == db->log_fd) {
		enter(db, l);
		*counted = 1;
	}
	return 0;
}

int alex_log_pwrite(struct alex_db *db, int fd, const void *buf, size_t n, uint64_t off)
{
	return alex_log_pwrite_via(db, fd, fd, buf, n, off);
}

int alex_log_pwrite_via(struct alex_db *db, int fd, int via, const void *buf, size_t n,
			uint64_t off)
{
	struct alex_shm_look l;
	int counted, err = begin_change(db, fd, &l, &counted);

	if (err)
		return err;
	err = db->io.ops->pwrite(db->io.ctx, via, buf, n, off);
	if (counted)
		leave(db, &l, err);
	return err;
}

int alex_log_allocate(struct alex_db *db, int fd, uint64_t off, uint64_t n)
{
	struct alex_shm_look l;
	int counted, err;

	if (!db->io.ops->allocate)
		return EOPNOTSUPP;
	if ((err = begin_change(db, fd, &l, &counted)))
		return err;
	err = db->io.ops->allocate(db->io.ctx, fd, off, n);
	if (counted)
		leave(db, &l, err);
	return err;
}

int alex_log_truncate(struct alex_db *db, int fd, uint64_t size)
{
	struct alex_shm_look l;
	int counted, err = begin_change(db, fd, &l, &counted);

	if (err)
		return err;
	err = db->io.ops->ftruncate(db->io.ctx, fd, size);
	if (counted)
		leave(db, &l, err);
	return err;
}
