#!/bin/bash
# carry_writers.sh BUILD [SECONDS] - carry_writers.py under ALEX: a
# long-lived writer's carried checkpoints while short-lived writers come,
# update the same rows, checkpoint the old way, and go; FULL mode, and
# NORMAL mode, whose staging engine merges into a log that carries.  Every
# acknowledged update and counter step kept, carried epochs copied and let
# go (ALEX_STATS), and plain SQLite reads the same sums afterwards.  A
# python that hangs is stopped after ten minutes (and counts as failed).
set -u
B=$(cd "${1:?usage: carry_writers.sh BUILD [SECONDS]}" && pwd)
secs=${2:-10}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/alex-carry-writers.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
for sync in full normal; do
	d=$tmp/$sync && mkdir -p "$d"
	out=$(ALEX_SYNC=$sync ALEX_CHECKPOINT_MB=1 ALEX_STATS="$d/stats-%p.json" \
		LD_PRELOAD=$B/libalex.so timeout -k 10 600 python3 "$here/carry_writers.py" \
		"$d/b.db" "$secs" 2>&1)
	# carried and let go, not only begun
	carries=$(cat "$d"/stats-*.json | grep -o '"carry_applies": [0-9]*' |
		awk '{ s += $2 } END { print s + 0 }')
	plain=$(sqlite3 "$d/b.db" 'select sum(v) from t; select n from c; pragma integrity_check' \
		2>&1 | tr '\n' ' ')
	want=$(echo "$out" | awk '/^carry_writers: ok/ { print $11, $13, "ok" }' | tr -d ',')
	if [ -n "$want" ] && [ "$carries" -gt 0 ] && [ "$plain" = "$want " ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL carry_writers $sync: '$out', $carries carried epochs let go, plain SQLite '$plain' (want '$want')"
	fi
	echo "carry_writers: $sync: $out; $carries carried epochs copied and let go"
done
echo "carry_writers: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
