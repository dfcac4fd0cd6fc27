/*
 * ringbell.c - another process's change to the database, learnt of with no
 * system call of this one in between (preload/ring.c).
 *
 * The kernel marks the ring's shared flags in the call that queues the
 * inotify event; the completion is posted only at this thread's next
 * return from the kernel.  A helper process (on the other processor, so
 * that nothing enters this one's kernel meanwhile) chmods or renames the
 * database away and then sets a word of a shared mapping; this process,
 * spinning on the word, stats the name at once.  A look that took only
 * posted completions as news answers the mode, or the file, as it was
 * before.  (Python cannot show it: its first writes after a fork fault,
 * and the fault's return posts the completion.)
 *
 * "host": the program has an io_uring of its own (COOP_TASKRUN, polling a
 * pipe the helper writes just before each change).  A ring whose work went
 * on the thread's shared task-work list missed the change whenever the
 * host's ring had work pending (review).  "eintr": after each change this
 * thread waits in epoll_wait and in accept with a timeout; a ring that
 * notified the thread by task work made them fail with EINTR.
 *
 * "steal": the program closes ALEX's inotify descriptor (a sweep) and
 * makes an inotify of its own, which gets the number; another thread's
 * stat then finds the queue lost while this one waits in epoll_wait.  The
 * program must read its own events, with its own watch, the stats must
 * see chmods of the database, and the wait must not fail with EINTR (a
 * first version trusted an fstat, which cannot tell two inotify instances
 * apart, read the program's events and added its watches to the
 * program's instance; and freed the ring under its waiting owner: review).
 *
 *   ringbell DIR N [plain|host|eintr|steal]   prints "ok" when all is well
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static int bell[2] = { -1, -1 }; /* the host ring's pipe */
static unsigned *host_head, *host_tail;

/* the host's own ring: a multishot poll of the pipe */
static int host_ring(void)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	p.flags = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
	int fd = (int)syscall(__NR_io_uring_setup, 8, &p);
	if (fd < 0 || pipe2(bell, O_NONBLOCK))
		return -1;
	size_t len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	if (len < p.sq_off.array + p.sq_entries * 4)
		len = p.sq_off.array + p.sq_entries * 4;
	char *b = mmap(0, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQ_RING);
	struct io_uring_sqe *q = mmap(0, p.sq_entries * sizeof *q, PROT_READ | PROT_WRITE,
				      MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
	if (b == MAP_FAILED || q == MAP_FAILED)
		return -1;
	memset(q, 0, sizeof *q);
	q->opcode = IORING_OP_POLL_ADD;
	q->fd = bell[0];
	q->poll32_events = POLLIN;
	q->len = IORING_POLL_ADD_MULTI;
	((unsigned *)(b + p.sq_off.array))[0] = 0;
	unsigned *t = (unsigned *)(b + p.sq_off.tail);
	__atomic_store_n(t, *t + 1, __ATOMIC_RELEASE);
	host_head = (unsigned *)(b + p.cq_off.head);
	host_tail = (unsigned *)(b + p.cq_off.tail);
	return syscall(__NR_io_uring_enter, fd, 1, 0, 0, NULL, 0) == 1 ? 0 : -1;
}

static void host_reap(void)
{
	char c[64];
	__atomic_store_n(host_head, __atomic_load_n(host_tail, __ATOMIC_ACQUIRE), __ATOMIC_RELEASE);
	while (read(bell[0], c, sizeof c) > 0)
		;
}

/* the helper: each new request in w[0] (w[1]: 1 rename away, else the
 * mode), done when w[2] says the same; a negative one ends it */
static void helper(volatile int *w, const char *db, const char *away)
{
	for (int seen = 0;;) {
		while (w[0] == seen)
			usleep(100);
		seen = w[0];
		if (seen < 0)
			_exit(0);
		if (bell[1] >= 0 && write(bell[1], "x", 1) != 1)
			_exit(1);
		if (w[1] == 1 ? rename(db, away) : chmod(db, (mode_t)w[1]))
			_exit(1);
		__atomic_store_n(&w[2], seen, __ATOMIC_RELEASE);
	}
}

static char db[4096];

static int inotify_fd(void)
{
	char p[64], l[256];
	int r = -1;

	for (int fd = 0; fd < 1024; fd++) {
		snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
		ssize_t n = readlink(p, l, sizeof l - 1);
		if (n > 0 && (l[n] = 0, strstr(l, "inotify")))
			r = fd;
	}
	return r;
}

static void *other_stat(void *unused)
{
	struct stat st;

	usleep(10000);
	stat(db, &st);
	return unused;
}

