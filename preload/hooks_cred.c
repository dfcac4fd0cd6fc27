/*
 * hooks_cred.c - the calls that change what a stat by name would find for
 * this process without any change to a file: its credentials (search
 * permission on the path's directories) and its root or namespaces.  Each
 * is made as asked, then every stat answer watch.c keeps is forgotten (a
 * process that dropped root must be refused a directory it no longer may
 * search, as the kernel refuses it: review).  Nothing else changes here.
 */
#include <errno.h>

#include "hooks.h"
#include "real.h"
#include "watch.h"

/* The call, then the kept answers forgotten; the caller's errno kept. */
#define FORGET_AFTER(call)                                                                        \
	do {                                                                                      \
		int r_ = (call), e_ = errno;                                                      \
		alex_watch_forget();                                                              \
		errno = e_;                                                                       \
		return r_;                                                                        \
	} while (0)

ALEX_EXPORT int setuid(uid_t u)
{
	FORGET_AFTER(REAL(setuid)(u));
}
ALEX_EXPORT int seteuid(uid_t u)
{
	FORGET_AFTER(REAL(seteuid)(u));
}
ALEX_EXPORT int setreuid(uid_t r, uid_t e)
{
	FORGET_AFTER(REAL(setreuid)(r, e));
}
ALEX_EXPORT int setresuid(uid_t r, uid_t e, uid_t s)
{
	FORGET_AFTER(REAL(setresuid)(r, e, s));
}
ALEX_EXPORT int setgid(gid_t g)
{
	FORGET_AFTER(REAL(setgid)(g));
}
ALEX_EXPORT int setegid(gid_t g)
{
	FORGET_AFTER(REAL(setegid)(g));
}
ALEX_EXPORT int setregid(gid_t r, gid_t e)
{
	FORGET_AFTER(REAL(setregid)(r, e));
}
ALEX_EXPORT int setresgid(gid_t r, gid_t e, gid_t s)
{
	FORGET_AFTER(REAL(setresgid)(r, e, s));
}
ALEX_EXPORT int setgroups(size_t n, const gid_t *list)
{
	FORGET_AFTER(REAL(setgroups)(n, list));
}
ALEX_EXPORT int initgroups(const char *user, gid_t g)
{
	FORGET_AFTER(REAL(initgroups)(user, g));
}
/* per thread; returns the previous id, never an error */
ALEX_EXPORT int setfsuid(uid_t u)
{
	FORGET_AFTER(REAL(setfsuid)(u));
}
ALEX_EXPORT int setfsgid(gid_t g)
{
	FORGET_AFTER(REAL(setfsgid)(g));
}
/* capabilities decide whether permission is checked at all */
ALEX_EXPORT int capset(void *hdr, void *data)
{
	FORGET_AFTER(REAL(capset)(hdr, data));
}
ALEX_EXPORT int chroot(const char *path)
{
	FORGET_AFTER(REAL(chroot)(path));
}
ALEX_EXPORT int pivot_root(const char *new_root, const char *put_old)
{
	FORGET_AFTER(REAL(pivot_root)(new_root, put_old));
}
ALEX_EXPORT int setns(int fd, int type)
{
	FORGET_AFTER(REAL(setns)(fd, type));
}
ALEX_EXPORT int unshare(int flags)
{
	FORGET_AFTER(REAL(unshare)(flags));
}
