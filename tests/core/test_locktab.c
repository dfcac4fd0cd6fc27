/*
 * The lock table (locktab.c): SQLite's lock bytes as one shared word.
 *
 * - Against a model written the plain way (per slot and region, the POSIX
 *   conflict rules with the table's two documented departures), over long
 *   random sequences of sets by several slots.
 * - Processes: forked children take SQLite's lock sequences on a word in
 *   shared memory, each with a real lock on its slot byte for liveness, and
 *   keep a two-part counter that a reader must always see whole; totals
 *   are exact, and holders killed with SIGKILL in each lock state are
 *   cleared by the next process that finds them in its way.
 * - A damaged word (any 64 bits) with no live slot in it never keeps a lock
 *   from being granted.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "locktab.h"

enum { N = ALEX_LT_NONE, R = ALEX_LT_READ, W = ALEX_LT_WRITE };
#define PEND ALEX_LT_PENDING
#define RES ALEX_LT_RESERVED
#define SHR ALEX_LT_SHARED

/* ---- the model ---- */

#define MS 6 /* slots in the random runs */
struct model {
	int held[MS][3]; /* region index 0 PENDING, 1 RESERVED, 2 SHARED */
};

/* What me asking type on region i keeps: the departures of locktab.h. */
static int kept(int i, int type)
{
	if (i == 0 && type == R)
		return N; /* a read lock on PENDING is not kept */
	if (i == 1 && type == R)
		return W; /* nor is RESERVED ever read-locked: kept as a write */
	return type;
}

static int model_set(struct model *m, int me, unsigned regions, int type)
{
	for (int i = 0; i < 3; i++) {
		if (!(regions & (1u << i)) || type == N)
			continue;
		/* what me asks for conflicts with what others hold: a write
		 * with anything, a read with a write; a read on PENDING is
		 * asked though not kept, RESERVED's read counts as a write */
		int want = i == 1 && type == R ? W : type;
		for (int k = 0; k < MS; k++)
			if (k != me && m->held[k][i] != N && (want == W || m->held[k][i] == W))
				return 1;
	}
	for (int i = 0; i < 3; i++)
		if (regions & (1u << i))
			m->held[me][i] = kept(i, type);
	return 0;
}

static void check_same(const struct model *m, uint64_t w, long step)
{
	for (int k = 0; k < MS; k++)
		for (int i = 0; i < 3; i++)
			cr_assert_eq(alex_lt_held(w, k, 1u << i), m->held[k][i],
				     "step %ld: slot %d region %d: table %d, model %d", step, k, i,
				     alex_lt_held(w, k, 1u << i), m->held[k][i]);
}

/* Random sets, sometimes over several regions at once, against the model:
 * the same grants, refusals and held locks at every step; a refusal names
 * a holder that is in the way, and changes nothing. */
Test(locktab, agrees_with_the_model)
{
	static const unsigned masks[] = { PEND, RES, SHR, PEND | RES, RES | SHR, ALEX_LT_ALL };
	uint64_t w = 0;
	struct model m = { 0 };
	unsigned seed = 12345;

	for (long step = 0; step < 400000; step++) {
		int me = rand_r(&seed) % MS;
		unsigned regions = masks[rand_r(&seed) % 6];
		int type = rand_r(&seed) % 3;
		struct alex_lt_conflict c;
		uint64_t before = w;
		int got = alex_lt_set(&w, me, regions, type, &c);
		int want = model_set(&m, me, regions, type);
		cr_assert_eq(got, want, "step %ld: slot %d regions %u type %d: table %d, model %d",
			     step, me, regions, type, got, want);
		if (got) {
			cr_assert_eq(w, before);
			cr_assert(c.slot >= 0 && c.slot < MS && c.slot != me);
			int i = c.type == R ? 2 : -1;
			if (i < 0)
				for (int j = 0; j < 3; j++)
					if ((regions & (1u << j)) && m.held[c.slot][j] == W)
						i = j;
			cr_assert(i >= 0 && m.held[c.slot][i] == c.type, "step %ld: wrong holder", step);
		}
		struct alex_lt_conflict t;
		cr_assert_eq(alex_lt_test(&w, me, regions, type, &t), alex_lt_set(&(uint64_t){ w }, me, regions, type, &c));
		check_same(&m, w, step);
	}
}

