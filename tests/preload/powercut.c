/*
 * powercut.c - the SQLite workloads of the power-cut campaigns (powercut.sh,
 * crashtest.sh), and their judges.  Linked to libsqlite3; runs under
 * libalex.so (or its test build).
 *
 *   powercut run DB ACKS NTXN PACE_US [FIRST]
 *                                       runs transactions FIRST (1)..NTXN; after
 *                                       each COMMIT returns, appends "i t_ns" to
 *                                       ACKS
 *   powercut faultrun DB ACKS NTXN      the same, retrying failed transactions
 *   powercut check DB ACKS MODE WINDOW_MS CUT_NS
 *                                       reopens DB and judges what survived
 *   powercut digest DB                  prints "last digest" of DB, or the
 *                                       error SQLite gives (one line)
 *   powercut mrun DB STREAM NTXN        one of several processes writing one
 *                                       database: stream S's transactions
 *   powercut mcheck DB ACKS NSTREAMS MODE
 *                                       judges a multi-process run
 *
 * Transaction i is a pure function of i, so the state after any i can be
 * rebuilt in memory with plain SQLite and compared with what recovery left.
 * Every transaction also sets meta.last = i: that names the state.
 * POWERCUT_JOURNAL=MODE runs the workload in that journal mode; in WAL
 * mode with WAL checkpoints (passive, and truncating) every few dozen
 * transactions.  Under the test
 * build's recording (ALEX_TEST_RECORD) every acknowledgement is also
 * appended to the trace, in order with the file operations (io_test.h).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"

/* A blob of n pseudo-random bytes (incompressible: no help from LZ4). */
static int put_blob(sqlite3 *db, int64_t id, int64_t k, size_t n, uint64_t seed)
{
	uint8_t *b = malloc(n);
	sqlite3_stmt *st;
	int rc;
	for (size_t j = 0; j < n; j++)
		b[j] = (uint8_t)(mix(seed + j / 8) >> (8 * (j % 8)));
	rc = sqlite3_prepare_v2(db, "insert or replace into t(id, k, v, b) values(?, ?, ?, ?)", -1,
				&st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_int64(st, 2, k);
		sqlite3_bind_text(st, 3, "blob", -1, SQLITE_STATIC);
		sqlite3_bind_blob(st, 4, b, (int)n, SQLITE_TRANSIENT);
		rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
		sqlite3_finalize(st);
	}
	free(b);
	return rc;
}

/* The statements of transaction i (without BEGIN/COMMIT). */
static int txn_body(sqlite3 *db, int i)
{
	char sql[2048];
	uint64_t r = mix((uint64_t)i);
	int rc = SQLITE_OK;

	if (i == 1)
		rc = exec(db, "create table t(id integer primary key, k integer, v text, b blob);"
			      "create table meta(last integer); insert into meta values(0)");
	else if (i == 150) /* large blobs: several pages each, overflow chains */
		for (int j = 0; j < 3 && rc == SQLITE_OK; j++)
			rc = put_blob(db, 100000 + j, j, 120000 + 40000 * (size_t)j, (uint64_t)i * 7 + j);
	else if (i == 200) /* schema changes */
		rc = exec(db, "create index t_k on t(k); alter table t add column extra text");
	else if (i % 7 == 0) { /* multi-statement */
		for (int j = 0; j < 5 && rc == SQLITE_OK; j++) {
			snprintf(sql, sizeof sql, "insert into t(k, v) values(%d, 'multi %d.%d %0*d')",
				 i * 10 + j, i, j, (int)(r % 300), 0);
			rc = exec(db, sql);
		}
		snprintf(sql, sizeof sql, "update t set v = v || '+' where id %% 11 = %d;"
			 "delete from t where id %% 29 = %d and id < 100000", i % 11, i % 29);
		if (rc == SQLITE_OK)
			rc = exec(db, sql);
	} else if (r % 3 == 0) {
		snprintf(sql, sizeof sql, "update t set k = k + 1, v = 'upd %d' where id = %" PRIu64,
			 i, 1 + (r >> 8) % (uint64_t)(i * 2));
		rc = exec(db, sql);
	} else if (r % 3 == 1 && i > 20) {
		snprintf(sql, sizeof sql, "delete from t where id = %" PRIu64, 1 + (r >> 8) % (uint64_t)i);
		rc = exec(db, sql);
	} else {
		snprintf(sql, sizeof sql, "insert into t(k, v) values(%d, 'row %d %0*d')", i, i,
			 (int)(r % 900), 0);
		rc = exec(db, sql);
	}
	if (rc == SQLITE_OK) {
		snprintf(sql, sizeof sql, "update meta set last = %d", i);
		rc = exec(db, sql);
	}
	return rc;
}

