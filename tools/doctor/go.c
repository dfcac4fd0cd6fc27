/*
 * go.c - a Go program's build information (.go.buildinfo), as
 * `go version -m` prints it: the Go version, whether cgo was on, and the
 * SQLite driver module it was built with.
 *
 * Why it matters: Go's runtime makes its system calls itself, never
 * through libc, so LD_PRELOAD reaches SQLite only when SQLite is C code
 * linked in through cgo (mattn/go-sqlite3 and the like), never when it is
 * SQLite translated to Go (modernc.org/sqlite) or run as WebAssembly.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define BUILDINFO_MAGIC	"\xff Go buildinf:"
#define BUILDINFO_HDR	32

static const struct {
	const char *path;
	bool pure;
} drivers[] = {
	{ "github.com/mattn/go-sqlite3", false },
	{ "crawshaw.io/sqlite", false },
	{ "github.com/gwenn/gosqlite", false },
	{ "github.com/bvinc/go-sqlite-lite", false },
	{ "github.com/eatonphil/gosqlite", false },
	{ "modernc.org/sqlite", true },
	{ "gitlab.com/cznic/sqlite", true },
	{ "github.com/glebarez/go-sqlite", true },
	{ "github.com/ncruces/go-sqlite3", true },
	{ "zombiezen.com/go/sqlite", true },
};

/* A uvarint-prefixed string (Go 1.18+ layout); advances *p. */
static bool varstr(const char **p, const char *end, const char **s, size_t *len)
{
	uint64_t v = 0;
	int shift = 0;

	while (*p < end && shift < 64) {
		unsigned char b = (unsigned char)*(*p)++;

		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (v > (uint64_t)(end - *p))
				return false;
			*s = *p;
			*len = v;
			*p += v;
			return true;
		}
	}
	return false;
}

static uint64_t get_ptr(const char *p, int size, bool big)
{
	uint64_t v = 0;

	for (int i = 0; i < size; i++) {
		unsigned char b = (unsigned char)p[big ? i : size - 1 - i];

		v = v << 8 | b;
	}
	return v;
}

/* Before Go 1.18 the header holds pointers to two Go string headers. */
static bool old_strings(const struct dr_obj *o, const char *h, const char *s[2], size_t len[2])
{
	int ps = (unsigned char)h[14];
	bool big = h[15] & 1;
	size_t avail;

	if (ps != 4 && ps != 8)
		return false;
	for (int i = 0; i < 2; i++) {
		const char *hdr = dr_elf_vaddr(o, get_ptr(h + 16 + i * ps, ps, big), &avail);

		if (!hdr || avail < (size_t)ps * 2)
			return false;
		s[i] = dr_elf_vaddr(o, get_ptr(hdr, ps, big), &avail);
		len[i] = get_ptr(hdr + ps, ps, big);
		if (!s[i] || len[i] > avail)
			return false;
	}
	return true;
}

static void driver(struct dr_go *g, const char *path, size_t plen, const char *ver, size_t vlen)
{
	for (size_t i = 0; i < sizeof(drivers) / sizeof(drivers[0]); i++) {
		if (strlen(drivers[i].path) != plen || strncmp(drivers[i].path, path, plen))
			continue;
		/* a cgo driver wins: with one, SQLite's C code is in the program */
		if (g->sqlite_mod && !g->sqlite_pure)
			return;
		free(g->sqlite_mod);
		g->sqlite_mod = malloc(plen + vlen + 2);
		if (g->sqlite_mod)
			sprintf(g->sqlite_mod, "%.*s %.*s", (int)plen, path, (int)vlen, ver);
		g->sqlite_pure = drivers[i].pure;
	}
}

static bool field_is(const char *f, size_t len, const char *word)
{
	return len == strlen(word) && !strncmp(f, word, len);
}

/* One line of the module information: "dep\tPATH\tVERSION\tSUM",
 * "path\tMAIN", "build\tCGO_ENABLED=1". */
static void mod_line(struct dr_go *g, const char *l, size_t n)
{
	const char *f[4], *end = l + n;
	size_t fl[4];
	int nf = 0;

	while (nf < 4) {
		const char *t = memchr(l, '\t', (size_t)(end - l));

		f[nf] = l;
		fl[nf++] = (size_t)((t ? t : end) - l);
		if (!t)
			break;
		l = t + 1;
	}
	if (nf < 2)
		return;
	if (field_is(f[0], fl[0], "path") && !g->main_path)
		g->main_path = strndup(f[1], fl[1]);
	else if (field_is(f[0], fl[0], "dep") && nf >= 3)
		driver(g, f[1], fl[1], f[2], fl[2]);
	else if (field_is(f[0], fl[0], "build") && fl[1] == 13 &&
		 !strncmp(f[1], "CGO_ENABLED=", 12))
		g->cgo = f[1][12] == '1';
}

static void parse_modinfo(struct dr_go *g, const char *s, size_t len)
{
	/* the text sits between two 16-byte sentinels */
	if (len >= 33 && s[len - 17] == '\n') {
		s += 16;
		len -= 32;
	}
	while (len) {
		const char *nl = memchr(s, '\n', len);
		size_t n = nl ? (size_t)(nl - s) : len;

		mod_line(g, s, n);
		if (!nl)
			break;
		len -= n + 1;
		s = nl + 1;
	}
}

static const char *find_buildinfo(const struct dr_obj *o, size_t *len)
{
	const char *h = dr_elf_section(o, ".go.buildinfo", len);

	/* without section headers: the header is 16-byte aligned in the file */
	for (size_t off = 0; !h && off + BUILDINFO_HDR <= o->rawlen; off += 16) {
		if (!memcmp(o->raw + off, BUILDINFO_MAGIC, 14)) {
			h = o->raw + off;
			*len = o->rawlen - off;
		}
	}
	if (h && (*len < BUILDINFO_HDR || memcmp(h, BUILDINFO_MAGIC, 14)))
		return NULL;
	return h;
}

void dr_go_scan(struct dr_obj *o)
{
	const char *s[2] = { NULL, NULL }, *p;
	size_t len = 0, sl[2] = { 0, 0 };
	const char *h;

	if (o->parent >= 0 || o->dlopened)
		return;
	h = find_buildinfo(o, &len);
	if (!h && !dr_elf_section(o, ".gopclntab", &len))
		return;
	o->go = calloc(1, sizeof(*o->go));
	if (!o->go)
		return;
	o->go->cgo = -1;
	if (!h)
		return;
	p = h + BUILDINFO_HDR;
	if (h[15] & 2) {
		if (!varstr(&p, h + len, &s[0], &sl[0]) || !varstr(&p, h + len, &s[1], &sl[1]))
			return;
	} else if (!old_strings(o, h, s, sl)) {
		return;
	}
	snprintf(o->go->version, sizeof(o->go->version), "%.*s",
		 (int)(sl[0] < 39 ? sl[0] : 39), s[0]);
	parse_modinfo(o->go, s[1], sl[1]);
}
