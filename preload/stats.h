/* stats.h - process-wide counters of libalex.so (stats.c). */
#ifndef ALEX_PRELOAD_STATS_H
#define ALEX_PRELOAD_STATS_H

#include <stdint.h>

#include "alex.h"

struct alex_pstats {
	uint64_t engines;              /* databases opened (one per inode) */
	uint64_t opens, reads, read_bytes, writes, write_bytes;
	uint64_t syncs_requested;      /* SQLite's fsync/fdatasync of a database */
	uint64_t journal_syncs_elided; /* of an in-memory journal */
	uint64_t dir_syncs_elided;
	uint64_t reserved_releases;    /* SQLite releasing RESERVED: a boundary */
	uint64_t writes_committed;     /* writes with no journal live, committed
					  as made (serve.c: journal_live) */
	uint64_t refreshes, mmaps, mmaps_refused;
	uint64_t temp_files;           /* SQLite's, stored encrypted (temp.c) */
	uint64_t flusher_merges;       /* windows no commit ended, merged (staging.c) */
	uint64_t staging_syncs;        /* ... and those synced in the staging log instead */
	uint64_t span_locks;           /* spans under the span lock (locks.c) */
	uint64_t span_refused;         /* ... the lock refused: another process holds one */
	uint64_t span_leases;          /* ... a span outlived the write lock's lease */
	uint64_t span_lingers;         /* ... its release answered: the lock lingers */
	uint64_t name_answers;         /* stats of a database by name from memory (watch.c) */
	uint64_t name_takes;           /* ... and taken from the kernel, to be kept */
	uint64_t cold_journals_removed; /* journals on disk SQLite would not roll
					   back, removed as it began to write (journal.c) */
};

extern struct alex_pstats alex_pstats;

#define ALEX_COUNT(field, n) __atomic_add_fetch(&alex_pstats.field, (n), __ATOMIC_RELAXED)

/* to += s, for the counters the JSON reports. */
void alex_stats_sum(struct alex_stats *to, const struct alex_stats *s);
/* Adds a closing engine's counters to the process totals. */
void alex_stats_add_engine(const struct alex_stats *s);
/* Writes ALEX_STATS (at exit, if set); live: the engines still open. */
void alex_stats_write(const struct alex_stats *live);

#endif
