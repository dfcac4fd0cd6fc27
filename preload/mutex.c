/* mutex.c - the slow half of mutex.h: waiting, and waking a waiter. */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "flush.h"
#include "mutex.h"

/* One futex call; errno is the caller's (the hooks keep it). */
static void futex(int *word, int op, int val)
{
	int saved = errno;
	syscall(SYS_futex, word, op, val, NULL, NULL, 0);
	errno = saved;
}

/* Sleeps while *word == val (or not at all); a signal or a spurious wake
 * returns early, so callers look again. */
void alex_futex_wait(int *word, int val)
{
	futex(word, FUTEX_WAIT_PRIVATE, val);
}

void alex_futex_wake_all(int *word)
{
	futex(word, FUTEX_WAKE_PRIVATE, INT_MAX);
}

void alex_mutex_wait(alex_mutex *m)
{
	/* mark it waited for; whoever unlocks a 2 wakes one sleeper, and a
	 * sleeper that takes it leaves 2 behind, so no wake is ever lost */
	while (__atomic_exchange_n(&m->word, 2, __ATOMIC_ACQUIRE) != 0)
		futex(&m->word, FUTEX_WAIT_PRIVATE, 2);
}

int alex_mutex_trylock_for(alex_mutex *m)
{
	struct timespec pause = { 0, 100000 };
	uint64_t until = alex_now_ns() + 10000000u;

	while (alex_mutex_trylock(m)) {
		if (alex_now_ns() >= until)
			return -1;
		nanosleep(&pause, NULL);
	}
	return 0;
}

void alex_mutex_wake(alex_mutex *m)
{
	futex(&m->word, FUTEX_WAKE_PRIVATE, 1);
}
