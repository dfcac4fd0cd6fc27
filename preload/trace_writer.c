/*
 * trace_writer.c - full trace buffers become chunks of the trace file.
 *
 * Compressing and writing a chunk costs about 200 us; done by the thread
 * whose buffer filled, it landed on one of every few dozen transactions
 * (their p95 and p99 under tracing rose by an eighth).  So each buffer has
 * two halves: a full one is handed to one writer thread per process and
 * recording goes on in the other; the writer compresses and appends it
 * and gives it back.  Should the writer still hold the other half when the
 * next fills (it writes 64 KiB in far less time than it takes to record
 * it), the thread waits for it -- memory stays two halves per thread.
 *
 * No writer (it could not be started, or the process has called vfork,
 * whose child shares our memory), or at exit: the thread writes its chunk
 * itself, as before.  The writer blocks every signal, so the program's
 * signals go to its own threads; after fork the child starts its own, and
 * drops what its parent's writer was given (the parent writes it).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bytes.h"
#include "config.h"
#include "crc32c.h"
#include "hooks.h"
#include "trace.h"
#include "trace_buf.h"

enum { W_NONE, W_STARTING, W_RUNNING, W_FAILED };
static int wstate;                /* enum above */
static struct alex_tbuf *qhead;   /* handed over, not yet taken */
static uint32_t wseq;             /* futex word: bumped at every hand-over */

void alex_tw_stop(const char *what, int err)
{
	if (__atomic_exchange_n(&alex_tracing, 0, __ATOMIC_ACQ_REL))
		alex_msg(ALEX_MSG_ERROR, "trace %s: %s: %s; tracing stops, the program goes on",
			 alex_cfg.trace_path, what, strerror(err));
}

static int append(const void *buf, size_t n)
{
	long fd = syscall(SYS_openat, AT_FDCWD, alex_cfg.trace_path,
			  O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) {
		alex_tw_stop("cannot open", errno);
		return -1;
	}
	long w = syscall(SYS_write, (int)fd, buf, n);
	int err = w < 0 ? errno : ENOSPC;
	syscall(SYS_close, (int)fd);
	if (w != (long)n) {
		alex_tw_stop("cannot write", err);
		return -1;
	}
	return 0;
}

static void header(const struct alex_tbuf *b, uint8_t *h, uint32_t stored, int flags,
		   uint32_t nev, uint32_t dropped)
{
	alex_put32(h, ALEX_TRACE_FILE_MAGIC);
	h[4] = ALEX_TRACE_VERSION;
	h[5] = 0;
	h[6] = ALEX_TRACE_HDR;
	h[7] = (uint8_t)flags;
	alex_put32(h + 8, (uint32_t)alex_trace_pid);
	alex_put32(h + 12, b->tid);
	alex_put32(h + 16, stored);
	alex_put32(h + 20, nev);
	alex_put32(h + 24, dropped);
	alex_put32(h + 28, 0);
	alex_put32(h + 28, alex_crc32c(0, h, ALEX_TRACE_HDR + stored));
}

void alex_tw_write(struct alex_tbuf *b, uint8_t *data, uint32_t used, uint32_t nev,
		   uint32_t dropped)
{
	uint32_t raw = used - ALEX_TRACE_HDR;

	if (!nev || !__atomic_load_n(&alex_tracing, __ATOMIC_ACQUIRE))
		return;
	int z = LZ4_compress_fast_extState(&b->lz4.s, (const char *)data + ALEX_TRACE_HDR,
					   (char *)b->z + ALEX_TRACE_HDR, (int)raw,
					   LZ4_COMPRESSBOUND(ALEX_TBUF_BYTES), 1);
	if (z > 0 && (uint32_t)z < raw) {
		header(b, b->z, (uint32_t)z, ALEX_TRACE_LZ4, nev, dropped);
		append(b->z, ALEX_TRACE_HDR + (size_t)z);
	} else {
		header(b, data, raw, 0, nev, dropped);
		append(data, used);
	}
}

static long futex(uint32_t *word, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, word, op | FUTEX_PRIVATE_FLAG, val, ts, NULL, 0);
}

static void *writer(void *arg)
{
	sigset_t every;

	(void)arg;
	sigfillset(&every);
	pthread_sigmask(SIG_BLOCK, &every, NULL);
	for (;;) {
		uint32_t seen = __atomic_load_n(&wseq, __ATOMIC_ACQUIRE);
		struct alex_tbuf *b = __atomic_exchange_n(&qhead, NULL, __ATOMIC_ACQ_REL);
		if (!b) {
			futex(&wseq, FUTEX_WAIT, seen, NULL);
			continue;
		}
		while (b) {
			/* the owner may reuse b once it is given back */
			struct alex_tbuf *n = b->qnext;
			alex_tw_write(b, b->out, b->out_used, b->out_nev, b->out_dropped);
			__atomic_store_n(&b->out_pending, 0, __ATOMIC_RELEASE);
			futex(&b->out_pending, FUTEX_WAKE, INT_MAX, NULL);
			b = n;
		}
	}
	return NULL;
}

/* Starts the writer the first time a buffer fills; 1 if it runs. */
static int writer_up(void)
{
	int s = __atomic_load_n(&wstate, __ATOMIC_ACQUIRE), none = W_NONE;

	if (s == W_RUNNING)
		return 1;
	if (s != W_NONE || !__atomic_compare_exchange_n(&wstate, &none, W_STARTING, 0,
							 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return 0;
	pthread_attr_t a;
	pthread_t t;
	int ok = pthread_attr_init(&a) == 0;
	if (ok) {
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&a, 64 * 1024);
		ok = pthread_create(&t, &a, writer, NULL) == 0;
		pthread_attr_destroy(&a);
	}
	__atomic_store_n(&wstate, ok ? W_RUNNING : W_FAILED, __ATOMIC_RELEASE);
	return ok;
}

void alex_tw_settle(struct alex_tbuf *b)
{
	/* bounded: a program must never hang on its trace (2 s, then the
	 * chunk is given up) */
	for (int i = 0; i < 200 && __atomic_load_n(&b->out_pending, __ATOMIC_ACQUIRE); i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		futex(&b->out_pending, FUTEX_WAIT, 1, &ts);
	}
	__atomic_store_n(&b->out_pending, 0, __ATOMIC_RELEASE);
}

int alex_tw_handoff(struct alex_tbuf *b)
{
	if (__atomic_load_n(&alex_vforked, __ATOMIC_ACQUIRE) || !writer_up())
		return 0;
	alex_tw_settle(b);
	b->out = b->rec;
	b->out_used = b->used;
	b->out_nev = b->nev;
	/* a signal handler may count one meanwhile */
	b->out_dropped = __atomic_exchange_n(&b->dropped, 0, __ATOMIC_RELAXED);
	b->rec = b->rec == b->half[0] ? b->half[1] : b->half[0];
	b->used = ALEX_TRACE_HDR;
	b->nev = 0;
	__atomic_store_n(&b->out_pending, 1, __ATOMIC_RELEASE);
	b->qnext = __atomic_load_n(&qhead, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&qhead, &b->qnext, b, 0, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		;
	__atomic_add_fetch(&wseq, 1, __ATOMIC_RELEASE);
	futex(&wseq, FUTEX_WAKE, 1, NULL);
	return 1;
}

void alex_tw_forked(struct alex_tbuf *all)
{
	qhead = NULL;
	wstate = W_NONE;
	for (struct alex_tbuf *b = all; b; b = b->next)
		b->out_pending = 0;
}
