/*
 * inspect.c - the records of the log's current epoch, one by one, for the
 * tools: where each lies, what it holds, and whether it counts.
 *
 * The walk follows the chain exactly as recovery does (same decoder, same
 * crcs), but applies nothing and writes nothing: a record's state is told
 * only once the walk knows what follows it.  A transaction is its spills
 * and its commit record; a conditional commit (format.h: COND) counts once
 * a later commit follows it or its super-journal is gone.
 */
#include <stdlib.h>
#include <string.h>

#include "db.h"

struct group {
	struct alex_recinfo *v;
	size_t n, cap;
};

static int push(struct group *g, const struct alex_recinfo *ri)
{
	if (g->n == g->cap) {
		size_t cap = g->cap ? 2 * g->cap : 16;
		struct alex_recinfo *v = realloc(g->v, cap * sizeof *v);
		if (!v)
			return ALEX_ENOMEM;
		g->v = v, g->cap = cap;
	}
	g->v[g->n++] = *ri;
	return 0;
}

static void drop(struct group *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->v[i].cond);
	g->n = 0;
}

/* Hands the group's records to fn with the state the group ended in. */
static int emit(struct group *g, enum alex_rec_state state, alex_rec_fn fn, void *arg)
{
	int rc = 0;

	for (size_t i = 0; i < g->n && !rc; i++) {
		g->v[i].state = state;
		rc = fn(arg, &g->v[i]);
	}
	drop(g);
	return rc;
}

/* A conditional group nothing followed: its super-journal decides. */
static int cond_state(alex_db *db, const struct group *g, enum alex_rec_state *out)
{
	int exists, err;

	err = db->io.ops->exists(db->io.ctx, g->v[g->n - 1].cond, &exists);
	*out = exists ? ALEX_RS_UNDECIDED : ALEX_RS_COMMITTED;
	return err;
}

/* The record at off, whole, into *buf (grown as needed), if it is the one
 * expected (lsn, prev) and valid: *valid says.  0 or an error. */
static int read_record(alex_db *db, uint64_t off, uint64_t lsn, uint32_t prev, uint8_t **buf,
		       size_t *cap, struct alex_rec *r, int *valid)
{
	const struct alex_io_ops *io = db->io.ops;
	size_t got;
	int err;

	*valid = 0;
	if (*cap < ALEX_BLOCK) {
		if (!(*buf = malloc(ALEX_BLOCK)))
			return ALEX_ENOMEM;
		*cap = ALEX_BLOCK;
	}
	size_t first = alex_rec_first(db->alloc_end > off ? db->alloc_end - off : 0);
	if (first < ALEX_SECTOR)
		return 0;
	if ((err = io->pread(db->io.ctx, db->log_fd, *buf, first, off, &got)) ||
	    got < first ||
	    alex_rec_decode(*buf, db->alloc_end - off, db->hdr.epoch, lsn, prev, r) != ALEX_STOP_NONE)
		return err;
	if (r->rec_len > *cap) {
		uint8_t *b = realloc(*buf, r->rec_len);
		if (!b)
			return ALEX_ENOMEM;
		*buf = b;
		*cap = r->rec_len;
	}
	if ((err = io->pread(db->io.ctx, db->log_fd, *buf, r->rec_len, off, &got)))
		return err;
	*valid = got >= r->rec_len &&
		 alex_rec_check_in(*buf, r, db->hdr.version) == ALEX_STOP_NONE;
	return 0;
}

int alex_records(alex_db *db, alex_rec_fn fn, void *arg)
{
	struct group g = { 0 }, held = { 0 };
	uint64_t off = alex_data_off(db), lsn = db->hdr.start_lsn;
	uint32_t prev = db->hdr.salt;
	uint8_t *buf = NULL;
	size_t cap = 0;
	int err = 0, rc = 0;

	if (db->log_fd < 0 || db->log_stub)
		return 0;
	/* a checkpointed epoch: its records are in the database file */
	enum alex_rec_state done = db->epoch_live ? ALEX_RS_COMMITTED : ALEX_RS_CHECKPOINTED;
	while (!rc && off + ALEX_SECTOR <= db->alloc_end) {
		struct alex_rec r;
		int valid;
		if ((err = read_record(db, off, lsn, prev, &buf, &cap, &r, &valid)) || !valid)
			break;
		struct alex_recinfo ri = { .off = off, .lsn = r.lsn, .txn = r.txn,
					   .rec_len = r.rec_len, .nblocks = r.nblocks,
					   .flags = r.flags };
		if (r.cond_len && !(ri.cond = strndup((char *)buf + r.hdr_len - r.cond_len,
						      r.cond_len))) {
			err = ALEX_ENOMEM;
			break;
		}
		if ((err = push(&g, &ri))) {
			free(ri.cond);
			break;
		}
		lsn++;
		prev = r.hdr_crc;
		off += r.rec_len;
		if (!(r.flags & ALEX_REC_COMMIT))
			continue;
		/* a later commit decides a held conditional group */
		if (held.n && (rc = emit(&held, done, fn, arg)))
			break;
		if (r.flags & ALEX_REC_COND) {
			struct group t = held;
			held = g, g = t;
		} else {
			rc = emit(&g, done, fn, arg);
		}
	}
	enum alex_rec_state last = done;
	if (!err && !rc && held.n && done == ALEX_RS_COMMITTED)
		err = cond_state(db, &held, &last);
	if (!err && !rc && held.n)
		rc = emit(&held, last, fn, arg);
	if (!err && !rc && g.n)
		rc = emit(&g, ALEX_RS_UNCOMMITTED, fn, arg);
	drop(&held);
	drop(&g);
	free(held.v);
	free(g.v);
	free(buf);
	return err ? err : rc;
}

const char *alex_rec_state_name(enum alex_rec_state s)
{
	switch (s) {
	case ALEX_RS_COMMITTED: return "committed";
	case ALEX_RS_CHECKPOINTED: return "checkpointed";
	case ALEX_RS_UNCOMMITTED: return "uncommitted (dropped)";
	case ALEX_RS_UNDECIDED: return "undecided (its super-journal exists)";
	}
	return "?";
}
