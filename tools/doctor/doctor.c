/*
 * doctor.c - `alex doctor [--json] PROGRAM [ARGS...]`: can ALEX, preloaded
 * as libalex.so, interpose the file calls of the SQLite that PROGRAM uses?
 *
 * LD_PRELOAD works only if (a) a dynamic loader runs, (b) it honours
 * LD_PRELOAD (not for setuid, setgid or file capabilities), (c) it can
 * load libalex.so (same machine, glibc), and (d) the object holding
 * SQLite calls libc's open/pwrite/... through its imports, rather than
 * making system calls itself as Go's runtime does.  Each is read from the
 * files; nothing is executed.  ARGS are accepted so a command line can be
 * prefixed as it stands, and are not used.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "doctor.h"
#include "internal.h"

#if defined(__x86_64__)
#define HOST_MACHINE	EM_X86_64
#elif defined(__aarch64__)
#define HOST_MACHINE	EM_AARCH64
#elif defined(__i386__)
#define HOST_MACHINE	EM_386
#else
#define HOST_MACHINE	EM_NONE
#endif
#define HOST_CLASS	(sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32)

static const char *const opens[] = { "open", "open64", "__open_2", "__open64_2", "openat",
				     "openat64", "__openat_2", "__openat64_2", NULL };
static const char *const writes[] = { "write", "pwrite", "pwrite64", "writev", "pwritev",
				      "pwritev64", "pwritev2", NULL };
/* which system calls go through syscall() is not in the file */
#define SYSCALL_NOTE	"%s imports syscall(): a file call made through it would bypass ALEX"

static const char *const syncs[] = { "fsync", "fdatasync", NULL };

static int usage(FILE *f)
{
	fprintf(f, "usage: alex doctor [--json] PROGRAM [ARGS...]\n"
		   "  tells, without running it, whether ALEX can interpose PROGRAM's SQLite\n"
		   "  exit 0: it can; 1: it cannot (the last line says why); 2: cannot tell\n");
	return f == stdout ? 0 : 2;
}

void dr_note(struct dr_ctx *c, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	if (c->nnotes >= sizeof(c->notes) / sizeof(c->notes[0]))
		return;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) >= 0)
		c->notes[c->nnotes++] = s;
	va_end(ap);
}

/* Sets the verdict unless one is set: the first reason found is the one
 * that stops ALEX earliest, as the checks run in the loader's order. */
static void __attribute__((format(printf, 3, 4))) verdict(struct dr_ctx *c, int v,
							   const char *fmt, ...)
{
	va_list ap;

	if (c->verdict >= 0)
		return;
	c->verdict = v;
	va_start(ap, fmt);
	vsnprintf(c->reason, sizeof(c->reason), fmt, ap);
	va_end(ap);
}

/* Is path a "#!" script?  If so, *interp is the program execve(2) would
 * run for it (env's NAME looked up in PATH), NULL if there is none. */
static bool shebang(struct dr_ctx *c, const char *path, char **interp)
{
	char buf[256], *p, *word, *arg;
	FILE *f = fopen(path, "re");
	size_t n;

	*interp = NULL;
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	if (n < 3 || buf[0] != '#' || buf[1] != '!')
		return false;
	buf[strcspn(buf, "\n")] = 0;
	if (!c->script)
		c->script = strdup(buf);
	p = buf + 2 + strspn(buf + 2, " \t");
	word = strsep(&p, " \t");
	arg = p ? p + strspn(p, " \t") : NULL;
	if (!*word)
		return true;
	if (strcmp(strrchr(word, '/') ? strrchr(word, '/') + 1 : word, "env") || !arg) {
		*interp = strdup(word);
		return true;
	}
	/* env [-S] [-u NAME]... NAME: the first word not an option */
	while ((word = strsep(&arg, " \t")) && (word[0] == '-' || !word[0]))
		if (!strcmp(word, "-u") && arg)
			strsep(&arg, " \t");
	*interp = word ? dr_find_program(word) : NULL;
	return true;
}

/* Follows "#!" up to the kernel's four levels, replacing *path with the
 * ELF file to read; false, *path the script, if an interpreter is missing. */
