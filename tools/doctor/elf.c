/*
 * elf.c - what alex doctor reads from one ELF file, through libelf.
 *
 * Files are opened read-only and mapped; nothing is executed or relocated,
 * so a foreign or damaged file can only make the doctor say "cannot tell".
 * The dynamic section is read through PT_DYNAMIC, as the loader reads it,
 * so a file stripped of its section headers still shows what it needs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* Kept in step with preload/libalex.map: a program that imports one of
 * these names gets ALEX's version of it under LD_PRELOAD. */
const char *const dr_hooked[] = {
	"open", "open64", "__open_2", "__open64_2", "openat", "openat64", "__openat_2",
	"__openat64_2", "creat", "creat64", "close", "close_range", "dup", "dup2", "dup3",
	"fcntl", "fcntl64", "lockf", "lockf64", "read", "write", "pread", "pread64", "pwrite", "pwrite64",
	"readv", "writev", "preadv", "pwritev", "preadv64", "pwritev64", "preadv2",
	"pwritev2", "lseek", "lseek64", "stat", "stat64", "fstat", "fstat64", "lstat",
	"lstat64", "fstatat", "fstatat64", "__xstat", "__xstat64", "__fxstat", "__fxstat64",
	"__lxstat", "__lxstat64", "__fxstatat", "__fxstatat64", "statx", "ftruncate",
	"ftruncate64", "truncate", "truncate64", "fallocate", "fallocate64",
	"posix_fallocate", "posix_fallocate64", "fsync", "fdatasync", "sync_file_range",
	"mmap", "mmap64", "munmap", "mremap", "fchown", "unlink", "unlinkat", "rename",
	"renameat", "renameat2", "access", "faccessat", "fclose", "closefrom", "closedir", "execve", "execv", "execvp",
	"execvpe", "fexecve", "execl", "execlp", "execle", "_exit", "_Exit", "quick_exit", "vfork",
	"setuid", "seteuid", "setreuid",
	"setresuid", "setgid", "setegid", "setregid", "setresgid", "setgroups", "initgroups",
	"setfsuid", "setfsgid", "capset", "chroot", "pivot_root", "setns", "unshare", "getpid",
	"geteuid", "clone", NULL
};

_Static_assert(sizeof(dr_hooked) / sizeof(dr_hooked[0]) <= DR_HOOK_MAX + 1,
	       "struct dr_obj's imp[] must have a flag for every name");

const char *dr_machine_name(int machine)
{
	switch (machine) {
	case EM_X86_64:
		return "x86-64";
	case EM_386:
		return "i386";
	case EM_AARCH64:
		return "aarch64";
	case EM_ARM:
		return "arm";
	case EM_RISCV:
		return "riscv";
	case EM_PPC64:
		return "ppc64";
	case EM_S390:
		return "s390";
	default:
		return "other";
	}
}

/* The file offset of virtual address va, through the PT_LOAD segments:
 * the way to reach data the dynamic section points at. */
const char *dr_elf_vaddr(const struct dr_obj *o, GElf_Addr va, size_t *avail)
{
	for (size_t i = 0; i < o->nph; i++) {
		const GElf_Phdr *p = &o->ph[i];

		if (p->p_type != PT_LOAD || va < p->p_vaddr || va - p->p_vaddr >= p->p_filesz)
			continue;
		if (p->p_offset + p->p_filesz > o->rawlen)
			return NULL;
		*avail = p->p_filesz - (va - p->p_vaddr);
		return o->raw + p->p_offset + (va - p->p_vaddr);
	}
	return NULL;
}

/* A NUL-terminated string inside [p, p + n), copied; NULL if it is not. */
static char *str_in(const char *p, size_t n)
{
	if (!p || !memchr(p, 0, n))
		return NULL;
	return strdup(p);
}

static void read_phdrs(struct dr_obj *o)
{
	size_t n = 0;

	if (elf_getphdrnum(o->elf, &n) != 0 || n == 0 || n > 4096)
		return;
	o->ph = calloc(n, sizeof(*o->ph));
	if (!o->ph)
		return;
	for (size_t i = 0; i < n; i++) {
		if (!gelf_getphdr(o->elf, (int)i, &o->ph[o->nph]))
			continue;
		o->nph++;
	}
	for (size_t i = 0; i < o->nph; i++) {
		const GElf_Phdr *p = &o->ph[i];

		if (p->p_type == PT_INTERP && p->p_offset + p->p_filesz <= o->rawlen)
			o->interp = str_in(o->raw + p->p_offset, p->p_filesz);
		if (p->p_type == PT_DYNAMIC)
			o->has_dynamic = true;
	}
}

