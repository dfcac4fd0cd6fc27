/* run.h - alex-bench's runs (run.c): every workload, mode and run in its
 * own worker process, measured, and handed to the report as it ends. */
#ifndef ALEX_BENCH_RUN_H
#define ALEX_BENCH_RUN_H

#include <stdint.h>

#include "bench.h"
#include "options.h"

/* What one run measured. */
struct bench_run {
	int failed;
	long ops;
	double secs, ops_s;
	struct bench_summary lat, op[BENCH_MAXOPS];
	double syncs; /* ALEX's own count; -1: not measured */
	double traced_syncs; /* strace -f -c of a separate run; -1: not run */
	uint64_t wchar, dev_bytes, flushes, discards;
	double waf; /* -1: no device counts */
	long rss_kb;
	double *sorted; /* every latency, sorted (kept for the first run's CDF) */
	size_t nsorted;
	int files_left; /* short: files beside the database afterwards; else -1 */
};

/* The whole benchmark o asks for, its report on stdout and in o->outdir.
 * Returns the exit status: 0, or 1 if a run or the plots failed. */
int bench_run_all(const struct bench_opts *o);

#endif
