/*
 * run.c - the benchmark's runs.  Every run is a worker process (this same
 * binary with --worker, worker.c) on a fresh database in a directory of its
 * own, removed after it; what it printed, its latency file, its rusage, the
 * device's counters and ALEX's stats file (read back by read.c) make one
 * struct bench_run, handed to the report (report.c) as the run ends.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "read.h"
#include "report.h"
#include "run.h"

/* A path under a directory that fits PATH_MAX, with room for a file name. */
#define SUBPATH_MAX (PATH_MAX + 32)
/* ALEX_* settings of one mode: as many as struct job's settings can hold. */
#define MAXSETTINGS 256

/* This program, the alex tool beside it and libalex.so, found once. */
static struct {
	char exe[PATH_MAX], alex[PATH_MAX], libbuf[PATH_MAX];
	char cipher[PATH_MAX]; /* alex-bench-sqlcipher: the SQLCipher modes' worker */
	const char *lib;
} self;

/* One run of one mode: where it runs, and the worker's command line and
 * environment, built once for the timed run and the traced one. */
struct job {
	const struct bench_mode *m;
	int is_short, large;
	char dir[PATH_MAX], lat[PATH_MAX], db[SUBPATH_MAX];
	char ops[24], payload[24], seed[24];
	char *argv[BENCH_WARGC + 1];
	char settings[512]; /* the mode's ALEX_* settings, cut at each ';' */
	char *set[MAXSETTINGS];
	int nset;
	char trace[PATH_MAX + 16]; /* ALEX_TRACE made a file in the run's directory */
	char key[PATH_MAX + 16];   /* ALEX_KEY_FILE the same, made by make_key */
};

static int find_self(const struct bench_opts *o)
{
	ssize_t n = readlink("/proc/self/exe", self.exe, sizeof self.exe - 1);
	int dirlen;

	if (n <= 0) {
		fprintf(stderr, "alex-bench: /proc/self/exe: %s\n", strerror(errno));
		return -1;
	}
	self.exe[n] = 0;
	dirlen = (int)(strrchr(self.exe, '/') - self.exe);
	snprintf(self.alex, sizeof self.alex, "%.*s/alex", dirlen, self.exe);
	snprintf(self.cipher, sizeof self.cipher, "%.*s/alex-bench-sqlcipher", dirlen, self.exe);
	for (int k = 0; k < o->nm; k++)
		if (o->modes[k].cipher_key && access(self.cipher, X_OK) != 0) {
			fprintf(stderr, "alex-bench: %s: %s: %s (it is built where libsqlcipher-dev "
					"is installed)\n", o->modes[k].name, self.cipher, strerror(errno));
			return -1;
		}
	self.lib = o->lib;
	if (!self.lib) { /* next to us: the build tree; else ../lib/alex */
		snprintf(self.libbuf, sizeof self.libbuf, "%.*s/libalex.so", dirlen, self.exe);
		if (access(self.libbuf, R_OK) != 0)
			snprintf(self.libbuf, sizeof self.libbuf, "%.*s/../lib/alex/libalex.so", dirlen,
				 self.exe);
		self.lib = self.libbuf;
	}
	return 0;
}

