/*
 * tree.c - directory trees made and removed in C (what mkdir -p and rm -rf
 * would do), for the per-run directories and the output directory.
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "bench.h"

int bench_tree_make(const char *path)
{
	char p[PATH_MAX];
	struct stat st;

	if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p) {
		errno = ENAMETOOLONG;
		return -1;
	}
	/* each parent in turn: cut the path at its slashes ("a//b/" too) */
	for (char *s = p + 1; *s; s++) {
		if (*s != '/' || s[-1] == '/')
			continue;
		*s = 0;
		if (mkdir(p, 0755) && errno != EEXIST)
			return -1;
		*s = '/';
	}
	if (mkdir(p, 0755) && errno != EEXIST)
		return -1;
	if (stat(p, &st))
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st, (void)type, (void)ftw;
	return remove(path) && errno != ENOENT ? -1 : 0;
}

int bench_tree_remove(const char *path)
{
	/* depth first, so each directory is empty when its turn comes; links
	 * are removed, never followed */
	if (nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS) && errno != ENOENT)
		return -1;
	return 0;
}

void bench_file_part(char *out, size_t cap, const char *name)
{
	size_t n = 0;

	for (; *name && n + 1 < cap; name++)
		out[n++] = (char)((*name >= 'a' && *name <= 'z') || (*name >= 'A' && *name <= 'Z') ||
					  (*name >= '0' && *name <= '9') || *name == '-' || *name == '.'
				  ? *name : '_');
	if (cap)
		out[n] = 0;
}