/* POWERCUT_JOURNAL=wal: the same transactions in WAL mode. */
static int wal_mode(void)
{
	const char *j = getenv("POWERCUT_JOURNAL");
	return j && strcmp(j, "wal") == 0;
}

/* The journal mode POWERCUT_JOURNAL names, if any, and the locking mode
 * POWERCUT_LOCKING names (exclusive: SQLite keeps its journal open from
 * one transaction to the next): 0 or an error. */
static int journal_mode(sqlite3 *db)
{
	const char *j = getenv("POWERCUT_JOURNAL"), *l = getenv("POWERCUT_LOCKING");
	char sql[64];

	if (l && *l) {
		if (strlen(l) > 16)
			return 1;
		snprintf(sql, sizeof sql, "pragma locking_mode=%s", l);
		if (exec(db, sql))
			return 1;
	}
	if (!j || !*j)
		return 0;
	if (strlen(j) > 16)
		return 1;
	snprintf(sql, sizeof sql, "pragma journal_mode=%s", j);
	return exec(db, sql);
}

/* In WAL mode, SQLite's own checkpoints now and then: they write the
 * database file, the WAL is restarted or truncated. */
static int wal_checkpoint(sqlite3 *db, int i)
{
	if (!wal_mode() || i % 23)
		return SQLITE_OK;
	return exec(db, i % 69 == 0 ? "pragma wal_checkpoint(truncate)" : "pragma wal_checkpoint(passive)");
}

static int run(const char *path, const char *acks, int first, int ntxn, long pace_us)
{
	sqlite3 *db;
	int fd = open(acks, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd < 0 || sqlite3_open(path, &db) != SQLITE_OK)
		return 2;
	sqlite3_busy_timeout(db, 5000);
	if (journal_mode(db))
		return 3;
	for (int i = first; i <= ntxn; i++) {
		if (exec(db, "begin") || txn_body(db, i) || exec(db, "commit"))
			return 3;
		trace_ack(0, i);
		char line[64];
		int n = snprintf(line, sizeof line, "%d %" PRIu64 "\n", i, now_ns());
		if (write(fd, line, (size_t)n) != n)
			return 4;
		if (wal_checkpoint(db, i))
			return 3;
		if (pace_us)
			usleep((useconds_t)pace_us);
	}
	sqlite3_close(db);
	return 0;
}

/*
 * The fault campaign's workload: a transaction that fails is rolled back
 * and tried again (three times), as a careful program would; one that
 * still fails is given up.  ACKS gets "i t_ns" per acknowledged
 * transaction and "maybe i" when COMMIT itself failed: SQLite cannot say
 * whether such a transaction reached the disk, so the judge accepts both.
 * Every error code seen is counted in "errors C N" lines at the end.
 */
