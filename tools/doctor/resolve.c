/*
 * resolve.c - find the files the loader would map, as ld.so(8) says it
 * does, without running it (ldd runs the loader, and so the program's
 * constructors on some systems: the doctor must never do that).
 *
 * For a DT_NEEDED name without a slash, requested by object L:
 *   1. DT_RPATH of L and of the objects that loaded it, unless L has
 *      DT_RUNPATH (each one's RPATH counts only if it has no RUNPATH);
 *   2. LD_LIBRARY_PATH;
 *   3. DT_RUNPATH of L alone;
 *   4. /etc/ld.so.cache, then the default directories, unless L was
 *      linked with -z nodeflib.
 * $ORIGIN, $LIB and $PLATFORM are expanded.  Each candidate must be an
 * ELF of L's class and machine: the loader skips others and searches on.
 * Not modelled: glibc-hwcaps subdirectories, LD_PRELOAD, dlopen().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static const char *const default_dirs[] = {
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib", NULL
};

/* glibc 2.32+ writes only the new format; an old "ld.so-1.7.0" table may
 * come first in older caches, and the new table follows it aligned to 8. */
#define CACHE_OLD_MAGIC	"ld.so-1.7.0"
#define CACHE_NEW_MAGIC	"glibc-ld.so.cache1.1"
#define CACHE_NEW_HDR	48
#define CACHE_NEW_ENTRY	24
#define CACHE_OLD_ENTRY	12

static struct {
	bool loaded;
	char *buf;	/* the whole file */
	size_t len;
	size_t base;	/* offset of the new-format header: strings count from it */
	size_t nlibs;
} cache;

