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
 * call.  The work runs, posting the completion and clearing the flag, only
 * inside io_uring_enter(IORING_ENTER_GETEVENTS) made by the thread that
 * made the ring (IORING_SETUP_SINGLE_ISSUER): here, only at a look that
 * found the flag set, before it asks FIONREAD.  So for that thread the
 * flag, once set, stays set until its next look, and only it takes "quiet"
 * from memory; every other thread looks with FIONREAD.  (A ring whose work
 * went on the thread's shared task-work list instead, COOP_TASKRUN without
 * DEFER_TASKRUN, missed events while any other ring of the thread had work
 * pending, and made the thread's next blocking call fail with EINTR:
 * review.)  A completion the kernel could not store bumps the ring's
 * overflow count, which counts as news too.
 *
 * The ring's descriptor is close-on-exec.  A program may close it (a sweep
 * of descriptors) and reuse the number: the owner's look then calls
 * io_uring_enter on a number that is not ours, which does no harm (on
 * another file it fails, and the ring is made anew; on another ring it
 * only runs that ring's completions, and ours stays signalled: every look
 * is then the system call), and the number is closed only after an fstat
 * says it is still ours.  A poll that ends (its completions overflowed the ring while
 * nobody looked) or whose owner thread exited is armed again on a new ring
 * at the next look.
 *
 * Not used under a seccomp filter (asked before every ring is made: a
 * filter may come after the first, and one that kills at io_uring_setup,
 * as systemd's SystemCallFilter= does unless told otherwise, would kill
 * the program); nor with ALEX_NAME_RING=0; nor before Linux 6.1.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "config.h"
#include "io_many.h"
#include "pdb.h"
#include "real.h"
#include "ring.h"

/* completions between two looks before the poll ends */
#define RING_CQ 64
/* rings that could not be made for want of memory or descriptors */
#define MAX_SHORT 8

static struct {
	int fd;
	dev_t dev;
	ino_t ino;
	void *rings, *sqes;
	size_t rings_len, sqes_len;
	unsigned *flags, *head, *tail, *overflow, mask, overflow_seen;
	const struct io_uring_cqe *cqes;
	pid_t owner; /* (atomic) the thread that made it; 0: gone */
} r = { .fd = -1 };
static int never; /* io_uring cannot do it here: FIONREAD from now on */
static int short_of;
static __thread pid_t me __attribute__((tls_model("initial-exec")));
static pthread_key_t owner_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* The owner thread's exit: nobody runs its poll's work now (the next look
 * makes a new ring) */
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

void alex_ring_drop(void)
{
	if (r.rings)
		REAL(munmap)(r.rings, r.rings_len);
	if (r.sqes)
		REAL(munmap)(r.sqes, r.sqes_len);
	if (alex_fd_is(r.fd, r.dev, r.ino))
		REAL(close)(r.fd);
	__atomic_store_n(&r.owner, 0, __ATOMIC_SEQ_CST);
	r.rings = r.sqes = NULL;
	r.fd = -1;
}

/* The rings mapped and the poll submitted; 0 or -1. */
static int arm(const struct io_uring_params *p, int queue)
{
	size_t sq_len = p->sq_off.array + p->sq_entries * sizeof(unsigned);
	size_t cq_len = p->cq_off.cqes + p->cq_entries * sizeof(struct io_uring_cqe);

	if (!(p->features & IORING_FEAT_SINGLE_MMAP))
		return -1;
	r.rings_len = sq_len > cq_len ? sq_len : cq_len;
	r.sqes_len = p->sq_entries * sizeof(struct io_uring_sqe);
	void *m = REAL(mmap)(NULL, r.rings_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r.fd,
			     IORING_OFF_SQ_RING);
	r.rings = m == MAP_FAILED ? NULL : m;
	m = REAL(mmap)(NULL, r.sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r.fd,
		       IORING_OFF_SQES);
	r.sqes = m == MAP_FAILED ? NULL : m;
	if (!r.rings || !r.sqes)
		return -1;
	char *b = r.rings;
	struct io_uring_sqe *sqe = r.sqes;
	memset(sqe, 0, sizeof *sqe);
	sqe->opcode = IORING_OP_POLL_ADD;
	sqe->fd = queue;
	sqe->poll32_events = POLLIN;
	sqe->len = IORING_POLL_ADD_MULTI;
	sqe->user_data = 1;
	unsigned *sq_tail = (unsigned *)(b + p->sq_off.tail);
	((unsigned *)(b + p->sq_off.array))[0] = 0;
	__atomic_store_n(sq_tail, *sq_tail + 1, __ATOMIC_RELEASE);
	r.flags = (unsigned *)(b + p->sq_off.flags);
	r.head = (unsigned *)(b + p->cq_off.head);
	r.tail = (unsigned *)(b + p->cq_off.tail);
	r.overflow = (unsigned *)(b + p->cq_off.overflow);
	r.mask = *(unsigned *)(b + p->cq_off.ring_mask);
	r.cqes = (const struct io_uring_cqe *)(b + p->cq_off.cqes);
	if (syscall(__NR_io_uring_enter, r.fd, 1, 0, 0, NULL, 0) != 1)
		return -1;
	r.overflow_seen = __atomic_load_n(r.overflow, __ATOMIC_ACQUIRE);
	return 0;
}

