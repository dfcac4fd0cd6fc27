/*
 * inspect_text.c - `alex inspect FILE`: the report as a human reads it
 * (inspect_print.h), one section after another -- header, records, the
 * pages the log holds, its space, what a checkpoint would write.
 */
#include <stdio.h>

#include "bytes.h"
#include "inspect_print.h"

static const char *const file_sfx[ALEX_NFILES] = { "", "-journal", "-wal" };

static const char *plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

/* The first 100 bytes of a database file, in words. */
static void base_summary(const uint8_t *h)
{
	uint32_t ps = inspect_page_size(h);

	if (ps)
		printf("SQLite, page size %u, change counter %u, %u pages", ps, inspect_be32(h + 24),
		       inspect_be32(h + 28));
	else
		printf("%s", alex_all_zero(h, ALEX_BASE_HDR) ? "empty file"
							      : "not an SQLite database header");
}

static void text_header(const struct alex_logmap *lm, const char *path)
{
	const struct alex_loghdr *h = &lm->hdr;

	printf("header: format %u, epoch %llu (slot %d%s), start lsn %llu, salt 0x%08x, flags%s%s%s%s\n",
	       h->version, U(h->epoch), lm->cur, lm->adopted ? ", damaged: taken from the first record"
							    : "", U(h->start_lsn), h->salt,
	       h->flags & ALEX_HDR_BASE ? " BASE" : "", h->flags & ALEX_HDR_FENCED ? " FENCED" : "",
	       h->flags & ALEX_HDR_STAGED ? " STAGED" : "", h->flags ? "" : " none");
	if (alex_hdr_carried(h)) {
		printf("  carried (format 10): fenced as epoch %llu", U(alex_hdr_fence_epoch(h)));
		if (h->prev_epoch)
			printf("; epoch %llu's records [%llu, %llu) from lsn %llu replay first"
			       " (not yet copied into the database file)",
			       U(h->prev_epoch), U(h->prev_off), U(h->prev_end), U(h->prev_lsn));
		printf("\n");
	}
	printf("  uuid ");
	for (int i = 0; i < 16; i++)
		printf("%02x", h->uuid[i]);
	printf("\n  base copy (the database's first 100 bytes as the epoch began): ");
	if (h->flags & ALEX_HDR_BASE)
		base_summary(h->base);
	else
		printf("none");
	if (lm->have_page1) {
		printf("\n  newest page 1 in the log: ");
		base_summary(lm->page1);
	}
	printf("\n  slots:");
	for (int s = 0; s < 2; s++) {
		printf(" %d %s", s, inspect_slot_name(lm->slot[s]));
		if (lm->slot[s] == ALEX_SLOT_VALID)
			printf(" (epoch %llu)", U(lm->slot_hdr[s].epoch));
	}
	printf("\ndatabase file %s: ", path);
	if (lm->base_exists)
		printf("%llu bytes, %s", U(lm->base_size[ALEX_FILE_DB]), inspect_mark_name(lm));
	else
		printf("missing");
	static const char *const why[] = {
		"fenced for this epoch: its newest pages are in the log",
		"epoch not fenced: the log's records count",
		"without this epoch's fence: the records are checkpointed already",
		"fenced by another log: this log is not its own (alex_open refuses it)" };
	if (lm->epoch_state == ALEX_EPOCH_APPLIED && !lm->nrec)
		printf("; without this epoch's fence, and no record of it: begun, not yet written\n");
	else
		printf("; %s\n", why[lm->epoch_state]);
	printf("epochs: %llu (current): %zu record%s, %llu bytes from byte %llu\n", U(h->epoch),
	       lm->nrec, plural(lm->nrec), U(lm->used), U(h->data_off));
	for (size_t i = 0; i < lm->nleft; i++)
		printf("  past the end: epoch %llu%s: %llu record%s, %llu bytes\n",
		       U(lm->left[i].epoch), lm->left[i].epoch == h->epoch ? " (this one)" : "",
		       U(lm->left[i].records), plural(lm->left[i].records), U(lm->left[i].bytes));
}

static void text_records(const struct alex_logmap *lm)
{
	printf("records: %zu, %llu commits\n", lm->nrec, U(lm->commits));
	if (lm->nrec)
		printf("  %-10s %-6s %-6s %-11s %-12s %6s %4s %4s %5s %17s %6s %8s\n", "offset",
		       "lsn", "txn", "kind", "state", "blocks", "lz4", "gap", "delta", "stored/raw",
		       "ratio", "live");
	for (size_t i = 0; i < lm->nrec; i++) {
		const struct alex_lm_rec *x = &lm->rec[i];
		uint64_t raw = (uint64_t)x->nblocks * ALEX_BLOCK;
		char sr[48];
		snprintf(sr, sizeof sr, "%llu/%llu", U(x->stored), U(raw));
		printf("  %-10llu %-6llu %-6llu %-11s %-12s %6u %4u %4u %5u %17s %6.2f %8llu\n",
		       U(x->off), U(x->lsn), U(x->txn), inspect_kind_name(x),
		       inspect_state_name(x->state), x->nblocks, x->lz4, x->gap, x->delta, sr,
		       x->stored ? (double)raw / (double)x->stored : 1.0, U(x->live));
		if (x->delta_base)
			printf("      %u of the deltas rooted at the database file\n", x->delta_base);
		if (x->cond)
			printf("      super-journal %s\n", x->cond);
	}
	printf("end: byte %llu, %s\n", U(lm->end), alex_stop_name(lm->stop));
	if (alex_logmap_damaged(lm))
		printf("DAMAGED at byte %llu: %s; only the records above count\n", U(lm->end),
		       alex_damage_name(lm->stop));
	if (lm->lost_off)
		printf("LOST COMMITS: a commit record of this epoch at byte %llu lies past the damage\n",
		       U(lm->lost_off));
}

