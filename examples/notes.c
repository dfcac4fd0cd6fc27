/*
 * notes.c - an ordinary SQLite program.  Nothing in it knows about ALEX:
 * run it as `alex-run ./notes notes.db "text"` (or with LD_PRELOAD) and its
 * commits become one log append and one fdatasync each.
 *
 * Build: cc notes.c -o notes -lsqlite3
 */
#include <sqlite3.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	sqlite3 *db;
	sqlite3_stmt *st;

	if (argc < 2) {
		fprintf(stderr, "usage: notes DB [TEXT...]\n");
		return 2;
	}
	if (sqlite3_open(argv[1], &db) != SQLITE_OK ||
	    sqlite3_exec(db, "CREATE TABLE IF NOT EXISTS notes(id INTEGER PRIMARY KEY, body TEXT)",
			 NULL, NULL, NULL) != SQLITE_OK) {
		fprintf(stderr, "notes: %s\n", sqlite3_errmsg(db));
		return 1;
	}
	/* each note is its own transaction: a durable commit apiece */
	sqlite3_prepare_v2(db, "INSERT INTO notes(body) VALUES(?)", -1, &st, NULL);
	for (int i = 2; i < argc; i++) {
		sqlite3_bind_text(st, 1, argv[i], -1, SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_DONE) {
			fprintf(stderr, "notes: %s\n", sqlite3_errmsg(db));
			return 1;
		}
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	sqlite3_prepare_v2(db, "SELECT count(*) FROM notes", -1, &st, NULL);
	if (sqlite3_step(st) == SQLITE_ROW)
		printf("%d notes\n", sqlite3_column_int(st, 0));
	sqlite3_finalize(st);
	return sqlite3_close(db) == SQLITE_OK ? 0 : 1;
}
