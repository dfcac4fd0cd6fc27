/*
 * alex-bench - the ALEX paper's evaluation, side by side in one run.
 *
 * Every mode runs the same workload, in its own process, on a fresh
 * database: SQLite's own configurations (naive = DELETE + FULL, wal,
 * wal-normal, tuned, nosync, wal-nosync) and SQLite under libalex.so (alex,
 * alex-normal, and alex:VAR=VALUE;... for any other ALEX_* setting).  Per
 * operation latencies, ops/s, syncs (ALEX's counters for ALEX modes),
 * bytes passed to write calls, device bytes/flushes/discards from
 * /proc/diskstats, write amplification and peak RSS are measured per run;
 * the summary is the median (and range) over the runs.
 *
 * This first version has the insert and mixed workloads; see man/alex-bench.1.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"

struct mode {
	const char *name, *journal, *sync, *extra;
	const char *alex; /* NULL: plain SQLite; else ALEX_* settings, ';'-separated */
};

static const struct mode builtin[] = {
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
};
#define NBUILTIN (sizeof builtin / sizeof builtin[0])

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- the worker: one mode, one workload, one database ------------------ */

enum op { OP_INSERT, OP_SELECT, OP_UPDATE, OP_DELETE, NOPS };
static const char *const op_name[NOPS] = { "insert", "select", "update", "delete" };

static int exec_sql(sqlite3 *db, const char *sql)
{
	char *err = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
		fprintf(stderr, "alex-bench: %s: %s\n", sql, err ? err : "?");
		sqlite3_free(err);
		return -1;
	}
	return 0;
}

