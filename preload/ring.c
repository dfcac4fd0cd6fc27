/*
 * ring.c - the inotify queue's doorbell: "has anything been queued since
 * the last look?" answered by a load from memory.
 *
 * Every stat answered from memory (watch.c) looks at the queue first, and
 * a look is a system call (FIONREAD): three per autocommit INSERT, about
 * 7 % of its time.  Here a multishot io_uring poll watches the queue.
 *
 * The kernel queues an inotify event, and wakes the queue's pollers, before
 * the call that causes it returns.  On a ring set up with
 * IORING_SETUP_DEFER_TASKRUN and IORING_SETUP_TASKRUN_FLAG the wake puts
 * the poll's work on the ring's own list and, when that list was empty,
 * sets IORING_SQ_TASKRUN in the ring's shared flags -- in the waker's
 * call.  The work runs, posting the completion, only inside
 * io_uring_enter(IORING_ENTER_GETEVENTS) made by the thread that made the
 * ring (IORING_SETUP_SINGLE_ISSUER): here, only at a look that found the
 * flag set, before it asks FIONREAD.  That look clears the flag itself
 * before it enters (the kernel sets it after adding the work, so a run
 * between the two left it set with nothing to run: review), and whatever
 * is added after the clear sets it again or is run by that enter.  So for
 * the owner the flag, once set, stays set until its next look, and only
 * the owner takes "quiet" from memory; every other thread asks FIONREAD.
 * (A ring whose work went on the thread's shared task-work list instead,
 * COOP_TASKRUN, missed events while any other ring of the thread had work
 * pending, and made the thread's next blocking call fail with EINTR:
 * review.)
 *
 * A ring freed while its owner lives makes the owner's next blocking call
 * fail with EINTR (the kernel's teardown signals the task that submitted to
 * it: review), so a ring is freed only after its owner thread has exited,
 * or in a fork()ed child, which is not its owner.  Its descriptor is
 * registered with the owner (IORING_REGISTER_RING_FDS) and closed: no
 * number of ours for a program to close or reuse.  When the queue changes
 * (the program closed it: watch.c makes another) the ring is retired --
 * never quiet -- until the owner's next look moves the poll to the new
 * queue; a poll that ended is armed again the same way.  Each poll carries
 * a generation in its user_data, so the end of a removed one is not taken
 * for the end of the current one.
 *
 * Never under a seccomp filter of the calling thread, asked before every
 * io_uring call (core/io_many.c: a filter may come at any time, and one
 * that kills at io_uring_setup or io_uring_enter, as systemd's
 * SystemCallFilter= does unless told otherwise, would kill the program);
 * a ring the owner cannot enter any more stays mapped, retired, for the
 * process's life.  Nor with ALEX_NAME_RING=0, nor before Linux 6.1.
 */
#include <errno.h>
#include <linux/io_uring.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "config.h"
#include "io_many.h"
#include "real.h"
#include "ring.h"

/* completions between two looks before the poll ends */
#define RING_CQ 64
/* rings or polls that could not be made for want of memory */
#define MAX_SHORT 8
/* a removal's user_data: never a poll's generation */
#define REMOVAL (~0ULL)

static struct {
	void *rings, *sqes;
	size_t rings_len, sqes_len;
	unsigned *flags, *head, *tail, *overflow, mask, overflow_seen;
	unsigned *sq_tail, *sq_array, sq_mask;
	const struct io_uring_cqe *cqes;
	unsigned idx;    /* the registered descriptor (the owner's) */
	uint64_t gen;    /* the current poll's user_data */
	int queue;       /* what it polls */
	int retired;     /* (atomic) not the queue's poll (yet): never quiet */
	pid_t owner;     /* (atomic) the thread that made it; 0: gone */
} r;
static int never; /* io_uring cannot do it here: FIONREAD from now on */
static int short_of;
static __thread pid_t me __attribute__((tls_model("initial-exec")));
static pthread_key_t owner_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* The owner thread's exit: nobody can run its poll's work now (the next
 * look frees the ring, harmless now, and makes another) */
