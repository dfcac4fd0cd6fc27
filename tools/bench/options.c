/*
 * options.c - alex-bench's command line, checked whole before anything
 * runs: a bad value stops it with one line and exit status 2, never with a
 * benchmark of something other than what was asked.
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

static const struct bench_mode builtin[] = {
	{ "naive", "delete", "full", "", NULL, NULL },
	{ "wal", "wal", "full", "", NULL, NULL },
	{ "wal-normal", "wal", "normal", "", NULL, NULL },
	{ "tuned", "wal", "normal",
	  "pragma mmap_size=536870912; pragma locking_mode=exclusive; "
	  "pragma cache_size=-131072; pragma temp_store=memory;", NULL, NULL },
	{ "nosync", "delete", "off", "", NULL, NULL },
	{ "wal-nosync", "wal", "off", "", NULL, NULL },
	{ "alex", "delete", "full", "", "ALEX_SYNC=full", NULL },
	/* NORMAL: its commits staged beside the database and merged once per
	 * window (docs/STAGING.md) */
	{ "alex-normal", "delete", "full", "", "ALEX_SYNC=normal", NULL },
	/* NORMAL without the staging log: every commit appended to the log */
	{ "alex-unstaged", "delete", "full", "", "ALEX_SYNC=normal;ALEX_STAGE=0", NULL },
	/* the log kept at the last close: differs from alex only when processes
	 * come and go, so "all" has it only with the short workload */
	{ "alex-keep", "delete", "full", "", "ALEX_SYNC=full;ALEX_KEEP_LOG=1", NULL },
	/* the tracing mode's cost: naive and alex again, traced (into
	 * bench.trace in the run's directory); only when named */
	{ "naive-trace", "delete", "full", "", "ALEX_MODE=trace;ALEX_TRACE=bench.trace", NULL },
	{ "alex-trace", "delete", "full", "", "ALEX_SYNC=full;ALEX_TRACE=bench.trace", NULL },
	/* SQLite reading through a mapping (PRAGMA mmap_size), without and
	 * under ALEX; WAL + NORMAL and the tuned pragmas under ALEX (WAL
	 * mode, which ALEX passes through); only when named */
	{ "naive-mmap", "delete", "full", "pragma mmap_size=536870912;", NULL, NULL },
	{ "alex-mmap", "delete", "full", "pragma mmap_size=536870912;", "ALEX_SYNC=full", NULL },
	{ "alex-normal-mmap", "delete", "full", "pragma mmap_size=536870912;", "ALEX_SYNC=normal", NULL },
	{ "alex-wal-normal", "wal", "normal", "", "ALEX_SYNC=normal", NULL },
	/* encrypted (AES-256-XTS, a random key per run); only when named, and
	 * not for large or short, whose databases plain SQLite makes */
	{ "alex-xts", "delete", "full", "", "ALEX_SYNC=full;ALEX_KEY_FILE=bench.key", NULL },
	{ "alex-normal-xts", "delete", "full", "", "ALEX_SYNC=normal;ALEX_KEY_FILE=bench.key", NULL },
	/* the peer that needs a rebuilt SQLite: SQLCipher at its defaults (a
	 * passphrase through PBKDF2; AES-256-CBC and an HMAC per page), in
	 * SQLite's default mode and in WAL + NORMAL; only when named, not for
	 * large or short, and only where alex-bench-sqlcipher was built */
	{ "sqlcipher", "delete", "full", "", NULL, BENCH_CIPHER_KEY },
	{ "sqlcipher-wal-normal", "wal", "normal", "", NULL, BENCH_CIPHER_KEY },
	{ "alex-tuned", "wal", "normal",
	  "pragma mmap_size=536870912; pragma locking_mode=exclusive; "
	  "pragma cache_size=-131072; pragma temp_store=memory;", "ALEX_SYNC=normal", NULL },
	/* bounds, not configurations anyone should run: SQLite's rollback
	 * mode with nothing durable left -- the journal in memory, no sync
	 * -- with SQLite's locks and change detection (floor-shared) and
	 * without them (floor); and ALEX NORMAL with SQLite's exclusive
	 * locking, which makes no lock call, no stat and no journal open:
	 * what any answer to SQLite's locks from memory could at most give.
	 * Only when named. */
	{ "floor", "memory", "off", "pragma locking_mode=exclusive;", NULL, NULL },
	{ "floor-shared", "memory", "off", "", NULL, NULL },
	{ "alex-normal-excl", "delete", "full", "pragma locking_mode=exclusive;", "ALEX_SYNC=normal",
	  NULL },
};
/* the modes "all" leaves out: named ones only */
static int named_only(const char *name)
{
	return strstr(name, "-trace") || strstr(name, "-mmap") || strstr(name, "-xts") ||
	       strncmp(name, "sqlcipher", 9) == 0 || strcmp(name, "alex-tuned") == 0 ||
	       strcmp(name, "alex-wal-normal") == 0 || strncmp(name, "floor", 5) == 0 ||
	       strcmp(name, "alex-normal-excl") == 0;
}
#define NBUILTIN (sizeof builtin / sizeof builtin[0])

