/*
 * trace_read.h - reads a trace file (trace_format.h) chunk by chunk,
 * checking each, for `alex trace` and its fuzzer.  A damaged chunk is
 * reported with the byte where it starts, and reading goes on at the next
 * chunk that checks out: the report covers every valid part.
 */
#ifndef ALEX_TRACE_READ_H
#define ALEX_TRACE_READ_H

#include <stddef.h>
#include <stdint.h>

#include "trace_format.h"

struct alex_tevent {
	uint64_t start, off, len;
	int64_t res;
	uint32_t dur, page;
	int32_t fd;
	uint8_t kind, role, flags, lock;
	uint32_t pid, tid;
	const char *name; /* with ALEX_TF_NAME: name_len bytes, not terminated */
	uint32_t name_len;
	uint64_t at;      /* the event's byte in the file (in a compressed chunk:
			     the chunk's payload's byte plus the event's place
			     in the decompressed payload) */
};

struct alex_treader {
	const uint8_t *buf;
	size_t len, pos;     /* pos: the next chunk */
	/* the chunk being read: its payload (in buf, or decompressed into
	 * raw), the next event in it and its end; ev == end between chunks */
	const uint8_t *pay;
	size_t ev, end;
	uint64_t pay_at;     /* the payload's byte in the file */
	uint8_t *raw;        /* ALEX_TRACE_RAW_MAX bytes, made at the first
				compressed chunk */
	uint32_t pid, tid, left;
	/* a version 2 chunk's packing state (trace_format.h) */
	uint16_t version;
	uint64_t last_start;
	int32_t last_fd;
	uint32_t nnames;
	struct { const uint8_t *at; uint32_t len; } names[ALEX_TRACE_NAME_REFS];
	uint64_t chunks, events, dropped;
	/* damage: how many places, the first one's byte and why */
	uint64_t damaged, damaged_bytes, first_bad;
	char why[160];
};

void alex_trace_reader_init(struct alex_treader *r, const void *buf, size_t len);
void alex_trace_reader_free(struct alex_treader *r);

/* 1: *ev holds the next event (its name valid until the next call); 0: the
 * end of the file. */
int alex_trace_next(struct alex_treader *r, struct alex_tevent *ev);

/* Names for reports: the system call ("pwrite64"), the role ("db"), the lock
 * ("RESERVED", "WAL_READ2"); "?" for a value out of range. */
const char *alex_tkind_name(unsigned kind);
const char *alex_trole_name(unsigned role);
const char *alex_tlock_name(unsigned lock);

#endif
