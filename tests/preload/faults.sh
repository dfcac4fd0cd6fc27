#!/bin/bash
# faults.sh BUILD [every|SAMPLE] - EIO and ENOSPC under real SQLite.
#
# powercut.c's workload (160 transactions, blobs, a schema change, 1 MiB
# checkpoints) runs under libalex-test.so (the test build) with ALEX_TEST_FAULT=CLASS:N:ERR: the
# Nth log write, preallocation write ("grow", ALEX's fallocate), log
# fdatasync, checkpoint write or checkpoint sync fails once.  The program
# must see the error as SQLITE_IOERR or SQLITE_FULL (never a crash), roll
# back, retry and carry on; afterwards, with the fault gone, the database
# reopened under ALEX must pass integrity_check and hold exactly the
# acknowledged transactions (a COMMIT that itself failed may have landed or
# not), and so must plain SQLite after `alex checkpoint`.
#
# "every" injects at every N of every class, both errnos; a number picks
# that many N spread over each class.  Prints "faults: N injected, M failed".
set -u
B=$(cd "${1:?usage: faults.sh BUILD [every|SAMPLE]}" && pwd)
want=${2:-every}
NTXN=160
tmp=$(mktemp -d /tmp/alex-faults.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export ALEX_CHECKPOINT_MB=1 ALEX_SYNC=full
injected=0 fail=0 missed=0 reported=0

d=$tmp/count
mkdir -p "$d"
LD_PRELOAD=$B/libalex-test.so ALEX_TEST_POWERCUT=0 ALEX_STATS=$d/stats.json \
	"$B/tests/powercut" faultrun "$d/db.db" "$d/acks" $NTXN || { echo "FAIL: uncut run"; exit 1; }
counts=$(sed -n 's/.*"test_io": {\(.*\)}.*/\1/p' "$d/stats.json")
echo "faults: calls in a clean run: $counts"

one() { # class n errno
	local d=$tmp/f
	rm -rf "$d" && mkdir -p "$d"
	LD_PRELOAD=$B/libalex-test.so ALEX_TEST_FAULT=$1:$2:$3 ALEX_TEST_REPORT=$d/report \
		"$B/tests/powercut" faultrun "$d/db.db" "$d/acks" $NTXN 2>"$d/err"
	local st=$?
	if [ ! -s "$d/report" ]; then
		missed=$((missed + 1)) # this run made fewer calls of the class
		return
	fi
	injected=$((injected + 1))
	local why=""
	[ $st -eq 0 ] || why="program exited $st: $(head -c 300 "$d/err")"
	# The error must reach the program as IOERR (10) or FULL (13) -- or
	# READONLY (8) when it hit the log's creation inside open(), after
	# which SQLite's VFS retried the open read-only -- unless ALEX absorbed
	# it (a retried preallocation, a checkpoint that is retried later):
	# counted, not required.
	if grep -q '^errors ' "$d/acks"; then
		reported=$((reported + 1))
		grep '^errors ' "$d/acks" | grep -qv '^errors \(8\|10\|13\) ' && why="$why; unexpected codes: $(grep '^errors' "$d/acks" | tr '\n' ' ')"
	fi
	local v
	if [ -z "$why" ] && ! v=$(LD_PRELOAD=$B/libalex.so "$B/tests/powercut" check "$d/db.db" \
		"$d/acks" fault 0 0 2>&1); then
		why="under ALEX: $v"
	fi
	if [ -z "$why" ]; then
		"$B/alex" checkpoint "$d/db.db" >/dev/null 2>&1 || why="alex checkpoint failed"
		[ -z "$why" ] && ! v=$("$B/tests/powercut" check "$d/db.db" "$d/acks" fault 0 0 2>&1) &&
			why="plain SQLite after checkpoint: $v"
	fi
	if [ -n "$why" ]; then
		fail=$((fail + 1))
		echo "FAIL $1:$2:$3: $why"
	fi
}

for class in logwrite grow logsync ckptwrite ckptsync; do
	total=$(echo "$counts" | sed -n "s/.*\"$class\": \([0-9]*\).*/\1/p")
	[ -n "$total" ] && [ "$total" -gt 0 ] || { echo "FAIL: no $class calls counted"; fail=$((fail + 1)); continue; }
	if [ "$want" = every ] || [ "$total" -le "$want" ]; then
		ns=$(seq 1 "$total")
	else
		ns=$(for i in $(seq 0 $((want - 1))); do echo $((1 + i * total / want)); done)
	fi
	for n in $ns; do
		for e in eio enospc; do one $class "$n" $e; done
	done
done
echo "faults: $injected injected, $reported reported to SQLite, $fail failed ($missed runs made fewer calls)"
[ "$fail" -eq 0 ] && [ "$injected" -gt 0 ]
