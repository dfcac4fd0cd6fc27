/*
 * report.c - what alex doctor prints: one "key: finding" line each, ending
 * in "verdict: ...", for people; one JSON object with --json, for scripts.
 * Both say the same things, from the same struct dr_ctx.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static const char *linkage_name(enum dr_linkage l)
{
	static const char *const n[] = { "dynamic", "static", "static-pie", "shared-object" };

	return n[l];
}

static const char *libc_name(enum dr_libc l)
{
	static const char *const n[] = { "none", "glibc", "musl", "other" };

	return n[l];
}

static const char *type_name(const struct dr_obj *o)
{
	if (o->eh.e_type == ET_EXEC)
		return "executable";
	if (o->interp || o->pie)
		return "PIE executable";
	return "shared object";
}

static const char *name_of(const struct dr_ctx *c, int i)
{
	return i < 0 ? "" : c->objs[i]->name;
}

/* How a copy of SQLite is reached from the program, in a few words. */
const char *dr_where(const struct dr_ctx *c, const struct dr_obj *o)
{
	static char buf[512];
	const struct dr_obj *up = o;

	if (o == c->objs[0])
		return c->linkage == DR_SHARED ? "embedded in the shared object" :
						 "embedded in the program";
	if (o->dlopened)
		return "embedded in the Python module";
	while (up->parent > 0 && !up->dlopened)
		up = c->objs[up->parent];
	if (up->dlopened)
		snprintf(buf, sizeof(buf), "shared library %s, loaded by Python module %s", o->name,
			 up->name);
	else
		snprintf(buf, sizeof(buf), "shared library %s", o->name);
	return buf;
}

static void print_imports(const char *key, const struct dr_obj *o)
{
	int n = 0;

	printf("%s: %s:", key, o->path);
	for (size_t i = 0; dr_hooked[i]; i++)
		if (o->imp[i] && ++n)
			printf(" %s", dr_hooked[i]);
	printf("%s\n", n ? "" : " none of the calls ALEX interposes");
}

static void text_sqlite(const struct dr_ctx *c, const struct dr_obj *o)
{
	const struct dr_sqlite *sq = o->sq;

	printf("sqlite: %s: %s, version %s", o->path, dr_where(c, o),
	       sq->version[0] ? sq->version : "unknown");
	if (sq->source_id[0])
		printf(", source id %s", sq->source_id);
	printf("\nsqlite options: %s:", o->path);
	for (size_t i = 0; i < sq->nopts; i++)
		printf(" %s", sq->opts[i]);
	printf("%s\n", sq->nopts ? "" : " none recorded (OMIT_COMPILEOPTION_DIAGS or stripped)");
	print_imports("sqlite imports", o);
}

static void text_head(const struct dr_ctx *c)
{
	const struct dr_obj *m = c->objs[0];
	const struct dr_go *g = m->go;

	printf("program: %s\n", c->path);
	if (c->script)
		printf("script: %s\n", c->script);
	printf("elf: %d-bit %s %s\n", m->eh.e_ident[EI_CLASS] == ELFCLASS64 ? 64 : 32,
	       dr_machine_name(m->eh.e_machine), type_name(m));
	if (m->interp)
		printf("linkage: dynamic, interpreter %s\n", m->interp);
	else
		printf("linkage: %s\n", linkage_name(c->linkage));
	printf("libc: %s\n", libc_name(c->libc));
	if (!c->setuid && !c->setgid && !c->caps)
		printf("privileges: none (no setuid, setgid or file capabilities)\n");
	if (c->setuid)
		printf("privileges: setuid (owner uid %u)\n", (unsigned int)c->st.st_uid);
	if (c->setgid)
		printf("privileges: setgid (group gid %u)\n", (unsigned int)c->st.st_gid);
	if (c->caps)
		printf("privileges: file capabilities (security.capability)\n");
	if (!g)
		return;
	printf("go: %s, CGO_ENABLED=%s", g->version[0] ? g->version : "version unknown",
	       g->cgo == 1 ? "1" : g->cgo == 0 ? "0" : "unknown");
	printf("%s%s\n", g->main_path ? ", main " : "", g->main_path ? g->main_path : "");
	if (g->sqlite_mod)
		printf("go sqlite: %s (%s)\n", g->sqlite_mod,
		       g->sqlite_pure ? "pure Go, no C SQLite" : "C SQLite through cgo");
}

void dr_report_text(const struct dr_ctx *c)
{
	size_t ncopies = 0;
	const struct dr_obj *ur = NULL;

	text_head(c);
	for (size_t i = 1; i < c->nobjs; i++) {
		const struct dr_obj *o = c->objs[i];

		if (o->dlopened)
			printf("python module: %s (loaded by `import sqlite3`)\n", o->path);
		else if (o->parent > 0)
			printf("library: %s => %s (needed by %s)\n", o->name, o->path,
			       name_of(c, o->parent));
		else
			printf("library: %s => %s\n", o->name, o->path);
	}
	for (size_t i = 0; i < c->nmissing; i++)
		printf("missing: %s (needed by %s): not found\n", c->missing[i].name,
		       name_of(c, c->missing[i].parent));
	for (size_t i = 0; i < c->nobjs; i++) {
		if (c->objs[i]->sq && ++ncopies)
			text_sqlite(c, c->objs[i]);
		if (c->objs[i]->uring && !ur)
			ur = c->objs[i];
	}
	if (!ncopies && c->objs[0]->go && c->objs[0]->go->sqlite_pure)
		printf("sqlite: %s: pure Go (%s), no C SQLite\n", c->path,
		       c->objs[0]->go->sqlite_mod);
	else if (!ncopies)
		printf("sqlite: none found in the program or the libraries it loads\n");
	if (!c->objs[0]->sq)
		print_imports("imports", c->objs[0]);
	if (ur)
		printf("io_uring: liburing linked (%s)\n", ur->path);
	else
		printf("io_uring: no liburing linked, no io_uring_* imports\n");
	for (size_t i = 0; i < c->nnotes; i++)
		printf("note: %s\n", c->notes[i]);
	if (c->verdict == 0)
		printf("verdict: ALEX can interpose %s\n", c->arg);
	else if (c->verdict == 1)
		printf("verdict: ALEX cannot interpose %s: %s\n", c->arg, c->reason);
	else
		printf("verdict: cannot tell: %s\n", c->reason);
}

