/* read.h - what a run leaves behind, read back (read.c): the worker's
 * line, its latency file, strace's summary and ALEX's stats file. */
#ifndef ALEX_BENCH_READ_H
#define ALEX_BENCH_READ_H

#include "run.h"

/*
 * The worker's line in the file out: "ops seconds ok wchar", short adds
 * "files_left [device_bytes flushes discards]".  For short the device
 * counts are the sqlite3 processes' own and replace the run's, and
 * *have_disk says whether it had them.  0, or -1: the run failed.
 */
int bench_read_worker(const char *out, int is_short, struct bench_run *r, int *have_disk);

/* A latency CSV ("op,us" lines after a header): every value into
 * r->sorted (sorted), per operation type (bench_op_names) into r->op. */
void bench_read_latencies(const char *latfile, struct bench_run *r);

/* fsync + fdatasync calls in the summary strace -c wrote, or -1. */
double bench_read_strace(const char *path);

/* log_syncs in ALEX_STATS's JSON file, or -1. */
double bench_read_syncs(const char *path);

#endif
