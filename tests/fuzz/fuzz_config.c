/*
 * fuzz_config - libFuzzer target for libalex.so's settings parser
 * (preload/config.c).
 *
 * Input: fields separated by NUL bytes (an environment value cannot hold
 * one).  "NAME=value" sets one of the ALEX_* variables the parser reads, a
 * bare "NAME" unsets it, the last word on a name wins, other names are
 * ignored.  Then alex_config_load runs, and what config.h, the comments in
 * config.c and man/libalex.7 promise is checked against a model of each
 * variable:
 *   - a value clearly outside the accepted ones sets `bad` (fail closed);
 *   - with only accepted values, `bad` stays clear, each setting holds the
 *     value asked for (unset: the documented default), and the engine takes
 *     the resulting configuration (alex_open does not say EINVAL);
 *   - the return value is -1 exactly when `bad` is set.
 * One case the documentation leaves open is not judged: a power-cut SEED
 * past 2^64-1 (no range is given; the parser refuses it).
 * Its first runs found two bugs, now fixed in config.c: strtoull took
 * " +5" and " -0" as numbers, and ALEX_TEST_POWERCUT was cut to 127 bytes
 * before it was parsed, so a long valid value (leading zeros) read as
 * another one and a long invalid one could pass.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alex.h"
#include "config.h"
#include "io.h"
#include "match.h"
#include "xts.h"

#define check(c) do { if (!(c)) abort(); } while (0)

#define MAX_INPUT 16384

enum kind { CHOICE, NUMBER, MATCH, STATS, POWERCUT, FAULT, REPORT, TRACE, FLAG, KEYFILE };

static const char *const levels[] = { "error", "warn", "info", "debug", NULL };
static const char *const modes[] = { "alex", "off", "trace", NULL };
static const char *const syncs[] = { "full", "normal", "off", NULL };
static const char *const comps[] = { "auto", "lz4", "off", NULL };
static const char *const hows[] = { "lose", "tear", "keep", NULL };
static const char *const classes[] = { "logwrite", "grow", "logsync", "ckptwrite", "ckptsync",
				       NULL };

enum { V_LOG, V_MODE, V_SYNC, V_COMPRESS, V_SYNC_MS, V_EXTENT_KB, V_MEMORY_KB,
	V_CHECKPOINT_MB, V_PREALLOC_MB, V_CHECKPOINT_ON_CLOSE, V_CRYPT_KB, V_MATCH, V_STATS,
	V_TEST_POWERCUT, V_TEST_FAULT, V_TEST_REPORT, V_KEY_FILE, V_DIRECT, V_TRACE, V_TRACE_ALL,
	V_CKPT_DIRECT, V_BASE_DELTA, V_CKPT_CARRY, NVARS };

/* man/libalex.7's table: accepted names or range, and the unit's shift */
static const struct var {
	const char *name;
	enum kind kind;
	const char *const *names;
	unsigned long long lo, hi;
	int shift;
} vars[NVARS] = {
	[V_LOG] = { "ALEX_LOG", CHOICE, levels, 0, 0, 0 },
	[V_MODE] = { "ALEX_MODE", CHOICE, modes, 0, 0, 0 },
	[V_SYNC] = { "ALEX_SYNC", CHOICE, syncs, 0, 0, 0 },
	[V_COMPRESS] = { "ALEX_COMPRESS", CHOICE, comps, 0, 0, 0 },
	[V_SYNC_MS] = { "ALEX_SYNC_MS", NUMBER, NULL, 1, 60000, 0 },
	[V_EXTENT_KB] = { "ALEX_EXTENT_KB", NUMBER, NULL, 4, 1048576, 10 },
	[V_MEMORY_KB] = { "ALEX_MEMORY_KB", NUMBER, NULL, 64, 1048576, 10 },
	[V_CHECKPOINT_MB] = { "ALEX_CHECKPOINT_MB", NUMBER, NULL, 1, 65536, 20 },
	[V_PREALLOC_MB] = { "ALEX_PREALLOC_MB", NUMBER, NULL, 1, 1024, 20 },
	[V_CHECKPOINT_ON_CLOSE] = { "ALEX_CHECKPOINT_ON_CLOSE", NUMBER, NULL, 0, 1, 0 },
	[V_CRYPT_KB] = { "ALEX_CRYPT_KB", NUMBER, NULL, 4, 65536, 10 },
	[V_MATCH] = { "ALEX_MATCH", MATCH, NULL, 0, 0, 0 },
	[V_STATS] = { "ALEX_STATS", STATS, NULL, 0, 0, 0 },
	[V_TEST_POWERCUT] = { "ALEX_TEST_POWERCUT", POWERCUT, hows, 0, 0, 0 },
	[V_TEST_FAULT] = { "ALEX_TEST_FAULT", FAULT, classes, 0, 0, 0 },
	[V_TEST_REPORT] = { "ALEX_TEST_REPORT", REPORT, NULL, 0, 0, 0 },
	[V_KEY_FILE] = { "ALEX_KEY_FILE", KEYFILE, NULL, 0, 0, 0 },
	[V_DIRECT] = { "ALEX_DIRECT", NUMBER, NULL, 0, 1, 0 },
	[V_CKPT_DIRECT] = { "ALEX_CKPT_DIRECT", NUMBER, NULL, 0, 1, 0 },
	[V_BASE_DELTA] = { "ALEX_BASE_DELTA", NUMBER, NULL, 0, 1, 0 },
	[V_CKPT_CARRY] = { "ALEX_CKPT_CARRY", NUMBER, NULL, 0, 1, 0 },
	[V_TRACE] = { "ALEX_TRACE", TRACE, NULL, 0, 0, 0 },
	[V_TRACE_ALL] = { "ALEX_TRACE_ALL", FLAG, NULL, 0, 1, 0 },
};

