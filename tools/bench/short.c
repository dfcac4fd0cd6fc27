/*
 * short.c - the short workload: many short-lived processes, each one
 * `sqlite3 DB "insert into t(v) values('...')"`, the way a shell script
 * uses SQLite.  Each process opens, inserts one row and closes: under ALEX
 * that is a whole log's life (created at the first open, removed at the
 * last close), unless ALEX_KEEP_LOG=1 keeps it (mode alex-keep).
 *
 * The worker process runs plain SQLite only (the database is created and
 * checked here); the sqlite3 processes it starts get libalex.so through
 * LD_PRELOAD, set in its environment after it has started.
 *
 * Its own table, every process of every run in one line per mode, is made
 * here too (bench_short_pool, bench_short_row): it reads what this file
 * measures.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <sqlite3.h>

#include "bench.h"
#include "run.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int bench_find_exe(const char *name, const char *pathenv, char *out, size_t cap)
{
	const char *p = pathenv ? pathenv : "/bin:/usr/bin"; /* execvp's own default */
	struct stat st;

	if (!*name)
		return -1;
	if (strchr(name, '/'))
		return snprintf(out, cap, "%s", name) < (int)cap && stat(out, &st) == 0 &&
				       S_ISREG(st.st_mode) && access(out, X_OK) == 0
			       ? 0 : -1;
	for (;;) {
		const char *colon = strchr(p, ':');
		int len = colon ? (int)(colon - p) : (int)strlen(p);
		if (snprintf(out, cap, "%.*s/%s", len ? len : 1, len ? p : ".", name) < (int)cap &&
		    stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
			return 0;
		if (!colon)
			return -1;
		p = colon + 1;
	}
}

int bench_short_sql(char *buf, size_t cap, const struct bench_mode *m, long i, int payload)
{
	static const char fill[] = "metadata-value-";
	int def_sync = strcmp(m->sync, "full") == 0; /* the shell's default */
	char tag[32];
	int n = snprintf(buf, cap, "%s%s%s%s%sinsert into t(v) values('",
			 def_sync ? "" : "pragma synchronous=", def_sync ? "" : m->sync,
			 def_sync ? "" : "; ", m->extra, *m->extra ? " " : "");
	int nt = snprintf(tag, sizeof tag, "%ld-", i + 1);

	if (n < 0 || payload < 0 || (size_t)n + (size_t)payload + 3 > cap)
		return -1;
	for (int k = 0; k < payload; k++)
		buf[n++] = k < nt ? tag[k] : fill[(k - nt) % (int)(sizeof fill - 1)];
	memcpy(buf + n, "')", 3);
	return n + 2;
}

const char bench_short_head[] =
	"| mode | processes | inserts/s | p50 ms | p95 ms | p99 ms | max ms | syncs/process "
	"| device bytes/process | write-call bytes/process | files left |\n"
	"|---|---|---|---|---|---|---|---|---|---|---|\n";

static const char *num(char *buf, size_t cap, const char *fmt, double v)
{
	if (v < 0)
		snprintf(buf, cap, "-");
	else
		snprintf(buf, cap, fmt, v);
	return buf;
}

int bench_short_row(char *buf, size_t cap, const char *mode, const struct bench_short_stats *s)
{
	char sy[32], dev[32], wc[32], left[32];

	if (s->files_min < 0 || s->files_max < 0)
		snprintf(left, sizeof left, "-");
	else if (s->files_min == s->files_max)
		snprintf(left, sizeof left, "%d", s->files_min);
	else
		snprintf(left, sizeof left, "%d–%d", s->files_min, s->files_max);
	return snprintf(buf, cap, "| %s | %ld | %.0f | %.2f | %.2f | %.2f | %.2f | %s | %s | %s | %s |\n",
			mode, s->procs, s->ins_s, s->t.p50 / 1e3, s->t.p95 / 1e3, s->t.p99 / 1e3,
			s->t.max / 1e3, num(sy, sizeof sy, "%.2f", s->syncs),
			num(dev, sizeof dev, "%.0f", s->dev_bytes),
			num(wc, sizeof wc, "%.0f", s->wchar), left);
}

