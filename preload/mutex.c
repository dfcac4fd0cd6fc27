/* mutex.c - the slow half of mutex.h: waiting, and waking a waiter. */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mutex.h"

/* Sleeps while *word == val (or not at all); a signal or a spurious wake
 * returns early, so callers look again.  errno is the caller's. */
void alex_futex_wait(int *word, int val)
{
	int saved = errno;
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
	errno = saved;
}

void alex_futex_wake_all(int *word)
{
	int saved = errno;
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	errno = saved;
}

void alex_mutex_wait(alex_mutex *m)
{
	/* mark it waited for; whoever unlocks a 2 wakes one sleeper, and a
	 * sleeper that takes it leaves 2 behind, so no wake is ever lost */
	while (__atomic_exchange_n(&m->word, 2, __ATOMIC_ACQUIRE) != 0)
		alex_futex_wait(&m->word, 2);
}

void alex_mutex_wake(alex_mutex *m)
{
	int saved = errno;
	syscall(SYS_futex, &m->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	errno = saved;
}
