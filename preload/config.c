/* config.c - ALEX_* environment variables (man/libalex.7). */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "xts.h"

struct alex_pconfig alex_cfg;

void alex_msg(enum alex_msglevel level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	if (level > alex_cfg.loglevel)
		return;
	n = snprintf(buf, sizeof buf, "libalex: ");
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof buf - 2)
		n = (int)sizeof buf - 2;
	buf[n++] = '\n';
	/* straight to the kernel: write() would be our own wrapper */
	syscall(SYS_write, 2, buf, (size_t)n);
}

/* One line on stderr whatever ALEX_LOG says, and every database open
 * fails: "libalex: VAR=VAL<what>; database files will not be opened". */
static int refuse(const char *var, const char *val, const char *what)
{
	char buf[PATH_MAX + 512];
	int n = snprintf(buf, sizeof buf, "libalex: %s=%s%s; database files will not be opened\n",
			 var, val, what);
	syscall(SYS_write, 2, buf, (size_t)(n < (int)sizeof buf ? n : (int)sizeof buf - 1));
	alex_cfg.bad = 1;
	return -1;
}

static int bad(const char *var, const char *val, const char *accepted)
{
	char what[300];
	snprintf(what, sizeof what, " is invalid (accepted: %s)", accepted);
	return refuse(var, val, what);
}

/* ALEX_KEY_FILE: the key is loaded here, once, and every database of the
 * program is encrypted with it (docs/ENCRYPTION.md).  A key file that
 * cannot be used stops every database from opening: data in clear where
 * encryption was asked for is the one outcome worse than no database. */
static void key_settings(void)
{
	static struct alex_key *key;
	const char *path = getenv("ALEX_KEY_FILE");
	char why[256];

	alex_cfg.engine.key = NULL;
	alex_key_free(key);
	key = NULL;
	alex_cfg.key_asked = path != NULL;
	if (!path)
		return;
	if (!*path) {
		bad("ALEX_KEY_FILE", path, "the path of a key file");
		return;
	}
	if (alex_cfg.mode != ALEX_MODE_ON) {
		/* off and trace pass SQLite's writes through: in clear */
		bad("ALEX_KEY_FILE", path, "unset, or ALEX_MODE=alex: the other modes write in clear");
		return;
	}
	if (alex_key_load(path, &key, why, sizeof why)) {
		char what[sizeof why + 2];
		snprintf(what, sizeof what, ": %s", why);
		refuse("ALEX_KEY_FILE", path, what);
		return;
	}
	alex_cfg.engine.key = key;
}

static int choice(const char *var, const char *const *names, int n, int *out)
{
	const char *v = getenv(var);
	char accepted[256] = "";

	if (!v)
		return 0;
	for (int i = 0; i < n; i++) {
		if (strcmp(v, names[i]) == 0) {
			*out = i;
			return 0;
		}
		snprintf(accepted + strlen(accepted), sizeof accepted - strlen(accepted), "%s%s",
			 i ? ", " : "", names[i]);
	}
	return bad(var, v, accepted);
}

/* A whole number in [lo, hi] (no sign, no suffix, no trailing junk). */
static int number(const char *var, unsigned long long lo, unsigned long long hi,
		  unsigned long long *out)
{
	const char *v = getenv(var);
	char accepted[128], *end;

	if (!v)
		return 0;
	snprintf(accepted, sizeof accepted, "a whole number from %llu to %llu", lo, hi);
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	/* strtoull would skip blanks and then take a sign: " -1" is 2^64-1 */
	if (*v < '0' || *v > '9' || *end || errno || x < lo || x > hi)
		return bad(var, v, accepted);
	*out = x;
	return 0;
}

