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
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"

static const struct bench_mode builtin[] = {
	{ "naive", "delete", "full", "", NULL },
	{ "wal", "wal", "full", "", NULL },
	{ "wal-normal", "wal", "normal", "", NULL },
	{ "tuned", "wal", "normal",
	  "pragma mmap_size=536870912; pragma locking_mode=exclusive; "
	  "pragma cache_size=-131072; pragma temp_store=memory;", NULL },
	{ "nosync", "delete", "off", "", NULL },
	{ "wal-nosync", "wal", "off", "", NULL },
	{ "alex", "delete", "full", "", "ALEX_SYNC=full" },
	{ "alex-normal", "delete", "full", "", "ALEX_SYNC=normal" },
	/* the log kept at the last close: differs from alex only when processes
	 * come and go, so "all" has it only with the short workload */
	{ "alex-keep", "delete", "full", "", "ALEX_SYNC=full;ALEX_KEEP_LOG=1" },
};
#define NBUILTIN (sizeof builtin / sizeof builtin[0])

/* Operation types, in the order the per-type tables list them. */
static const char *const opnames[BENCH_MAXOPS] = { "insert", "select", "update", "delete",
						   "commit" };

struct run {
	int failed;
	long ops;
	double secs, ops_s;
	struct bench_summary lat, op[BENCH_MAXOPS];
	double syncs; /* ALEX's own count; -1: not measured */
	double traced_syncs; /* strace -f -c of a separate run; -1: not run */
	uint64_t wchar, dev_bytes, flushes, discards;
	double waf;
	long rss_kb;
	double *sorted; /* every latency, sorted (kept for the first run's CDF) */
	size_t nsorted;
	int files_left; /* short: files beside the database afterwards; else -1 */
};

static const char *self_exe, *alex_tool;

static int read_file(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, cap - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return 0;
}

static double json_number(const char *json, const char *key)
{
	char k[64];
	snprintf(k, sizeof k, "\"%s\": ", key);
	const char *p = strstr(json, k);
	return p ? strtod(p + strlen(k), NULL) : -1;
}

static void drop_caches(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	sync();
	if (fd >= 0) {
		if (write(fd, "3", 1) != 1)
			fprintf(stderr, "alex-bench: drop_caches: %s\n", strerror(errno));
		close(fd);
	}
}

static int run_cmd(const char *fmt, const char *a, const char *b)
{
	char cmd[3 * PATH_MAX];
	if (snprintf(cmd, sizeof cmd, fmt, a, b) >= (int)sizeof cmd)
		return -1;
	return system(cmd) == 0 ? 0 : -1;
}

/* Sets up the environment of an ALEX mode (in the child). */
static void alex_env(const struct bench_mode *m)
{
	char set[512], *save = NULL;
	snprintf(set, sizeof set, "%s", m->alex);
	for (char *kv = strtok_r(set, ";", &save); kv; kv = strtok_r(NULL, ";", &save))
		putenv(strdup(kv));
}

/* Reads a latency CSV: every value into r->sorted, per type into r->op. */
static void read_latencies(const char *latfile, struct run *r)
{
	FILE *f = fopen(latfile, "r");
	size_t cap = 1024, n = 0, nop[BENCH_MAXOPS] = { 0 }, capop[BENCH_MAXOPS] = { 0 };
	double *v = malloc(cap * sizeof *v), *vop[BENCH_MAXOPS] = { 0 };
	char line[64];

	if (!f || !v || !fgets(line, sizeof line, f)) /* header */
		goto out;
	while (fgets(line, sizeof line, f)) {
		char *comma = strchr(line, ',');
		if (!comma)
			continue;
		*comma = 0;
		double x = strtod(comma + 1, NULL);
		int t;
		for (t = 0; t < BENCH_MAXOPS && strcmp(line, opnames[t]); t++)
			;
		if (n == cap && !(v = realloc(v, (cap *= 2) * sizeof *v)))
			goto out;
		v[n++] = x;
		if (t == BENCH_MAXOPS)
			continue;
		if (nop[t] == capop[t] &&
		    !(vop[t] = realloc(vop[t], (capop[t] = capop[t] ? 2 * capop[t] : 1024) *
						       sizeof *vop[t])))
			goto out;
		vop[t][nop[t]++] = x;
	}
	bench_summarize(v, n, &r->lat);
	for (int t = 0; t < BENCH_MAXOPS; t++)
		bench_summarize(vop[t], nop[t], &r->op[t]);
	r->sorted = v;
	r->nsorted = n;
	v = NULL;
out:
	if (f)
		fclose(f);
	free(v);
	for (int t = 0; t < BENCH_MAXOPS; t++)
		free(vop[t]);
}

