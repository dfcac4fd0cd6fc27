/*
 * trace_buf.h - a thread's trace buffer, shared by the recorder (trace.c)
 * and the writer that turns full buffers into chunks of the trace file
 * (trace_writer.c).  Internal to the tracing mode.
 */
#ifndef ALEX_TRACE_BUF_H
#define ALEX_TRACE_BUF_H

#include <lz4.h>
#include <stdint.h>

#include "trace_format.h"

#define ALEX_TBUF_BYTES (64u * 1024)

struct alex_tbuf {
	struct alex_tbuf *next;  /* every buffer, for the exit flush */
	struct alex_tbuf *qnext; /* the writer's queue */
	uint32_t tid;
	int busy;     /* recording or flushing now */
	int dead;     /* its thread is gone: free for the next new thread */
	uint32_t used, nev, dropped;
	/* the last paths classified by name: SQLite asks about the same
	 * journal and WAL names in every transaction, and fnmatch is dear */
	struct { uint32_t len; int role; char path[248]; } seen[4];
	unsigned next_seen;
	uint8_t *rec; /* the half being recorded into: the chunk header's
			 room, then events */
	/* the other half, full, while the writer has it (out_pending, a
	 * futex word, is 1 until it is written) */
	uint8_t *out;
	uint32_t out_used, out_nev, out_dropped, out_pending;
	uint8_t half[2][ALEX_TBUF_BYTES];
	/* a chunk compressed (about a third of its size: less for the page
	 * cache to write back beside the program's own I/O), and LZ4's state,
	 * kept here rather than on a stack; used by one writer at a time */
	uint8_t z[ALEX_TRACE_HDR + LZ4_COMPRESSBOUND(ALEX_TBUF_BYTES)];
	union { LZ4_stream_t s; uint64_t align; } lz4;
};

/* The process's pid, as chunk headers name it (trace.c keeps it). */
extern int alex_trace_pid;

/* Writes used bytes of data (header room, then nev events) as one chunk,
 * compressed when that is smaller. */
void alex_tw_write(struct alex_tbuf *b, uint8_t *data, uint32_t used, uint32_t nev,
		   uint32_t dropped);
/* Gives b's full half to the writer thread and records on into the other:
 * 1, or 0 when there is no writer (the caller writes it itself). */
int alex_tw_handoff(struct alex_tbuf *b);
/* Waits until the writer is done with b's other half (bounded). */
void alex_tw_settle(struct alex_tbuf *b);
/* In a child after fork: the parent's writer writes what it was given. */
void alex_tw_forked(struct alex_tbuf *all);
/* A write to the trace file failed: one line, and tracing stops. */
void alex_tw_stop(const char *what, int err);

#endif