static int patterns(void)
{
	const char *v = getenv("ALEX_MATCH");
	const char *def = "*.db,*.sqlite,*.sqlite3";
	const char *p = v ? v : def;

	alex_cfg.npatterns = 0;
	while (*p) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (len == 0 || len >= sizeof alex_cfg.patterns[0] ||
		    alex_cfg.npatterns == ALEX_MAX_PATTERNS || memchr(p, '/', len))
			return bad("ALEX_MATCH", v, "up to 16 comma-separated file name globs, "
					       "no '/', each under 128 bytes");
		char *pat = alex_cfg.patterns[alex_cfg.npatterns];
		memcpy(pat, p, len);
		pat[len] = 0;
		alex_cfg.suffix[alex_cfg.npatterns++] =
			pat[0] == '*' && !strpbrk(pat + 1, "*?[\\") ? (unsigned char)len : 0;
		p += len + (comma ? 1 : 0);
		if (comma && !*p)
			return bad("ALEX_MATCH", v, "no empty pattern");
	}
	if (!alex_cfg.npatterns)
		return bad("ALEX_MATCH", v ? v : "", "at least one glob");
	return 0;
}

#ifdef ALEX_TESTING
/*
 * The test switches (io_test.c), documented as such in libalex.7.  They
 * exist only in libalex-test.so: the shipped library has no code that
 * could roll files back or exit the program, whatever the environment says.
 * ALEX_TEST_POWERCUT=K[:lose|tear|keep[:SEED]] cuts the power at the Kth
 * mutating call (0 only counts), ALEX_TEST_FAULT=CLASS:N[:eio|enospc|einval] fails
 * the Nth call of CLASS, ALEX_TEST_REPORT=FILE gets a line per event,
 * ALEX_TEST_RECORD=FILE gets every change to the database's files.
 */
/* Copies v into buf and splits it at its first two ':' into *second and
 * *third (NULL when absent).  0 if v does not fit: cut short, a long value
 * would read as another one. */
static int fields(const char *v, char *buf, size_t cap, char **second, char **third)
{
	int fits = strlen(v) < cap;

	snprintf(buf, cap, "%s", v);
	*second = strchr(buf, ':');
	if (*second)
		*(*second)++ = 0;
	*third = *second ? strchr(*second, ':') : NULL;
	if (*third)
		*(*third)++ = 0;
	return fits;
}

static void test_settings(void)
{
	static const char *const hows[] = { "lose", "tear", "keep" };
	struct alex_test_cfg *t = &alex_cfg.test_cfg;
	const char *v;
	char buf[128], *end;

	memset(t, 0, sizeof *t);
	alex_cfg.test = 0;
	if ((v = getenv("ALEX_TEST_POWERCUT"))) {
		char *how, *seed;
		int ok = fields(v, buf, sizeof buf, &how, &seed);
		errno = 0;
		t->cut_at = strtoull(buf, &end, 10);
		ok = ok && *buf >= '0' && *buf <= '9' && !*end && !errno;
		t->how = ALEX_CRASH_LOSE;
		if (ok && how) {
			ok = 0;
			for (int i = 0; i < 3; i++)
				if (strcmp(how, hows[i]) == 0) {
					t->how = (enum alex_crash)i;
					ok = 1;
				}
		}
		if (ok && seed) {
			errno = 0;
			t->seed = strtoull(seed, &end, 10);
			ok = *seed >= '0' && *seed <= '9' && !*end && !errno;
		}
		if (!ok)
			bad("ALEX_TEST_POWERCUT", v, "K[:lose|tear|keep[:SEED]], K a whole number");
		alex_cfg.test = 1;
	}
	if ((v = getenv("ALEX_TEST_FAULT"))) {
		char *n, *e;
		int fits = fields(v, buf, sizeof buf, &n, &e);
		t->fault_err = !e || strcmp(e, "eio") == 0 ? EIO
			       : strcmp(e, "enospc") == 0 ? ENOSPC
			       : strcmp(e, "einval") == 0 ? EINVAL /* a refused direct write */
							  : 0;
		errno = 0;
		t->fault_at = n ? strtoull(n, &end, 10) : 0;
		if (!fits || !n || alex_test_class_parse(buf, &t->fault_class) ||
		    !(*n >= '1' && *n <= '9') ||
		    *end || errno || !t->fault_err)
			bad("ALEX_TEST_FAULT", v, "CLASS:N[:eio|enospc|einval], CLASS one of logwrite, grow, "
						  "logsync, ckptwrite, ckptsync, N from 1");
		alex_cfg.test = 1;
	}
	if ((v = getenv("ALEX_TEST_REPORT"))) {
		if (!*v || strlen(v) >= sizeof t->report)
			bad("ALEX_TEST_REPORT", v, "a file path");
		else
			strcpy(t->report, v);
	}
	if ((v = getenv("ALEX_TEST_RECORD"))) {
		if (!*v || strlen(v) >= sizeof t->record)
			bad("ALEX_TEST_RECORD", v, "a file path");
		else
			strcpy(t->record, v);
		alex_cfg.test = 1;
	}
	unsigned long long us = 0;
	alex_cfg.test_merge_us = number("ALEX_TEST_MERGE_US", 0, 1000000, &us) ? 0 : (unsigned)us;
	us = 0;
	alex_cfg.test_close_us = number("ALEX_TEST_CLOSE_US", 0, 10000000, &us) ? 0 : (unsigned)us;
	unsigned long long alone = 0;
	alex_cfg.test_span_alone = number("ALEX_TEST_SPAN_ALONE", 0, 1, &alone) ? 0 : (int)alone;
}
#endif

