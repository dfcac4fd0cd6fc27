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
 *     fields and name are that payload's bytes; kind and role are in range;
 *     a name is at most 4096 bytes; pid and tid are the chunk's; a chunk
 *     gives no more events than it says; an uncompressed chunk's events and
 *     names lie inside the file (`at` is their byte, `name` points there);
 *   - chunks are read in file order, each once; events from uncompressed
 *     chunks number at most len/48;
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
	if (alex_get32(h) != ALEX_TRACE_FILE_MAGIC || get16(h + 4) != ALEX_TRACE_VERSION ||
	    h[6] != ALEX_TRACE_HDR || (h[7] & ~ALEX_TRACE_LZ4) || n > ALEX_TRACE_CHUNK_MAX ||
	    (!(h[7] & ALEX_TRACE_LZ4) && n % 8) || n > len - p - ALEX_TRACE_HDR)
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
	if (got < 0 || got % 8)
		return NULL;
	*plen = (size_t)got;
	return raw;
}

/* The bytes of the event at e with room bytes left in its payload, or 0
 * when no valid event is there (as trace_format.h describes one). */
static size_t event_size(const uint8_t *e, size_t room)
{
	if (room < ALEX_TRACE_EVENT)
		return 0;
	uint8_t kind = e[44], role = e[45], flags = e[46];
	if (kind == 0 || kind >= ALEX_TK_COUNT || role >= ALEX_TROLE_COUNT)
		return 0;
	size_t used = ALEX_TRACE_EVENT;
	if (flags & ALEX_TF_NAME) {
		uint64_t nl = alex_get64(e + 16);
		if (nl > NAME_MAX_LEN)
			return 0;
		used += (size_t)((nl + 7) & ~(uint64_t)7);
	}
	return used <= room ? used : 0;
}

/* How many valid events follow each other from the start of a payload;
 * *full: they fill it exactly. */
static uint32_t count_events(const uint8_t *pay, size_t plen, int *full)
{
	size_t q = 0, k;
	uint32_t c = 0;

	while (q < plen && (k = event_size(pay + q, plen - q))) {
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
	return count_events(pay, plen, &full) == alex_get32(buf + p + 20) && full;
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
			alex_put32(buf + p + 20, count_events(pay, plen, &full));
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
	uint64_t n = 0, plain = 0, last_chunks = 0;
	size_t c = 0, next = 0, plen = 0;   /* the current chunk, its next event */
	const uint8_t *pay = NULL;
	int have_chunk = 0, lz4 = 0;
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
		size_t used = event_size(pay + next, plen - next);
		check(used > 0);
		const uint8_t *e = pay + next;
		check(ev.start == alex_get64(e) && ev.off == alex_get64(e + 8) &&
		      ev.len == alex_get64(e + 16) && ev.res == (int64_t)alex_get64(e + 24) &&
		      ev.dur == alex_get32(e + 32) && ev.fd == (int32_t)alex_get32(e + 36) &&
		      ev.page == alex_get32(e + 40) && ev.kind == e[44] && ev.role == e[45] &&
		      ev.flags == e[46] && ev.lock == e[47]);
		check(ev.kind >= 1 && ev.kind < ALEX_TK_COUNT && ev.role < ALEX_TROLE_COUNT);
		if (ev.flags & ALEX_TF_NAME) {
			check(ev.name && ev.name_len <= NAME_MAX_LEN && ev.len == ev.name_len);
			check(memcmp(ev.name, e + ALEX_TRACE_EVENT, ev.name_len) == 0);
			check(ALEX_TRACE_EVENT + ((ev.name_len + 7u) & ~7u) == used);
		} else {
			check(ev.name == NULL && ev.name_len == 0 && used == ALEX_TRACE_EVENT);
		}
		if (!lz4) {
			/* in place: `at` is the event's byte in the file */
			check(ev.at + used <= c + ALEX_TRACE_HDR + cn && c + ALEX_TRACE_HDR + cn <= len);
			check(!ev.name || (const uint8_t *)ev.name == buf + ev.at + ALEX_TRACE_EVENT);
			plain++;
			check(plain <= len / ALEX_TRACE_EVENT);
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
