/* stats.c - the figures of a trace (stats.h). */
#include <stdlib.h>
#include <string.h>

#include "stats.h"

int tr_role_index(const struct tr_ev *v)
{
	if (v->e.flags & ALEX_TF_ALEX) {
		if (v->e.role == ALEX_TROLE_DB)
			return ALEX_TROLE_COUNT;
		if (v->e.role == ALEX_TROLE_DIR)
			return ALEX_TROLE_COUNT + 1;
	}
	return v->e.role;
}

const char *tr_role(const struct tr_ev *v)
{
	return tr_role_index_name(tr_role_index(v));
}

const char *tr_role_index_name(int i)
{
	return i == ALEX_TROLE_COUNT ? "alex-db" : i == ALEX_TROLE_COUNT + 1 ? "alex-dir"
									    : alex_trole_name((unsigned)i);
}

const char *tr_hist_name(int b)
{
	static const char *const n[TR_HIST] = { "<512", "512", "1K", "2K", "4K", "8K", "16K",
						"32K", "64K", "128K", "256K", "512K", ">=1M" };
	return n[b];
}

static int bucket(uint64_t len)
{
	int b = 0;
	if (len < 512)
		return 0;
	for (uint64_t x = 512; b < TR_HIST - 1 && len >= x; x <<= 1)
		b++;
	return b;
}

static int cmp64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void pct(uint64_t *v, size_t n, struct tr_lat *l)
{
	memset(l, 0, sizeof *l);
	if (!n)
		return;
	qsort(v, n, sizeof *v, cmp64);
	l->n = n;
	l->p50 = v[(n - 1) * 50 / 100];
	l->p90 = v[(n - 1) * 90 / 100];
	l->p99 = v[(n - 1) * 99 / 100];
	l->max = v[n - 1];
}

/* Shape of the writes that reached the kernel: size, sequence, alignment. */
static void shapes(const struct tr_model *m, struct tr_stats *s)
{
	/* the end of the last write per (pid, fd): a small open table */
	enum { SLOTS = 4096 };
	static struct { uint32_t pid; int32_t fd; uint64_t end; int used; } last[SLOTS];
	memset(last, 0, sizeof last);
	for (size_t i = 0; i < m->nev; i++) {
		const struct tr_ev *v = &m->ev[i];
		if (!tr_is_write(v->e.kind) || !tr_kernel(v) || v->e.res <= 0)
			continue;
		int by = (v->e.flags & ALEX_TF_ALEX) != 0;
		uint64_t len = (uint64_t)v->e.res;
		s->hist[by][bucket(len)]++;
		if (v->e.off == ~(uint64_t)0)
			continue; /* at the kernel's offset: unknown */
		unsigned h = (v->e.pid * 31u + (unsigned)v->e.fd) % SLOTS;
		int seq = last[h].used && last[h].pid == v->e.pid && last[h].fd == v->e.fd &&
			  last[h].end == v->e.off;
		if (seq)
			s->seq[by]++;
		else
			s->rnd[by]++;
		last[h].used = 1;
		last[h].pid = v->e.pid;
		last[h].fd = v->e.fd;
		last[h].end = v->e.off + len;
		if (v->e.off % 4096 == 0 && len % 4096 == 0)
			s->al4k[by]++;
		else if (v->e.off % 512 == 0 && len % 512 == 0)
			s->al512[by]++;
		else
			s->unal[by]++;
	}
}

static void latencies(const struct tr_model *m, struct tr_stats *s)
{
	uint64_t *d = malloc((m->nev + 1) * sizeof *d);
	if (!d)
		abort();
	for (int by = 0; by < 2; by++)
		for (unsigned k = 1; k < ALEX_TK_COUNT; k++) {
			size_t n = 0;
			for (size_t i = 0; i < m->nev; i++)
				if (m->ev[i].e.kind == k && ((m->ev[i].e.flags & ALEX_TF_ALEX) != 0) == by)
					d[n++] = m->ev[i].e.dur;
			pct(d, n, &s->lat[by][k]);
		}
	free(d);
}