static const char *const workload_names[BENCH_NWORKLOADS] = { "insert", "mixed", "leviora",
							       "large", "short" };

/* The options that take a value: where each goes in struct bench_opts,
 * and the range of a number.  One table, so that what is parsed, what is
 * checked and what the error says cannot drift apart. */
enum kind { STRING, NUMBER, SEED };
static const struct {
	const char *name;
	enum kind kind;
	size_t off;
	long min, max;
} valued[] = {
	{ "--dir", STRING, offsetof(struct bench_opts, dir), 0, 0 },
	{ "--out", STRING, offsetof(struct bench_opts, outdir), 0, 0 },
	{ "--lib", STRING, offsetof(struct bench_opts, lib), 0, 0 },
	{ "--workload", STRING, offsetof(struct bench_opts, workload_arg), 0, 0 },
	{ "--mode", STRING, offsetof(struct bench_opts, mode_arg), 0, 0 },
	{ "--seed", SEED, offsetof(struct bench_opts, seed), 0, 0 },
	{ "--runs", NUMBER, offsetof(struct bench_opts, runs), 1, BENCH_MAXRUNS },
	{ "--ops", NUMBER, offsetof(struct bench_opts, ops), 1, 100000000 },
	{ "--payload", NUMBER, offsetof(struct bench_opts, payload), 1, 1 << 20 },
	{ "--large-mb", NUMBER, offsetof(struct bench_opts, large_mb), 1, 1L << 20 },
	{ "--probe-syncs", NUMBER, offsetof(struct bench_opts, probe_syncs), 1, 1000000 },
	{ "--probe-mb", NUMBER, offsetof(struct bench_opts, probe_mb), 1, 1L << 20 },
	{ "--procs", NUMBER, offsetof(struct bench_opts, procs), 1, 1000000 },
};
#define NVALUED (sizeof valued / sizeof valued[0])

static void usage(FILE *f)
{
	fprintf(f, "usage: alex-bench [--dir DIR] [--out DIR] [--runs R] [--ops N] [--payload BYTES]\n"
		   "                  [--workload insert,mixed,leviora,large,short|all] [--mode MODE,...]\n"
		   "                  [--procs N] [--large-mb MB] [--probe-syncs N] [--probe-mb MB]\n"
		   "                  [--no-probe] [--no-plots] [--lib PATH] [--seed S] [--strace]\n"
		   "modes: naive wal wal-normal tuned nosync wal-nosync alex alex-normal alex-unstaged\n"
		   "       alex-keep all,\n"
		   "       naive-trace alex-trace (traced into bench.trace; not in all),\n"
		   "       alex-xts alex-normal-xts (encrypted, ALEX_KEY_FILE; not in all),\n"
		   "       sqlcipher sqlcipher-wal-normal (SQLCipher's defaults; not in all),\n"
		   "       naive-mmap alex-mmap alex-normal-mmap alex-tuned (PRAGMA mmap_size; not in all),\n"
		   "       alex-wal-normal (wal-normal under ALEX; not in all),\n"
		   "       floor floor-shared alex-normal-excl (bounds: nothing durable, or\n"
		   "       SQLite's exclusive locking; not in all),\n"
		   "       and alex:VAR=VALUE;VAR=VALUE for any other ALEX_* setting\n");
}

/* strtol alone takes " 12", "+12" and "12abc" (as 12): digits first. */
static int starts_number(const char *s)
{
	return s && (isdigit((unsigned char)*s) || (*s == '-' && isdigit((unsigned char)s[1])));
}

int bench_parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (!starts_number(s))
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int bench_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!starts_number(s) || *s == '-') /* strtoull would wrap "-1" around */
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

static const struct bench_mode *find_builtin(const char *name)
{
	for (size_t i = 0; i < NBUILTIN; i++)
		if (strcmp(builtin[i].name, name) == 0)
			return &builtin[i];
	return NULL;
}