static void dyn_entry(struct dr_obj *o, const GElf_Dyn *d, const char *str, size_t strsz)
{
	char *s = NULL;

	if (d->d_tag == DT_FLAGS_1) {
		o->pie = d->d_un.d_val & DF_1_PIE;
		o->nodeflib = d->d_un.d_val & DF_1_NODEFLIB;
		return;
	}
	if (d->d_tag != DT_NEEDED && d->d_tag != DT_RPATH && d->d_tag != DT_RUNPATH &&
	    d->d_tag != DT_SONAME)
		return;
	if (str && d->d_un.d_val < strsz)
		s = str_in(str + d->d_un.d_val, strsz - d->d_un.d_val);
	if (!s)
		return;
	if (d->d_tag == DT_NEEDED && o->nneeded < sizeof(o->needed) / sizeof(o->needed[0]))
		o->needed[o->nneeded++] = s;
	else if (d->d_tag == DT_RPATH && !o->rpath)
		o->rpath = s;
	else if (d->d_tag == DT_RUNPATH && !o->runpath)
		o->runpath = s;
	else if (d->d_tag == DT_SONAME && !o->soname)
		o->soname = s;
	else
		free(s);
}

static void read_dynamic(struct dr_obj *o)
{
	const GElf_Phdr *p = NULL;
	GElf_Addr strtab = 0;
	size_t strsz = 0, avail = 0, n;
	const char *str = NULL;
	Elf_Data *d;
	GElf_Dyn dyn;

	for (size_t i = 0; i < o->nph && !p; i++)
		if (o->ph[i].p_type == PT_DYNAMIC)
			p = &o->ph[i];
	if (!p || p->p_offset + p->p_filesz > o->rawlen)
		return;
	d = elf_getdata_rawchunk(o->elf, p->p_offset, p->p_filesz, ELF_T_DYN);
	n = gelf_fsize(o->elf, ELF_T_DYN, 1, EV_CURRENT);
	if (!d || !n)
		return;
	n = p->p_filesz / n;
	for (size_t i = 0; i < n && gelf_getdyn(d, (int)i, &dyn); i++) {
		if (dyn.d_tag == DT_STRTAB)
			strtab = dyn.d_un.d_ptr;
		else if (dyn.d_tag == DT_STRSZ)
			strsz = dyn.d_un.d_val;
	}
	if (strtab)
		str = dr_elf_vaddr(o, strtab, &avail);
	if (strsz > avail)
		strsz = avail;
	for (size_t i = 0; i < n && gelf_getdyn(d, (int)i, &dyn) && dyn.d_tag != DT_NULL; i++)
		dyn_entry(o, &dyn, str, strsz);
}

/* Sections of type t, calling fn on each symbol with its name. */
static void each_sym_in(struct dr_obj *o, Elf64_Word t, dr_sym_fn fn, void *arg)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Sym s;

	while ((scn = elf_nextscn(o->elf, scn))) {
		Elf_Data *d;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != t || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 1; i < n && gelf_getsym(d, (int)i, &s); i++) {
			const char *name = elf_strptr(o->elf, sh.sh_link, s.st_name);

			if (name && *name)
				fn(o, name, &s, arg);
		}
	}
}

/* .dynsym first, then .symtab: an unstripped static program names its
 * embedded SQLite only in .symtab. */
void dr_elf_each_sym(struct dr_obj *o, dr_sym_fn fn, void *arg)
{
	each_sym_in(o, SHT_DYNSYM, fn, arg);
	each_sym_in(o, SHT_SYMTAB, fn, arg);
}

static void import_sym(struct dr_obj *o, const char *name, const GElf_Sym *s, void *arg)
{
	int bind = GELF_ST_BIND(s->st_info);
	bool *dynamic = arg;

	if (!*dynamic || s->st_shndx != SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK))
		return;
	for (size_t i = 0; dr_hooked[i]; i++)
		if (!strcmp(name, dr_hooked[i]))
			o->imp[i] = true;
	if (!strncmp(name, "io_uring_", 9))
		o->uring = true;
	else if (!strcmp(name, "syscall"))
		o->imp_syscall = true;
	else if (!strncmp(name, "sqlite3_", 8))
		o->imp_sqlite = true;
}

/* Only undefined symbols of .dynsym are imports the loader binds, and so
 * the only calls LD_PRELOAD can take over. */
static void read_imports(struct dr_obj *o)
{
	bool dynamic = true;

	each_sym_in(o, SHT_DYNSYM, import_sym, &dynamic);
	for (size_t i = 0; i < o->nneeded; i++)
		if (!strncmp(o->needed[i], "liburing.so", 11))
			o->uring = true;
}

static struct dr_obj *open_fail(struct dr_obj *o, char *err, size_t errlen, const char *msg)
{
	snprintf(err, errlen, "%s", msg);
	dr_obj_free(o);
	return NULL;
}