static bool follow_scripts(struct dr_ctx *c, char **path)
{
	char *next;

	for (int depth = 0; depth < 5 && shebang(c, *path, &next); depth++) {
		if (!next)
			return false;
		free(*path);
		*path = next;
	}
	return true;
}

static void privileges(struct dr_ctx *c)
{
	char cap[64];

	c->setuid = c->st.st_mode & S_ISUID;
	/* setgid without group execute is mandatory locking, not privilege */
	c->setgid = (c->st.st_mode & S_ISGID) && (c->st.st_mode & S_IXGRP);
	c->caps = getxattr(c->path, "security.capability", cap, sizeof(cap)) > 0;
}

static void classify(struct dr_ctx *c)
{
	const struct dr_obj *m = c->objs[0];

	if (m->interp)
		c->linkage = DR_DYNAMIC;
	else if (m->eh.e_type == ET_EXEC)
		c->linkage = DR_STATIC;
	else if (m->pie)
		c->linkage = DR_STATIC_PIE;
	else
		c->linkage = DR_SHARED;
	c->libc = DR_LIBC_NONE;
	if (m->interp && strstr(m->interp, "ld-musl"))
		c->libc = DR_MUSL;
	else if (m->interp && strstr(m->interp, "ld-linux"))
		c->libc = DR_GLIBC;
	else if (m->interp)
		c->libc = DR_LIBC_OTHER;
	for (size_t i = 0; i < c->nobjs; i++) {
		const char *n = c->objs[i]->name;

		if (!strcmp(n, "libc.so.6") && c->libc != DR_MUSL)
			c->libc = DR_GLIBC;
		else if (!strncmp(n, "libc.musl", 9) || !strcmp(n, "libc.so"))
			c->libc = DR_MUSL;
	}
}

static bool imports_any(const struct dr_obj *o, const char *const *names)
{
	for (size_t i = 0; dr_hooked[i]; i++)
		for (size_t j = 0; names[j]; j++)
			if (o->imp[i] && !strcmp(dr_hooked[i], names[j]))
				return true;
	return false;
}

/* (a), (b) and (c): will libalex.so be loaded into the process at all? */
static void judge_loader(struct dr_ctx *c)
{
	const struct dr_obj *m = c->objs[0];
	const char *go = m->go ? " (a Go program that links no C)" : "";

	if (m->eh.e_ident[EI_CLASS] != HOST_CLASS || m->eh.e_machine != HOST_MACHINE)
		verdict(c, 1, "built for %d-bit %s; libalex.so is %d-bit %s",
			m->eh.e_ident[EI_CLASS] == ELFCLASS64 ? 64 : 32,
			dr_machine_name(m->eh.e_machine), HOST_CLASS == ELFCLASS64 ? 64 : 32,
			dr_machine_name(HOST_MACHINE));
	if (c->setuid || c->setgid || c->caps)
		verdict(c, 1, "%s: the loader ignores LD_PRELOAD for it (secure-execution mode)",
			c->setuid ? "setuid" : c->setgid ? "setgid" : "file capabilities");
	if (c->linkage == DR_STATIC || c->linkage == DR_STATIC_PIE)
		verdict(c, 1, "statically linked%s%s: no dynamic loader runs to honour LD_PRELOAD",
			c->linkage == DR_STATIC_PIE ? " (static-pie)" : "", go);
	if (c->libc == DR_MUSL)
		verdict(c, 1, "musl libc: libalex.so is built for glibc and will not load");
	if (c->libc == DR_LIBC_OTHER)
		verdict(c, 2, "its loader %s is neither glibc's nor musl's", m->interp);
}

