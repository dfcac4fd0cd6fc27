/*
 * attach.c - transactions across attached databases, and their judge
 * (tests/preload/multidb.sh, crashtest.sh's "attach" phase).  Linked to
 * libsqlite3; runs with or without libalex.so.
 *
 *   attach run DIR NDB NTXN       DIR/db.db with DIR/db2.db ... attached;
 *                                 transaction i writes every database, in
 *                                 rollback mode (the super-journal); after
 *                                 each COMMIT returns, "0 i t_ns" goes to
 *                                 DIR/acks (and to ALEX_TEST_RECORD's trace)
 *   attach check DIR NDB ACKS MODE
 *                                 every database opened on its own: intact,
 *                                 the same last transaction in each (all or
 *                                 none), rows exactly those of 1..last; in
 *                                 FULL no acknowledged one missing
 *
 * ATTACH_SYNC=LEVEL[,LEVEL...] sets synchronous for each database in
 * turn (the last one for the rest), FULL by default.  (With OFF a database
 * takes no part in the super-journal: SQLite does not make it atomic.)
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

#define MAXDB 8

static void db_path(char *out, size_t cap, const char *dir, int k)
{
	if (k == 0)
		snprintf(out, cap, "%s/db.db", dir);
	else
		snprintf(out, cap, "%s/db%d.db", dir, k + 1);
}

/* Row i of database k: its length and bytes are pure functions of (i, k);
 * every 5th is a few pages long (overflow chains, spills). */
static size_t row_len(int i, int k)
{
	uint64_t r = mix((uint64_t)i * 31 + (uint64_t)k);
	return i % 5 == 0 ? 6000 + r % 9000 : 50 + r % 900;
}

static void row_bytes(uint8_t *b, size_t n, int i, int k)
{
	for (size_t j = 0; j < n; j++)
		b[j] = (uint8_t)(mix((uint64_t)i * 1000003u + (uint64_t)k * 7 + j / 8) >> (8 * (j % 8)));
}

/* Transaction i: row i in every database, every 7th also deletes an older
 * row of each, and last = i everywhere. */
static int txn(sqlite3 *db, int ndb, int i)
{
	char sql[256], schema[16];
	int rc = exec(db, "begin");

	for (int k = 0; k < ndb && rc == SQLITE_OK; k++) {
		snprintf(schema, sizeof schema, k ? "d%d" : "main", k + 1);
		if (i == 1) {
			snprintf(sql, sizeof sql, "create table %s.t(id integer primary key, b blob);"
				 "create table %s.meta(last integer); insert into %s.meta values(0)",
				 schema, schema, schema);
			if ((rc = exec(db, sql)))
				break;
		}
		size_t n = row_len(i, k);
		uint8_t *b = malloc(n);
		sqlite3_stmt *st;
		row_bytes(b, n, i, k);
		snprintf(sql, sizeof sql, "insert into %s.t values(?, ?)", schema);
		rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
		if (rc == SQLITE_OK) {
			sqlite3_bind_int(st, 1, i);
			sqlite3_bind_blob(st, 2, b, (int)n, SQLITE_TRANSIENT);
			rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
			sqlite3_finalize(st);
		}
		free(b);
		if (rc == SQLITE_OK && i % 7 == 0) {
			snprintf(sql, sizeof sql, "delete from %s.t where id = %d", schema, i / 2);
			rc = exec(db, sql);
		}
		if (rc == SQLITE_OK) {
			snprintf(sql, sizeof sql, "update %s.meta set last = %d", schema, i);
			rc = exec(db, sql);
		}
	}
	return rc ? rc : exec(db, "commit");
}

