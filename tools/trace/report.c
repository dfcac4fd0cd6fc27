/* report.c - `alex trace FILE`: the report for a human (trace.h). */
#include <inttypes.h>
#include <string.h>

#include "stats.h"

static void header(const struct tr_model *m, FILE *o)
{
	fprintf(o, "trace %s: %zu events in %" PRIu64 " chunks, %zu processes, %.3f s\n", m->path,
		m->nev, m->rd.chunks, m->nprocs, (double)(m->t1 - m->t0) / 1e9);
	for (size_t i = 0; i < m->nprocs; i++)
		fprintf(o, "  pid %u  %s  (%s; parent %u)\n", m->procs[i].pid,
			m->procs[i].exe && *m->procs[i].exe ? m->procs[i].exe : "?",
			m->procs[i].alex ? "ALEX" : "traced only", m->procs[i].ppid);
	if (m->rd.dropped)
		fprintf(o, "  %" PRIu64 " events not recorded (a signal handler's calls)\n",
			m->rd.dropped);
	if (m->rd.damaged)
		fprintf(o, "  DAMAGED at byte %" PRIu64 ": %s; %" PRIu64 " damaged places, %" PRIu64
			   " bytes skipped; the rest is reported\n",
			m->rd.first_bad, m->rd.why, m->rd.damaged, m->rd.damaged_bytes);
}

static void calls(const struct tr_stats *s, FILE *o)
{
	fprintf(o, "\ncalls per file role (served: answered by ALEX, not the kernel;"
		   " alex-*: ALEX's own)\n  %-9s %-10s %10s %8s %14s\n", "role", "call", "calls",
		"served", "bytes");
	for (int r = 1; r < TR_NROLES; r++)
		for (unsigned k = 1; k < ALEX_TK_PROC; k++)
			if (s->calls[r][k])
				fprintf(o, "  %-9s %-10s %10" PRIu64 " %8" PRIu64 " %14" PRIu64 "\n",
					tr_role_index_name(r), alex_tkind_name(k), s->calls[r][k],
					s->served[r][k], s->bytes[r][k]);
	fprintf(o, "\nsystem calls that reached the kernel (compare strace -f -c):\n ");
	for (unsigned k = 1; k < ALEX_TK_PROC; k++)
		if (s->kernel[k])
			fprintf(o, " %s %" PRIu64, alex_tkind_name(k), s->kernel[k]);
	fprintf(o, "\n");
}

static void call_line(const struct tr_model *m, const struct tr_ev *v, FILE *o)
{
	fprintf(o, "      %+9.3f ms %s%-9s %-8s", (double)(v->e.start - m->t0) / 1e6,
		v->e.flags & ALEX_TF_ALEX ? "alex " : "", alex_tkind_name(v->e.kind), tr_role(v));
	if (v->e.kind == ALEX_TK_FCNTL && (v->e.lock & 63) == ALEX_TL_GETLK)
		fprintf(o, " GETLK: %s", (v->e.lock >> 6) == ALEX_TLT_UN ? "free" : "held");
	else if (v->e.kind == ALEX_TK_FCNTL && v->e.lock)
		fprintf(o, " %s %s", (v->e.lock >> 6) == ALEX_TLT_UN ? "unlock"
				     : (v->e.lock >> 6) == ALEX_TLT_WR ? "write" : "read",
			alex_tlock_name(v->e.lock));
	else if (tr_is_write(v->e.kind) || tr_is_read(v->e.kind))
		fprintf(o, " %" PRId64 " B at %" PRIu64, v->e.res, v->e.off);
	if (v->e.page)
		fprintf(o, " page %u", v->e.page);
	if (v->e.flags & ALEX_TF_SERVED)
		fprintf(o, " (served)");
	if (v->e.res < 0)
		fprintf(o, " -> %s", strerror((int)-v->e.res));
	fprintf(o, "  %.1f us\n", v->e.dur / 1e3);
}

