/* flush.h - when NORMAL mode syncs (flush.c). */
#ifndef ALEX_FLUSH_H
#define ALEX_FLUSH_H

#include <stdint.h>
#include "alex.h"

/* Should NORMAL mode sync now? */
int alex_flush_due(const struct alex_config *cfg, uint64_t unsynced_bytes,
		   uint64_t since_ns, uint64_t now_ns);
/* The same against other thresholds (a part of the window). */
int alex_flush_past(uint64_t extent_bytes, uint64_t window_ns, uint64_t unsynced_bytes,
		    uint64_t since_ns, uint64_t now_ns);
uint64_t alex_now_ns(void);

#endif
