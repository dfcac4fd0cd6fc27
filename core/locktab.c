/*
 * locktab.c - SQLite's lock bytes as one word of shared memory (locktab.h).
 */
#include <errno.h>

#include "locktab.h"

#define S_MASK ((1ULL << ALEX_LT_SLOTS) - 1)
enum { R_SHIFT = 46, P_SHIFT = 52, X_SHIFT = 58 };

static unsigned owner(uint64_t w, int shift)
{
	return (unsigned)(w >> shift) & 63;
}

static uint64_t with_owner(uint64_t w, int shift, unsigned v)
{
	return (w & ~(63ULL << shift)) | (uint64_t)v << shift;
}

/* An owner field other than 0 and me: in the way. */
static int other(unsigned o, int me)
{
	return o != 0 && o != (unsigned)me + 1;
}

static int in_way(struct alex_lt_conflict *c, unsigned o)
{
	c->slot = (int)o - 1;
	c->type = ALEX_LT_WRITE;
	return 1;
}

/* A caller that is no slot holds nothing, and may take nothing. */
static int no_slot(int me, struct alex_lt_conflict *c)
{
	if (me >= 0 && me < ALEX_LT_SLOTS)
		return 0;
	c->slot = me;
	c->type = ALEX_LT_WRITE;
	return 1;
}

/* The new word for slot me's (regions, type), into *out; or 1 with *c. */
static int next(uint64_t w, int me, unsigned regions, int type, uint64_t *out,
		struct alex_lt_conflict *c)
{
	uint64_t bit = 1ULL << me;
	unsigned mine = (unsigned)me + 1, o;

	if (regions & ALEX_LT_PENDING) {
		if (type != ALEX_LT_NONE && other(o = owner(w, P_SHIFT), me))
			return in_way(c, o);
		if (type == ALEX_LT_WRITE)
			w = with_owner(w, P_SHIFT, mine);
		else if (owner(w, P_SHIFT) == mine)
			w = with_owner(w, P_SHIFT, 0); /* a read lock is not kept */
	}
	if (regions & ALEX_LT_RESERVED) {
		if (type != ALEX_LT_NONE && other(o = owner(w, R_SHIFT), me))
			return in_way(c, o);
		if (type != ALEX_LT_NONE)
			w = with_owner(w, R_SHIFT, mine);
		else if (owner(w, R_SHIFT) == mine)
			w = with_owner(w, R_SHIFT, 0);
	}
	if (regions & ALEX_LT_SHARED) {
		if (type != ALEX_LT_NONE && other(o = owner(w, X_SHIFT), me))
			return in_way(c, o);
		uint64_t readers = w & S_MASK & ~bit;
		if (type == ALEX_LT_WRITE && readers) {
			c->slot = __builtin_ctzll(readers);
			c->type = ALEX_LT_READ;
			return 1;
		}
		if (owner(w, X_SHIFT) == mine)
			w = with_owner(w, X_SHIFT, 0);
		w &= ~bit;
		if (type == ALEX_LT_READ)
			w |= bit;
		else if (type == ALEX_LT_WRITE)
			w = with_owner(w, X_SHIFT, mine);
	}
	*out = w;
	return 0;
}

int alex_lt_test(const uint64_t *word, int me, unsigned regions, int type,
		 struct alex_lt_conflict *c)
{
	uint64_t out;

	if (no_slot(me, c))
		return 1;
	return next(__atomic_load_n(word, __ATOMIC_SEQ_CST), me, regions, type, &out, c);
}

int alex_lt_set(uint64_t *word, int me, unsigned regions, int type, struct alex_lt_conflict *c)
{
	uint64_t w = __atomic_load_n(word, __ATOMIC_SEQ_CST), n;

	if (no_slot(me, c))
		return 1;
	do {
		if (next(w, me, regions, type, &n, c))
			return 1;
	} while (!__atomic_compare_exchange_n(word, &w, n, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
	return 0;
}

void alex_lt_clear(uint64_t *word, int slot)
{
	uint64_t w = __atomic_load_n(word, __ATOMIC_SEQ_CST), n;
	unsigned v = (unsigned)slot + 1;

	do {
		n = w;
		if (slot < ALEX_LT_SLOTS)
			n &= ~(1ULL << slot);
		if (owner(n, R_SHIFT) == v)
			n = with_owner(n, R_SHIFT, 0);
		if (owner(n, P_SHIFT) == v)
			n = with_owner(n, P_SHIFT, 0);
		if (owner(n, X_SHIFT) == v)
			n = with_owner(n, X_SHIFT, 0);
	} while (n != w &&
		 !__atomic_compare_exchange_n(word, &w, n, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
}

int alex_lt_lock(uint64_t *word, int me, unsigned regions, int type, alex_lt_alive_fn alive,
		 void *arg, struct alex_lt_conflict *c)
{
	if (no_slot(me, c))
		return EINVAL;
	/* Each turn clears one dead holder or ends; a bound all the same, in
	 * case slots keep dying and being taken under us. */
	for (int turn = 0; turn < 2 * ALEX_LT_SLOTS + 4; turn++) {
		if (!alex_lt_set(word, me, regions, type, c))
			return 0;
		if (c->slot >= ALEX_LT_SLOTS)
			alex_lt_clear(word, c->slot); /* a damaged field: nobody's */
		else if (alive(arg, c->slot))
			return EAGAIN;
	}
	return EAGAIN;
}

int alex_lt_held(uint64_t w, int me, unsigned region)
{
	unsigned mine = (unsigned)me + 1;

	switch (region) {
	case ALEX_LT_PENDING:
		return owner(w, P_SHIFT) == mine ? ALEX_LT_WRITE : ALEX_LT_NONE;
	case ALEX_LT_RESERVED:
		return owner(w, R_SHIFT) == mine ? ALEX_LT_WRITE : ALEX_LT_NONE;
	case ALEX_LT_SHARED:
		return owner(w, X_SHIFT) == mine ? ALEX_LT_WRITE
		       : w >> me & 1		 ? ALEX_LT_READ
						 : ALEX_LT_NONE;
	}
	return ALEX_LT_NONE;
}
