/* trace_read.c - the trace file reader (trace_read.h). */
#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "crc32c.h"
#include "trace_read.h"

void alex_trace_reader_init(struct alex_treader *r, const void *buf, size_t len)
{
	memset(r, 0, sizeof *r);
	r->buf = buf;
	r->len = len;
}

void alex_trace_reader_free(struct alex_treader *r)
{
	free(r->raw);
	r->raw = NULL;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/* Why the chunk at pos is not one, or NULL when it checks out. */
static const char *chunk_fault(const struct alex_treader *r, size_t pos)
{
	const uint8_t *h = r->buf + pos;
	size_t room = r->len - pos;

	if (room < ALEX_TRACE_HDR)
		return "the file ends inside a chunk header";
	if (alex_get32(h) != ALEX_TRACE_FILE_MAGIC)
		return "no chunk starts here (bad magic)";
	uint16_t v = get16(h + 4);
	if ((v != 1 && v != 2) || h[6] != ALEX_TRACE_HDR || (h[7] & ~ALEX_TRACE_LZ4))
		return "unknown trace format version";
	uint32_t n = alex_get32(h + 16);
	if (n > ALEX_TRACE_CHUNK_MAX || (v == 1 && !(h[7] & ALEX_TRACE_LZ4) && n % 8))
		return "impossible chunk length";
	if (n > room - ALEX_TRACE_HDR)
		return "the file ends inside a chunk (truncated)";
	uint8_t hdr[ALEX_TRACE_HDR];
	memcpy(hdr, h, sizeof hdr);
	alex_put32(hdr + 28, 0);
	uint32_t crc = alex_crc32c(alex_crc32c(0, hdr, sizeof hdr), h + ALEX_TRACE_HDR, n);
	if (crc != alex_get32(h + 28))
		return "checksum mismatch";
	return NULL;
}

/* Notes damage at pos and moves to the next chunk that checks out. */
static void skip_damage(struct alex_treader *r, size_t pos, const char *why)
{
	size_t p = pos + 1;

	if (!r->damaged++) {
		r->first_bad = pos;
		snprintf(r->why, sizeof r->why, "%s", why);
	}
	for (; p + ALEX_TRACE_HDR <= r->len; p++)
		if (alex_get32(r->buf + p) == ALEX_TRACE_FILE_MAGIC && !chunk_fault(r, p))
			break;
	if (p + ALEX_TRACE_HDR > r->len)
		p = r->len;
	r->damaged_bytes += p - pos;
	r->pos = p;
	r->ev = r->end = 0;
}

/* The chunk at r->pos, checked: its payload in place, or decompressed. */
static const char *open_chunk(struct alex_treader *r)
{
	const uint8_t *h = r->buf + r->pos;
	uint32_t n = alex_get32(h + 16);

	r->pay = h + ALEX_TRACE_HDR;
	r->end = n;
	r->version = get16(h + 4);
	r->last_start = 0;
	r->last_fd = -1;
	r->nnames = 0;
	if (h[7] & ALEX_TRACE_LZ4) {
		if (!r->raw && !(r->raw = malloc(ALEX_TRACE_RAW_MAX)))
			return "out of memory";
		int got = LZ4_decompress_safe((const char *)r->pay, (char *)r->raw, (int)n,
					      ALEX_TRACE_RAW_MAX);
		if (got < 0 || (r->version == 1 && got % 8))
			return "a compressed chunk that does not decompress";
		r->pay = r->raw;
		r->end = (size_t)got;
	}
	r->pid = alex_get32(h + 8);
	r->tid = alex_get32(h + 12);
	r->left = alex_get32(h + 20);
	r->dropped += alex_get32(h + 24);
	r->pay_at = r->pos + ALEX_TRACE_HDR;
	r->pos += ALEX_TRACE_HDR + n;
	r->ev = 0;
	r->chunks++;
	return NULL;
}

static int next_chunk(struct alex_treader *r)
{
	while (r->pos < r->len) {
		size_t at = r->pos;
		const char *why = chunk_fault(r, at);
		if (!why && !(why = open_chunk(r)))
			return 1;
		skip_damage(r, at, why);
	}
	return 0;
}

/* A version 1 event at e, with room bytes left in the payload: its size,
 * or 0 with *why. */
static size_t event_v1(const uint8_t *e, size_t room, struct alex_tevent *ev, const char **why)
{
	*why = "a chunk ends inside an event";
	if (room < ALEX_TRACE_EVENT)
		return 0;
	ev->start = alex_get64(e);
	ev->off = alex_get64(e + 8);
	ev->len = alex_get64(e + 16);
	ev->res = (int64_t)alex_get64(e + 24);
	ev->dur = alex_get32(e + 32);
	ev->fd = (int32_t)alex_get32(e + 36);
	ev->page = alex_get32(e + 40);
	ev->kind = e[44];
	ev->role = e[45];
	ev->flags = e[46];
	ev->lock = e[47];
	size_t used = ALEX_TRACE_EVENT;
	if (ev->flags & ALEX_TF_NAME) {
		*why = "a name longer than its chunk";
		if (ev->len > room - ALEX_TRACE_EVENT || ev->len > ALEX_TRACE_NAME_MAX)
			return 0;
		ev->name = (const char *)e + ALEX_TRACE_EVENT;
		ev->name_len = (uint32_t)ev->len;
		used += (ev->len + 7) & ~(uint64_t)7;
		if (used > room)
			return 0;
	}
	return used;
}

/* A varint at *p before end (trace_format.h); 0 when there is none. */
static int get_var(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (unsigned shift = 0; shift < 70 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;
		if (shift == 63 && b > 1)
			return 0; /* more than 64 bits */
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 1;
	}
	return 0;
}

/* A varint that must fit in 32 bits; else 0, with *why = what when it
 * is there but too large. */
static int get_var32(const uint8_t **p, const uint8_t *end, uint32_t *out, const char **why,
		     const char *what)
{
	uint64_t v;

	if (!get_var(p, end, &v))
		return 0;
	if (v > UINT32_MAX) {
		*why = what;
		return 0;
	}
	*out = (uint32_t)v;
	return 1;
}

static int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* A version 2 event at e, with room bytes left in the payload, packed
 * against r's state (which it moves on): its size, or 0 with *why. */
static size_t event_v2(struct alex_treader *r, const uint8_t *e, size_t room,
		       struct alex_tevent *ev, const char **why)
{
	const uint8_t *p = e + 3, *end = e + room;
	uint64_t v;

	*why = "a chunk ends inside an event";
	if (room < 3)
		return 0;
	uint8_t which = e[2];
	ev->kind = e[0];
	ev->role = e[1] >> 4;
	ev->flags = e[1] & 15;
	ev->off = ev->len = 0;
	ev->res = 0;
	ev->page = 0;
	ev->lock = 0;
	*why = "an event with fields that exclude each other";
	if ((which & ALEX_TP_LEN && which & ALEX_TP_REF) ||
	    (which & ALEX_TP_RES && which & ALEX_TP_RESLEN) ||
	    (which & ALEX_TP_REF && !(ev->flags & ALEX_TF_NAME)))
		return 0;
	*why = "a chunk ends inside an event";
	if (!get_var(&p, end, &v))
		return 0;
	ev->start = r->last_start + (uint64_t)unzigzag(v);
	if (!get_var32(&p, end, &ev->dur, why, "an event with a duration out of range"))
		return 0;
	if (which & ALEX_TP_SAMEFD) {
		ev->fd = r->last_fd;
	} else {
		if (!get_var(&p, end, &v))
			return 0;
		int64_t fd = unzigzag(v);
		if (fd < INT32_MIN || fd > INT32_MAX) {
			*why = "an event with a descriptor out of range";
			return 0;
		}
		ev->fd = (int32_t)fd;
	}
	if (which & ALEX_TP_OFF && !get_var(&p, end, &ev->off))
		return 0;
	if (which & ALEX_TP_LEN && !get_var(&p, end, &ev->len))
		return 0;
	const uint8_t *name = NULL;
	if (which & ALEX_TP_REF) {
		if (p == end)
			return 0;
		uint8_t k = *p++;
		if (k >= ALEX_TRACE_NAME_REFS || k >= r->nnames) {
			*why = "a name that refers to no earlier one";
			return 0;
		}
		name = r->names[k].at;
		ev->len = r->names[k].len;
	}
	if (which & ALEX_TP_RES) {
		if (!get_var(&p, end, &v))
			return 0;
		ev->res = unzigzag(v);
	} else if (which & ALEX_TP_RESLEN) {
		ev->res = (int64_t)ev->len;
	}
	if (which & ALEX_TP_PAGE &&
	    !get_var32(&p, end, &ev->page, why, "an event with a page out of range"))
		return 0;
	if (which & ALEX_TP_LOCK) {
		if (p == end)
			return 0;
		ev->lock = *p++;
	}
	if (ev->flags & ALEX_TF_NAME) {
		*why = "a name longer than its chunk";
		if (ev->len > ALEX_TRACE_NAME_MAX || (!name && ev->len > (uint64_t)(end - p)))
			return 0;
		if (!name) {
			name = p;
			p += ev->len;
			uint32_t k = r->nnames++ % ALEX_TRACE_NAME_REFS;
			r->names[k].at = name;
			r->names[k].len = (uint32_t)ev->len;
		}
		ev->name = (const char *)name;
		ev->name_len = (uint32_t)ev->len;
	}
	r->last_start = ev->start;
	r->last_fd = ev->fd;
	return (size_t)(p - e);
}

/* The event at r->ev in the chunk's payload; NULL when it holds one. */
static const char *event_at(struct alex_treader *r, struct alex_tevent *ev)
{
	const uint8_t *e = r->pay + r->ev;
	size_t room = r->end - r->ev;
	const char *why;

	ev->name = NULL;
	ev->name_len = 0;
	size_t used = r->version == 1 ? event_v1(e, room, ev, &why) : event_v2(r, e, room, ev, &why);
	if (!used)
		return why;
	ev->pid = r->pid;
	ev->tid = r->tid;
	ev->at = r->pay_at + r->ev;
	if (!ev->kind || ev->kind >= ALEX_TK_COUNT || ev->role >= ALEX_TROLE_COUNT)
		return "an event of unknown kind or role";
	r->ev += used;
	return NULL;
}

int alex_trace_next(struct alex_treader *r, struct alex_tevent *ev)
{
	for (;;) {
		if (r->ev == r->end) {
			/* the chunk just read said how many events it holds */
			if (r->left) {
				size_t at = r->pay_at - ALEX_TRACE_HDR;
				r->left = 0;
				r->pos = at;
				skip_damage(r, at, "a chunk holds fewer events than it says");
			}
			if (!next_chunk(r))
				return 0;
			continue;
		}
		const char *why = r->left ? event_at(r, ev) : "a chunk holds more than it says";
		if (why) {
			size_t at = r->pay_at - ALEX_TRACE_HDR;
			r->left = 0;
			r->pos = at;
			skip_damage(r, at, why);
			continue;
		}
		r->left--;
		r->events++;
		return 1;
	}
}

const char *alex_tkind_name(unsigned kind)
{
	static const char *const names[ALEX_TK_COUNT] = {
		"?", "openat", "close", "read", "write", "pread64", "pwrite64", "readv", "writev",
		"preadv", "pwritev", "lseek", "fsync", "fdatasync", "ftruncate", "fallocate",
		"fcntl", "fstat", "stat", "access", "unlink", "rename", "mmap", "fstatfs",
		"fchmod", "fchown", "unlinkat", "faccessat", "dup", "process",
		"sync_file_range"
	};
	return kind < ALEX_TK_COUNT ? names[kind] : "?";
}

const char *alex_trole_name(unsigned role)
{
	static const char *const names[ALEX_TROLE_COUNT] = {
		"none", "db", "journal", "wal", "shm", "dir", "super", "log", "other"
	};
	return role < ALEX_TROLE_COUNT ? names[role] : "?";
}

const char *alex_tlock_name(unsigned lock)
{
	static const char *const names[] = {
		"", "other", "SHARED", "RESERVED", "PENDING", "EXCLUSIVE", "ALL",
		"WAL_WRITE", "WAL_CKPT", "WAL_RECOVER", "WAL_READ0", "WAL_READ1", "WAL_READ2",
		"WAL_READ3", "WAL_READ4", "WAL_DMS", "WAL_RANGE", "GETLK"
	};
	lock &= 63;
	return lock < sizeof names / sizeof *names ? names[lock] : "?";
}
