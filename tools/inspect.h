/*
 * inspect.h - `alex inspect [--json] FILE`: the log of a database as a
 * human reads it (inspect.c, printed by inspect_text.c or inspect_json.c).
 * Read-only: safe on a log in use.
 */
#ifndef ALEX_TOOLS_INSPECT_H
#define ALEX_TOOLS_INSPECT_H

#include <stddef.h>

/*
 * argv[0] is "inspect".  Prints to stdout (errors to stderr) and returns
 * the exit status: 0 a log that is whole (or no log at all), 1 a damaged
 * log (what is valid is printed, then the damage) or one that cannot be
 * read, 2 a bad argument.
 */
int alex_inspect_main(int argc, char **argv);

/* The database file as SQLite names it, whose log is beside it: a symbolic
 * link's target (SQLite resolves links; review: alex recover of a link
 * took the link's missing log for an orphan's and unfenced the target).
 * path itself, or buf holding the target. */
const char *alex_tool_db_path(const char *path, char *buf, size_t cap);

#endif