/* SQLite's own sequences (os_unix.c): SHARED as PENDING-read, SHARED
 * range read, PENDING release; then RESERVED, PENDING, EXCLUSIVE; back to
 * SHARED by a read lock on the range and the release of PENDING and
 * RESERVED together; NONE by one unlock of everything. */
static int sq_shared(uint64_t *w, int me)
{
	struct alex_lt_conflict c;
	if (alex_lt_set(w, me, PEND, R, &c))
		return 1;
	int r = alex_lt_set(w, me, SHR, R, &c);
	alex_lt_set(w, me, PEND, N, &c);
	return r;
}

Test(locktab, sqlite_sequences)
{
	uint64_t w = 0;
	struct alex_lt_conflict c;

	/* two readers; a third process may reserve beside them */
	cr_assert_eq(sq_shared(&w, 0), 0);
	cr_assert_eq(sq_shared(&w, 1), 0);
	cr_assert_eq(sq_shared(&w, 2), 0);
	cr_assert_eq(alex_lt_set(&w, 2, RES, W, &c), 0);
	cr_assert_eq(alex_lt_set(&w, 1, RES, W, &c), 1, "a second writer");
	cr_assert_eq(c.slot, 2);
	/* SQLite's check for a writer: F_GETLK on RESERVED */
	cr_assert_eq(alex_lt_test(&w, 0, RES, W, &c), 1);
	cr_assert_eq(alex_lt_test(&w, 2, RES, W, &c), 0, "its own lock is no conflict");
	/* PENDING taken: new readers are turned away, old ones stay */
	cr_assert_eq(alex_lt_set(&w, 2, PEND, W, &c), 0);
	cr_assert_eq(sq_shared(&w, 3), 1);
	cr_assert_eq(alex_lt_set(&w, 2, SHR, W, &c), 1, "EXCLUSIVE with readers");
	cr_assert_eq(c.type, R);
	cr_assert_eq(alex_lt_set(&w, 0, ALEX_LT_ALL, N, &c), 0);
	cr_assert_eq(alex_lt_set(&w, 1, ALEX_LT_ALL, N, &c), 0);
	cr_assert_eq(alex_lt_set(&w, 2, SHR, W, &c), 0, "EXCLUSIVE once the readers left");
	cr_assert_eq(alex_lt_test(&w, 3, SHR, R, &c), 1);
	cr_assert_eq(alex_lt_held(w, 2, SHR), W);
	/* back to SHARED, then PENDING and RESERVED go together */
	cr_assert_eq(alex_lt_set(&w, 2, SHR, R, &c), 0);
	cr_assert_eq(alex_lt_set(&w, 2, PEND | RES, N, &c), 0);
	cr_assert_eq(sq_shared(&w, 3), 0);
	cr_assert_eq(alex_lt_set(&w, 2, ALEX_LT_ALL, N, &c), 0);
	cr_assert_eq(alex_lt_set(&w, 3, ALEX_LT_ALL, N, &c), 0);
	cr_assert_eq(w, 0);
	/* a hot journal's rollback: SHARED straight to PENDING and EXCLUSIVE */
	cr_assert_eq(sq_shared(&w, 4), 0);
	cr_assert_eq(alex_lt_set(&w, 4, PEND, W, &c), 0);
	cr_assert_eq(alex_lt_set(&w, 4, SHR, W, &c), 0);
	cr_assert_eq(alex_lt_set(&w, 5, RES, W, &c), 0, "RESERVED is another byte");
	cr_assert_eq(alex_lt_set(&w, 4, ALEX_LT_ALL, N, &c), 0);
}

/* ---- damage: bits of no live slot ---- */

static int none_alive(void *arg, int slot)
{
	alex_lt_clear(arg, slot);
	return 0;
}

static int all_alive(void *arg, int slot)
{
	(void)arg, (void)slot;
	return 1;
}

/* Any word at all: with every slot dead, each lock is granted after the
 * clearing; an owner field naming no slot is cleared without asking. */
