#!/bin/bash
# powercut.sh BUILD FULL_CUTS NORMAL_CUTS - power cuts under real SQLite.
#
# powercut.c runs 320 transactions under libalex-test.so (the test build) with ALEX_TEST_POWERCUT
# set (core/io_test.c): at the engine's Kth mutating I/O call the process
# puts back what the disk would hold after a power failure and dies.  Then
# the database is reopened under ALEX and judged: integrity_check ok; with
# ALEX_SYNC=full every acknowledged transaction is there; with normal the
# state is that after some transaction, none older than the sync window
# (+250 ms of scheduling slack) missing; and in both the contents equal the
# state plain SQLite reaches after that transaction.
#
# A count of "every" means every K of a counted run, the crash variant
# (lose, tear, keep) rotating; "every3" every K with all three variants;
# a number, that many K spread over the run, the variant rotating.
# POWERCUT_JOURNAL=MODE (powercut.c): the workload in that journal mode.
# POWERCUT_DISK_JOURNAL=1: an empty journal on disk before each run, as a
# program without ALEX leaves one in TRUNCATE or PERSIST mode.  ALEX
# removes it at SQLite's first write (alex_journal_cold) and keeps
# the journal in memory from then on; before the thirty-ninth session
# SQLite wrote that file, passed through, for the whole run.
# POWERCUT_DISK_JOURNAL=hot: a hot journal instead, left by plain SQLite
# killed in a transaction that spilled pages into the database after
# transaction 1; ALEX's SQLite rolls it back first, through the journal
# passed through, and its commit is synced at SQLite's sync of the
# database (serve.c: j_disk), before SQLite deletes the journal.  The run
# then begins at transaction 2.  POWERCUT_NTXN=N: N transactions, not 320.
# Prints "powercut: N cuts, M failed".
set -u
B=$(cd "${1:?usage: powercut.sh BUILD FULL_CUTS NORMAL_CUTS}" && pwd)
full_cuts=${2:-150} normal_cuts=${3:-60}
NTXN=${POWERCUT_NTXN:-320} first=1
[ "${POWERCUT_DISK_JOURNAL:-}" = hot ] && first=2
hot_py='
import os, sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("pragma cache_size=2")
c.execute("begin")
for i in range(300):
    c.execute("insert into t(k, v) values(?, ?)", (-1 - i, "hot" * 150))
with open(sys.argv[1] + "-journal", "rb") as j:
    assert j.read(1) != b"\0", "no hot journal"
os._exit(0)
'
tmp=$(mktemp -d /tmp/alex-powercut.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export LD_PRELOAD=$B/libalex-test.so ALEX_CHECKPOINT_MB=1 ALEX_SYNC_MS=50
cuts=0 fail=0 nocut=0

disk_journal() {
	case ${POWERCUT_DISK_JOURNAL:-} in
	"") ;;
	hot) env -u LD_PRELOAD "$B/tests/powercut" run "$1/db.db" "$1/acks" 1 0 >/dev/null &&
		env -u LD_PRELOAD python3 -c "$hot_py" "$1/db.db" ;;
	*) : >"$1/db.db-journal" ;;
	esac
}

# mode -> the number of mutating calls of an uncut run
count_ops() {
	local d=$tmp/count-$1
	mkdir -p "$d"
	disk_journal "$d"
	ALEX_SYNC=$1 ALEX_TEST_POWERCUT=0 ALEX_STATS=$d/stats.json \
		"$B/tests/powercut" run "$d/db.db" "$d/acks" $NTXN "$2" $first || return 1
	sed -n 's/.*"test_io": {"ops": \([0-9]*\).*/\1/p' "$d/stats.json"
}

# one cut: mode pace K how
one() {
	local mode=$1 pace=$2 k=$3 how=$4 d=$tmp/cut
	rm -rf "$d" && mkdir -p "$d"
	disk_journal "$d"
	ALEX_SYNC=$mode ALEX_TEST_POWERCUT=$k:$how:$k ALEX_TEST_REPORT=$d/report \
		"$B/tests/powercut" run "$d/db.db" "$d/acks" $NTXN "$pace" $first 2>"$d/err"
	local st=$?
	if [ $st -eq 0 ]; then # this run made fewer calls (normal mode's timing)
		nocut=$((nocut + 1))
		return
	fi
	cuts=$((cuts + 1))
	local cut_ns verdict
	cut_ns=$(awk '$1 == "cut" { print $4 }' "$d/report" 2>/dev/null)
	if [ $st -ne 86 ] || [ -z "$cut_ns" ]; then
		fail=$((fail + 1))
		echo "FAIL $mode K=$k $how: workload exited $st: $(head -c 300 "$d/err")"
		return
	fi
	if ! verdict=$(ALEX_SYNC=$mode "$B/tests/powercut" check "$d/db.db" "$d/acks" "$mode" \
		50 "$cut_ns" 2>&1); then
		fail=$((fail + 1))
		echo "FAIL $mode K=$k $how ($(cat "$d/report")): $verdict"
		cp -r "$d" "$tmp/../alex-powercut-fail-$mode-$k-$how" 2>/dev/null
	fi
}

campaign() {
	local mode=$1 pace=$2 want=$3 total k i how
	local hows=(lose tear keep)
	total=$(count_ops "$mode" "$pace") || { echo "FAIL $mode: uncut run failed"; fail=$((fail + 1)); return; }
	[ -n "$total" ] && [ "$total" -gt 0 ] || { echo "FAIL $mode: no I/O counted"; fail=$((fail + 1)); return; }
	echo "powercut: $mode: an uncut run makes $total mutating calls"
	if [ "$want" = every3 ]; then
		for k in $(seq 1 "$total"); do
			for how in lose tear keep; do one "$mode" "$pace" "$k" $how; done
		done
	elif [ "$want" = every ]; then
		for k in $(seq 1 "$total"); do one "$mode" "$pace" "$k" "${hows[$((k % 3))]}"; done
	else
		for i in $(seq 0 $((want - 1))); do
			k=$((1 + i * total / want))
			one "$mode" "$pace" "$k" "${hows[$((i % 3))]}"
		done
	fi
}

[ "$full_cuts" = skip ] || campaign full 0 "$full_cuts"
[ "$normal_cuts" = skip ] || campaign normal 2000 "$normal_cuts"
echo "powercut: $cuts cuts, $fail failed ($nocut runs ended before their K)"
[ "$fail" -eq 0 ] && [ "$cuts" -gt 0 ]