static void run_one(const struct bench_mode *m, const char *workload, const char *dir,
		    const char *db, long ops, int payload, uint64_t seed, const char *lib,
		    const char *latfile, struct run *r)
{
	char stats[PATH_MAX], out[PATH_MAX], opsbuf[32], paybuf[16], seedbuf[32];
	struct bench_disk d0, d1;
	struct stat st;
	int have_disk, is_short = strcmp(workload, "short") == 0;

	memset(r, 0, sizeof *r);
	r->syncs = r->traced_syncs = -1;
	r->files_left = -1;
	if (snprintf(stats, sizeof stats, "%s/alex-stats.json", dir) >= (int)sizeof stats ||
	    snprintf(out, sizeof out, "%s/worker.out", dir) >= (int)sizeof out) {
		r->failed = 1;
		return;
	}
	snprintf(opsbuf, sizeof opsbuf, "%ld", ops);
	snprintf(paybuf, sizeof paybuf, "%d", payload);
	snprintf(seedbuf, sizeof seedbuf, "%llu", (unsigned long long)seed);
	if (getuid() == 0) /* start from cold caches, as the paper's runs */
		drop_caches();
	have_disk = stat(dir, &st) == 0 && bench_disk_now(st.st_dev, &d0) == 0;
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || dup2(fd, 1) < 0)
			_exit(126);
		if (m->alex && is_short) { /* the worker passes it on to its sqlite3 processes */
			alex_env(m);
			setenv("ALEX_BENCH_LIB", lib, 1);
		} else if (m->alex) {
			alex_env(m);
			setenv("ALEX_STATS", stats, 1);
			setenv("LD_PRELOAD", lib, 1);
		}
		execl(self_exe, self_exe, "--worker", m->name, workload, db, opsbuf, paybuf, seedbuf,
		      latfile, (char *)NULL);
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (pid < 0 || wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		r->failed = 1;
		return;
	}
	r->rss_kb = ru.ru_maxrss;
	if (have_disk && bench_disk_now(st.st_dev, &d1) == 0) {
		r->dev_bytes = (d1.sectors_written - d0.sectors_written) * 512;
		r->flushes = d1.flushes - d0.flushes;
		r->discards = d1.discards - d0.discards;
	}
	char res[256], ok[16] = "";
	unsigned long long wc = 0, dev = 0, fl = 0, dis = 0;
	int nf = read_file(out, res, sizeof res) ? 0
		 : sscanf(res, "%ld %lf %15s %llu %d %llu %llu %llu", &r->ops, &r->secs, ok, &wc,
			  &r->files_left, &dev, &fl, &dis);
	if (nf < 4 || strcmp(ok, "ok") != 0) {
		r->failed = 1;
		return;
	}
	if (is_short) { /* the worker's counts: the processes alone, not its setup */
		have_disk = nf == 8;
		r->dev_bytes = dev;
		r->flushes = fl;
		r->discards = dis;
	}
	r->wchar = wc;
	r->ops_s = r->secs > 0 ? (double)r->ops / r->secs : 0;
	r->waf = have_disk ? (double)r->dev_bytes / ((double)r->ops * payload) : -1;
	if (m->alex) {
		static char json[8192];
		if (read_file(stats, json, sizeof json) == 0)
			r->syncs = json_number(json, "log_syncs");
	}
	read_latencies(latfile, r);
}

/*
 * The same run again under strace -f -c, untimed: the kernel's count of
 * fsync+fdatasync, for every mode, to check ALEX's own (short: of all its
 * sqlite3 processes; its worker's setup issues none).
 */
