/*
 * alex-bench - the ALEX paper's evaluation, side by side in one run.
 *
 * Every mode runs the same workload, in its own process (bench/worker.c),
 * on a fresh database: SQLite's own configurations (naive = DELETE + FULL,
 * wal, wal-normal, tuned, nosync, wal-nosync) and SQLite under libalex.so
 * (alex, alex-normal, alex-keep, and alex:VAR=VALUE;... for any other
 * ALEX_* setting).  The short workload (bench/short.c) is many sqlite3
 * shell processes instead, one row each.
 * Per operation latencies, ops/s, syncs, bytes passed to write calls,
 * device bytes/flushes/discards from /proc/diskstats, write amplification
 * and peak RSS are measured per run; the summary gives the median and the
 * range over the runs.  A device probe (bench/probe.c) runs first, and
 * gnuplot draws the figures (bench/plot.c).  See man/alex-bench.1.
 *
 * This file only dispatches: the command line is read in bench/options.c,
 * the runs are made in bench/run.c and reported in bench/report.c.
 */
#include <string.h>

#include "bench/options.h"
#include "bench/run.h"

int main(int argc, char **argv)
{
	static struct bench_opts o; /* the alex:VAR=VALUE modes' names live in it */
	int rc;

	if (argc > 1 && strcmp(argv[1], "--worker") == 0)
		return bench_opts_worker(argc, argv);
	rc = bench_opts_parse(argc, argv, &o);
	if (rc != BENCH_OPTS_RUN)
		return rc;
	return bench_run_all(&o);
}