/* putenv, not setenv: glibc never frees a value setenv copied, and millions
 * of distinct values would grow without bound.  These are reused. */
static char env[NVARS][MAX_INPUT + 32];

/* The setting a variable controls, as a number. */
static uint64_t setting(int i)
{
	const struct alex_config *e = &alex_cfg.engine;

	switch (i) {
	case V_LOG: return alex_cfg.loglevel;
	case V_MODE: return alex_cfg.mode;
	case V_SYNC: return e->sync;
	case V_COMPRESS: return e->compress;
	case V_SYNC_MS: return e->sync_ms;
	case V_EXTENT_KB: return e->extent_bytes;
	case V_MEMORY_KB: return e->memory_bytes;
	case V_CHECKPOINT_MB: return e->checkpoint_bytes;
	case V_PREALLOC_MB: return e->prealloc_bytes;
	case V_CHECKPOINT_ON_CLOSE: return (uint64_t)e->checkpoint_on_close;
	case V_CRYPT_KB: return e->crypt_buffer_bytes;
	case V_DIRECT: return (uint64_t)e->direct;
	case V_CKPT_DIRECT: return (uint64_t)e->ckpt_direct;
	case V_BASE_DELTA: return (uint64_t)e->base_deltas;
	case V_CKPT_CARRY: return (uint64_t)e->ckpt_carry;
	}
	abort();
}

static uint64_t default_setting(int i)
{
	struct alex_config d;

	alex_config_default(&d);
	switch (i) {
	case V_LOG: return ALEX_MSG_WARN;
	case V_MODE: return ALEX_MODE_ON;
	case V_SYNC: return d.sync;
	case V_COMPRESS: return d.compress;
	case V_SYNC_MS: return d.sync_ms;
	case V_EXTENT_KB: return d.extent_bytes;
	case V_MEMORY_KB: return d.memory_bytes;
	case V_CHECKPOINT_MB: return d.checkpoint_bytes;
	case V_PREALLOC_MB: return d.prealloc_bytes;
	case V_CHECKPOINT_ON_CLOSE: return (uint64_t)d.checkpoint_on_close;
	case V_CRYPT_KB: return d.crypt_buffer_bytes;
	case V_DIRECT: return (uint64_t)d.direct;
	case V_CKPT_DIRECT: return (uint64_t)d.ckpt_direct;
	case V_BASE_DELTA: return (uint64_t)d.base_deltas;
	case V_CKPT_CARRY: return (uint64_t)d.ckpt_carry;
	}
	abort();
}

