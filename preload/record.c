/*
 * record.c - the test build's watch over SQLite's super-journals
 * (record.h).  Empty in the shipped library.
 */
#ifdef ALEX_TESTING
#include "hooks.h"
#include "record.h"
#include "multidb.h"

#define WATCH_FDS 65536
static unsigned char watched[WATCH_FDS / 8];

int alex_rec_super_name(const char *path)
{
	return alex_multidb_is_super(path) && alex_active();
}

void alex_rec_watch(int fd, int on)
{
	if (fd < 0 || fd >= WATCH_FDS)
		return;
	unsigned char bit = (unsigned char)(1u << (fd & 7));
	if (on)
		__atomic_or_fetch(&watched[fd >> 3], bit, __ATOMIC_RELAXED);
	else if (__atomic_load_n(&watched[fd >> 3], __ATOMIC_RELAXED) & bit)
		__atomic_and_fetch(&watched[fd >> 3], (unsigned char)~bit, __ATOMIC_RELAXED);
}

int alex_rec_watched(int fd)
{
	return fd >= 0 && fd < WATCH_FDS &&
	       (__atomic_load_n(&watched[fd >> 3], __ATOMIC_RELAXED) >> (fd & 7) & 1);
}
#else
typedef int alex_record_unused; /* ISO C: no empty translation unit */
#endif
