/*
 * io_over.h - an engine stacked over another (docs/STAGING.md).
 *
 * The staging engine ("above") runs on an I/O backend whose base files are
 * the other engine ("below") read through its API -- the database as
 * below commits it, its log's pages laid over the file -- and whose own
 * files (its log, its change counter) are files', never synced: a staging
 * log outlives its process, not a power cut.  alex_merge then makes what
 * above committed durable as one transaction of below.
 *
 * Not used by libalex.so yet: what a later opener may replay of a staging
 * log (its identity against below's state) is the next step of the plan.
 */
#ifndef ALEX_IO_OVER_H
#define ALEX_IO_OVER_H

#include "alex.h"
#include "io.h"

struct alex_io_over;

/* A backend over below for an engine opened on the same database path;
 * files: where its own files live (NULL: POSIX).  below must outlive it. */
int alex_io_over_new(alex_db *below, const struct alex_io *files, struct alex_io_over **out);
struct alex_io alex_io_over(struct alex_io_over *o);
void alex_io_over_free(struct alex_io_over *o);

/* The configuration above needs: a log of its own name, no fence (below's
 * keeps programs without ALEX out), no checkpoint (alex_merge instead), its
 * commits unsynced, only the database file. */
void alex_config_over(struct alex_config *cfg);

/*
 * Writes every block, size and truncation that above committed and below
 * does not hold into one transaction of below, and commits it (synced if
 * below is in FULL mode); then above begins a new epoch, its log empty and
 * its reads falling through to below.  Neither may have a transaction open
 * (ALEX_EBUSY), nor above a commit across databases undecided.  On an error
 * of below nothing has moved in above and the call may be repeated; an
 * error beginning above's next epoch stops above (its log still holds what
 * below now holds too).
 */
int alex_merge(alex_db *above, alex_db *below);

#endif