int bench_short_pool(const struct bench_run *r, int runs, long procs, struct bench_short_stats *s)
{
	size_t n = 0;
	double secs = 0, dev = 0, wc = 0;
	int have_dev = 1;

	*s = (struct bench_short_stats){ .procs = procs * runs, .files_min = INT_MAX,
					 .files_max = -1 };
	for (int i = 0; i < runs; i++)
		n += r[i].nsorted;
	double *all = malloc((n ? n : 1) * sizeof *all);
	if (!all)
		return -1;
	n = 0;
	for (int i = 0; i < runs; i++) {
		if (r[i].nsorted)
			memcpy(all + n, r[i].sorted, r[i].nsorted * sizeof *all);
		n += r[i].nsorted;
		secs += r[i].secs;
		dev += (double)r[i].dev_bytes;
		wc += (double)r[i].wchar;
		have_dev &= r[i].waf >= 0;
		s->files_min = r[i].files_left < s->files_min ? r[i].files_left : s->files_min;
		s->files_max = r[i].files_left > s->files_max ? r[i].files_left : s->files_max;
	}
	bench_summarize(all, n, &s->t);
	free(all);
	s->ins_s = secs > 0 ? (double)s->procs / secs : 0;
	/* the strace pass is the first run's: all its processes' syncs */
	s->syncs = r[0].traced_syncs < 0 ? -1 : r[0].traced_syncs / (double)procs;
	s->dev_bytes = have_dev ? dev / (double)s->procs : -1;
	s->wchar = wc / (double)s->procs;
	return 0;
}

/* Files in dir other than base (and . and ..), or -1. */
static int count_beside(const char *dir, const char *base)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, base);
	closedir(d);
	return n;
}

/* Plain SQLite, synchronous=OFF: setting up (and checking) issues no sync
 * the strace pass would count; sync() flushes it before the processes. */
static int create_db(const struct bench_mode *m, const char *path)
{
	sqlite3 *db;
	char sql[256], *err = NULL;
	int rc = -1;

	snprintf(sql, sizeof sql, "pragma synchronous=off; pragma journal_mode=%s; "
				  "create table t(id integer primary key, v text);", m->journal);
	if (sqlite3_open(path, &db) != SQLITE_OK ||
	    sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
		fprintf(stderr, "alex-bench: short: creating %s: %s\n", path,
			err ? err : sqlite3_errmsg(db));
	else
		rc = 0;
	sqlite3_free(err);
	if (sqlite3_close(db) != SQLITE_OK)
		rc = -1;
	sync();
	return rc;
}

/* The rows in t, with plain SQLite; *ok: integrity_check said ok. */
static long count_rows(const char *path, int *ok)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	long rows = -1;

	*ok = 0;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
	    sqlite3_exec(db, "pragma synchronous=off", NULL, NULL, NULL) == SQLITE_OK) {
		if (sqlite3_prepare_v2(db, "select count(*) from t", -1, &st, NULL) == SQLITE_OK &&
		    sqlite3_step(st) == SQLITE_ROW)
			rows = (long)sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
		if (sqlite3_prepare_v2(db, "pragma integrity_check", -1, &st, NULL) == SQLITE_OK &&
		    sqlite3_step(st) == SQLITE_ROW)
			*ok = strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0;
		sqlite3_finalize(st);
	}
	if (rows < 0)
		fprintf(stderr, "alex-bench: short: reading %s: %s\n", path, sqlite3_errmsg(db));
	sqlite3_close(db);
	return rows;
}

/*
 * The sqlite3 processes, one after another, until one fails: each one's
 * wall time (fork to waitpid, us) into us[], all of them into *secs.
 * Returns how many ran, or -1 (nothing measured); *failed: one did not
 * exit with 0.
 */
static long run_procs(const struct bench_mode *m, const char *exe, const char *path, long procs,
		      int payload, double *us, double *secs, int *failed)
{
	size_t cap = (size_t)payload + strlen(m->extra) + 256;
	char *sql = malloc(cap);
	int devnull = open("/dev/null", O_RDWR);
	long done = 0;

	*failed = 0;
	if (!sql || devnull < 0)
		return -1;
	double t0 = now_s();
	for (long i = 0; i < procs && !*failed; i++) {
		char *argv[] = { "sqlite3", "-init", "/dev/null", (char *)path, sql, NULL };
		int status;
		if (bench_short_sql(sql, cap, m, i, payload) < 0) {
			done = -1;
			break;
		}
		double a = now_s();
		pid_t pid = fork();
		if (pid == 0) {
			dup2(devnull, 0);
			dup2(devnull, 1);
			execvp(exe, argv);
			fprintf(stderr, "alex-bench: short: %s: %s\n", exe, strerror(errno));
			_exit(127);
		}
		if (pid < 0 || waitpid(pid, &status, 0) < 0) {
			fprintf(stderr, "alex-bench: short: fork/waitpid: %s\n", strerror(errno));
			*failed = 1;
			break;
		}
		us[i] = (now_s() - a) * 1e6;
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "alex-bench: short %s: sqlite3 process %ld of %ld %s %d\n",
				m->name, i + 1, procs, WIFEXITED(status) ? "exited with" : "killed by signal",
				WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
			*failed = 1;
		}
		done++;
	}
	*secs = now_s() - t0;
	free(sql);
	close(devnull);
	return done;
}