Test(locktab, damaged_word_never_keeps_a_lock)
{
	unsigned seed = 99;
	struct alex_lt_conflict c;

	for (int i = 0; i < 100000; i++) {
		uint64_t w = (uint64_t)rand_r(&seed) << 42 ^ (uint64_t)rand_r(&seed) << 21 ^
			     (uint64_t)rand_r(&seed);
		int me = rand_r(&seed) % ALEX_LT_SLOTS;
		cr_assert_eq(alex_lt_lock(&w, me, ALEX_LT_SHARED, W, none_alive, &w, &c), 0);
		cr_assert_eq(alex_lt_lock(&w, me, PEND | RES, W, none_alive, &w, &c), 0);
		cr_assert_eq(alex_lt_held(w, me, SHR), W);
		cr_assert_eq(alex_lt_set(&w, me, ALEX_LT_ALL, N, &c), 0);
		cr_assert_eq(w & ((1ULL << ALEX_LT_SLOTS) - 1), 0, "a reader left in %#llx",
			     (unsigned long long)w);
	}
	/* the owner fields hold 63 (no slot): cleared though every slot lives */
	uint64_t w = ~0ULL & ~((1ULL << ALEX_LT_SLOTS) - 1);
	cr_assert_eq(alex_lt_lock(&w, 0, ALEX_LT_ALL, W, all_alive, NULL, &c), 0);
	cr_assert_eq(alex_lt_held(w, 0, SHR), W);
	/* a caller with no slot takes nothing and changes nothing */
	w = 0;
	cr_assert_eq(alex_lt_set(&w, ALEX_LT_SLOTS, RES, W, &c), 1);
	cr_assert_eq(alex_lt_set(&w, -1, SHR, R, &c), 1);
	cr_assert_eq(alex_lt_lock(&w, ALEX_LT_SLOTS + 3, SHR, R, all_alive, NULL, &c), EINVAL);
	cr_assert_eq(w, 0);
	/* a live holder is answered EAGAIN, and named */
	w = 0;
	cr_assert_eq(alex_lt_set(&w, 7, RES, W, &c), 0);
	cr_assert_eq(alex_lt_lock(&w, 1, RES, W, all_alive, NULL, &c), EAGAIN);
	cr_assert_eq(c.slot, 7);
}

/* ---- processes ---- */

struct shared {
	uint64_t word;
	long a, b;   /* a writer bumps a, pauses, bumps b: a reader sees a == b */
	long writes; /* the writers' own count, under EXCLUSIVE */
	int torn;    /* readers that saw a != b */
	int ready;   /* children that hold their slot */
};

static char lockfile[64];

static int slot_lock(int fd, int slot, short type)
{
	struct flock l = { .l_type = type, .l_whence = SEEK_SET, .l_start = slot, .l_len = 1 };
	return fcntl(fd, F_OFD_SETLK, &l);
}

struct live {
	int fd;
	struct shared *sh;
};

/* A slot whose byte nobody holds is dead: take the byte, clear it, let go. */
static int byte_alive(void *arg, int slot)
{
	struct live *l = arg;
	if (slot_lock(l->fd, slot, F_WRLCK) != 0)
		return 1;
	alex_lt_clear(&l->sh->word, slot);
	slot_lock(l->fd, slot, F_UNLCK);
	return 0;
}

/* one of SQLite's steps, retried as a busy handler would */
static void step(struct live *l, int me, unsigned regions, int type)
{
	struct alex_lt_conflict c;
	while (alex_lt_lock(&l->sh->word, me, regions, type, byte_alive, l, &c) == EAGAIN)
		sched_yield();
}

static int try_shared(struct live *l, int me)
{
	struct alex_lt_conflict c;
	if (alex_lt_lock(&l->sh->word, me, PEND, R, byte_alive, l, &c))
		return 1;
	int r = alex_lt_lock(&l->sh->word, me, SHR, R, byte_alive, l, &c);
	alex_lt_set(&l->sh->word, me, PEND, N, &c);
	return r;
}

/* Writers and readers; stop_at: 0 runs to the end, else the state in which
 * the process stops and waits to be killed (1 SHARED, 2 RESERVED, 3
 * PENDING, 4 EXCLUSIVE). */
