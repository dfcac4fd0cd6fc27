#!/bin/sh
# traced.sh - what SQLite does to the disk, and what ALEX would do instead:
# the same 50 inserts traced as SQLite does them (journal_mode=DELETE,
# synchronous=FULL), then traced under ALEX.  examples/traced-report.txt
# is this script's output on the project's test machine.
# Run from anywhere: it works in a scratch directory.
set -e
bin=${1:-$(dirname "$0")/../build}
bin=$(cd "$bin" && pwd)
cd "$(mktemp -d)"
sql="create table notes(id integer primary key, body text);"
for i in $(seq 50); do sql="$sql insert into notes(body) values('note $i');"; done

echo "== SQLite alone, traced =="
"$bin/alex-run" --trace=sqlite.trace sqlite3 plain.db "$sql"
"$bin/alex" trace --transactions 1 sqlite.trace

echo
echo "== under ALEX, traced =="
"$bin/alex-run" --mode=alex --trace=alex.trace sqlite3 alex.db "$sql"
"$bin/alex" trace --transactions 1 alex.trace

echo
echo "== the same, as JSON: system calls that reached the kernel =="
"$bin/alex" trace --json sqlite.trace | python3 -c 'import json, sys; print("sqlite:", json.load(sys.stdin)["syscalls"])'
"$bin/alex" trace --json alex.trace | python3 -c 'import json, sys; print("alex:  ", json.load(sys.stdin)["syscalls"])'
