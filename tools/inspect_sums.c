/*
 * inspect_sums.c - what both of `alex inspect`'s printers show of the map
 * (inspect_print.h): the dead bytes by cause, the page size and the pages
 * the log holds, what a checkpoint would write, and the names of states.
 */
#include <string.h>

#include "inspect_print.h"

const char *const inspect_file_name[ALEX_NFILES] = { "db", "journal", "wal" };

uint32_t inspect_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

uint32_t inspect_page_size(const uint8_t *h)
{
	uint32_t ps = (uint32_t)h[16] << 8 | h[17];

	if (memcmp(h, "SQLite format 3", 16) != 0)
		return 0;
	ps = ps == 1 ? 65536 : ps;
	return ps >= 512 && !(ps & (ps - 1)) ? ps : 0;
}

const char *inspect_state_name(enum alex_rec_state s)
{
	static const char *const n[] = { "committed", "checkpointed", "uncommitted", "undecided" };
	return (unsigned)s < 4 ? n[s] : "?";
}

const char *inspect_kind_name(const struct alex_lm_rec *x)
{
	return x->flags & ALEX_REC_COND ? "conditional" : x->flags & ALEX_REC_COMMIT ? "commit"
										    : "spill";
}

/* How a block is stored (format.h: a block's flags). */
const char *inspect_codec_name(uint32_t flags)
{
	switch (flags) {
	case ALEX_BLK_LZ4:
		return "lz4";
	case ALEX_BLK_GAP:
		return "gap";
	case ALEX_BLK_DELTA:
		return "delta";
	default:
		return "raw";
	}
}

const char *inspect_slot_name(enum alex_slot_state s)
{
	return s == ALEX_SLOT_VALID ? "valid" : s == ALEX_SLOT_DAMAGED ? "damaged" : "unwritten";
}

const char *inspect_mark_name(const struct alex_logmap *lm)
{
	if (!lm->base_exists)
		return "missing";
	switch (lm->mark.kind) {
	case ALEX_MARK_SQLITE: return "marked";
	case ALEX_MARK_PLACEHOLDER: return "placeholder";
	case ALEX_MARK_TORN: return "torn placeholder";
	default: return "plain";
	}
}

/* Pages past the end of the database (small pages in its last block) are
 * not pages. */
void inspect_pages_of(uint64_t blk, const struct inspect_sums *s, uint64_t *lo, uint64_t *hi)
{
	*lo = blk * ALEX_BLOCK / s->page_size + 1;
	*hi = ((blk + 1) * ALEX_BLOCK - 1) / s->page_size + 1;
	if (*hi > s->db_pages)
		*hi = s->db_pages > *lo ? s->db_pages : *lo;
}

static uint64_t put_range(FILE *out, uint64_t a, uint64_t b, uint64_t before)
{
	if (out && a == b)
		fprintf(out, "%s%llu", before ? ", " : "", U(a));
	else if (out)
		fprintf(out, "%s%llu-%llu", before ? ", " : "", U(a), U(b));
	return b - a + 1;
}

uint64_t inspect_ranges(FILE *out, const struct alex_logmap *lm, unsigned f,
			const struct inspect_sums *s)
{
	uint64_t a = 0, b = 0, n = 0;
	int have = 0;

	for (size_t i = 0; i < lm->nblk; i++) {
		uint64_t lo, hi;
		if (alex_key_file(lm->blk[i].key) != f)
			continue;
		lo = hi = alex_key_block(lm->blk[i].key);
		if (f == ALEX_FILE_DB)
			inspect_pages_of(lo, s, &lo, &hi);
		if (have && lo <= b + 1) {
			b = hi > b ? hi : b;
			continue;
		}
		if (have)
			n += put_range(out, a, b, n);
		a = lo, b = hi, have = 1;
	}
	return have ? n + put_range(out, a, b, n) : 0;
}

/* Past the epoch's records, and before them: an epoch may follow older
 * ones (format.h, data_off) */
uint64_t inspect_unused(const struct alex_logmap *lm)
{
	uint64_t end = lm->hdr.data_off + lm->used;
	uint64_t before = lm->hdr.data_off > ALEX_LOG_DATA ? lm->hdr.data_off - ALEX_LOG_DATA : 0;

	return (lm->log_size > end ? lm->log_size - end : 0) + before;
}

/* Nothing when the epoch is checkpointed already, or the log is another
 * file's. */
uint64_t inspect_ckpt_blocks(const struct alex_logmap *lm, const struct inspect_sums *s,
			     int *counts)
{
	uint64_t n = 0;

	*counts = lm->epoch_state != ALEX_EPOCH_FOREIGN && lm->epoch_state != ALEX_EPOCH_APPLIED &&
		  lm->commits;
	for (int f = 0; f < ALEX_NFILES && *counts; f++)
		n += s->blocks[f];
	return n;
}

void inspect_add_up(const struct alex_logmap *lm, struct inspect_sums *s)
{
	memset(s, 0, sizeof *s);
	for (size_t i = 0; i < lm->nrec; i++) {
		const struct alex_lm_rec *x = &lm->rec[i];
		s->overhead += x->rec_len - x->stored;
		if (x->state == ALEX_RS_COMMITTED)
			s->superseded += x->stored - x->live;
		else
			s->uncounted += x->stored;
	}
	for (size_t i = 0; i < lm->nblk; i++)
		s->blocks[alex_key_file(lm->blk[i].key)]++;
	/* the newest page 1 says the page size; else the epoch's base copy */
	s->page_size = lm->have_page1 ? inspect_page_size(lm->page1) : 0;
	s->page_from = "the log's newest page 1";
	if (!s->page_size && (lm->hdr.flags & ALEX_HDR_BASE)) {
		s->page_size = inspect_page_size(lm->hdr.base);
		s->page_from = "the header's base copy";
	}
	if (!s->page_size) {
		s->page_size = ALEX_BLOCK;
		s->page_from = NULL;
	}
	s->db_pages = (lm->size[ALEX_FILE_DB] + s->page_size - 1) / s->page_size;
	s->pages = inspect_ranges(NULL, lm, ALEX_FILE_DB, s);
}