static int job_init(struct job *j, const struct bench_opts *o, const char *w,
		    const struct bench_mode *m, int i, const char *large_db)
{
	char *save = NULL, part[256];

	j->m = m;
	j->key[0] = 0; /* none unless the mode names one */
	j->is_short = strcmp(w, "short") == 0;
	j->large = strcmp(w, "large") == 0;
	/* a setting's value may be a path: the mode's name is no file name */
	bench_file_part(part, sizeof part, m->name);
	if (snprintf(j->dir, sizeof j->dir, "%s/%s-%s-%d", o->dir, w, part, i + 1) >=
		    (int)sizeof j->dir ||
	    snprintf(j->lat, sizeof j->lat, "%s/lat-%s-%s-%d.csv", o->outdir, w, part, i + 1) >=
		    (int)sizeof j->lat) {
		fprintf(stderr, "alex-bench: %s %s: %s\n", w, m->name, strerror(ENAMETOOLONG));
		return -1;
	}
	if (j->large) /* every mode and run on the one database built beforehand */
		snprintf(j->db, sizeof j->db, "%s", large_db);
	else /* short: in a directory of its own, to see what is left in it */
		snprintf(j->db, sizeof j->db, "%s/%sbench.db", j->dir, j->is_short ? "db/" : "");
	snprintf(j->ops, sizeof j->ops, "%ld", j->is_short ? o->procs : o->ops);
	snprintf(j->payload, sizeof j->payload, "%ld", o->payload);
	snprintf(j->seed, sizeof j->seed, "%llu", (unsigned long long)(o->seed + (uint64_t)i));
	j->argv[0] = m->cipher_key ? self.cipher : self.exe;
	j->argv[BENCH_WARG_FLAG] = "--worker";
	j->argv[BENCH_WARG_MODE] = (char *)m->name;
	j->argv[BENCH_WARG_WORKLOAD] = (char *)w;
	j->argv[BENCH_WARG_DB] = j->db;
	j->argv[BENCH_WARG_OPS] = j->ops;
	j->argv[BENCH_WARG_PAYLOAD] = j->payload;
	j->argv[BENCH_WARG_SEED] = j->seed;
	j->argv[BENCH_WARG_LAT] = j->lat;
	j->argv[BENCH_WARGC] = NULL;
	snprintf(j->settings, sizeof j->settings, "%s", m->alex ? m->alex : "");
	j->nset = 0;
	for (char *kv = strtok_r(j->settings, ";", &save); kv && j->nset < MAXSETTINGS;
	     kv = strtok_r(NULL, ";", &save)) {
		if (strncmp(kv, "ALEX_TRACE=", 11) == 0 && kv[11] != '/') {
			snprintf(j->trace, sizeof j->trace, "ALEX_TRACE=%s/%s", j->dir, kv + 11);
			kv = j->trace;
		}
		if (strncmp(kv, "ALEX_KEY_FILE=", 14) == 0 && kv[14] != '/') {
			snprintf(j->key, sizeof j->key, "ALEX_KEY_FILE=%s/%s", j->dir, kv + 14);
			kv = j->key;
		}
		j->set[j->nset++] = kv;
	}
	return 0;
}

/* The environment a run's child gets: for an ALEX mode its settings and
 * then a and b (if not NULL); for plain SQLite nothing. */
