/*
 * fdchurn.c - threads under ALEX: three writers on one database through
 * connections of their own (the kept journal descriptor handed out, given
 * back, copied), a thread opening and closing a second database, and one
 * churning descriptors glibc closes inside (fdopen + fclose, opendir +
 * closedir), close_range and others (pipe, dup2), so that numbers are
 * reused at once.
 * A close hook that forgot its number after the kernel had it back could
 * forget a database's descriptor another thread had just opened with it
 * ("file is not a database", "disk I/O error"; found in review).
 *
 *   fdchurn DIR   prints "rows N ok bad=0" when all is well
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WRITERS 3
#define TXNS 400

static const char *dir;
static volatile int stop;
static int bad;
static pthread_mutex_t bad_mu = PTHREAD_MUTEX_INITIALIZER;

static void failed(const char *who, const char *msg)
{
	pthread_mutex_lock(&bad_mu);
	if (bad++ < 3)
		fprintf(stderr, "%s: %s\n", who, msg ? msg : "?");
	pthread_mutex_unlock(&bad_mu);
}

/* each transaction inserts two rows; every fifth rolls back */
static void *writer(void *arg)
{
	char path[512], q[200], *e = NULL;
	int id = (int)(long)arg;
	sqlite3 *db;

	snprintf(path, sizeof path, "%s/a.db", dir);
	sqlite3_open(path, &db);
	sqlite3_busy_timeout(db, 10000);
	for (int i = 0; i < TXNS; i++) {
		snprintf(q, sizeof q, "begin immediate; insert into t values(%d); insert into t values(%d); %s",
			 id, id, i % 5 == 0 ? "rollback;" : "commit;");
		if (sqlite3_exec(db, q, 0, 0, &e) != SQLITE_OK) {
			failed("writer", e);
			sqlite3_free(e);
			sqlite3_exec(db, "rollback", 0, 0, 0);
		}
	}
	sqlite3_close(db);
	return NULL;
}

static void *opener(void *arg)
{
	char path[512], *e = NULL;

	(void)arg;
	snprintf(path, sizeof path, "%s/b.db", dir);
	for (int i = 0; i < 150; i++) {
		sqlite3 *db;
		sqlite3_open(path, &db);
		sqlite3_busy_timeout(db, 10000);
		if (sqlite3_exec(db, "create table if not exists t(x); insert into t values(1);", 0, 0,
				 &e) != SQLITE_OK) {
			failed("opener", e);
			sqlite3_free(e);
		}
		sqlite3_close(db);
	}
	return NULL;
}

static void *churn(void *arg)
{
	char path[512];

	(void)arg;
	snprintf(path, sizeof path, "%s/junk", dir);
	while (!stop) {
		int fd = open(path, O_RDWR | O_CREAT, 0644), p[2];
		if (pipe(p) == 0) {
			dup2(p[0], p[1]);
			close(p[0]);
			close(p[1]);
		}
		FILE *f = fd >= 0 ? fdopen(dup(fd), "r") : NULL;
		if (f)
			fclose(f);
		DIR *d = opendir(dir);
		if (d)
			closedir(d);
		int x = fd >= 0 ? dup(fd) : -1;
		if (x >= 0)
			close_range((unsigned)x, (unsigned)x, 0);
		if (fd >= 0)
			close(fd);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t w[WRITERS], o, c;
	char path[512];
	sqlite3 *db;
	sqlite3_stmt *s;

	if (argc != 2) {
		fprintf(stderr, "usage: fdchurn DIR\n");
		return 2;
	}
	dir = argv[1];
	snprintf(path, sizeof path, "%s/a.db", dir);
	sqlite3_open(path, &db);
	sqlite3_exec(db, "create table t(x)", 0, 0, 0);
	pthread_create(&c, 0, churn, 0);
	for (long i = 0; i < WRITERS; i++)
		pthread_create(&w[i], 0, writer, (void *)i);
	pthread_create(&o, 0, opener, 0);
	for (int i = 0; i < WRITERS; i++)
		pthread_join(w[i], 0);
	pthread_join(o, 0);
	stop = 1;
	pthread_join(c, 0);
	sqlite3_prepare_v2(db,
			   "select count(*), (select integrity_check from pragma_integrity_check) from t",
			   -1, &s, 0);
	sqlite3_step(s);
	int rows = sqlite3_column_int(s, 0), want = WRITERS * TXNS * 4 / 5 * 2;
	printf("rows %d %s bad=%d\n", rows - want, sqlite3_column_text(s, 1), bad);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return 0;
}
