/*
 * fuzz_recover - libFuzzer target for the record decoder and recovery.
 *
 * Input: one control byte, then the bytes of the log after its header.
 * The harness writes a valid header slot, then the input; with control bit 0
 * set it first repairs every record-looking block so that its crcs and its
 * epoch/lsn/prev_crc chain hold -- otherwise the fuzzer would almost never
 * get past the header crc, and the code behind it (block table, lengths,
 * LZ4 payloads, truncations, the map, checkpointing) would go untested.
 * Then it opens an engine on it, reads everything, checkpoints, closes.
 * With control bit 3 the log is a staging log (<db>-alex-stage, io_over.h)
 * whose header names the point of an engine below that has no log yet:
 * both engines are opened, the staging one read through, written,
 * committed and merged below.  Nothing may crash, leak, or read out of
 * bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alex.h"
#include "bytes.h"
#include "crc32c.h"
#include "format.h"
#include "io.h"
#include "io_over.h"

#define LOGP "/f.db-alex"
#define STAGEP "/f.db-alex-stage"

static void read_all(alex_db *db)
{
	static uint8_t buf[1 << 16];

	for (int f = 0; f < ALEX_NFILES; f++) {
		uint64_t sz, off = 0;
		size_t got;
		alex_size(db, f, &sz);
		/* sizes come from the log: read a bounded window of each */
		while (off < sz && off < (1u << 20)) {
			if (alex_read(db, f, buf, sizeof buf, off, &got) || !got)
				break;
			off += got;
		}
	}
}

/* The staging engine over an engine with no log of its own. */
static void staged(const struct alex_config *cfg, struct alex_io *io, uint8_t ctl)
{
	struct alex_config cb = *cfg, ca;
	struct alex_io_over *ov;
	alex_db *b, *a;

	cb.db_only = 1;
	if (alex_open("/f.db", &cb, io, &b))
		return;
	if (alex_io_over_new(b, io, &ov) == 0) {
		struct alex_io oio = alex_io_over(ov);
		ca = cb;
		alex_config_over(&ca);
		if (alex_open("/f.db", &ca, &oio, &a) == 0) {
			read_all(a);
			if (ctl & 4) {
				uint8_t w[100] = { 7 };
				alex_write(a, ALEX_FILE_DB, w, sizeof w, 5000);
				alex_commit(a);
			}
			alex_merge(a, b);
			read_all(b);
			alex_close(a);
		}
		alex_io_over_free(ov);
	}
	alex_close(b);
}

static void repair(uint8_t *log, size_t len, uint32_t salt)
{
	uint64_t lsn = 1;
	uint32_t prev = salt;

	for (size_t off = ALEX_LOG_DATA; off + ALEX_SECTOR <= len; off += ALEX_SECTOR) {
		uint8_t *r = log + off;
		if (alex_get32(r) != ALEX_REC_MAGIC)
			continue;
		uint32_t n = alex_get32(r + 12) % 64;
		/* a conditional commit keeps a short path after its table */
		uint32_t flags = alex_get32(r + 40) & 3;
		if (flags == ALEX_REC_COND)
			flags = 0;
		uint32_t cond = flags & ALEX_REC_COND ? alex_get32(r + 104) % 64 + 1 : 0;
		uint32_t hdr_len = ALEX_REC_FIXED + ALEX_REC_ENTRY * n + cond;
		uint32_t rec_len = alex_get32(r + 8);
		alex_put32(r + 12, n);
		alex_put32(r + 4, hdr_len);
		alex_put64(r + 16, 1);
		alex_put64(r + 24, lsn);
		alex_put32(r + 48, prev);
		alex_put32(r + 40, flags);
		alex_put32(r + 104, cond);
		if (rec_len <= len - off && hdr_len <= rec_len) {
			uint64_t pos = hdr_len;
			for (uint32_t i = 0; i < n; i++) {
				uint8_t *e = r + ALEX_REC_FIXED + i * ALEX_REC_ENTRY;
				uint32_t sl = alex_get32(e + 12);
				if (sl == 0 || sl > ALEX_BLOCK || pos + sl > rec_len)
					break;
				alex_put32(e + 16, alex_crc32c(0, r + pos, sl));
				pos += sl;
			}
			alex_put32(r + 52, alex_crc32c(0, r + ALEX_REC_FIXED, hdr_len - ALEX_REC_FIXED));
		}
		alex_put32(r + 108, alex_crc32c(0, r, 108));
		prev = alex_get32(r + 108);
		lsn++;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > (8u << 20))
		return 0;
	uint8_t ctl = data[0];
	size_t len = ALEX_LOG_DATA + (size - 1);
	uint8_t *log = calloc(1, len);
	struct alex_loghdr h = { .uuid = { 1, 2, 3 }, .epoch = 1, .start_lsn = 1,
				 .salt = 0x5eed };

	if (!log)
		return 0;
	if (ctl & 8) /* a staging log's base copy: the point below, no log there */
		memcpy(h.base, "ALEXSTAGE", 9);
	alex_loghdr_encode(log + ALEX_BLOCK, &h); /* epoch 1 lives in slot 1 */
	memcpy(log + ALEX_LOG_DATA, data + 1, size - 1);
	if (ctl & 1)
		repair(log, len, h.salt);

	alex_mem *m = alex_mem_new();
	struct alex_io io = alex_mem_io(m);
	struct alex_config cfg;
	alex_db *db;

	alex_mem_limit(m, 16u << 20);
	alex_mem_set(m, ctl & 8 ? STAGEP : LOGP, log, len);
	free(log);
	alex_config_default(&cfg);
	cfg.memory_bytes = 64u << 10;
	cfg.prealloc_bytes = 64u << 10;
	cfg.checkpoint_on_close = (ctl & 2) != 0;
	if (ctl & 8) {
		staged(&cfg, &io, ctl);
	} else if (alex_open("/f.db", &cfg, &io, &db) == 0) {
		read_all(db);
		if (ctl & 4) {
			uint8_t b[100] = { 7 };
			alex_write(db, ALEX_FILE_DB, b, sizeof b, 5000);
			alex_commit(db);
		}
		alex_close(db);
	}
	alex_mem_free(m);
	return 0;
}
