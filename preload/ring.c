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
 * queue; a poll that ended is armed again the same way, and while that
 * fails (the look's enter refused: EINTR, EAGAIN) the ring stays retired,
 * or a poll whose work never ran would leave it "quiet" for good (review;
 * tests/preload/ringfail.c).  Each poll carries a generation in its
 * user_data, so the end of a removed one is not taken for the end of the
 * current one.
 *
 * Never under a seccomp filter of the calling thread, asked before every
 * io_uring call (core/uring.c: a filter may come at any time, and one
 * that kills at io_uring_setup or io_uring_enter, as systemd's
 * SystemCallFilter= does unless told otherwise, would kill the program);
 * a ring the owner cannot enter any more stays mapped, retired, for the
 * process's life.  Nor with ALEX_NAME_RING=0, nor before Linux 6.1.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "config.h"
#include "real.h"
#include "ring.h"
#include "uring.h"

/* completions between two looks before the poll ends */
#define RING_CQ 64
/* rings or polls that could not be made for want of memory */
#define MAX_SHORT 8
/* a removal's user_data: never a poll's generation */
#define REMOVAL (~0ULL)

static struct {
	struct alex_uring u; /* its descriptor closed, once registered */
	unsigned idx;    /* the registered descriptor (the owner's) */
	unsigned overflow_seen;
	uint64_t gen;    /* the current poll's user_data */
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
	alex_uring_unmap(&r.u);
	memset(&r, 0, sizeof r);
}

static int enter(unsigned submit, unsigned flags)
{
	return (int)syscall(__NR_io_uring_enter, r.idx, submit, 0, flags | IORING_ENTER_REGISTERED_RING,
			    NULL, 0);
}

static void sqe(unsigned i, uint8_t op, int fd, uint64_t addr, uint32_t len, uint64_t data)
{
	struct io_uring_sqe *q = r.u.sqes + i;

	memset(q, 0, sizeof *q);
	q->opcode = op;
	q->fd = fd;
	q->addr = addr;
	q->len = len;
	q->user_data = data;
	if (op == IORING_OP_POLL_ADD)
		q->poll32_events = POLLIN;
	unsigned t = *r.u.sq_tail;
	r.u.sq_array[t & *r.u.sq_mask] = i;
	__atomic_store_n(r.u.sq_tail, t + 1, __ATOMIC_RELEASE);
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
	r.overflow_seen = __atomic_load_n(r.u.cq_overflow, __ATOMIC_ACQUIRE);
	__atomic_store_n(&r.retired, 0, __ATOMIC_RELEASE);
	return 0;
}

/* The owner: arm, or stay retired -- never quiet -- until a later look
 * arms a poll (a ring left with no poll whose work runs said "quiet" for
 * good: review); after MAX_SHORT refusals, never. */
static void rearm(int queue, int remove_old)
{
	if (arm(queue, remove_old) == 0)
		return;
	__atomic_store_n(&r.retired, 1, __ATOMIC_RELEASE);
	if (++short_of >= MAX_SHORT)
		never = 1;
}

/* A new ring, this thread its owner, polling queue. */
static void make(int queue)
{
	struct io_uring_params p;

	if (never || !alex_cfg.name_ring || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__ ||
	    pthread_once(&key_once, make_key) != 0 || never)
		return;
	memset(&p, 0, sizeof p);
	p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG |
		  IORING_SETUP_CQSIZE;
	p.cq_entries = RING_CQ;
	int err = alex_uring_open(&r.u, 2, &p);
	if (err) {
		/* out of memory or descriptors: perhaps later; anything else
		 * (a seccomp filter, an older kernel, io_uring disabled): not
		 * here */
		if ((err != ENOMEM && err != EMFILE && err != ENFILE) || ++short_of >= MAX_SHORT)
			never = 1;
		return;
	}
	/* the owner now: the kernel made this thread the ring's submitter */
	if (!me)
		me = (pid_t)syscall(SYS_gettid);
	struct io_uring_rsrc_update reg = { .offset = -1U, .data = (uint64_t)r.u.fd };
	int ok = syscall(__NR_io_uring_register, r.u.fd, IORING_REGISTER_RING_FDS, &reg, 1) == 1;
	REAL(close)(r.u.fd); /* registered, or the ring goes with the mappings */
	r.u.fd = -1;
	if (!ok) {
		drop(); /* never entered: no task of ours to signal */
		never = 1;
		return;
	}
	r.idx = reg.offset;
	pthread_setspecific(owner_key, &r);
	__atomic_store_n(&r.owner, me, __ATOMIC_SEQ_CST);
	rearm(queue, 0);
}

void alex_ring_queue(int queue)
{
	int saved = errno;

	if (!r.u.sq)
		make(queue);
	else /* the owner's next look moves the poll there */
		__atomic_store_n(&r.retired, 1, __ATOMIC_RELEASE);
	errno = saved;
}

void alex_ring_retire(void)
{
	if (r.u.sq)
		__atomic_store_n(&r.retired, 1, __ATOMIC_RELEASE);
}

int alex_ring_quiet(void)
{
	if (!r.u.sq || !me || __atomic_load_n(&r.owner, __ATOMIC_ACQUIRE) != me ||
	    __atomic_load_n(&r.retired, __ATOMIC_ACQUIRE))
		return 0;
	unsigned f = __atomic_load_n(r.u.sq_flags, __ATOMIC_ACQUIRE);
	return !(f & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW)) &&
	       __atomic_load_n(r.u.cq_tail, __ATOMIC_ACQUIRE) == *r.u.cq_head &&
	       __atomic_load_n(r.u.cq_overflow, __ATOMIC_ACQUIRE) == r.overflow_seen;
}

