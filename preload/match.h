/* match.h - which files are SQLite's, by name (match.c, ALEX_MATCH). */
#ifndef ALEX_PRELOAD_MATCH_H
#define ALEX_PRELOAD_MATCH_H

#include <stddef.h>

#include "state.h"

/* Classifies a path by name.  For a journal or WAL, db receives the
 * database's path (dbcap bytes). */
enum alex_role alex_match(const char *path, char *db, size_t dbcap);

#endif