static char *const *job_env(const struct job *j, char *env[MAXSETTINGS + 3], char *a, char *b)
{
	int n = 0;

	if (!j->m->alex)
		return NULL;
	for (int k = 0; k < j->nset; k++)
		env[n++] = j->set[k];
	if (a)
		env[n++] = a;
	if (b)
		env[n++] = b;
	env[n] = NULL;
	return env;
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

/* The measured run: the worker with the mode's environment; an ALEX mode
 * loads libalex.so (short: its sqlite3 processes do) and writes its stats. */
static void timed_run(const struct job *j, long payload, struct bench_run *r)
{
	char stats[SUBPATH_MAX], out[SUBPATH_MAX], set_stats[SUBPATH_MAX + 16],
		set_lib[PATH_MAX + 32], *env[MAXSETTINGS + 3];
	struct bench_disk d0, d1;
	struct stat st;
	struct rusage ru;
	int have_disk;

	memset(r, 0, sizeof *r);
	r->syncs = r->traced_syncs = -1;
	r->files_left = -1;
	snprintf(stats, sizeof stats, "%s/alex-stats.json", j->dir);
	snprintf(out, sizeof out, "%s/worker.out", j->dir);
	snprintf(set_stats, sizeof set_stats, "ALEX_STATS=%s", stats);
	snprintf(set_lib, sizeof set_lib, "%s=%s", j->is_short ? "ALEX_BENCH_LIB" : "LD_PRELOAD",
		 self.lib);
	struct bench_spawn how = { .out = out,
				   .env = job_env(j, env, set_lib, j->is_short ? NULL : set_stats) };
	if (getuid() == 0) /* start from cold caches, as the paper's runs */
		drop_caches();
	have_disk = stat(j->dir, &st) == 0 && bench_disk_now(st.st_dev, &d0) == 0;
	if (bench_spawn(j->argv, &how, &ru) != 0) {
		r->failed = 1;
		fprintf(stderr, "alex-bench: %s: the run failed (its standard output: %s)\n", j->dir, out);
		return;
	}
	r->rss_kb = ru.ru_maxrss;
	if (have_disk && bench_disk_now(st.st_dev, &d1) == 0) {
		r->dev_bytes = (d1.sectors_written - d0.sectors_written) * 512;
		r->flushes = d1.flushes - d0.flushes;
		r->discards = d1.discards - d0.discards;
	}
	if (bench_read_worker(out, j->is_short, r, &have_disk)) {
		r->failed = 1;
		fprintf(stderr, "alex-bench: %s: no result from the run (its standard output: %s)\n",
			j->dir, out);
		return;
	}
	r->ops_s = r->secs > 0 ? (double)r->ops / r->secs : 0;
	r->waf = have_disk ? (double)r->dev_bytes / ((double)r->ops * (double)payload) : -1;
	if (j->m->alex)
		r->syncs = bench_read_syncs(stats);
	bench_read_latencies(j->lat, r);
}

/*
 * The same run again under strace -f -c, untimed: the kernel's count of
 * fsync+fdatasync, for every mode, to check ALEX's own (short: of all its
 * sqlite3 processes; its worker's setup issues none).  libalex.so goes in
 * through strace -E, so that strace itself does not run under it.
 */
static double traced_syncs(const struct job *j)
{
	static char *const strace[] = { "strace", "-f", "-c", "-e", "trace=fsync,fdatasync", "-o" };
	char tr[SUBPATH_MAX], lat[SUBPATH_MAX], db[SUBPATH_MAX], preload[PATH_MAX + 32],
		set_lib[PATH_MAX + 32], *env[MAXSETTINGS + 3];
	char *argv[sizeof strace / sizeof strace[0] + 3 + BENCH_WARGC + 1];
	size_t n = 0;

	snprintf(tr, sizeof tr, "%s/strace.txt", j->dir);
	snprintf(lat, sizeof lat, "%s/traced-lat.csv", j->dir);
	snprintf(db, sizeof db, "%s/traced.db", j->dir);
	snprintf(preload, sizeof preload, "LD_PRELOAD=%s", self.lib);
	snprintf(set_lib, sizeof set_lib, "ALEX_BENCH_LIB=%s", self.lib);
	for (size_t k = 0; k < sizeof strace / sizeof strace[0]; k++)
		argv[n++] = strace[k];
	argv[n++] = tr;
	if (j->m->alex && !j->is_short) {
		argv[n++] = "-E";
		argv[n++] = preload;
	}
	memcpy(argv + n, j->argv, sizeof j->argv);
	if (!j->large) /* a fresh database of its own, unless the workload reuses one */
		argv[n + BENCH_WARG_DB] = db;
	argv[n + BENCH_WARG_LAT] = lat;
	struct bench_spawn how = { .out = "/dev/null",
				   .env = job_env(j, env, j->is_short ? set_lib : NULL, NULL) };
	if (bench_spawn(argv, &how, NULL) != 0)
		return -1;
	return bench_read_strace(tr);
}

/*
 * The large workload reuses one database: a mode under ALEX must leave it
 * plain for the next (libalex.so checkpoints at the last close; this makes
 * sure), and no mode may leave a WAL behind.
 */
static int large_clean(const char *db)
{
	char log[SUBPATH_MAX];
	char *argv[] = { self.alex, "checkpoint", (char *)db, NULL };
	struct bench_spawn how = { .out = "/dev/null" };
	struct stat st;

	snprintf(log, sizeof log, "%s-alex", db);
	if (stat(log, &st) == 0 && bench_spawn(argv, &how, NULL) != 0)
		return -1;
	return 0;
}

static int make_dir(const char *dir)
{
	if (bench_tree_make(dir) == 0)
		return 0;
	fprintf(stderr, "alex-bench: mkdir %s: %s\n", dir, strerror(errno));
	return -1;
}

static int remove_dir(const char *dir)
{
	if (bench_tree_remove(dir) == 0)
		return 0;
	fprintf(stderr, "alex-bench: removing %s: %s\n", dir, strerror(errno));
	return -1;
}

/* An encrypting mode's key: 64 random bytes, the owner's alone. */
static int make_key(const struct job *j)
{
	uint8_t k[64];
	const char *path = j->key + 14;
	int fd, ok;

	if (!j->key[0])
		return 0;
	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	ok = fd >= 0 && read(fd, k, sizeof k) == (ssize_t)sizeof k;
	if (fd >= 0)
		close(fd);
	fd = ok ? open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600) : -1;
	ok = fd >= 0 && write(fd, k, sizeof k) == (ssize_t)sizeof k;
	if (fd >= 0)
		close(fd);
	if (!ok)
		fprintf(stderr, "alex-bench: %s: %s\n", path, strerror(errno));
	return ok ? 0 : -1;
}

