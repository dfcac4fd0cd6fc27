/*
 * json.c - `alex trace --json`: a stable summary object.  Its members:
 * calls and bytes (role -> call -> count), served (likewise, the calls ALEX
 * answered), syscalls (call -> count of calls that reached the kernel),
 * transactions, writes, latency_us, estimate (null when ALEX ran),
 * processes, damage.
 */
#include <inttypes.h>

#include "stats.h"

/* The length of the valid UTF-8 sequence at s (n bytes left), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t k = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
	if (s[0] < 0x80)
		return 1;
	if (!k || k > n)
		return 0;
	for (size_t i = 1; i < k; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return k;
}

/* A JSON string: quotes and controls escaped; a byte that is not UTF-8 (a
 * file name may hold any) as the code point of the same number. */
void tr_json_str(FILE *o, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	fputc('"', o);
	for (size_t i = 0; s && i < n && s[i];) {
		size_t k = utf8_len(s + i, n - i);
		if (k > 1) {
			fwrite(s + i, 1, k, o);
			i += k;
			continue;
		}
		unsigned char c = s[i++];
		if (c == '"' || c == '\\')
			fprintf(o, "\\%c", c);
		else if (c < 0x20 || c >= 0x80)
			fprintf(o, "\\u%04x", c);
		else
			fputc(c, o);
	}
	fputc('"', o);
}

static void table(FILE *o, const char *name, const uint64_t (*t)[ALEX_TK_COUNT])
{
	int any_role = 0;
	fprintf(o, "  \"%s\": {", name);
	for (int r = 1; r < TR_NROLES; r++) {
		int any = 0;
		for (unsigned k = 1; k < ALEX_TK_PROC; k++) {
			if (!t[r][k])
				continue;
			if (!any)
				fprintf(o, "%s\"%s\": {", any_role++ ? ", " : "", tr_role_index_name(r));
			fprintf(o, "%s\"%s\": %" PRIu64, any++ ? ", " : "", alex_tkind_name(k),
				t[r][k]);
		}
		if (any)
			fprintf(o, "}");
	}
	fprintf(o, "},\n");
}

static void lat(FILE *o, const struct tr_lat *l)
{
	fprintf(o, "{\"n\": %" PRIu64 ", \"p50\": %.3f, \"p90\": %.3f, \"p99\": %.3f, \"max\": %.3f}",
		l->n, l->p50 / 1e3, l->p90 / 1e3, l->p99 / 1e3, l->max / 1e3);
}

/* the same percentiles of a count (no unit) */
static void cnt(FILE *o, const struct tr_lat *l)
{
	fprintf(o, "{\"n\": %" PRIu64 ", \"p50\": %" PRIu64 ", \"p90\": %" PRIu64 ", \"p99\": %" PRIu64
		   ", \"max\": %" PRIu64 "}", l->n, l->p50, l->p90, l->p99, l->max);
}

static void txns(FILE *o, const struct tr_stats *s)
{
	fprintf(o, "  \"transactions\": {\"total\": %" PRIu64 ", \"write\": %" PRIu64
		   ", \"read\": %" PRIu64 ",\n    \"syncs_asked\": ",
		s->txns, s->wtxns, s->rtxns);
	cnt(o, &s->txn_syncs_asked);
	fprintf(o, ",\n    \"syncs_kernel\": ");
	cnt(o, &s->txn_syncs_kernel);
	fprintf(o, ",\n    \"bytes_written\": ");
	cnt(o, &s->txn_bytes);
	fprintf(o, ",\n    \"duration_us\": ");
	lat(o, &s->txn_dur);
	fprintf(o, "},\n");
}