static void child(struct shared *sh, int me, int txns, int writer, int stop_at)
{
	struct live l = { .fd = open(lockfile, O_RDWR), .sh = sh };
	if (l.fd < 0 || slot_lock(l.fd, me, F_WRLCK) != 0)
		_exit(2);
	/* a slot taken is cleared of what a dead process left in it */
	alex_lt_clear(&sh->word, me);
	__atomic_add_fetch(&sh->ready, 1, __ATOMIC_SEQ_CST);
	for (int t = 0; t < txns; t++) {
		while (try_shared(&l, me))
			sched_yield();
		if (stop_at == 1)
			pause();
		if (!writer) {
			long a = __atomic_load_n(&sh->a, __ATOMIC_SEQ_CST);
			for (volatile int spin = 0; spin < 300; spin++)
				;
			long b = __atomic_load_n(&sh->b, __ATOMIC_SEQ_CST);
			if (a != b)
				__atomic_add_fetch(&sh->torn, 1, __ATOMIC_SEQ_CST);
			step(&l, me, ALEX_LT_ALL, N);
			continue;
		}
		struct alex_lt_conflict c;
		/* RESERVED refused: SQLite gives up the transaction (BUSY) */
		if (alex_lt_lock(&sh->word, me, RES, W, byte_alive, &l, &c)) {
			step(&l, me, ALEX_LT_ALL, N);
			t--;
			sched_yield();
			continue;
		}
		if (stop_at == 2)
			pause();
		step(&l, me, PEND, W);
		if (stop_at == 3)
			pause();
		step(&l, me, SHR, W);
		if (stop_at == 4)
			pause();
		sh->a++;
		for (volatile int spin = 0; spin < 300; spin++)
			;
		sh->b++;
		sh->writes++;
		step(&l, me, SHR, R);
		step(&l, me, PEND | RES, N);
		step(&l, me, ALEX_LT_ALL, N);
	}
	_exit(0);
}

static struct shared *map_shared(void)
{
	struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(sh, MAP_FAILED);
	memset(sh, 0, sizeof *sh);
	strcpy(lockfile, "/tmp/alex-locktab-XXXXXX");
	int fd = mkstemp(lockfile);
	cr_assert_geq(fd, 0);
	close(fd);
	return sh;
}

static void wait_all(pid_t *pids, int n)
{
	for (int i = 0; i < n; i++) {
		int st;
		cr_assert_eq(waitpid(pids[i], &st, 0), pids[i]);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d: status %#x", i, st);
	}
}

/* 3 writers and 3 readers: every write counted, no reader sees a write
 * half done. */
Test(locktab, processes_exact_totals, .timeout = 120)
{
	struct shared *sh = map_shared();
	pid_t pids[6];
	enum { TXNS = 3000 };

	for (int i = 0; i < 6; i++)
		if ((pids[i] = fork()) == 0)
			child(sh, i, TXNS, i < 3, 0);
	wait_all(pids, 6);
	cr_expect_eq(sh->writes, 3 * TXNS);
	cr_expect_eq(sh->a, 3 * TXNS);
	cr_expect_eq(sh->b, 3 * TXNS);
	cr_expect_eq(sh->torn, 0);
	cr_expect_eq(sh->word, 0, "locks left: %#llx", (unsigned long long)sh->word);
	unlink(lockfile);
}

/* A holder killed in each lock state: the others clear it when it is in
 * their way, and finish with exact totals. */
Test(locktab, a_killed_holder_never_wedges_the_others, .timeout = 120)
{
	for (int state = 1; state <= 4; state++) {
		struct shared *sh = map_shared();
		pid_t victim, pids[4];

		if ((victim = fork()) == 0)
			child(sh, 5, 1, 1, state);
		/* the victim holds its state before the others start */
		for (int spin = 0; spin < 2000000; spin++) {
			int held = state == 1 ? alex_lt_held(sh->word, 5, SHR) == R
				 : state == 2 ? alex_lt_held(sh->word, 5, RES) == W
				 : state == 3 ? alex_lt_held(sh->word, 5, PEND) == W
					      : alex_lt_held(sh->word, 5, SHR) == W;
			if (held)
				break;
			usleep(10);
		}
		for (int i = 0; i < 4; i++)
			if ((pids[i] = fork()) == 0)
				child(sh, i, 500, i < 2, 0);
		while (__atomic_load_n(&sh->ready, __ATOMIC_SEQ_CST) < 5)
			usleep(100);
		usleep(20000); /* the others now wait on the victim */
		kill(victim, SIGKILL);
		waitpid(victim, NULL, 0);
		wait_all(pids, 4);
		cr_expect_eq(sh->writes, 1000, "state %d", state);
		cr_expect_eq(sh->torn, 0, "state %d", state);
		cr_expect_eq(sh->word, 0, "state %d: locks left: %#llx", state,
			     (unsigned long long)sh->word);
		munmap(sh, sizeof *sh);
		unlink(lockfile);
	}
}
