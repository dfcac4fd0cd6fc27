/*
 * sandbox.c - a program that sandboxes itself after opening its database,
 * as many servers do: a seccomp filter that kills the process at
 * io_uring_setup and lets everything else through.  ALEX must never make
 * that call then (preload/ring.c, core/io_many.c; core/uring.c asks): a first version killed
 * such a program at its first checkpoint (the checkpoint's direct writes
 * through an io_uring) and at a stat after the thread that made the
 * inotify queue's ring had exited (review).
 *
 * "setup": the database is opened by a thread that then exits; after a
 * filter on io_uring_setup, this thread stats the database, writes enough
 * to make the flusher checkpoint, and closes (the last close checkpoints
 * too).  "late": this thread opens and stats it first (its ring made),
 * then filters every io_uring call, as an allow-list does, and writes: the
 * ring's next look entered it and was killed (review).  "thread": a thread
 * filters itself only (no TSYNC), then opens, stats and writes: a check of
 * /proc/self/status (the main thread's) let it call io_uring_setup.
 *
 *   sandbox DIR [setup|late|thread]   prints "rows N"; killed, status 159
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

static char db[4096];
static sqlite3 *h;

/* kills the process at any io_uring call (this thread's, or all later) */
static int sandbox(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_enter, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_register, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	};
	struct sock_fprog prog = { sizeof f / sizeof f[0], f };
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

static int open_db(void)
{
	struct stat st;

	if (sqlite3_open(db, &h) || sqlite3_exec(h, "create table if not exists t(x)", 0, 0, 0))
		return 1;
	stat(db, &st); /* this thread makes the queue's ring */
	return 0;
}

static void *opener(void *unused)
{
	return open_db() ? (void *)1 : unused;
}

static int work(void)
{
	struct stat st;
	sqlite3_stmt *q;

	stat(db, &st);
	for (int i = 0; i < 2000; i++)
		if (sqlite3_exec(h, "insert into t values(randomblob(3000))", 0, 0, 0))
			return 1;
	if (sqlite3_prepare_v2(h, "select count(*) from t", -1, &q, 0) || sqlite3_step(q) != SQLITE_ROW)
		return 1;
	printf("rows %d\n", sqlite3_column_int(q, 0));
	sqlite3_finalize(q);
	return sqlite3_close(h) != SQLITE_OK;
}

static void *filtered_worker(void *unused)
{
	return sandbox() || open_db() || work() ? (void *)1 : unused;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "setup";
	pthread_t th;
	void *r;

	if (argc < 2)
		return 2;
	snprintf(db, sizeof db, "%s/x.db", argv[1]);
	if (strcmp(mode, "thread") == 0)
		return pthread_create(&th, 0, filtered_worker, 0) || pthread_join(th, &r) || r;
	if (strcmp(mode, "late") == 0)
		return open_db() || sandbox() || work();
	if (pthread_create(&th, 0, opener, 0) || pthread_join(th, &r) || r)
		return 1;
	return sandbox() || work();
}