static uint32_t get32(const char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void cache_load(void)
{
	FILE *f = fopen("/etc/ld.so.cache", "re");
	size_t cap = 1 << 16, n;

	cache.loaded = true;
	if (!f)
		return;
	cache.buf = malloc(cap);
	while (cache.buf && (n = fread(cache.buf + cache.len, 1, cap - cache.len, f)) > 0) {
		char *bigger;

		cache.len += n;
		if (cache.len < cap)
			continue;
		bigger = cap < (64u << 20) ? realloc(cache.buf, cap * 2) : NULL;
		if (!bigger)
			break;
		cache.buf = bigger;
		cap *= 2;
	}
	fclose(f);
	if (!cache.buf)
		return;
	if (cache.len >= 16 && !memcmp(cache.buf, CACHE_OLD_MAGIC, 11)) {
		size_t old = get32(cache.buf + 12);

		cache.base = (16 + old * CACHE_OLD_ENTRY + 7) & ~(size_t)7;
	}
	if (cache.base + CACHE_NEW_HDR > cache.len ||
	    memcmp(cache.buf + cache.base, CACHE_NEW_MAGIC, 20) != 0)
		return;
	cache.nlibs = get32(cache.buf + cache.base + 20);
	if (cache.nlibs > (cache.len - cache.base - CACHE_NEW_HDR) / CACHE_NEW_ENTRY)
		cache.nlibs = 0;
}

/* A string of the cache at offset off from the new header, or NULL if
 * off points outside the file or the string is not terminated. */
static const char *cache_str(uint32_t off)
{
	size_t at = cache.base + off;

	if (at >= cache.len || !memchr(cache.buf + at, 0, cache.len - at))
		return NULL;
	return cache.buf + at;
}

static char *cache_find(const char *name, const GElf_Ehdr *want)
{
	if (!cache.loaded)
		cache_load();
	for (size_t i = 0; i < cache.nlibs; i++) {
		const char *e = cache.buf + cache.base + CACHE_NEW_HDR + i * CACHE_NEW_ENTRY;
		const char *key = cache_str(get32(e + 4));
		const char *value = cache_str(get32(e + 8));

		if (key && value && !strcmp(key, name) && dr_elf_compatible(value, want))
			return strdup(value);
	}
	return NULL;
}

/* The directory $ORIGIN stands for: where the object is.  The program's
 * is taken through symlinks as the kernel reports /proc/self/exe. */
static char *origin_of(const struct dr_obj *o)
{
	char *p = o->parent < 0 && !o->dlopened ? realpath(o->path, NULL) : strdup(o->path);
	char *slash;

	if (!p)
		return strdup(".");
	slash = strrchr(p, '/');
	if (!slash) {
		free(p);
		return strdup(".");
	}
	if (slash == p)
		slash[1] = 0;
	else
		*slash = 0;
	return p;
}

static const char *token_value(const char *s, size_t *skip, const char *origin)
{
	static const struct {
		const char *tok, *val;
	} t[] = {
		{ "${ORIGIN}", NULL }, { "$ORIGIN", NULL }, { "${LIB}", "lib/x86_64-linux-gnu" },
		{ "$LIB", "lib/x86_64-linux-gnu" }, { "${PLATFORM}", "x86_64" },
		{ "$PLATFORM", "x86_64" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		size_t n = strlen(t[i].tok);

		if (!strncmp(s, t[i].tok, n)) {
			*skip = n;
			return t[i].val ? t[i].val : origin;
		}
	}
	return NULL;
}

/* dir/name with the loader's dynamic string tokens expanded in dir. */
static char *join(const char *dir, size_t dlen, const char *name, const char *origin)
{
	/* no character of dir grows by more than the longest expansion */
	char *out = malloc(dlen * (strlen(origin) + 24) + strlen(name) + 4);
	size_t n = 0, skip;
	const char *v;

	if (!out)
		return NULL;
	if (dlen == 0)
		out[n++] = '.';
	for (size_t i = 0; i < dlen; i++) {
		v = dir[i] == '$' ? token_value(dir + i, &skip, origin) : NULL;
		if (v && i + skip <= dlen) {
			n += (size_t)sprintf(out + n, "%s", v);
			i += skip - 1;
		} else {
			out[n++] = dir[i];
		}
	}
	sprintf(out + n, "/%s", name);
	return out;
}

/* Search a ':'-separated list of directories ("" means the current one). */
static char *search_list(const char *list, const char *name, const struct dr_obj *l)
{
	char *origin;

	if (!list)
		return NULL;
	origin = origin_of(l);
	if (!origin)
		return NULL;
	for (const char *p = list;; p++) {
		size_t len = strcspn(p, ":;");
		char *cand = join(p, len, name, origin);

		if (cand && dr_elf_compatible(cand, &l->eh)) {
			free(origin);
			return cand;
		}
		free(cand);
		p += len;
		if (!*p)
			break;
	}
	free(origin);
	return NULL;
}

static char *search_rpaths(struct dr_ctx *c, const struct dr_obj *l, const char *name)
{
	char *found = NULL;

	if (l->runpath)
		return NULL;
	for (const struct dr_obj *o = l; o && !found;) {
		if (!o->runpath)
			found = search_list(o->rpath, name, o);
		o = o->parent >= 0 ? c->objs[o->parent] : NULL;
	}
	if (!found && l != c->objs[0] && !c->objs[0]->runpath)
		found = search_list(c->objs[0]->rpath, name, c->objs[0]);
	return found;
}

static char *search(struct dr_ctx *c, const struct dr_obj *l, const char *name)
{
	char *found;

	if (strchr(name, '/'))
		return strdup(name);
	found = search_rpaths(c, l, name);
	if (!found && !c->setuid && !c->setgid && !c->caps)
		found = search_list(getenv("LD_LIBRARY_PATH"), name, l);
	if (!found)
		found = search_list(l->runpath, name, l);
	if (found || l->nodeflib)
		return found;
	found = cache_find(name, &l->eh);
	for (size_t i = 0; !found && default_dirs[i]; i++)
		found = search_list(default_dirs[i], name, l);
	return found;
}

/* Already mapped: the loader matches a needed name against the names and
 * sonames of the objects it has, and a file against their inodes. */
static bool loaded(const struct dr_ctx *c, const char *name)
{
	for (size_t i = 0; i < c->nobjs; i++) {
		const struct dr_obj *o = c->objs[i];

		if (!strcmp(o->name, name) || (o->soname && !strcmp(o->soname, name)))
			return true;
	}
	return false;
}

/* Open path, learn all the doctor wants from it, and let the file go.
 * Returns its index, -1 on error (err says why), -2 when already loaded. */
int dr_add_obj(struct dr_ctx *c, const char *path, const char *name, int parent,
	       bool dlopened, char *err, size_t errlen)
{
	struct dr_obj *o;

	if (c->nobjs >= DR_MAX_OBJS) {
		snprintf(err, errlen, "more than %d objects", DR_MAX_OBJS);
		return -1;
	}
	o = dr_obj_open(path, name, parent, err, errlen);
	if (!o)
		return -1;
	for (size_t i = 0; i < c->nobjs; i++) {
		if (c->objs[i]->dev == o->dev && c->objs[i]->ino == o->ino) {
			dr_obj_free(o);
			return -2;
		}
	}
	o->dlopened = dlopened;
	dr_sqlite_scan(o);
	dr_go_scan(o);
	dr_obj_release(o);
	c->objs[c->nobjs] = o;
	return (int)c->nobjs++;
}

static void add_missing(struct dr_ctx *c, const char *name, int parent)
{
	for (size_t i = 0; i < c->nmissing; i++)
		if (!strcmp(c->missing[i].name, name))
			return;
	if (c->nmissing < sizeof(c->missing) / sizeof(c->missing[0])) {
		c->missing[c->nmissing].name = strdup(name);
		c->missing[c->nmissing++].parent = parent;
	}
}

/* musl's loader is its libc.so, and satisfies that name itself. */
static bool musl_libc(const struct dr_ctx *c, const char *name)
{
	const char *interp = c->objs[0]->interp;

	return !strcmp(name, "libc.so") && interp && strstr(interp, "ld-musl");
}

/* Breadth first from objs[first], as the loader maps them. */
void dr_load_deps(struct dr_ctx *c, size_t first)
{
	char err[256];
	int rc;

	for (size_t i = first; i < c->nobjs; i++) {
		struct dr_obj *l = c->objs[i];

		for (size_t j = 0; j < l->nneeded; j++) {
			const char *name = l->needed[j];
			char *path;

			if (loaded(c, name) || musl_libc(c, name))
				continue;
			path = search(c, l, name);
			rc = path ? dr_add_obj(c, path, name, (int)i, false, err, sizeof(err)) : -1;
			if (rc == -1)
				add_missing(c, name, (int)i);
			free(path);
		}
	}
}

/* PROGRAM as execvp(3) would find it: a name without a slash is looked up
 * in PATH.  NULL if there is no such executable. */
char *dr_find_program(const char *arg)
{
	const char *path = getenv("PATH");

	if (strchr(arg, '/'))
		return strdup(arg);
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path;; p++) {
		size_t len = strcspn(p, ":");
		char *cand = malloc(len + strlen(arg) + 3);
		struct stat st;

		if (!cand)
			return NULL;
		/* an empty entry is the current directory */
		sprintf(cand, "%.*s/%s", (int)(len ? len : 1), len ? p : ".", arg);
		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0)
			return cand;
		free(cand);
		p += len;
		if (!*p)
			break;
	}
	return NULL;
}
