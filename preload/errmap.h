/* errmap.h - the one translation of an engine result into errno. */
#ifndef ALEX_PRELOAD_ERRMAP_H
#define ALEX_PRELOAD_ERRMAP_H

#include <errno.h>

#include "alex.h"

/* 0, a positive errno (passed on), or ALEX_E* -> the errno a libc call
 * would give: a corrupt log, a bad block or a stopped engine is EIO. */
static inline int alex_errno_of(int rc)
{
	if (rc >= 0)
		return rc;
	switch (rc) {
	case ALEX_ENOMEM: return ENOMEM;
	case ALEX_EINVAL: return EINVAL;
	case ALEX_EBUSY: return EBUSY;
	/* not EACCES: an open refused with it where no log exists is taken
	 * for a read-only place and passed through (hooks_open.c) -- a
	 * database in clear opened with a key, or ciphertext shown to SQLite */
	case ALEX_EKEY: case ALEX_EPLAIN: return EKEYREJECTED;
	case ALEX_ENOKEY: return ENOKEY;
	default: return EIO;
	}
}

#endif