/* Run i of mode m on workload w, into *r.  0, or -1 (reported). */
static int run_one(const struct bench_opts *o, struct bench_report *rep, const char *w,
		   const struct bench_mode *m, int i, const char *large_db, struct bench_run *r)
{
	struct job j;

	if (job_init(&j, o, w, m, i, large_db) || remove_dir(j.dir) || make_dir(j.dir) ||
	    make_key(&j))
		return -1;
	timed_run(&j, o->payload, r);
	/* the kernel's count once per mode: it is the check of ALEX's own,
	 * not a statistic */
	if (o->strace && i == 0 && !r->failed)
		r->traced_syncs = traced_syncs(&j);
	if (j.large && large_clean(large_db))
		r->failed = 1;
	bench_report_run(rep, w, m, i, r);
	/* a failed run's directory stays, with its worker's output */
	return r->failed ? 0 : remove_dir(j.dir);
}

static int run_workload(const struct bench_opts *o, struct bench_report *rep, const char *w)
{
	char large_db[PATH_MAX];

	if (snprintf(large_db, sizeof large_db, "%s/large-base.db", o->dir) >= (int)sizeof large_db) {
		fprintf(stderr, "alex-bench: %s: %s\n", o->dir, strerror(ENAMETOOLONG));
		return -1;
	}
	if (strcmp(w, "large") == 0 && bench_build_large(large_db, o->large_mb, (int)o->payload)) {
		fprintf(stderr, "alex-bench: cannot build %s\n", large_db);
		return -1;
	}
	/* Round robin: run i of every mode, then run i + 1.  A machine whose
	 * speed drifts (a shared host, a device's cache) then weighs on every
	 * mode alike, and each mode's median compares with the others' side
	 * by side, not with a later stretch of time. */
	struct bench_run *r = calloc((size_t)o->nm * (size_t)o->runs, sizeof *r);
	if (!r) {
		fprintf(stderr, "alex-bench: %s\n", strerror(ENOMEM));
		return -1;
	}
	for (int i = 0; i < o->runs; i++)
		for (int k = 0; k < o->nm; k++)
			if (run_one(o, rep, w, &o->modes[k], i, large_db, &r[k * o->runs + i])) {
				free(r);
				return -1;
			}
	for (int k = 0; k < o->nm; k++)
		bench_report_mode(rep, w, &o->modes[k], &r[k * o->runs]);
	free(r);
	bench_report_workload(rep, w);
	return 0;
}

int bench_run_all(const struct bench_opts *o)
{
	struct bench_report *rep;

	if (find_self(o) || make_dir(o->dir) || make_dir(o->outdir) ||
	    !(rep = bench_report_open(o)))
		return 1;
	if (o->probe) {
		struct bench_probe p[BENCH_NPROBES];
		if (getuid() == 0)
			drop_caches();
		bench_probe(o->dir, o->probe_syncs, o->probe_mb, p);
		bench_report_probe(o, p);
	}
	for (int wi = 0; wi < o->nw; wi++)
		if (run_workload(o, rep, o->wl[wi]))
			return 1;
	return bench_report_close(rep);
}