static void transactions(const struct tr_model *m, struct tr_stats *s)
{
	uint64_t *a = calloc(4 * (m->ntxns + 1), sizeof *a);
	uint64_t *dur = a, *asked = a + m->ntxns + 1, *kern = asked + m->ntxns + 1,
		 *bytes = kern + m->ntxns + 1;
	size_t w = 0;
	if (!a)
		abort();
	for (size_t i = 0; i < m->ntxns; i++) {
		const struct tr_txn *t = &m->txns[i];
		s->txns++;
		if (!t->write) {
			s->rtxns++;
			continue;
		}
		s->wtxns++;
		dur[w] = t->end - t->start;
		asked[w] = t->syncs_asked;
		kern[w] = t->syncs_kernel;
		bytes[w++] = t->bytes_written;
	}
	pct(dur, w, &s->txn_dur);
	pct(asked, w, &s->txn_syncs_asked);
	pct(kern, w, &s->txn_syncs_kernel);
	pct(bytes, w, &s->txn_bytes);
	free(a);
}

/* pages a database write held, once each (the checkpoint's share) */
static int cmp_pair(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return x[0] != y[0] ? (x[0] < y[0] ? -1 : 1) : (x[1] > y[1]) - (x[1] < y[1]);
}

/*
 * What ALEX would have done with the same transactions (a trace without
 * ALEX): one log sync per write transaction (full) or per 100 ms window
 * (normal); each transaction's pages once in the log, with a 64-byte
 * header per page and per record; each page once more into the database
 * at the checkpoint.  An estimate: compression and the log's own syncs
 * (epochs, checkpoints) are left out.
 */
static void estimate(const struct tr_model *m, struct tr_stats *s)
{
	uint64_t (*pg)[2] = malloc((m->nev + 1) * sizeof *pg);
	size_t n = 0;
	if (!pg)
		abort();
	for (size_t i = 0; i < m->nev; i++) {
		const struct tr_ev *v = &m->ev[i];
		if (tr_is_sync(v->e.kind) && tr_kernel(v))
			s->est_syncs_now++;
		if (!tr_is_write(v->e.kind) || !tr_kernel(v))
			continue;
		s->est_bytes_now += tr_bytes(v);
		int page = (v->e.role == ALEX_TROLE_DB && v->e.page && v->e.res >= 512) ||
			   (v->e.role == ALEX_TROLE_WAL && v->e.res >= 512);
		if (!page || v->file == TR_NONE)
			continue;
		if (!s->page_size)
			s->page_size = (uint64_t)v->e.res;
		if (v->e.role == ALEX_TROLE_DB) {
			pg[n][0] = m->files[v->file].db;
			pg[n++][1] = v->e.page;
		}
		s->est_log_bytes += (uint64_t)v->e.res + 64;
	}
	qsort(pg, n, sizeof *pg, cmp_pair);
	for (size_t i = 0; i < n; i++)
		if (!i || cmp_pair(pg[i], pg[i - 1]))
			s->est_ckpt_bytes += s->page_size;
	s->est_log_bytes += 64 * s->wtxns;
	s->est_syncs_full = s->wtxns;
	uint64_t span_ms = (m->t1 - m->t0) / 1000000;
	s->est_syncs_normal = s->wtxns ? span_ms / 100 + 1 : 0;
	if (s->est_syncs_normal > s->wtxns)
		s->est_syncs_normal = s->wtxns;
	free(pg);
}

void tr_stats(const struct tr_model *m, struct tr_stats *s)
{
	memset(s, 0, sizeof *s);
	for (size_t i = 0; i < m->nprocs; i++)
		s->any_alex |= m->procs[i].alex;
	for (size_t i = 0; i < m->nev; i++) {
		const struct tr_ev *v = &m->ev[i];
		if (v->e.kind == ALEX_TK_PROC)
			continue;
		int r = tr_role_index(v);
		s->calls[r][v->e.kind]++;
		s->bytes[r][v->e.kind] += tr_bytes(v);
		if (v->e.flags & ALEX_TF_SERVED)
			s->served[r][v->e.kind]++;
		if (tr_kernel(v))
			s->kernel[v->e.kind]++;
	}
	shapes(m, s);
	latencies(m, s);
	transactions(m, s);
	if (!s->any_alex)
		estimate(m, s);
}
