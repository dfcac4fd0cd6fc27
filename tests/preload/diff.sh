#!/bin/bash
# diff.sh BUILD - differential tests: every SQL script in tests/preload/sql
# through four real SQLite clients (the sqlite3 shell, Python's sqlite3, a C
# program on libsqlite3.so, the same program on libsqlite3.a), once without
# ALEX and once under it with the log left un-checkpointed.  The .dump must
# be identical read through ALEX (pages from the log), and again read by plain
# SQLite after `alex checkpoint`; integrity_check must be ok; and plain
# SQLite must refuse the database while its log holds pages.
# With ALEX_KEY_FILE set (make check runs it so, through with_key.sh) every
# database is encrypted: plain SQLite must refuse it always, the file must
# not start with SQLite's magic, and the reads after `alex checkpoint` go
# through ALEX with the key.
set -u
B=$(cd "${1:?usage: diff.sh BUILD}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
lib=${ALEX_PRELOAD:-$B/libalex.so} # ALEX_PRELOAD: e.g. libasan.so before it
tmp=$(mktemp -d /tmp/alex-diff.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
key=${ALEX_KEY_FILE:-}
after() { # db sql: a reader of the checkpointed file
	if [ -n "$key" ]; then LD_PRELOAD=$lib sqlite3 "$@"; else sqlite3 "$@"; fi
}

run_client() { # client db script
	case $1 in
	shell) sqlite3 -bail "$2" <"$3" >/dev/null ;;
	python) python3 "$here/sqlrun.py" "$2" "$3" ;;
	c-dynamic) "$B/tests/sqlrun-dyn" "$2" "$3" ;;
	c-static) "$B/tests/sqlrun-static" "$2" "$3" ;;
	esac
}

check() { # name script client
	local name=$1 script=$2 client=$3 a=$tmp/$1/plain b=$tmp/$1/alex why=
	mkdir -p "$a" "$b"
	(cd "$a" && run_client "$client" test.db "$script") 2>"$tmp/$name.err" || why="client failed without ALEX"
	[ -z "$why" ] && { (cd "$b" && ALEX_CHECKPOINT_ON_CLOSE=0 LD_PRELOAD=$lib \
		run_client "$client" test.db "$script") 2>>"$tmp/$name.err" || why="client failed under ALEX"; }
	for db in test.db $( [ -z "$why" ] && cd "$a" && ls *.db | grep -v '^test.db$'); do
		[ -n "$why" ] && break
		local want via plain
		want=$(cd "$a" && sqlite3 "$db" .dump)
		via=$(cd "$b" && ALEX_CHECKPOINT_ON_CLOSE=0 LD_PRELOAD=$lib sqlite3 "$db" .dump) || why="$db: dump under ALEX failed"
		[ -z "$why" ] && [ "$want" != "$via" ] && why="$db: dump through the log differs"
		if [ -z "$why" ] && [ -n "$key" ]; then
			head -c 15 "$b/$db" | cmp -s - <(printf "SQLite format 3") && why="$db: stored in clear with a key"
			(cd "$b" && sqlite3 "$db" "select count(*) from sqlite_master" >/dev/null 2>&1) &&
				why="$db: plain SQLite read an encrypted database"
		elif [ -z "$why" ] && [ -s "$b/$db-alex" ] && (cd "$b" && "$B/alex" stat "$db" | grep -q ' [1-9][0-9]* commits'); then
			(cd "$b" && sqlite3 "$db" "select count(*) from sqlite_master" >/dev/null 2>&1) &&
				why="$db: plain SQLite read a database whose log holds pages"
		fi
		[ -z "$why" ] && { (cd "$b" && "$B/alex" checkpoint "$db") 2>>"$tmp/$name.err" || why="$db: alex checkpoint failed"; }
		plain=$(cd "$b" && after "$db" .dump 2>&1)
		[ -z "$why" ] && [ "$want" != "$plain" ] && why="$db: dump after alex checkpoint differs"
		[ -z "$why" ] && [ "$(cd "$b" && after "$db" 'pragma integrity_check')" != ok ] && why="$db: integrity_check"
	done
	if [ -z "$why" ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL $name: $why"
		sed 's/^/    /' "$tmp/$name.err" | head -5
	fi
	rm -rf "${tmp:?}/$name"
}

for script in "$here"/sql/*.sql; do
	s=$(basename "$script" .sql)
	for client in shell python c-dynamic c-static; do
		check "$s-$client" "$script" "$client"
	done
done
echo "differential: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
