/* bench.h - the parts of alex-bench that are tested on their own: summary
 * statistics of latencies, and /proc/diskstats. */
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

#endif
