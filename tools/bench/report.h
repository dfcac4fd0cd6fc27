/* report.h - alex-bench's report (report.c): the CSV files as each run
 * ends, the Markdown tables on stdout as each workload ends, the plots at
 * the end. */
#ifndef ALEX_BENCH_REPORT_H
#define ALEX_BENCH_REPORT_H

#include "bench.h"
#include "options.h"
#include "run.h"

struct bench_report; /* what the report keeps between its calls */

/* Opens o->outdir's CSV files and prints the report's heading.  NULL if it
 * cannot (reported). */
struct bench_report *bench_report_open(const struct bench_opts *o);

/* The device probe's table, and OUT/probe.csv. */
void bench_report_probe(const struct bench_opts *o, const struct bench_probe p[BENCH_NPROBES]);

/* One run: its lines of runs.csv and optypes.csv. */
void bench_report_run(struct bench_report *rep, const char *w, const struct bench_mode *m,
		      int i, const struct bench_run *r);

/* All o->runs runs of mode m of workload w: its rows, and its result for
 * the plots.  Keeps r[0].sorted (for the CDF, freed by bench_report_close),
 * frees the other runs' latencies. */
void bench_report_mode(struct bench_report *rep, const char *w, const struct bench_mode *m,
		       struct bench_run *r);

/* Workload w's tables, from the rows of its modes (every mode of o). */
void bench_report_workload(struct bench_report *rep, const char *w);

/* Closes the CSV files, prints the footing, draws the plots and frees rep.
 * Returns the exit status: 1 if a mode or the plots failed, else 0. */
int bench_report_close(struct bench_report *rep);

#endif