/* Reads the decimal digits at *p; 0 when there are none or they pass
 * 2^64-1. */
static int digits(const char **p, uint64_t *out)
{
	uint64_t n = 0;
	const char *s = *p;

	for (; **p >= '0' && **p <= '9'; (*p)++) {
		unsigned d = (unsigned)(**p - '0');
		if (n > (UINT64_MAX - d) / 10)
			return 0;
		n = n * 10 + d;
	}
	*out = n;
	return *p != s;
}

/* The index of the name the n bytes at s spell, or -1. */
static int name(const char *const *names, const char *s, size_t n)
{
	for (int k = 0; names[k]; k++)
		if (strlen(names[k]) == n && memcmp(names[k], s, n) == 0)
			return k;
	return -1;
}

/* 1 accepted (*x set), 0 invalid: digits only, in range (a leading blank
 * is refused too: it would let strtoull take a sign) */
static int number(const char *v, const struct var *d, uint64_t *x)
{
	const char *p = v;

	if (!digits(&p, x) || *p || *x < d->lo || *x > d->hi)
		return 0;
	return 1;
}

/* K[:lose|tear|keep[:SEED]] into *t (*seeded: SEED given); -1 for a SEED
 * past 2^64-1 */
static int powercut(const char *v, struct alex_test_cfg *t, int *seeded)
{
	const char *p = v;
	int k;

	t->how = ALEX_CRASH_LOSE;
	if (!digits(&p, &t->cut_at))
		return 0;
	if (!*p)
		return 1;
	if (*p++ != ':' || (k = name(hows, p, strcspn(p, ":"))) < 0)
		return 0;
	t->how = (enum alex_crash)k;
	p += strcspn(p, ":");
	if (!*p)
		return 1;
	p++;
	*seeded = 1;
	if (*p < '0' || *p > '9')
		return 0;
	if (!digits(&p, &t->seed))
		return p[strspn(p, "0123456789")] ? 0 : -1;
	return !*p;
}

/* CLASS:N[:eio|enospc|einval] into *t */
static int fault(const char *v, struct alex_test_cfg *t)
{
	size_t n = strcspn(v, ":");
	int k = name(classes, v, n);
	const char *p = v + n + 1;

	if (k < 0 || !v[n] || *p < '1' || *p > '9' || !digits(&p, &t->fault_at))
		return 0;
	t->fault_class = (enum alex_test_class)k;
	t->fault_err = EIO;
	if (!*p)
		return 1;
	if (strcmp(p, ":eio") == 0)
		return 1;
	t->fault_err = strcmp(p, ":einval") == 0 ? EINVAL : ENOSPC;
	return strcmp(p, ":enospc") == 0 || t->fault_err == EINVAL;
}

/*
 * ALEX_TRACE (and ALEX_MODE, ALEX_TRACE_ALL): tracing is on in trace mode,
 * or with ALEX_TRACE set in ALEX mode; the file is alex.trace by default,
 * made absolute against the directory; a path that does not fit is bad.
 * 1 accepted, 0 bad.
 */
