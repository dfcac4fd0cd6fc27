#!/bin/bash
# summary.sh begin|end RESULTS - the totals of `make check` (and of
# `make check-preload` run on its own).
#   begin  starts a run: RESULTS emptied (tests/run-test appends a line per
#          test: "pass NAME", "fail NAME exit N", "skip NAME REASON")
#   end    prints, last,
#            check: N passed, M failed, K skipped
#          and the names of the failed and the skipped tests (with why);
#          exits 1 if a test failed or none ran, else 0
set -u
[ $# -eq 2 ] || { echo "usage: summary.sh begin|end RESULTS" >&2; exit 2; }
results=$2
case $1 in
begin)
	: >"$results" ;;
end)
	[ -f "$results" ] || : >"$results"
	pass=$(grep -c '^pass ' "$results")
	fail=$(grep -c '^fail ' "$results")
	skip=$(grep -c '^skip ' "$results")
	echo
	if [ "$fail" -gt 0 ]; then
		echo "check: failed:"
		awk '$1 == "fail" { n = $2; $1 = $2 = ""; sub(/^ +/, ""); print "    " n ": " $0 }' "$results"
	fi
	if [ "$skip" -gt 0 ]; then
		echo "check: skipped (not run, not counted as passed):"
		awk '$1 == "skip" { n = $2; $1 = $2 = ""; sub(/^ +/, ""); print "    " n ": " $0 }' "$results"
	fi
	[ $((pass + fail + skip)) -gt 0 ] || echo "check: no test ran ($results is empty)"
	echo "check: $pass passed, $fail failed, $skip skipped"
	[ "$fail" -eq 0 ] && [ $((pass + skip)) -gt 0 ] ;;
*)
	echo "usage: summary.sh begin|end RESULTS" >&2
	exit 2 ;;
esac
