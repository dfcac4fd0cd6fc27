/*
 * endchild DB HOW ACTION - one INSERT (ALEX_SYNC=normal, the connection
 * left open), then, once the flusher has had time to begin its sync (run
 * under strace with that sync held: regress.sh sync-before-end-child), a
 * child that ends at once: HOW is fork (fork's handlers run), _Fork or
 * clone (a raw SYS_clone: no handlers: the child's copy of ALEX's state
 * says the parent's flusher is inside a sync); ACTION is _exit, exit, execl
 * or execv (/bin/true).  Prints "ended" when the child ended within 3 s,
 * "hung" (and kills it) if not.
 */
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern pid_t _Fork(void);

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void end_child(const char *action)
{
	if (!strcmp(action, "execl"))
		execl("/bin/true", "true", (char *)NULL);
	if (!strcmp(action, "execv")) {
		char *argv[] = { "true", NULL };
		execv("/bin/true", argv);
	}
	if (!strcmp(action, "exit"))
		exit(0);
	_exit(0);
}

int main(int argc, char **argv)
{
	sqlite3 *db;

	if (argc != 4 || sqlite3_open(argv[1], &db) != SQLITE_OK)
		return 2;
	if (sqlite3_exec(db, "create table if not exists t(x); insert into t values(1)", 0, 0, 0))
		return 1;
	usleep(200000); /* the flusher's sync begins at three quarters of 100 ms */
	pid_t pid;
	if (!strcmp(argv[2], "_Fork"))
		pid = _Fork();
	else if (!strcmp(argv[2], "clone"))
		pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	else
		pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0)
		end_child(argv[3]);
	double t0 = now_ms();
	int st;
	while (waitpid(pid, &st, WNOHANG) != pid) {
		if (now_ms() - t0 > 3000) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			puts("hung");
			return 0;
		}
		usleep(1000);
	}
	puts("ended");
	return sqlite3_close(db) != SQLITE_OK;
}