struct dr_obj *dr_obj_open(const char *path, const char *name, int parent, char *err,
			   size_t errlen)
{
	struct dr_obj *o = calloc(1, sizeof(*o));
	struct stat st;

	if (!o)
		return open_fail(o, err, errlen, strerror(ENOMEM));
	o->fd = -1;
	o->parent = parent;
	o->path = strdup(path);
	o->name = strdup(name);
	if (!o->path || !o->name)
		return open_fail(o, err, errlen, strerror(ENOMEM));
	o->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (o->fd < 0 || fstat(o->fd, &st) != 0)
		return open_fail(o, err, errlen, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return open_fail(o, err, errlen, "not a regular file");
	o->dev = st.st_dev;
	o->ino = st.st_ino;
	o->elf = elf_begin(o->fd, ELF_C_READ_MMAP, NULL);
	if (!o->elf || elf_kind(o->elf) != ELF_K_ELF)
		return open_fail(o, err, errlen, "not an ELF file");
	if (!gelf_getehdr(o->elf, &o->eh) || !(o->raw = elf_rawfile(o->elf, &o->rawlen)))
		return open_fail(o, err, errlen, "damaged ELF header");
	if (o->eh.e_type != ET_EXEC && o->eh.e_type != ET_DYN)
		return open_fail(o, err, errlen, "not an executable or shared object");
	read_phdrs(o);
	read_dynamic(o);
	read_imports(o);
	return o;
}

/* Is the file at path an ELF object the loader would take for want: same
 * class, byte order and machine?  The loader skips any other and searches
 * on, so the doctor must too (an i386 libsqlite3.so.0 in a directory of
 * the search path is not the one an x86-64 program gets). */
bool dr_elf_compatible(const char *path, const GElf_Ehdr *want)
{
	unsigned char h[20];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;
	unsigned int machine;

	if (fd < 0)
		return false;
	n = read(fd, h, sizeof(h));
	close(fd);
	if (n != (ssize_t)sizeof(h) || memcmp(h, ELFMAG, SELFMAG) != 0)
		return false;
	if (h[EI_CLASS] != want->e_ident[EI_CLASS] || h[EI_DATA] != want->e_ident[EI_DATA])
		return false;
	if (h[EI_DATA] == ELFDATA2LSB)
		machine = h[18] | (unsigned int)h[19] << 8;
	else
		machine = h[19] | (unsigned int)h[18] << 8;
	return machine == want->e_machine;
}

/* The bytes of the section called name, or NULL. */
const char *dr_elf_section(const struct dr_obj *o, const char *name, size_t *len)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(o->elf, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(o->elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		n = elf_strptr(o->elf, shstrndx, sh.sh_name);
		if (!n || strcmp(n, name) || sh.sh_offset + sh.sh_size > o->rawlen)
			continue;
		*len = sh.sh_size;
		return o->raw + sh.sh_offset;
	}
	return NULL;
}

/* Read-only data: where string literals live.  Only these sections are
 * searched, so words in debug info or code are not taken for SQLite's;
 * a file without section headers is searched whole. */
void dr_elf_each_rodata(struct dr_obj *o, dr_bytes_fn fn, void *arg)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	bool any = false;

	while ((scn = elf_nextscn(o->elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		if (!(sh.sh_flags & SHF_ALLOC) || (sh.sh_flags & (SHF_EXECINSTR | SHF_WRITE)))
			continue;
		if (sh.sh_offset + sh.sh_size > o->rawlen)
			continue;
		any = true;
		fn(o->raw + sh.sh_offset, sh.sh_size, arg);
	}
	if (!any)
		fn(o->raw, o->rawlen, arg);
}

/* Keeps what was learnt and lets go of the file: a program may load
 * hundreds of libraries, more than the descriptors a process may hold. */
void dr_obj_release(struct dr_obj *o)
{
	if (o->elf)
		elf_end(o->elf);
	if (o->fd >= 0)
		close(o->fd);
	free(o->ph);
	o->elf = NULL;
	o->fd = -1;
	o->raw = NULL;
	o->rawlen = 0;
	o->ph = NULL;
	o->nph = 0;
}

void dr_obj_free(struct dr_obj *o)
{
	if (!o)
		return;
	dr_obj_release(o);
	for (size_t i = 0; i < o->nneeded; i++)
		free(o->needed[i]);
	if (o->sq)
		for (size_t i = 0; i < o->sq->nopts; i++)
			free(o->sq->opts[i]);
	if (o->go) {
		free(o->go->main_path);
		free(o->go->sqlite_mod);
	}
	free(o->sq);
	free(o->go);
	free(o->path);
	free(o->name);
	free(o->interp);
	free(o->rpath);
	free(o->runpath);
	free(o->soname);
	free(o);
}
