/* recover.h - reading the log back: recovery at open, catching up (recover.c). */
#ifndef ALEX_RECOVER_H
#define ALEX_RECOVER_H

#include "db.h"

int alex_recover(struct alex_db *db);
/* Applies records other engines committed since this one last looked.
 * may_abort: the caller holds SQLite's SHARED lock, so a transaction across
 * databases whose super-journal still exists is over, and its conditional
 * records here are rolled back (made invalid, durably). */
int alex_refresh_scan(struct alex_db *db, int may_abort);

#endif
