/*
 * hooks_exec.c - the exec family: a new program image drops this one's
 * memory, so the trace's buffers are written out first (the new image
 * traces on into the same file).  A vfork()ed child shares its parent's
 * buffers: the parent writes them.  execl, execle and execlp build their
 * argument vector and call execve inside glibc, where no wrapper sees it:
 * their last events stay in the buffer the new image drops.  _exit and
 * _Exit end the process without the destructors that write the buffers
 * out (a shell's child, a forked worker): they write them first.
 *
 * The same moments end the flusher (flusher.c), which would have synced
 * ALEX_SYNC=normal's last commits within ALEX_SYNC_MS: they are synced
 * before the image goes (serve.c: alex_serve_sync_before_end; the library's
 * destructor does it at exit, for databases a program left open).
 */
#include "hooks.h"
#include "real.h"
#include "serve.h"
#include "trace.h"

static void before_exec(void)
{
	if (alex_vfork_child())
		return; /* the parent's memory and locks: the parent does it */
	if (alex_active())
		alex_serve_sync_before_end();
	if (alex_tracing)
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
