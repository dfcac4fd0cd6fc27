/*
 * inspect_json.c - `alex inspect --json FILE`: the report as one JSON
 * object (inspect_print.h), with the members the text report has, so that
 * scripts need not parse the text.
 */
#include <stdio.h>

#include "bytes.h"
#include "inspect_print.h"

/* JSON string: quotes, backslashes and control bytes escaped. */
static void jstr(const char *s)
{
	putchar('"');
	for (; s && *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", (unsigned char)*s);
		else
			putchar(*s);
	}
	putchar('"');
}

static const char *epoch_name(enum alex_epoch_state s)
{
	static const char *const n[] = { "live", "unfenced", "checkpointed", "foreign" };
	return n[s];
}

/* The first 100 bytes of a database file. */
static void base_summary(const uint8_t *h)
{
	uint32_t ps = inspect_page_size(h);

	if (ps)
		printf("{\"kind\": \"sqlite\", \"page_size\": %u, \"change_counter\": %u, "
		       "\"pages\": %u}", ps, inspect_be32(h + 24), inspect_be32(h + 28));
	else
		printf("{\"kind\": \"%s\"}", alex_all_zero(h, ALEX_BASE_HDR) ? "empty" : "other");
}

static void json_header(const struct alex_logmap *lm)
{
	const struct alex_loghdr *h = &lm->hdr;

	printf(",\n \"header\": {\"format\": %u, \"uuid\": \"", h->version);
	for (int i = 0; i < 16; i++)
		printf("%02x", h->uuid[i]);
	printf("\", \"epoch\": %llu, \"start_lsn\": %llu, \"salt\": %u, \"flags\": [%s%s%s%s%s], "
	       "\"slot\": %d, \"adopted\": %s, \"base\": ", U(h->epoch), U(h->start_lsn), h->salt,
	       h->flags & ALEX_HDR_BASE ? "\"BASE\"" : "",
	       (h->flags & ALEX_HDR_BASE) && (h->flags & ALEX_HDR_FENCED) ? ", " : "",
	       h->flags & ALEX_HDR_FENCED ? "\"FENCED\"" : "",
	       (h->flags & (ALEX_HDR_BASE | ALEX_HDR_FENCED)) && (h->flags & ALEX_HDR_STAGED) ? ", " : "",
	       h->flags & ALEX_HDR_STAGED ? "\"STAGED\"" : "", lm->cur,
	       lm->adopted ? "true" : "false");
	if (h->flags & ALEX_HDR_BASE)
		base_summary(h->base);
	else
		printf("null");
	printf(", \"newest_page1\": ");
	if (lm->have_page1)
		base_summary(lm->page1);
	else
		printf("null");
	printf("},\n \"epoch_state\": \"%s\",\n \"database_file\": {\"bytes\": ",
	       epoch_name(lm->epoch_state));
	if (lm->base_exists)
		printf("%llu", U(lm->base_size[ALEX_FILE_DB]));
	else
		printf("null");
	printf(", \"mark\": \"%s\", \"fence\": %s}", inspect_mark_name(lm),
	       !lm->mark.has_fence ? "null" : lm->epoch_state == ALEX_EPOCH_LIVE ? "\"this epoch\""
										  : "\"other\"");
}

static void json_epochs(const struct alex_logmap *lm)
{
	printf(",\n \"slots\": [");
	for (int s = 0; s < 2; s++) {
		printf("%s{\"slot\": %d, \"state\": \"%s\"", s ? ", " : "", s,
		       inspect_slot_name(lm->slot[s]));
		if (lm->slot[s] == ALEX_SLOT_VALID)
			printf(", \"epoch\": %llu", U(lm->slot_hdr[s].epoch));
		printf("}");
	}
	printf("],\n \"epochs\": [{\"epoch\": %llu, \"current\": true, \"past_end\": false, "
	       "\"records\": %zu, \"bytes\": %llu}", U(lm->hdr.epoch), lm->nrec, U(lm->used));
	for (size_t i = 0; i < lm->nleft; i++)
		printf(", {\"epoch\": %llu, \"current\": %s, \"past_end\": true, \"records\": %llu, "
		       "\"bytes\": %llu}", U(lm->left[i].epoch),
		       lm->left[i].epoch == lm->hdr.epoch ? "true" : "false",
		       U(lm->left[i].records), U(lm->left[i].bytes));
	printf("]");
}

static void json_records(const struct alex_logmap *lm)
{
	printf(",\n \"records\": [");
	for (size_t i = 0; i < lm->nrec; i++) {
		const struct alex_lm_rec *x = &lm->rec[i];
		uint64_t raw = (uint64_t)x->nblocks * ALEX_BLOCK;
		printf("%s\n  {\"offset\": %llu, \"lsn\": %llu, \"txn\": %llu, \"kind\": \"%s\", "
		       "\"state\": \"%s\", \"blocks\": %u, \"compressed_blocks\": %u, "
		       "\"gap_blocks\": %u, \"delta_blocks\": %u, \"base_delta_blocks\": %u, "
		       "\"record_bytes\": %u, \"stored_bytes\": %llu, \"raw_bytes\": %llu, "
		       "\"ratio\": %.2f, \"live_bytes\": %llu, \"super_journal\": ", i ? "," : "",
		       U(x->off), U(x->lsn), U(x->txn), inspect_kind_name(x),
		       inspect_state_name(x->state), x->nblocks, x->lz4, x->gap,
		       x->delta, x->delta_base, x->rec_len,
		       U(x->stored),
		       U(raw), x->stored ? (double)raw / (double)x->stored : 1.0, U(x->live));
		if (x->cond)
			jstr(x->cond);
		else
			printf("null");
		printf("}");
	}
	printf("],\n \"record_count\": %zu, \"commits\": %llu,\n \"end\": {\"offset\": %llu, "
	       "\"reason\": \"%s\", \"damaged\": %s, \"lost_commits_at\": ", lm->nrec,
	       U(lm->commits), U(lm->end), alex_stop_name(lm->stop),
	       alex_logmap_damaged(lm) ? "true" : "false");
	if (lm->lost_off)
		printf("%llu}", U(lm->lost_off));
	else
		printf("null}");
}

