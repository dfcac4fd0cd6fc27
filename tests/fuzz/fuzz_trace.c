/*
 * fuzz_trace - libFuzzer target for the trace file reader (trace_read.c).
 *
 * Input: one control byte, then the bytes of a trace file.  They are put in
 * a buffer of exactly their size, so ASan sees any read past the file.
 *   bit 0: repair the CRC of every chunk-looking header first (magic,
 *          version, header size, flags and a stored length that fits):
 *          without it mutations hardly ever get past the checksum, and the
 *          event parser and the LZ4 path would go untested.
 *   bit 1: with bit 0, first set each such chunk's event count to the
 *          number of events its payload holds (after decompression), so
 *          that whole files come out clean as often as damaged.
 * Then alex_trace_next runs until it says the end, and what trace_read.h and
 * trace_format.h promise is checked against a model written from the format
 * alone (its own header checks, the table CRC, its own LZ4 decompression):
 *   - every event comes from a chunk that checks out and decompresses, at
 *     its payload's start or right after the chunk's previous event; its
 *     fields and name are what that payload's bytes say, in the chunk's
 *     version (1: 48-byte events; 2: packed, decoded here with the
 *     model's own varints and name slots); kind and role are in range;
 *     a name is at most 4096 bytes; pid and tid are the chunk's; a chunk
 *     gives no more events than it says; an uncompressed chunk's events and
 *     names lie inside the file (`at` is their byte, `name` points there);
 *   - chunks are read in file order, each once; events from uncompressed
 *     chunks number at most len/48 (version 1) and len/5 (version 2, whose
 *     smallest event is 5 bytes);
 *   - the reader ends with pos == len, and stays at the end when called
 *     again;
 *   - damage: none exactly when the model finds the file a clean run of
 *     valid chunks (and then chunks, events and drops match it); otherwise
 *     `why` says something and first_bad, damaged_bytes lie in the file;
 *   - no valid part is lost: every valid chunk (checks out, decompresses,
 *     holds exactly the events it says) that no earlier chunk which checks
 *     out spans has every one of its events returned.
 * The names for reports (alex_tkind_name ...) are asked for every event's
 * values, and for values out of range.
 */
#include <lz4.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "crc32c.h"
#include "trace_format.h"
#include "trace_read.h"

#define check(c) do { if (!(c)) abort(); } while (0)

#define NAME_MAX_LEN 4096u

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/* The stored payload length of a plausible chunk header at p (not its
 * CRC), or -1. */
static int64_t header_len(const uint8_t *buf, size_t len, size_t p)
{
	if (p > len || len - p < ALEX_TRACE_HDR)
		return -1;
	const uint8_t *h = buf + p;
	uint32_t n = alex_get32(h + 16);
	uint16_t v = get16(h + 4);
	if (alex_get32(h) != ALEX_TRACE_FILE_MAGIC || (v != 1 && v != 2) ||
	    h[6] != ALEX_TRACE_HDR || (h[7] & ~ALEX_TRACE_LZ4) || n > ALEX_TRACE_CHUNK_MAX ||
	    (v == 1 && !(h[7] & ALEX_TRACE_LZ4) && n % 8) || n > len - p - ALEX_TRACE_HDR)
		return -1;
	return n;
}

static uint32_t chunk_crc(const uint8_t *h, uint32_t n,
			  uint32_t (*crc)(uint32_t, const void *, size_t))
{
	uint8_t hdr[ALEX_TRACE_HDR];
	memcpy(hdr, h, sizeof hdr);
	alex_put32(hdr + 28, 0);
	return crc(crc(0, hdr, sizeof hdr), h + ALEX_TRACE_HDR, n);
}

/* 1 when a chunk that checks out starts at p (*n: its stored bytes).  The
 * chunks events come from are checked with the table CRC, not the one the
 * reader uses; the scans of every position use the fast one (as the
 * reader's own scan costs a CRC per candidate header, the table one would
 * make the model ten times slower than the reader on such files). */