/* A JSON string, or null for NULL. */
static void js(const char *s)
{
	if (!s) {
		fputs("null", stdout);
		return;
	}
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static void jkey(const char *k, const char *v, bool comma)
{
	printf("%s\"%s\":", comma ? "," : "", k);
	js(v);
}

static void json_imports(const struct dr_obj *o)
{
	int n = 0;

	fputs(",\"imports\":[", stdout);
	for (size_t i = 0; dr_hooked[i]; i++)
		if (o->imp[i])
			printf("%s\"%s\"", n++ ? "," : "", dr_hooked[i]);
	putchar(']');
}

static void json_sqlite(const struct dr_ctx *c)
{
	int n = 0;

	fputs(",\"sqlite\":[", stdout);
	for (size_t i = 0; i < c->nobjs; i++) {
		const struct dr_obj *o = c->objs[i];

		if (!o->sq)
			continue;
		printf("%s{", n++ ? "," : "");
		jkey("path", o->path, false);
		jkey("where", dr_where(c, o), true);
		jkey("version", o->sq->version[0] ? o->sq->version : NULL, true);
		jkey("source_id", o->sq->source_id[0] ? o->sq->source_id : NULL, true);
		fputs(",\"options\":[", stdout);
		for (size_t j = 0; j < o->sq->nopts; j++) {
			printf("%s", j ? "," : "");
			js(o->sq->opts[j]);
		}
		putchar(']');
		json_imports(o);
		printf(",\"liburing\":%s,\"imports_syscall\":%s}", o->uring ? "true" : "false",
		       o->imp_syscall ? "true" : "false");
	}
	putchar(']');
}

static void json_libs(const struct dr_ctx *c)
{
	fputs(",\"libraries\":[", stdout);
	for (size_t i = 1; i < c->nobjs; i++) {
		const struct dr_obj *o = c->objs[i];

		printf("%s{", i > 1 ? "," : "");
		jkey("name", o->name, false);
		jkey("path", o->path, true);
		jkey("needed_by", o->dlopened ? NULL : name_of(c, o->parent), true);
		printf(",\"python_module\":%s}", o->dlopened ? "true" : "false");
	}
	fputs("],\"missing\":[", stdout);
	for (size_t i = 0; i < c->nmissing; i++) {
		printf("%s{", i ? "," : "");
		jkey("name", c->missing[i].name, false);
		jkey("needed_by", name_of(c, c->missing[i].parent), true);
		putchar('}');
	}
	putchar(']');
}

static void json_go(const struct dr_go *g)
{
	fputs(",\"go\":", stdout);
	if (!g) {
		fputs("null", stdout);
		return;
	}
	putchar('{');
	jkey("version", g->version[0] ? g->version : NULL, false);
	printf(",\"cgo\":%s", g->cgo == 1 ? "true" : g->cgo == 0 ? "false" : "null");
	jkey("main", g->main_path, true);
	jkey("sqlite_module", g->sqlite_mod, true);
	printf(",\"pure_go_sqlite\":%s}", g->sqlite_pure ? "true" : "false");
}

void dr_report_json(const struct dr_ctx *c)
{
	static const char *const verdicts[] = { "can", "cannot", "unknown" };
	const struct dr_obj *m = c->objs[0];
	bool ur = false;

	putchar('{');
	jkey("program", c->arg, false);
	jkey("path", c->path, true);
	jkey("script", c->script, true);
	printf(",\"class\":%d", m->eh.e_ident[EI_CLASS] == ELFCLASS64 ? 64 : 32);
	jkey("machine", dr_machine_name(m->eh.e_machine), true);
	jkey("type", type_name(m), true);
	jkey("linkage", linkage_name(c->linkage), true);
	jkey("interpreter", m->interp, true);
	jkey("libc", libc_name(c->libc), true);
	printf(",\"setuid\":%s,\"setgid\":%s,\"capabilities\":%s", c->setuid ? "true" : "false",
	       c->setgid ? "true" : "false", c->caps ? "true" : "false");
	json_go(m->go);
	json_libs(c);
	json_sqlite(c);
	json_imports(m);
	for (size_t i = 0; i < c->nobjs; i++)
		ur |= c->objs[i]->uring;
	printf(",\"liburing\":%s,\"notes\":[", ur ? "true" : "false");
	for (size_t i = 0; i < c->nnotes; i++) {
		printf("%s", i ? "," : "");
		js(c->notes[i]);
	}
	printf("],\"verdict\":\"%s\"", verdicts[c->verdict]);
	jkey("reason", c->verdict ? c->reason : NULL, true);
	printf(",\"exit\":%d}\n", c->verdict);
}

/* Errors are one line naming the file; with --json, a one-line object. */
void dr_report_error(const char *file, const char *msg, bool json)
{
	if (!json) {
		fprintf(stderr, "alex doctor: %s: %s\n", file, msg);
		return;
	}
	putchar('{');
	jkey("program", file, false);
	jkey("error", msg, true);
	printf(",\"verdict\":\"unknown\",\"exit\":2}\n");
}