/* --mode: the built-in modes by name, "all", alex:VAR=VALUE;...  The names
 * of the last point into o->mode_buf.  0, or -1 (reported). */
static int parse_modes(struct bench_opts *o)
{
	char *save = NULL;

	o->nm = 0;
	if (snprintf(o->mode_buf, sizeof o->mode_buf, "%s", o->mode_arg) >= (int)sizeof o->mode_buf) {
		fprintf(stderr, "alex-bench: --mode: longer than %zu characters\n",
			sizeof o->mode_buf - 1);
		return -1;
	}
	for (char *t = strtok_r(o->mode_buf, ",", &save); t && o->nm < BENCH_MAXMODES;
	     t = strtok_r(NULL, ",", &save)) {
		const struct bench_mode *b = find_builtin(t);
		if (strcmp(t, "all") == 0) {
			for (size_t i = 0; i < NBUILTIN && o->nm < BENCH_MAXMODES; i++)
				if ((o->with_short || strcmp(builtin[i].name, "alex-keep")) &&
				    !named_only(builtin[i].name))
					o->modes[o->nm++] = builtin[i];
		} else if (b) {
			o->modes[o->nm++] = *b;
		} else if (strncmp(t, "alex:", 5) == 0 && strchr(t, '=')) {
			o->modes[o->nm++] = (struct bench_mode){ t, "delete", "full", "", t + 5, NULL };
		} else {
			fprintf(stderr, "alex-bench: unknown mode %s\n", t);
			usage(stderr);
			return -1;
		}
	}
	if (!o->nm) {
		fprintf(stderr, "alex-bench: --mode: none named\n");
		return -1;
	}
	return 0;
}

/* --workload: into o->wl, each at most once.  0, or -1 (reported). */
static int parse_workloads(struct bench_opts *o)
{
	char buf[256], *save = NULL;

	o->nw = o->with_short = 0;
	if (snprintf(buf, sizeof buf, "%s", o->workload_arg) >= (int)sizeof buf) {
		fprintf(stderr, "alex-bench: --workload: longer than %zu characters\n", sizeof buf - 1);
		return -1;
	}
	if (strcmp(buf, "all") == 0) { /* short only when named: another kind of run */
		for (; o->nw < 4; o->nw++)
			o->wl[o->nw] = workload_names[o->nw];
		return 0;
	}
	for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		int i, j;
		for (i = 0; i < BENCH_NWORKLOADS && strcmp(w, workload_names[i]); i++)
			;
		for (j = 0; j < o->nw && i < BENCH_NWORKLOADS && o->wl[j] != workload_names[i]; j++)
			;
		if (i == BENCH_NWORKLOADS || j < o->nw) {
			fprintf(stderr, "alex-bench: workloads: insert, mixed, leviora, large, short "
					"(each once), or all (the first four)\n");
			return -1;
		}
		o->wl[o->nw++] = workload_names[i];
		o->with_short |= i == 4;
	}
	if (!o->nw) {
		fprintf(stderr, "alex-bench: --workload: none named\n");
		return -1;
	}
	return 0;
}

/* The short workload's needs, before anything runs: 0, or the exit status. */
static int check_short(struct bench_opts *o)
{
	if (o->payload > BENCH_SHORT_MAXPAYLOAD) {
		fprintf(stderr, "alex-bench: short: --payload at most %d (one command-line argument)\n",
			BENCH_SHORT_MAXPAYLOAD);
		return 2;
	}
	if (bench_find_exe("sqlite3", getenv("PATH"), o->sqlite3, sizeof o->sqlite3)) {
		fprintf(stderr, "alex-bench: short: no sqlite3 in PATH (the workload runs the sqlite3 "
				"shell; apt-get install sqlite3)\n");
		return 1;
	}
	return 0;
}

/* An encrypted mode opens only databases it made itself: large and short
 * run on databases plain SQLite makes.  0, or -1 (reported). */
static int check_encrypted(const struct bench_opts *o)
{
	for (int k = 0; k < o->nm; k++) {
		const struct bench_mode *m = &o->modes[k];
		if (!m->cipher_key && !(m->alex && strstr(m->alex, "ALEX_KEY_FILE=")))
			continue;
		for (int i = 0; i < o->nw; i++)
			if (strcmp(o->wl[i], "large") == 0 || strcmp(o->wl[i], "short") == 0) {
				fprintf(stderr, "alex-bench: %s: an encrypted mode runs insert, mixed "
						"or leviora, not %s (its database is plain SQLite's)\n",
					m->name, o->wl[i]);
				return -1;
			}
	}
	return 0;
}