int alex_ring_make(int queue)
{
	struct io_uring_params p;

	alex_ring_drop();
	if (never || !alex_cfg.name_ring || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__ ||
	    pthread_once(&key_once, make_key) != 0 || never)
		return -1;
	int saved = errno;
	if (!alex_io_uring_allowed()) {
		never = 1; /* a filter is never lifted */
		return -1;
	}
	memset(&p, 0, sizeof p);
	p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG |
		  IORING_SETUP_CQSIZE;
	p.cq_entries = RING_CQ;
	r.fd = (int)syscall(__NR_io_uring_setup, 1, &p);
	if (r.fd < 0) {
		/* out of memory or descriptors: perhaps later; anything else
		 * (an older kernel, io_uring disabled): not here */
		if ((errno != ENOMEM && errno != EMFILE && errno != ENFILE) || ++short_of >= MAX_SHORT)
			never = 1;
		errno = saved;
		return -1;
	}
	struct stat st;
	if (REAL(fstat)(r.fd, &st) != 0) {
		REAL(close)(r.fd);
		r.fd = -1;
		never = 1;
		errno = saved;
		return -1;
	}
	r.dev = st.st_dev;
	r.ino = st.st_ino;
	if (arm(&p, queue) != 0) {
		alex_ring_drop();
		never = 1;
		errno = saved;
		return -1;
	}
	if (!me)
		me = (pid_t)syscall(SYS_gettid);
	pthread_setspecific(owner_key, &r);
	__atomic_store_n(&r.owner, me, __ATOMIC_SEQ_CST);
	errno = saved;
	return 0;
}

int alex_ring_quiet(void)
{
	if (!r.rings || !me || __atomic_load_n(&r.owner, __ATOMIC_ACQUIRE) != me)
		return 0;
	unsigned f = __atomic_load_n(r.flags, __ATOMIC_ACQUIRE);
	return !(f & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW)) &&
	       __atomic_load_n(r.tail, __ATOMIC_ACQUIRE) == *r.head &&
	       __atomic_load_n(r.overflow, __ATOMIC_ACQUIRE) == r.overflow_seen;
}

int alex_ring_reap(void)
{
	if (!r.rings)
		return 0;
	pid_t owner = __atomic_load_n(&r.owner, __ATOMIC_ACQUIRE);
	int ended = !owner, saved = errno;
	/* the owner runs the poll's work: its completions posted, the flag
	 * cleared, so that the next event sets it again */
	if (owner && owner == me &&
	    syscall(__NR_io_uring_enter, r.fd, 0, 0, IORING_ENTER_GETEVENTS, NULL, 0) < 0)
		ended = 1; /* the number is not our ring's now */
	errno = saved;
	if ((__atomic_load_n(r.flags, __ATOMIC_ACQUIRE) & IORING_SQ_CQ_OVERFLOW) ||
	    __atomic_load_n(r.overflow, __ATOMIC_ACQUIRE) != r.overflow_seen)
		ended = 1; /* a completion that ended the poll waits in the
			      kernel, or was dropped */
	unsigned h = *r.head, t = __atomic_load_n(r.tail, __ATOMIC_ACQUIRE);
	for (; h != t; h++) {
		const struct io_uring_cqe *c = &r.cqes[h & r.mask];
		if (c->res < 0 && c->res != -ECANCELED)
			never = 1; /* this kernel cannot poll the queue so */
		if (!(c->flags & IORING_CQE_F_MORE))
			ended = 1;
	}
	__atomic_store_n(r.head, h, __ATOMIC_RELEASE);
	if (!ended && !never)
		return 0;
	alex_ring_drop();
	return !never;
}

void alex_ring_forked(void)
{
	me = 0;
	alex_ring_drop(); /* the child's mapping and descriptor: the parent's ring stays */
}
