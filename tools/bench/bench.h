/* bench.h - alex-bench's parts: the worker that runs a workload, the device
 * probe, the plots, and the pieces tested on their own (summary statistics
 * of latencies, /proc/diskstats). */
#ifndef ALEX_BENCH_H
#define ALEX_BENCH_H

#include <stddef.h>
#include <stdint.h>

struct bench_summary {
	size_t n;
	double mean, std, p50, p95, p99, max; /* same unit as the input */
};

/* Sorts v (n values) in place and summarises it; n may be 0.  Percentiles
 * are nearest-rank: the smallest value with at least p% of values <= it. */
void bench_summarize(double *v, size_t n, struct bench_summary *s);

/* Median of n values (sorts v). */
double bench_median(double *v, size_t n);

struct bench_disk {
	uint64_t sectors_written, writes, flushes, discards;
};

/*
 * Finds the block device major:minor in a /proc/diskstats text and fills
 * *d.  Kernels before 4.18 have no discard fields and before 5.5 no flush
 * fields: those read as 0.  Returns 0, or -1 if the device is not listed.
 */
int bench_diskstats_parse(const char *text, unsigned major, unsigned minor,
			  struct bench_disk *d);

/* A configuration under test: SQLite pragmas, and ALEX_* settings
 * (';'-separated) when it runs under libalex.so. */
struct bench_mode {
	const char *name, *journal, *sync, *extra;
	const char *alex; /* NULL: plain SQLite */
};

/* Runs workload (insert, mixed, leviora, large) on the database at path and
 * writes every operation's latency to latfile as "op,us".  Prints "ops
 * seconds ok|FAILED wchar" on stdout.  Returns the exit status. */
int bench_worker(const struct bench_mode *m, const char *workload, const char *path, long ops,
		 int payload, uint64_t seed, const char *latfile);

/* Builds (or keeps, if it was built with the same size and payload) the
 * database of the large workload.  0 or -1. */
int bench_build_large(const char *path, long mb, int payload);

uint64_t bench_rnd(uint64_t *state);

#define BENCH_NPROBES 4
struct bench_probe {
	const char *name, *unit;
	double rate; /* in unit */
	struct bench_summary lat; /* per-sync latency, us (sync probes) */
	int err; /* errno of a failed probe, else 0 */
};

/* The raw-device probe in dir: syncs durable 4 KiB writes into a
 * fallocated and into a written file, mb MiB sequentially through the page
 * cache and with O_DIRECT. */
void bench_probe(const char *dir, long syncs, long mb, struct bench_probe out[BENCH_NPROBES]);

#define BENCH_MAXOPS 5
/* The medians of one workload and mode, what the plots draw. */
struct bench_result {
	const char *workload, *mode;
	int failed;
	double ops_s, p50, p95, p99, max, waf, syncs, traced_syncs; /* < 0: not measured */
	int nops;
	const char *op[BENCH_MAXOPS];
	double op_p99[BENCH_MAXOPS];
	double *lat; /* every latency of the first run, sorted, for the CDF */
	size_t nlat;
};

/* Writes the plot data and OUT/plots.gp, and runs gnuplot on it.
 * Returns the number of PNG files drawn, or -1 (gnuplot missing/failed). */
int bench_plot(const char *outdir, const struct bench_result *r, size_t n);

#endif
