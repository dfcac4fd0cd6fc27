#!/bin/bash
# wal_openers.sh BUILD - programs without ALEX beside ALEX processes in WAL
# mode: they read exactly the committed contents and their writes are kept
# (wal_openers.py: the schema-change case, a killed ALEX writer, two ALEX
# writers beside a Litestream-like replicator without ALEX).
set -u
B=$(cd "${1:?usage: wal_openers.sh BUILD}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/alex-walopen.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
py=$(python3 -c 'import sys; print(sys.executable)')
pass=0 fail=0
for s in schema killed replicator; do
	mkdir -p "$tmp/$s"
	while read -r line; do
		case $line in
		ok*) pass=$((pass + 1)) ;;
		*) fail=$((fail + 1)); echo "$s: $line" ;;
		esac
	done < <(timeout 300 "$py" "$here/wal_openers.py" "$s" "$tmp/$s" "$B/libalex.so" 2>&1)
done
echo "wal_openers: $pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -ge 5 ]