/* The engine's settings (struct alex_config) from the environment. */
static void engine_settings(struct alex_config *e)
{
	static const char *const syncs[] = { "full", "normal", "off" };
	static const char *const comps[] = { "auto", "lz4", "off" };
	unsigned long long x;
	int v = 0;

	alex_config_default(e);
	e->db_only = 1; /* the journal lives in memory, the WAL is SQLite's */
	if (!choice("ALEX_SYNC", syncs, 3, &v))
		e->sync = (enum alex_sync)v;
	v = 0;
	if (!choice("ALEX_COMPRESS", comps, 3, &v))
		e->compress = (enum alex_compress)v;
	x = e->sync_ms;
	if (!number("ALEX_SYNC_MS", 1, 60000, &x))
		e->sync_ms = (unsigned)x;
	x = e->extent_bytes >> 10;
	if (!number("ALEX_EXTENT_KB", 4, 1048576, &x))
		e->extent_bytes = x << 10;
	x = e->memory_bytes >> 10;
	if (!number("ALEX_MEMORY_KB", 64, 1048576, &x))
		e->memory_bytes = x << 10;
	x = e->checkpoint_bytes >> 20;
	if (!number("ALEX_CHECKPOINT_MB", 1, 65536, &x))
		e->checkpoint_bytes = x << 20;
	x = 0; /* the default is less than a MiB */
	if (!number("ALEX_PREALLOC_MB", 1, 1024, &x) && x)
		e->prealloc_bytes = x << 20;
	x = (unsigned long long)e->checkpoint_on_close;
	if (!number("ALEX_CHECKPOINT_ON_CLOSE", 0, 1, &x))
		e->checkpoint_on_close = (int)x;
	/* FULL mode's records past the page cache, in sectors (format.h) */
	x = (unsigned long long)e->direct;
	if (!number("ALEX_DIRECT", 0, 1, &x))
		e->direct = (int)x;
	/* a checkpoint's partly changed pages by their sectors (ckpt.c) */
	x = (unsigned long long)e->ckpt_direct;
	if (!number("ALEX_CKPT_DIRECT", 0, 1, &x))
		e->ckpt_direct = (int)x;
	/* FULL mode's checkpoint off the commit path (format 10) */
	x = (unsigned long long)e->ckpt_carry;
	if (!number("ALEX_CKPT_CARRY", 0, 1, &x))
		e->ckpt_carry = (int)x;
	/* a page no record of the epoch holds, logged as its changes to
	 * the database file's page (format 9) */
	x = (unsigned long long)e->base_deltas;
	if (!number("ALEX_BASE_DELTA", 0, 1, &x))
		e->base_deltas = (int)x;
	/* with a key: the database file's writes are encrypted through a
	 * buffer of this size, one per database, never more (the seed's
	 * bounded bounce memory) */
	x = e->crypt_buffer_bytes >> 10;
	if (!number("ALEX_CRYPT_KB", 4, 65536, &x))
		e->crypt_buffer_bytes = x << 10;
	/* nothing beside the database at rest, unless the user keeps the log
	 * for many short-lived processes (man/libalex.7) */
	x = 0;
	if (!number("ALEX_KEEP_LOG", 0, 1, &x))
		e->remove_log = !x;
	/* NORMAL's commits through a staging log beside the database, merged
	 * once per window (docs/STAGING.md): on unless turned off */
	x = 1;
	if (!number("ALEX_STAGE", 0, 1, &x))
		alex_cfg.stage = (int)x;
	/* SQLite's lock calls of a transaction answered under one write lock
	 * over its lock bytes while no other process with ALEX has the
	 * database open (locks.c): on unless turned off */
	x = 1;
	if (!number("ALEX_SPAN_LOCK", 0, 1, &x))
		alex_cfg.span_lock = (int)x;
	/* a stat of a database by its name answered from memory while
	 * inotify has seen no change (watch.c): on unless turned off */
	x = 1;
	if (!number("ALEX_NAME_WATCH", 0, 1, &x))
		alex_cfg.name_watch = (int)x;
	/* the queue's look a load from memory, through an io_uring poll
	 * (ring.c): on unless turned off */
	x = 1;
	if (!number("ALEX_NAME_RING", 0, 1, &x))
		alex_cfg.name_ring = (int)x;
	/* the last close's wait for another process's read transaction
	 * (serve.c: alex_serve_close_wait) */
	x = 100;
	if (!number("ALEX_CLOSE_WAIT_MS", 0, 10000, &x))
		alex_cfg.close_wait_ms = (unsigned)x;
}

