/* load.c - a trace file into the model (trace.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace.h"

/* Each process's descriptors, as its open and close events tell. */
struct fdmap {
	uint32_t pid, ppid;
	uint32_t *file; /* fd -> files[] + 1, 0 unknown */
	size_t n;
};

struct loader {
	struct tr_model *m;
	struct fdmap *maps;
	size_t nmaps, last;
	size_t cap_files, cap_procs, cap_maps;
};

void *tr_grow(void *p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return p;
	size_t n = *cap ? *cap * 2 : 64;
	while (n < need)
		n *= 2;
	void *q = realloc(p, n * size);
	if (!q) {
		perror("alex trace");
		exit(1);
	}
	*cap = n;
	return q;
}

static uint32_t file_of(struct loader *l, const char *path, size_t len, unsigned role);

static const char *const suffixes[] = { "-journal", "-wal", "-shm", "-alex" };

/* The database a file belongs to: its name without SQLite's or ALEX's suffix. */
static uint32_t db_of(struct loader *l, const char *path, size_t len, unsigned role)
{
	if (role == ALEX_TROLE_DB)
		return TR_NONE; /* itself: set by the caller */
	for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++) {
		size_t k = strlen(suffixes[i]);
		if (len > k && memcmp(path + len - k, suffixes[i], k) == 0)
			return file_of(l, path, len - k, ALEX_TROLE_DB);
	}
	return TR_NONE;
}

static uint32_t file_of(struct loader *l, const char *path, size_t len, unsigned role)
{
	struct tr_model *m = l->m;

	for (size_t i = m->nfiles; i-- > 0;)
		if (strlen(m->files[i].path) == len && memcmp(m->files[i].path, path, len) == 0) {
			if (m->files[i].role == ALEX_TROLE_NONE)
				m->files[i].role = (uint8_t)role;
			return (uint32_t)i;
		}
	uint32_t db = db_of(l, path, len, role);
	m->files = tr_grow(m->files, &l->cap_files, m->nfiles + 1, sizeof *m->files);
	struct tr_file *f = &m->files[m->nfiles];
	f->path = strndup(path, len);
	f->role = (uint8_t)role;
	f->db = role == ALEX_TROLE_DB ? (uint32_t)m->nfiles : db;
	return (uint32_t)m->nfiles++;
}

static struct fdmap *map_of(struct loader *l, uint32_t pid)
{
	if (l->nmaps && l->maps[l->last].pid == pid)
		return &l->maps[l->last];
	for (size_t i = 0; i < l->nmaps; i++)
		if (l->maps[i].pid == pid) {
			l->last = i;
			return &l->maps[i];
		}
	l->maps = tr_grow(l->maps, &l->cap_maps, l->nmaps + 1, sizeof *l->maps);
	memset(&l->maps[l->nmaps], 0, sizeof *l->maps);
	l->maps[l->nmaps].pid = pid;
	l->maps[l->nmaps].ppid = TR_NONE;
	l->last = l->nmaps;
	return &l->maps[l->nmaps++];
}

static void fd_set_file(struct loader *l, uint32_t pid, int fd, uint32_t file)
{
	struct fdmap *p = map_of(l, pid);
	if (fd < 0 || fd > (1 << 22))
		return;
	if ((size_t)fd >= p->n) {
		size_t n = p->n;
		p->file = tr_grow(p->file, &n, (size_t)fd + 1, sizeof *p->file);
		memset(p->file + p->n, 0, (n - p->n) * sizeof *p->file);
		p->n = n;
	}
	p->file[fd] = file == TR_NONE ? 0 : file + 1;
}

/* A descriptor a child did not open was its parent's at the fork. */
static uint32_t fd_file(struct loader *l, uint32_t pid, int fd)
{
	for (int depth = 0; depth < 16 && fd >= 0; depth++) {
		struct fdmap *p = map_of(l, pid);
		if ((size_t)fd < p->n && p->file[fd])
			return p->file[fd] - 1;
		if (p->ppid == TR_NONE)
			break;
		pid = p->ppid;
	}
	return TR_NONE;
}

static void note_proc(struct loader *l, struct tr_ev *v)
{
	struct tr_model *m = l->m;
	m->procs = tr_grow(m->procs, &l->cap_procs, m->nprocs + 1, sizeof *m->procs);
	struct tr_proc *p = &m->procs[m->nprocs++];
	p->pid = v->e.pid;
	p->ppid = (uint32_t)v->e.res;
	p->exe = (char *)v->e.name;
	p->alex = v->e.lock == 1;
	p->realtime = v->e.off;
	/* an exec keeps the pid and the descriptors; a fork starts from the
	 * parent's */
	struct fdmap *f = map_of(l, v->e.pid);
	if (f->ppid == TR_NONE && p->ppid != v->e.pid)
		f->ppid = p->ppid;
}

