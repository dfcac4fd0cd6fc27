#!/bin/bash
# valgrind.sh BUILD - the differential tests of diff.sh under valgrind's
# memcheck.  Every SQL script in tests/preload/sql runs through the sqlite3
# shell and the C client on libsqlite3.so (optionally also the one on
# libsqlite3.a) with LD_PRELOAD=BUILD/libalex.so and the log left
# un-checkpointed, under valgrind; the database is then dumped through ALEX
# (pages read from the log) under valgrind, and `alex checkpoint` runs under
# valgrind.  A memcheck error (invalid read/write, uninitialised value in a
# branch or a syscall) or a definite leak in any of those processes fails the
# test, and so does any difference from the same script run without ALEX, as
# in diff.sh: the dump through the log, the dump by plain SQLite after the
# checkpoint, and integrity_check.  Leaks that are not definite do not count:
# the fd table is reachable at exit by design, and with ALEX_SYNC=normal the
# detached sync thread's TLS is "possibly lost".  Suppressions, for errors in
# other people's code, go in tests/valgrind.supp (none are needed today).
# About 2 minutes on an idle 2-CPU machine; a full report of each failure is
# kept in BUILD/valgrind-logs.
#
# VALGRIND_CLIENTS  the clients, of shell c-dynamic c-static (default: the
#                   first two; c-static adds a third to the time).  Python
#                   is left out: CPython reports errors of its own at exit.
# VALGRIND_DUMP     the client whose database is also dumped through ALEX
#                   under valgrind (default: the first; "all" for every one);
#                   for the others the dump runs natively, still compared
# VALGRIND_JOBS     tests run at once (default: the number of CPUs + 1)
# VALGRIND_OPTS     more valgrind options, read by valgrind itself (those
#                   given here win), e.g. --track-origins=yes to find where
#                   an uninitialised value came from
set -u
[ $# -eq 1 ] && [ -d "$1" ] || { echo "usage: valgrind.sh BUILD" >&2; exit 2; }
B=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
supp=$here/../valgrind.supp
lib=$B/libalex.so
clients=${VALGRIND_CLIENTS:-shell c-dynamic}
for c in $clients; do
	case $c in shell | c-dynamic | c-static) ;;
	*) echo "valgrind.sh: unknown client $c (shell, c-dynamic, c-static)" >&2; exit 2 ;;
	esac
done
jobs=${VALGRIND_JOBS:-$(( $(nproc 2>/dev/null || echo 2) + 1 ))}
dump_client=${VALGRIND_DUMP:-${clients%% *}}

if ! command -v valgrind >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ]; then
		echo "valgrind.sh: installing valgrind"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q valgrind >/dev/null || {
			apt-get update -q >/dev/null &&
				DEBIAN_FRONTEND=noninteractive apt-get install -y -q valgrind >/dev/null; } || {
			echo "valgrind.sh: apt-get install valgrind failed" >&2; exit 1; }
	else
		echo "valgrind.sh: valgrind is missing; run: sudo apt-get install -y valgrind" >&2
		exit 1
	fi
fi
for f in "$lib" "$B/alex" "$B/tests/sqlrun-dyn" "$B/tests/sqlrun-static"; do
	[ -f "$f" ] || { echo "valgrind.sh: $f missing (make B=$B all $B/tests/sqlrun-dyn $B/tests/sqlrun-static)" >&2; exit 1; }
done

tmp=$(mktemp -d /tmp/alex-valgrind.XXXXXX)
keep=$B/valgrind-logs
rm -rf "$keep"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/result"

# memcheck errors exit with VGERR, so that they are told apart from a client
# that failed on its own; leaks count only when definite (a process that
# exits with memory still reachable from a global is not a leak)
VGERR=97
suppopt=()
[ -f "$supp" ] && suppopt=(--suppressions="$supp")
vg() { # log-name command...
	local log=$1
	shift
	valgrind -q --tool=memcheck --error-exitcode=$VGERR \
		--leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite \
		--num-callers=20 "${suppopt[@]}" --log-file="$log.%p" "$@"
}

run_client() { # client db script [valgrind-log]: with a log, under valgrind
	local pre=()
	[ $# -ge 4 ] && pre=(vg "$4")
	case $1 in
	shell) "${pre[@]}" sqlite3 -bail "$2" <"$3" >/dev/null ;;
	c-dynamic) "${pre[@]}" "$B/tests/sqlrun-dyn" "$2" "$3" ;;
	c-static) "${pre[@]}" "$B/tests/sqlrun-static" "$2" "$3" ;;
	esac
}

# why RC WHAT: the failure for a command that exited with RC
why_rc() {
	if [ "$1" = $VGERR ]; then echo "valgrind errors in $2"; else echo "$2 failed (exit $1)"; fi
}