void alex_ring_look(int queue)
{
	int saved = errno;

	if (!r.u.sq) {
		make(queue);
	} else if (!__atomic_load_n(&r.owner, __ATOMIC_ACQUIRE)) {
		drop(); /* its owner has exited: freeing it signals nobody */
		make(queue);
	} else if (r.owner == me && !never) {
		if (!alex_uring_allowed()) {
			never = 1; /* a filter came: the ring stays, retired */
			__atomic_store_n(&r.retired, 1, __ATOMIC_RELEASE);
			errno = saved;
			return;
		}
		/* cleared before the run: work added after it sets it again,
		 * or is run now */
		__atomic_and_fetch(r.u.sq_flags, ~IORING_SQ_TASKRUN, __ATOMIC_SEQ_CST);
		int ended = enter(0, IORING_ENTER_GETEVENTS) < 0 ||
			    (__atomic_load_n(r.u.sq_flags, __ATOMIC_ACQUIRE) & IORING_SQ_CQ_OVERFLOW) ||
			    __atomic_load_n(r.u.cq_overflow, __ATOMIC_ACQUIRE) != r.overflow_seen;
		unsigned h = *r.u.cq_head, t = __atomic_load_n(r.u.cq_tail, __ATOMIC_ACQUIRE);
		for (; h != t; h++) {
			const struct io_uring_cqe *c = &r.u.cqes[h & *r.u.cq_mask];
			if (c->user_data != r.gen)
				continue; /* a removal's answer, or a removed poll's end */
			if (c->res < 0 && c->res != -ECANCELED)
				never = 1; /* this kernel cannot poll the queue so */
			if (!(c->flags & IORING_CQE_F_MORE))
				ended = 1;
		}
		__atomic_store_n(r.u.cq_head, h, __ATOMIC_RELEASE);
		if (!never && (ended || __atomic_load_n(&r.retired, __ATOMIC_ACQUIRE)))
			rearm(queue, 1);
		if (never)
			__atomic_store_n(&r.retired, 1, __ATOMIC_RELEASE);
	}
	errno = saved;
}

void alex_ring_forked(void)
{
	me = 0;
	drop(); /* the child's mappings: the parent's ring stays */
}
