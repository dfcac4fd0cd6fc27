#!/bin/sh
# run.sh BUILD - runs the examples under ALEX and checks their output.
set -e
B=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/alex-examples.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
pass=0 fail=0
check() { if [ "$1" = "$2" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $3: got '$1'"; fi; }
check "$("$B/alex-run" "$B/tests/notes" notes.db one two three)" "3 notes" "notes.c"
check "$(sqlite3 notes.db 'select group_concat(body) from notes')" "one,two,three" "notes.c, plain read after"
check "$("$B/alex-run" python3 "$here/sensors.py" readings.db)" "200 readings, average 22.97" "sensors.py"
out=$("$here/session.sh" "$B" 2>&1)
check "$(echo "$out" | tail -n 2 | tr '\n' ' ')" "115 115 " "session.sh"
echo "$out" | grep -q 'file is not a database' && pass=$((pass + 1)) ||
	{ fail=$((fail + 1)); echo "FAIL session.sh: plain SQLite was not refused"; }
out=$("$here/traced.sh" "$B" 2>&1)
check "$(echo "$out" | grep -c '^transactions: 52 (51 write, 1 read)$')" "2" "traced.sh: transactions found"
check "$(echo "$out" | grep -c 'reaching the kernel 1 / 1;')" "1" "traced.sh: one sync per commit under ALEX"
check "$(echo "$out" | grep -c '^  ALEX full:   about 51 syncs')" "1" "traced.sh: the estimate"
echo "examples: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