/* (d): does each copy of SQLite reach libc through imports? */
static void judge_sqlite(struct dr_ctx *c, size_t *ncopies)
{
	const struct dr_go *g = c->objs[0]->go;

	for (size_t i = 0; i < c->nobjs; i++) {
		const struct dr_obj *o = c->objs[i];

		if (!o->sq)
			continue;
		++*ncopies;
		if (!imports_any(o, opens) || !imports_any(o, writes))
			verdict(c, 1, "the SQLite in %s does not import open/pwrite from libc%s",
				o->path, o->uring ? " (it uses io_uring)" : " (a VFS of its own)");
		if (!imports_any(o, syncs))
			dr_note(c, "the SQLite in %s imports neither fsync nor fdatasync", o->path);
		if (o->imp_syscall)
			dr_note(c, SYSCALL_NOTE, o->path);
	}
	if (g && g->sqlite_pure && !*ncopies)
		verdict(c, 1, "its SQLite is pure Go (%s): Go's runtime makes system calls itself, "
			      "not through libc", g->sqlite_mod);
}

static void judge(struct dr_ctx *c)
{
	size_t ncopies = 0;

	c->verdict = -1;
	judge_loader(c);
	judge_sqlite(c, &ncopies);
	for (size_t i = 0; i < c->nobjs; i++)
		if (c->objs[i]->uring)
			dr_note(c, "%s uses io_uring: I/O submitted through it bypasses ALEX",
				c->objs[i]->path);
	if (c->objs[0]->imp_syscall && !c->objs[0]->sq)
		dr_note(c, SYSCALL_NOTE, c->path);
	if (c->linkage == DR_SHARED)
		dr_note(c, "a shared object: the verdict holds when a dynamically linked glibc "
			   "program (node, python) loads it");
	if (ncopies && c->nmissing)
		dr_note(c, "%s (needed by %s) is missing: the program would not start here",
			c->missing[0].name, c->objs[c->missing[0].parent]->name);
	if (!ncopies && c->nmissing)
		verdict(c, 2, "no SQLite found, and %s (needed by %s) is missing",
			c->missing[0].name, c->objs[c->missing[0].parent]->name);
	if (!ncopies)
		verdict(c, 2, "no SQLite found in %s or the libraries it loads "
			      "(it may dlopen one at run time)", c->arg);
	if (c->verdict < 0)
		c->verdict = 0;
}

static void ctx_free(struct dr_ctx *c)
{
	for (size_t i = 0; i < c->nobjs; i++)
		dr_obj_free(c->objs[i]);
	for (size_t i = 0; i < c->nmissing; i++)
		free(c->missing[i].name);
	for (size_t i = 0; i < c->nnotes; i++)
		free(c->notes[i]);
	free(c->script);
	free(c->path);
}

/* Finds and reads PROGRAM and all it loads; 0, or 2 after the error line. */
static int load(struct dr_ctx *c)
{
	char err[256];

	c->path = dr_find_program(c->arg);
	if (!c->path) {
		dr_report_error(c->arg, "not found in PATH", c->json);
		return 2;
	}
	if (!follow_scripts(c, &c->path)) {
		dr_report_error(c->path, "the interpreter of its #! line is not found", c->json);
		return 2;
	}
	if (stat(c->path, &c->st) != 0) {
		dr_report_error(c->path, strerror(errno), c->json);
		return 2;
	}
	privileges(c);
	if (dr_add_obj(c, c->path, c->path, -1, false, err, sizeof(err)) < 0) {
		dr_report_error(c->path, err, c->json);
		return 2;
	}
	dr_load_deps(c, 0);
	dr_python_modules(c);
	return 0;
}

int alex_doctor_main(int argc, char **argv)
{
	struct dr_ctx c = { 0 };
	int i, rc;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--json"))
			c.json = true;
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return usage(stdout);
		else if (!strcmp(argv[i], "--") && ++i)
			break;
		else
			return usage(stderr);
	}
	if (i >= argc)
		return usage(stderr);
	c.arg = argv[i];
	if (elf_version(EV_CURRENT) == EV_NONE) {
		dr_report_error(c.arg, "libelf is too old", c.json);
		return 2;
	}
	rc = load(&c);
	if (rc == 0) {
		classify(&c);
		judge(&c);
		if (c.json)
			dr_report_json(&c);
		else
			dr_report_text(&c);
		rc = c.verdict;
	}
	ctx_free(&c);
	fflush(stdout);
	return rc;
}
