/*
 * inspect_print.h - the report `alex inspect` prints, shared by inspect.c
 * (which picks a printer), inspect_text.c and inspect_json.c (the
 * printers), and inspect_sums.c (what both printers show of the map).
 * Each printer says everything in its own format; the sums and names
 * they share are computed once, so that text and JSON cannot disagree.
 */
#ifndef ALEX_TOOLS_INSPECT_PRINT_H
#define ALEX_TOOLS_INSPECT_PRINT_H

#include <stdint.h>
#include <stdio.h>

#include "inspect_map.h"

#define U(x) ((unsigned long long)(x))

/* What the report adds up from the map. */
struct inspect_sums {
	uint64_t superseded;  /* dead: committed payload no longer newest */
	uint64_t overhead;    /* dead: headers, tables, padding */
	uint64_t uncounted;   /* dead: payload of records that do not count */
	uint64_t blocks[ALEX_NFILES];
	uint64_t pages;       /* distinct database pages in the map */
	uint32_t page_size;   /* 4096 when unknown (page_from NULL) */
	uint64_t db_pages;    /* pages of the database as committed */
	const char *page_from;
};

/* inspect_sums.c */
extern const char *const inspect_file_name[ALEX_NFILES]; /* "db", "journal", "wal" */
void inspect_add_up(const struct alex_logmap *lm, struct inspect_sums *s);
uint32_t inspect_be32(const uint8_t *p);
/* The page size an SQLite header names, or 0 if it is not one. */
uint32_t inspect_page_size(const uint8_t *h);
/* The database pages block blk holds, [*lo, *hi]. */
void inspect_pages_of(uint64_t blk, const struct inspect_sums *s, uint64_t *lo, uint64_t *hi);
/* Prints (out may be NULL) the pages of the database, or the blocks of
 * the journal or WAL, that the map holds as "1-3, 7, 12-40"; their count. */
uint64_t inspect_ranges(FILE *out, const struct alex_logmap *lm, unsigned f,
			const struct inspect_sums *s);
/* Bytes past the chain: preallocated zeros, older epochs' records. */
uint64_t inspect_unused(const struct alex_logmap *lm);
/* What a checkpoint would write: the blocks of every file, and in *counts
 * whether it would write anything at all. */
uint64_t inspect_ckpt_blocks(const struct alex_logmap *lm, const struct inspect_sums *s,
			     int *counts);
const char *inspect_state_name(enum alex_rec_state s);
const char *inspect_kind_name(const struct alex_lm_rec *x);
const char *inspect_codec_name(uint32_t flags);
const char *inspect_slot_name(enum alex_slot_state s);
const char *inspect_mark_name(const struct alex_logmap *lm);

/*
 * The printers: the whole report on a log alex_logmap_read could read
 * (one without a usable header too), or the line or object saying that
 * there is no log (fenced: 1 the database file carries ALEX's fence all
 * the same, 2 it is encrypted and cannot be told).  The exit status is the
 * caller's.
 */
void inspect_text_report(const struct alex_logmap *lm, const char *path, const char *log);
void inspect_text_no_log(const char *path, const char *log, int fenced);
void inspect_json_report(const struct alex_logmap *lm, const char *path, const char *log);
void inspect_json_no_log(const char *path, const char *log, int fenced);

#endif