static double traced_syncs(const struct bench_mode *m, const char *workload, const char *dir,
			   const char *db, long ops, int payload, uint64_t seed, const char *lib)
{
	char tr[PATH_MAX + 16], lat[PATH_MAX + 16], opsbuf[32], paybuf[16], seedbuf[32],
		env[PATH_MAX + 16], fresh[PATH_MAX + 16];
	if (!db) { /* a fresh database of its own, unless the workload reuses one */
		snprintf(fresh, sizeof fresh, "%s/traced.db", dir);
		db = fresh;
	}
	snprintf(tr, sizeof tr, "%s/strace.txt", dir);
	snprintf(lat, sizeof lat, "%s/traced-lat.csv", dir);
	snprintf(opsbuf, sizeof opsbuf, "%ld", ops);
	snprintf(paybuf, sizeof paybuf, "%d", payload);
	snprintf(seedbuf, sizeof seedbuf, "%llu", (unsigned long long)seed);
	snprintf(env, sizeof env, "LD_PRELOAD=%s", lib);
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		if (fd >= 0)
			dup2(fd, 1);
		if (m->alex)
			alex_env(m);
		if (m->alex && strcmp(workload, "short") != 0) {
			execlp("strace", "strace", "-f", "-c", "-e", "trace=fsync,fdatasync", "-o", tr,
			       "-E", env, self_exe, "--worker", m->name, workload, db, opsbuf, paybuf,
			       seedbuf, lat, (char *)NULL);
			_exit(127);
		}
		if (m->alex) /* short: as in run_one, for the worker's sqlite3 processes */
			setenv("ALEX_BENCH_LIB", lib, 1);
		execlp("strace", "strace", "-f", "-c", "-e", "trace=fsync,fdatasync", "-o", tr, self_exe,
		       "--worker", m->name, workload, db, opsbuf, paybuf, seedbuf, lat, (char *)NULL);
		_exit(127);
	}
	int status;
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	FILE *f = fopen(tr, "r");
	char line[256];
	double n = 0;
	while (f && fgets(line, sizeof line, f)) {
		double pct, secs, usecs, calls;
		char name[64];
		/* "% time seconds usecs/call calls [errors] syscall" */
		if (sscanf(line, "%lf %lf %lf %lf %63s", &pct, &secs, &usecs, &calls, name) == 5 &&
		    (strstr(line, "fdatasync") || strstr(line, " fsync")))
			n += calls;
	}
	if (f)
		fclose(f);
	return f ? n : -1;
}

/*
 * The large workload reuses one database: a mode under ALEX must leave it
 * plain for the next (libalex.so checkpoints at the last close; this makes
 * sure), and no mode may leave a WAL behind.
 */
static int large_clean(const char *db)
{
	char log[PATH_MAX + 8];
	struct stat st;
	snprintf(log, sizeof log, "%s-alex", db);
	if (stat(log, &st) == 0 && run_cmd("'%s' checkpoint '%s' >/dev/null", alex_tool, db))
		return -1;
	return 0;
}

/* ---- the summary ---------------------------------------------------------- */

enum col { C_OPS, C_MEAN, C_STD, C_P50, C_P95, C_P99, C_MAX, C_SYNCS, C_TRACED, C_WCHAR,
	   C_DEV, C_FLUSH, C_DISCARD, C_WAF, C_RSS, NCOLS };
static const char *const col_head[NCOLS] = {
	"ops/s", "mean us", "std us", "p50 us", "p95 us", "p99 us", "max us", "syncs",
	"syncs (strace)", "write-call MB", "device MB", "flushes", "discards", "WAF", "RSS MB" };
static const char *const col_fmt[NCOLS] = { "%.0f", "%.1f", "%.1f", "%.1f", "%.1f", "%.1f",
					    "%.0f", "%.0f", "%.0f", "%.2f", "%.2f", "%.0f",
					    "%.0f", "%.2f", "%.1f" };

static double col_value(const struct run *r, enum col c)
{
	switch (c) {
	case C_OPS: return r->ops_s;
	case C_MEAN: return r->lat.mean;
	case C_STD: return r->lat.std;
	case C_P50: return r->lat.p50;
	case C_P95: return r->lat.p95;
	case C_P99: return r->lat.p99;
	case C_MAX: return r->lat.max;
	case C_SYNCS: return r->syncs;
	case C_TRACED: return r->traced_syncs;
	case C_WCHAR: return (double)r->wchar / 1e6;
	case C_DEV: return r->waf < 0 ? -1 : (double)r->dev_bytes / 1e6;
	case C_FLUSH: return r->waf < 0 ? -1 : (double)r->flushes;
	case C_DISCARD: return r->waf < 0 ? -1 : (double)r->discards;
	case C_WAF: return r->waf;
	case C_RSS: return (double)r->rss_kb / 1024;
	default: return -1;
	}
}

struct spread {
	double med, min, max;
};

static struct spread spread_of(double *v, int n)
{
	struct spread s;
	s.med = bench_median(v, (size_t)n); /* sorts v */
	s.min = v[0];
	s.max = v[n - 1];
	return s;
}

static void cell(char *buf, size_t cap, enum col c, double v)
{
	if (v < 0)
		snprintf(buf, cap, "-");
	else
		snprintf(buf, cap, col_fmt[c], v);
}

static void table_head(const char *first)
{
	printf("| %s |", first);
	for (int c = 0; c < NCOLS; c++)
		printf(" %s |", col_head[c]);
	printf("\n|---|");
	for (int c = 0; c < NCOLS; c++)
		printf("---|");
	printf("\n");
}

