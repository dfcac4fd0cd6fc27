/*
 * rawclone.c - a child made by a raw clone system call (no fork handlers,
 * as _Fork or a language runtime's own clone makes one) right after a
 * burst of transactions, while the parent's span lock lingers
 * (preload/span.c).  POSIX locks are not inherited: the child holds none
 * of its parent's, though its copy of ALEX's state says the lock lingers.
 * The child's first transaction must meet the parent's lock in the kernel
 * -- SQLITE_BUSY -- and not answer itself from the copy (a span kept
 * without a call while no close was seen did: "child wrote", 101 rows;
 * docs/LOCKS.md, thirty-fifth session).
 *
 * The parent stops itself at once, so that its lock outlives the child's
 * try (its lease thread stops with it); the child waits until it is
 * stopped, tries, and continues it.
 *
 *   rawclone DIR    prints "child busy rows 100" (or "child wrote", ...)
 */
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Is process pid stopped (state T in /proc/pid/stat)? */
static int stopped(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	const char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'T';
}

static int child(const char *db, pid_t parent)
{
	sqlite3 *c;
	struct timespec pause = { 0, 100000 };
	int rc = sqlite3_open(db, &c);

	for (int i = 0; i < 100000 && !stopped(parent); i++)
		nanosleep(&pause, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(c, "insert into t values(2)", 0, 0, 0);
	kill(parent, SIGCONT);
	return rc == SQLITE_BUSY ? 10 : rc == SQLITE_OK ? 11 : 12;
}

int main(int argc, char **argv)
{
	char db[4096];
	sqlite3 *h;
	sqlite3_stmt *st;
	int status;

	if (argc != 2)
		return 2;
	snprintf(db, sizeof db, "%s/x.db", argv[1]);
	if (sqlite3_open(db, &h) || sqlite3_exec(h, "create table t(x)", 0, 0, 0))
		return 1;
	for (int i = 0; i < 100; i++)
		if (sqlite3_exec(h, "insert into t values(1)", 0, 0, 0))
			return 1;
	pid_t parent = getpid();
	long pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	if (pid == 0)
		_exit(child(db, parent));
	if (pid < 0)
		return 1;
	raise(SIGSTOP);
	if (waitpid((pid_t)pid, &status, 0) != pid || !WIFEXITED(status))
		return 1;
	int code = WEXITSTATUS(status), rows = -1;
	if (sqlite3_prepare_v2(h, "select count(*) from t", -1, &st, 0) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		rows = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(h);
	printf("child %s rows %d\n", code == 10 ? "busy" : code == 11 ? "wrote" : "error", rows);
	return 0;
}
