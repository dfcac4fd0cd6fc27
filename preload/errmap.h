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
	case ALEX_EKEY: case ALEX_ENOKEY: case ALEX_EPLAIN: return EACCES;
	default: return EIO;
	}
}

#endif