static void usage(FILE *f)
{
	fprintf(f, "usage: alex-bench [--dir DIR] [--out DIR] [--runs R] [--ops N] [--payload BYTES]\n"
		   "                  [--workload insert,mixed,leviora,large,short|all] [--mode MODE,...]\n"
		   "                  [--procs N] [--large-mb MB] [--probe-syncs N] [--probe-mb MB]\n"
		   "                  [--no-probe] [--no-plots] [--lib PATH] [--seed S] [--strace]\n"
		   "modes: naive wal wal-normal tuned nosync wal-nosync alex alex-normal alex-keep all,\n"
		   "       and alex:VAR=VALUE;VAR=VALUE for any other ALEX_* setting\n");
}

#define MAXMODES 32
#define MAXRUNS 100
#define NWORKLOADS 5
#define MAXRESULTS (NWORKLOADS * MAXMODES)
static const char *const workload_names[NWORKLOADS] = { "insert", "mixed", "leviora", "large",
							 "short" };

/* --mode: the built-in modes by name, "all", alex:VAR=VALUE;...  Returns
 * how many, or -1 (unknown mode, reported). */
static int parse_modes(char *arg, int with_short, struct bench_mode *modes)
{
	static char names[MAXMODES][256];
	int nm = 0;
	char *save = NULL;
	for (char *t = strtok_r(arg, ",", &save); t && nm < MAXMODES; t = strtok_r(NULL, ",", &save)) {
		size_t i;
		if (strcmp(t, "all") == 0) {
			for (i = 0; i < NBUILTIN && nm < MAXMODES; i++)
				if (with_short || strcmp(builtin[i].name, "alex-keep"))
					modes[nm++] = builtin[i];
			continue;
		}
		for (i = 0; i < NBUILTIN && strcmp(builtin[i].name, t); i++)
			;
		if (i < NBUILTIN) {
			modes[nm++] = builtin[i];
		} else if (strncmp(t, "alex:", 5) == 0 && strchr(t, '=')) {
			snprintf(names[nm], sizeof names[nm], "%s", t);
			modes[nm] = (struct bench_mode){ names[nm], "delete", "full", "", names[nm] + 5 };
			nm++;
		} else {
			fprintf(stderr, "alex-bench: unknown mode %s\n", t);
			usage(stderr);
			return -1;
		}
	}
	return nm;
}

/* --workload: into wl[], each at most once; *with_short: short is one.
 * How many, or -1 (reported). */
