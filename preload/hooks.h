/* hooks.h - what the hook files share (init.c, path.c, hooks_close.c). */
#ifndef ALEX_HOOKS_H
#define ALEX_HOOKS_H

#include <stddef.h>

#define ALEX_EXPORT __attribute__((visibility("default")))

/* init.c */
/* Tracking is on (constructor ran, ALEX_MODE is not off). */
int alex_active(void);
/* A setting was bad: tracked files are refused whatever ALEX_MODE says
 * (the message promised it; a key with ALEX_MODE=off must not mean a
 * database written in clear). */
int alex_refusing(void);
/* A vfork()ed child shares our memory until it execs: it must not change
 * the tables. */
int alex_vfork_child(void);
/* One system call: is this process other than the one these tables were made
 * or forked for -- a vfork child, or a child made without fork's handlers
 * (a raw clone, _Fork), whose copies of ALEX's state may say a thread of
 * its parent is at work? */
int alex_not_owner(void);
/* vfork.c: set once the process has called vfork() */
extern int alex_vforked;
/* This process owns the tables (at start, and in a fork()ed child). */
void alex_owner_reset(void);

/* path.c: path made absolute against dirfd (or the cwd).  0 or an errno. */
int alex_abs_path(int dirfd, const char *path, char *out, size_t cap);

/* hooks_close.c */
/* close(2) as the hooks see it: the table forgets fd first. */
int alex_close_hook(int fd);
/* After newfd became a copy of oldfd in the kernel (errno kept). */
void alex_dup_track(int oldfd, int newfd);

#endif
