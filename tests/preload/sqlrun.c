/*
 * sqlrun - the C client of the differential tests: runs an SQL script
 * against a database with sqlite3_exec, statement by statement as the shell
 * would, and stops at the first error.  Built twice: against the system's
 * libsqlite3.so and statically against libsqlite3.a, so that ALEX is shown
 * to work under both kinds of SQLite.
 *
 * usage: sqlrun DB SCRIPT
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	sqlite3 *db;
	char *err = NULL;

	if (argc != 3) {
		fprintf(stderr, "usage: sqlrun DB SCRIPT\n");
		return 2;
	}
	FILE *f = fopen(argv[2], "r");
	if (!f) {
		perror(argv[2]);
		return 2;
	}
	static char sql[1 << 20];
	size_t n = fread(sql, 1, sizeof sql - 1, f);
	fclose(f);
	sql[n] = 0;
	if (sqlite3_open(argv[1], &db) != SQLITE_OK) {
		fprintf(stderr, "sqlrun: %s: %s\n", argv[1], sqlite3_errmsg(db));
		return 1;
	}
	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
		fprintf(stderr, "sqlrun: %s: %s\n", argv[2], err);
		sqlite3_free(err);
		sqlite3_close(db);
		return 1;
	}
	if (sqlite3_close(db) != SQLITE_OK) {
		fprintf(stderr, "sqlrun: close: %s\n", sqlite3_errmsg(db));
		return 1;
	}
	return 0;
}