static void text_pages(const struct alex_logmap *lm, const struct inspect_sums *s)
{
	printf("pages in the log: ");
	if (!inspect_ranges(stdout, lm, ALEX_FILE_DB, s))
		printf("none");
	printf(" (%llu page%s of %u bytes, page size %s%s)\n", U(s->pages), plural(s->pages),
	       s->page_size,
	       s->page_from ? "from " : "unknown, ", s->page_from ? s->page_from : "4096 assumed");
	for (unsigned f = 1; f < ALEX_NFILES; f++)
		if (s->blocks[f]) {
			printf("%s blocks in the log: ", inspect_file_name[f]);
			inspect_ranges(stdout, lm, f, s);
			printf("\n");
		}
	if (lm->nblk)
		printf("  %-8s %-8s %-10s %-10s %6s %s\n", "page", "block", "record", "offset",
		       "stored", "codec");
	for (size_t i = 0; i < lm->nblk; i++) {
		const struct alex_lm_ent *b = &lm->blk[i];
		unsigned f = alex_key_file(b->key);
		uint64_t blk = alex_key_block(b->key), lo = 0, hi = 0;
		char pg[48] = "-";
		if (f == ALEX_FILE_DB)
			inspect_pages_of(blk, s, &lo, &hi);
		if (f == ALEX_FILE_DB)
			snprintf(pg, sizeof pg, lo == hi ? "%llu" : "%llu-%llu", U(lo), U(hi));
		printf("  %-8s %-8llu %-10llu %-10llu %6u %s%s%s\n", pg, U(blk),
		       U(lm->rec[b->rec].off), U(b->loc.off), b->loc.len,
		       inspect_codec_name(alex_loc_codec(&b->loc)), f ? " " : "",
		       f ? inspect_file_name[f] : "");
	}
}

static void text_space(const struct alex_logmap *lm, const struct inspect_sums *s)
{
	printf("space: %llu bytes of log = %u header slots + %llu records + %llu unused\n"
	       "  live %llu bytes (the newest copies the map points at)\n"
	       "  dead %llu bytes (older copies %llu, headers, tables and padding %llu, "
	       "records that do not count %llu)\n", U(lm->log_size), ALEX_LOG_DATA, U(lm->used),
	       U(inspect_unused(lm)), U(lm->live), U(lm->used - lm->live), U(s->superseded),
	       U(s->overhead), U(s->uncounted));
}

/* What a checkpoint would do: each file's blocks and size. */
static void text_plan(const struct alex_logmap *lm, const struct inspect_sums *s,
		      const char *path)
{
	int counts;
	uint64_t n = inspect_ckpt_blocks(lm, s, &counts);

	if (lm->epoch_state == ALEX_EPOCH_FOREIGN)
		printf("checkpoint: refused, the log is not this database file's\n");
	else if (!counts)
		printf("checkpoint: nothing to write, the database file holds everything\n");
	else
		printf("checkpoint would write %llu page%s (%llu blocks, %llu bytes):\n",
		       U(s->pages), plural(s->pages), U(n), U(n * ALEX_BLOCK));
	for (int f = 0; f < ALEX_NFILES && counts; f++) {
		if (!s->blocks[f] && f != ALEX_FILE_DB)
			continue;
		uint64_t now = lm->base_size[f] == UINT64_MAX ? 0 : lm->base_size[f];
		printf("  %s%s: %llu blocks, %llu bytes; size %llu -> %llu bytes\n", path,
		       file_sfx[f], U(s->blocks[f]), U(s->blocks[f] * ALEX_BLOCK), U(now),
		       U(lm->size[f]));
	}
}

void inspect_text_report(const struct alex_logmap *lm, const char *path, const char *log)
{
	struct inspect_sums s;

	if (lm->cur < 0) {
		/* a log that holds nothing, or whose header cannot be used */
		printf("%s: %llu bytes: %s (header slot 0 %s, slot 1 %s)\n", log, U(lm->log_size),
		       lm->empty ? "holds nothing (empty, or its making was cut short)"
				 : alex_strerror(lm->hdr_err),
		       inspect_slot_name(lm->slot[0]), inspect_slot_name(lm->slot[1]));
		return;
	}
	inspect_add_up(lm, &s);
	printf("%s: ALEX log, %llu bytes%s%s\n", log, U(lm->log_size),
	       lm->in_use ? "; in use (read as it stands, without locks)" : "",
	       lm->changed ? "; it kept changing while read: a snapshot" : "");
	text_header(lm, path);
	text_records(lm);
	text_pages(lm, &s);
	text_space(lm, &s);
	text_plan(lm, &s, path);
}

void inspect_text_no_log(const char *path, const char *log, int fenced)
{
	if (fenced == 2)
		printf("%s: no log; %s is encrypted, and whether it carries ALEX's fence takes the "
		       "key: ALEX_KEY_FILE=KEY alex stat %s\n", log, path, path);
	else if (fenced)
		printf("%s: no log, and %s carries ALEX's fence: its log was moved or deleted "
		       "while it held the newest pages, and the file holds only its last checkpoint "
		       "(put the log back, or: alex recover %s)\n", log, path, path);
	else
		printf("%s: no log (the database holds everything)\n", log);
}
