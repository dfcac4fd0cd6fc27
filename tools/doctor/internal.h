/*
 * internal.h - what alex doctor's files share: one struct dr_obj per ELF
 * file (the program, each library the loader would map, each Python module
 * that `import sqlite3` would dlopen) and one struct dr_ctx per run.
 */
#ifndef ALEX_DOCTOR_INTERNAL_H
#define ALEX_DOCTOR_INTERNAL_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

/* More than any real program loads; a bound so a loop of DT_NEEDED or a
 * hostile file cannot make the doctor run away. */
#define DR_MAX_OBJS	512
#define DR_MAX_OPTS	256
#define DR_HOOK_MAX	128

/* The names libalex.so exports (preload/libalex.map), NULL-terminated. */
extern const char *const dr_hooked[];

/* What one copy of SQLite looks like inside one object. */
struct dr_sqlite {
	bool symbols;		/* defines sqlite3_open_v2/_sourceid/_libversion */
	char version[24];	/* "3.40.1", or "" when not found */
	char source_id[112];	/* "2022-12-28 14:03:47 df5c...", or "" */
	char *opts[DR_MAX_OPTS];/* compile options, without SQLITE_ */
	size_t nopts;
};

/* What .go.buildinfo says about a Go program. */
struct dr_go {
	char version[40];	/* "go1.19.8", or "" when unknown */
	int cgo;		/* build setting CGO_ENABLED: 1, 0, -1 unknown */
	char *main_path;	/* the main package, may be NULL */
	char *sqlite_mod;	/* "modernc.org/sqlite v1.20.0", may be NULL */
	bool sqlite_pure;	/* that module is SQLite rewritten in Go */
};

struct dr_obj {
	char *path;		/* the file as the loader would open it */
	char *name;		/* the DT_NEEDED name; the path for the program */
	int parent;		/* index of the object that needs it, -1 for none */
	bool dlopened;		/* a Python module found beside the program */
	dev_t dev;
	ino_t ino;

	/* Valid only between dr_obj_open() and dr_obj_release(). */
	int fd;
	Elf *elf;
	const char *raw;
	size_t rawlen;
	GElf_Phdr *ph;
	size_t nph;

	GElf_Ehdr eh;
	char *interp;		/* PT_INTERP, or NULL */
	bool has_dynamic;	/* PT_DYNAMIC */
	bool pie;		/* DF_1_PIE */
	bool nodeflib;		/* DF_1_NODEFLIB */
	char *needed[64];
	size_t nneeded;
	char *rpath, *runpath, *soname;

	bool imp[DR_HOOK_MAX];	/* imports dr_hooked[i] */
	bool uring;		/* imports io_uring_* or needs liburing */
	bool imp_syscall;	/* imports syscall(): may bypass libc */
	bool imp_sqlite;	/* imports sqlite3_* from some library */
	bool python;		/* defines Py_BytesMain/Py_Initialize */
	struct dr_sqlite *sq;	/* NULL: no SQLite in this object */
	struct dr_go *go;	/* NULL: not a Go program */
};

struct dr_missing {
	char *name;
	int parent;
};

enum dr_linkage { DR_DYNAMIC, DR_STATIC, DR_STATIC_PIE, DR_SHARED };
enum dr_libc { DR_LIBC_NONE, DR_GLIBC, DR_MUSL, DR_LIBC_OTHER };

struct dr_ctx {
	const char *arg;	/* PROGRAM as given */
	char *path;		/* the ELF file analysed */
	char *script;		/* "#!" line followed to reach it, or NULL */
	bool json;
	struct stat st;
	bool setuid, setgid, caps;
	enum dr_linkage linkage;
	enum dr_libc libc;
	struct dr_obj *objs[DR_MAX_OBJS];
	size_t nobjs;
	struct dr_missing missing[64];
	size_t nmissing;
	char *notes[32];
	size_t nnotes;
	int verdict;		/* the exit status: 0, 1 or 2 */
	char reason[512];
};

/* elf.c */
struct dr_obj *dr_obj_open(const char *path, const char *name, int parent, char *err,
			   size_t errlen);
void dr_obj_release(struct dr_obj *o);
void dr_obj_free(struct dr_obj *o);
bool dr_elf_compatible(const char *path, const GElf_Ehdr *want);
const char *dr_elf_vaddr(const struct dr_obj *o, GElf_Addr va, size_t *avail);
const char *dr_elf_section(const struct dr_obj *o, const char *name, size_t *len);
typedef void (*dr_sym_fn)(struct dr_obj *o, const char *name, const GElf_Sym *s, void *arg);
void dr_elf_each_sym(struct dr_obj *o, dr_sym_fn fn, void *arg);
typedef void (*dr_bytes_fn)(const char *p, size_t n, void *arg);
void dr_elf_each_rodata(struct dr_obj *o, dr_bytes_fn fn, void *arg);
const char *dr_machine_name(int machine);

/* resolve.c */
char *dr_find_program(const char *arg);
void dr_load_deps(struct dr_ctx *c, size_t first);
int dr_add_obj(struct dr_ctx *c, const char *path, const char *name, int parent,
	       bool dlopened, char *err, size_t errlen);

/* sqlite.c */
void dr_sqlite_scan(struct dr_obj *o);
void dr_python_modules(struct dr_ctx *c);

/* go.c */
void dr_go_scan(struct dr_obj *o);

/* report.c */
void dr_report_text(const struct dr_ctx *c);
void dr_report_json(const struct dr_ctx *c);
void dr_report_error(const char *file, const char *msg, bool json);
const char *dr_where(const struct dr_ctx *c, const struct dr_obj *o);

/* doctor.c */
void dr_note(struct dr_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