static int chunk_ok(const uint8_t *buf, size_t len, size_t p, uint32_t *n,
		    uint32_t (*crc)(uint32_t, const void *, size_t))
{
	int64_t l = header_len(buf, len, p);
	if (l < 0)
		return 0;
	*n = (uint32_t)l;
	return chunk_crc(buf + p, *n, crc) == alex_get32(buf + p + 28);
}

/* The payload of the plausible chunk at p (stored bytes n), decompressed
 * into raw when it is LZ4; NULL when it does not decompress. */
static const uint8_t *payload(const uint8_t *buf, size_t p, uint32_t n, uint8_t *raw,
			      size_t *plen)
{
	const uint8_t *s = buf + p + ALEX_TRACE_HDR;

	if (!(buf[p + 7] & ALEX_TRACE_LZ4)) {
		*plen = n;
		return s;
	}
	int got = LZ4_decompress_safe((const char *)s, (char *)raw, (int)n, ALEX_TRACE_RAW_MAX);
	if (got < 0 || (get16(buf + p + 4) == 1 && got % 8))
		return NULL;
	*plen = (size_t)got;
	return raw;
}

/* An event as the model reads it; name: its offset in the payload. */
struct mev {
	uint64_t start, off, len, res, dur, fd, page;
	uint8_t kind, role, flags, lock;
	size_t name;
};

/* What a version 2 event is read against: the chunk's events so far. */
struct mstate {
	uint64_t start, fd;
	size_t slot_at[4];
	uint64_t slot_len[4];
	unsigned slots;
};

static void mstate_init(struct mstate *st)
{
	memset(st, 0, sizeof *st);
	st->fd = (uint64_t)-1;
}

/* A LEB128 number at pay[*q] (at most 10 bytes, at most 64 bits); 0 when
 * the payload ends first or it is longer. */
static int leb(const uint8_t *pay, size_t plen, size_t *q, uint64_t *v)
{
	uint8_t bytes[10];
	int n = 0;

	do {
		if (*q >= plen || n == 10)
			return 0;
		bytes[n++] = pay[(*q)++];
	} while (bytes[n - 1] & 0x80);
	if (n == 10 && bytes[9] > 1)
		return 0;
	*v = 0;
	while (n--)
		*v = *v << 7 | (bytes[n] & 0x7f);
	return 1;
}

static uint64_t unzig(uint64_t v)
{
	return v & 1 ? ~(v >> 1) : v >> 1;
}

static size_t event_v2(struct mstate *st, const uint8_t *pay, size_t plen, size_t at,
		       struct mev *m)
{
	size_t q = at + 3;
	uint64_t v;

	if (plen - at < 3)
		return 0;
	uint8_t w = pay[at + 2];
	m->kind = pay[at];
	m->role = pay[at + 1] >> 4;
	m->flags = pay[at + 1] & 15;
	int name = m->flags & ALEX_TF_NAME;
	if ((w & 2 && w & 4) || (w & 8 && w & 16) || (w & 4 && !name))
		return 0;
	if (!leb(pay, plen, &q, &v))
		return 0;
	m->start = st->start + unzig(v);
	if (!leb(pay, plen, &q, &m->dur) || m->dur > 0xffffffffu)
		return 0;
	if (w & 128) {
		m->fd = st->fd;
	} else {
		if (!leb(pay, plen, &q, &v))
			return 0;
		m->fd = unzig(v);
		if ((int64_t)m->fd != (int32_t)m->fd)
			return 0;
	}
	m->off = m->len = m->res = m->page = m->lock = 0;
	m->name = 0;
	if (w & 1 && !leb(pay, plen, &q, &m->off))
		return 0;
	if (w & 2 && !leb(pay, plen, &q, &m->len))
		return 0;
	int ref = -1;
	if (w & 4) {
		if (q >= plen || pay[q] >= 4 || pay[q] >= st->slots)
			return 0;
		ref = pay[q++];
		m->len = st->slot_len[ref];
		m->name = st->slot_at[ref];
	}
	if (w & 16 && !leb(pay, plen, &q, &m->res))
		return 0;
	m->res = w & 16 ? unzig(m->res) : w & 8 ? m->len : 0;
	if (w & 32 && (!leb(pay, plen, &q, &m->page) || m->page > 0xffffffffu))
		return 0;
	if (w & 64) {
		if (q >= plen)
			return 0;
		m->lock = pay[q++];
	}
	if (name && ref < 0) {
		if (m->len > NAME_MAX_LEN || m->len > plen - q)
			return 0;
		m->name = q;
		st->slot_at[st->slots % 4] = q;
		st->slot_len[st->slots % 4] = m->len;
		st->slots++;
		q += m->len;
	}
	if (m->kind == 0 || m->kind >= ALEX_TK_COUNT || m->role >= ALEX_TROLE_COUNT)
		return 0;
	st->start = m->start;
	st->fd = m->fd;
	return q - at;
}