static int write_latencies(const char *latfile, const double *us, long n)
{
	FILE *lat = fopen(latfile, "w");

	if (!lat)
		return -1;
	fprintf(lat, "op,us\n");
	for (long i = 0; i < n; i++)
		fprintf(lat, "process,%.3f\n", us[i]);
	return fclose(lat) ? -1 : 0;
}

/* After the processes, with plain SQLite: exactly procs rows, and
 * integrity_check ok.  0, or -1 (reported). */
static int check_db(const struct bench_mode *m, const char *path, long procs)
{
	int ic_ok;
	long rows = count_rows(path, &ic_ok);

	if (rows != procs) {
		fprintf(stderr, "alex-bench: short %s: FAILED: %ld rows in %s after %ld processes "
				"(plain SQLite), expected %ld\n", m->name, rows, path, procs, procs);
		return -1;
	}
	if (!ic_ok) {
		fprintf(stderr, "alex-bench: short %s: FAILED: integrity_check of %s is not ok\n",
			m->name, path);
		return -1;
	}
	return 0;
}

/* The database's directory (what else is in it after the run), made if
 * it is not there; then the database, created.  0, or -1 (reported). */
static int setup(const struct bench_mode *m, const char *path, char *dir, size_t cap)
{
	const char *slash = strrchr(path, '/');

	snprintf(dir, cap, "%.*s", slash ? (slash == path ? 1 : (int)(slash - path)) : 1,
		 slash ? path : ".");
	if (mkdir(dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "alex-bench: short: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	return create_db(m, path);
}

int bench_short(const struct bench_mode *m, const char *path, long procs, int payload,
		const char *latfile)
{
	const char *lib = getenv("ALEX_BENCH_LIB"), *slash = strrchr(path, '/');
	char exe[PATH_MAX], dir[PATH_MAX];
	double *us = malloc((size_t)procs * sizeof *us);
	struct stat st;
	struct bench_disk d0, d1;
	int failed;

	if (!us || procs < 1 || payload < 1 || payload > BENCH_SHORT_MAXPAYLOAD)
		return 1;
	if (bench_find_exe("sqlite3", getenv("PATH"), exe, sizeof exe)) {
		fprintf(stderr, "alex-bench: short: no sqlite3 in PATH (the workload runs the "
				"sqlite3 shell; apt-get install sqlite3)\n");
		return 1;
	}
	if (m->alex && (!lib || !*lib)) {
		fprintf(stderr, "alex-bench: short: %s: ALEX_BENCH_LIB is not set\n", m->name);
		return 1;
	}
	if (setup(m, path, dir, sizeof dir))
		return 1;
	if (m->alex) /* for the sqlite3 processes: this one has long been loaded */
		setenv("LD_PRELOAD", lib, 1);
	int have_disk = stat(dir, &st) == 0 && bench_disk_now(st.st_dev, &d0) == 0;
	uint64_t w0 = bench_wchar();
	double secs;
	long done = run_procs(m, exe, path, procs, payload, us, &secs, &failed);
	uint64_t wc = bench_wchar() - w0;
	have_disk = have_disk && bench_disk_now(st.st_dev, &d1) == 0;
	unsetenv("LD_PRELOAD");
	/* before this process opens it again */
	int left = count_beside(dir, slash ? slash + 1 : path);

	if (done < 0 || write_latencies(latfile, us, done))
		return 1;
	failed = failed || check_db(m, path, procs);
	printf("%ld %.6f %s %llu %d", done, secs, failed ? "FAILED" : "ok",
	       (unsigned long long)wc, left);
	if (have_disk)
		printf(" %llu %llu %llu", (unsigned long long)(d1.sectors_written - d0.sectors_written) * 512,
		       (unsigned long long)(d1.flushes - d0.flushes),
		       (unsigned long long)(d1.discards - d0.discards));
	printf("\n");
	free(us);
	return 0;
}
