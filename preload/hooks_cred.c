/*
 * hooks_cred.c - the calls that change what a stat by name would find for
 * this process without any change to a file: its credentials (search
 * permission on the path's directories) and its root or namespaces.  Each
 * is made as asked, then every stat answer watch.c keeps is forgotten, and
 * the effective uid ids.c keeps (a
 * process that dropped root must be refused a directory it no longer may
 * search, as the kernel refuses it: review).  Nothing else changes here.
 */
#include <errno.h>

#include "hooks.h"
#include "ids.h"
#include "real.h"
#include "watch.h"

/* name(params), made as asked (args), then the kept answers forgotten --
 * the stat answers, and the euid by ids (alex_ids_forget, or
 * alex_ids_namespaced after a namespace's change: a user namespace's
 * uid_map, written later, changes the euid with no call of ours) -- the
 * caller's errno kept.  setfsuid/setfsgid (per thread) return the
 * previous id and never fail; capset decides whether permission is checked
 * at all. */
#define AFTER(name, params, args, ids)                                                            \
	ALEX_EXPORT int name params                                                               \
	{                                                                                         \
		int r_ = REAL(name) args, e_ = errno;                                             \
		alex_watch_forget();                                                              \
		ids();                                                                            \
		errno = e_;                                                                       \
		return r_;                                                                        \
	}
#define FORGET_AFTER(name, params, args) AFTER(name, params, args, alex_ids_forget)

FORGET_AFTER(setuid, (uid_t u), (u))
FORGET_AFTER(seteuid, (uid_t u), (u))
FORGET_AFTER(setreuid, (uid_t r, uid_t e), (r, e))
FORGET_AFTER(setresuid, (uid_t r, uid_t e, uid_t s), (r, e, s))
FORGET_AFTER(setgid, (gid_t g), (g))
FORGET_AFTER(setegid, (gid_t g), (g))
FORGET_AFTER(setregid, (gid_t r, gid_t e), (r, e))
FORGET_AFTER(setresgid, (gid_t r, gid_t e, gid_t s), (r, e, s))
FORGET_AFTER(setgroups, (size_t n, const gid_t *list), (n, list))
FORGET_AFTER(initgroups, (const char *user, gid_t g), (user, g))
FORGET_AFTER(setfsuid, (uid_t u), (u))
FORGET_AFTER(setfsgid, (gid_t g), (g))
FORGET_AFTER(capset, (void *hdr, void *data), (hdr, data))
FORGET_AFTER(chroot, (const char *path), (path))
FORGET_AFTER(pivot_root, (const char *new_root, const char *put_old), (new_root, put_old))

AFTER(setns, (int fd, int type), (fd, type), alex_ids_namespaced)
AFTER(unshare, (int flags), (flags), alex_ids_namespaced)