static int steal(const char *dir)
{
	char mine[4096], buf[4096] __attribute__((aligned(8)));
	struct stat st;
	struct epoll_event ev;
	pthread_t th;
	int bad = 0;

	snprintf(mine, sizeof mine, "%s/config", dir);
	close(open(mine, O_CREAT | O_WRONLY, 0600));
	stat(db, &st);
	int n = inotify_fd();
	if (n < 0 || close(n))
		return printf("no inotify descriptor of ALEX's\n"), 1;
	int q = inotify_init1(IN_NONBLOCK), wd = inotify_add_watch(q, mine, IN_ATTRIB);
	int ep = epoll_create1(0);
	if (q < 0 || wd < 0 || ep < 0 || pthread_create(&th, 0, other_stat, 0))
		return 1;
	if (epoll_wait(ep, &ev, 1, 50) < 0 && errno == EINTR)
		bad++, printf("epoll_wait: EINTR\n");
	pthread_join(th, 0);
	for (int i = 0; i < 2; i++) {
		mode_t m = i ? 0600 : 0640;
		if (chmod(mine, 0600 + i) || chmod(db, m) || stat(db, &st))
			return 1;
		if ((st.st_mode & 0777) != m)
			bad++, printf("stat %d: %o, want %o\n", i, st.st_mode & 0777, m);
		ssize_t r = read(q, buf, sizeof buf);
		if (r < (ssize_t)sizeof(struct inotify_event) || ((struct inotify_event *)buf)->wd != wd)
			bad++, printf("the program's event %d: %zd bytes, wd %d (its own %d)\n", i, r,
				      r > 0 ? ((struct inotify_event *)buf)->wd : -1, wd);
	}
	for (int i = 0; i < 20; i++)
		if (epoll_wait(ep, &ev, 1, 1) < 0 && errno == EINTR)
			bad++, printf("epoll_wait %d: EINTR\n", i);
	printf(bad ? "%d wrong\n" : "ok\n", bad);
	return 0;
}

int main(int argc, char **argv)
{
	char away[4096];
	sqlite3 *h;
	struct stat st;

	if (argc < 3)
		return 2;
	const char *mode_arg = argc > 3 ? argv[3] : "plain";
	int eintr = strcmp(mode_arg, "eintr") == 0, interrupted = 0;
	snprintf(db, sizeof db, "%s/x.db", argv[1]);
	snprintf(away, sizeof away, "%s/x.db.away", argv[1]);
	if (sqlite3_open(db, &h) ||
	    sqlite3_exec(h, "create table t(x); insert into t values(1); insert into t values(2)", 0, 0, 0))
		return 1;
	if (strcmp(mode_arg, "steal") == 0)
		return steal(argv[1]);
	volatile int *w = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (w == MAP_FAILED)
		return 1;
	cpu_set_t one, other;
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	CPU_ZERO(&other);
	CPU_SET(1, &other);
	int two = sysconf(_SC_NPROCESSORS_ONLN) > 1 && sched_setaffinity(0, sizeof one, &one) == 0;
	if (strcmp(mode_arg, "host") == 0 && host_ring() != 0)
		return 1;
	int ep = epoll_create1(0), ls = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001) };
	struct timeval tv = { 0, 2000 };
	if (eintr && (ep < 0 || ls < 0 || bind(ls, (void *)&a, sizeof a) || listen(ls, 1) ||
		      setsockopt(ls, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv)))
		return 1;
	pid_t pid = fork();
	if (pid == 0) {
		if (two)
			sched_setaffinity(0, sizeof other, &other);
		helper(w, db, away);
	}
	int bad = 0, n = atoi(argv[2]);
	for (int i = 1; i <= n; i++) {
		int mode = i % 2 ? 0600 : 0640, moved = i % 5 == 4;
		if (bell[0] >= 0)
			host_reap();
		stat(db, &st); /* an answer kept, the queue looked at */
		stat(db, &st);
		w[1] = moved ? 1 : mode;
		__atomic_store_n(&w[0], i, __ATOMIC_RELEASE);
		while (__atomic_load_n(&w[2], __ATOMIC_ACQUIRE) != i)
			;
		struct epoll_event ev;
		if (eintr && ((i % 2 ? epoll_wait(ep, &ev, 1, 1) : accept(ls, 0, 0)) < 0 && errno == EINTR))
			interrupted++;
		int r = stat(db, &st), e = errno;
		int ok = moved ? r != 0 && e == ENOENT : r == 0 && (st.st_mode & 0777) == (unsigned)mode;
		if (!ok && bad++ < 3)
			printf("%d: %s %o, want %s %o\n", i, r ? "gone" : "there", r ? 0 : st.st_mode & 0777,
			       moved ? "gone" : "there", moved ? 0 : mode);
		if (moved && rename(away, db))
			return 1;
	}
	w[0] = -1;
	waitpid(pid, 0, 0);
	if (bad || interrupted)
		printf("%d of %d wrong, %d interrupted\n", bad, n, interrupted);
	else
		printf("ok\n");
	return sqlite3_close(h) != SQLITE_OK;
}
