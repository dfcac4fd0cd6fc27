/*
 * ringfail.c - loaded in front of libalex.so, fails the ring's first look
 * (the first io_uring_enter with IORING_ENTER_GETEVENTS) and the re-arm
 * that follows it (the next io_uring_enter) with EINTR; every other
 * system call goes through.  A look that failed so once took its cleared
 * flag, and the poll whose work never ran, as "quiet" for the rest of the
 * process: every stat by name answered as kept, whatever changed (review;
 * preload/ring.c).  regress.sh runs ringbell.c under it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <linux/io_uring.h>
#include <stdarg.h>
#include <sys/syscall.h>

__attribute__((visibility("default"))) long syscall(long n, ...)
{
	static long (*real)(long, ...);
	static int left = -1; /* enters still to fail; -1 before the first look */
	long a[6];
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	if (n == SYS_io_uring_enter) {
		if (left < 0 && (a[3] & IORING_ENTER_GETEVENTS))
			left = 2;
		if (left > 0) {
			left--;
			errno = EINTR;
			return -1;
		}
	}
	return real(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}
