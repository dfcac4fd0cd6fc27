/* fdtable.h - descriptor -> open file description (fdtable.c). */
#ifndef ALEX_PRELOAD_FDTABLE_H
#define ALEX_PRELOAD_FDTABLE_H

#include "state.h"

int alex_fd_init(void);
/* The description of fd, or NULL: the one load an untracked call pays. */
struct ofd *alex_fd_get(int fd);
/* Points fd at o (taking a reference); EMFILE if fd is beyond the table. */
int alex_fd_set(int fd, struct ofd *o);
/* Forgets fd; returns its ofd (whose reference the caller now owns). */
struct ofd *alex_fd_take(int fd);
/* Drops a reference; the last one drops the description's database. */
void alex_ofd_put(struct ofd *o);
struct ofd *alex_ofd_new(struct pdb *db, enum alex_role role);

#endif
