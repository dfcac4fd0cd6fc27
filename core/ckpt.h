/* ckpt.h - copying the log into the base files (ckpt.c). */
#ifndef ALEX_CKPT_H
#define ALEX_CKPT_H

#include "db.h"

/* Copies every committed block into the base files, syncs them, and
 * begins a new epoch.  The caller keeps other writers out. */
int alex_ckpt_run(struct alex_db *db);

#endif