static size_t event_v1(const uint8_t *pay, size_t plen, size_t at, struct mev *m)
{
	const uint8_t *e = pay + at;
	size_t room = plen - at;

	if (room < ALEX_TRACE_EVENT)
		return 0;
	m->start = alex_get64(e);
	m->off = alex_get64(e + 8);
	m->len = alex_get64(e + 16);
	m->res = alex_get64(e + 24);
	m->dur = alex_get32(e + 32);
	m->fd = (uint64_t)(int64_t)(int32_t)alex_get32(e + 36);
	m->page = alex_get32(e + 40);
	m->kind = e[44];
	m->role = e[45];
	m->flags = e[46];
	m->lock = e[47];
	m->name = at + ALEX_TRACE_EVENT;
	if (m->kind == 0 || m->kind >= ALEX_TK_COUNT || m->role >= ALEX_TROLE_COUNT)
		return 0;
	size_t used = ALEX_TRACE_EVENT;
	if (m->flags & ALEX_TF_NAME) {
		if (m->len > NAME_MAX_LEN)
			return 0;
		used += (size_t)((m->len + 7) & ~(uint64_t)7);
	}
	return used <= room ? used : 0;
}

/* The bytes of the event at pay[at] in a chunk of version ver, or 0 when
 * no valid event is there (as trace_format.h describes one). */
static size_t event_size(int ver, struct mstate *st, const uint8_t *pay, size_t plen, size_t at,
			 struct mev *m)
{
	return ver == 1 ? event_v1(pay, plen, at, m) : event_v2(st, pay, plen, at, m);
}

/* How many valid events follow each other from the start of a payload;
 * *full: they fill it exactly. */
static uint32_t count_events(int ver, const uint8_t *pay, size_t plen, int *full)
{
	size_t q = 0, k;
	uint32_t c = 0;
	struct mstate st;
	struct mev m;

	mstate_init(&st);
	while (q < plen && (k = event_size(ver, &st, pay, plen, q, &m))) {
		q += k;
		c++;
	}
	*full = q == plen;
	return c;
}

/* 1 when the chunk at p checks out, decompresses and holds exactly the
 * events it says (*n: its stored bytes). */
static int chunk_valid(const uint8_t *buf, size_t len, size_t p, uint32_t *n, uint8_t *raw)
{
	size_t plen;
	const uint8_t *pay;
	int full;

	if (!chunk_ok(buf, len, p, n, alex_crc32c) || !(pay = payload(buf, p, *n, raw, &plen)))
		return 0;
	return count_events(get16(buf + p + 4), pay, plen, &full) == alex_get32(buf + p + 20) &&
	       full;
}

