/*
 * spawn.c - running another program (the worker, strace, alex, gnuplot)
 * with fork and execvp of an argument vector: never through a shell, so a
 * directory or mode name is never parsed as a command.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

/* In the child: exits 126 when it cannot be set up as asked, 127 when
 * the program cannot be run (a shell's numbers). */
static void child(char *const argv[], const struct bench_spawn *how)
{
	if (how->out) {
		int fd = open(how->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || dup2(fd, 1) < 0)
			_exit(126);
		close(fd);
	}
	if (how->cwd && chdir(how->cwd))
		_exit(126);
	for (char *const *e = how->env; e && *e; e++)
		putenv(*e);
	execvp(argv[0], argv);
	_exit(127);
}

int bench_spawn(char *const argv[], const struct bench_spawn *how, struct rusage *ru)
{
	static const struct bench_spawn plain;
	int status;
	pid_t pid = fork();

	if (pid == 0)
		child(argv, how ? how : &plain);
	if (pid < 0)
		return -1;
	while (wait4(pid, &status, 0, ru) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