static void json_pages(const struct alex_logmap *lm, const struct inspect_sums *s)
{
	printf(",\n \"page_size\": %u, \"page_size_known\": %s,\n \"pages\": [", s->page_size,
	       s->page_from ? "true" : "false");
	for (size_t i = 0; i < lm->nblk; i++) {
		const struct alex_lm_ent *b = &lm->blk[i];
		unsigned f = alex_key_file(b->key);
		uint64_t blk = alex_key_block(b->key), lo, hi;
		printf("%s\n  {\"file\": \"%s\", \"block\": %llu, ", i ? "," : "",
		       inspect_file_name[f], U(blk));
		if (f == ALEX_FILE_DB) {
			inspect_pages_of(blk, s, &lo, &hi);
			printf("\"first_page\": %llu, \"last_page\": %llu, ", U(lo), U(hi));
		}
		printf("\"record\": %llu, \"offset\": %llu, \"stored\": %u, \"compressed\": %s, "
		       "\"codec\": \"%s\"}",
		       U(lm->rec[b->rec].off), U(b->loc.off), b->loc.len,
		       alex_loc_codec(&b->loc) == ALEX_BLK_LZ4 ? "true" : "false",
		       inspect_codec_name(alex_loc_codec(&b->loc)));
	}
	printf("],\n \"page_ranges\": \"");
	inspect_ranges(stdout, lm, ALEX_FILE_DB, s);
	printf("\", \"page_count\": %llu", U(s->pages));
}

/* The log's bytes: header slots, records (live and dead), the rest. */
static void json_space(const struct alex_logmap *lm, const struct inspect_sums *s)
{
	printf(",\n \"space\": {\"log_bytes\": %llu, \"header_bytes\": %u, \"record_bytes\": %llu, "
	       "\"live_bytes\": %llu, \"dead_bytes\": %llu, \"superseded_bytes\": %llu, "
	       "\"overhead_bytes\": %llu, \"uncounted_bytes\": %llu, \"unused_bytes\": %llu}",
	       U(lm->log_size), ALEX_LOG_DATA, U(lm->used), U(lm->live), U(lm->used - lm->live),
	       U(s->superseded), U(s->overhead), U(s->uncounted), U(inspect_unused(lm)));
}

/* What a checkpoint would do: each file's blocks and size. */
static void json_plan(const struct alex_logmap *lm, const struct inspect_sums *s,
		      const char *path)
{
	int foreign = lm->epoch_state == ALEX_EPOCH_FOREIGN, counts;
	uint64_t n = inspect_ckpt_blocks(lm, s, &counts);

	printf(",\n \"checkpoint\": {\"refused\": %s, \"blocks\": %llu, \"pages\": %llu, "
	       "\"bytes\": %llu, \"files\": [", foreign ? "true" : "false", U(n),
	       U(counts ? s->pages : 0), U(n * ALEX_BLOCK));
	for (int f = 0, k = 0; f < ALEX_NFILES && counts; f++) {
		if (!s->blocks[f] && f != ALEX_FILE_DB)
			continue;
		uint64_t now = lm->base_size[f] == UINT64_MAX ? 0 : lm->base_size[f];
		printf("%s{\"path\": ", k++ ? ", " : "");
		jstr(path);
		printf(", \"file\": \"%s\", \"blocks\": %llu, \"bytes\": %llu, "
		       "\"size_now\": %llu, \"size_after\": %llu}", inspect_file_name[f],
		       U(s->blocks[f]), U(s->blocks[f] * ALEX_BLOCK), U(now), U(lm->size[f]));
	}
	printf("]}");
}

/* The object's first members: which database, which log. */
static void json_open(const char *path, const char *log, int present)
{
	printf("{\"database\": ");
	jstr(path);
	printf(", \"log\": ");
	jstr(log);
	printf(", \"log_present\": %s", present ? "true" : "false");
}

void inspect_json_report(const struct alex_logmap *lm, const char *path, const char *log)
{
	struct inspect_sums s;

	json_open(path, log, 1);
	printf(", \"log_bytes\": %llu, \"in_use\": %s, \"changed_while_read\": %s",
	       U(lm->log_size), lm->in_use ? "true" : "false", lm->changed ? "true" : "false");
	if (lm->cur < 0) {
		/* a log that holds nothing, or whose header cannot be used */
		printf(", \"empty\": %s, \"error\": ", lm->empty ? "true" : "false");
		if (lm->empty)
			printf("null");
		else
			jstr(alex_strerror(lm->hdr_err));
		printf(", \"slots\": [{\"slot\": 0, \"state\": \"%s\"}, "
		       "{\"slot\": 1, \"state\": \"%s\"}]}\n",
		       inspect_slot_name(lm->slot[0]), inspect_slot_name(lm->slot[1]));
		return;
	}
	inspect_add_up(lm, &s);
	json_header(lm);
	json_epochs(lm);
	json_records(lm);
	json_pages(lm, &s);
	json_space(lm, &s);
	json_plan(lm, &s, path);
	printf("\n}\n");
}

void inspect_json_no_log(const char *path, const char *log, int fenced)
{
	json_open(path, log, 0);
	printf(", \"fenced_without_log\": %s}\n", fenced == 2 ? "null" : fenced ? "true" : "false");
}