static void repair(uint8_t *buf, size_t len, int fix_count, uint8_t *raw)
{
	for (size_t p = 0; p + ALEX_TRACE_HDR <= len;) {
		int64_t n = header_len(buf, len, p);
		if (n < 0) {
			p++;
			continue;
		}
		size_t plen;
		const uint8_t *pay;
		if (fix_count && (pay = payload(buf, p, (uint32_t)n, raw, &plen))) {
			int full;
			alex_put32(buf + p + 20, count_events(get16(buf + p + 4), pay, plen, &full));
		}
		alex_put32(buf + p + 28, chunk_crc(buf + p, (uint32_t)n, alex_crc32c));
		p += ALEX_TRACE_HDR + (size_t)n;
	}
}

static void names(const struct alex_tevent *ev)
{
	const char *k = alex_tkind_name(ev->kind), *r = alex_trole_name(ev->role),
		   *l = alex_tlock_name(ev->lock);
	/* a kind or role in range has a name of its own: the tables follow
	 * the enums */
	check(k && r && l);
	check(strcmp(k, "?") != 0 && strlen(k) > 0 && strcmp(r, "?") != 0 && strlen(r) > 0);
	check(((ev->lock & 63) <= ALEX_TL_GETLK) == (strcmp(l, "?") != 0));
	check(strlen(l) < 32);
	/* out of range */
	check(strcmp(alex_tkind_name(ev->dur | ALEX_TK_COUNT), "?") == 0);
	check(strcmp(alex_trole_name(ev->page | ALEX_TROLE_COUNT), "?") == 0);
	const char *s[3] = { alex_tkind_name((unsigned)ev->start),
			     alex_trole_name((unsigned)ev->off),
			     alex_tlock_name((unsigned)ev->len) };
	for (int i = 0; i < 3; i++)
		check(s[i] && strlen(s[i]) < 32);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t raw[ALEX_TRACE_RAW_MAX]; /* the model's decompressed payload */

	if (size < 1 || size > (4u << 20))
		return 0;
	uint8_t ctl = data[0];
	size_t len = size - 1;
	uint8_t *buf = malloc(len ? len : 1);          /* exact: catches over-reads */
	uint32_t *got = calloc(len + 1, sizeof *got);  /* events returned per chunk start */
	check(buf && got);
	memcpy(buf, data + 1, len);
	if (ctl & 1)
		repair(buf, len, ctl & 2, raw);

	struct alex_treader r;
	struct alex_tevent ev;
	uint64_t n = 0, plain[3] = { 0 }, last_chunks = 0;
	size_t c = 0, next = 0, plen = 0;   /* the current chunk, its next event */
	const uint8_t *pay = NULL;
	int have_chunk = 0, lz4 = 0, ver = 0;
	struct mstate st;
	struct mev m;
	uint32_t count = 0, pid = 0, tid = 0, cn = 0;

	alex_trace_reader_init(&r, buf, len);
	check(r.buf == buf && r.len == len && r.pos == 0 && !r.damaged && !r.events);
	for (;;) {
		memset(&ev, 0xa5, sizeof ev);
		if (!alex_trace_next(&r, &ev))
			break;
		n++;
		check(r.events == n && r.pos <= r.len);

		/* a new chunk starts right before its first event, after the
		 * chunk before */
		if (r.chunks != last_chunks) {
			check(r.chunks > last_chunks);
			check(ev.at >= ALEX_TRACE_HDR && ev.at - ALEX_TRACE_HDR < len);
			size_t s = (size_t)ev.at - ALEX_TRACE_HDR;
			check(!have_chunk || s > c);
			c = s;
			check(chunk_ok(buf, len, c, &cn, alex_crc32c_sw));
			lz4 = buf[c + 7] & ALEX_TRACE_LZ4;
			ver = get16(buf + c + 4);
			mstate_init(&st);
			/* the reader's own buffer may hold the payload, and raw
			 * is the model's: nothing else uses it until the next
			 * chunk */
			pay = payload(buf, c, cn, raw, &plen);
			check(pay != NULL);
			count = alex_get32(buf + c + 20);
			pid = alex_get32(buf + c + 8);
			tid = alex_get32(buf + c + 12);
			next = 0;
			have_chunk = 1;
			last_chunks = r.chunks;
		}
		/* the event: the payload's next one, as its bytes say */
		check(ev.at == c + ALEX_TRACE_HDR + next);
		size_t used = event_size(ver, &st, pay, plen, next, &m);
		check(used > 0);
		check(ev.start == m.start && ev.off == m.off && ev.len == m.len &&
		      ev.res == (int64_t)m.res && ev.dur == m.dur && ev.fd == (int32_t)m.fd &&
		      ev.page == m.page && ev.kind == m.kind && ev.role == m.role &&
		      ev.flags == m.flags && ev.lock == m.lock);
		check(ev.kind >= 1 && ev.kind < ALEX_TK_COUNT && ev.role < ALEX_TROLE_COUNT);
		if (ev.flags & ALEX_TF_NAME) {
			check(ev.name && ev.name_len <= NAME_MAX_LEN && ev.len == ev.name_len);
			check(memcmp(ev.name, pay + m.name, ev.name_len) == 0);
			check(ver == 2 || ALEX_TRACE_EVENT + ((ev.name_len + 7u) & ~7u) == used);
		} else {
			check(ev.name == NULL && ev.name_len == 0 && (ver == 2 || used == ALEX_TRACE_EVENT));
		}
		if (!lz4) {
			/* in place: `at` is the event's byte in the file */
			check(ev.at + used <= c + ALEX_TRACE_HDR + cn && c + ALEX_TRACE_HDR + cn <= len);
			check(!ev.name || (const uint8_t *)ev.name == pay + m.name);
			plain[ver]++;
			check(plain[1] <= len / ALEX_TRACE_EVENT && plain[2] <= len / 5);
		}
		next += used;
		check(got[c] < count);
		got[c]++;
		check(r.left == count - got[c]);
		check(ev.pid == pid && ev.tid == tid);
		names(&ev);
	}

	/* the end, and it stays the end */
	check(r.pos == r.len && r.events == n && r.chunks <= len / ALEX_TRACE_HDR);
	struct alex_treader again = r;
	check(!alex_trace_next(&r, &ev) && memcmp(&again, &r, sizeof r) == 0);

	/* damage, as reported */
	check(memchr(r.why, 0, sizeof r.why) != NULL);
	if (!r.damaged)
		check(r.first_bad == 0 && r.damaged_bytes == 0 && r.why[0] == 0);
	else
		check(r.why[0] && r.first_bad < len && r.damaged <= len && r.damaged_bytes <= len);
	alex_trace_reader_free(&r);
	check(r.raw == NULL);

	/* the model's walk: a clean file is a run of valid chunks */
	uint64_t ref_chunks = 0, ref_events = 0, ref_dropped = 0;
	size_t p = 0;
	while (p < len && chunk_valid(buf, len, p, &cn, raw)) {
		ref_chunks++;
		ref_events += alex_get32(buf + p + 20);
		ref_dropped += alex_get32(buf + p + 24);
		p += ALEX_TRACE_HDR + cn;
	}
	check(!r.damaged == (p == len));
	if (!r.damaged)
		check(r.chunks == ref_chunks && r.events == ref_events && r.dropped == ref_dropped);

	/* nothing valid is lost: of the chunks that check out, one that no
	 * earlier one spans is read, and when it is valid every one of its
	 * events comes back */
	size_t span = 0; /* where the chunks that check out so far end */
	for (p = 0; p + ALEX_TRACE_HDR <= len; p++) {
		if (alex_get32(buf + p) != ALEX_TRACE_FILE_MAGIC ||
		    !chunk_ok(buf, len, p, &cn, alex_crc32c))
			continue;
		if (p >= span && chunk_valid(buf, len, p, &cn, raw))
			check(got[p] == alex_get32(buf + p + 20));
		if (p + ALEX_TRACE_HDR + cn > span)
			span = p + ALEX_TRACE_HDR + cn;
	}
	free(got);
	free(buf);
	return 0;
}