/* ALEX_MODE=trace, or ALEX_TRACE=FILE in ALEX mode: the tracing mode
 * (trace.c).  The path is made absolute now: the program may change its
 * directory before the first chunk is written. */
static void trace_settings(void)
{
	const char *v = getenv("ALEX_TRACE");
	unsigned long long all = 0;

	alex_cfg.trace = 0;
	alex_cfg.trace_path[0] = 0;
	if (number("ALEX_TRACE_ALL", 0, 1, &all) || (alex_cfg.mode != ALEX_MODE_TRACE && !v) ||
	    alex_cfg.mode == ALEX_MODE_OFF)
		return;
	if (!v)
		v = "alex.trace";
	char cwd[4096] = "";
	if (*v != '/' && !getcwd(cwd, sizeof cwd))
		cwd[0] = 0;
	int n = snprintf(alex_cfg.trace_path, sizeof alex_cfg.trace_path, "%s%s%s", cwd,
			 *cwd ? "/" : "", v);
	if (!*v || n >= (int)sizeof alex_cfg.trace_path) {
		bad("ALEX_TRACE", v, "a file path");
		return;
	}
	alex_cfg.trace = all ? 2 : 1;
}

int alex_config_load(void)
{
	static const char *const modes[] = { "alex", "off", "trace" };
	static const char *const levels[] = { "error", "warn", "info", "debug" };
	int v = ALEX_MSG_WARN;

	alex_cfg.bad = 0;
	choice("ALEX_LOG", levels, 4, &v);
	alex_cfg.loglevel = (enum alex_msglevel)v;
	v = 0;
	choice("ALEX_MODE", modes, 3, &v);
	alex_cfg.mode = (enum alex_mode)v;
	engine_settings(&alex_cfg.engine);
	patterns();
	const char *s = getenv("ALEX_STATS");
	alex_cfg.stats_path[0] = 0;
	if (s) {
		if (!*s || strlen(s) >= sizeof alex_cfg.stats_path)
			bad("ALEX_STATS", s, "a file path");
		else
			strcpy(alex_cfg.stats_path, s);
	}
	trace_settings();
	key_settings();
#ifdef ALEX_TESTING
	test_settings();
#endif
	return alex_cfg.bad ? -1 : 0;
}
