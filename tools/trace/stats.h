/*
 * stats.h - the figures every printer shares (stats.c): counts per role
 * and call, write shapes, latency percentiles, transactions, and the
 * estimate of what ALEX would save.
 */
#ifndef ALEX_TOOLS_TRACE_STATS_H
#define ALEX_TOOLS_TRACE_STATS_H

#include "trace.h"

/* Roles as reports show them: the trace's, then "alex-db", "alex-dir". */
#define TR_NROLES (ALEX_TROLE_COUNT + 2)
#define TR_HIST 13 /* <512, 512, 1K ... 256K, 512K, >=1M */

struct tr_lat {
	uint64_t n, p50, p90, p99, max; /* ns */
};

struct tr_stats {
	uint64_t calls[TR_NROLES][ALEX_TK_COUNT], served[TR_NROLES][ALEX_TK_COUNT];
	uint64_t bytes[TR_NROLES][ALEX_TK_COUNT];
	uint64_t kernel[ALEX_TK_COUNT]; /* reached the kernel: strace's count */
	/* writes that reached the kernel: [0] the program's, [1] ALEX's */
	uint64_t hist[2][TR_HIST], seq[2], rnd[2], al4k[2], al512[2], unal[2];
	struct tr_lat lat[2][ALEX_TK_COUNT];
	uint64_t txns, wtxns, rtxns;
	struct tr_lat txn_dur, txn_syncs_asked, txn_syncs_kernel, txn_bytes;
	int any_alex; /* a process ran ALEX: no estimate */
	/* the estimate, for a trace without ALEX */
	uint64_t est_syncs_now, est_bytes_now, est_log_bytes, est_ckpt_bytes;
	uint64_t est_syncs_full, est_syncs_normal, page_size;
};

void tr_stats(const struct tr_model *m, struct tr_stats *s);
int tr_role_index(const struct tr_ev *v);
const char *tr_role_index_name(int i);
const char *tr_hist_name(int b);

#endif
