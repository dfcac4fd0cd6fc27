#!/bin/bash
# rest.sh BUILD - nothing beside the database at rest: after the last close
# in the last process the log is gone (unless ALEX_KEEP_LOG=1 keeps it), and
# the database is a plain SQLite file; `alex checkpoint` leaves the same.
# The log is never removed under a process that still has it open, nor while
# it holds commits: many short processes racing on one database lose
# nothing and leave nothing.
set -u
B=$(cd "${1:?usage: rest.sh BUILD}" && pwd)
tmp=$(mktemp -d /tmp/alex-rest.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
lib=$B/libalex.so
pass=0 fail=0
t() { local what=$1; shift; if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $what"; fi; }
plain() { env -u LD_PRELOAD sqlite3 "$@"; }
alex() { env LD_PRELOAD="$lib" sqlite3 "$@"; }
only_db() { [ "$(ls -A "$1")" = "$2" ]; }

# the last close removes the log; the database reads plain
d=$tmp/last; mkdir -p "$d"
alex "$d/a.db" "create table t(x); insert into t values(1); insert into t values(2)"
t "last close: only the database is left ($(ls -A "$d" | tr '\n' ' '))" only_db "$d" a.db
t "last close: plain SQLite reads it" [ "$(plain "$d/a.db" "select count(*) from t; pragma integrity_check" | tr '\n' ' ')" = "2 ok " ]

# a reader that only reads never makes a log
alex "$d/a.db" "select count(*) from t" >/dev/null
t "a read-only session makes no log" only_db "$d" a.db

# ALEX_KEEP_LOG=1: the log stays, empty, and the database is still plain
d=$tmp/keep; mkdir -p "$d"
ALEX_KEEP_LOG=1 alex "$d/a.db" "create table t(x); insert into t values(1)"
t "ALEX_KEEP_LOG=1 keeps the log and its change counter, nothing else ($(ls -A "$d" | tr '\n' ' '))" \
	only_db "$d" "$(printf 'a.db\na.db-alex\na.db-alex-shm')"
t "ALEX_KEEP_LOG=1: the database is plain" [ "$(plain "$d/a.db" "select count(*) from t")" = 1 ]
t "ALEX_KEEP_LOG=1: the kept log holds nothing" "$B/alex" stat "$d/a.db" >/dev/null
alex "$d/a.db" "insert into t values(2)"
t "without the setting, the next last close removes it" only_db "$d" a.db

# alex checkpoint: a log left with commits (a kill) becomes nothing
d=$tmp/tool; mkdir -p "$d"
plain "$d/a.db" "create table t(x)"
(LD_PRELOAD=$lib python3 -c '
import os, signal, sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
for i in range(20): c.execute("insert into t values(?)", (i,))
os.kill(os.getpid(), signal.SIGKILL)' "$d/a.db") 2>/dev/null
t "after a kill the log holds the commits" [ -e "$d/a.db-alex" ]
t "after a kill plain SQLite is refused" [ "$(plain "$d/a.db" "select count(*) from t" 2>&1)" = "Error: in prepare, file is not a database (26)" ]
"$B/alex" checkpoint --keep-log "$d/a.db"
t "alex checkpoint --keep-log keeps it" [ -e "$d/a.db-alex" ]
(LD_PRELOAD=$lib python3 -c '
import os, signal, sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("insert into t values(99)")
os.kill(os.getpid(), signal.SIGKILL)' "$d/a.db") 2>/dev/null
"$B/alex" checkpoint "$d/a.db"
t "alex checkpoint: only the database is left" only_db "$d" a.db
t "alex checkpoint: every commit is in it" [ "$(plain "$d/a.db" "select count(*) from t; pragma integrity_check" | tr '\n' ' ')" = "21 ok " ]

# one process keeps the database open: another's last close must not
# remove the log under it
d=$tmp/open; mkdir -p "$d"
plain "$d/a.db" "create table t(x)"
LD_PRELOAD=$lib python3 -c '
import os, sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("insert into t values(1)")
open(sys.argv[1] + ".ready", "w").close()
while not os.path.exists(sys.argv[1] + ".go"): time.sleep(0.01)
c.execute("insert into t values(3)")
print(c.execute("select count(*) from t").fetchone()[0])' "$d/a.db" >"$d/out" &
pid=$!
for _ in $(seq 500); do [ -e "$d/a.db.ready" ] && break; sleep 0.01; done
alex "$d/a.db" "insert into t values(2)"
t "a second process's last close leaves the first's log" [ -e "$d/a.db-alex" ]
touch "$d/a.db.go"
wait $pid
t "the first process goes on writing and reads 3 rows" [ "$(cat "$d/out")" = 3 ]
rm -f "$d/a.db.ready" "$d/a.db.go" "$d/out"
t "its last close removes the log" only_db "$d" a.db
t "plain SQLite reads all 3" [ "$(plain "$d/a.db" "select count(*) from t")" = 3 ]

# a forked child's last close of a kept log: the child's descriptor of the
# log is its parent's too, so the change counter the child removes must
# not go on being believed by the parent, and the log must stay open to
# others (a third process writes; the parent sees it, and so does a fourth)
d=$tmp/fork; mkdir -p "$d"
plain "$d/a.db" "create table t(x)"
out=$(cd "$d" && ALEX_KEEP_LOG=1 LD_PRELOAD=$lib python3 -c '
import os, sqlite3, subprocess
c = sqlite3.connect("a.db", isolation_level=None)
c.execute("insert into t values(1)")
pid = os.fork()
if pid == 0:
    c.execute("insert into t values(2)")
    c.close()
    os._exit(0)
os.waitpid(pid, 0)
for i in range(3):
    subprocess.run(["sqlite3", "a.db", "insert into t values(%d)" % (10 + i)], check=True)
    c.execute("insert into t values(%d)" % (20 + i))
print(c.execute("select group_concat(x) from t").fetchone()[0])' 2>&1)
t "fork, kept log: the parent sees every process's rows ($out)" [ "$out" = "1,2,10,20,11,21,12,22" ]
t "fork, kept log: so does a later process" \
	[ "$(ALEX_KEEP_LOG=1 alex "$d/a.db" "select count(*) from t")" = 8 ]

# a forked child whose view is stale (the log was empty when it forked)
# closes while its parent holds SQLite's SHARED lock: the lock on the log it
# would take to remove it is its parent's too, so it must not remove the log
# that holds the parent's acknowledged commit
d=$tmp/forkstale; mkdir -p "$d"
out=$(ALEX_CHECKPOINT_MB=1 LD_PRELOAD=$lib python3 -c '
import os, sys, time, sqlite3
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("create table t(id integer primary key, b blob)")
c.execute("begin")
for i in range(400): c.execute("insert into t(b) values(?)", (os.urandom(4000),))
c.execute("commit") # past 1 MiB: checkpointed, the log holds nothing
pid = os.fork()
if pid == 0:
    time.sleep(0.5)
    c.close()
    os._exit(0)
c.execute("insert into t(b) values(1)") # only in the log
c.execute("begin"); c.execute("select count(*) from t").fetchone()
time.sleep(1.0)
c.execute("commit")
os.waitpid(pid, 0)
print(c.execute("select count(*) from t").fetchone()[0])' "$d/a.db" 2>&1)
t "fork, stale child's close: the parent keeps its commit ($out)" [ "$out" = 401 ]
t "fork, stale child's close: so does a later process" \
	[ "$(plain "$d/a.db" "select count(*) from t")" = 401 ]

# many short processes at once: opens racing last closes
d=$tmp/race; mkdir -p "$d"
plain "$d/a.db" "create table t(p, i)"
for p in 1 2 3; do
	(for i in $(seq 40); do
		alex -cmd ".timeout 10000" "$d/a.db" "insert into t values($p, $i)" || echo "FAIL $p $i"
	done) >"$d/err.$p" 2>&1 &
done
wait
cat "$d"/err.* | head -n 3
errs=$(cat "$d"/err.* | wc -l)
rm -f "$d"/err.*
t "racing short processes: no errors ($errs)" [ "$errs" = 0 ]
t "racing short processes: every row ($(plain "$d/a.db" "select count(*) from t"))" \
	[ "$(plain "$d/a.db" "select count(*), count(distinct p * 100 + i) from t; pragma integrity_check" | tr '\n' ' ')" = "120|120 ok " ]
t "racing short processes: nothing left ($(ls -A "$d" | tr '\n' ' '))" only_db "$d" a.db

# a short process's syncs (fsync + fdatasync, strace): the new log's
# directory entry, the commit (the fence rides on it where the file system
# overwrites in place: ext4, xfs), the close-time checkpoint, and the
# unmark's before the log goes (protect.c: no fence without its log); with
# the kept log no directory entry and no removal, and the fence rides too:
# its epoch follows the last one's records instead of going over them
# (core/format.h)
syncs() { strace -f -c -o "$d/sc" -e trace=fsync,fdatasync "$@" >/dev/null 2>&1
	awk '$NF == "fsync" || $NF == "fdatasync" { n += $4 } END { print n + 0 }' "$d/sc"; }
d=$tmp/syncs; mkdir -p "$d"
plain "$d/a.db" "create table t(x); insert into t values(0)"
fs=$(stat -f -c %T "$d")
if command -v strace >/dev/null && { [ "$fs" = ext2/ext3 ] || [ "$fs" = xfs ]; }; then
	n=$(syncs env LD_PRELOAD="$lib" sqlite3 "$d/a.db" "insert into t values(1)")
	t "a short process makes 4 syncs ($n)" [ "$n" = 4 ]
	ALEX_KEEP_LOG=1 alex "$d/a.db" "insert into t values(2)"
	for i in 3 4 5; do
		n=$(syncs env LD_PRELOAD="$lib" ALEX_KEEP_LOG=1 sqlite3 "$d/a.db" "insert into t values($i)")
		t "with the kept log, process $i: 2 syncs ($n)" [ "$n" = 2 ]
	done
	t "both: every row ($(plain "$d/a.db" "select count(*) from t"))" \
		[ "$(plain "$d/a.db" "select count(*) from t")" = 6 ]
else
	echo "rest: sync counts skipped (no strace, or $fs is not ext4/xfs)"
	skip=1
fi

echo "rest: $pass passed, $fail failed${skip:+, 1 skipped}"
[ "$fail" -eq 0 ]
