#!/bin/bash
# concurrency.sh BUILD - concurrency.py under ALEX in rollback and WAL mode,
# three times each; afterwards plain SQLite must read the same rows.
set -u
B=$(cd "${1:?usage: concurrency.sh BUILD}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/alex-conc.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
for mode in delete wal; do
	for i in 1 2 3; do
		db=$tmp/$mode$i.db
		if LD_PRELOAD=$B/libalex.so python3 "$here/concurrency.py" "$db" $mode >/dev/null &&
			[ "$(sqlite3 "$db" 'select count(*) from t; pragma integrity_check' | tr '\n' ' ')" = "1700 ok " ]; then
			pass=$((pass + 1))
		else
			fail=$((fail + 1)); echo "FAIL concurrency $mode run $i"
		fi
	done
done
echo "concurrency: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
