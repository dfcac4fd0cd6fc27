/* options.h - alex-bench's command line (options.c): what a benchmark is
 * asked to run, checked whole before anything runs; and the worker's own
 * command line, which the run (run.c) builds and options.c reads. */
#ifndef ALEX_BENCH_OPTIONS_H
#define ALEX_BENCH_OPTIONS_H

#include <limits.h>
#include <stdint.h>

#include "bench.h"

#define BENCH_MAXMODES 32
#define BENCH_MAXRUNS 100
#define BENCH_NWORKLOADS 5

struct bench_opts {
	const char *dir, *outdir;
	const char *lib; /* NULL: next to alex-bench, else ../lib/alex */
	const char *workload_arg, *mode_arg; /* as given */
	long runs, ops, payload, large_mb, probe_syncs, probe_mb, procs;
	uint64_t seed;
	int probe, plots, strace;
	int nw, with_short; /* workloads; short is one of them */
	const char *wl[BENCH_NWORKLOADS]; /* in the order given */
	int nm;
	struct bench_mode modes[BENCH_MAXMODES];
	char sqlite3[PATH_MAX]; /* with short: the shell it runs */
	char mode_buf[1024]; /* mode_arg cut up: alex:VAR=VALUE names point into it */
};

/* bench_opts_parse's answer when the benchmark is to run. */
#define BENCH_OPTS_RUN (-1)

/*
 * Fills *o from the command line.  Returns BENCH_OPTS_RUN, or the exit
 * status to stop with: 0 after --help, 2 for a bad option (one line on
 * stderr), 1 when the short workload finds no sqlite3 to run.
 */
int bench_opts_parse(int argc, char **argv, struct bench_opts *o);

/*
 * The worker's command line: alex-bench --worker MODE WORKLOAD DB OPS
 * PAYLOAD SEED LATFILE, argv[BENCH_WARG_*].  MODE is a built-in mode's
 * name or alex:VAR=VALUE;... (its settings come in the environment).
 */
enum {
	BENCH_WARG_FLAG = 1,
	BENCH_WARG_MODE,
	BENCH_WARG_WORKLOAD,
	BENCH_WARG_DB,
	BENCH_WARG_OPS,
	BENCH_WARG_PAYLOAD,
	BENCH_WARG_SEED,
	BENCH_WARG_LAT,
	BENCH_WARGC
};

/* Runs the worker of that command line (bench_worker): its exit status,
 * 2 if the command line is not one run.c builds. */
int bench_opts_worker(int argc, char **argv);

/* A whole number from min to max with nothing after it, into *out: 0, or
 * -1 (*out unchanged). */
int bench_parse_long(const char *s, long min, long max, long *out);

/* The same for 0 to UINT64_MAX. */
int bench_parse_u64(const char *s, uint64_t *out);

#endif