static void transactions(const struct tr_model *m, const struct tr_stats *s, FILE *o,
			 int shown)
{
	fprintf(o, "\ntransactions: %" PRIu64 " (%" PRIu64 " write, %" PRIu64 " read)\n", s->txns,
		s->wtxns, s->rtxns);
	if (s->wtxns)
		fprintf(o, "  per write transaction (median / p99): syncs asked by SQLite %" PRIu64
			   " / %" PRIu64 ", reaching the kernel %" PRIu64 " / %" PRIu64
			   "; bytes written %" PRIu64 " / %" PRIu64 "; duration %.1f / %.1f us\n",
			s->txn_syncs_asked.p50, s->txn_syncs_asked.p99, s->txn_syncs_kernel.p50,
			s->txn_syncs_kernel.p99, s->txn_bytes.p50, s->txn_bytes.p99,
			s->txn_dur.p50 / 1e3, s->txn_dur.p99 / 1e3);
	for (size_t i = 0; i < m->ntxns && (int)i < shown; i++) {
		const struct tr_txn *t = &m->txns[i];
		fprintf(o, "  #%zu pid %u %s%s on %s: %" PRIu64 " calls, %.1f us\n", i + 1, t->pid,
			t->write ? "write" : "read", t->wal ? " (WAL)" : "",
			m->files[t->db].path, t->nev, (t->end - t->start) / 1e3);
		for (uint32_t k = t->first; k <= t->last; k++)
			if (m->ev[k].txn == i)
				call_line(m, &m->ev[k], o);
	}
}

static void shapes(const struct tr_stats *s, FILE *o)
{
	static const char *const by[2] = { "program", "ALEX" };
	fprintf(o, "\nwrites that reached the kernel\n  %-8s", "size");
	for (int b = 0; b < TR_HIST; b++)
		fprintf(o, " %6s", tr_hist_name(b));
	for (int w = 0; w < 2; w++) {
		fprintf(o, "\n  %-8s", by[w]);
		for (int b = 0; b < TR_HIST; b++)
			fprintf(o, " %6" PRIu64, s->hist[w][b]);
	}
	for (int w = 0; w < 2; w++)
		fprintf(o, "\n  %-8s sequential %" PRIu64 ", random %" PRIu64 "; aligned to 4 KiB %"
			   PRIu64 ", to 512 B %" PRIu64 ", unaligned %" PRIu64, by[w], s->seq[w],
			s->rnd[w], s->al4k[w], s->al512[w], s->unal[w]);
	fprintf(o, "\n\nlatency per call (us)\n  %-15s %9s %9s %9s %9s %9s\n", "call", "calls",
		"p50", "p90", "p99", "max");
	for (int w = 0; w < 2; w++)
		for (unsigned k = 1; k < ALEX_TK_PROC; k++) {
			const struct tr_lat *l = &s->lat[w][k];
			if (l->n)
				fprintf(o, "  %-5s%-10s %9" PRIu64 " %9.1f %9.1f %9.1f %9.1f\n",
					w ? "alex " : "", alex_tkind_name(k), l->n, l->p50 / 1e3,
					l->p90 / 1e3, l->p99 / 1e3, l->max / 1e3);
		}
}

static void estimate(const struct tr_stats *s, FILE *o)
{
	if (s->any_alex) {
		fprintf(o, "\n(ALEX ran: the calls above are what it did; no estimate)\n");
		return;
	}
	fprintf(o, "\nestimate: the same transactions under ALEX\n"
		   "  now:         %" PRIu64 " syncs, %" PRIu64 " bytes written\n"
		   "  ALEX full:   about %" PRIu64 " syncs (one per write transaction), %" PRIu64
		   " bytes to its log\n  ALEX normal: about %" PRIu64
		   " syncs (one per 100 ms), the same log bytes\n"
		   "  both:        %" PRIu64 " bytes more at the checkpoint (each page once)\n",
		s->est_syncs_now, s->est_bytes_now, s->est_syncs_full, s->est_log_bytes,
		s->est_syncs_normal, s->est_ckpt_bytes);
}

void tr_report(const struct tr_model *m, FILE *o, int txns_shown)
{
	struct tr_stats s;
	tr_stats(m, &s);
	header(m, o);
	calls(&s, o);
	transactions(m, &s, o, txns_shown);
	shapes(&s, o);
	estimate(&s, o);
}