static int faultrun(const char *path, const char *acks, int ntxn)
{
	sqlite3 *db;
	FILE *f = fopen(acks, "w");
	int counts[256] = { 0 };
	if (!f || sqlite3_open(path, &db) != SQLITE_OK)
		return 2;
	sqlite3_extended_result_codes(db, 0);
	if (journal_mode(db))
		return 3;
	for (int i = 1; i <= ntxn; i++) {
		int done = 0;
		for (int attempt = 0; attempt < 3 && !done; attempt++) {
			int rc = sqlite3_exec(db, "begin", NULL, NULL, NULL);
			if (rc == SQLITE_OK)
				rc = txn_body(db, i) ? sqlite3_errcode(db) : SQLITE_OK;
			if (rc == SQLITE_OK) {
				rc = sqlite3_exec(db, "commit", NULL, NULL, NULL);
				if (rc != SQLITE_OK)
					fprintf(f, "maybe %d\n", i);
			}
			if (rc == SQLITE_OK) {
				fprintf(f, "%d %" PRIu64 "\n", i, now_ns());
				done = 1;
			} else {
				counts[rc & 0xff]++;
				if (!sqlite3_get_autocommit(db))
					sqlite3_exec(db, "rollback", NULL, NULL, NULL);
				/* An open that failed read-write falls back to read-only
				 * in SQLite's unix VFS: start again with a new connection. */
				if (rc == SQLITE_READONLY) {
					sqlite3_close(db);
					if (sqlite3_open(path, &db) != SQLITE_OK)
						return 6;
				}
			}
		}
	}
	for (int c = 0; c < 256; c++)
		if (counts[c])
			fprintf(f, "errors %d %d\n", c, counts[c]);
	fclose(f);
	return sqlite3_close(db) == SQLITE_OK ? 0 : 5;
}

/* FNV-1a over the schema and every row, column types included. */
static uint64_t digest(sqlite3 *db)
{
	uint64_t h = 0xcbf29ce484222325ull;
	const char *q[] = { "select type, name, tbl_name, sql from sqlite_master order by name",
			    "select * from t order by id", "select * from meta" };
	for (int k = 0; k < 3; k++) {
		sqlite3_stmt *st;
		if (sqlite3_prepare_v2(db, q[k], -1, &st, NULL) != SQLITE_OK)
			continue; /* no table t yet: nothing to hash */
		while (sqlite3_step(st) == SQLITE_ROW)
			for (int c = 0; c < sqlite3_column_count(st); c++) {
				int t = sqlite3_column_type(st, c);
				const uint8_t *p = sqlite3_column_blob(st, c);
				int n = sqlite3_column_bytes(st, c);
				h = (h ^ (uint64_t)t) * 0x100000001b3ull;
				for (int j = 0; j < n; j++)
					h = (h ^ p[j]) * 0x100000001b3ull;
				h = (h ^ 0xff) * 0x100000001b3ull;
			}
		sqlite3_finalize(st);
	}
	return h;
}

