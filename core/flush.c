/* flush.c - when NORMAL mode syncs the log: a pure function of what is
 * unsynced and for how long, so it can be tested without a clock. */
#include <time.h>

#include "flush.h"
#include "db.h"

int alex_flush_past(uint64_t extent_bytes, uint64_t window_ns, uint64_t unsynced_bytes,
		    uint64_t since_ns, uint64_t now_ns)
{
	if (!unsynced_bytes)
		return 0;
	if (unsynced_bytes >= extent_bytes)
		return 1;
	return now_ns - since_ns >= window_ns;
}

int alex_flush_due(const struct alex_config *cfg, uint64_t unsynced_bytes, uint64_t since_ns,
		   uint64_t now_ns)
{
	return alex_flush_past(cfg->extent_bytes, (uint64_t)cfg->sync_ms * 1000000u, unsynced_bytes,
			       since_ns, now_ns);
}

uint64_t alex_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
