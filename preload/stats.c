/*
 * stats.c - counters of what libalex.so did, written as JSON when the
 * process exits if ALEX_STATS names a file ("%p" in it becomes the pid, for
 * programs that fork).  Counting is a relaxed atomic add on tracked files
 * only.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "mutex.h"
#include "real.h"
#include "stats.h"

struct alex_pstats alex_pstats;
static struct alex_stats engines; /* closed engines, summed; under lock */
static alex_mutex lock = ALEX_MUTEX_INIT;

void alex_stats_sum(struct alex_stats *to, const struct alex_stats *s)
{
	to->commits += s->commits;
	to->records += s->records;
	to->spills += s->spills;
	to->syncs += s->syncs;
	to->bytes_logged += s->bytes_logged;
	to->bytes_raw += s->bytes_raw;
	to->blocks_logged += s->blocks_logged;
	to->blocks_compressed += s->blocks_compressed;
	to->blocks_gapped += s->blocks_gapped;
	to->blocks_delta += s->blocks_delta;
	to->blocks_delta_base += s->blocks_delta_base;
	to->refreshes_skipped += s->refreshes_skipped;
	to->dedup_hits += s->dedup_hits;
	to->checkpoints += s->checkpoints;
	to->checkpoint_blocks += s->checkpoint_blocks;
	to->checkpoint_sectors += s->checkpoint_sectors;
	if (s->ckpt_direct_refused)
		to->ckpt_direct_refused = s->ckpt_direct_refused;
	to->checkpoint_failures += s->checkpoint_failures;
	to->carries += s->carries;
	to->carry_applies += s->carry_applies;
	to->recovered_commits += s->recovered_commits;
	to->remote_commits += s->remote_commits;
	to->direct_writes += s->direct_writes;
	if (s->direct_refused)
		to->direct_refused = s->direct_refused;
}

void alex_stats_add_engine(const struct alex_stats *s)
{
	alex_mutex_lock(&lock);
	alex_stats_sum(&engines, s);
	alex_mutex_unlock(&lock);
}

static void expand(const char *pattern, char *out, size_t cap)
{
	size_t n = 0;
	for (const char *p = pattern; *p && n + 24 < cap; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			n += (size_t)snprintf(out + n, cap - n, "%d", (int)getpid());
			p++;
		} else {
			out[n++] = *p;
		}
	}
	out[n] = 0;
}

#define C(x) (unsigned long long)(x)

void alex_stats_write(const struct alex_stats *live)
{
	char path[4200], buf[4096];
	struct alex_stats e = *live; /* open engines plus those already closed */
	const struct alex_pstats *p = &alex_pstats;

	alex_mutex_lock(&lock);
	alex_stats_sum(&e, &engines);
	alex_mutex_unlock(&lock);
	int n = snprintf(buf, sizeof buf,
		"{\n  \"pid\": %d,\n  \"sync_mode\": \"%s\",\n"
		"  \"intercepted\": {\"engines\": %llu, \"opens\": %llu, \"reads\": %llu, \"read_bytes\": %llu, "
		"\"writes\": %llu, \"write_bytes\": %llu, \"syncs_requested\": %llu, "
		"\"journal_syncs_elided\": %llu, \"dir_syncs_elided\": %llu, "
		"\"reserved_releases\": %llu, \"writes_committed\": %llu, \"refreshes\": %llu, \"mmaps\": %llu, \"mmaps_refused\": %llu, "
		"\"temp_files\": %llu, \"flusher_merges\": %llu, \"staging_syncs\": %llu, "
		"\"span_locks\": %llu, \"span_refused\": %llu, \"span_leases\": %llu, "
		"\"span_lingers\": %llu, "
		"\"name_answers\": %llu, \"name_takes\": %llu, \"cold_journals_removed\": %llu},\n"
		"  \"engine\": {\"commits\": %llu, \"records\": %llu, \"spills\": %llu, "
		"\"log_syncs\": %llu, \"bytes_logged\": %llu, \"bytes_raw\": %llu, "
		"\"blocks_logged\": %llu, \"blocks_compressed\": %llu, \"blocks_gapped\": %llu, "
		"\"blocks_delta\": %llu, \"blocks_delta_base\": %llu, \"dedup_hits\": %llu, "
		"\"checkpoints\": %llu, \"checkpoint_blocks\": %llu, \"checkpoint_sectors\": %llu, "
		"\"ckpt_direct_refused\": %d, \"checkpoint_failures\": %llu, "
		"\"carries\": %llu, \"carry_applies\": %llu, "
		"\"recovered_commits\": %llu, \"remote_commits\": %llu, "
		"\"refreshes_skipped\": %llu, \"direct_writes\": %llu, \"direct_refused\": %d}%s",
		(int)getpid(),
		alex_cfg.engine.sync == ALEX_SYNC_FULL ? "full"
		: alex_cfg.engine.sync == ALEX_SYNC_NORMAL ? "normal" : "off",
		C(p->engines), C(p->opens), C(p->reads), C(p->read_bytes), C(p->writes), C(p->write_bytes),
		C(p->syncs_requested), C(p->journal_syncs_elided), C(p->dir_syncs_elided),
		C(p->reserved_releases), C(p->writes_committed), C(p->refreshes), C(p->mmaps), C(p->mmaps_refused),
		C(p->temp_files), C(p->flusher_merges), C(p->staging_syncs), C(p->span_locks),
		C(p->span_refused), C(p->span_leases), C(p->span_lingers), C(p->name_answers), C(p->name_takes),
		C(p->cold_journals_removed), C(e.commits),
		C(e.records), C(e.spills), C(e.syncs), C(e.bytes_logged), C(e.bytes_raw),
		C(e.blocks_logged), C(e.blocks_compressed), C(e.blocks_gapped), C(e.blocks_delta),
		C(e.blocks_delta_base), C(e.dedup_hits),
		C(e.checkpoints),
		C(e.checkpoint_blocks), C(e.checkpoint_sectors), e.ckpt_direct_refused,
		C(e.checkpoint_failures), C(e.carries), C(e.carry_applies), C(e.recovered_commits),
		C(e.remote_commits), C(e.refreshes_skipped), C(e.direct_writes), e.direct_refused, "");
#ifdef ALEX_TESTING
	if (alex_cfg.test) { /* the calls a power-cut or fault campaign numbers */
		uint64_t ops, cls[ALEX_TEST_NCLASS];
		alex_test_counts(&ops, cls);
		n += snprintf(buf + n, sizeof buf - (size_t)n, ",\n  \"test_io\": {\"ops\": %llu",
			      C(ops));
		for (int i = 0; i < ALEX_TEST_NCLASS; i++)
			n += snprintf(buf + n, sizeof buf - (size_t)n, ", \"%s\": %llu",
				      alex_test_class_name((enum alex_test_class)i), C(cls[i]));
		n += snprintf(buf + n, sizeof buf - (size_t)n, "}");
	}
#endif
	n += snprintf(buf + n, sizeof buf - (size_t)n, "\n}\n");
	expand(alex_cfg.stats_path, path, sizeof path);
	int fd = REAL(open)(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		alex_msg(ALEX_MSG_ERROR, "ALEX_STATS=%s: cannot write %s", alex_cfg.stats_path, path);
		return;
	}
	if (REAL(write)(fd, buf, (size_t)n) != n)
		alex_msg(ALEX_MSG_ERROR, "ALEX_STATS: short write to %s", path);
	REAL(close)(fd);
}