static int trace(const char *const *val)
{
	const char *mode = val[V_MODE], *v = val[V_TRACE], *all = val[V_TRACE_ALL];
	uint64_t x = 0;
	char cwd[4096] = "", want[8300];

	if ((mode && strcmp(mode, "off") == 0) || (all && !number(all, &vars[V_TRACE_ALL], &x)) ||
	    (!(mode && strcmp(mode, "trace") == 0) && !v)) {
		check(alex_cfg.trace == 0);
		return 1;
	}
	const char *p = v ? v : "alex.trace";
	if (*p != '/' && !getcwd(cwd, sizeof cwd))
		cwd[0] = 0;
	snprintf(want, sizeof want, "%s%s%s", cwd, *cwd ? "/" : "", p);
	if (!*p || strlen(want) >= sizeof alex_cfg.trace_path)
		return 0;
	check(alex_cfg.trace == (x ? 2 : 1) && strcmp(alex_cfg.trace_path, want) == 0);
	return 1;
}

/* Checks the parsed globs against the value's pieces; 0 when the value is
 * not "up to 16 comma-separated globs, no '/', each under 128 bytes". */
/* What match.c must answer for a path: SQLite's suffix (-journal, -wal,
 * -shm) taken off, then fnmatch of the base name against each glob, as
 * man/libalex.7 says; its suffix shortcut must not change a single answer. */
static int glob_says(const char *path)
{
	static const char *const sfx[] = { "-journal", "-wal", "-shm" };
	char name[512];
	size_t k = strlen(path);

	for (int j = 0; j < 3; j++) {
		size_t n = strlen(sfx[j]);
		if (k > n && strcmp(path + k - n, sfx[j]) == 0) {
			k -= n;
			break;
		}
	}
	snprintf(name, sizeof name, "%.*s", (int)k, path);
	const char *b = strrchr(name, '/');
	b = b ? b + 1 : name;
	if (!*b || strlen(b) >= 256)
		return 0;
	for (int i = 0; i < alex_cfg.npatterns; i++)
		if (fnmatch(alex_cfg.patterns[i], b, 0) == 0)
			return 1;
	return 0;
}

/* Names near each glob: the glob's own text, with a prefix, cut short,
 * with the suffixes SQLite adds, in a directory, and a few fixed ones. */
static void match_names(void)
{
	static const char *const fixed[] = { "a.db", ".db", "db", "x.sqlite3", "/d/a.sqlite",
					     "/d/", "", "a.db-journal", "b.db-wal", "c.db-shm",
					     "a.db.bak", "A.DB", "*", "-wal", NULL };
	char name[512], dbp[512];

	for (int i = 0; fixed[i]; i++)
		check((alex_match(fixed[i], dbp, sizeof dbp) != ROLE_NONE) == glob_says(fixed[i]));
	for (int i = 0; i < alex_cfg.npatterns; i++) {
		const char *p = alex_cfg.patterns[i];
		const char *forms[] = { "%s", "x%s", "/tmp/%s", "%s.db", "%.3s", "%s-journal" };
		for (int j = 0; j < 6; j++) {
			snprintf(name, sizeof name, forms[j], p[0] == '*' && j != 4 ? p + 1 : p);
			check((alex_match(name, dbp, sizeof dbp) != ROLE_NONE) == glob_says(name));
		}
	}
}

