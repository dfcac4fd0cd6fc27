#!/bin/bash
# stage_chaos.sh BUILD [SECONDS] - the kill harness of stage_chaos/ in make
# check: writers of mixed settings on one database, one SIGKILLed and
# restarted every 0.05-0.5 s; every acknowledged row must be there and the
# file whole.  Two runs: only a staged writer killed beside a FULL one
# (its restarts open, with no lock, over the FULL writer's merges: before
# the seventeenth session's fixes this lost thousands of acknowledged rows
# in one run of two); five writers of mixed settings, any one killed; and
# writers of big records and VACUUMs, one FULL, beside others (a restarted
# one's connect failed with "disk I/O error", 3 opens in 205: review).
# A client told "disk I/O error", "malformed" or "readonly" fails a run.
set -u
B=$(cd "${1:?usage: stage_chaos.sh BUILD [SECONDS]}" && pwd)
secs=${2:-30}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/alex-chaos.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
run() {
	local name=$1; shift
	if env ALEX_BUILD="$B" ALEX_STAGE=1 "$@" >"$tmp/$name.out" 2>&1; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL $name:"; grep -Ev '^ *$' "$tmp/$name.out" | head -12
	fi
	grep -E '^(kills|acked)' "$tmp/$name.out" | tr '\n' ' '; echo
}
run full-beside KILLSLOT=0 python3 "$here/stage_chaos/chaos.py" "$tmp/a" "$secs" \
	py: pl:ALEX_SYNC=full
run mixed python3 "$here/stage_chaos/chaos.py" "$tmp/b" "$secs" \
	py: py:ALEX_STAGE=0 pl:ALEX_SYNC=full tcl: pyslow:ALEX_SYNC_MS=20
run big-full python3 "$here/stage_chaos/chaos.py" "$tmp/c" "$secs" \
	pyvac: pyvac:ALEX_SYNC=full py: pl:ALEX_SYNC=full pyreopen:
echo "stage-chaos: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
