/*
 * sqlite.c - is there a copy of SQLite in this object, which version,
 * built with which options; and for Python, the _sqlite3 module that
 * `import sqlite3` would dlopen, which no DT_NEEDED names.
 *
 * A copy is an object that defines sqlite3_open_v2 (or _sourceid or
 * _libversion), or, once stripped, holds SQLite's source id string and
 * imports no sqlite3_* itself: the sqlite3 shell quotes the source id to
 * compare it with its library's, and is not a copy.
 */
#include <ctype.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* SQLite records its compile options (PRAGMA compile_options) as strings
 * without the SQLITE_ prefix, next to each other in .rodata.  A string is
 * taken for one only if it starts as an option does. */
static const char *const opt_prefix[] = {
	"ENABLE_", "OMIT_", "DEFAULT_", "MAX_", "DISABLE_", "HAVE_", "USE_", "MUTEX_",
	"THREADSAFE=", "COMPILER=", "TEMP_STORE=", "SYSTEM_MALLOC", "SECURE_DELETE", "DQS=",
	"ATOMIC_INTRINSICS=", "MALLOC_SOFT_LIMIT=", "LIKE_DOESNT_MATCH_BLOBS",
	"DIRECT_OVERFLOW_READ", "SOUNDEX", "DEBUG", "MEMDEBUG", "ZERO_MALLOC", "WIN32_MALLOC",
	"4_BYTE_ALIGNED_MALLOC", "64BIT_STATS", "CASE_SENSITIVE_LIKE", "CHECK_PAGES",
	"COVERAGE_TEST", "EXTRA_", "FTS", "INT64_TYPE", "IGNORE_", "LOCK_TRACE", "MEMORY_",
	"MIXED_ENDIAN_64BIT_FLOAT", "NO_SYNC", "PCACHE_", "PERFORMANCE_TRACE",
	"POWERSAFE_OVERWRITE", "PREFER_PROXY_LOCKING", "PROXY_DEBUG",
	"REVERSE_UNORDERED_SELECTS", "RTREE_INT_ONLY", "SMALL_STACK", "SORTER_PMASZ",
	"STAT4_SAMPLES", "STMTJRNL_SPILL", "SUBSTR_COMPATIBILITY", "TCL", "TEST",
	"UNLINK_AFTER_CLOSE", "UNTESTABLE", "USER_AUTHENTICATION", "WSD",
	"MINIMUM_FILE_DESCRIPTOR", "STRICT_SUBTYPE", "TRUSTED_SCHEMA", "ALLOW_", "LEGACY_",
	"BUG_COMPATIBLE_", "ZIPVFS", NULL
};

#define MAX_VERS	16
/* Gaps of NULs between neighbouring strings are alignment, not more. */
#define MAX_PAD		16

struct scan {
	bool symbols;
	char version[24];	/* from the sqlite3_version symbol */
	const char *sid;
	size_t sidlen;
	const char *vers[MAX_VERS];
	size_t nvers;
	const char *base, *anchor;	/* the options' section and one option */
	size_t baselen;
	bool anchor_strong;	/* THREADSAFE=, which every build records */
};