static int step_done(sqlite3_stmt *st)
{
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		;
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

static uint64_t wchar(void)
{
	char buf[1024];
	int fd = open("/proc/self/io", O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	const char *p = strstr(buf, "wchar:");
	return p ? strtoull(p + 6, NULL, 10) : 0;
}

static int worker(const struct mode *m, const char *workload, const char *path, long ops,
		  int payload, uint64_t seed, const char *latfile)
{
	sqlite3 *db;
	sqlite3_stmt *st[NOPS];
	char sql[512];
	uint64_t s = seed;
	unsigned char *val = malloc((size_t)payload);
	FILE *lat = fopen(latfile, "w");
	int mixed = strcmp(workload, "mixed") == 0;

	if (!val || !lat || sqlite3_open(path, &db) != SQLITE_OK)
		return 1;
	for (int i = 0; i < payload; i++) /* compressible, like the paper's */
		val[i] = (unsigned char)("metadata-value-"[i % 15]);
	snprintf(sql, sizeof sql, "pragma journal_mode=%s; pragma synchronous=%s; %s "
		 "create table kv(key integer primary key, value blob);",
		 m->journal, m->sync, m->extra);
	if (exec_sql(db, sql))
		return 1;
	const char *text[NOPS] = { "insert into kv(key, value) values(?, ?)",
				   "select value from kv where key = ?",
				   "update kv set value = ? where key = ?",
				   "delete from kv where key = ?" };
	for (int i = 0; i < NOPS; i++)
		if (sqlite3_prepare_v2(db, text[i], -1, &st[i], NULL) != SQLITE_OK)
			return 1;
	int64_t next = 1, preload = mixed ? 1000 : 0;
	if (preload) { /* the rows mixed operations find, in one transaction */
		exec_sql(db, "begin");
		for (; next <= preload; next++) {
			sqlite3_bind_int64(st[OP_INSERT], 1, next);
			sqlite3_bind_blob(st[OP_INSERT], 2, val, payload, SQLITE_STATIC);
			if (step_done(st[OP_INSERT]))
				return 1;
		}
		exec_sql(db, "commit");
	}
	fprintf(lat, "op,us\n");
	double t0 = now_s();
	for (long i = 0; i < ops; i++) {
		unsigned r = (unsigned)(rnd(&s) % 100);
		enum op op = !mixed ? OP_INSERT : r < 40 ? OP_INSERT : r < 70 ? OP_SELECT
						: r < 90 ? OP_UPDATE : OP_DELETE;
		int64_t key = op == OP_INSERT ? next++ : 1 + (int64_t)(rnd(&s) % (uint64_t)(next - 1));
		sqlite3_stmt *q = st[op];
		if (op == OP_INSERT) {
			sqlite3_bind_int64(q, 1, key);
			sqlite3_bind_blob(q, 2, val, payload, SQLITE_STATIC);
		} else if (op == OP_UPDATE) {
			sqlite3_bind_blob(q, 1, val, payload, SQLITE_STATIC);
			sqlite3_bind_int64(q, 2, key);
		} else {
			sqlite3_bind_int64(q, 1, key);
		}
		double a = now_s();
		if (step_done(q)) {
			fprintf(stderr, "alex-bench: %s: %s\n", op_name[op], sqlite3_errmsg(db));
			return 1;
		}
		fprintf(lat, "%s,%.3f\n", op_name[op], (now_s() - a) * 1e6);
	}
	double t1 = now_s();
	sqlite3_stmt *ic;
	const char *ok = "?";
	if (sqlite3_prepare_v2(db, "pragma integrity_check", -1, &ic, NULL) == SQLITE_OK &&
	    sqlite3_step(ic) == SQLITE_ROW)
		ok = strcmp((const char *)sqlite3_column_text(ic, 0), "ok") == 0 ? "ok" : "FAILED";
	printf("%ld %.6f %s", ops, t1 - t0, ok);
	sqlite3_finalize(ic);
	for (int i = 0; i < NOPS; i++)
		sqlite3_finalize(st[i]);
	fclose(lat);
	free(val);
	if (sqlite3_close(db) != SQLITE_OK)
		return 1;
	printf(" %llu\n", (unsigned long long)wchar());
	return 0;
}

/* ---- the driver ---------------------------------------------------------- */

struct run {
	int failed;
	long ops;
	double secs, ops_s;
	struct bench_summary lat;
	double syncs; /* -1: not measured */
	double traced_syncs; /* strace -f -c of a separate run; -1: not run */
	uint64_t wchar, dev_bytes, flushes, discards;
	double waf;
	long rss_kb;
};

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

static int disk_now(dev_t dev, struct bench_disk *d)
{
	static char text[1 << 16];
	sync();
	return read_file("/proc/diskstats", text, sizeof text) ||
	       bench_diskstats_parse(text, major(dev), minor(dev), d);
}

static double json_number(const char *json, const char *key)
{
	char k[64];
	snprintf(k, sizeof k, "\"%s\": ", key);
	const char *p = strstr(json, k);
	return p ? strtod(p + strlen(k), NULL) : -1;
}

static const char *self_exe;

static void run_one(const struct mode *m, const char *workload, const char *dir, long ops,
		    int payload, uint64_t seed, const char *lib, const char *latfile, struct run *r)
{
	char db[PATH_MAX], stats[PATH_MAX], out[PATH_MAX], opsbuf[32], paybuf[16], seedbuf[32];
	struct bench_disk d0, d1;
	struct stat st;
	int have_disk;

	memset(r, 0, sizeof *r);
	r->syncs = r->traced_syncs = -1;
	if (snprintf(db, sizeof db, "%s/bench.db", dir) >= (int)sizeof db ||
	    snprintf(stats, sizeof stats, "%s/alex-stats.json", dir) >= (int)sizeof stats ||
	    snprintf(out, sizeof out, "%s/worker.out", dir) >= (int)sizeof out) {
		r->failed = 1;
		return;
	}
	snprintf(opsbuf, sizeof opsbuf, "%ld", ops);
	snprintf(paybuf, sizeof paybuf, "%d", payload);
	snprintf(seedbuf, sizeof seedbuf, "%llu", (unsigned long long)seed);
	if (getuid() == 0) { /* start from cold caches, as the paper's runs */
		int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
		sync();
		if (fd >= 0 && write(fd, "3", 1) != 1)
			r->failed = 0;
		if (fd >= 0)
			close(fd);
	}
	have_disk = stat(dir, &st) == 0 && disk_now(st.st_dev, &d0) == 0;
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || dup2(fd, 1) < 0)
			_exit(126);
		if (m->alex) {
			char set[512], *save = NULL;
			snprintf(set, sizeof set, "%s", m->alex);
			for (char *kv = strtok_r(set, ";", &save); kv; kv = strtok_r(NULL, ";", &save))
				putenv(strdup(kv));
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
	if (have_disk && disk_now(st.st_dev, &d1) == 0) {
		r->dev_bytes = (d1.sectors_written - d0.sectors_written) * 512;
		r->flushes = d1.flushes - d0.flushes;
		r->discards = d1.discards - d0.discards;
	}
	char res[256], ok[16] = "";
	unsigned long long wc = 0;
	if (read_file(out, res, sizeof res) ||
	    sscanf(res, "%ld %lf %15s %llu", &r->ops, &r->secs, ok, &wc) != 4 ||
	    strcmp(ok, "ok") != 0) {
		r->failed = 1;
		return;
	}
	r->wchar = wc;
	r->ops_s = r->secs > 0 ? (double)r->ops / r->secs : 0;
	r->waf = have_disk ? (double)r->dev_bytes / ((double)r->ops * payload) : -1;
	if (m->alex) {
		static char json[8192];
		if (read_file(stats, json, sizeof json) == 0)
			r->syncs = json_number(json, "log_syncs");
	}
	/* latencies of every operation of the run */
	FILE *f = fopen(latfile, "r");
	size_t cap = (size_t)ops + 16, n = 0;
	double *v = malloc(cap * sizeof *v);
	char line[64];
	if (f && v) {
		if (fgets(line, sizeof line, f)) /* header */
			while (fgets(line, sizeof line, f) && n < cap) {
				char *comma = strchr(line, ',');
				if (comma)
					v[n++] = strtod(comma + 1, NULL);
			}
		bench_summarize(v, n, &r->lat);
	}
	if (f)
		fclose(f);
	free(v);
}

/*
 * The same run again under strace -f -c, untimed, in its own directory: the
 * kernel's count of fsync+fdatasync, for every mode, to check ALEX's own.
 */
static double traced_syncs(const struct mode *m, const char *workload, const char *dir,
			   long ops, int payload, uint64_t seed, const char *lib)
{
	char db[PATH_MAX + 16], tr[PATH_MAX + 16], lat[PATH_MAX + 16], opsbuf[32], paybuf[16],
		seedbuf[32], env[PATH_MAX + 16];
	snprintf(db, sizeof db, "%s/traced.db", dir);
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
		if (m->alex) {
			char set[512], *save = NULL;
			snprintf(set, sizeof set, "%s", m->alex);
			for (char *kv = strtok_r(set, ";", &save); kv; kv = strtok_r(NULL, ";", &save))
				putenv(strdup(kv));
			execlp("strace", "strace", "-f", "-c", "-e", "trace=fsync,fdatasync", "-o", tr,
			       "-E", env, self_exe, "--worker", m->name, workload, db, opsbuf, paybuf,
			       seedbuf, lat, (char *)NULL);
		} else {
			execlp("strace", "strace", "-f", "-c", "-e", "trace=fsync,fdatasync", "-o", tr,
			       self_exe, "--worker", m->name, workload, db, opsbuf, paybuf, seedbuf, lat,
			       (char *)NULL);
		}
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

static void usage(FILE *f)
{
	fprintf(f, "usage: alex-bench [--dir DIR] [--out DIR] [--runs R] [--ops N] [--payload BYTES]\n"
		   "                  [--workload insert,mixed] [--mode MODE,...] [--lib PATH] [--seed S]\n"
		   "                  [--strace]\n"
		   "modes: naive wal wal-normal tuned nosync wal-nosync alex alex-normal all,\n"
		   "       and alex:VAR=VALUE;VAR=VALUE for any other ALEX_* setting\n");
}

#define MAXMODES 32

int main(int argc, char **argv)
{
	const char *dir = "build/bench", *outdir = "build/bench/out", *lib = NULL;
	char modes_arg[1024] = "all", workloads[256] = "insert,mixed";
	long ops = 5000;
	int runs = 5, payload = 100;
	uint64_t seed = 42;
	int use_strace = 0;
	static char exe[PATH_MAX];

	if (argc > 1 && strcmp(argv[1], "--worker") == 0) {
		if (argc != 9)
			return 2;
		for (size_t i = 0; i < NBUILTIN; i++)
			if (strcmp(builtin[i].name, argv[2]) == 0)
				return worker(&builtin[i], argv[3], argv[4], atol(argv[5]), atoi(argv[6]),
					      strtoull(argv[7], NULL, 10), argv[8]);
		struct mode custom = { argv[2], "delete", "full", "", "" };
		return worker(&custom, argv[3], argv[4], atol(argv[5]), atoi(argv[6]),
			      strtoull(argv[7], NULL, 10), argv[8]);
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--help") == 0) {
			usage(stdout);
			return 0;
		}
		if (strcmp(a, "--strace") == 0) {
			use_strace = 1;
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
		else if (strcmp(a, "--workload") == 0) snprintf(workloads, sizeof workloads, "%s", v);
		else if (strcmp(a, "--mode") == 0) snprintf(modes_arg, sizeof modes_arg, "%s", v);
		else if (strcmp(a, "--lib") == 0) lib = v;
		else if (strcmp(a, "--seed") == 0) seed = strtoull(v, NULL, 10);
		else {
			usage(stderr);
			return 2;
		}
		i++;
	}
	if (runs < 1 || runs > 100 || ops < 1 || payload < 1 || payload > (1 << 20)) {
		fprintf(stderr, "alex-bench: --runs 1-100, --ops >= 1, --payload 1-1048576\n");
		return 2;
	}
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return 1;
	exe[n] = 0;
	self_exe = exe;
	static char libpath[PATH_MAX];
	if (!lib) { /* next to us: the build tree; else ../lib/alex */
		char *slash = strrchr(exe, '/');
		snprintf(libpath, sizeof libpath, "%.*s/libalex.so", (int)(slash - exe), exe);
		if (access(libpath, R_OK) != 0)
			snprintf(libpath, sizeof libpath, "%.*s/../lib/alex/libalex.so",
				 (int)(slash - exe), exe);
		lib = libpath;
	}

	/* the modes */
	static struct mode modes[MAXMODES];
	static char names[MAXMODES][256];
	int nm = 0;
	char *save = NULL;
	for (char *t = strtok_r(modes_arg, ",", &save); t && nm < MAXMODES; t = strtok_r(NULL, ",", &save)) {
		if (strcmp(t, "all") == 0) {
			for (size_t i = 0; i < NBUILTIN && nm < MAXMODES; i++)
				modes[nm++] = builtin[i];
			continue;
		}
		size_t i;
		for (i = 0; i < NBUILTIN && strcmp(builtin[i].name, t); i++)
			;
		if (i < NBUILTIN) {
			modes[nm++] = builtin[i];
		} else if (strncmp(t, "alex:", 5) == 0 && strchr(t, '=')) {
			snprintf(names[nm], sizeof names[nm], "%s", t);
			modes[nm] = (struct mode){ names[nm], "delete", "full", "", names[nm] + 5 };
			nm++;
		} else {
			fprintf(stderr, "alex-bench: unknown mode %s\n", t);
			usage(stderr);
			return 2;
		}
	}
	char cmd[3 * PATH_MAX];
	char csvpath[PATH_MAX];
	if (snprintf(cmd, sizeof cmd, "mkdir -p '%s' '%s'", dir, outdir) >= (int)sizeof cmd ||
	    system(cmd) != 0 ||
	    snprintf(csvpath, sizeof csvpath, "%s/runs.csv", outdir) >= (int)sizeof csvpath)
		return 1;
	FILE *csv = fopen(csvpath, "w");
	if (!csv) {
		fprintf(stderr, "alex-bench: %s: %s\n", csvpath, strerror(errno));
		return 1;
	}
	fprintf(csv, "workload,mode,run,status,ops,seconds,ops_per_s,mean_us,std_us,p50_us,"
		     "p95_us,p99_us,max_us,syncs,write_call_bytes,device_bytes,flushes,discards,"
		     "waf,peak_rss_kb\n");
	printf("alex-bench: %ld ops, %d-byte payload, %d runs per mode, seed %llu; caches %s\n\n",
	       ops, payload, runs, (unsigned long long)seed,
	       getuid() == 0 ? "dropped before each run" : "NOT dropped (not root)");
	int any_failed = 0;
	char *wsave = NULL;
	for (char *w = strtok_r(workloads, ",", &wsave); w; w = strtok_r(NULL, ",", &wsave)) {
		if (strcmp(w, "insert") && strcmp(w, "mixed")) {
			fprintf(stderr, "alex-bench: workload %s is not in this version "
					"(insert, mixed)\n", w);
			return 2;
		}
		printf("### %s\n\n| mode | ops/s | p50 us | p95 us | p99 us | max us | mean us | "
		       "syncs | syncs (strace) | write-call MB | device MB | WAF | RSS MB |\n"
		       "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n", w);
		for (int k = 0; k < nm; k++) {
			struct run r[100];
			int ok = 0;
			for (int i = 0; i < runs; i++) {
				char rdir[PATH_MAX], lat[PATH_MAX];
				if (snprintf(rdir, sizeof rdir, "%s/%s-%s-%d", dir, w, modes[k].name, i + 1) >=
					    (int)sizeof rdir ||
				    snprintf(lat, sizeof lat, "%s/lat-%s-%s-%d.csv", outdir, w, modes[k].name,
					     i + 1) >= (int)sizeof lat ||
				    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", rdir, rdir) >=
					    (int)sizeof cmd ||
				    system(cmd) != 0)
					return 1;
				run_one(&modes[k], w, rdir, ops, payload, seed + (uint64_t)i, lib, lat, &r[i]);
				if (use_strace && !r[i].failed)
					r[i].traced_syncs = traced_syncs(&modes[k], w, rdir, ops, payload,
									 seed + (uint64_t)i, lib);
				fprintf(csv, "%s,%s,%d,%s,%ld,%.6f,%.1f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.0f,"
					     "%.0f,%llu,%llu,%llu,%llu,%.3f,%ld\n",
					w, modes[k].name, i + 1, r[i].failed ? "failed" : "ok", r[i].ops,
					r[i].secs, r[i].ops_s, r[i].lat.mean, r[i].lat.std, r[i].lat.p50,
					r[i].lat.p95, r[i].lat.p99, r[i].lat.max, r[i].syncs,
					r[i].traced_syncs, (unsigned long long)r[i].wchar, (unsigned long long)r[i].dev_bytes,
					(unsigned long long)r[i].flushes, (unsigned long long)r[i].discards,
					r[i].waf, r[i].rss_kb);
				ok += !r[i].failed;
				if (snprintf(cmd, sizeof cmd, "rm -rf '%s'", rdir) >= (int)sizeof cmd ||
				    system(cmd) != 0)
					return 1;
			}
			if (ok < runs) { /* reported, never dropped */
				printf("| %s | FAILED (%d of %d runs) | | | | | | | | | | | |\n", modes[k].name,
				       runs - ok, runs);
				any_failed = 1;
				continue;
			}
#define MED(field) ({ double t_[100]; for (int j = 0; j < runs; j++) t_[j] = (field); \
			bench_median(t_, (size_t)runs); })
			double syncs = MED(r[j].syncs), traced = MED(r[j].traced_syncs);
			char sbuf[32], tbuf[32];
			if (syncs < 0)
				snprintf(sbuf, sizeof sbuf, "-");
			else
				snprintf(sbuf, sizeof sbuf, "%.0f", syncs);
			if (traced < 0)
				snprintf(tbuf, sizeof tbuf, "-");
			else
				snprintf(tbuf, sizeof tbuf, "%.0f", traced);
			printf("| %s | %.0f | %.1f | %.1f | %.1f | %.1f | %.1f | %s | %s | %.2f | %.2f | "
			       "%.2f | %.1f |\n", modes[k].name, MED(r[j].ops_s), MED(r[j].lat.p50),
			       MED(r[j].lat.p95), MED(r[j].lat.p99), MED(r[j].lat.max),
			       MED(r[j].lat.mean), sbuf, tbuf, MED((double)r[j].wchar) / 1e6,
			       MED((double)r[j].dev_bytes) / 1e6, MED(r[j].waf),
			       MED((double)r[j].rss_kb) / 1024);
			fflush(stdout);
		}
		printf("\n");
	}
	fclose(csv);
	printf("medians over %d runs; syncs: ALEX's own count of log syncs (ALEX modes);\n"
	       "syncs (strace): fsync+fdatasync counted by strace -f -c in a separate run (--strace);\n"
	       "every run in %s\n", runs, csvpath);
	return any_failed;
}
