/* fdtable.c - descriptor -> open file description, lock-free to read. */
#include <errno.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "fdtable.h"
#include "locks.h"
#include "pdb.h"
#include "serve.h"
#include "xts_file.h"

static struct ofd **tab;
static size_t ntab;

int alex_fd_init(void)
{
	struct rlimit rl;
	size_t n = 65536;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY &&
	    rl.rlim_max > n)
		n = rl.rlim_max > (1u << 20) ? (1u << 20) : (size_t)rl.rlim_max;
	/* zero pages: untouched entries cost no memory */
	tab = calloc(n, sizeof *tab);
	if (!tab)
		return ENOMEM;
	ntab = n;
	return 0;
}

struct ofd *alex_fd_get(int fd)
{
	if (fd < 0 || (size_t)fd >= ntab)
		return NULL;
	return __atomic_load_n(&tab[fd], __ATOMIC_ACQUIRE);
}

int alex_fd_set(int fd, struct ofd *o)
{
	if (fd < 0 || (size_t)fd >= ntab)
		return EMFILE;
	__atomic_add_fetch(&o->refs, 1, __ATOMIC_ACQ_REL);
	struct ofd *old = __atomic_exchange_n(&tab[fd], o, __ATOMIC_ACQ_REL);
	if (old) {
		/* the kernel reused the number: it was closed behind our back,
		 * and with it went the process's locks on a database's file */
		if (old->role == ROLE_DB)
			alex_locks_gone_late(old->db);
		alex_ofd_put(old);
	}
	return 0;
}

struct ofd *alex_fd_take(int fd)
{
	if (fd < 0 || (size_t)fd >= ntab)
		return NULL;
	return __atomic_exchange_n(&tab[fd], NULL, __ATOMIC_ACQ_REL);
}

/* malloc, not calloc: glibc's calloc skips the thread cache, and SQLite
 * opens a journal (and its directory) at every transaction -- some 250
 * instructions each against 50 */
struct ofd *alex_ofd_new(struct pdb *db, enum alex_role role)
{
	struct ofd *o = malloc(sizeof *o);

	if (o)
		*o = (struct ofd){ .db = db, .role = role };
	return o;
}

void alex_ofd_put(struct ofd *o)
{
	if (o && __atomic_sub_fetch(&o->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		if (o->role == ROLE_WAL)
			alex_serve_wal_closed(o->db);
		if (o->role == ROLE_TEMP)
			alex_xts_file_free(o->tmp);
		alex_pdb_put(o->db);
		free(o);
	}
}