static bool is_option(const char *s, size_t room)
{
	size_t len = strnlen(s, room), i;

	if (len < 3 || len >= room || len > 120)
		return false;
	for (i = 0; i < len && s[i] != '='; i++)
		if (!isupper((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && s[i] != '_')
			return false;
	for (; i < len; i++)
		if (!isgraph((unsigned char)s[i]))
			return false;
	for (i = 0; opt_prefix[i]; i++)
		if (!strncmp(s, opt_prefix[i], strlen(opt_prefix[i])))
			return true;
	return false;
}

/* "2022-12-28 14:03:47 " and 40 or more hash characters: SQLITE_SOURCE_ID
 * (a modified build ends its hash in "alt1", so letters are allowed). */
static bool is_source_id(const char *s, size_t len)
{
	static const char pat[] = "2ddd-dd-dd dd:dd:dd ";
	size_t i;

	if (len < 60 || len > 100)
		return false;
	for (i = 0; i < 20; i++) {
		if (pat[i] == 'd' ? !isdigit((unsigned char)s[i]) : s[i] != pat[i])
			return false;
	}
	for (; i < len; i++)
		if (!isdigit((unsigned char)s[i]) && !islower((unsigned char)s[i]))
			return false;
	return true;
}

/* "3.40.1" (or "3.8.11.1") alone as a string: sqlite3_version. */
static bool is_version(const char *s, size_t len)
{
	int dots = 0;

	if (len < 5 || len > 12 || s[0] != '3' || s[1] != '.')
		return false;
	for (size_t i = 2; i < len; i++) {
		if (s[i] == '.' && s[i - 1] != '.' && ++dots <= 2)
			continue;
		if (!isdigit((unsigned char)s[i]))
			return false;
	}
	return dots >= 1 && s[len - 1] != '.';
}

static void check_string(struct scan *sc, const char *base, size_t n, const char *s, size_t len)
{
	bool strong;

	if (!sc->sid && is_source_id(s, len)) {
		sc->sid = s;
		sc->sidlen = len;
	} else if (sc->nvers < MAX_VERS && is_version(s, len)) {
		sc->vers[sc->nvers++] = s;
	} else if (!sc->anchor_strong && is_option(s, (size_t)(base + n - s))) {
		strong = !strncmp(s, "THREADSAFE=", 11);
		if (!strong && (sc->anchor || strncmp(s, "COMPILER=", 9)))
			return;
		sc->anchor = s;
		sc->anchor_strong = strong;
		sc->base = base;
		sc->baselen = n;
	}
}

/* Strings are printable: a table of bytes may run into a string with no
 * NUL between them (SQLite's first compile option follows one). */
static bool printable(char ch)
{
	return (unsigned char)ch >= 0x20 && (unsigned char)ch < 0x7f;
}

static void rodata_cb(const char *p, size_t n, void *arg)
{
	size_t i = 0;

	while (i < n) {
		const char *s = p + i;
		const char *end = memchr(s, 0, n - i);
		size_t len = end ? (size_t)(end - s) : n - i;
		size_t from = len;

		while (from > 0 && printable(s[from - 1]))
			from--;
		if (end && from < len)
			check_string(arg, p, n, s + from, len - from);
		i += len + 1;
	}
}

static void sym_cb(struct dr_obj *o, const char *name, const GElf_Sym *s, void *arg)
{
	struct scan *sc = arg;
	const char *p;
	size_t avail = 0;

	if (s->st_shndx == SHN_UNDEF)
		return;
	if (!strcmp(name, "Py_BytesMain") || !strcmp(name, "Py_Initialize"))
		o->python = true;
	if (GELF_ST_TYPE(s->st_info) == STT_FUNC &&
	    (!strcmp(name, "sqlite3_open_v2") || !strcmp(name, "sqlite3_sourceid") ||
	     !strcmp(name, "sqlite3_libversion")))
		sc->symbols = true;
	if (strcmp(name, "sqlite3_version") || !s->st_size || s->st_size >= sizeof(sc->version))
		return;
	p = dr_elf_vaddr(o, s->st_value, &avail);
	if (p && avail >= s->st_size && is_version(p, strnlen(p, s->st_size)))
		memcpy(sc->version, p, s->st_size);
}

/* The string before s in [base, base + n), or NULL. */
static const char *prev_string(const char *base, const char *s)
{
	const char *e = s - 1;
	int pad = 0;

	if (s <= base)
		return NULL;
	while (e > base && e[-1] == 0 && ++pad < MAX_PAD)
		e--;
	if (e <= base || e[-1] == 0)
		return NULL;
	while (e > base && printable(e[-1]))
		e--;
	return e;
}

static const char *next_string(const char *base, size_t n, const char *s)
{
	const char *e = s + strnlen(s, (size_t)(base + n - s));
	int pad = 0;

	while (e < base + n && *e == 0 && pad++ < MAX_PAD)
		e++;
	return e < base + n && *e ? e : NULL;
}

static void add_opt(struct dr_sqlite *sq, const char *s)
{
	if (sq->nopts < DR_MAX_OPTS)
		sq->opts[sq->nopts++] = strdup(s);
}

/* The options around the anchor, in the order they are stored. */
static void collect_opts(struct dr_sqlite *sq, const struct scan *sc)
{
	const char *s = sc->anchor, *first = sc->anchor, *end = sc->base + sc->baselen;
	size_t n = 0;

	while ((s = prev_string(sc->base, s)) && is_option(s, (size_t)(end - s)) &&
	       n++ < DR_MAX_OPTS)
		first = s;
	for (s = first; s && is_option(s, (size_t)(end - s));
	     s = next_string(sc->base, sc->baselen, s))
		add_opt(sq, s);
}

/* The version string nearest the source id: both are literals of the
 * same file of SQLite, usually placed close together. */
static void pick_version(struct dr_sqlite *sq, const struct scan *sc)
{
	const char *best = NULL;
	size_t bestd = (size_t)-1;

	if (sc->version[0]) {
		snprintf(sq->version, sizeof(sq->version), "%s", sc->version);
		return;
	}
	for (size_t i = 0; i < sc->nvers; i++) {
		const char *v = sc->vers[i];
		size_t d = 0;

		if (sc->sid)
			d = v > sc->sid ? (size_t)(v - sc->sid) : (size_t)(sc->sid - v);

		if (d < bestd) {
			best = v;
			bestd = d;
		}
	}
	if (best)
		snprintf(sq->version, sizeof(sq->version), "%s", best);
}

void dr_sqlite_scan(struct dr_obj *o)
{
	struct scan sc = { 0 };

	dr_elf_each_sym(o, sym_cb, &sc);
	dr_elf_each_rodata(o, rodata_cb, &sc);
	if (!sc.symbols && (!sc.sid || o->imp_sqlite))
		return;
	o->sq = calloc(1, sizeof(*o->sq));
	if (!o->sq)
		return;
	o->sq->symbols = sc.symbols;
	if (sc.sid)
		snprintf(o->sq->source_id, sizeof(o->sq->source_id), "%.*s", (int)sc.sidlen,
			 sc.sid);
	pick_version(o->sq, &sc);
	if (sc.anchor)
		collect_opts(o->sq, &sc);
}

/* "3.11" from "python3.11" or "libpython3.11.so.1.0"; "3.*" if neither. */
static void python_version(const char *name, char *ver, size_t len)
{
	const char *p = strstr(name, "python3.");
	size_t n;

	if (!p)
		return;
	p += 6;
	n = 2 + strspn(p + 2, "0123456789");
	if (n > 2 && n < len)
		snprintf(ver, len, "%.*s", (int)n, p);
}

/* Returns whether prefix has a Python of that version at all. */
static bool glob_modules(struct dr_ctx *c, const char *prefix, const char *ver)
{
	char pat[PATH_MAX + 64], err[256];
	glob_t g;
	int idx;

	snprintf(pat, sizeof(pat), "%s/lib/python%s/lib-dynload", prefix, ver);
	if (glob(pat, GLOB_ONLYDIR, NULL, &g) != 0)
		return false;
	globfree(&g);
	snprintf(pat, sizeof(pat), "%s/lib/python%s/lib-dynload/_sqlite3*.so", prefix, ver);
	if (glob(pat, 0, NULL, &g) != 0)
		return true;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *base = strrchr(g.gl_pathv[i], '/') + 1;

		idx = dr_add_obj(c, g.gl_pathv[i], base, 0, true, err, sizeof(err));
		if (idx >= 0)
			dr_load_deps(c, (size_t)idx);
		else if (idx == -1)
			dr_note(c, "python module %s: %s", g.gl_pathv[i], err);
	}
	globfree(&g);
	return true;
}

/* A Python interpreter loads SQLite only on `import sqlite3`, through
 * lib-dynload/_sqlite3*.so beside its standard library: <prefix>/lib/
 * pythonX.Y/ where the interpreter is <prefix>/bin/pythonX.Y. */
void dr_python_modules(struct dr_ctx *c)
{
	char ver[16] = "3.*", *real, *slash;
	bool py = false;
	size_t n = c->nobjs;

	for (size_t i = 0; i < n; i++) {
		if (c->objs[i]->python || !strncmp(c->objs[i]->name, "libpython3.", 11))
			py = true;
		if (!strncmp(c->objs[i]->name, "libpython3.", 11))
			python_version(c->objs[i]->name, ver, sizeof(ver));
	}
	if (!py)
		return;
	real = realpath(c->path, NULL);
	if (!real)
		return;
	python_version(strrchr(real, '/') + 1, ver, sizeof(ver));
	for (int up = 0; up < 2 && (slash = strrchr(real, '/')); up++)
		*slash = 0;
	/* sys.prefix is where the interpreter is; the others only if no
	 * standard library is there (a copied or relocated binary) */
	if (!glob_modules(c, real, ver) && !glob_modules(c, "/usr/local", ver) &&
	    !glob_modules(c, "/usr", ver))
		dr_note(c, "python: no lib-dynload directory found for python%s", ver);
	free(real);
}