check() { # name script client: writes $tmp/result/name
	local name=$1 script=$2 client=$3 a=$tmp/$1/plain b=$tmp/$1/alex why= rc
	local logs=$tmp/$1/vg err=$tmp/$1/err
	mkdir -p "$a" "$b" "$logs"
	(cd "$a" && run_client "$client" test.db "$script") 2>"$err" || why="client failed without ALEX"
	if [ -z "$why" ]; then
		(cd "$b" && ALEX_CHECKPOINT_ON_CLOSE=0 LD_PRELOAD=$lib \
			run_client "$client" test.db "$script" "$logs/client") 2>>"$err"
		rc=$? && [ $rc -ne 0 ] && why=$(why_rc $rc "the client under ALEX")
	fi
	for db in test.db $( [ -z "$why" ] && cd "$a" && ls *.db | grep -v '^test.db$'); do
		[ -n "$why" ] && break
		local want via plain
		want=$(cd "$a" && sqlite3 "$db" .dump)
		local dumpvg=()
		[ "$client" = "$dump_client" ] || [ "$dump_client" = all ] && dumpvg=(vg "$logs/dump-$db")
		via=$(cd "$b" && ALEX_CHECKPOINT_ON_CLOSE=0 LD_PRELOAD=$lib "${dumpvg[@]}" sqlite3 "$db" .dump 2>>"$err")
		rc=$? && [ $rc -ne 0 ] && why="$db: $(why_rc $rc "the dump under ALEX")"
		[ -z "$why" ] && [ "$want" != "$via" ] && why="$db: dump through the log differs"
		if [ -z "$why" ] && [ -s "$b/$db-alex" ] && (cd "$b" && "$B/alex" stat "$db" | grep -q ' [1-9][0-9]* commits'); then
			(cd "$b" && sqlite3 "$db" "select count(*) from sqlite_master" >/dev/null 2>&1) &&
				why="$db: plain SQLite read a database whose log holds pages"
		fi
		if [ -z "$why" ]; then
			(cd "$b" && vg "$logs/checkpoint-$db" "$B/alex" checkpoint "$db") 2>>"$err"
			rc=$? && [ $rc -ne 0 ] && why="$db: $(why_rc $rc "alex checkpoint")"
		fi
		plain=$(cd "$b" && sqlite3 "$db" .dump 2>&1)
		[ -z "$why" ] && [ "$want" != "$plain" ] && why="$db: dump after alex checkpoint differs"
		[ -z "$why" ] && [ "$(cd "$b" && sqlite3 "$db" 'pragma integrity_check')" != ok ] && why="$db: integrity_check"
	done
	# with -q valgrind says nothing but errors and definite leaks: anything
	# in a log fails the test, even if the exit status hid it -- but for
	# its own lack of cachestat (syscall 451, Linux 6.5; valgrind 3.19
	# warns and fails it with ENOSYS, and the checkpoint writes through the
	# page cache instead: core/io_many.c), which is not ours
	[ -z "$why" ] && [ -n "$(cat "$logs"/* 2>/dev/null | grep -v -e 'unhandled amd64-linux syscall: 451$' \
		-e 'You may be able to write your own handler\.$' -e 'README_MISSING_SYSCALL_OR_IOCTL\.$' \
		-e 'Nevertheless we consider this a bug\.  Please report$' \
		-e 'it at http://valgrind.org/support/bug_reports.html\.$')" ] && why="valgrind reported something"
	if [ -z "$why" ]; then
		echo PASS >"$tmp/result/$name"
	else
		# the whole of valgrind's reports are kept in BUILD/valgrind-logs;
		# the first 60 lines of each are shown
		rm -rf "$keep/$name" && mkdir -p "$keep/$name" && cp "$err" "$logs"/* "$keep/$name/" 2>/dev/null
		{
			echo "FAIL $name: $why"
			sed 's/^/    /' "$err" | head -5
			for l in "$logs"/*; do
				[ -s "$l" ] || continue
				echo "    --- $(basename "$l") (all of it: $keep/$name/$(basename "$l"))"
				head -60 "$l" | sed 's/^/    /'
			done
		} >"$tmp/result/$name"
	fi
	rm -rf "${tmp:?}/$name"
}

names=()
for script in "$here"/sql/*.sql; do
	s=$(basename "$script" .sql)
	for client in $clients; do
		while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
		check "$s-$client" "$script" "$client" &
		names+=("$s-$client")
	done
done
wait
pass=0 fail=0
for n in "${names[@]}"; do
	if [ "$(cat "$tmp/result/$n" 2>/dev/null)" = PASS ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		cat "$tmp/result/$n" 2>/dev/null || echo "FAIL $n: no result"
	fi
done
echo "valgrind: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
