/*
 * real.c - resolving the real libc functions.  Done once, in the library's
 * constructor; a call that arrives earlier (another library's constructor)
 * resolves on the spot.  dlsym(RTLD_NEXT) never calls back into the
 * functions we wrap, so no recursion guard is needed for it; a symbol that
 * resolves to our own wrapper would loop forever, so that is refused.
 */
#include "real.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ALEX_REAL_DEF(name) __typeof__(name) *real_##name;
ALEX_REAL_LIST(ALEX_REAL_DEF)
#undef ALEX_REAL_DEF

static void *resolve(const char *name, void *self)
{
	void *p = dlsym(RTLD_NEXT, name);

	if (p == self) {
		/* another copy of us earlier in the chain would make us our
		 * own "real" function: stop rather than recurse */
		static const char msg[] = "libalex: symbol resolves to itself; refusing to run\n";
		syscall(SYS_write, 2, msg, sizeof msg - 1);
		syscall(SYS_exit_group, 127);
	}
	return p;
}

void alex_real_init(void)
{
#define ALEX_REAL_RESOLVE(name)                                                                   \
	if (!real_##name)                                                                         \
		real_##name = (__typeof__(name) *)resolve(#name, (void *)name);
	ALEX_REAL_LIST(ALEX_REAL_RESOLVE)
#undef ALEX_REAL_RESOLVE
}
