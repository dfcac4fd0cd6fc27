/*
 * txn.c - SQLite transactions, from the lock calls (trace.h).
 *
 * Rollback mode: a transaction holds SHARED on the database from its
 * first read to the unlock of every lock byte; RESERVED (then PENDING,
 * EXCLUSIVE) makes it a write.  WAL mode keeps SHARED for the connection's
 * life; a transaction there holds a read mark in -shm (WAL_READ0..4) and a
 * write takes WAL_WRITE.  Once a database's process shows -shm locks, its
 * transactions are counted by them.  Calls of the process on the
 * database's files (and its directory, and ALEX's log) between the two
 * belong to the transaction; so do those on a file whose open the trace
 * lost (damage), when the process has a transaction open.
 */
#include <stdlib.h>
#include <string.h>

#include "trace.h"

struct state {
	uint32_t pid, db;
	uint32_t txn; /* open, or TR_NONE */
	int wal;      /* -shm locks seen: WAL mode */
	int rd, wr;   /* WAL: the read mark held (-1: none), the write lock */
};

struct walk {
	struct tr_model *m;
	struct state *st;
	size_t nst, cap_st, cap_txn;
};

static struct state *state_of(struct walk *w, uint32_t pid, uint32_t db)
{
	for (size_t i = 0; i < w->nst; i++)
		if (w->st[i].pid == pid && w->st[i].db == db)
			return &w->st[i];
	w->st = tr_grow(w->st, &w->cap_st, w->nst + 1, sizeof *w->st);
	struct state *s = &w->st[w->nst++];
	s->pid = pid;
	s->db = db;
	s->txn = TR_NONE;
	s->wal = 0;
	s->rd = -1;
	s->wr = 0;
	return s;
}

static void begin(struct walk *w, struct state *s, const struct tr_ev *v, size_t i)
{
	struct tr_model *m = w->m;
	m->txns = tr_grow(m->txns, &w->cap_txn, m->ntxns + 1, sizeof *m->txns);
	struct tr_txn *t = &m->txns[m->ntxns];
	memset(t, 0, sizeof *t);
	t->pid = v->e.pid;
	t->tid = v->e.tid;
	t->db = s->db;
	t->start = v->e.start;
	t->first = t->last = (uint32_t)i;
	s->txn = (uint32_t)m->ntxns++;
}

static void end(struct walk *w, struct state *s, const struct tr_ev *v)
{
	struct tr_txn *t = &w->m->txns[s->txn];
	t->end = v->e.start + v->e.dur;
	s->txn = TR_NONE;
}

/* -shm: a transaction holds a read mark (a read lock on READn) or the
 * write lock.  A write lock on READn is SQLite moving the mark, at once
 * undone: no transaction of its own. */
static void on_shm_lock(struct walk *w, struct state *s, const struct tr_ev *v, size_t i)
{
	unsigned name = v->e.lock & 63, type = v->e.lock >> 6;
	int was = s->rd >= 0 || s->wr;

	if (name >= ALEX_TL_WAL_READ0 && name < ALEX_TL_WAL_DMS) {
		int n = (int)(name - ALEX_TL_WAL_READ0);
		if (type == ALEX_TLT_RD)
			s->rd = n;
		else if (type == ALEX_TLT_UN && s->rd == n)
			s->rd = -1;
	} else if (name == ALEX_TL_WAL_WRITE) {
		s->wr = type == ALEX_TLT_WR;
	} else {
		return;
	}
	int now = s->rd >= 0 || s->wr;
	if (now && s->txn == TR_NONE)
		begin(w, s, v, i);
	if (s->txn == TR_NONE)
		return;
	w->m->txns[s->txn].wal = 1;
	if (s->wr)
		w->m->txns[s->txn].write = 1;
	if (was && !now)
		end(w, s, v);
}

/* A lock call that succeeded: does it open, widen or close a transaction? */
static void on_lock(struct walk *w, struct state *s, const struct tr_ev *v, size_t i)
{
	unsigned name = v->e.lock & 63, type = v->e.lock >> 6;

	if (v->e.role == ALEX_TROLE_SHM) {
		/* WAL mode: an open rollback-style transaction goes on as WAL's */
		s->wal = 1;
		on_shm_lock(w, s, v, i);
		return;
	}
	if (s->wal)
		return; /* WAL mode keeps SHARED on the database for the connection */
	int writer = name == ALEX_TL_RESERVED || name == ALEX_TL_PENDING ||
		     name == ALEX_TL_EXCLUSIVE;
	if (type != ALEX_TLT_UN && (name == ALEX_TL_SHARED || writer) && s->txn == TR_NONE)
		begin(w, s, v, i);
	if (s->txn == TR_NONE)
		return;
	if (type == ALEX_TLT_WR && writer)
		w->m->txns[s->txn].write = 1;
	if (type == ALEX_TLT_UN && name == ALEX_TL_DB_ALL)
		end(w, s, v);
}

/* The open transaction of pid, on any database (a directory sync). */
static uint32_t any_open(struct walk *w, uint32_t pid)
{
	for (size_t i = 0; i < w->nst; i++)
		if (w->st[i].pid == pid && w->st[i].txn != TR_NONE)
			return w->st[i].txn;
	return TR_NONE;
}

static void count(struct tr_model *m, struct tr_ev *v, uint32_t id, size_t i)
{
	struct tr_txn *t = &m->txns[id];

	v->txn = id;
	t->last = (uint32_t)i;
	t->nev++;
	if (tr_is_sync(v->e.kind)) {
		if (!(v->e.flags & ALEX_TF_ALEX))
			t->syncs_asked++;
		if (tr_kernel(v))
			t->syncs_kernel++;
	}
	if (tr_is_write(v->e.kind) && !(v->e.flags & ALEX_TF_ALEX)) {
		t->bytes_written += tr_bytes(v);
		if (v->e.role == ALEX_TROLE_DB && v->e.page)
			t->pages_written++;
	}
}

void tr_txns(struct tr_model *m)
{
	struct walk w = { .m = m };

	for (size_t i = 0; i < m->nev; i++) {
		struct tr_ev *v = &m->ev[i];
		uint32_t db = v->file == TR_NONE ? TR_NONE : m->files[v->file].db;
		uint32_t id = TR_NONE;

		if (db != TR_NONE) {
			struct state *s = state_of(&w, v->e.pid, db);
			if (v->e.kind == ALEX_TK_FCNTL && v->e.res == 0 && v->e.lock &&
			    !(v->e.flags & ALEX_TF_ALEX)) {
				uint32_t before = s->txn;
				on_lock(&w, s, v, i);
				id = s->txn != TR_NONE ? s->txn : before;
			} else {
				id = s->txn;
			}
		} else if (v->e.role != ALEX_TROLE_OTHER && v->e.role != ALEX_TROLE_SUPER) {
			/* the directory, or a file whose name the trace lost */
			id = any_open(&w, v->e.pid);
		}
		if (id != TR_NONE)
			count(m, v, id, i);
	}
	/* a transaction still open at the end of the trace ends there */
	for (size_t i = 0; i < w.nst; i++)
		if (w.st[i].txn != TR_NONE)
			m->txns[w.st[i].txn].end = m->t1;
	free(w.st);
}