static void writes(FILE *o, const struct tr_stats *s)
{
	static const char *const by[2] = { "program", "alex" };
	fprintf(o, "  \"writes\": {");
	for (int w = 0; w < 2; w++) {
		fprintf(o, "%s\"%s\": {\"sizes\": {", w ? ", " : "", by[w]);
		for (int b = 0; b < TR_HIST; b++)
			fprintf(o, "%s\"%s\": %" PRIu64, b ? ", " : "", tr_hist_name(b), s->hist[w][b]);
		fprintf(o, "}, \"sequential\": %" PRIu64 ", \"random\": %" PRIu64
			   ", \"aligned_4k\": %" PRIu64 ", \"aligned_512\": %" PRIu64
			   ", \"unaligned\": %" PRIu64 "}",
			s->seq[w], s->rnd[w], s->al4k[w], s->al512[w], s->unal[w]);
	}
	fprintf(o, "},\n  \"latency_us\": {");
	int any = 0;
	for (int w = 0; w < 2; w++)
		for (unsigned k = 1; k < ALEX_TK_PROC; k++)
			if (s->lat[w][k].n) {
				fprintf(o, "%s\"%s%s\": ", any++ ? ", " : "", w ? "alex-" : "",
					alex_tkind_name(k));
				lat(o, &s->lat[w][k]);
			}
	fprintf(o, "},\n");
}

static void rest(FILE *o, const struct tr_model *m, const struct tr_stats *s)
{
	if (s->any_alex)
		fprintf(o, "  \"estimate\": null,\n");
	else
		fprintf(o, "  \"estimate\": {\"syncs_now\": %" PRIu64 ", \"bytes_now\": %" PRIu64
			   ", \"alex_full_syncs\": %" PRIu64 ", \"alex_normal_syncs\": %" PRIu64
			   ", \"alex_log_bytes\": %" PRIu64 ", \"alex_checkpoint_bytes\": %" PRIu64
			   "},\n",
			s->est_syncs_now, s->est_bytes_now, s->est_syncs_full, s->est_syncs_normal,
			s->est_log_bytes, s->est_ckpt_bytes);
	fprintf(o, "  \"processes\": [");
	for (size_t i = 0; i < m->nprocs; i++) {
		fprintf(o, "%s{\"pid\": %u, \"ppid\": %u, \"alex\": %s, \"program\": ", i ? ", " : "",
			m->procs[i].pid, m->procs[i].ppid, m->procs[i].alex ? "true" : "false");
		tr_json_str(o, m->procs[i].exe, 4096);
		fprintf(o, "}");
	}
	fprintf(o, "],\n  \"damage\": ");
	if (m->rd.damaged) {
		fprintf(o, "{\"first_byte\": %" PRIu64 ", \"places\": %" PRIu64 ", \"bytes\": %" PRIu64
			   ", \"why\": ", m->rd.first_bad, m->rd.damaged, m->rd.damaged_bytes);
		tr_json_str(o, m->rd.why, sizeof m->rd.why);
		fprintf(o, "}\n");
	} else {
		fprintf(o, "null\n");
	}
}

void tr_json(const struct tr_model *m, FILE *o)
{
	struct tr_stats s;
	tr_stats(m, &s);
	fprintf(o, "{\n  \"trace\": ");
	tr_json_str(o, m->path, 4096);
	fprintf(o, ",\n  \"events\": %zu, \"chunks\": %" PRIu64 ", \"dropped\": %" PRIu64
		   ", \"seconds\": %.6f,\n", m->nev, m->rd.chunks, m->rd.dropped,
		(double)(m->t1 - m->t0) / 1e9);
	table(o, "calls", s.calls);
	table(o, "bytes", s.bytes);
	table(o, "served", s.served);
	fprintf(o, "  \"syscalls\": {");
	int any = 0;
	for (unsigned k = 1; k < ALEX_TK_PROC; k++)
		if (s.kernel[k])
			fprintf(o, "%s\"%s\": %" PRIu64, any++ ? ", " : "", alex_tkind_name(k),
				s.kernel[k]);
	fprintf(o, "},\n");
	txns(o, &s);
	writes(o, &s);
	rest(o, m, &s);
	fprintf(o, "}\n");
}
