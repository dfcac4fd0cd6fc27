/*
 * ids.c - getpid and geteuid answered from memory (preload/ids.c) are
 * what the kernel says: in the parent, in a child of fork, of a raw clone
 * system call (no fork handlers), of clone with CLONE_VM and of vfork (on
 * the parent's memory), and after seteuid (as root).  And SQLite's own
 * use of them: a forked child reseeds its randomness at its next open
 * (unixOpen compares getpid with the pid it seeded under), so its
 * randomblob differs from the parent's -- the same bytes would mean the
 * child was told its parent's pid.
 *
 *   ids DIR    prints "ok", or what differed
 */
#include <sched.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int check(const char *what)
{
	pid_t a = getpid(), b = (pid_t)syscall(SYS_getpid);
	if (a == b)
		return 0;
	printf("%s: getpid %d, the kernel %d\n", what, (int)a, (int)b);
	return 1;
}

static int on_our_memory(void *arg)
{
	(void)arg;
	_exit(check("clone(CLONE_VM)"));
}

static int status(pid_t p)
{
	int s;
	if (p < 0 || waitpid(p, &s, __WALL) != p)
		return 1;
	return WIFEXITED(s) ? WEXITSTATUS(s) : 1;
}

/* the child never returns from here */
static int vforked(void)
{
	pid_t p = vfork();
	if (p == 0)
		_exit(check("vfork"));
	return status(p);
}

/* randomblob(16) as hex, after an open of a database of DIR (SQLite
 * reseeds there when the pid changed) */
static int random_hex(const char *dir, const char *name, char *out)
{
	char path[4096];
	sqlite3 *db;
	sqlite3_stmt *st;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	if (sqlite3_open(path, &db) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "select hex(randomblob(16))", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW)
		return 1;
	snprintf(out, 40, "%s", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(db);
	return 0;
}

int main(int argc, char **argv)
{
	static char stack[65536];
	char mine[40], theirs[40];
	int pipefd[2], bad = 0;

	if (argc != 2)
		return 2;
	bad |= check("parent") | random_hex(argv[1], "a.db", mine);
	if (pipe(pipefd))
		return 2;
	pid_t p = fork();
	if (p == 0) {
		int b = check("fork") | random_hex(argv[1], "b.db", theirs);
		if (write(pipefd[1], theirs, sizeof theirs) != sizeof theirs)
			b = 1;
		_exit(b);
	}
	bad |= status(p) | random_hex(argv[1], "b.db", mine);
	if (read(pipefd[0], theirs, sizeof theirs) != sizeof theirs || strcmp(mine, theirs) == 0) {
		printf("a forked child's randomblob is its parent's: %s\n", mine);
		bad = 1;
	}
	p = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	if (p == 0)
		_exit(check("raw clone"));
	bad |= status(p) | check("parent after its children");
	p = clone(on_our_memory, stack + sizeof stack, CLONE_VM | SIGCHLD, NULL);
	bad |= status(p);
	bad |= vforked() | check("parent at the end");
	if (geteuid() == 0) {
		if (seteuid(65534) != 0 || geteuid() != 65534 || geteuid() != syscall(SYS_geteuid)) {
			printf("after seteuid(65534): geteuid %d\n", (int)geteuid());
			bad = 1;
		}
		if (seteuid(0) != 0 || geteuid() != 0) {
			printf("after seteuid(0): geteuid %d\n", (int)geteuid());
			bad = 1;
		}
	}
	puts(bad ? "bad" : "ok");
	return bad;
}
