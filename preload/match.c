/* match.c - which files are ALEX's, by name (ALEX_MATCH). */
#include <fnmatch.h>
#include <string.h>

#include "config.h"
#include "match.h"

/* Is the file name in path[0..len) one of ALEX_MATCH's?  SQLite asks
 * about the same few names at every transaction (journal, WAL, database),
 * so the default globs ("*.db": a suffix) are compared as suffixes, with no
 * copy and no fnmatch. */
static int db_name(const char *path, size_t len)
{
	char base[256];
	const char *b = path + len;

	while (b > path && b[-1] != '/')
		b--;
	size_t n = len - (size_t)(b - path);
	if (n == 0 || n >= sizeof base)
		return 0;
	int globs = 0;
	for (int i = 0; i < alex_cfg.npatterns; i++) {
		size_t k = alex_cfg.suffix[i];
		if (!k--)
			globs = 1;
		else if (n >= k && memcmp(b + n - k, alex_cfg.patterns[i] + 1, k) == 0)
			return 1;
	}
	if (!globs)
		return 0;
	memcpy(base, b, n);
	base[n] = 0;
	for (int i = 0; i < alex_cfg.npatterns; i++)
		if (!alex_cfg.suffix[i] && fnmatch(alex_cfg.patterns[i], base, 0) == 0)
			return 1;
	return 0;
}

static int ends_with(const char *s, size_t len, const char *suffix)
{
	size_t k = strlen(suffix);
	return len > k && memcmp(s + len - k, suffix, k) == 0;
}

enum alex_role alex_match(const char *path, char *db, size_t dbcap)
{
	size_t len;
	enum alex_role role;

	if (!path)
		return ROLE_NONE;
	len = strlen(path);
	if (ends_with(path, len, "-journal")) {
		len -= 8;
		role = ROLE_JOURNAL;
	} else if (ends_with(path, len, "-wal")) {
		len -= 4;
		role = ROLE_WAL;
	} else if (ends_with(path, len, "-shm")) {
		len -= 4;
		role = ROLE_SHM;
	} else {
		role = ROLE_DB;
	}
	if (!db_name(path, len))
		return ROLE_NONE;
	if (db) {
		if (len >= dbcap)
			return ROLE_NONE;
		memcpy(db, path, len);
		db[len] = 0;
	}
	return role;
}
