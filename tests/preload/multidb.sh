#!/bin/bash
# multidb.sh BUILD - transactions across attached databases stay atomic.
#
# tests/attach runs 4 transactions, each writing every database of an
# ATTACH set in rollback mode (SQLite's super-journal), and is killed
# (SIGKILL, by strace) at its N-th fdatasync, then at its N-th fsync, then
# at its N-th unlink (the super-journal's removal is the commit point), for
# every N until a run finishes.  After each kill every database is opened on
# its own and judged (attach check): intact, all of them after the same
# transaction, none acknowledged missing; and no reference journal
# of ALEX's is left.
# Configurations:
#   2 databases, FULL and NORMAL; 3 databases, FULL; 3 with the second one
#   not ALEX's (ALEX_MATCH), a real journal beside two logs; 3 with the third
#   in synchronous=OFF (no sync shows where its part ends: it must be in its
#   log before the super-journal goes); and runs of
#   plain SQLite killed the same way, judged under ALEX (its super-journals
#   and hot journals meet libalex.so).
set -u
# skip REASON: this test cannot run here (exit 77: skipped, never passed;
# the reason goes where tests/run-test asks for it)
skip() { [ -n "${CHECK_SKIP_FILE:-}" ] && echo "$*" >"$CHECK_SKIP_FILE"; exit 77; }
B=$(cd "${1:?usage: multidb.sh BUILD}" && pwd)
# the kills come from strace's fault injection (strace 4.16 or later)
command -v strace >/dev/null || { echo "multidb: skipped: strace not found"; skip "strace not found"; }
strace -f -o /dev/null -e trace=fdatasync -e inject=fdatasync:signal=SIGKILL:when=1000 true 2>/dev/null ||
	{ echo "multidb: skipped: strace cannot inject faults here"; skip "strace cannot inject faults here"; }
LIB=$B/libalex.so
AT=$B/tests/attach
tmp=$(mktemp -d /tmp/alex-multidb.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
NTXN=${MULTIDB_NTXN:-4}
total=0 failed=0

# one CONFIG NDB MODE MATCH UNDER: kills at every sync; UNDER is "alex" or
# "plain" (the writer); the judge always runs under ALEX
one() {
	local name=$1 ndb=$2 mode=$3 match=$4 under=$5 call n runs=0 bad=0
	local wenv=(env ALEX_MATCH="$match" ATTACH_SYNC="$mode")
	[ "$under" = alex ] && wenv+=(LD_PRELOAD="$LIB")
	for call in fdatasync fsync unlink; do
		for n in $(seq 1 400); do
			local d=$tmp/$name-$call-$n
			mkdir -p "$d"
			# in a subshell of its own, which says nothing of the kill
			( strace -f -o /dev/null -e trace=$call -e inject=$call:signal=SIGKILL:when=$n \
				"${wenv[@]}" "$AT" run "$d" "$ndb" "$NTXN" >/dev/null 2>"$d/err"
			  echo $? >"$d/status" ) 2>/dev/null
			local st
			st=$(cat "$d/status")
			runs=$((runs + 1))
			local v
			# a kill loses nothing the kernel has: in every mode, no
			# acknowledged transaction may be missing
			v=$(env LD_PRELOAD="$LIB" ALEX_MATCH="$match" "$AT" check "$d" "$ndb" "$d/acks" \
				full 2>&1)
			# ALEX's reference journals go once the outcome is known
			# (SQLite's own may stay, zeroed, as without ALEX)
			local left
			left=$(cd "$d" && grep -l 'ALEX reference journal' -- *-journal 2>/dev/null |
				tr '\n' ' ')
			case $v in
			ok*) [ -z "$left" ] || v="FAIL left behind: $left" ;;
			esac
			case $v in
			ok*) ;;
			*) bad=$((bad + 1))
			   [ $bad -le 3 ] && echo "FAIL multidb $name: kill at $call #$n: $v" ;;
			esac
			rm -rf "$d"
			# a run that was not killed: no more syncs of this kind
			[ $st -eq 0 ] && break
		done
	done
	echo "multidb: $name: $runs kills, $bad failed"
	total=$((total + runs))
	failed=$((failed + bad))
}

one 2db-full 2 full "*.db" alex
one 2db-normal 2 normal "*.db" alex
one 3db-full 3 full "*.db" alex
one 3db-untracked 3 full "db.db,db3.db" alex
one 3db-one-off 3 full,full,off "*.db" alex
one plain-writer 2 full "*.db" plain
echo "multidb: $total kills, $failed failed"
[ "$failed" -eq 0 ] && [ "$total" -gt 0 ]
