/* bench.h - alex-bench's parts: the worker that runs a workload, the device
 * probe, the plots, running programs and making directories, and the pieces
 * tested on their own (summary statistics of latencies, /proc/diskstats).
 * The command line, the run loop and the report have headers of their own
 * (options.h, run.h, report.h). */
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

/* sync(), then the counters of the device dev (st_dev of a file on it).
 * 0, or -1 (no /proc/diskstats, or the device is not in it). */
int bench_disk_now(unsigned long long dev, struct bench_disk *d);

/* A configuration under test: SQLite pragmas, and ALEX_* settings
 * (';'-separated) when it runs under libalex.so. */
struct bench_mode {
	const char *name, *journal, *sync, *extra;
	const char *alex; /* NULL: plain SQLite */
	/* SQLCipher: its key pragma, run before anything else, by the worker
	 * alex-bench-sqlcipher (this code linked to libsqlcipher) */
	const char *cipher_key;
};

/* Runs workload (insert, mixed, leviora, large, short) on the database at
 * path and writes every operation's latency to latfile as "op,us".  Prints
 * "ops seconds ok|FAILED wchar" on stdout (short adds more, below).
 * Returns the exit status. */
int bench_worker(const struct bench_mode *m, const char *workload, const char *path, long ops,
		 int payload, uint64_t seed, const char *latfile);

/* Builds (or keeps, if it was built with the same size and payload) the
 * database of the large workload.  0 or -1. */
int bench_build_large(const char *path, long mb, int payload);

uint64_t bench_rnd(uint64_t *state);

/* Bytes this process and its reaped children passed to write calls
 * (/proc/self/io wchar). */
uint64_t bench_wchar(void);

/*
 * The short workload (short.c): the database (table t(id INTEGER PRIMARY
 * KEY, v TEXT)) created with plain SQLite in m's journal mode, then procs
 * sqlite3 shell processes one after another (fork + execvp), each inserting
 * one row of a payload-byte value, as a shell script does.  For an ALEX
 * mode the processes get LD_PRELOAD=$ALEX_BENCH_LIB and the ALEX_* settings
 * in the environment; the worker itself never runs under libalex.so.
 * Writes each process's wall time (fork to waitpid) to latfile as
 * "process,us" and prints "procs seconds ok|FAILED wchar files_left
 * [device_bytes flushes discards]": files_left is the number of files
 * beside the database in its directory after the last process, device
 * counts (of the processes alone) are left out if /proc/diskstats has none.
 * ok: the table holds exactly procs rows and integrity_check is ok.
 */
/* SQLCipher's key: a passphrase, so its default key derivation runs */
#define BENCH_CIPHER_KEY "pragma key='alex-bench passphrase';"
#define BENCH_SHORT_MAXPAYLOAD 100000 /* one argv string: at most 128 KiB */
int bench_short(const struct bench_mode *m, const char *path, long procs, int payload,
		const char *latfile);

/* The SQL of short process i (0-based): m's pragmas unless SQLite's
 * defaults, then the INSERT of a payload-byte value.  Its length, or -1 if
 * it does not fit in cap. */
int bench_short_sql(char *buf, size_t cap, const struct bench_mode *m, long i, int payload);

/* The first executable file name in the ':'-separated directories of
 * pathenv (an empty entry is "."), into out.  0, or -1 if there is none. */
int bench_find_exe(const char *name, const char *pathenv, char *out, size_t cap);

/* One mode's line of the short workload's per-process table: every process
 * of every run pooled. */
struct bench_short_stats {
	long procs; /* processes, all runs */
	double ins_s; /* inserts per second over all runs */
	struct bench_summary t; /* per-process wall time, us */
	double syncs, dev_bytes, wchar; /* per process; < 0: not measured */
	int files_min, files_max; /* files left beside the database, over the runs */
};
extern const char bench_short_head[];
/* Formats s as a Markdown row (with newline) of the table bench_short_head
 * starts.  Returns what snprintf returns. */
int bench_short_row(char *buf, size_t cap, const char *mode, const struct bench_short_stats *s);

struct bench_run;
/* Pools the runs of one mode, procs processes each, into its line of that
 * table (syncs: r[0]'s strace count per process).  0, or -1 (no memory). */
int bench_short_pool(const struct bench_run *r, int runs, long procs, struct bench_short_stats *s);

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
/* The operation types, as the worker names them in its latency file, in
 * the order the per-type tables list them. */
extern const char *const bench_op_names[BENCH_MAXOPS];

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
	int per_process; /* short: percentiles of every process of every run, syncs
			    per process */
};

/* Writes the plot data and OUT/plots.gp, and runs gnuplot on it.
 * Returns the number of PNG files drawn, or -1 (gnuplot missing/failed). */
int bench_plot(const char *outdir, const struct bench_result *r, size_t n);

/* How bench_spawn runs a program; NULL members: as this process does. */
struct bench_spawn {
	const char *out; /* standard output to this file, truncated */
	const char *cwd;
	char *const *env; /* "VAR=VALUE" strings to set, NULL-terminated */
};

struct rusage;
/*
 * Runs argv[0] (searched in PATH unless it holds a '/') with argv, as how
 * says, and waits for it; *ru (if not NULL) gets its resource usage.
 * Returns its exit status (127: it could not be run), or -1 if it could not
 * be started or waited for or was killed by a signal.
 */
int bench_spawn(char *const argv[], const struct bench_spawn *how, struct rusage *ru);

/* A mode's name as part of a file name: alex:VAR=VALUE may hold '/', ':',
 * ';' and '=', each written '_' (letters, digits, '-' and '.' stay). */
void bench_file_part(char *out, size_t cap, const char *name);

/* mkdir -p: path and its missing parents (0755).  0, or -1 with errno. */
int bench_tree_make(const char *path);

/* rm -rf: path and everything under it, links not followed; a path that
 * is not there is no error.  0, or -1 with errno. */
int bench_tree_remove(const char *path);

#endif
