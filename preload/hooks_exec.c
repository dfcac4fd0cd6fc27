/*
 * hooks_exec.c - the exec family: a new program image drops this one's
 * memory, so the trace's buffers are written out first (the new image
 * traces on into the same file).  A vfork()ed child shares its parent's
 * buffers: the parent writes them.  execl, execle and execlp are built
 * here on execv, execvp and execve (glibc calls its own execve inside
 * them, where no wrapper would see it).  _exit, _Exit and quick_exit end
 * the process without the destructors that write the buffers out (a
 * shell's child, a forked worker): they write them first.
 *
 * The same moments end the flusher (flusher.c), which would have synced
 * ALEX_SYNC=normal's last commits within ALEX_SYNC_MS: they are synced
 * before the image goes (serve.c: alex_serve_sync_before_end; the library's
 * destructor does it at exit, for databases a program left open).
 */
#include <stdarg.h>
#include <stddef.h>

#include "hooks.h"
#include "real.h"
#include "serve.h"
#include "trace.h"

static void before_exec(void)
{
	/* a vfork child (the parent's memory and locks: the parent syncs), or
	 * a child made without fork's handlers, whose copy says the parent's
	 * flusher is inside a sync that will never end here (review: such a
	 * child waited for it for ever) */
	if (alex_active() && !alex_not_owner())
		alex_serve_sync_before_end();
	if (alex_tracing && !alex_vfork_child())
		alex_trace_flush_all();
}

ALEX_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	before_exec();
	return REAL(execve)(path, argv, envp);
}
ALEX_EXPORT int execv(const char *path, char *const argv[])
{
	before_exec();
	return REAL(execv)(path, argv);
}
ALEX_EXPORT int execvp(const char *file, char *const argv[])
{
	before_exec();
	return REAL(execvp)(file, argv);
}
ALEX_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	before_exec();
	return REAL(execvpe)(file, argv, envp);
}
ALEX_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	before_exec();
	return REAL(fexecve)(fd, argv, envp);
}

/* execl, execlp and execle build their vector and call execve inside
 * glibc, where no hook sees it: built here the same way (arg0, then the
 * list up to its NULL; for execle the environment after it), so that the
 * sync and the trace come first. */
static int exec_list(const char *file, char how, const char *arg0, va_list ap)
{
	va_list count;
	size_t n = 1;

	va_copy(count, ap);
	while (va_arg(count, const char *))
		n++;
	va_end(count);
	const char *argv[n + 1];
	argv[0] = arg0;
	for (size_t i = 1; i <= n; i++) /* argv[n]: the NULL */
		argv[i] = va_arg(ap, const char *);
	char *const *av = (char *const *)argv;
	before_exec();
	if (how == 'e')
		return REAL(execve)(file, av, va_arg(ap, char *const *));
	return how == 'p' ? REAL(execvp)(file, av) : REAL(execv)(file, av);
}

#define EXEC_LIST(file, how, arg)                                                                  \
	va_list ap;                                                                                \
	va_start(ap, arg);                                                                         \
	int r = exec_list(file, how, arg, ap);                                                     \
	va_end(ap);                                                                                \
	return r

ALEX_EXPORT int execl(const char *path, const char *arg, ...)
{
	EXEC_LIST(path, 'v', arg);
}
ALEX_EXPORT int execlp(const char *file, const char *arg, ...)
{
	EXEC_LIST(file, 'p', arg);
}
ALEX_EXPORT int execle(const char *path, const char *arg, ...)
{
	EXEC_LIST(path, 'e', arg);
}

ALEX_EXPORT void quick_exit(int status)
{
	before_exec();
	REAL(quick_exit)(status);
	__builtin_unreachable();
}

ALEX_EXPORT void _exit(int status)
{
	before_exec();
	REAL(_exit)(status);
	__builtin_unreachable();
}
ALEX_EXPORT void _Exit(int status)
{
	before_exec();
	REAL(_Exit)(status);
	__builtin_unreachable();
}
