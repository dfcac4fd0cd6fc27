/* csv.c - `alex trace --csv`: one row per call, in time order. */
#include <inttypes.h>
#include <string.h>

#include "trace.h"

/* A field quoted as RFC 4180 asks (paths may hold commas). */
static void field(FILE *o, const char *s)
{
	fputc('"', o);
	for (; s && *s; s++) {
		if (*s == '"')
			fputc('"', o);
		fputc(*s, o);
	}
	fputc('"', o);
}

void tr_csv(const struct tr_model *m, FILE *o)
{
	fprintf(o, "time_ns,duration_ns,pid,tid,by,call,role,fd,file,offset,length,result,errno,"
		   "page,lock,served,transaction\n");
	for (size_t i = 0; i < m->nev; i++) {
		const struct tr_ev *v = &m->ev[i];
		if (v->e.kind == ALEX_TK_PROC)
			continue;
		int lock = v->e.kind == ALEX_TK_FCNTL && v->e.lock;
		fprintf(o, "%" PRIu64 ",%u,%u,%u,%s,%s,%s,%d,", v->e.start - m->t0, v->e.dur,
			v->e.pid, v->e.tid, v->e.flags & ALEX_TF_ALEX ? "alex" : "program",
			alex_tkind_name(v->e.kind), tr_role(v), v->e.fd);
		field(o, v->file == TR_NONE ? "" : m->files[v->file].path);
		fprintf(o, ",%" PRIu64 ",%" PRIu64 ",%" PRId64 ",%s,%u,%s%s%s,%d,", v->e.off,
			v->e.flags & ALEX_TF_NAME ? 0 : v->e.len, v->e.res < 0 ? -1 : v->e.res,
			v->e.res < 0 ? strerrorname_np((int)-v->e.res) ?: "?" : "", v->e.page,
			lock ? ((v->e.lock >> 6) == ALEX_TLT_UN ? "unlock " : (v->e.lock >> 6) ==
				ALEX_TLT_WR ? "write " : "read ") : "",
			lock ? alex_tlock_name(v->e.lock) : "", "", (v->e.flags & ALEX_TF_SERVED) != 0);
		if (v->txn != TR_NONE)
			fprintf(o, "%u", v->txn + 1);
		fputc('\n', o);
	}
}