/* Files for every event, in time order. */
static void resolve(struct loader *l)
{
	struct tr_model *m = l->m;

	for (size_t i = 0; i < m->nev; i++) {
		struct tr_ev *v = &m->ev[i];
		v->txn = TR_NONE;
		v->file = TR_NONE;
		if (v->e.kind == ALEX_TK_PROC) {
			note_proc(l, v);
			continue;
		}
		if (v->e.name) {
			v->file = file_of(l, v->e.name, v->e.name_len, v->e.role);
			if (v->e.kind == ALEX_TK_OPENAT && v->e.res >= 0)
				fd_set_file(l, v->e.pid, (int)v->e.res, v->file);
			continue;
		}
		v->file = fd_file(l, v->e.pid, v->e.fd);
		if (v->file == TR_NONE && v->e.role != ALEX_TROLE_NONE && v->e.fd >= 0) {
			/* opened where the trace has no record (a damaged or
			 * dropped part): a file of its own, named by descriptor */
			char name[64];
			int n = snprintf(name, sizeof name, "<pid %u fd %d>", v->e.pid, v->e.fd);
			v->file = file_of(l, name, (size_t)n, v->e.role);
			fd_set_file(l, v->e.pid, v->e.fd, v->file);
		}
		if (v->e.kind == ALEX_TK_CLOSE)
			fd_set_file(l, v->e.pid, v->e.fd, TR_NONE);
		if ((v->e.kind == ALEX_TK_FCNTL && v->e.lock == 0 &&
		     (v->e.off == F_DUPFD || v->e.off == F_DUPFD_CLOEXEC)) ||
		    v->e.kind == ALEX_TK_DUP) {
			if (v->e.res >= 0)
				fd_set_file(l, v->e.pid, (int)v->e.res, v->file);
		}
	}
}

/*
 * The recorder labels every 4-byte journal write with its word; it is a
 * page number only at the start of a journal record, where the page
 * itself follows at off + 4 (the checksum after the page, the words of a
 * super-journal's name are not).
 */
static void journal_pages(struct tr_model *m)
{
	enum { SLOTS = 1024 };
	static uint32_t pending[SLOTS]; /* (pid, fd) -> the 4-byte write + 1 */
	memset(pending, 0, sizeof pending);
	for (size_t i = 0; i < m->nev; i++) {
		struct tr_ev *v = &m->ev[i];
		if (v->e.role != ALEX_TROLE_JOURNAL || !tr_is_write(v->e.kind))
			continue;
		unsigned h = (v->e.pid * 31u + (unsigned)v->e.fd) % SLOTS;
		if (pending[h]) {
			struct tr_ev *w = &m->ev[pending[h] - 1];
			uint64_t n = v->e.len;
			int page = w->e.pid == v->e.pid && w->e.fd == v->e.fd &&
				   v->e.off == w->e.off + 4 && n >= 512 && n <= 65536 && !(n & (n - 1));
			if (!page)
				w->e.page = 0;
			pending[h] = 0;
		}
		if (v->e.page && v->e.len == 4 && i + 1 < UINT32_MAX)
			pending[h] = (uint32_t)i + 1;
		else if (v->e.len != 4)
			v->e.page = 0;
	}
	for (unsigned h = 0; h < SLOTS; h++)
		if (pending[h])
			m->ev[pending[h] - 1].e.page = 0;
}

static int by_time(const void *a, const void *b)
{
	const struct tr_ev *x = a, *y = b;
	if (x->e.start != y->e.start)
		return x->e.start < y->e.start ? -1 : 1;
	/* the same instant: the order they were read in (txn holds it
	 * until resolve() sets it) */
	return x->txn < y->txn ? -1 : x->txn > y->txn;
}

int tr_load(const char *path, struct tr_model *m)
{
	struct loader l = { .m = m };
	struct alex_tevent e;
	size_t cap = 0;
	struct stat st;

	memset(m, 0, sizeof *m);
	m->path = path;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		fprintf(stderr, "alex trace: %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	void *buf = st.st_size ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)
			       : NULL;
	close(fd);
	if (buf == MAP_FAILED) {
		fprintf(stderr, "alex trace: %s: %s\n", path, strerror(errno));
		return 1;
	}
	alex_trace_reader_init(&m->rd, buf, (size_t)st.st_size);
	while (alex_trace_next(&m->rd, &e)) {
		m->ev = tr_grow(m->ev, &cap, m->nev + 1, sizeof *m->ev);
		struct tr_ev *v = &m->ev[m->nev];
		v->txn = (uint32_t)m->nev++;
		v->e = e;
		if (e.name)
			v->e.name = strndup(e.name, e.name_len);
	}
	alex_trace_reader_free(&m->rd);
	m->rd.buf = NULL;
	if (buf)
		munmap(buf, (size_t)st.st_size);
	qsort(m->ev, m->nev, sizeof *m->ev, by_time);
	if (m->nev) {
		m->t0 = m->ev[0].e.start;
		for (size_t i = 0; i < m->nev; i++)
			if (m->ev[i].e.start + m->ev[i].e.dur > m->t1)
				m->t1 = m->ev[i].e.start + m->ev[i].e.dur;
	}
	resolve(&l);
	journal_pages(m);
	for (size_t i = 0; i < l.nmaps; i++)
		free(l.maps[i].file);
	free(l.maps);
	tr_txns(m);
	return 0;
}

void tr_free(struct tr_model *m)
{
	for (size_t i = 0; i < m->nev; i++)
		free((char *)m->ev[i].e.name);
	for (size_t i = 0; i < m->nfiles; i++)
		free(m->files[i].path);
	free(m->ev);
	free(m->files);
	free(m->procs);
	free(m->txns);
}

