/* hooks.h - what the hook files share. */
#ifndef ALEX_HOOKS_H
#define ALEX_HOOKS_H

#include <stddef.h>

#define ALEX_EXPORT __attribute__((visibility("default")))

/* Tracking is on (constructor ran, ALEX_MODE is not off). */
int alex_active(void);
int alex_abs_path(int dirfd, const char *path, char *out, size_t cap);
int alex_close_hook(int fd);
void alex_dup_track(int oldfd, int newfd);
void alex_pdb_cancel_dirsync(void);

#endif
