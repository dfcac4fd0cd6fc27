/*
 * worker.c - one mode, one workload, one database: the process alex-bench
 * measures.  It is the same binary for every mode; only the pragmas and,
 * for ALEX modes, the environment differ.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>
#include <sqlite3.h>

#include "bench.h"

#ifndef BENCH_SQLCIPHER /* set by the Makefile for alex-bench-sqlcipher */
#define BENCH_SQLCIPHER 0
#endif

enum op { OP_INSERT, OP_SELECT, OP_UPDATE, OP_DELETE, OP_COMMIT, NOPS };
_Static_assert(NOPS == BENCH_MAXOPS, "bench_op_names names every op");
const char *const bench_op_names[BENCH_MAXOPS] = { "insert", "select", "update", "delete",
						  "commit" };

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

uint64_t bench_rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int exec_sql(sqlite3 *db, const char *sql)
{
	char *err = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
		fprintf(stderr, "alex-bench: %s: %s\n", sql, err ? err : sqlite3_errmsg(db));
		sqlite3_free(err);
		return -1;
	}
	return 0;
}

static int step_done(sqlite3_stmt *st)
{
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		;
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

static int64_t query_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v = -1;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

uint64_t bench_wchar(void)
{
	char buf[1024];
	int fd = open("/proc/self/io", O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	const char *p = strstr(buf, "wchar:");
	return p ? strtoull(p + 6, NULL, 10) : 0;
}

/* The compressible payload of the ALEX paper's workload. */
static void fill_payload(unsigned char *val, int payload)
{
	for (int i = 0; i < payload; i++)
		val[i] = (unsigned char)("metadata-value-"[i % 15]);
}

struct ctx {
	sqlite3 *db;
	sqlite3_stmt *st[NOPS];
	FILE *lat;
	unsigned char *val, *upd;
	uint64_t nupd;
	int payload;
	uint64_t seed;
	long done; /* operations counted in ops/s (commits are not) */
};

/* One timed statement; its latency goes to the per-operation CSV. */
static int timed(struct ctx *c, enum op op)
{
	double a = now_s();
	if (step_done(c->st[op])) {
		fprintf(stderr, "alex-bench: %s: %s\n", bench_op_names[op], sqlite3_errmsg(c->db));
		return -1;
	}
	fprintf(c->lat, "%s,%.3f\n", bench_op_names[op], (now_s() - a) * 1e6);
	c->done += op != OP_COMMIT;
	return 0;
}

static int insert_row(struct ctx *c, int64_t key, int is_timed)
{
	sqlite3_stmt *q = c->st[OP_INSERT];
	sqlite3_bind_int64(q, 1, key);
	sqlite3_bind_blob(q, 2, c->val, c->payload, SQLITE_STATIC);
	if (is_timed)
		return timed(c, OP_INSERT);
	return step_done(q);
}

/*
 * An UPDATE that stores the bytes already there changes no page: SQLite
 * compares before it writes.  Every update stores a new sequence number,
 * offset per process: the large workload's database is reused, and the
 * same seed picks the same keys in every mode.
 */
static void bind_update(struct ctx *c, int64_t key)
{
	uint64_t seq = ++c->nupd;
	if (seq == 1)
		c->nupd = seq = (uint64_t)getpid() << 32 | (uint64_t)time(NULL) << 8;
	memcpy(c->upd, &seq, (size_t)c->payload < sizeof seq ? (size_t)c->payload : sizeof seq);
	sqlite3_bind_blob(c->st[OP_UPDATE], 1, c->upd, c->payload, SQLITE_STATIC);
	sqlite3_bind_int64(c->st[OP_UPDATE], 2, key);
}

/* insert and mixed: the paper's autocommit statements. */
static int run_kv(struct ctx *c, long ops, int mixed)
{
	uint64_t s = c->seed;
	int64_t next = 1;
	if (mixed) { /* the rows mixed operations find, untimed, in one transaction */
		if (exec_sql(c->db, "begin"))
			return -1;
		for (; next <= 1000; next++)
			if (insert_row(c, next, 0))
				return -1;
		if (exec_sql(c->db, "commit"))
			return -1;
	}
	for (long i = 0; i < ops; i++) {
		unsigned r = (unsigned)(bench_rnd(&s) % 100);
		enum op op = !mixed ? OP_INSERT : r < 40 ? OP_INSERT : r < 70 ? OP_SELECT
						: r < 90 ? OP_UPDATE : OP_DELETE;
		if (op == OP_INSERT) {
			if (insert_row(c, next++, 1))
				return -1;
			continue;
		}
		int64_t key = 1 + (int64_t)(bench_rnd(&s) % (uint64_t)(next - 1));
		sqlite3_stmt *q = c->st[op];
		if (op == OP_UPDATE) {
			bind_update(c, key);
		} else {
			sqlite3_bind_int64(q, 1, key);
		}
		if (timed(c, op))
			return -1;
	}
	return 0;
}

/*
 * leviora: the embedded-SQLite paper's test.  4*ops indexed writes (20 000
 * by default) in transactions of 2 000, then 20*ops (100 000) random point
 * reads through the index.  Each commit is timed as its own "commit" op.
 */
static int run_leviora(struct ctx *c, long ops)
{
	long writes = 4 * ops, reads = 20 * ops, txn = writes < 2000 ? writes : 2000;
	uint64_t s = c->seed;
	int64_t *tags = malloc((size_t)writes * sizeof *tags);
	sqlite3_stmt *ins, *sel;
	int rc = -1;

	if (!tags || exec_sql(c->db, "create index kv_tag on kv(tag)") ||
	    sqlite3_prepare_v2(c->db, "insert into kv(key, value, tag) values(?, ?, ?)", -1, &ins,
			       NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(c->db, "select key, value from kv where tag = ?", -1, &sel, NULL) !=
		    SQLITE_OK) {
		free(tags);
		return -1;
	}
	sqlite3_finalize(c->st[OP_INSERT]);
	sqlite3_finalize(c->st[OP_SELECT]);
	c->st[OP_INSERT] = ins;
	c->st[OP_SELECT] = sel;
	for (long i = 0; i < writes; i++) {
		if (i % txn == 0 && exec_sql(c->db, "begin"))
			goto out;
		tags[i] = (int64_t)(bench_rnd(&s) >> 1);
		sqlite3_bind_int64(ins, 1, i + 1);
		sqlite3_bind_blob(ins, 2, c->val, c->payload, SQLITE_STATIC);
		sqlite3_bind_int64(ins, 3, tags[i]);
		if (timed(c, OP_INSERT))
			goto out;
		if ((i + 1) % txn == 0 || i + 1 == writes)
			if (timed(c, OP_COMMIT))
				goto out;
	}
	for (long i = 0; i < reads; i++) {
		sqlite3_bind_int64(sel, 1, tags[bench_rnd(&s) % (uint64_t)writes]);
		if (timed(c, OP_SELECT))
			goto out;
	}
	rc = 0;
out:
	free(tags);
	return rc;
}

/* large: random single-row UPDATEs of the rows of a big database. */
static int run_large(struct ctx *c, long ops)
{
	uint64_t s = c->seed;
	int64_t rows = query_int(c->db, "select max(key) from kv");
	if (rows < 1)
		return -1;
	for (long i = 0; i < ops; i++) {
		bind_update(c, 1 + (int64_t)(bench_rnd(&s) % (uint64_t)rows));
		if (timed(c, OP_UPDATE))
			return -1;
	}
	return 0;
}

/* SQLCipher: the key first, as it must be, and then proof that the
 * library is SQLCipher (plain SQLite takes PRAGMA key and ignores it, and
 * would be measured in its place). */
static int open_cipher(sqlite3 *db, const struct bench_mode *m)
{
	sqlite3_stmt *st;
	int is = 0;

	if (exec_sql(db, m->cipher_key))
		return -1;
	if (sqlite3_prepare_v2(db, "pragma cipher_version", -1, &st, NULL) == SQLITE_OK)
		is = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0);
	sqlite3_finalize(st);
	if (!is)
		fprintf(stderr, "alex-bench: %s: the SQLite library is not SQLCipher\n", m->name);
	return is ? 0 : -1;
}

int bench_worker(const struct bench_mode *m, const char *workload, const char *path, long ops,
		 int payload, uint64_t seed, const char *latfile)
{
	struct ctx c = { .payload = payload, .seed = seed };
	char sql[1024];
	int large = strcmp(workload, "large") == 0, lev = strcmp(workload, "leviora") == 0;

	if (strcmp(workload, "short") == 0)
		return bench_short(m, path, ops, payload, latfile);

	if (m->cipher_key && !BENCH_SQLCIPHER) {
		fprintf(stderr, "alex-bench: %s: this worker is not linked to SQLCipher "
				"(alex-bench-sqlcipher is)\n", m->name);
		return 1;
	}
	c.val = malloc((size_t)payload);
	c.upd = malloc((size_t)payload);
	c.lat = fopen(latfile, "w");
	if (!c.val || !c.upd || !c.lat || sqlite3_open(path, &c.db) != SQLITE_OK)
		return 1;
	fill_payload(c.val, payload);
	fill_payload(c.upd, payload);
	if (m->cipher_key && open_cipher(c.db, m))
		return 1;
	snprintf(sql, sizeof sql, "pragma journal_mode=%s; pragma synchronous=%s; %s %s",
		 m->journal, m->sync, m->extra,
		 large ? "" : lev ? "create table kv(key integer primary key, value blob, tag integer);"
				  : "create table kv(key integer primary key, value blob);");
	if (exec_sql(c.db, sql))
		return 1;
	const char *text[NOPS] = { "insert into kv(key, value) values(?, ?)",
				   "select value from kv where key = ?",
				   "update kv set value = ? where key = ?",
				   "delete from kv where key = ?", "commit" };
	for (int i = 0; i < NOPS; i++)
		if (sqlite3_prepare_v2(c.db, text[i], -1, &c.st[i], NULL) != SQLITE_OK) {
			fprintf(stderr, "alex-bench: %s: %s\n", text[i], sqlite3_errmsg(c.db));
			return 1;
		}
	fprintf(c.lat, "op,us\n");
	double t0 = now_s();
	int rc = large ? run_large(&c, ops)
		: lev ? run_leviora(&c, ops)
		: run_kv(&c, ops, strcmp(workload, "mixed") == 0);
	double t1 = now_s();
	if (rc)
		return 1;
	/* integrity_check reads every page: the whole database for "large" */
	sqlite3_stmt *ic;
	const char *ok = "?";
	if (sqlite3_prepare_v2(c.db, large ? "pragma quick_check" : "pragma integrity_check", -1,
			       &ic, NULL) == SQLITE_OK && sqlite3_step(ic) == SQLITE_ROW)
		ok = strcmp((const char *)sqlite3_column_text(ic, 0), "ok") == 0 ? "ok" : "FAILED";
	printf("%ld %.6f %s", c.done, t1 - t0, ok);
	sqlite3_finalize(ic);
	for (int i = 0; i < NOPS; i++)
		sqlite3_finalize(c.st[i]);
	fclose(c.lat);
	free(c.val);
	free(c.upd);
	if (sqlite3_close(c.db) != SQLITE_OK)
		return 1;
	printf(" %llu\n", (unsigned long long)bench_wchar());
	return 0;
}

/*
 * The database of the "large" workload, built once with plain SQLite (no
 * journal, no sync: it is scratch) and reused by every mode and run.  Its
 * user_version records the payload and size it was built for.
 */
int bench_build_large(const char *path, long mb, int payload)
{
	sqlite3 *db;
	int64_t want = (int64_t)mb << 20, tag = ((int64_t)payload << 20) | mb;
	struct stat st;
	char sql[128];

	if (stat(path, &st) == 0 && st.st_size >= want) {
		if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
			return -1;
		int64_t v = query_int(db, "pragma user_version");
		sqlite3_close(db);
		if (v == (tag & 0x7fffffff))
			return 0;
	}
	unlink(path);
	fprintf(stderr, "alex-bench: building %s (%ld MiB, %d-byte rows), once\n", path, mb, payload);
	if (sqlite3_open(path, &db) != SQLITE_OK ||
	    exec_sql(db, "pragma journal_mode=off; pragma synchronous=off; pragma cache_size=-65536;"
			 "create table kv(key integer primary key, value blob); begin"))
		return -1;
	unsigned char *val = malloc((size_t)payload);
	sqlite3_stmt *ins;
	if (!val || sqlite3_prepare_v2(db, "insert into kv(key, value) values(?, ?)", -1, &ins,
				       NULL) != SQLITE_OK)
		return -1;
	fill_payload(val, payload);
	int rc = 0;
	for (int64_t key = 1; rc == 0; key++) {
		sqlite3_bind_int64(ins, 1, key);
		sqlite3_bind_blob(ins, 2, val, payload, SQLITE_STATIC);
		rc = step_done(ins);
		if (key % 100000 == 0 &&
		    query_int(db, "pragma page_count") * query_int(db, "pragma page_size") >= want)
			break;
	}
	sqlite3_finalize(ins);
	free(val);
	snprintf(sql, sizeof sql, "commit; pragma user_version=%lld",
		 (long long)(tag & 0x7fffffff));
	if (rc || exec_sql(db, sql) || sqlite3_close(db) != SQLITE_OK)
		return -1;
	return 0;
}