/* The valued[] entry of the option named by the len bytes at a, or -1. */
static int find_valued(const char *a, size_t len)
{
	for (size_t k = 0; k < NVALUED; k++)
		if (strlen(valued[k].name) == len && strncmp(a, valued[k].name, len) == 0)
			return (int)k;
	return -1;
}

/* Option a with its value v (NULL: a was the last argument): 0, -1 (a bad
 * value, reported), or 1 if a is no option that takes a value. */
static int set_option(struct bench_opts *o, const char *a, const char *v)
{
	int k = find_valued(a, strlen(a));

	if (k < 0)
		return 1;
	if (!v) {
		fprintf(stderr, "alex-bench: %s needs a value\n", a);
		return -1;
	}
	void *dst = (char *)o + valued[k].off;
	switch (valued[k].kind) {
	case STRING:
		*(const char **)dst = v;
		return 0;
	case NUMBER:
		if (bench_parse_long(v, valued[k].min, valued[k].max, dst) == 0)
			return 0;
		fprintf(stderr, "alex-bench: %s: '%s' is not a number between %ld and %ld\n", a, v,
			valued[k].min, valued[k].max);
		return -1;
	case SEED:
		if (bench_parse_u64(v, dst) == 0)
			return 0;
		fprintf(stderr, "alex-bench: %s: '%s' is not a number between 0 and %llu\n", a, v,
			(unsigned long long)UINT64_MAX);
		return -1;
	}
	return -1;
}

static void unknown_option(const char *a)
{
	const char *eq = strchr(a, '=');

	if (eq && find_valued(a, (size_t)(eq - a)) >= 0) /* --runs=5, as most tools take it */
		fprintf(stderr, "alex-bench: %s: the value goes in the next argument (%.*s %s)\n", a,
			(int)(eq - a), a, eq + 1);
	else
		fprintf(stderr, "alex-bench: unknown option '%s' (alex-bench --help lists them)\n", a);
}

int bench_opts_parse(int argc, char **argv, struct bench_opts *o)
{
	int rc;

	*o = (struct bench_opts){ .dir = "build/bench", .outdir = "build/bench/out", .runs = 5,
				  .ops = 5000, .payload = 100, .large_mb = 1024, .probe_syncs = 1000,
				  .probe_mb = 256, .procs = 200, .seed = 42, .probe = 1, .plots = 1,
				  .workload_arg = "insert,mixed", .mode_arg = "all" };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0) {
			usage(stdout);
			return 0;
		}
		if (strcmp(a, "--strace") == 0 || strcmp(a, "--no-probe") == 0 ||
		    strcmp(a, "--no-plots") == 0) {
			o->strace |= a[2] == 's';
			o->probe &= strcmp(a, "--no-probe") != 0;
			o->plots &= strcmp(a, "--no-plots") != 0;
			continue;
		}
		rc = set_option(o, a, i + 1 < argc ? argv[i + 1] : NULL);
		if (rc > 0)
			unknown_option(a);
		if (rc)
			return 2;
		i++;
	}
	if (parse_workloads(o) || parse_modes(o))
		return 2;
	if (check_encrypted(o))
		return 2;
	if (o->with_short && (rc = check_short(o)))
		return rc;
	return BENCH_OPTS_RUN;
}

int bench_opts_worker(int argc, char **argv)
{
	long ops, payload;
	uint64_t seed;

	if (argc != BENCH_WARGC || bench_parse_long(argv[BENCH_WARG_OPS], 1, LONG_MAX, &ops) ||
	    bench_parse_long(argv[BENCH_WARG_PAYLOAD], 1, 1 << 20, &payload) ||
	    bench_parse_u64(argv[BENCH_WARG_SEED], &seed)) {
		fprintf(stderr, "alex-bench: --worker: not a command line alex-bench built\n");
		return 2;
	}
	const struct bench_mode *m = find_builtin(argv[BENCH_WARG_MODE]);
	/* alex:VAR=VALUE: its settings are in the environment already; "" still
	 * marks it an ALEX mode (short passes libalex.so on) */
	struct bench_mode custom = { argv[BENCH_WARG_MODE], "delete", "full", "", "", NULL };
	return bench_worker(m ? m : &custom, argv[BENCH_WARG_WORKLOAD], argv[BENCH_WARG_DB], ops,
			    (int)payload, seed, argv[BENCH_WARG_LAT]);
}