static int run(const char *dir, int ndb, int ntxn)
{
	char path[4096], sql[4200];
	sqlite3 *db;
	const char *sync = getenv("ATTACH_SYNC");

	snprintf(path, sizeof path, "%s/acks", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	db_path(path, sizeof path, dir, 0);
	if (fd < 0 || sqlite3_open(path, &db) != SQLITE_OK)
		return 2;
	for (int k = 1; k < ndb; k++) {
		db_path(path, sizeof path, dir, k);
		snprintf(sql, sizeof sql, "attach '%s' as d%d", path, k + 1);
		if (exec(db, sql))
			return 2;
	}
	/* ATTACH_SYNC: one level per database, the last one for the rest */
	char levels[256] = "full", *lv = levels, *next;
	if (sync && *sync)
		snprintf(levels, sizeof levels, "%s", sync);
	for (int k = 0; k < ndb; k++, lv = next ? next + 1 : lv) {
		next = strchr(lv, ',');
		int len = next ? (int)(next - lv) : (int)strlen(lv);
		if (k)
			snprintf(sql, sizeof sql, "pragma d%d.synchronous=%.*s", k + 1, len, lv);
		else
			snprintf(sql, sizeof sql, "pragma main.synchronous=%.*s", len, lv);
		if (exec(db, sql))
			return 2;
	}
	for (int i = 1; i <= ntxn; i++) {
		if (txn(db, ndb, i))
			return 3;
		trace_ack(0, i);
		char line[64];
		int n = snprintf(line, sizeof line, "0 %d %" PRIu64 "\n", i, now_ns());
		if (write(fd, line, (size_t)n) != n)
			return 4;
	}
	sqlite3_close(db);
	return 0;
}

/* Transaction d (d % 7 == 0) deleted row d / 2: is row j gone after last? */
static int deleted(int j, int last)
{
	for (int d = 2 * j; d <= 2 * j + 1; d++)
		if (d % 7 == 0 && d <= last)
			return 1;
	return 0;
}

/* The first row after j that transactions 1..last leave (last + 1: none). */
static int next_row(int j, int last)
{
	do
		j++;
	while (j <= last && deleted(j, last));
	return j;
}

/* Database k on its own: "last" after the integrity check and the rows. */
static int check_one(const char *dir, int k, int *last)
{
	char path[4096];
	sqlite3 *db;
	sqlite3_stmt *st;
	int rc = 1;

	db_path(path, sizeof path, dir, k);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		printf("FAIL %s: open: %s\n", path, sqlite3_errmsg(db));
		sqlite3_close(db);
		return 1;
	}
	int r = sqlite3_prepare_v2(db, "pragma integrity_check", -1, &st, NULL);
	if (r == SQLITE_OK)
		r = sqlite3_step(st);
	if (r != SQLITE_ROW || strcmp((const char *)sqlite3_column_text(st, 0), "ok") != 0) {
		printf("FAIL %s: integrity_check: %s\n", path,
		       r == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : sqlite3_errmsg(db));
		goto out;
	}
	sqlite3_finalize(st);
	st = NULL;
	*last = 0;
	/* no table yet: the first transaction did not happen */
	if (sqlite3_prepare_v2(db, "select last from meta", -1, &st, NULL) != SQLITE_OK) {
		rc = 0;
		goto out;
	}
	if (sqlite3_step(st) == SQLITE_ROW)
		*last = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (sqlite3_prepare_v2(db, "select id, b from t order by id", -1, &st, NULL) != SQLITE_OK)
		goto out;
	int want = next_row(0, *last);
	for (;;) {
		if (sqlite3_step(st) != SQLITE_ROW) {
			if (want <= *last) {
				printf("FAIL %s: rows end before %d (last %d)\n", path, want, *last);
				goto out;
			}
			break;
		}
		int id = sqlite3_column_int(st, 0);
		size_t n = (size_t)sqlite3_column_bytes(st, 1);
		uint8_t *b = malloc(row_len(id, k) + 1);
		row_bytes(b, row_len(id, k), id, k);
		int same = id == want && n == row_len(id, k) &&
			   memcmp(sqlite3_column_blob(st, 1), b, n) == 0;
		free(b);
		if (!same) {
			printf("FAIL %s: row %d (expected %d, last %d)\n", path, id, want, *last);
			goto out;
		}
		want = next_row(want, *last);
	}
	rc = 0;
out:
	sqlite3_finalize(st);
	sqlite3_close(db);
	return rc;
}

static int check(const char *dir, int ndb, const char *acks, const char *mode)
{
	int acked = 0, s, i, last[MAXDB];
	uint64_t t;
	FILE *f = fopen(acks, "r");

	while (f && fscanf(f, "%d %d %" SCNu64, &s, &i, &t) == 3)
		if (i > acked)
			acked = i;
	if (f)
		fclose(f);
	for (int k = 0; k < ndb; k++)
		if (check_one(dir, k, &last[k]))
			return 1;
	for (int k = 1; k < ndb; k++)
		if (last[k] != last[0]) {
			printf("FAIL not atomic: db.db after txn %d, database %d after txn %d\n",
			       last[0], k + 1, last[k]);
			return 1;
		}
	if ((strcmp(mode, "full") == 0 && last[0] < acked) || last[0] > acked + 1) {
		printf("FAIL state after txn %d, acknowledged %d\n", last[0], acked);
		return 1;
	}
	printf("ok after txn %d (acknowledged %d)\n", last[0], acked);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "run") == 0 && atoi(argv[3]) > 0 && atoi(argv[3]) <= MAXDB)
		return run(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (argc == 6 && strcmp(argv[1], "check") == 0 && atoi(argv[3]) > 0 &&
	    atoi(argv[3]) <= MAXDB)
		return check(argv[2], atoi(argv[3]), argv[4], argv[5]);
	fprintf(stderr, "usage: attach run DIR NDB NTXN\n"
			"       attach check DIR NDB ACKS full|normal\n");
	return 2;
}
