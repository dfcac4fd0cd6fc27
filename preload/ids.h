/* ids.h - getpid and geteuid answered from memory (ids.c). */
#ifndef ALEX_PRELOAD_IDS_H
#define ALEX_PRELOAD_IDS_H

/* The credentials changed (hooks_cred.c): the next geteuid asks the kernel. */
void alex_ids_forget(void);
/* unshare or setns was called: geteuid always asks the kernel from now on. */
void alex_ids_namespaced(void);

#endif