static int64_t last_of(sqlite3 *db)
{
	sqlite3_stmt *st;
	int64_t v = 0;
	if (sqlite3_prepare_v2(db, "select last from meta", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static int check(const char *path, const char *acks, const char *mode, long window_ms,
		 uint64_t cut_ns)
{
	sqlite3 *db, *mem;
	sqlite3_stmt *st;
	char ic[256] = "?";

	if (sqlite3_open(path, &db) != SQLITE_OK) {
		printf("FAIL open: %s\n", sqlite3_errmsg(db));
		return 1;
	}
	if (sqlite3_prepare_v2(db, "pragma integrity_check", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		snprintf(ic, sizeof ic, "%s", (const char *)sqlite3_column_text(st, 0));
	else
		snprintf(ic, sizeof ic, "error: %s", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	if (strcmp(ic, "ok") != 0) {
		printf("FAIL integrity_check: %s\n", ic);
		return 1;
	}
	int64_t last = last_of(db);
	uint64_t got = digest(db);
	sqlite3_close(db);

	/* what was acknowledged, and when; transactions given up are absent */
	FILE *f = fopen(acks, "r");
	int64_t acked = 0, required = 0, i, maybe[4];
	int nmaybe = 0;
	static unsigned char applied[1 << 16];
	uint64_t t;
	uint64_t slack = (uint64_t)window_ms * 1000000ull + 250000000ull;
	char line[128];
	memset(applied, 0, sizeof applied);
	while (f && fgets(line, sizeof line, f)) {
		if (sscanf(line, "maybe %" SCNd64, &i) == 1 && i > 0 && i < (1 << 16)) {
			if (nmaybe == 4) {
				printf("FAIL judge: more than 4 commits of unknown outcome\n");
				return 1;
			}
			maybe[nmaybe++] = i;
			continue;
		}
		if (sscanf(line, "%" SCNd64 " %" SCNu64, &i, &t) != 2 || i <= 0 || i >= (1 << 16))
			continue;
		acked = i;
		applied[i] = 1;
		if (strcmp(mode, "normal") != 0 || (cut_ns > slack && t <= cut_ns - slack))
			required = i;
	}
	if (f)
		fclose(f);
	/* a power cut: the transaction in flight may have committed */
	if (strcmp(mode, "fault") != 0 && acked + 1 < (1 << 16) && nmaybe < 4)
		maybe[nmaybe++] = acked + 1;
	if (last < required || (strcmp(mode, "fault") != 0 && last > acked + 1)) {
		printf("FAIL state after txn %" PRId64 "; acknowledged %" PRId64 ", required %" PRId64
		       "\n", last, acked, required);
		return 1;
	}
	/* The same transactions replayed in memory by plain SQLite: those
	 * acknowledged up to the state's, with or without each of unknown
	 * outcome. */
	int match = 0;
	for (int set = 0; set < 1 << nmaybe && !match; set++) {
		if (sqlite3_open(":memory:", &mem) != SQLITE_OK)
			return 1;
		for (int k = 1; k <= last && k < (1 << 16); k++) {
			int in = applied[k] || k == last;
			for (int m = 0; m < nmaybe; m++)
				in |= maybe[m] == k && (set >> m & 1);
			if (in && (exec(mem, "begin") || txn_body(mem, k) || exec(mem, "commit")))
				return 1;
		}
		match = digest(mem) == got;
		sqlite3_close(mem);
	}
	if (!match) {
		printf("FAIL contents differ from the state after txn %" PRId64 "\n", last);
		return 1;
	}
	printf("ok after txn %" PRId64 " (acknowledged %" PRId64 ", required %" PRId64 ")\n", last,
	       acked, required);
	return 0;
}

/* digest: "last digest" of what SQLite (with or without ALEX) reads. */
static int digest_cmd(const char *path)
{
	sqlite3 *db;
	sqlite3_stmt *st;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		printf("error open: %s\n", sqlite3_errmsg(db));
		return 0;
	}
	int rc = sqlite3_prepare_v2(db, "pragma integrity_check", -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		printf("error %s\n", sqlite3_errmsg(db));
		sqlite3_finalize(st);
		sqlite3_close(db);
		return 0;
	}
	const char *ic = (const char *)sqlite3_column_text(st, 0);
	if (strcmp(ic, "ok") != 0) {
		printf("corrupt %s\n", ic);
		sqlite3_finalize(st);
		sqlite3_close(db);
		return 0;
	}
	sqlite3_finalize(st);
	printf("%" PRId64 " %016" PRIx64 "\n", last_of(db), digest(db));
	sqlite3_close(db);
	return 0;
}

/* ---- several processes: each a stream of transactions that commute ---- */

/* Stream s, transaction i: a row (s, i) with a blob of its own, and
 * streams.last = i for s -- whatever order the processes commit in, the
 * state is named by each stream's last. */
static int mtxn(sqlite3 *db, int s, int i)
{
	char sql[256];
	int rc = put_blob(db, (int64_t)s * 1000000 + i, s, 100 + (size_t)(mix((uint64_t)i) % 3000),
			  (uint64_t)s * 7919 + (uint64_t)i);
	if (rc == SQLITE_OK) {
		snprintf(sql, sizeof sql, "update streams set last = %d where s = %d", i, s);
		rc = exec(db, sql);
	}
	return rc;
}

static int mrun(const char *path, int s, int ntxn)
{
	sqlite3 *db;
	if (sqlite3_open(path, &db) != SQLITE_OK)
		return 2;
	sqlite3_busy_timeout(db, 20000);
	if (journal_mode(db))
		return 3;
	exec(db, "create table if not exists t(id integer primary key, k integer, v text, b blob);"
		 "create table if not exists streams(s integer primary key, last integer)");
	char sql[128];
	snprintf(sql, sizeof sql, "insert or ignore into streams values(%d, 0)", s);
	if (exec(db, sql))
		return 3;
	for (int i = 1; i <= ntxn; i++) {
		int rc;
		/* a busy COMMIT is retried, as a careful program does */
		while ((rc = exec(db, "begin immediate")) == SQLITE_BUSY)
			usleep(1000);
		if (rc || mtxn(db, s, i))
			return 3;
		while ((rc = exec(db, "commit")) == SQLITE_BUSY)
			usleep(1000);
		if (rc)
			return 3;
		trace_ack(s, i);
		if (wal_checkpoint(db, i) && sqlite3_errcode(db) != SQLITE_BUSY)
			return 3;
	}
	sqlite3_close(db);
	return 0;
}

/*
 * ACKS: "stream txn t_ns" lines (cutfs).  Each stream's rows must be exactly
 * 1..last with last == streams.last, no older than its acknowledged
 * transactions (FULL), at most one newer, each blob as written.
 */
static int mcheck(const char *path, const char *acks, int nstreams, const char *mode)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int acked[64] = { 0 };

	FILE *f = fopen(acks, "r");
	int s, i;
	uint64_t t;
	while (f && fscanf(f, "%d %d %" SCNu64, &s, &i, &t) == 3)
		if (s >= 0 && s < 64 && i > acked[s])
			acked[s] = i;
	if (f)
		fclose(f);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		printf("FAIL open: %s\n", sqlite3_errmsg(db));
		return 1;
	}
	if (sqlite3_prepare_v2(db, "pragma integrity_check", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW || strcmp((const char *)sqlite3_column_text(st, 0), "ok")) {
		printf("FAIL integrity_check: %s\n", sqlite3_errmsg(db));
		return 1;
	}
	sqlite3_finalize(st);
	for (s = 0; s < nstreams; s++) {
		char sql[256];
		int64_t last = 0, n = 0, lo = 0, hi = 0;
		snprintf(sql, sizeof sql, "select (select last from streams where s = %d), count(*), "
			 "min(id), max(id) from t where k = %d", s, s);
		if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
		    sqlite3_step(st) == SQLITE_ROW) {
			last = sqlite3_column_int64(st, 0);
			n = sqlite3_column_int64(st, 1);
			lo = sqlite3_column_int64(st, 2);
			hi = sqlite3_column_int64(st, 3);
		}
		sqlite3_finalize(st);
		int64_t base = (int64_t)s * 1000000;
		if (n != last || (n && (lo != base + 1 || hi != base + last))) {
			printf("FAIL stream %d: last %" PRId64 ", %" PRId64 " rows %" PRId64 "..%" PRId64 "\n",
			       s, last, n, lo - base, hi - base);
			return 1;
		}
		if ((strcmp(mode, "normal") != 0 && last < acked[s]) || last > acked[s] + 1) {
			printf("FAIL stream %d: state after txn %" PRId64 ", acknowledged %d\n", s, last,
			       acked[s]);
			return 1;
		}
	}
	sqlite3_close(db);
	printf("ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	if ((argc == 6 || argc == 7) && strcmp(argv[1], "run") == 0)
		return run(argv[2], argv[3], argc == 7 ? atoi(argv[6]) : 1, atoi(argv[4]),
			   atol(argv[5]));
	if (argc == 5 && strcmp(argv[1], "faultrun") == 0)
		return faultrun(argv[2], argv[3], atoi(argv[4]));
	if (argc == 7 && strcmp(argv[1], "check") == 0)
		return check(argv[2], argv[3], argv[4], atol(argv[5]), strtoull(argv[6], NULL, 10));
	if (argc == 3 && strcmp(argv[1], "digest") == 0)
		return digest_cmd(argv[2]);
	if (argc == 5 && strcmp(argv[1], "mrun") == 0)
		return mrun(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (argc == 6 && strcmp(argv[1], "mcheck") == 0)
		return mcheck(argv[2], argv[3], atoi(argv[4]), argv[5]);
	fprintf(stderr, "usage: powercut run DB ACKS NTXN PACE_US [FIRST]\n"
			"       powercut faultrun DB ACKS NTXN\n"
			"       powercut check DB ACKS full|normal|fault WINDOW_MS CUT_NS\n"
			"       powercut digest DB\n"
			"       powercut mrun DB STREAM NTXN\n"
			"       powercut mcheck DB ACKS NSTREAMS full|normal\n");
	return 2;
}
