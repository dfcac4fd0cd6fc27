/*
 * mutex.h - the interposer's locks: a word and a futex.
 *
 * An autocommit INSERT under ALEX took some fifty pthread mutex pairs, at
 * about 55 user instructions each (callgrind): 7 % of all it ran.  The
 * uncontended case here is one compare-and-swap to take and one exchange
 * to give back, inline; only a lock that someone waits for makes a system
 * call.  The word is 0 (free), 1 (held) or 2 (held, and perhaps waited
 * for): the classic three-state futex lock.
 *
 * No single-thread shortcut (glibc's pthread mutexes use plain stores
 * while __libc_single_threaded): the processes that take these locks per
 * transaction have ALEX's threads (the flusher, the lease), and the test
 * cost 400 instructions per INSERT there; a one-thread process (FULL mode,
 * a short one) pays about 5 ns more per pair, some 250 ns per transaction
 * beside its sync.
 *
 * Process-private (a fork()ed child has its own copy, reset by the fork
 * handlers as before); not recursive; no error checking.  A lock that a
 * condition variable waits on stays a pthread mutex (flusher.c, span.c's
 * lease thread).  As with pthread's, a lock may be freed as soon as the
 * unlocking thread lets go: the wake that may follow touches only the
 * word's address, which the kernel answers harmlessly once it is gone.
 */
#ifndef ALEX_MUTEX_H
#define ALEX_MUTEX_H

typedef struct {
	int word;
} alex_mutex;

#define ALEX_MUTEX_INIT { 0 }

void alex_mutex_wait(alex_mutex *m);
void alex_mutex_wake(alex_mutex *m);
void alex_futex_wait(int *word, int val);
void alex_futex_wake_all(int *word);

static inline void alex_mutex_init(alex_mutex *m)
{
	__atomic_store_n(&m->word, 0, __ATOMIC_RELEASE);
}

static inline void alex_mutex_lock(alex_mutex *m)
{
	int free_ = 0;
	if (__builtin_expect(!__atomic_compare_exchange_n(&m->word, &free_, 1, 0, __ATOMIC_ACQUIRE,
							  __ATOMIC_RELAXED), 0))
		alex_mutex_wait(m);
}

/* 0 when taken, nonzero when someone holds it (pthread_mutex_trylock's sense) */
static inline int alex_mutex_trylock(alex_mutex *m)
{
	int free_ = 0;
	return !__atomic_compare_exchange_n(&m->word, &free_, 1, 0, __ATOMIC_ACQUIRE,
					    __ATOMIC_RELAXED);
}

/* trylock, retried for 10 ms by the clock: 0 when taken */
int alex_mutex_trylock_for(alex_mutex *m);

static inline void alex_mutex_unlock(alex_mutex *m)
{
	if (__builtin_expect(__atomic_exchange_n(&m->word, 0, __ATOMIC_RELEASE) == 2, 0))
		alex_mutex_wake(m);
}

#endif
