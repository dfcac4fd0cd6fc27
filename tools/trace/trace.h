/*
 * trace.h - `alex trace FILE`: the report of a trace that ALEX_MODE=trace
 * or ALEX_TRACE wrote (core/trace_format.h).  load.c reads the file into
 * a model: events in time order, the files they touched, the SQLite
 * transactions the lock calls delimit (txn.c).  The printers: report.c
 * (text), json.c, csv.c, perfetto.c, plot.c (gnuplot).
 */
#ifndef ALEX_TOOLS_TRACE_H
#define ALEX_TOOLS_TRACE_H

#include <stdint.h>
#include <stdio.h>

#include "trace_read.h"

#define TR_NONE UINT32_MAX

struct tr_ev {
	struct alex_tevent e; /* e.name points into the model's copy */
	uint32_t file;        /* files[], or TR_NONE */
	uint32_t txn;         /* txns[], or TR_NONE */
};

struct tr_file {
	char *path;
	uint8_t role;
	uint32_t db; /* the database file it belongs to (files[]), or TR_NONE */
};

struct tr_proc {
	uint32_t pid, ppid;
	char *exe;
	int alex;        /* ran ALEX (1) or only traced (0) */
	uint64_t realtime; /* CLOCK_REALTIME ns at its start event */
};

struct tr_txn {
	uint32_t pid, tid, db;
	uint64_t start, end;
	int write, wal;
	uint32_t first, last; /* events[] */
	uint64_t nev;
	uint64_t syncs_asked;  /* fsync/fdatasync the program made */
	uint64_t syncs_kernel; /* those and ALEX's that reached the device */
	uint64_t bytes_written, pages_written;
};

struct tr_model {
	const char *path;
	struct tr_ev *ev;
	size_t nev;
	struct tr_file *files;
	size_t nfiles;
	struct tr_proc *procs;
	size_t nprocs;
	struct tr_txn *txns;
	size_t ntxns;
	struct alex_treader rd; /* what reading found: chunks, drops, damage */
	uint64_t t0, t1;
};

/* 0, or 1 with a message on stderr (the file cannot be read at all). */
int tr_load(const char *path, struct tr_model *m);
void tr_free(struct tr_model *m);
void tr_txns(struct tr_model *m);

/* The role a report shows an event under: ALEX's own calls on the
 * database and its directory as "alex-db", "alex-dir". */
const char *tr_role(const struct tr_ev *v);
/* Reached the kernel as itself (not answered by ALEX). */
static inline int tr_kernel(const struct tr_ev *v)
{
	return !(v->e.flags & ALEX_TF_SERVED) && v->e.kind != ALEX_TK_PROC;
}
static inline int tr_is_write(unsigned k)
{
	return k == ALEX_TK_WRITE || k == ALEX_TK_PWRITE64 || k == ALEX_TK_WRITEV ||
	       k == ALEX_TK_PWRITEV;
}
static inline int tr_is_read(unsigned k)
{
	return k == ALEX_TK_READ || k == ALEX_TK_PREAD64 || k == ALEX_TK_READV ||
	       k == ALEX_TK_PREADV;
}
static inline int tr_is_sync(unsigned k)
{
	return k == ALEX_TK_FSYNC || k == ALEX_TK_FDATASYNC;
}
/* bytes moved: the result of a read or write that succeeded */
static inline uint64_t tr_bytes(const struct tr_ev *v)
{
	return (tr_is_write(v->e.kind) || tr_is_read(v->e.kind)) && v->e.res > 0
		       ? (uint64_t)v->e.res : 0;
}

void tr_report(const struct tr_model *m, FILE *out, int txns_shown);
void tr_json(const struct tr_model *m, FILE *out);
void tr_csv(const struct tr_model *m, FILE *out);
void tr_perfetto(const struct tr_model *m, FILE *out);
/* 0, or 1 with a message (no gnuplot, cannot write). */
int tr_plot(const struct tr_model *m, const char *png);

/* Room for need items of size in *p (cap of them), doubling; exits with
 * a message when memory runs out. */
void *tr_grow(void *p, size_t *cap, size_t need, size_t size);

/* A JSON string (quotes and escapes). */
void tr_json_str(FILE *out, const char *s, size_t n);

/* argv[0] is "trace".  The exit status: 0 a whole trace, 1 a damaged one
 * (the valid part reported) or one that cannot be read, 2 bad arguments. */
int alex_trace_main(int argc, char **argv);

#endif