static int parse_workloads(char *arg, const char *wl[NWORKLOADS], int *with_short)
{
	char *save = NULL;
	int nw = 0;
	*with_short = 0;
	if (strcmp(arg, "all") == 0) { /* short only when named: another kind of run */
		for (; nw < 4; nw++)
			wl[nw] = workload_names[nw];
		return nw;
	}
	for (char *w = strtok_r(arg, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		int i, j;
		for (i = 0; i < NWORKLOADS && strcmp(w, workload_names[i]); i++)
			;
		for (j = 0; j < nw && i < NWORKLOADS && wl[j] != workload_names[i]; j++)
			;
		if (i == NWORKLOADS || j < nw) {
			fprintf(stderr, "alex-bench: workloads: insert, mixed, leviora, large, short "
					"(each once), or all (the first four)\n");
			return -1;
		}
		wl[nw++] = workload_names[i];
		*with_short |= i == 4;
	}
	return nw;
}

/* The short workload's needs, before anything runs: 0, or the exit status. */
static int short_check(int payload, char *exe, size_t cap)
{
	if (payload > BENCH_SHORT_MAXPAYLOAD) {
		fprintf(stderr, "alex-bench: short: --payload at most %d (one command-line argument)\n",
			BENCH_SHORT_MAXPAYLOAD);
		return 2;
	}
	if (bench_find_exe("sqlite3", getenv("PATH"), exe, cap)) {
		fprintf(stderr, "alex-bench: short: no sqlite3 in PATH (the workload runs the sqlite3 "
				"shell; apt-get install sqlite3)\n");
		return 1;
	}
	return 0;
}

static void short_table(char rows[][4][4096], int nm, long procs, int runs)
{
	printf("\n### short: per process, all %ld processes of the %d runs\n\n%s", procs * runs,
	       runs, bench_short_head);
	for (int k = 0; k < nm; k++)
		fputs(rows[k][3], stdout);
	printf("\nOne sqlite3 process per insert: ops and latencies above are processes and their\n"
	       "wall time (fork to waitpid).  files left: files beside the database in its\n"
	       "directory after the last process (ALEX's log, if kept, is one).\n");
}

/* short: every process of every run pooled into one row of its own table;
 * the plots draw the same figures */
static void short_row(char *buf, size_t cap, const char *mode, const struct run *r, int runs,
		      long procs, struct bench_result *o)
{
	struct bench_short_stats s = { .procs = procs * runs, .files_min = INT_MAX,
				       .files_max = -1 };
	size_t n = 0;
	double secs = 0, dev = 0, wc = 0;
	int have_dev = 1;
	for (int i = 0; i < runs; i++)
		n += r[i].nsorted;
	double *all = malloc((n ? n : 1) * sizeof *all);
	if (!all) {
		snprintf(buf, cap, "| %s | out of memory |\n", mode);
		return;
	}
	n = 0;
	for (int i = 0; i < runs; i++) {
		if (r[i].nsorted)
			memcpy(all + n, r[i].sorted, r[i].nsorted * sizeof *all);
		n += r[i].nsorted;
		secs += r[i].secs;
		dev += (double)r[i].dev_bytes;
		wc += (double)r[i].wchar;
		have_dev &= r[i].waf >= 0;
		s.files_min = r[i].files_left < s.files_min ? r[i].files_left : s.files_min;
		s.files_max = r[i].files_left > s.files_max ? r[i].files_left : s.files_max;
	}
	bench_summarize(all, n, &s.t);
	free(all);
	s.ins_s = secs > 0 ? (double)s.procs / secs : 0;
	s.syncs = r[0].traced_syncs < 0 ? -1 : r[0].traced_syncs / (double)procs;
	s.dev_bytes = have_dev ? dev / (double)s.procs : -1;
	s.wchar = wc / (double)s.procs;
	bench_short_row(buf, cap, mode, &s);
	o->ops_s = s.ins_s;
	o->p50 = s.t.p50;
	o->p95 = s.t.p95;
	o->p99 = s.t.p99;
	o->max = s.t.max;
	o->traced_syncs = s.syncs;
}

static int do_probe(const char *dir, const char *outdir, long syncs, long mb)
{
	struct bench_probe p[BENCH_NPROBES];
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/probe.csv", outdir);
	FILE *csv = fopen(path, "w");
	if (getuid() == 0)
		drop_caches();
	bench_probe(dir, syncs, mb, p);
	printf("### raw device (the files' own device, no SQLite)\n\n"
	       "| probe | rate | p50 us | p99 us | max us |\n|---|---|---|---|---|\n");
	if (csv)
		fprintf(csv, "probe,rate,unit,p50_us,p99_us,max_us,error\n");
	for (int i = 0; i < BENCH_NPROBES; i++) {
		if (p[i].err)
			printf("| %s | FAILED: %s | | | |\n", p[i].name, strerror(p[i].err));
		else if (p[i].lat.n)
			printf("| %s | %.0f %s | %.0f | %.0f | %.0f |\n", p[i].name, p[i].rate,
			       p[i].unit, p[i].lat.p50, p[i].lat.p99, p[i].lat.max);
		else
			printf("| %s | %.0f %s | | | |\n", p[i].name, p[i].rate, p[i].unit);
		if (csv)
			fprintf(csv, "\"%s\",%.1f,%s,%.1f,%.1f,%.1f,%s\n", p[i].name, p[i].rate, p[i].unit,
				p[i].lat.p50, p[i].lat.p99, p[i].lat.max,
				p[i].err ? strerror(p[i].err) : "");
	}
	printf("\n%ld syncs per sync probe, %ld MiB per sequential probe\n\n", syncs, mb);
	if (csv)
		fclose(csv);
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = "build/bench", *outdir = "build/bench/out", *lib = NULL;
	char modes_arg[1024] = "all", workloads[256] = "insert,mixed";
	long ops = 5000, large_mb = 1024, probe_syncs = 1000, probe_mb = 256, procs = 200;
	int runs = 5, payload = 100, probe = 1, plots = 1;
	uint64_t seed = 42;
	int use_strace = 0;
	static char exe[PATH_MAX];

	if (argc > 1 && strcmp(argv[1], "--worker") == 0) {
		if (argc != 9)
			return 2;
		for (size_t i = 0; i < NBUILTIN; i++)
			if (strcmp(builtin[i].name, argv[2]) == 0)
				return bench_worker(&builtin[i], argv[3], argv[4], atol(argv[5]),
						    atoi(argv[6]), strtoull(argv[7], NULL, 10), argv[8]);
		struct bench_mode custom = { argv[2], "delete", "full", "", "" };
		return bench_worker(&custom, argv[3], argv[4], atol(argv[5]), atoi(argv[6]),
				    strtoull(argv[7], NULL, 10), argv[8]);
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--help") == 0) {
			usage(stdout);
			return 0;
		}
		if (strcmp(a, "--strace") == 0 || strcmp(a, "--no-probe") == 0 ||
		    strcmp(a, "--no-plots") == 0) {
			use_strace |= a[2] == 's';
			probe &= strcmp(a, "--no-probe") != 0;
			plots &= strcmp(a, "--no-plots") != 0;
			continue;
		}
		if (!v) {
			usage(stderr);
			return 2;
		}
		if (strcmp(a, "--dir") == 0) dir = v;
		else if (strcmp(a, "--out") == 0) outdir = v;
		else if (strcmp(a, "--runs") == 0) runs = atoi(v);
		else if (strcmp(a, "--ops") == 0) ops = atol(v);
		else if (strcmp(a, "--payload") == 0) payload = atoi(v);
		else if (strcmp(a, "--large-mb") == 0) large_mb = atol(v);
		else if (strcmp(a, "--probe-syncs") == 0) probe_syncs = atol(v);
		else if (strcmp(a, "--probe-mb") == 0) probe_mb = atol(v);
		else if (strcmp(a, "--workload") == 0) snprintf(workloads, sizeof workloads, "%s", v);
		else if (strcmp(a, "--mode") == 0) snprintf(modes_arg, sizeof modes_arg, "%s", v);
		else if (strcmp(a, "--lib") == 0) lib = v;
		else if (strcmp(a, "--seed") == 0) seed = strtoull(v, NULL, 10);
		else if (strcmp(a, "--procs") == 0) {
			if (bench_parse_long(v, 1, 1000000, &procs)) {
				fprintf(stderr, "alex-bench: --procs %s: not a whole number from 1 to "
						"1000000\n", v);
				return 2;
			}
		} else {
			usage(stderr);
			return 2;
		}
		i++;
	}
	if (runs < 1 || runs > MAXRUNS || ops < 1 || ops > 100000000 || payload < 1 ||
	    payload > (1 << 20) || large_mb < 1 || large_mb > (1L << 20) || probe_syncs < 1 ||
	    probe_syncs > 1000000 || probe_mb < 1 || probe_mb > (1L << 20)) {
		fprintf(stderr, "alex-bench: --runs 1-100, --ops 1-100000000, --payload 1-1048576, "
				"--large-mb, --probe-syncs and --probe-mb >= 1\n");
		return 2;
	}
	const char *wl[NWORKLOADS];
	static struct bench_mode modes[MAXMODES];
	char sqlite3_exe[PATH_MAX];
	int with_short, nw = parse_workloads(workloads, wl, &with_short), nm, rc;
	if (nw < 0 || (nm = parse_modes(modes_arg, with_short, modes)) < 0)
		return 2;
	if (with_short && (rc = short_check(payload, sqlite3_exe, sizeof sqlite3_exe)))
		return rc;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return 1;
	exe[n] = 0;
	self_exe = exe;
	static char libpath[PATH_MAX], toolpath[PATH_MAX];
	char *slash = strrchr(exe, '/');
	snprintf(toolpath, sizeof toolpath, "%.*s/alex", (int)(slash - exe), exe);
	alex_tool = toolpath;
	if (!lib) { /* next to us: the build tree; else ../lib/alex */
		snprintf(libpath, sizeof libpath, "%.*s/libalex.so", (int)(slash - exe), exe);
		if (access(libpath, R_OK) != 0)
			snprintf(libpath, sizeof libpath, "%.*s/../lib/alex/libalex.so",
				 (int)(slash - exe), exe);
		lib = libpath;
	}

	char csvpath[PATH_MAX], oppath[PATH_MAX];
	if (run_cmd("mkdir -p '%s' '%s'", dir, outdir) ||
	    snprintf(csvpath, sizeof csvpath, "%s/runs.csv", outdir) >= (int)sizeof csvpath ||
	    snprintf(oppath, sizeof oppath, "%s/optypes.csv", outdir) >= (int)sizeof oppath)
		return 1;
	FILE *csv = fopen(csvpath, "w"), *opcsv = fopen(oppath, "w");
	if (!csv || !opcsv) {
		fprintf(stderr, "alex-bench: %s: %s\n", outdir, strerror(errno));
		return 1;
	}
	fprintf(csv, "workload,mode,run,status,ops,seconds,ops_per_s,mean_us,std_us,p50_us,"
		     "p95_us,p99_us,max_us,syncs,strace_syncs,write_call_bytes,device_bytes,flushes,"
		     "discards,waf,peak_rss_kb,files_left\n");
	fprintf(opcsv, "workload,mode,run,op,n,mean_us,std_us,p50_us,p95_us,p99_us,max_us\n");
	printf("alex-bench: %ld %s, %d-byte payload, %d runs per mode, seed %llu; caches %s\n",
	       nw > with_short ? ops : procs, nw > with_short ? "ops" : "sqlite3 processes", payload,
	       runs, (unsigned long long)seed,
	       getuid() == 0 ? "dropped before each run" : "NOT dropped (not root)");
	if (with_short)
		printf("short: %ld processes per run of %s\n", procs, sqlite3_exe);
	printf("\n");
	fflush(stdout);
	if (probe)
		do_probe(dir, outdir, probe_syncs, probe_mb);

	static struct bench_result res[MAXRESULTS];
	static struct run r[MAXRUNS];
	size_t nres = 0;
	int any_failed = 0;
	for (int wi = 0; wi < nw; wi++) {
		const char *w = wl[wi];
		int large = strcmp(w, "large") == 0, is_short = w == workload_names[4];
		long n_ops = is_short ? procs : ops;
		char large_db[PATH_MAX];
		snprintf(large_db, sizeof large_db, "%s/large-base.db", dir);
		if (large && bench_build_large(large_db, large_mb, payload)) {
			fprintf(stderr, "alex-bench: cannot build %s\n", large_db);
			return 1;
		}
		static char rows[MAXMODES][4][4096]; /* medians, ranges, per type, short */
		for (int k = 0; k < nm; k++) {
			const struct bench_mode *m = &modes[k];
			int ok = 0;
			for (int i = 0; i < runs; i++) {
				char rdir[PATH_MAX], lat[PATH_MAX], db[PATH_MAX + 16];
				if (snprintf(rdir, sizeof rdir, "%s/%s-%s-%d", dir, w, m->name, i + 1) >=
					    (int)sizeof rdir ||
				    snprintf(lat, sizeof lat, "%s/lat-%s-%s-%d.csv", outdir, w, m->name,
					     i + 1) >= (int)sizeof lat ||
				    run_cmd("rm -rf '%s' && mkdir -p '%s'", rdir, rdir))
					return 1;
				/* short: in a directory of its own, to see what is left in it */
				snprintf(db, sizeof db, "%s/%sbench.db", rdir, is_short ? "db/" : "");
				const char *path = large ? large_db : db;
				run_one(m, w, rdir, path, n_ops, payload, seed + (uint64_t)i, lib, lat, &r[i]);
				/* the kernel's count once per mode: it is the check of
				 * ALEX's own, not a statistic */
				if (use_strace && i == 0 && !r[i].failed)
					r[i].traced_syncs = traced_syncs(m, w, rdir, large ? path : NULL,
									 n_ops, payload,
									 seed + (uint64_t)i, lib);
				if (large && large_clean(large_db))
					r[i].failed = 1;
				char left[16] = "";
				if (r[i].files_left >= 0)
					snprintf(left, sizeof left, "%d", r[i].files_left);
				fprintf(csv, "%s,\"%s\",%d,%s,%ld,%.6f,%.1f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,"
					     "%.0f,%.0f,%llu,%llu,%llu,%llu,%.3f,%ld,%s\n",
					w, m->name, i + 1, r[i].failed ? "failed" : "ok", r[i].ops,
					r[i].secs, r[i].ops_s, r[i].lat.mean, r[i].lat.std, r[i].lat.p50,
					r[i].lat.p95, r[i].lat.p99, r[i].lat.max, r[i].syncs,
					r[i].traced_syncs, (unsigned long long)r[i].wchar,
					(unsigned long long)r[i].dev_bytes, (unsigned long long)r[i].flushes,
					(unsigned long long)r[i].discards, r[i].waf, r[i].rss_kb,
					left);
				for (int t = 0; t < BENCH_MAXOPS; t++)
					if (r[i].op[t].n)
						fprintf(opcsv, "%s,\"%s\",%d,%s,%zu,%.3f,%.3f,%.3f,%.3f,%.3f,"
							       "%.3f\n", w, m->name, i + 1, opnames[t],
							r[i].op[t].n, r[i].op[t].mean, r[i].op[t].std,
							r[i].op[t].p50, r[i].op[t].p95, r[i].op[t].p99,
							r[i].op[t].max);
				fflush(csv);
				ok += !r[i].failed;
				if (run_cmd("rm -rf '%s'%s", rdir, ""))
					return 1;
			}
			struct bench_result *o = &res[nres++];
			*o = (struct bench_result){ .workload = w, .mode = m->name, .failed = ok < runs,
						    .lat = r[0].sorted, .nlat = r[0].nsorted,
						    .per_process = is_short };
			if (ok < runs) { /* reported, never dropped */
				snprintf(rows[k][0], sizeof rows[k][0], "| %s | FAILED (%d of %d runs) |\n",
					 m->name, runs - ok, runs);
				for (int t = 1; t < 4; t++)
					memcpy(rows[k][t], rows[k][0], sizeof rows[k][0]);
				any_failed = 1;
				for (int i = 1; i < runs; i++)
					free(r[i].sorted);
				continue;
			}
			/* medians and ranges of every column */
			int l0 = snprintf(rows[k][0], sizeof rows[k][0], "| %s |", m->name);
			int l1 = snprintf(rows[k][1], sizeof rows[k][1], "| %s |", m->name);
			for (int c = 0; c < NCOLS; c++) {
				double v[MAXRUNS];
				char a[32], b[32];
				for (int i = 0; i < runs; i++)
					v[i] = col_value(&r[i], (enum col)c);
				struct spread sp = spread_of(v, runs);
				if (c == C_TRACED) /* measured in the first run only */
					sp.med = sp.min = sp.max = r[0].traced_syncs;
				cell(a, sizeof a, (enum col)c, sp.med);
				l0 += snprintf(rows[k][0] + l0, sizeof rows[k][0] - (size_t)l0, " %s |", a);
				cell(a, sizeof a, (enum col)c, sp.min);
				cell(b, sizeof b, (enum col)c, sp.max);
				l1 += snprintf(rows[k][1] + l1, sizeof rows[k][1] - (size_t)l1, " %s–%s |",
					       a, b);
				double *dst[] = { &o->ops_s, NULL, NULL, &o->p50, &o->p95, &o->p99, &o->max,
						  &o->syncs, &o->traced_syncs, NULL, NULL, NULL, NULL,
						  &o->waf, NULL };
				if (dst[c])
					*dst[c] = sp.med;
			}
			snprintf(rows[k][0] + l0, sizeof rows[k][0] - (size_t)l0, "\n");
			snprintf(rows[k][1] + l1, sizeof rows[k][1] - (size_t)l1, "\n");
			/* per operation type: p50 / p99, medians */
			int l2 = snprintf(rows[k][2], sizeof rows[k][2], "| %s |", m->name);
			for (int t = 0; t < BENCH_MAXOPS; t++) {
				if (!r[0].op[t].n)
					continue;
				double v50[MAXRUNS], v99[MAXRUNS];
				for (int i = 0; i < runs; i++) {
					v50[i] = r[i].op[t].p50;
					v99[i] = r[i].op[t].p99;
				}
				struct spread s50 = spread_of(v50, runs), s99 = spread_of(v99, runs);
				o->op[o->nops] = opnames[t];
				o->op_p99[o->nops++] = s99.med;
				l2 += snprintf(rows[k][2] + l2, sizeof rows[k][2] - (size_t)l2,
					       " %zu | %.1f | %.1f (%.1f–%.1f) |", r[0].op[t].n, s50.med,
					       s99.med, s99.min, s99.max);
			}
			snprintf(rows[k][2] + l2, sizeof rows[k][2] - (size_t)l2, "\n");
			if (is_short)
				short_row(rows[k][3], sizeof rows[k][3], m->name, r, runs, procs, o);
			for (int i = 1; i < runs; i++) /* the first run's stay, for the CDF */
				free(r[i].sorted);
			fprintf(stderr, "alex-bench: %s %s done\n", w, m->name);
		}
		printf("### %s: medians over %d runs\n\n", w, runs);
		table_head("mode");
		for (int k = 0; k < nm; k++)
			fputs(rows[k][0], stdout);
		printf("\n### %s: min–max over %d runs\n\n", w, runs);
		table_head("mode");
		for (int k = 0; k < nm; k++)
			fputs(rows[k][1], stdout);
		if (is_short)
			short_table(rows, nm, procs, runs);
		const struct bench_result *first = NULL;
		for (size_t j = nres - (size_t)nm; j < nres; j++)
			if (!first || res[j].nops > first->nops)
				first = &res[j];
		if (first && first->nops > 1) {
			printf("\n### %s: per operation type (medians; p99 with min–max)\n\n| mode |", w);
			for (int t = 0; t < first->nops; t++)
				printf(" %s n | %s p50 us | %s p99 us |", first->op[t], first->op[t],
				       first->op[t]);
			printf("\n|---|");
			for (int t = 0; t < first->nops; t++)
				printf("---|---|---|");
			printf("\n");
			for (int k = 0; k < nm; k++)
				fputs(rows[k][2], stdout);
		}
		printf("\n");
		fflush(stdout);
	}
	fclose(csv);
	fclose(opcsv);
	printf("syncs: ALEX's own count of log syncs (ALEX modes); syncs (strace): fsync+fdatasync\n"
	       "counted by strace -f -c in a separate run of the first (--strace); every run in %s,\n"
	       "every operation type in %s\n", csvpath, oppath);

	if (plots) {
		int pngs = bench_plot(outdir, res, nres);
		if (pngs >= 0)
			printf("%d plots in %s (redraw: cd %s && gnuplot plots.gp)\n", pngs, outdir,
			       outdir);
		else
			any_failed = 1;
	}
	for (size_t j = 0; j < nres; j++)
		free(res[j].lat);
	return any_failed;
}
