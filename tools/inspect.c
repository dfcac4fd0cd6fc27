/*
 * inspect.c - `alex inspect [--json] FILE`: the log of a database as a
 * human reads it -- header, epochs, records, the pages the log holds, live
 * and dead bytes, what a checkpoint would write -- or, with --json, one
 * object with the same members.  Here: the arguments, and which printer
 * (inspect_text.c, inspect_json.c) says what of the map; the exit status.
 *
 * Read-only, and safe on a log in use: core/inspect_map.c reads the bytes
 * without any lock (neither SQLite's nor the log's) and never recovers,
 * repairs, writes or syncs.  What it shows of a busy log is a snapshot.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "inspect.h"
#include "xts_io.h"
#include "inspect_print.h"

/* The whole report: the exit status, 1 for a damaged log or one that
 * cannot be used, 0 for one that holds nothing. */
static int report(const struct alex_logmap *lm, const char *path, const char *log, int json)
{
	if (json)
		inspect_json_report(lm, path, log);
	else
		inspect_text_report(lm, path, log);
	if (lm->cur < 0)
		return !lm->empty;
	return alex_logmap_damaged(lm) || lm->epoch_state == ALEX_EPOCH_FOREIGN;
}

static int bad(const char *what, const char *arg)
{
	fprintf(stderr, "alex inspect: %s%s%s (usage: alex inspect [--json] FILE)\n",
		arg ? arg : "", arg ? ": " : "", what);
	return 2;
}

/* FILE must be a database, or at least have a log beside it: 0 or 2. */
static int check_path(const char *path, const char *log)
{
	size_t n = strlen(path);
	struct stat st;

	if (!stat(path, &st) && S_ISDIR(st.st_mode))
		return bad("a directory, not a database", path);
	int db_err = stat(path, &st) ? errno : 0;
	int has_log = !stat(log, &st) || errno != ENOENT;
	if (!has_log && !db_err && n > 5 && !strcmp(path + n - 5, "-alex"))
		return bad("that is a log; give its database", path);
	if (!has_log && db_err)
		return bad(strerror(db_err), path);
	return 0;
}

/* With no log: does the database file carry ALEX's fence all the same
 * ("ALXF" at byte 72, in both of protect.c's marks)?  1 yes, 0 no, 2 it
 * cannot be told: the file is encrypted (its mark is ciphertext; second
 * review).  Read by system call: a libc open under libalex.so would make
 * an engine of the tool's. */
static int fenced(const char *path)
{
	static const uint8_t any_key[ALEX_KCV_BYTES];
	uint8_t h[ALEX_XTS_MARKER > 76 ? ALEX_XTS_MARKER : 76];
	long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	long got = syscall(SYS_pread64, (int)fd, h, sizeof h, 0);
	syscall(SYS_close, (int)fd);
	if (got > 0 && alex_xts_probe(h, (size_t)got, any_key) != ALEX_XTS_NOT)
		return 2;
	return got >= 76 && memcmp(h + 72, "ALXF", 4) == 0;
}

const char *alex_tool_db_path(const char *path, char *buf, size_t cap)
{
	struct stat st;
	char *real;

	if (lstat(path, &st) != 0 || !S_ISLNK(st.st_mode) || !(real = realpath(path, NULL)))
		return path;
	if (strlen(real) >= cap) {
		free(real);
		return path;
	}
	strcpy(buf, real);
	free(real);
	return buf;
}

int alex_inspect_main(int argc, char **argv)
{
	const char *path = NULL;
	int json = 0, opts = 1, rc;

	for (int i = 1; i < argc; i++) {
		if (opts && !strcmp(argv[i], "--json")) {
			json = 1;
		} else if (opts && (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))) {
			printf("usage: alex inspect [--json] FILE\n");
			return 0;
		} else if (opts && !strcmp(argv[i], "--")) {
			opts = 0;
		} else if (opts && argv[i][0] == '-' && argv[i][1]) {
			return bad("unknown option", argv[i]);
		} else if (path) {
			return bad("one database only", argv[i]);
		} else {
			path = argv[i];
		}
	}
	if (!path || !*path)
		return bad("no database given", NULL);
	char real[4096];
	path = alex_tool_db_path(path, real, sizeof real);
	size_t n = strlen(path) + sizeof "-alex";
	char *log = malloc(n);
	if (!log) {
		fprintf(stderr, "alex inspect: %s\n", alex_strerror(ALEX_ENOMEM));
		return 1;
	}
	snprintf(log, n, "%s-alex", path);
	if ((rc = check_path(path, log))) {
		free(log);
		return rc;
	}
	struct alex_logmap lm;
	int err = alex_logmap_read(path, &lm), orphan = err == ENOENT ? fenced(path) : 0;
	if (err == ENOENT && json)
		inspect_json_no_log(path, log, orphan);
	else if (err == ENOENT)
		inspect_text_no_log(path, log, orphan);
	else if (err && err != ALEX_ENOKEY)
		fprintf(stderr, "alex inspect: %s: %s\n", log, alex_strerror(err));
	if (err == ALEX_ENOKEY || (!err && (lm.hdr.flags & ALEX_HDR_XTS))) {
		/* the database file's mark and every page are ciphertext: what
		 * inspect would conclude from them is not known to be true */
		fprintf(stderr, "alex inspect: %s: an encrypted log (format 5): its pages and the "
				"database file's mark need the key; ALEX_KEY_FILE=KEY alex stat %s "
				"reads them\n", log, path);
		err = ALEX_ENOKEY;
	}
	rc = err == ENOENT ? orphan == 1 : err ? 1 : report(&lm, path, log, json);
	alex_logmap_free(&lm);
	free(log);
	return rc;
}