static int match(const char *v, int compare)
{
	int n = 0;

	for (const char *p = v;; n++) {
		size_t len = strcspn(p, ",");
		if (len == 0 || len >= sizeof alex_cfg.patterns[0] || n == ALEX_MAX_PATTERNS ||
		    memchr(p, '/', len))
			return 0;
		if (compare)
			check(strlen(alex_cfg.patterns[n]) == len &&
			      memcmp(alex_cfg.patterns[n], p, len) == 0);
		if (!p[len])
			break;
		p += len + 1;
	}
	if (compare) {
		check(alex_cfg.npatterns == n + 1);
		match_names();
	}
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char in[MAX_INPUT + 1];
	const char *val[NVARS] = { 0 };

	if (size > MAX_INPUT)
		size = MAX_INPUT;
	memcpy(in, data, size);
	in[size] = 0;
	for (const char *f = in; f < in + size; f += strlen(f) + 1) {
		const char *eq = strchr(f, '=');
		size_t nlen = eq ? (size_t)(eq - f) : strlen(f);
		for (int i = 0; i < NVARS; i++)
			if (strlen(vars[i].name) == nlen && memcmp(vars[i].name, f, nlen) == 0)
				val[i] = eq ? eq + 1 : NULL;
	}
	for (int i = 0; i < NVARS; i++) {
		unsetenv(vars[i].name);
		if (val[i]) {
			snprintf(env[i], sizeof env[i], "%s=%s", vars[i].name, val[i]);
			putenv(env[i]);
		}
	}

	int rc = alex_config_load();
	int must_bad = 0, may_bad = 0;
	for (int i = 0; i < NVARS; i++) {
		const struct var *d = &vars[i];
		const char *v = val[i];
		const struct alex_test_cfg *t = &alex_cfg.test_cfg;
		struct alex_test_cfg want = { 0 };
		uint64_t x = 0;
		int ok = 1, seeded = 0;

		switch (d->kind) {
		case CHOICE:
			if (!v) {
				check(setting(i) == default_setting(i));
				break;
			}
			ok = 0;
			for (int k = 0; d->names[k]; k++)
				if (strcmp(v, d->names[k]) == 0) {
					check(setting(i) == (uint64_t)k);
					ok = 1;
				}
			break;
		case NUMBER:
			if (!v) {
				check(setting(i) == default_setting(i));
				break;
			}
			ok = number(v, d, &x);
			if (ok == 1)
				check(setting(i) == x << d->shift);
			break;
		case MATCH:
			ok = match(v ? v : "*.db,*.sqlite,*.sqlite3", 0);
			if (ok)
				match(v ? v : "*.db,*.sqlite,*.sqlite3", 1);
			break;
		case STATS:
			ok = !v || (*v && strlen(v) < sizeof alex_cfg.stats_path);
			if (ok)
				check(strcmp(alex_cfg.stats_path, v ? v : "") == 0);
			break;
		case POWERCUT:
			if (v && (ok = powercut(v, &want, &seeded)) == 1)
				check(t->cut_at == want.cut_at && t->how == want.how &&
				      (!seeded || t->seed == want.seed));
			break;
		case FAULT:
			if (v && (ok = fault(v, &want)) == 1)
				check(t->fault_class == want.fault_class &&
				      t->fault_at == want.fault_at && t->fault_err == want.fault_err);
			break;
		case REPORT:
			ok = !v || (*v && strlen(v) < sizeof t->report);
			if (ok)
				check(strcmp(t->report, v ? v : "") == 0);
			break;
		case KEYFILE: {
			/* good exactly when the file is a key; the engine gets it */
			struct alex_key *k = NULL;
			char why[256];
			ok = !v || (*v && alex_cfg.mode == ALEX_MODE_ON &&
				    alex_key_load(v, &k, why, sizeof why) == 0);
			alex_key_free(k);
			if (ok)
				check(!v == !alex_cfg.engine.key);
			break;
		}
		case TRACE:
			ok = trace(val);
			break;
		case FLAG:
			ok = !v || number(v, d, &x);
			break;
		}
		must_bad |= ok == 0;
		may_bad |= ok < 0;
	}
	/* either switch puts the engine's I/O under the test wrapper */
	check(alex_cfg.test == (val[V_TEST_POWERCUT] || val[V_TEST_FAULT]));
	if (must_bad)
		check(alex_cfg.bad);
	else if (!may_bad)
		check(!alex_cfg.bad);
	check(rc == (alex_cfg.bad ? -1 : 0));

	/* what the parser let through, the engine must take: a refusal there
	 * would fail every open with a confusing error instead of naming the
	 * variable */
	if (!alex_cfg.bad) {
		alex_mem *m = alex_mem_new();
		struct alex_io io = alex_mem_io(m);
		alex_db *db;
		int err = alex_open("/c.db", &alex_cfg.engine, &io, &db);
		check(err != ALEX_EINVAL);
		if (!err)
			alex_close(db);
		alex_mem_free(m);
	}
	return 0;
}
