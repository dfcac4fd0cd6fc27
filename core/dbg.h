/*
 * dbg.h - event lines for hunting races between processes, built only with
 * -DALEX_DBG (docs/STAGING.md: how the kill harness's corruption was
 * found).  Each line: pid, time, the engine (A: a staging engine, B: any
 * other) and what it did, on stderr.
 */
#ifndef ALEX_DBG_H
#define ALEX_DBG_H
#ifdef ALEX_DBG
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "bytes.h"

#define DBG(db, fmt, ...)                                                                   \
	do {                                                                                \
		struct timespec t_;                                                         \
		clock_gettime(CLOCK_REALTIME, &t_);                                         \
		fprintf(stderr, "DBG %d %ld.%06ld %c " fmt "\n", getpid(), (long)t_.tv_sec, \
			t_.tv_nsec / 1000, (db)->io.ops->ident ? 'A' : 'B', ##__VA_ARGS__); \
	} while (0)
/* what the engine holds: its epoch, lsns, end, commits, and the point of
 * the engine below that a staging epoch names */
#define DBGS(db, what, fmt, ...)                                                            \
	DBG(db, what " ep=%lu start=%lu next=%lu append=%lu commits=%lu applied=%d pt=%lu " \
		"live=%d aholds=%d" fmt,                                                    \
	    (unsigned long)(db)->hdr.epoch, (unsigned long)(db)->hdr.start_lsn,             \
	    (unsigned long)(db)->next_lsn, (unsigned long)(db)->append_off,                 \
	    (unsigned long)(db)->epoch_commits, (db)->st.epoch_applied,                     \
	    (unsigned long)alex_get64((db)->hdr.base + 32), (db)->epoch_live,               \
	    (db)->above_holds, ##__VA_ARGS__)
#else
#define DBG(...) ((void)0)
#define DBGS(...) ((void)0)
#endif
#endif
