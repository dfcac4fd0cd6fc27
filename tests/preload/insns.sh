#!/bin/bash
# insns.sh BUILD - user-space instructions per transaction (tools/insns,
# callgrind: exact counts, not timings) under ceilings that keep what was
# won: ALEX normal's autocommit INSERT within 2.72x plain DELETE +
# synchronous=OFF (2.54x at the thirty-seventh session, 2.63x at ffc1d1e,
# 2.71x at 31abe9b; issue 13 asks for 1.3x), WAL mode under
# ALEX within 5 % of plain WAL mode (2-3 %; the issue's 3 % is too close
# for a ceiling), a point SELECT within 1.79x
# plain DELETE mode's (1.67x) and 1.92x with no log (1.79x).  Ceilings
# about 7 % above today's, so that a CPU without AVX2 (the delta's
# word-at-a-time compare, ~1 000 more per page) or another memcpy passes;
# a regression of that size fails.
set -u
B=${1:?usage: insns.sh BUILD}
here=$(cd "$(dirname "$0")" && pwd)
skip() { [ -n "${CHECK_SKIP_FILE:-}" ] && echo "$*" >"$CHECK_SKIP_FILE"; exit 77; }
command -v valgrind >/dev/null || { echo "insns: skipped: valgrind not found"; skip "valgrind not found"; }
out=$(INSNS_N=500 sh "$here/../../tools/insns" "$B") || { echo "FAIL tools/insns"; exit 1; }
echo "$out"
get() { echo "$out" | awk -v k="$1" 'index($0, k) == 1 { print $NF; exit }'; }
pass=0 fail=0
# ratio A B LIMIT (hundredths): A * 100 <= B * LIMIT
under() {
	local what=$1 a b
	a=$(get "$2") b=$(get "$3")
	if [ -n "$a" ] && [ -n "$b" ] && [ "$b" -gt 0 ] && [ $((a * 100)) -le $((b * $4)) ]; then
		pass=$((pass + 1))
		printf 'insns: %s: %d.%02dx (ceiling %d.%02dx)\n' "$what" $((a / b)) $((a * 100 / b % 100)) \
			$(($4 / 100)) $(($4 % 100))
	else
		fail=$((fail + 1))
		printf 'FAIL %s: %s against %s, ceiling %d.%02dx\n' "$what" "$a" "$b" $(($4 / 100)) $(($4 % 100))
	fi
}
under "INSERT, ALEX normal / plain DELETE + OFF" "INSERT ALEX normal" "INSERT plain DELETE + synchronous=OFF" 272
under "INSERT, WAL + NORMAL under ALEX / plain" "INSERT WAL + NORMAL under ALEX" "INSERT plain WAL + NORMAL" 105
under "SELECT, ALEX normal / plain DELETE" "SELECT ALEX normal " "SELECT plain DELETE" 179
under "SELECT, ALEX no log / plain DELETE" "SELECT ALEX normal, no log" "SELECT plain DELETE" 192
echo "insns: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
