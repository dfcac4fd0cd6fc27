/*
 * perfetto.c - `alex trace --perfetto`: Chrome trace-event JSON, which
 * Perfetto UI (ui.perfetto.dev) and chrome://tracing open.  A process per
 * pid, a track per thread; a slice per transaction, the calls nested in it
 * (complete events on the same thread nest by time), with the file, offset,
 * length, page and lock as arguments.
 */
#include <inttypes.h>
#include <string.h>

#include "trace.h"

static double us(const struct tr_model *m, uint64_t ns)
{
	return (double)(ns - m->t0) / 1e3;
}

static void call(const struct tr_model *m, const struct tr_ev *v, FILE *o)
{
	fprintf(o, ",\n{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"%s %s%s%s\",\"pid\":%u,\"tid\":%u,"
		   "\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"fd\":%d,\"offset\":%" PRIu64
		   ",\"length\":%" PRIu64 ",\"result\":%" PRId64,
		v->e.flags & ALEX_TF_ALEX ? "alex" : "sqlite", alex_tkind_name(v->e.kind), tr_role(v),
		v->e.lock ? " " : "", v->e.kind == ALEX_TK_FCNTL ? alex_tlock_name(v->e.lock) : "",
		v->e.pid, v->e.tid, us(m, v->e.start), v->e.dur / 1e3, v->e.fd, v->e.off,
		v->e.flags & ALEX_TF_NAME ? 0 : v->e.len, v->e.res);
	if (v->e.page)
		fprintf(o, ",\"page\":%u", v->e.page);
	if (v->e.flags & ALEX_TF_SERVED)
		fprintf(o, ",\"served\":true");
	if (v->file != TR_NONE) {
		fprintf(o, ",\"file\":");
		tr_json_str(o, m->files[v->file].path, 4096);
	}
	fprintf(o, "}}");
}

void tr_perfetto(const struct tr_model *m, FILE *o)
{
	fprintf(o, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n"
		   "{\"ph\":\"M\",\"name\":\"trace_file\",\"pid\":0,\"args\":{\"name\":");
	tr_json_str(o, m->path, 4096);
	fprintf(o, "}}");
	for (size_t i = 0; i < m->nprocs; i++) {
		fprintf(o, ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,\"args\":{\"name\":",
			m->procs[i].pid);
		tr_json_str(o, m->procs[i].exe, 4096);
		fprintf(o, "}}");
	}
	for (size_t i = 0; i < m->ntxns; i++) {
		const struct tr_txn *t = &m->txns[i];
		fprintf(o, ",\n{\"ph\":\"X\",\"cat\":\"transaction\",\"name\":\"%s transaction %zu\","
			   "\"pid\":%u,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"database\":",
			t->write ? "write" : "read", i + 1, t->pid, t->tid, us(m, t->start),
			(double)(t->end - t->start) / 1e3);
		tr_json_str(o, m->files[t->db].path, 4096);
		fprintf(o, ",\"calls\":%" PRIu64 ",\"syncs\":%" PRIu64 ",\"bytes_written\":%" PRIu64
			   ",\"wal\":%s}}", t->nev, t->syncs_kernel, t->bytes_written,
			t->wal ? "true" : "false");
	}
	for (size_t i = 0; i < m->nev; i++)
		if (m->ev[i].e.kind != ALEX_TK_PROC)
			call(m, &m->ev[i], o);
	fprintf(o, "\n]}\n");
}
