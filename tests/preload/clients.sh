#!/bin/bash
# clients.sh BUILD - the same statements through more SQLite clients than
# diff.sh's: Perl DBD::SQLite (which embeds its own SQLite, 3.39 on Debian
# 12, beside the system's 3.40), Tcl's sqlite3 package and Go's
# mattn/go-sqlite3 (cgo).  Each runs them one by one (autocommit
# statements, explicit transactions, a ROLLBACK, savepoints, an index, a
# VACUUM) plainly, under ALEX in full mode, in normal mode and in normal
# mode with its commits staged (ALEX_STAGE=1); the database's .dump must be
# plain SQLite's,
# integrity ok, and nothing may be left beside it.  A client that is not
# installed is skipped and said (exit 77 when none ran).
set -u
skip() { [ -n "${CHECK_SKIP_FILE:-}" ] && echo "$*" >"$CHECK_SKIP_FILE"; exit 77; }
B=$(cd "${1:?usage: clients.sh BUILD}" && pwd)
lib=$B/libalex.so
tmp=$(mktemp -d /tmp/alex-clients.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0 ran=0 skipped=""

# the statements, one per line, values spelled out (no randomness)
python3 - >"$tmp/ops.sql" <<'PY'
print("create table t(id integer primary key, k text unique, v blob, n real)")
for i in range(1, 301):
    print(f"insert into t(k, v, n) values('k{i}', x'{(i * 2654435761 % 2**32):08x}{'ab' * (i % 97)}', {i / 7:.6f})")
print("update t set v = x'00ff', n = n * 2 where id % 3 = 0")
print("begin")
print("delete from t where id % 5 = 0")
print("rollback")
print("begin immediate")
for i in range(301, 351):
    print(f"insert into t(k, v, n) values('k{i}', zeroblob({i % 300}), {i})")
print("commit")
print("savepoint a")
print("update t set k = k || '-x' where id < 40")
print("savepoint b")
print("delete from t where id > 200")
print("rollback to b")
print("release a")
print("create index t_n on t(n)")
print("delete from t where id % 11 = 0")
print("vacuum")
for i in range(351, 401):
    print(f"insert or replace into t(id, k, v, n) values({i % 60 + 1}, 'r{i}', x'{i:04x}', {i})")
PY

cat >"$tmp/run.pl" <<'PL'
use strict; use warnings; use DBI;
my ($db, $ops) = @ARGV;
my $h = DBI->connect("dbi:SQLite:dbname=$db", "", "", { RaiseError => 1, AutoCommit => 1, PrintError => 0 });
open(my $f, '<', $ops) or die "$ops: $!";
while (my $s = <$f>) { chomp $s; $h->do($s); }
$h->disconnect;
PL
cat >"$tmp/run.tcl" <<'TCL'
package require sqlite3
sqlite3 db [lindex $argv 0]
set f [open [lindex $argv 1]]
while {[gets $f s] >= 0} { db eval $s }
close $f
db close
TCL
mkdir -p "$tmp/gorun"
cat >"$tmp/gorun/main.go" <<'GO'
package main

// #include <stdlib.h>
import "C"

import (
	"bufio"
	"database/sql"
	"fmt"
	"os"

	_ "github.com/mattn/go-sqlite3"
)

func main() {
	db, err := sql.Open("sqlite3", os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	db.SetMaxOpenConns(1) /* BEGIN and COMMIT on one connection */
	f, err := os.Open(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if _, err := db.Exec(sc.Text()); err != nil {
			fmt.Fprintln(os.Stderr, sc.Text(), err)
			os.Exit(1)
		}
	}
	db.Close()
	/* through libc's exit: Go's own ends the process without the
	 * destructors, and libalex.so writes ALEX_STATS in one */
	C.exit(0)
}
GO

declare -A runner
if perl -MDBD::SQLite -e 1 2>/dev/null; then
	runner[perl]="perl $tmp/run.pl"
else
	skipped+=" perl (libdbd-sqlite3-perl)"
fi
if echo 'package require sqlite3' | tclsh >/dev/null 2>&1; then
	runner[tcl]="tclsh $tmp/run.tcl"
else
	skipped+=" tcl (libsqlite3-tcl)"
fi
mattn=/usr/share/gocode/src/github.com/mattn/go-sqlite3
if command -v go >/dev/null && [ -f $mattn/go.mod ] &&
	printf 'module example.com/gorun\n\ngo 1.19\n\nrequire github.com/mattn/go-sqlite3 v1.14.16\n\nreplace github.com/mattn/go-sqlite3 => %s\n' $mattn >"$tmp/gorun/go.mod" &&
	(cd "$tmp/gorun" && GOFLAGS=-mod=mod GOCACHE=$tmp/gocache GOPROXY=off go build -o ../gorun-bin . ) >"$tmp/go.log" 2>&1; then
	runner[go]="$tmp/gorun-bin"
else
	skipped+=" go (golang-go, golang-github-mattn-go-sqlite3-dev: $(tail -1 "$tmp/go.log" 2>/dev/null))"
fi

t() { if eval "$2"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL clients $1 ($3)"; fi; }

for c in "${!runner[@]}"; do
	ran=$((ran + 1))
	d=$tmp/$c
	mkdir -p "$d/plain" "$d/full" "$d/normal" "$d/stage"
	${runner[$c]} "$d/plain/c.db" "$tmp/ops.sql" 2>"$d/plain.err"
	want=$(sqlite3 "$d/plain/c.db" .dump)
	t "$c: plain run" '[ -n "$want" ] && [ ! -s "$d/plain.err" ]' "$(head -2 "$d/plain.err")"
	for mode in full normal stage; do
		sync=$mode stage=0
		[ $mode = stage ] && sync=normal stage=1
		env LD_PRELOAD="$lib" ALEX_SYNC=$sync ALEX_STAGE=$stage ALEX_STATS="$d/$mode.json" ${runner[$c]} \
			"$d/$mode/c.db" "$tmp/ops.sql" 2>"$d/$mode.err"
		rc=$?
		# ALEX saw the client's writes: a commit per statement or so
		commits=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["engine"]["commits"])' \
			"$d/$mode.json" 2>/dev/null || echo 0)
		t "$c under ALEX $mode: its commits went through ALEX" '[ "$commits" -ge 300 ]' \
			"$commits commits"
		got=$(sqlite3 "$d/$mode/c.db" .dump 2>&1)
		ok=$(sqlite3 "$d/$mode/c.db" "pragma integrity_check" 2>&1)
		left=$(ls -A "$d/$mode" | tr '\n' ' ')
		t "$c under ALEX $mode: ran" '[ $rc -eq 0 ] && [ ! -s "$d/$mode.err" ]' \
			"exit $rc: $(head -2 "$d/$mode.err")"
		t "$c under ALEX $mode: .dump equals plain SQLite's" '[ "$got" = "$want" ]' \
			"$(diff <(echo "$want") <(echo "$got") | head -3)"
		t "$c under ALEX $mode: integrity ok, nothing beside the database" \
			'[ "$ok" = ok ] && [ "$left" = "c.db " ]' "$ok; $left"
	done
done
[ -n "$skipped" ] && echo "clients: not installed:$skipped"
echo "clients: $pass passed, $fail failed ($ran clients)"
if [ $ran -eq 0 ]; then
	skip "no client installed:$skipped"
fi
[ $fail -eq 0 ]
