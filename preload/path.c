/* path.c - a path made absolute, for a database's identity and its log. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hooks.h"

/* path made absolute against dirfd (or the cwd) */
int alex_abs_path(int dirfd, const char *path, char *out, size_t cap)
{
	char base[PATH_MAX];
	size_t n;

	if (path[0] == '/') {
		n = strlen(path);
		if (n >= cap)
			return ENAMETOOLONG;
		memcpy(out, path, n + 1);
		return 0;
	}
	if (dirfd == AT_FDCWD) {
		if (!getcwd(base, sizeof base))
			return errno;
	} else {
		char link[64];
		snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
		ssize_t k = readlink(link, base, sizeof base - 1);
		if (k < 0)
			return errno;
		base[k] = 0;
	}
	if ((size_t)snprintf(out, cap, "%s/%s", base, path) >= cap)
		return ENAMETOOLONG;
	return 0;
}