static void owner_gone(void *unused)
{
	pid_t t = me;
	(void)unused;
	__atomic_compare_exchange_n(&r.owner, &t, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

static void make_key(void)
{
	if (pthread_key_create(&owner_key, owner_gone) != 0)
		never = 1;
}

/* Only where the owner is gone, or in a fork()ed child (above). */
static void drop(void)
{
	if (r.rings)
		REAL(munmap)(r.rings, r.rings_len);
	if (r.sqes)
		REAL(munmap)(r.sqes, r.sqes_len);
	memset(&r, 0, sizeof r);
}

static int enter(unsigned submit, unsigned flags)
{
	return (int)syscall(__NR_io_uring_enter, r.idx, submit, 0, flags | IORING_ENTER_REGISTERED_RING,
			    NULL, 0);
}

static void sqe(unsigned i, uint8_t op, int fd, uint64_t addr, uint32_t len, uint64_t data)
{
	struct io_uring_sqe *q = (struct io_uring_sqe *)r.sqes + i;

	memset(q, 0, sizeof *q);
	q->opcode = op;
	q->fd = fd;
	q->addr = addr;
	q->len = len;
	q->user_data = data;
	if (op == IORING_OP_POLL_ADD)
		q->poll32_events = POLLIN;
	unsigned t = *r.sq_tail;
	r.sq_array[t & r.sq_mask] = i;
	__atomic_store_n(r.sq_tail, t + 1, __ATOMIC_RELEASE);
}

/* The owner: a new poll of queue, the old one (if any) removed.  0 or -1. */
static int arm(int queue, int remove_old)
{
	uint64_t old = r.gen;
	unsigned n = 0;

	if (remove_old)
		sqe(n++, IORING_OP_POLL_REMOVE, -1, old, 0, REMOVAL);
	sqe(n++, IORING_OP_POLL_ADD, queue, 0, IORING_POLL_ADD_MULTI, old + 1);
	if (enter(n, 0) != (int)n)
		return -1; /* not submitted (EAGAIN, ENOMEM): tried again */
	r.gen = old + 1;
	r.queue = queue;
	r.overflow_seen = __atomic_load_n(r.overflow, __ATOMIC_ACQUIRE);
	__atomic_store_n(&r.retired, 0, __ATOMIC_RELEASE);
	return 0;
}

/* The rings mapped and the descriptor registered; 0 or -1. */
static int map(int fd, const struct io_uring_params *p)
{
	size_t sq_len = p->sq_off.array + p->sq_entries * sizeof(unsigned);
	size_t cq_len = p->cq_off.cqes + p->cq_entries * sizeof(struct io_uring_cqe);
	struct io_uring_rsrc_update u = { .offset = -1U, .data = (uint64_t)fd };

	if (!(p->features & IORING_FEAT_SINGLE_MMAP))
		return -1;
	r.rings_len = sq_len > cq_len ? sq_len : cq_len;
	r.sqes_len = p->sq_entries * sizeof(struct io_uring_sqe);
	void *m = REAL(mmap)(NULL, r.rings_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
			     IORING_OFF_SQ_RING);
	r.rings = m == MAP_FAILED ? NULL : m;
	m = REAL(mmap)(NULL, r.sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
		       IORING_OFF_SQES);
	r.sqes = m == MAP_FAILED ? NULL : m;
	if (!r.rings || !r.sqes ||
	    syscall(__NR_io_uring_register, fd, IORING_REGISTER_RING_FDS, &u, 1) != 1)
		return -1;
	char *b = r.rings;
	r.idx = u.offset;
	r.flags = (unsigned *)(b + p->sq_off.flags);
	r.sq_tail = (unsigned *)(b + p->sq_off.tail);
	r.sq_array = (unsigned *)(b + p->sq_off.array);
	r.sq_mask = *(unsigned *)(b + p->sq_off.ring_mask);
	r.head = (unsigned *)(b + p->cq_off.head);
	r.tail = (unsigned *)(b + p->cq_off.tail);
	r.overflow = (unsigned *)(b + p->cq_off.overflow);
	r.mask = *(unsigned *)(b + p->cq_off.ring_mask);
	r.cqes = (const struct io_uring_cqe *)(b + p->cq_off.cqes);
	return 0;
}

/* A new ring, this thread its owner, polling queue. */
static void make(int queue)
{
	struct io_uring_params p;

	if (never || !alex_cfg.name_ring || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__ ||
	    pthread_once(&key_once, make_key) != 0 || never)
		return;
	if (!alex_io_uring_allowed()) {
		never = 1;
		return;
	}
	memset(&p, 0, sizeof p);
	p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG |
		  IORING_SETUP_CQSIZE;
	p.cq_entries = RING_CQ;
	int fd = (int)syscall(__NR_io_uring_setup, 2, &p);
	if (fd < 0) {
		/* out of memory or descriptors: perhaps later; anything else
		 * (an older kernel, io_uring disabled): not here */
		if ((errno != ENOMEM && errno != EMFILE && errno != ENFILE) || ++short_of >= MAX_SHORT)
			never = 1;
		return;
	}
	/* the owner now: the kernel made this thread the ring's submitter */
	if (!me)
		me = (pid_t)syscall(SYS_gettid);
	int ok = map(fd, &p) == 0;
	REAL(close)(fd); /* registered, or the ring goes with the mappings */
	if (!ok) {
		drop(); /* never entered: no task of ours to signal */
		never = 1;
		return;
	}
	pthread_setspecific(owner_key, &r);
	__atomic_store_n(&r.owner, me, __ATOMIC_SEQ_CST);
	if (arm(queue, 0) != 0) {
		__atomic_store_n(&r.retired, 1, __ATOMIC_RELEASE); /* armed at the next look */
		r.queue = queue;
		if (++short_of >= MAX_SHORT)
			never = 1;
	}
}

void alex_ring_queue(int queue)
{
	int saved = errno;

	if (!r.rings)
		make(queue);
	else if (queue != r.queue || !__atomic_load_n(&r.retired, __ATOMIC_ACQUIRE)) {
		r.queue = queue; /* the owner's next look moves the poll there */
		__atomic_store_n(&r.retired, 1, __ATOMIC_RELEASE);
	}
	errno = saved;
}

void alex_ring_retire(void)
{
	if (r.rings)
		__atomic_store_n(&r.retired, 1, __ATOMIC_RELEASE);
}

int alex_ring_quiet(void)
{
	if (!r.rings || !me || __atomic_load_n(&r.owner, __ATOMIC_ACQUIRE) != me ||
	    __atomic_load_n(&r.retired, __ATOMIC_ACQUIRE))
		return 0;
	unsigned f = __atomic_load_n(r.flags, __ATOMIC_ACQUIRE);
	return !(f & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW)) &&
	       __atomic_load_n(r.tail, __ATOMIC_ACQUIRE) == *r.head &&
	       __atomic_load_n(r.overflow, __ATOMIC_ACQUIRE) == r.overflow_seen;
}

void alex_ring_look(int queue)
{
	int saved = errno;

	if (!r.rings) {
		make(queue);
	} else if (!__atomic_load_n(&r.owner, __ATOMIC_ACQUIRE)) {
		drop(); /* its owner has exited: freeing it signals nobody */
		make(queue);
	} else if (r.owner == me && !never) {
		if (!alex_io_uring_allowed()) {
			never = 1; /* a filter came: the ring stays, retired */
			__atomic_store_n(&r.retired, 1, __ATOMIC_RELEASE);
			errno = saved;
			return;
		}
		/* cleared before the run: work added after it sets it again,
		 * or is run now */
		__atomic_and_fetch(r.flags, ~IORING_SQ_TASKRUN, __ATOMIC_SEQ_CST);
		int ended = enter(0, IORING_ENTER_GETEVENTS) < 0 ||
			    (__atomic_load_n(r.flags, __ATOMIC_ACQUIRE) & IORING_SQ_CQ_OVERFLOW) ||
			    __atomic_load_n(r.overflow, __ATOMIC_ACQUIRE) != r.overflow_seen;
		unsigned h = *r.head, t = __atomic_load_n(r.tail, __ATOMIC_ACQUIRE);
		for (; h != t; h++) {
			const struct io_uring_cqe *c = &r.cqes[h & r.mask];
			if (c->user_data != r.gen)
				continue; /* a removal's answer, or a removed poll's end */
			if (c->res < 0 && c->res != -ECANCELED)
				never = 1; /* this kernel cannot poll the queue so */
			if (!(c->flags & IORING_CQE_F_MORE))
				ended = 1;
		}
		__atomic_store_n(r.head, h, __ATOMIC_RELEASE);
		if (never)
			__atomic_store_n(&r.retired, 1, __ATOMIC_RELEASE);
		else if ((ended || __atomic_load_n(&r.retired, __ATOMIC_ACQUIRE) || queue != r.queue) &&
			 arm(queue, 1) != 0 && ++short_of >= MAX_SHORT)
			never = 1;
	}
	errno = saved;
}

void alex_ring_forked(void)
{
	me = 0;
	drop(); /* the child's mappings: the parent's ring stays */
}
