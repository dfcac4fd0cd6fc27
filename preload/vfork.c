/*
 * vfork.c - whether a vfork()ed child may be running on our memory.
 *
 * A vfork()ed child shares the parent's memory until it execs or exits,
 * so the hooks must not change the tables from it (init.c:
 * alex_vfork_child).  Telling the child from the parent takes getpid(), a
 * system call, which used to be paid on every open and close of a
 * database file.  Now it is paid only once the process has called vfork:
 * this stub notes the call and jumps to libc's vfork, leaving no frame of
 * ours for the child to return through (a C wrapper would: the child
 * would return into a frame the parent then reuses).  posix_spawn and
 * system() make their child with clone inside glibc, which runs none of
 * our hooks.
 */
#include <dlfcn.h>

#include "hooks.h"

int alex_vforked;

/* Called by the stub with the stack as at vfork's entry: notes the vfork
 * and returns libc's, resolved here the first time (a constructor of
 * another library may vfork before ours runs). */
__attribute__((used)) void *alex_vfork_prepare(void)
{
	static void *real;

	__atomic_store_n(&alex_vforked, 1, __ATOMIC_SEQ_CST);
	if (!real)
		real = dlsym(RTLD_NEXT, "vfork");
	return real;
}

#if defined(__x86_64__)
__asm__(".text\n"
	".globl vfork\n"
	".type vfork, @function\n"
	"vfork:\n"
	"	subq $8, %rsp\n"
	"	call alex_vfork_prepare\n"
	"	addq $8, %rsp\n"
	"	jmp *%rax\n"
	".size vfork, .-vfork\n");
#elif defined(__aarch64__)
__asm__(".text\n"
	".globl vfork\n"
	".type vfork, %function\n"
	"vfork:\n"
	"	stp x29, x30, [sp, -16]!\n"
	"	bl alex_vfork_prepare\n"
	"	ldp x29, x30, [sp], 16\n"
	"	br x0\n"
	".size vfork, .-vfork\n");
#else
#error "preload/vfork.c: a vfork stub for this architecture (three instructions) is needed"
#endif
