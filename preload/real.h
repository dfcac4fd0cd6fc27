/*
 * real.h - the libc functions libalex.so stands in front of, resolved once
 * with dlsym(RTLD_NEXT).  Each wrapper that passes a call through uses the
 * real function of the same ABI name, so glibc's own checks (__open_2's
 * O_CREAT-without-mode trap, fortify variants) still happen.
 */
#ifndef ALEX_REAL_H
#define ALEX_REAL_H

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <sys/fsuid.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

/* glibc exports these but no longer declares them all */
int __open_2(const char *, int);
int __open64_2(const char *, int);
int __openat_2(int, const char *, int);
int __openat64_2(int, const char *, int);
int __xstat(int, const char *, struct stat *);
int __xstat64(int, const char *, struct stat64 *);
int __lxstat(int, const char *, struct stat *);
int __lxstat64(int, const char *, struct stat64 *);
int __fxstat(int, int, struct stat *);
int __fxstat64(int, int, struct stat64 *);
int __fxstatat(int, int, const char *, struct stat *, int);
int __fxstatat64(int, int, const char *, struct stat64 *, int);
int fcntl64(int, int, ...);
int capset(void *, void *);
int pivot_root(const char *, const char *);

#define ALEX_REAL_LIST(X)                                                                         \
	X(open) X(open64) X(__open_2) X(__open64_2) X(openat) X(openat64) X(__openat_2)           \
	X(__openat64_2) X(creat) X(creat64) X(close) X(dup) X(dup2) X(dup3) X(fcntl) X(fcntl64)   \
	X(lockf) X(lockf64)                                                                      \
	X(read) X(write) X(pread) X(pread64) X(pwrite) X(pwrite64) X(readv) X(writev) X(preadv)   \
	X(pwritev) X(preadv64) X(pwritev64) X(preadv2) X(pwritev2) X(lseek) X(lseek64) X(stat)    \
	X(stat64) X(fstat) X(fstat64) X(lstat) X(lstat64) X(fstatat) X(fstatat64) X(__xstat)      \
	X(__xstat64) X(__fxstat) X(__fxstat64) X(__lxstat) X(__lxstat64) X(__fxstatat)            \
	X(__fxstatat64) X(statx) X(ftruncate) X(ftruncate64) X(truncate) X(truncate64)            \
	X(fallocate) X(fallocate64) X(posix_fallocate) X(posix_fallocate64) X(fsync)              \
	X(fdatasync) X(sync_file_range) X(mmap) X(mmap64) X(munmap) X(mremap) X(unlink)          \
	X(unlinkat) X(rename)                                                                      \
	X(renameat) X(renameat2) X(access) X(faccessat) X(fclose) X(closefrom) X(fchown) \
	X(execve) X(execv) X(execvp) X(execvpe) X(fexecve) X(_exit) X(_Exit) X(quick_exit)      \
	X(closedir)                                                                                \
	X(setuid) X(seteuid) X(setreuid) X(setresuid) X(setgid) X(setegid) X(setregid)           \
	X(setresgid) X(setgroups) X(initgroups) X(setfsuid) X(setfsgid) X(capset) X(chroot)      \
	X(pivot_root) X(setns) X(unshare) X(clone)

#define ALEX_REAL_DECL(name) extern __typeof__(name) *real_##name;
ALEX_REAL_LIST(ALEX_REAL_DECL)
#undef ALEX_REAL_DECL

/* Resolves every real_* pointer; safe to call again and from any thread. */
void alex_real_init(void);

/* Resolves one symbol now if the constructor has not run yet. */
#define REAL(name) (real_##name ? real_##name : (alex_real_init(), real_##name))

#endif
